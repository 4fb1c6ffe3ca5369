# noqa: D212, D415
"""
# Zhuoji mahjong (贵阳捉鸡麻将): the PettingZoo AEC environment ``zhuoji_v1``

| Creation          | ``zhuoji_env.env(rules="guiyang")`` (wrapped), ``zhuoji_env.raw_env(...)`` |
|-------------------|----------------------------------------------------------------------------|
| Actions           | Discrete                                                                   |
| Parallel API      | No (one seat decides at a time: RULES.md 3)                                |
| Manual control    | No                                                                         |
| Agents            | ``['player_0', 'player_1', 'player_2', 'player_3']`` (3 with 3 players)    |
| Action shape      | ``(1,)``                                                                   |
| Action values     | ``Discrete(86)``                                                           |
| Observation shape | ``{"observation": (OBS_SIZE,) float32, "action_mask": (86,) int8}``        |
| State shape       | ``(STATE_SIZE,)`` float32 (``env.state()``, full information)              |

The rules are those of ``docs/RULES.md``; this page documents the environment around them.

## Construction

``zhuoji_env.env(render_mode=None, rules="guiyang", illegal_action="raise", **switches)``

- ``rules``: a preset name (``"guiyang"``, ``"classic"``, ``"app"``), a record's rules object
  ``{"preset": ..., "overrides": {...}}``, or a :class:`zhuoji_env.Rules`; keyword ``switches``
  (any switch of RULES.md 9, e.g. ``num_players=3, hands_per_game=8``) override it.
- ``illegal_action``: ``"raise"`` (default) or ``"penalty"`` (see *Illegal actions*).
- ``illegal_reward``: the offender's reward under ``"penalty"`` (default below).
- ``render_mode``: ``None``, ``"ansi"`` (``render()`` returns the table as a string) or
  ``"human"`` (prints it after every step and on ``render()``).
- ``render_all`` (default False): show every seat's concealed tiles and concealed kongs.
- ``viewer``: the seat whose concealed tiles are shown (default: the seat to act).
- ``tile_style``: ``"code"`` (``5m``) or ``"unicode"`` (🀋).

``env()`` wraps ``raw_env`` in PettingZoo's ``AssertOutOfBoundsWrapper`` and
``OrderEnforcingWrapper``, as the classic environments do (there is no
``TerminateIllegalWrapper``: illegal actions are handled by the environment itself).

## Agents and turn order

Agents are ``player_0`` .. ``player_{n-1}``, seat ``s`` being ``player_s``. The agent selected
is always the seat the engine asks now (RULES.md 3): the turn seat in its turn, and in a response
or rob window each seat *that has a legal claim*, in turn order from the discarder's 下家. Seats
with no legal claim are never selected, so an agent is only asked when it has a real choice or
must play a turn (its mask then holds at least one action; ``pass`` is always legal in a window).

## Episodes and the match

An episode is one match of ``hands_per_game`` hands (RULES.md 8.2; default 1 hand). The dealer
and streak carry from hand to hand, the next hand is dealt as soon as one ends, and scores
accumulate. When the last hand ends every agent is terminated (``terminations`` all true); there
is no truncation. ``reset(seed=s)`` deals the same match as game 0 of ``BatchGame(seed=s)``
(walls and first dealer from the random stream ``(s, 0)``); ``reset()`` without a seed draws the
next match's seed from a generator seeded by the last seed given (or by OS entropy), so a run of
resets after one seeded reset is reproducible.

``reset(options={"wall": W, "dealer": d})`` deals the first hand from a given wall (108 kinds or
tile codes, RULES.md 2) and dealer instead; later hands of the match are dealt from the seed.

## Action space

One ``Discrete(86)`` shared by every decision (``zhuoji_env.engine.actions``):

| index | action | meaning (RULES.md 3) |
|-------|--------|----------------------|
| 0-26  | ``discard t``  | discard a tile of kind t (``1m``=0 .. ``9m``=8, ``1p``=9 .. ``9s``=26) |
| 27-53 | ``angang t``   | concealed kong (闷豆) of kind t - 27 |
| 54-80 | ``bugang t``   | add the fourth tile of kind t - 54 to one's pong (转弯豆) |
| 81    | ``pong``       | claim the discard for a pong (碰) |
| 82    | ``kong``       | claim the discard for an exposed kong (点豆) |
| 83    | ``hu``         | win: self-drawn, on a discard, or robbing a kong (胡) |
| 84    | ``pass``       | decline a claim (过) |
| 85    | ``baoting``    | declare ready (报听), only with the ``baoting`` switch |

## Observation space

``observe(agent)`` returns ``{"observation": float32[OBS_SIZE], "action_mask": int8[86]}``.
``observation`` is ``zhuoji_env.observation.encode`` of that seat's view (format
``zhuoji-obs-v1``; its module docstring lists every block, and ``observation.block(obs, name)``
cuts one out). Seats are relative to the observer (slot 0 is the observer, slot 1 its 下家).
Nothing hidden from the seat is encoded: other seats' concealed tiles, the wall order, the flip
tile and the kinds of others' concealed kongs never appear. The Box bounds are exact per
element: counts 0-4, flags 0-1, the streak 0 to ``hands_per_game / 10``, and the match scores
(``scores / 100``) unbounded. ``action_mask`` is the legal-action mask of the agent to act and
all zeros for every other agent (and after the match ends).

``state()`` returns ``zhuoji_env.observation.encode_state``: seat 0's observation (absolute
seats) followed by all hidden information (every hand, every concealed kong, the live wall as
counts, the flip tile), for centralised critics; ``state_space`` is its Box.

## Rewards

When a hand ends every seat receives its settlement for the hand (RULES.md 7: what it received
minus what it paid, zero-sum, in units times ``base_stake``); all other steps give 0. Rewards
arrive per hand, so the episode return of a seat is its match score. As in every AEC
environment, ``last()`` returns what the agent accumulated since it last acted (a seat that did
not act after the hand ended reads its score on its next turn, or at termination).

## Infos

After a hand ends, ``infos[agent]`` holds, until that agent next acts:

- ``"hand_no"``: the number of the hand that ended (1-based);
- ``"score"``: the seat's score for the hand; ``"match_score"``: its total so far;
- ``"hand"``, ``"kong"``, ``"chicken"``: that score split by ledger items (received minus paid):
  ``hand`` = ``hu``, ``rerpao``, ``baopai``, ``chajiao``; ``kong`` = ``dou_an``, ``dou_bu``,
  ``dou_ming``; ``chicken`` = ``chicken``, ``chongfeng``, ``zeren``, ``bao_ji``;
- ``"result"``: the hand's full result object (RULES.md 10: end, winners, flip, next dealer and
  streak, deltas, ledger).

The whole record of every hand of the match (RULES.md 10, replayable with
``zhuoji_env.replay``) is kept in ``env.unwrapped.records``.

## Illegal actions

With ``illegal_action="raise"`` (default) an action the mask forbids raises
``zhuoji_env.IllegalActionError`` naming the agent, the action and the legal actions; the
environment is unchanged, so the caller may retry. An index outside 0-85 fails the
``AssertOutOfBoundsWrapper`` assertion of ``env()``. With ``illegal_action="penalty"`` an illegal
action ends the episode: the offender receives ``illegal_reward`` (default
``-10 * u * base_stake``, ``u`` the value of a plain hand, so -10 in ``guiyang``/``app`` and -100
in ``classic``: ten plain wins), every other agent 0, every agent is terminated, and the
offender's info holds ``{"illegal_action": a, "legal_actions": [...]}``. Scores of hands that
ended earlier in the match stand.

## Rendering

``render()`` draws a text table: the hand number, dealer and streak, tiles left in the wall, the
phase and the seat to act (with its legal actions when the viewer is that seat); then per seat
its match score, its concealed tiles (the viewer's only, others as a count, unless
``render_all``), its melds (others' concealed kongs hidden), and its river in order, claimed
discards in brackets. After the match ends every hand is shown with the result.

## Version history

* v1: initial release (observation ``zhuoji-obs-v1``, record format ``zhuoji-record-1``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.core import IllegalActionError
from zhuoji_env.engine.game import BatchGame
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
from zhuoji_env.observation import (
    OBS_SIZE,
    SLICES,
    STATE_SIZE,
    STATE_SLICES,
    encode_one,
    encode_state,
)
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import CODES, NUM_TILES, UNICODE, parse_tiles

__all__ = [
    "CHICKEN_ITEMS",
    "HAND_ITEMS",
    "KONG_ITEMS",
    "RandomPolicy",
    "env",
    "illegal_message",
    "observation_box",
    "raw_env",
    "render_table",
    "score_parts",
    "state_box",
]

HAND_ITEMS = ("hu", "rerpao", "baopai", "chajiao")
KONG_ITEMS = ("dou_an", "dou_bu", "dou_ming")
CHICKEN_ITEMS = ("chicken", "chongfeng", "zeren", "bao_ji")
_PARTS = {"hand": HAND_ITEMS, "kong": KONG_ITEMS, "chicken": CHICKEN_ITEMS}


# --------------------------------------------------------------------------- shared helpers
def observation_box(rules: Rules) -> spaces.Box:
    """The exact per-element bounds of ``observation.encode`` under ``rules``."""
    low = np.zeros(OBS_SIZE, dtype=np.float32)
    high = np.ones(OBS_SIZE, dtype=np.float32)
    _fill_bounds(low, high, SLICES, rules)
    return spaces.Box(low, high, dtype=np.float32)


def state_box(rules: Rules) -> spaces.Box:
    """The exact per-element bounds of ``observation.encode_state`` under ``rules``."""
    low = np.zeros(STATE_SIZE, dtype=np.float32)
    high = np.ones(STATE_SIZE, dtype=np.float32)
    _fill_bounds(low, high, STATE_SLICES, rules)
    for name in ("all_hands", "live_wall"):
        high[STATE_SLICES[name]] = 4
    return spaces.Box(low, high, dtype=np.float32)


def _fill_bounds(low, high, sl, rules: Rules) -> None:
    for name in ("hand", "kong_counts", "river"):
        high[sl[name]] = 4
    high[sl["streak"]] = rules.hands_per_game / 10  # the streak is below the hands played
    low[sl["scores"]] = -np.inf
    high[sl["scores"]] = np.inf


def score_parts(result: Mapping[str, Any], seat: int) -> dict[str, int]:
    """A seat's score for a hand split into ``hand``, ``kong`` and ``chicken`` parts.

    Each part is what the seat received minus what it paid on the ledger items of that part
    (:data:`HAND_ITEMS`, :data:`KONG_ITEMS`, :data:`CHICKEN_ITEMS`); they sum to its delta.
    """
    out = dict.fromkeys(_PARTS, 0)
    for payer, payee, amount, item in result["ledger"]:
        for part, items in _PARTS.items():
            if item in items:
                out[part] += int(amount) * ((payee == seat) - (payer == seat))
    return out


def hand_info(result: Mapping[str, Any], seat: int, hand_no: int, score: int) -> dict[str, Any]:
    """The info of a seat for a hand that ended: its number in the match, the seat's score and
    its :func:`score_parts`, and the hand's result (a copy)."""
    return {"hand_no": hand_no, "score": score, **score_parts(result, seat),
            "result": copy.deepcopy(result)}


