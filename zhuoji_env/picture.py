"""Pictures of a table: ``draw_table(rules, state, i) -> uint8 [H, W, 3]`` (Pillow).

This is the ``rgb_array`` render mode of the environments and the rich display of states in
notebooks (:class:`Table`). Everything is drawn with Pillow's built-in font and plain ASCII:
tiles read as rank and suit letter (``5m``, ``9p``, ``1s``), colour-coded by suit, so no CJK
font is needed on the machine. Marks: a gold corner on a chicken (``1s`` always, the flip
chicken once the flip tile is turned up at settlement), a red frame on the 冲锋鸡 (the first
``1s`` discarded, still lying unclaimed), an orange frame on the tile being decided on, and
claimed discards greyed out. Concealed tiles of seats other than the viewer are drawn face
down unless ``reveal`` (or once the hand is over), as in the ``ansi`` text table.

The frame size depends only on the number of seats (960 x 710 for four), so frames of a hand
can go straight into a video writer.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.game import BatchGame, check_flag
from zhuoji_env.engine.records import deltas, result_of
from zhuoji_env.engine.settlement import chicken_units
from zhuoji_env.engine.state import (
    AN_KONG,
    BU_KONG,
    ITEMS,
    MING_KONG,
    OVER,
    PONG_MELD,
    RESPONSE,
    ROB,
    TURN,
    YAOJI_IN_RIVER,
    State,
)
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import CODES, NUM_KINDS, YAOJI

ITEM_LABELS: dict[str, str] = {
    "hu": "hand payment, hu (7.2)",
    "rerpao": "re pao extra: discard after own kong (7.2)",
    "dou_an": "concealed kong, men dou (7.3)",
    "dou_bu": "added kong, zhuan wan dou (7.3)",
    "dou_ming": "exposed kong, dian dou (7.3)",
    "chicken": "chickens, ji (7.4)",
    "chongfeng": "charging chicken, chong feng ji (7.4)",
    "zeren": "responsibility chicken, ze ren ji (7.4)",
    "bao_ji": "bao ji: unready seat pays for its 1s (7.4)",
    "baopai": "pass-win penalty (5.4)",
    "chajiao": "cha jiao: unready pays ready at a draw (7.5)",
}
"""ASCII names of the settlement ledger items (RULES.md 7), in ledger axis order."""

MELD_LABELS = {PONG_MELD: "pong", AN_KONG: "c.kong", BU_KONG: "a.kong", MING_KONG: "e.kong"}
"""Short ASCII names of meld types: pong, concealed kong (闷豆), added kong (转弯豆), exposed
kong (点豆)."""

WIDTH = 960
_HEADER, _FOOTER = 56, 22
_BAND = 158  # one seat: label row, hand row, two river rows
_BIG = (28, 38)  # hand and meld tiles
_SMALL = (22, 30)  # river tiles
_RIVER_ROW = 36  # river tiles per row (two rows hold RIVER_MAX = 72)

SUIT_COLOURS = ((178, 34, 34), (25, 80, 170), (20, 120, 60))
"""Rank colours of characters (m), dots (p) and bamboo (s)."""
_BG = (236, 232, 220)
_TEXT = (30, 30, 30)
_BACK = (46, 110, 95)
_GOLD = (230, 170, 0)
_RED = (210, 30, 30)
_ORANGE = (255, 130, 0)
_ACT = (255, 246, 200)


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """Pillow's built-in font (no system font needed)."""
    return ImageFont.load_default(size=size)


def frame_size(num_players: int) -> tuple[int, int]:
    """``(height, width)`` of a picture of a table of ``num_players`` seats."""
    return _HEADER + num_players * _BAND + _FOOTER, WIDTH


def chicken_kinds(rules: Rules, flip: int) -> np.ndarray:
    """bool ``[27]``: the chicken tiles (RULES.md 7.4) given the flip tile (-1: none known), as
    settlement counts them (:func:`~zhuoji_env.engine.settlement.chicken_units`)."""
    unit, _ = chicken_units(rules, np.array([flip], dtype=np.int64))
    return unit[0] > 0


