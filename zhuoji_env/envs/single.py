"""``SingleAgentEnv``: a Gymnasium environment where a learner holds one seat of a Zhuoji match.

The other seats are played by fixed opponent policies, so the game is an ordinary single-agent
MDP from the learner's point of view: Stable-Baselines3 (``MaskablePPO`` of ``sb3-contrib``),
Gymnasium wrappers and vector environments apply directly.

Construction
    ``SingleAgentEnv(rules="guiyang", learner_seat=0, opponents=None, render_mode=None,
    illegal_action="penalty", illegal_reward=None, render_all=False, tile_style="code",
    **switches)``; ``gymnasium.make("zhuoji_env/Guiyang-v1", **kwargs)`` (``App-v1``,
    ``Classic-v1``) makes it of the id's preset (:mod:`zhuoji_env.envs.registration`).

    - ``rules`` and ``switches``: as for :func:`zhuoji_env.env` (a preset name, a
      ``{"preset", "overrides"}`` object or a :class:`~zhuoji_env.Rules`, plus any switch of
      RULES.md 9, e.g. ``hands_per_game=4``).
    - ``learner_seat``: the seat the learner plays, or ``None``: drawn uniformly for every hand
      from the environment's generator (the first dealer of a match is random either way, so a
      fixed seat still meets every position).
    - ``opponents``: who plays the other seats. ``None`` (default): uniformly random legal
      actions (:class:`~zhuoji_env.envs.RandomPolicy`), seeded from the environment's seed. One
      policy: it plays every other seat. A sequence of ``n - 1`` policies: entry ``j - 1`` plays
      the seat ``j`` places after the learner (下家 first). A policy is what ``agents`` provides:
      an object with a batched ``act(obs, mask)`` (``obs`` float32 ``[k, OBS_SIZE]`` of its own
      seat, ``mask`` bool ``[k, 86]``, returning ``k`` actions; here ``k = 1``), for example
      ``agents.make_agent("rule", rules=...)`` (a name or a class is refused: the environments do
      not import the agents; a policy whose ``rules`` are not the environment's, such as ``rule`` or
      ``search:BASE`` made for another preset, is a ``ValueError``). A policy with
      ``needs_observation = False`` gets ``obs=None`` (encoding is skipped). At every ``reset`` a
      policy with a ``reseed(seed)`` method is reseeded from the environment's generator. An
      opponent's answer must be one integer action (a ``TypeError`` or ``ValueError`` otherwise) and
      legal (:class:`~zhuoji_env.IllegalActionError` otherwise).
      An opponent that fails (any error of its own, or such an answer) leaves the game with an
      opponent to act: its error propagates from ``step`` (or ``reset``), and every later
      ``step`` raises ``RuntimeError`` until ``reset``.
    - ``illegal_action``: ``"penalty"`` (default; PettingZoo's ``TerminateIllegalWrapper``
      convention, what Gymnasium's and SB3's ``check_env`` need: an illegal learner action ends
      the episode with reward ``illegal_reward``, default ``-10 * u * base_stake`` where ``u``
      is the value of a plain hand (plus the score of any hand that ended before the learner's
      first decision, not yet paid), a warning is logged once, and the info holds
      ``"illegal_action"``, ``"legal_actions"`` and ``"message"``) or ``"raise"`` (it raises
      :class:`~zhuoji_env.IllegalActionError` naming the seat, the action and the legal
      actions, and leaves the environment unchanged). The action itself must be an integer
      (``int``, numpy integer, 0-d integer array) 0-85: a float, a bool, a string, ``None`` or
      another shape is a ``TypeError``, an integer out of range a ``ValueError``, in both modes.

Spaces
    ``observation_space`` is a flat ``Box(OBS_SIZE,)`` float32: the learner seat's
    ``zhuoji-obs-v1`` observation (``zhuoji_env.observation``; bounds as in the AEC
    environment). ``action_space`` is ``Discrete(86)`` (``zhuoji_env.engine.actions``).
    ``action_masks()`` returns the bool ``[86]`` legal-action mask, the method ``MaskablePPO``
    looks for; ``info["action_mask"]`` carries it too. It is all False once the episode is
    over: under Gymnasium's next-step autoreset (its vector environments' default) a finished
    env's row of ``call("action_masks")`` stays all False until the next ``step`` resets it
    (ignoring its action), so a masked policy must handle an all-False row: the package's
    agents refuse one (``every mask row needs at least one legal action``), so drop such rows
    before ``agent.act`` and give those envs any action.

Episodes and rewards
    An episode is one match of ``hands_per_game`` hands (default 1). ``reset`` deals a match and
    lets the opponents play until the learner must decide; each ``step`` applies the learner's
    action, then the opponents' actions until the learner's next decision or the end of the
    match. The reward of a step is the learner's settlement (RULES.md 7) of every hand that
    ended during it (0 otherwise); the return of an episode is the learner's match score. A hand
    that ends before the learner's first decision of the match (it is possible: a 天胡, or a win
    on the first discards before the learner's turn) is paid in the first step's reward. A match
    that ends before the learner has any decision at all is skipped: another is dealt (counted
    in the reset info's ``"skipped_matches"``), except one dealt from a given ``wall`` (below),
    which is a ``ValueError`` rather than a wall silently replaced. There is no truncation.

    ``info`` of a step holds ``"seat"`` (the learner's seat now), ``"action_mask"``, and, when
    hands ended, ``"hands"``: one dict per hand with ``"hand_no"``, ``"seat"`` (the learner's
    seat in it), ``"score"``, its ``"hand"``/``"kong"``/``"chicken"`` parts and the full
    ``"result"`` (RULES.md 10). Every record of the match is in ``env.records``.

Determinism
    ``reset(seed=s)`` fixes everything that follows: the walls and dealers, the learner's seats,
    and the default opponents' choices. ``reset()`` without a seed continues the generator.
    ``reset(options={"wall": W, "dealer": d})`` deals the first hand from a given wall (108
    tiles, four of each kind, as kinds or tile codes (a string, a list or a numpy string
    array); ``dealer`` a seat); another option is a ``ValueError``, and so is a wall whose
    match ends before the learner's first decision. ``step`` before ``reset``, after the end of
    the episode or after an opponent failed raises ``RuntimeError``. ``illegal_reward`` must be
    a finite number; ``render_all`` is ``True`` or ``False`` (a ``TypeError`` otherwise).

Rendering
    ``render_mode="ansi"`` returns, ``"human"`` prints, the table of
    :func:`zhuoji_env.envs.render.render_table` seen from the learner's seat;
    ``"rgb_array"`` returns its picture (:func:`zhuoji_env.picture.draw_game`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.core import IllegalActionError
from zhuoji_env.engine.game import BatchGame, check_flag
from zhuoji_env.envs.common import (
    OpponentFailure,
    RandomPolicy,
    as_action,
    check_opponent,
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
    opponent_actions,
    wall_rows,
    warn_illegal,
)
from zhuoji_env.envs.render import present, render_game
from zhuoji_env.observation import encode_one
from zhuoji_env.picture import draw_game, png_bytes
from zhuoji_env.rules import Rules

__all__ = ["SingleAgentEnv"]


class SingleAgentEnv(gymnasium.Env):
    """A learner's seat against fixed opponents; see the module documentation."""

    metadata = {"render_modes": ["human", "ansi", "rgb_array"], "render_fps": 1}

    def __init__(
        self,
        rules: str | Mapping | Rules | None = "guiyang",
        learner_seat: int | None = 0,
        opponents: Any = None,
        render_mode: str | None = None,
        illegal_action: str = "penalty",
        illegal_reward: float | None = None,
        render_all: bool = False,
        tile_style: str = "code",
        **switches: Any,
    ):
        super().__init__()
        self.rules = env_rules(SingleAgentEnv, rules, switches)
        n = self.rules.num_players
        check_seat("learner_seat", learner_seat, n)
        check_options(render_mode, self.metadata["render_modes"], illegal_action, tile_style)
        self.learner_seat = None if learner_seat is None else int(learner_seat)
        self.opponents = self._opponent_list(opponents, n, self.rules)
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.illegal_reward = illegal_penalty(self.rules, illegal_reward)
        self.render_all = check_flag(render_all, "render_all")
        self.tile_style = tile_style
        self.observation_space = observation_box(self.rules)
        self.action_space = spaces.Discrete(A.NUM_ACTIONS)
        self.game: BatchGame | None = None
        self.records: list[dict[str, Any]] = []
        self.seat = 0
        self._done = True
        self._hands: list[dict[str, Any]] = []
        self._carry = 0.0
        self._last_result: dict[str, Any] | None = None
        self._failure = OpponentFailure()

    @staticmethod
    def _opponent_list(opponents, n: int, rules: Rules) -> list:
        if opponents is None:
            return [RandomPolicy() for _ in range(n - 1)]
        if isinstance(opponents, Sequence) and not isinstance(opponents, str):
            if len(opponents) != n - 1:
                raise ValueError(
                    f"opponents must be one policy or a sequence of {n - 1} policies (one per "
                    f"other seat), got a sequence of {len(opponents)}"
                )
            for j, p in enumerate(opponents):
                check_opponent(p, f"opponents[{j}]", rules)
            return list(opponents)
        check_opponent(opponents, "opponents", rules)
        return [opponents] * (n - 1)

    # ------------------------------------------------------------------ reset
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        seed = check_seed(seed)
        options = check_reset_options(options, "wall", "dealer")
        if "wall" in options:
            wall = wall_rows([options["wall"]], 1, "wall")
            dealer = dealer_rows(options.get("dealer", 0), 1, self.rules.num_players, "dealer")
        super().reset(seed=seed)
        self._done = True  # until a learner decision is reached
        self._failure.clear()
        rng = self.np_random
        seen = set()
        for p in self.opponents:
            if id(p) not in seen and callable(getattr(p, "reseed", None)):
                p.reseed(int(rng.integers(2**63)))
            seen.add(id(p))
        self._seat_rng = np.random.default_rng(int(rng.integers(2**63)))
        skipped = 0
        while True:
            match_seed = int(rng.integers(2**63))
            self.game = match_game(self.game, self.rules, match_seed)
            if "wall" in options:
                self.game.state = core.deal(self.rules, wall, dealer, 0)
            self.records = []
            self._hands = []
            self._last_result = None
            self._draw_seat()
            with self._failure.watch("reset()"):
                self._carry, over = self._advance()
            if not over:
                break
            if "wall" in options:
                raise ValueError(self._unplayable_wall(int(dealer[0])))
            skipped += 1
        self._done = False
        info = {"seat": self.seat, "action_mask": self.action_masks(), "skipped_matches": skipped}
        return self._obs(), info

    def _unplayable_wall(self, dealer: int) -> str:
        """Why the given wall is refused: its match ended before the learner ever decided, and
        dealing another wall in its place would silently drop the one asked for."""
        r = self._last_result or {}
        return (
            f"reset option 'wall' cannot be played to a learner decision: the hand dealt from it "
            f"(dealer seat {dealer}) ended before the learner's first decision ({r.get('end')}, "
            f"winners {r.get('winners')}), ending the match with no decision for the learner "
            f"(seat {self.seat}); no other wall is dealt in its place: give another wall or "
            f"dealer, or hands_per_game > 1"
        )

    def _draw_seat(self) -> None:
        if self.learner_seat is None:
            self.seat = int(self._seat_rng.integers(self.rules.num_players))
        else:
            self.seat = self.learner_seat

    # ------------------------------------------------------------------ playing
    def _apply(self, action: int) -> float:
        """Step the game; the learner's score if a hand ended."""
        g = self.game
        out = g.step(np.array([action]))
        if not out.hand_over[0]:
            return 0.0
        rec = out.records[0][1]
        self.records.append(rec)
        result = rec["result"]
        self._last_result = result
        score = int(out.rewards[0, self.seat])
        self._hands.append(
            {**hand_info(result, self.seat, len(self.records), score), "seat": self.seat}
        )
        if not out.match_over[0]:
            self._draw_seat()
        return float(score)

    def _advance(self) -> tuple[float, bool]:
        """Opponents play until the learner must decide; (reward, match over)."""
        g = self.game
        n = self.rules.num_players
        reward = 0.0
        while not g.over[0]:
            actor = int(g.actor[0])
            if actor == self.seat:
                return reward, False
            policy = self.opponents[(actor - self.seat) % n - 1]
            mask = g.mask[0].copy()
            obs = None
            if getattr(policy, "needs_observation", True):
                obs = self._obs(actor)[None]
            who = f"opponent player_{actor} (seat {actor})"
            a = int(opponent_actions(policy, obs, mask[None], who, g.state, [0])[0])
            if not mask[a]:
                raise IllegalActionError(illegal_message(who, g.state, 0, a))
            reward += self._apply(a)
        return reward, True

    def step(self, action):
        if self.game is None:
            raise RuntimeError("call reset() before step()")
        self._failure.check()
        if self._done:
            raise RuntimeError("the episode is over: call reset()")
        g = self.game
        a = as_action(action, f"the learner's action (seat {self.seat})")
        if not g.mask[0, a]:
            msg = illegal_message(f"learner (seat {self.seat})", g.state, 0, a)
            if self.illegal_action == "raise":
                raise IllegalActionError(msg)
            warn_illegal(self, msg)
            self._done = True
            info = {
                "seat": self.seat,
                "action_mask": np.zeros(A.NUM_ACTIONS, dtype=bool),
                **illegal_info(g.state, 0, a, msg),
            }
            reward = self._carry + self.illegal_reward
            self._carry = 0.0
            return self._obs(), reward, True, False, info
        reward = self._carry + self._apply(a)
        self._carry = 0.0
        with self._failure.watch("step()"):
            more, over = self._advance()
        reward += more
        self._done = over
        info: dict[str, Any] = {"seat": self.seat, "action_mask": self.action_masks()}
        if self._hands:
            info["hands"] = self._hands
        self._hands = []
        if self.render_mode == "human":
            self.render()
        return self._obs(), float(reward), over, False, info

    # ------------------------------------------------------------------ views
    def _obs(self, seat: int | None = None) -> np.ndarray:
        g = self.game
        s = self.seat if seat is None else seat
        return encode_one(g.state, 0, s, g.scores, g.hand_no, self.rules.hands_per_game)

    def action_masks(self) -> np.ndarray:
        """bool ``[86]``: the learner's legal actions (all false once the episode is over).

        Under Gymnasium's next-step autoreset (the default of its vector environments) a finished
        env is reset only by the next ``step``, whose action is ignored, so until then its row
        of ``call("action_masks")`` is all False: a masked policy must handle such a row rather
        than sample from an empty mask (the package's agents refuse one: drop those rows before
        ``agent.act`` and give those envs any action).
        """
        g = self.game
        if g is None or self._done or g.over[0] or int(g.actor[0]) != self.seat:
            return np.zeros(A.NUM_ACTIONS, dtype=bool)
        return g.mask[0].copy()

    def render(self):
        """The table seen from the learner's seat: text (``ansi``/``human``) or a uint8
        ``[H, W, 3]`` picture (``rgb_array``)."""
        return present(self.render_mode, self.render_text, self.render_picture)

    def render_picture(self, reveal: bool | None = None) -> np.ndarray:
        """The table seen from the learner's seat as a picture, whatever ``render_mode`` is."""
        if self.game is None:
            raise RuntimeError("call reset() before rendering")
        return draw_game(
            self.game, viewer=self.seat, reveal=self.render_all if reveal is None else reveal
        )

    def _repr_png_(self) -> bytes | None:
        """Notebooks show the environment as the picture of its table (after ``reset``)."""
        return None if self.game is None else png_bytes(self.render_picture())

    def render_text(self, reveal: bool | None = None) -> str:
        """The table seen from the learner's seat, whatever ``render_mode`` is."""
        if self.game is None:
            raise RuntimeError("call reset() before rendering")
        return render_game(
            self.game,
            viewer=self.seat,
            reveal=self.render_all if reveal is None else reveal,
            tile_style=self.tile_style,
            last_result=self._last_result,
        )