def wall_rows(walls, b: int) -> np.ndarray:
    """``[b, 108]`` kinds of ``b`` walls given as tile codes (one string or a list of codes
    each) or kinds: the ``wall`` and ``walls`` options of ``reset``."""
    rows = [parse_tiles(w) if isinstance(w, str) or (len(w) and isinstance(w[0], str)) else w
            for w in walls]
    return np.asarray(rows, dtype=np.int8).reshape(b, NUM_TILES)


def match_game(game: BatchGame | None, rules: Rules, seed: int) -> BatchGame:
    """The one-game :class:`BatchGame` of an environment, on a new match (made on first use)."""
    if game is None:
        return BatchGame(rules, 1, seed=seed, auto_reset=False, keep_records=True)
    game.reset(seed)
    return game


def present(render_mode: str | None, make_text: Callable[[], str]) -> str | None:
    """``render()``: the text returned (``ansi``) or printed (``human``); a warning and
    nothing without a render mode (Gymnasium's convention)."""
    if render_mode is None:
        gymnasium.logger.warn("You are calling render method without specifying any render mode.")
        return None
    text = make_text()
    if render_mode == "human":
        print(text)
        return None
    return text


def check_options(render_mode, render_modes, illegal_action: str, tile_style: str) -> None:
    """Validate the options the AEC and single-agent environments share."""
    if render_mode is not None and render_mode not in render_modes:
        raise ValueError(f"render_mode must be None or one of {render_modes}, got {render_mode!r}")
    if illegal_action not in ("raise", "penalty"):
        raise ValueError(f"illegal_action must be 'raise' or 'penalty', got {illegal_action!r}")
    if tile_style not in ("code", "unicode"):
        raise ValueError(f"tile_style must be 'code' or 'unicode', got {tile_style!r}")