def _tile(draw, x, y, k, size, *, hidden=False, chicken=False, faded=False, frame=None):
    """One tile at ``(x, y)``: rank over suit letter, or its back when ``hidden``."""
    w, h = size
    big = w >= _BIG[0]
    if hidden:
        draw.rounded_rectangle((x, y, x + w, y + h), 4, fill=_BACK, outline=(20, 60, 50))
        return
    fill = (205, 205, 205) if faded else (252, 252, 246)
    draw.rounded_rectangle((x, y, x + w, y + h), 4, fill=fill, outline=(90, 90, 90))
    colour = SUIT_COLOURS[k // 9]
    if faded:
        colour = tuple(int(c * 0.45 + 120) for c in colour)
    rank, suit = CODES[k][0], CODES[k][1]
    draw.text(
        (x + w / 2, y + h * 0.38), rank, fill=colour, font=_font(20 if big else 15), anchor="mm"
    )
    draw.text(
        (x + w / 2, y + h * 0.80), suit, fill=colour, font=_font(11 if big else 9), anchor="mm"
    )
    if chicken:
        c = 10 if big else 8
        draw.polygon([(x + w - c, y), (x + w, y), (x + w, y + c)], fill=_GOLD)
    if frame is not None:
        draw.rounded_rectangle((x - 1, y - 1, x + w + 1, y + h + 1), 5, outline=frame, width=3)


def _fit(draw, text: str, font, width: int) -> str:
    """``text`` cut (with ``...``) to fit ``width`` pixels."""
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + " ...", font=font) > width:
        text = text[:-1]
    return text + " ..."


def last_discard(st: State, i: int) -> tuple[int, int] | None:
    """``(seat, kind)`` of the latest discard of game ``i`` (from its built-in record)."""
    n = int(st.rec_len[i])
    acts = st.rec_action[i, :n]
    where = np.flatnonzero((acts >= A.DISCARD) & (acts < A.DISCARD + NUM_KINDS))
    if not where.size:
        return None
    j = int(where[-1])
    return int(st.rec_seat[i, j]), int(acts[j]) - A.DISCARD


def meld_kinds(st: State, i: int, s: int, face_up: bool) -> list[int]:
    """The kinds of seat ``s``'s melds in game ``i`` in the order a table shows them: by kind,
    then the concealed kongs the viewer may not see (``face_up`` false) last, so that where a
    hidden kong sits among the melds says nothing of its kind."""
    kinds = np.flatnonzero(st.meld[i, s])
    hidden = (st.meld[i, s, kinds] == AN_KONG) & (not face_up)
    return [int(k) for k in np.concatenate([kinds[~hidden], kinds[hidden]])]


def status_lines(
    rules: Rules,
    st: State,
    i: int,
    *,
    scores=None,
    hand_no: int = 0,
    viewer: int | None = None,
    reveal: bool = False,
) -> list[str]:
    """The two header lines of a picture: the table, then what is happening (ASCII)."""
    reveal = check_flag(reveal, "reveal")
    n = st.num_players
    phase, actor, turn_seat = int(st.phase[i]), int(st.actor[i]), int(st.turn_seat[i])
    over = phase == OVER
    viewer = actor if viewer is None else int(viewer)
    left = max(int(st.back[i]) - int(st.front[i]) + 1, 0)
    hpg = rules.hands_per_game
    first = (
        f"{rules.preset}, {n} players | hand {min(hand_no + 1, hpg)}/{hpg} | "
        f"dealer P{int(st.dealer[i])} (streak {int(st.streak[i])}) | wall {left} left"
    )
    flip = int(st.flip[i])
    if flip >= 0:
        chick = [CODES[k] for k in np.flatnonzero(chicken_kinds(rules, flip)) if k != YAOJI]
        first += f" | flip {CODES[flip]}: chickens 1s " + " ".join(chick)
    last = last_discard(st, i)
    t = int(st.tile[i])
    if over:
        res = result_of(st, i)
        won = ", ".join(f"P{w}" for w in res["winners"]) or "nobody"
        score = " ".join(f"{d:+d}" for d in res["deltas"])
        second = f"Hand over: {res['end']}, winners {won} | scores {score}"
    elif phase == TURN:
        second = f"P{actor}'s turn"
        drawn = int(st.drawn[i])
        if drawn >= 0 and (viewer == actor or reveal):
            second += f", drew {CODES[drawn]}"
    elif phase == RESPONSE:
        second = f"P{turn_seat} discarded {CODES[t]}: response window, P{actor} to act"
    elif phase == ROB:
        second = f"P{turn_seat} adds {CODES[t]} to a pong: rob window, P{actor} to act"
    else:
        second = f"P{actor} declared ready (baoting) and must discard"
    if last is not None and not over and phase == TURN:
        second += f" | last discard P{last[0]} {CODES[last[1]]}"
    if not over and (viewer == actor or reveal):
        second += " | legal: " + ", ".join(core.legal_names(st, i))
    if scores is not None and hpg > 1:
        second += " | match " + " ".join(f"{int(s):+d}" for s in np.asarray(scores))
    return [first, second]


