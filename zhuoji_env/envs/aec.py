"""Zhuoji mahjong (贵阳捉鸡麻将): the PettingZoo AEC environment ``zhuoji_v1``.

=================  ==========================================================================
Creation           ``zhuoji_env.env(rules="guiyang")`` (wrapped), ``zhuoji_env.raw_env(...)``
Actions            Discrete
Parallel API       No (one seat decides at a time: RULES.md 3)
Manual control     No
Agents             ``['player_0', 'player_1', 'player_2', 'player_3']`` (3 with 3 players)
Action shape       ``()`` (one integer 0-85; ``np.array([1])`` is refused)
Action values      ``Discrete(86)``
Observation shape  ``{"observation": (OBS_SIZE,) float32, "action_mask": (86,) int8}``
State shape        ``(STATE_SIZE,)`` float32 (``env.state()``, full information)
=================  ==========================================================================

The rules are those of ``docs/RULES.md``; this page documents the environment around them.

.. rubric:: Construction

``zhuoji_env.env(render_mode=None, rules="guiyang", illegal_action="penalty", **switches)``

- ``rules``: a preset name (``"guiyang"``, ``"classic"``, ``"app"``), a record's rules object
  ``{"preset": ..., "overrides": {...}}``, or a :class:`zhuoji_env.Rules`; keyword ``switches``
  (any switch of RULES.md 9, e.g. ``num_players=3, hands_per_game=8``) override it; a keyword
  that is neither an argument nor a switch raises ``ValueError`` listing both.
- ``illegal_action``: ``"penalty"`` (default of ``env()``) or ``"raise"`` (default of
  ``raw_env``); see *Actions given and illegal actions*.
- ``illegal_reward``: the offender's reward under ``"penalty"`` (default below).
- ``render_mode``: ``None``, ``"ansi"`` (``render()`` returns the table as a string),
  ``"human"`` (prints it after every step and on ``render()``) or ``"rgb_array"``
  (``render()`` returns a uint8 ``[H, W, 3]`` picture of the table).
- ``render_all`` (default False): show every seat's concealed tiles and concealed kongs
  (``True`` or ``False``: another value, such as ``"no"``, is a ``TypeError``).
- ``viewer``: the seat whose concealed tiles are shown (default: the seat to act).
- ``tile_style``: ``"code"`` (``5m``) or ``"unicode"`` (🀋).

``env()`` wraps ``raw_env(illegal_action="penalty", ...)`` in PettingZoo's
``OrderEnforcingWrapper``, as the classic environments do. The environment itself plays the
parts of their other two wrappers: the ``"penalty"`` mode is ``TerminateIllegalWrapper``'s
convention (with the penalty and the info below), and the action check below replaces
``AssertOutOfBoundsWrapper`` (whose assertion takes ``True`` for 1 and fails a float with an
``AssertionError``).

.. rubric:: Agents and turn order

Agents are ``player_0`` .. ``player_{n-1}``, seat ``s`` being ``player_s``. The agent selected
is always the seat the engine asks now (RULES.md 3): the turn seat in its turn, and in a response
or rob window each seat *that has a legal claim*, in turn order from the discarder's 下家. Seats
with no legal claim are never selected, so an agent is only asked when it has a real choice or
must play a turn (its mask then holds at least one action; ``pass`` is always legal in a window).

.. rubric:: Episodes and the match

An episode is one match of ``hands_per_game`` hands (RULES.md 8.2; default 1 hand). The dealer
and streak carry from hand to hand, the next hand is dealt as soon as one ends, and scores
accumulate. When the last hand ends every agent is terminated (``terminations`` all true); there
is no truncation. ``reset(seed=s)`` deals the same match as game 0 of ``BatchGame(seed=s)``
(walls and first dealer from the random stream ``(s, 0)``); ``reset()`` without a seed draws the
next match's seed from a generator seeded by the last seed given (or by OS entropy), so a run of
resets after one seeded reset is reproducible.

``reset(options={"wall": W, "dealer": d})`` deals the first hand from a given wall (108 kinds or
tile codes, RULES.md 2) and dealer instead; later hands of the match are dealt from the seed.

.. rubric:: Action space

One ``Discrete(86)`` shared by every decision: the index table is
:mod:`zhuoji_env.engine.actions`'s (0-26 discard, 27-53 concealed kong, 54-80 added kong, 81
pong, 82 kong, 83 hu, 84 pass, 85 baoting).

.. rubric:: Observation space

``observe(agent)`` returns ``{"observation": float32[OBS_SIZE], "action_mask": int8[86]}``.
``observation`` is ``zhuoji_env.observation.encode`` of that seat's view (format
``zhuoji-obs-v1``; its module docstring lists every block, and ``observation.block(obs, name)``
cuts one out). Seats are relative to the observer (slot 0 is the observer, slot 1 its 下家).
Nothing hidden from the seat is encoded: other seats' concealed tiles, the wall order, the flip
tile and the kinds of others' concealed kongs never appear. One thing follows from the hands
by the protocol itself: RULES.md 3 asks only seats that may claim a discard (or rob a kong),
so while a claim window is open ``agent_selection``, and the ``phase`` and ``to_act`` blocks
of any seat's observation, say that (and who) may claim it. An agent is handed its observation
(``last()``) only when it is asked; an observation of a seat not asked, taken during a window,
holds what ``agent_selection`` shows every seat. The Box bounds are exact per
element: counts 0-4, flags 0-1, the streak 0 to ``hands_per_game / 10``, and the match scores
(``scores / 100``) unbounded. ``action_mask`` is the legal-action mask of the agent to act and
all zeros for every other agent (and after the match ends).

``state()`` returns ``zhuoji_env.observation.encode_state``: seat 0's observation (absolute
seats) followed by all hidden information (every hand, every concealed kong, the live wall as
counts, the flip tile), for centralised critics; ``state_space`` is its Box.

``public_view()`` returns what the agent to act knows of the game as arrays
(``zhuoji_env.belief.PublicView``: the state with every hidden part blanked), from which
``zhuoji_env.belief.sample`` deals complete games for decision-time search; an agent made by
``make_agent("search:BASE")`` acts with ``agent.act_view(obs, mask, env.public_view())``.

.. rubric:: Rewards

When a hand ends every seat receives its settlement for the hand (RULES.md 7: what it received
minus what it paid, zero-sum, in units times ``base_stake``); all other steps give 0. Rewards
arrive per hand, so the episode return of a seat is its match score. As in every AEC
environment, ``last()`` returns what the agent accumulated since it last acted (a seat that did
not act after the hand ended reads its score on its next turn, or at termination).

.. rubric:: Infos

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

.. rubric:: Actions given and illegal actions

An action is an integer: a Python ``int``, a numpy integer scalar or a 0-d integer array, taken
as that integer. Anything else (a float such as ``1.0``, a bool, a string, ``None`` for an
agent that is not done, an array of another shape) raises ``TypeError`` naming what was given,
and an integer outside 0-85 raises ``ValueError``; the environment is unchanged.

An action in range that the mask forbids is illegal. With ``illegal_action="penalty"`` (the
default of ``env()``: PettingZoo's ``TerminateIllegalWrapper`` convention) it ends the episode:
the offender receives ``illegal_reward`` (default ``-10 * u * base_stake``, ``u`` the value of a
plain hand, so -10 in ``guiyang``/``app`` and -100 in ``classic``: ten plain wins), every other
agent 0, every agent is terminated, a warning is logged (once per environment), and the
offender's info holds ``{"illegal_action": a, "legal_actions": [...], "message": ...}``. Scores
of hands that ended earlier in the match stand. With ``illegal_action="raise"`` (the default of
``raw_env``, for a run that should stop at a bug) it raises ``zhuoji_env.IllegalActionError``
naming the agent, the action and the legal actions; the environment is unchanged, so the
caller may retry.

.. rubric:: Errors

``raw_env``'s ``step``, ``observe``, ``state``, ``action_mask`` and ``render`` before
``reset()`` raise ``RuntimeError``, and so does its ``step`` once every agent has left after
the end of the match. ``env()`` wraps it in PettingZoo's ``OrderEnforcingWrapper``, which
raises ``AssertionError`` first for a call before ``reset()`` and, for a ``step`` once every
agent has left, logs a warning and returns ``None``.
``observe`` of an unknown agent raises ``ValueError`` listing the agents; a ``viewer`` of
``render``, ``render_text`` or ``render_picture`` that is not a seat raises ``ValueError``
naming the seats. ``reset(seed=...)``
takes ``None`` or a non-negative integer (``TypeError``/``ValueError`` otherwise); of
``options``, ``wall`` must hold 108 tiles, four of each kind, and ``dealer`` must be a seat
given with a ``wall``; another key is a ``ValueError`` (but ``"options"``, which PettingZoo's
``api_test`` passes, is ignored). ``illegal_reward`` must be a finite number
(``TypeError``/``ValueError`` otherwise).

.. rubric:: Rendering

``render()`` draws a text table: the hand number, dealer and streak, tiles left in the wall, the
phase and the seat to act (with its legal actions when the viewer is that seat); then per seat
its match score, its concealed tiles (the viewer's only, others as a count, unless
``render_all``), its melds (others' concealed kongs hidden), and its river in order, claimed
discards in brackets. After the match ends every hand is shown with the result.

``render_mode="rgb_array"`` draws the same table as a picture (:mod:`zhuoji_env.picture`: ASCII
tile faces colour-coded by suit, chickens and the 冲锋鸡 marked, the flip tile once known, the
last discard, tiles left and match scores); its size depends only on the number of seats, so
video recorders can take the frames.

.. rubric:: Version history

* v1: initial release (observation ``zhuoji-obs-v1``, record format ``zhuoji-record-1``).

The version covers the rules engine, the observation, the action table and the rewards
(``zhuoji_env.versions``); ``from zhuoji_env import zhuoji_v1`` names this environment by it, and
CHANGELOG.md says what each version changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from zhuoji_env.belief import PublicView, public_view
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.core import IllegalActionError
from zhuoji_env.engine.game import BatchGame, check_flag
from zhuoji_env.engine.state import OVER
from zhuoji_env.envs.common import (
    as_action,
    check_options,
    check_reset_options,
    check_seat,
    check_seed,
    dealer_rows,
    env_rules,
    hand_info,
    illegal_info,
    illegal_message,
    illegal_penalty,
    match_game,
    observation_box,
    state_box,
    wall_rows,
    warn_illegal,
)
from zhuoji_env.envs.render import present, render_game
from zhuoji_env.observation import encode_one, encode_state
from zhuoji_env.picture import draw_game, png_bytes
from zhuoji_env.rules import Rules
from zhuoji_env.versions import ENVIRONMENT

__all__ = ["env", "raw_env"]


def env(render_mode: str | None = None, illegal_action: str = "penalty", **kwargs: Any):
    """The wrapped AEC environment: ``raw_env`` with the ``"penalty"`` default for illegal
    actions, in ``OrderEnforcingWrapper``."""
    e = raw_env(render_mode=render_mode, illegal_action=illegal_action, **kwargs)
    return wrappers.OrderEnforcingWrapper(e)


class raw_env(AECEnv):  # noqa: N801 (PettingZoo's naming)
    """The unwrapped PettingZoo AEC environment; see the module documentation."""

    metadata = {
        "render_modes": ["human", "ansi", "rgb_array"],
        "name": ENVIRONMENT,
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
        self.rules = env_rules(raw_env, rules, switches, "zhuoji_env.env() / raw_env")
        n = self.rules.num_players
        check_options(render_mode, self.metadata["render_modes"], illegal_action, tile_style)
        check_seat("viewer", viewer, n)
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.illegal_reward = illegal_penalty(self.rules, illegal_reward)
        self.render_all = check_flag(render_all, "render_all")
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
        seed = check_seed(seed)
        # PettingZoo's api_test checks that reset takes ``options`` by passing
        # ``options={"options": 1}`` (pettingzoo/test/api_test.py): that key alone is let through.
        options = check_reset_options(options, "wall", "dealer", ignored=("options",))
        if "wall" in options:
            wall = wall_rows([options["wall"]], 1, "wall")
            dealer = dealer_rows(options.get("dealer", 0), 1, self.rules.num_players, "dealer")
        if seed is not None:
            self._seed_rng = np.random.default_rng(seed)
            match_seed = seed
        else:
            if self._seed_rng is None:
                self._seed_rng = np.random.default_rng()
            match_seed = int(self._seed_rng.integers(2**63))
        self.game = match_game(self.game, self.rules, match_seed)
        if "wall" in options:
            self.game.state = core.deal(self.rules, wall, dealer, 0)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self.records = []
        self.last_result = None
        self.agent_selection = self.possible_agents[int(self.game.actor[0])]

    def _game(self, what: str) -> BatchGame:
        if self.game is None:
            raise RuntimeError(f"call reset() before {what}")
        return self.game

    # ------------------------------------------------------------------ observing
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        g = self._game("observe()")
        if agent not in self.agent_name_mapping:
            raise ValueError(f"unknown agent {agent!r}: the agents are {self.possible_agents}")
        seat = self.agent_name_mapping[agent]
        obs = encode_one(g.state, 0, seat, g.scores, g.hand_no, self.rules.hands_per_game)
        return {"observation": obs, "action_mask": self._mask(agent).astype(np.int8)}

    def _mask(self, agent: str) -> np.ndarray:
        """The engine's mask for the agent to act; all false for any other agent, and for every
        agent once the episode ended (the match, or an illegal action under ``"penalty"``)."""
        g = self._game("reading a mask")
        if (
            agent == self.agent_selection
            and g.state.phase[0] != OVER
            and agent in self.agents
            and not self.terminations[agent]
        ):
            return g.mask[0]
        return np.zeros(A.NUM_ACTIONS, dtype=bool)

    def state(self) -> np.ndarray:
        g = self._game("state()")
        return encode_state(
            g.state, np.zeros(1, np.int64), g.scores, g.hand_no, self.rules.hands_per_game
        )[0]

    def action_mask(self, agent: str | None = None) -> np.ndarray:
        """bool ``[86]``: the legal actions of ``agent`` (default: the agent to act)."""
        self._game("action_mask()")
        if agent is not None and agent not in self.agent_name_mapping:
            raise ValueError(f"unknown agent {agent!r}: the agents are {self.possible_agents}")
        return self._mask(self.agent_selection if agent is None else agent).copy()

    def public_view(self) -> PublicView:
        """What the agent to act knows of the game, for decision-time search
        (:mod:`zhuoji_env.belief`; ``search:BASE`` plays with ``act_view(obs, mask, view)``).
        Raises ``RuntimeError`` when nobody is to act (the episode ended)."""
        g = self._game("public_view()")
        agent = self.agent_selection
        if not self._mask(agent).any():
            raise RuntimeError(f"nobody is to act ({agent!r} has no legal action): no public view")
        return public_view(g.state, [0])

    # ------------------------------------------------------------------ stepping
    def step(self, action) -> None:
        g = self._game("step()")
        if not self.agents:
            raise RuntimeError("the match is over and every agent has left: call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        seat = self.agent_name_mapping[agent]
        a = as_action(action, f"the action of {agent}")
        if not g.mask[0, a]:
            msg = illegal_message(f"{agent} (seat {seat})", g.state, 0, a)
            if self.illegal_action == "raise":
                raise IllegalActionError(msg)
            warn_illegal(self, msg)
            self._cumulative_rewards[agent] = 0.0
            self.rewards = dict.fromkeys(self.agents, 0.0)
            self.rewards[agent] = self.illegal_reward
            self.terminations = dict.fromkeys(self.agents, True)
            self.infos[agent] = illegal_info(g.state, 0, a, msg)
            self._accumulate_rewards()
            if self.render_mode == "human":
                self.render()
            return
        self._cumulative_rewards[agent] = 0.0
        self.infos[agent] = {}
        out = g.step(np.array([a]))
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
        """The table (``ansi``: returned; ``human``: printed; ``rgb_array``: a picture). See the
        module documentation."""
        return present(
            self.render_mode,
            lambda: self.render_text(reveal=reveal, viewer=viewer),
            lambda: self.render_picture(reveal=reveal, viewer=viewer),
        )

    def render_picture(self, reveal: bool | None = None, viewer: int | None = None) -> np.ndarray:
        """The table as a uint8 ``[H, W, 3]`` picture, whatever ``render_mode`` is."""
        if self.game is None:
            raise RuntimeError("call reset() before rendering")
        return draw_game(
            self.game,
            viewer=self.viewer if viewer is None else viewer,
            reveal=self.render_all if reveal is None else reveal,
        )

    def _repr_png_(self) -> bytes | None:
        """Notebooks show the environment as the picture of its table (after ``reset``)."""
        return None if self.game is None else png_bytes(self.render_picture())

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