def check_seat(name: str, seat, n: int) -> None:
    """A seat option must be a seat 0..n-1 or None."""
    if seat is not None and (
        isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < n
    ):
        raise ValueError(f"{name} must be a seat 0-{n - 1} or None, got {seat!r}")


def default_illegal_reward(rules: Rules) -> float:
    """The penalty of ``illegal_action="penalty"``: ten plain hands, times ``base_stake``."""
    return float(-10 * rules.pattern_table["pinghu"] * rules.base_stake)


def illegal_message(who: str, st: State, i: int, action) -> str:
    """``who tried <action>, which is illegal ...; legal: [...]``."""
    try:
        tried = f"action {int(action)} ({A.describe(int(action))})"
    except (ValueError, TypeError):
        tried = f"action {action!r} (not an index 0-{A.NUM_ACTIONS - 1})"
    phase = ("turn", "response window", "rob window", "报听 discard", "over")[int(st.phase[i])]
    legal = [f"{a} ({A.describe(a)})" for a in np.flatnonzero(st.mask[i])]
    return f"{who} tried {tried}, which is illegal in this {phase}; legal: {legal}"


class RandomPolicy:
    """Uniformly random legal actions from its own seeded generator.

    ``act(obs, mask)`` takes a mask ``[86]`` or ``[k, 86]`` (bool or 0/1) and returns one action
    or ``k`` actions. It needs no observation (``needs_observation = False``), so environments
    skip encoding for it. ``seed(s)`` restarts its generator.
    """

    needs_observation = False

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    def seed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, obs, mask):
        return A.random_legal(self.rng, np.asarray(mask).astype(bool))

    def __call__(self, obs, mask=None):
        if mask is None:  # an AEC-style observation dict
            mask = obs["action_mask"]
        return self.act(obs, mask)