def draw_table(
    rules: Rules,
    st: State,
    i: int = 0,
    *,
    scores=None,
    hand_no: int = 0,
    viewer: int | None = None,
    reveal: bool = False,
) -> np.ndarray:
    """The table of game ``i`` seen by seat ``viewer`` (default: the seat to act) as
    ``uint8 [H, W, 3]``; ``reveal`` shows every seat's concealed tiles and concealed kongs."""
    n = st.num_players
    if not 0 <= i < st.batch_size:
        raise ValueError(f"game index {i} out of range for a batch of {st.batch_size}")
    if viewer is not None and (
        isinstance(viewer, bool) or not isinstance(viewer, (int, np.integer)) or not 0 <= viewer < n
    ):
        raise ValueError(f"viewer must be None or a seat 0-{n - 1}, got {viewer!r}")
    phase, actor = int(st.phase[i]), int(st.actor[i])
    over = phase == OVER
    seen_by = actor if viewer is None else int(viewer)
    show_all = check_flag(reveal, "reveal") or over
    h, w = frame_size(n)
    img = Image.new("RGB", (w, h), _BG)
    draw = ImageDraw.Draw(img)
    for row, line in enumerate(
        status_lines(rules, st, i, scores=scores, hand_no=hand_no, viewer=viewer, reveal=reveal)
    ):
        draw.text(
            (10, 8 + 22 * row), _fit(draw, line, _font(15), w - 20), fill=_TEXT, font=_font(15)
        )
    chick = chicken_kinds(rules, int(st.flip[i]))
    t = int(st.tile[i])
    window = phase in (RESPONSE, ROB)
    led = deltas(st.ledger[i]) if over else None
    for s in range(n):
        top = _HEADER + s * _BAND
        if not over and s == actor:
            draw.rectangle((0, top, w, top + _BAND - 4), fill=_ACT)
        draw.line((0, top, w, top), fill=(160, 160, 150))
        tags = [f"P{s}"]
        if s == int(st.dealer[i]):
            tags.append("dealer")
        if st.baoting[i, s]:
            tags.append("baoting " + ("hard" if st.baoting[i, s] == 1 else "soft"))
        if over and st.winners[i, s]:
            tags.append("WINNER")
        if not over and s == actor:
            tags.append("to act")
        if s == seen_by and not show_all:
            tags.append("viewer")
        if led is not None:
            tags.append(f"hand score {int(led[s]):+d}")
        elif scores is not None:
            tags.append(f"score {int(np.asarray(scores)[s]):+d}")
        draw.text((10, top + 4), "  ".join(tags), fill=_TEXT, font=_font(14))
        # concealed hand, the drawn tile set apart at its end
        face_up = show_all or s == seen_by
        counts = st.hand[i, s].astype(np.int64).copy()
        drawn = int(st.drawn[i]) if (phase == TURN and s == int(st.turn_seat[i])) else -1
        if drawn >= 0 and counts[drawn] > 0:
            counts[drawn] -= 1
        kinds = list(np.repeat(np.arange(NUM_KINDS), counts))
        x, y = 10, top + 24
        bw, bh = _BIG
        for k in kinds:
            _tile(draw, x, y, int(k), _BIG, hidden=not face_up, chicken=face_up and chick[k])
            x += bw + 2
        if drawn >= 0:
            x += 8
            _tile(draw, x, y, drawn, _BIG, hidden=not face_up, chicken=face_up and chick[drawn])
            x += bw + 2
        # melds, each labelled with its type (and feeder)
        x += 18
        for k in meld_kinds(st, i, s, face_up):
            mtype = int(st.meld[i, s, k])
            hidden = mtype == AN_KONG and not face_up
            label = MELD_LABELS[mtype]
            src = int(st.meld_from[i, s, k])
            if mtype != AN_KONG and src >= 0:
                label += f" P{src}"
            if st.meld_late[i, s, k]:
                label += " late"
            draw.text((x, y + bh + 2), label, fill=_TEXT, font=_font(10))
            for _ in range(3 if mtype == PONG_MELD else 4):
                _tile(draw, x, y, int(k), _BIG, hidden=hidden, chicken=not hidden and chick[k])
                x += bw + 1
            x += 10
        # river, in order, two rows
        rl = int(st.river_len[i, s])
        sw, sh = _SMALL
        fate_here = int(st.yaoji_seat[i]) == s and int(st.yaoji_fate[i]) == YAOJI_IN_RIVER
        for j in range(rl):
            k = int(st.river[i, s, j])
            rx = 10 + (j % _RIVER_ROW) * (sw + 2)
            ry = top + 24 + bh + 16 + (j // _RIVER_ROW) * (sh + 4)
            frame = None
            if fate_here and j == int(st.yaoji_pos[i]):
                frame = _RED
            if window and s == int(st.turn_seat[i]) and j == rl - 1 and k == t:
                frame = _ORANGE
            _tile(
                draw,
                rx,
                ry,
                k,
                _SMALL,
                chicken=chick[k],
                faded=bool(st.river_taken[i, s, j]),
                frame=frame,
            )
    draw.text(
        (10, h - _FOOTER + 4),
        "gold corner: chicken | red frame: charging chicken (first 1s, unclaimed) | "
        "orange frame: tile being decided on | grey: claimed discard | c./a./e.kong: "
        "concealed/added/exposed",
        fill=(80, 80, 80),
        font=_font(11),
    )
    return np.asarray(img, dtype=np.uint8)


def draw_game(game: BatchGame, i: int = 0, **options: Any) -> np.ndarray:
    """:func:`draw_table` of game ``i`` of a :class:`BatchGame` with its match scores and hand
    number (the environments' ``rgb_array`` frame); ``options``: ``viewer``, ``reveal``."""
    return draw_table(
        game.rules, game.state, i, scores=game.scores[i], hand_no=int(game.hand_no[i]), **options
    )


def png_bytes(rgb: np.ndarray) -> bytes:
    """PNG file contents of an ``uint8 [H, W, 3]`` picture."""
    buf = io.BytesIO()
    Image.fromarray(np.asarray(rgb, dtype=np.uint8)).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


class Table:
    """A view of game ``i`` of a state that notebooks display as a picture (``_repr_png_``).

    ``Table(rules, state, i, viewer=None, reveal=False)``; the state is copied, so later steps
    of the game do not change the view.
    """

    def __init__(
        self,
        rules: Rules | str | Mapping | None,
        st: State,
        i: int = 0,
        *,
        scores=None,
        hand_no: int = 0,
        viewer: int | None = None,
        reveal: bool = False,
    ):
        self.rules = Rules.make(rules)
        self.state = st.take(np.array([i]))
        self.scores = None if scores is None else np.array(scores)
        self.hand_no, self.viewer = hand_no, viewer
        self.reveal = check_flag(reveal, "reveal")

    def rgb(self) -> np.ndarray:
        """The picture as ``uint8 [H, W, 3]``."""
        return draw_table(
            self.rules,
            self.state,
            0,
            scores=self.scores,
            hand_no=self.hand_no,
            viewer=self.viewer,
            reveal=self.reveal,
        )

    def _repr_png_(self) -> bytes:
        return png_bytes(self.rgb())

    def __repr__(self) -> str:
        return (
            f"Table({self.rules.preset}, phase {int(self.state.phase[0])}, "
            f"actor P{int(self.state.actor[0])})"
        )


def ledger_rows(result: Mapping[str, Any]) -> list[tuple[int, int, int, str]]:
    """The ledger lines of a record's ``result`` as ``(payer, payee, amount, item)``, sorted by
    item in RULES.md 7 order, then payee and payer."""
    rows = [(int(p), int(q), int(a), str(it)) for p, q, a, it in result.get("ledger", [])]
    for *_, it in rows:
        if it not in ITEM_LABELS:
            raise ValueError(f"unknown ledger item {it!r}: allowed {list(ITEM_LABELS)}")
    order = {it: j for j, it in enumerate(ITEMS)}
    return sorted(rows, key=lambda r: (order[r[3]], r[1], r[0]))


def result_summary(result: Mapping[str, Any], names: Sequence[str] | None = None) -> str:
    """One ASCII line: how the hand ended, the winners, the flip and the scores."""
    n = len(result["deltas"])
    names = list(names) if names is not None else [f"P{s}" for s in range(n)]
    won = ", ".join(names[w] for w in result["winners"]) or "nobody"
    flip = result.get("flip")
    score = " ".join(f"{names[s]} {d:+d}" for s, d in enumerate(result["deltas"]))
    return f"{result['end']}: winners {won}" + (f", flip {flip}" if flip else "") + f" | {score}"
