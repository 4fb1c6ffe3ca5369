"""The environments' renderings: a text table (``render_mode="ansi"`` and ``"human"``) and a
picture (``"rgb_array"``, drawn by :mod:`zhuoji_env.picture`).

:func:`render_table` draws one game of a :class:`~zhuoji_env.engine.state.State` batch as seen
by one seat; :func:`render_game` draws a one-game :class:`~zhuoji_env.engine.game.BatchGame`
with its match scores; :func:`present` is ``render()``'s return-or-print convention.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np

from zhuoji_env.engine import core
from zhuoji_env.engine.game import BatchGame, check_flag
from zhuoji_env.engine.records import result_of
from zhuoji_env.engine.state import (
    AN_KONG,
    BU_KONG,
    MING_KONG,
    OVER,
    PONG_MELD,
    RESPONSE,
    ROB,
    TURN,
    State,
)
from zhuoji_env.envs.common import check_seat
from zhuoji_env.picture import meld_kinds
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import CODES, UNICODE, kind

__all__ = ["present", "render_game", "render_table"]


def present(
    render_mode: str | None,
    make_text: Callable[[], str],
    make_picture: Callable[[], np.ndarray],
) -> str | np.ndarray | None:
    """``render()``: the text returned (``ansi``) or printed (``human``), or the picture of
    :mod:`zhuoji_env.picture` (``rgb_array``, uint8 ``[H, W, 3]``); a warning and nothing
    without a render mode (Gymnasium's convention)."""
    if render_mode is None:
        gymnasium.logger.warn("You are calling render method without specifying any render mode.")
        return None
    if render_mode == "rgb_array":
        return make_picture()
    text = make_text()
    if render_mode == "human":
        print(text)
        return None
    return text


_MELD_NAMES = {
    PONG_MELD: "pong",
    AN_KONG: "concealed kong",
    BU_KONG: "added kong",
    MING_KONG: "exposed kong",
}


def render_table(
    rules: Rules,
    st: State,
    i: int = 0,
    *,
    scores=None,
    hand_no: int = 0,
    viewer: int | None = None,
    reveal: bool = False,
    tile_style: str = "code",
    last_result: Mapping[str, Any] | None = None,
) -> str:
    """A readable text table of game ``i`` seen by seat ``viewer`` (default: the seat to act).

    Only the viewer's concealed tiles are shown (all of them with ``reveal`` or once the hand is
    over); others' concealed kongs are hidden likewise. Claimed discards are in brackets. A
    ``viewer`` that is not a seat is a ``ValueError``, as for the picture.
    """
    check_seat("viewer", viewer, st.num_players)
    if tile_style not in ("code", "unicode"):
        raise ValueError(f"tile_style must be 'code' or 'unicode', got {tile_style!r}")
    glyphs = UNICODE if tile_style == "unicode" else CODES
    sep = " " if tile_style == "unicode" else ""

    def tiles(kinds) -> str:
        """Sorted tiles, a space between suits (``1m2m3m 5p5p 7s``)."""
        suits = [sep.join(glyphs[int(k)] for k in kinds if k // 9 == s) for s in range(3)]
        return " ".join(x for x in suits if x) or "-"

    n = st.num_players
    names = [f"player_{s}" for s in range(n)]
    scores = np.zeros(n, dtype=np.int64) if scores is None else np.asarray(scores)
    phase = int(st.phase[i])
    over = phase == OVER
    actor, turn_seat = int(st.actor[i]), int(st.turn_seat[i])
    viewer = actor if viewer is None else int(viewer)
    reveal = check_flag(reveal, "reveal") or over
    dealer = int(st.dealer[i])
    left = max(int(st.back[i]) - int(st.front[i]) + 1, 0)
    hpg = rules.hands_per_game
    lines = [
        f"Zhuoji mahjong ({rules.preset}, {n} players) | hand {min(hand_no + 1, hpg)}/{hpg} | "
        f"dealer {names[dealer]} (streak {int(st.streak[i])}) | wall: {left} tiles left"
    ]
    if last_result is not None and not over:
        lines.append("Last hand: " + _result_line(last_result, names, glyphs))
    t = int(st.tile[i])
    if over:
        lines.append("Hand over: " + _result_line(result_of(st, i), names, glyphs))
    else:
        if phase == TURN:
            what = f"{names[actor]}'s turn"
            drawn = int(st.drawn[i])
            if (viewer == actor or reveal) and drawn >= 0:
                what += f", drew {glyphs[drawn]}"
        elif phase == RESPONSE:
            what = f"{names[turn_seat]} discarded {glyphs[t]}: response window"
        elif phase == ROB:
            what = f"{names[turn_seat]} adds {glyphs[t]} to a pong (bugang): rob window"
        else:
            what = f"{names[actor]} declared 报听 and must discard"
        lines.append(f"Phase: {what} | to act: {names[actor]}")
        if viewer == actor or reveal:
            lines.append("Legal: " + ", ".join(core.legal_names(st, i)))
    lines.append(f"Viewer: {'all seats' if reveal else names[viewer]}")
    for s in range(n):
        mark = ">" if (not over and s == actor) else " "
        tags = []
        if s == dealer:
            tags.append("dealer")
        if st.baoting[i, s]:
            tags.append("报听 " + ("hard" if st.baoting[i, s] == 1 else "soft"))
        if over and st.winners[i, s]:
            tags.append("WINNER")
        if s == viewer and not reveal:
            tags.append("you")
        tag = f" [{', '.join(tags)}]" if tags else ""
        lines.append(f"{mark} {names[s]}{tag}  score {int(scores[s]):+d}")
        hand = st.hand[i, s]
        count = int(hand.sum())
        if s == viewer or reveal:
            kinds = np.repeat(np.arange(hand.size), hand)
            lines.append(f"    hand : {tiles(kinds)} ({count})")
        else:
            lines.append(f"    hand : {count} concealed tiles")
        melds = []
        for k in meld_kinds(st, i, s, s == viewer or reveal):
            kind_m = int(st.meld[i, s, k])
            if kind_m == AN_KONG and not (s == viewer or reveal):
                melds.append("concealed kong (hidden)")
                continue
            text = f"{_MELD_NAMES[kind_m]} {glyphs[int(k)]}"
            src = int(st.meld_from[i, s, k])
            if kind_m in (PONG_MELD, MING_KONG, BU_KONG) and src >= 0:
                text += f" from {names[src]}"
            if st.meld_late[i, s, k]:
                text += " (late)"
            melds.append(text)
        lines.append(f"    melds: {'; '.join(melds) if melds else '-'}")
        rl = int(st.river_len[i, s])
        river = [
            f"[{glyphs[int(x)]}]" if taken else glyphs[int(x)]
            for x, taken in zip(st.river[i, s, :rl], st.river_taken[i, s, :rl], strict=True)
        ]
        lines.append(f"    river: {' '.join(river) if river else '-'}")
    return "\n".join(lines)


def render_game(game: BatchGame, **kwargs: Any) -> str:
    """:func:`render_table` of a one-game :class:`BatchGame` with its match scores."""
    return render_table(
        game.rules, game.state, 0, scores=game.scores[0], hand_no=int(game.hand_no[0]), **kwargs
    )


def _result_line(result: Mapping[str, Any], names: Sequence[str], glyphs) -> str:
    winners = ", ".join(names[w] for w in result["winners"]) or "nobody"
    flip = result.get("flip")
    flip_text = f", flip {glyphs[kind(flip)]}" if flip else ""
    deltas = ", ".join(f"{d:+d}" for d in result["deltas"])
    return f"{result['end']} (winners: {winners}{flip_text}); this hand [{deltas}]"