# --------------------------------------------------------------------------- rendering
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
    over); others' concealed kongs are hidden likewise. Claimed discards are in brackets.
    """
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
    reveal = reveal or over
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
        for k in np.flatnonzero(st.meld[i, s]):
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
    from zhuoji_env.tiles import kind

    winners = ", ".join(names[w] for w in result["winners"]) or "nobody"
    flip = result.get("flip")
    flip_text = f", flip {glyphs[kind(flip)]}" if flip else ""
    deltas = ", ".join(f"{d:+d}" for d in result["deltas"])
    return f"{result['end']} (winners: {winners}{flip_text}); scores [{deltas}]"


# --------------------------------------------------------------------------- the environment
def env(render_mode: str | None = None, **kwargs: Any):
    """The wrapped AEC environment (``AssertOutOfBoundsWrapper``, ``OrderEnforcingWrapper``)."""
    e = raw_env(render_mode=render_mode, **kwargs)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    e = wrappers.OrderEnforcingWrapper(e)
    return e


class raw_env(AECEnv):  # noqa: N801 (PettingZoo's naming)
    """The unwrapped PettingZoo AEC environment; see the module documentation."""

    metadata = {
        "render_modes": ["human", "ansi"],
        "name": "zhuoji_v1",
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        render_mode: str | None = None,
        rules: str | Mapping | Rules | None = "guiyang",
        illegal_action: str = "raise",
        illegal_reward: float | None = None,
        render_all: bool = False,
        viewer: int | None = None,
        tile_style: str = "code",
        **switches: Any,
    ):
        super().__init__()
        self.rules = Rules.make(rules, **switches)
        n = self.rules.num_players
        check_options(render_mode, self.metadata["render_modes"], illegal_action, tile_style)
        check_seat("viewer", viewer, n)
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.illegal_reward = (
            default_illegal_reward(self.rules) if illegal_reward is None else float(illegal_reward)
        )
        self.render_all = render_all
        self.viewer = viewer
        self.tile_style = tile_style
        self.possible_agents = [f"player_{s}" for s in range(n)]
        self.agent_name_mapping = {a: s for s, a in enumerate(self.possible_agents)}
        box = observation_box(self.rules)
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": box,
                    "action_mask": spaces.Box(0, 1, (A.NUM_ACTIONS,), dtype=np.int8),
                }
            )
            for a in self.possible_agents
        }
        self.action_spaces = {a: spaces.Discrete(A.NUM_ACTIONS) for a in self.possible_agents}
        self.state_space = state_box(self.rules)
        self._seed_rng: np.random.Generator | None = None
        self.game: BatchGame | None = None
        self.records: list[dict[str, Any]] = []
        self.last_result: dict[str, Any] | None = None

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        if seed is not None:
            self._seed_rng = np.random.default_rng(seed)
            match_seed = int(seed)
        else:
            if self._seed_rng is None:
                self._seed_rng = np.random.default_rng()
            match_seed = int(self._seed_rng.integers(2**63))
        self.game = match_game(self.game, self.rules, match_seed)
        options = options or {}
        if "wall" in options:
            wall = wall_rows([options["wall"]], 1)
            self.game.state = core.deal(self.rules, wall, int(options.get("dealer", 0)), 0)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self.records = []
        self.last_result = None
        self.agent_selection = self.possible_agents[int(self.game.actor[0])]

    # ------------------------------------------------------------------ observing
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        g = self.game
        seat = self.agent_name_mapping[agent]
        obs = encode_one(g.state, 0, seat, g.scores, g.hand_no, self.rules.hands_per_game)
        return {"observation": obs, "action_mask": self._mask(agent).astype(np.int8)}

    def _mask(self, agent: str) -> np.ndarray:
        """The engine's mask for the agent to act; all false for any other agent."""
        g = self.game
        if agent == self.agent_selection and g.state.phase[0] != OVER and agent in self.agents:
            return g.mask[0]
        return np.zeros(A.NUM_ACTIONS, dtype=bool)

    def state(self) -> np.ndarray:
        g = self.game
        return encode_state(
            g.state, np.zeros(1, np.int64), g.scores, g.hand_no, self.rules.hands_per_game
        )[0]

    def action_mask(self, agent: str | None = None) -> np.ndarray:
        """bool ``[86]``: the legal actions of ``agent`` (default: the agent to act)."""
        return self._mask(self.agent_selection if agent is None else agent).copy()

    # ------------------------------------------------------------------ stepping
    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        g = self.game
        seat = self.agent_name_mapping[agent]
        a = -1 if action is None else action
        legal = isinstance(a, (int, np.integer)) and 0 <= a < A.NUM_ACTIONS and g.mask[0, a]
        if not legal:
            msg = illegal_message(f"{agent} (seat {seat})", g.state, 0, action)
            if self.illegal_action == "raise":
                raise IllegalActionError(msg)
            self._cumulative_rewards[agent] = 0.0
            self.rewards = dict.fromkeys(self.agents, 0.0)
            self.rewards[agent] = self.illegal_reward
            self.terminations = dict.fromkeys(self.agents, True)
            self.infos[agent] = {
                "illegal_action": None if action is None else int(action),
                "legal_actions": [int(x) for x in np.flatnonzero(g.mask[0])],
                "message": msg,
            }
            self._accumulate_rewards()
            if self.render_mode == "human":
                self.render()
            return
        self._cumulative_rewards[agent] = 0.0
        self.infos[agent] = {}
        out = g.step(np.array([int(a)]))
        self.rewards = dict.fromkeys(self.agents, 0.0)
        if out.hand_over[0]:
            rec = out.records[0][1]
            self.records.append(rec)
            result = rec["result"]
            self.last_result = result
            hand_no = len(self.records)
            totals = out.final_scores[0] if out.match_over[0] else g.scores[0]
            for s, name in enumerate(self.possible_agents):
                self.rewards[name] = float(out.rewards[0, s])
                self.infos[name] = {
                    **hand_info(result, s, hand_no, int(out.rewards[0, s])),
                    "match_score": int(totals[s]),
                }
        if out.match_over[0]:
            self.terminations = dict.fromkeys(self.agents, True)
        else:
            self.agent_selection = self.possible_agents[int(g.actor[0])]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    # ------------------------------------------------------------------ rendering
    def render(self, reveal: bool | None = None, viewer: int | None = None) -> str | None:
        """The table (``ansi``: returned; ``human``: printed). See the module documentation."""
        return present(self.render_mode, lambda: self.render_text(reveal=reveal, viewer=viewer))

    def render_text(self, reveal: bool | None = None, viewer: int | None = None) -> str:
        """The table as a string, whatever ``render_mode`` is."""
        if self.game is None:
            raise RuntimeError("call reset() before rendering")
        return render_game(
            self.game,
            viewer=self.viewer if viewer is None else viewer,
            reveal=self.render_all if reveal is None else reveal,
            tile_style=self.tile_style,
            last_result=self.last_result,
        )

    def close(self) -> None:
        pass
