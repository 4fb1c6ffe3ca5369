"""``SelfPlayVecEnv``: batched self-play over ``BatchGame`` with per-seat credit assignment.

.. rubric:: SelfPlayVecEnv: every seat of B games, one shared policy

``SelfPlayVecEnv(num_envs=1024, rules="guiyang", seed=None, encode_obs=True, keep_records=False,
reward_scale=1.0, **switches)`` (``num_envs`` an integer >= 1, ``encode_obs`` and
``keep_records`` ``True`` or ``False``, ``reward_scale`` a finite number > 0) runs B games of
``BatchGame(B, auto_reset=True)`` in lock-step. In every game exactly one seat decides at a
time (RULES.md 3), so a step takes one action per game, for whichever seat is asked:

- ``reset(seed=None, options=None) -> (obs, masks, seats)`` (without a seed: the constructor's
  at the first reset, then a generator seeded by the last seed given): ``obs`` float32
  ``[B, OBS_SIZE]``, the observations of the B seats to act (``observation.encode`` in one
  call), ``masks`` bool ``[B, 86]`` their legal actions, ``seats`` int64 ``[B]`` which seat acts
  in each game.
  ``options={"walls": [B,108], "dealers": [B]}`` deals the first hands from given walls (one
  per game, each as for the AEC environment's ``wall``; ``dealers`` one seat or ``B``); another
  key is a ``ValueError``.
- ``step(actions) -> (obs, masks, seats, rewards, dones, infos)`` (after ``reset()``, a
  ``RuntimeError`` before): applies ``actions`` (``B`` integers 0-85: a wrong length or shape,
  or an integer out of range, is a ``ValueError``, floats, bools or strings a ``TypeError``;
  an illegal action raises :class:`~zhuoji_env.IllegalActionError` naming the game, the seat
  and the legal actions, before anything changes) and returns the next deciders'
  ``obs``, ``masks``, ``seats``; ``rewards`` float32 ``[B, n]``: every seat's settlement
  (RULES.md 7, times ``reward_scale``) of the hands that ended in this step, 0 elsewhere;
  ``dones`` bool ``[B]``: a hand ended in game i (its next hand, or a new match, is already
  dealt: ``obs`` belongs to it); ``infos``: a dict with ``"transitions"`` (below),
  ``"step_id"`` (the id of the decisions just taken), ``"match_over"`` bool ``[B]``,
  ``"final_scores"`` int ``[B, n]`` (match totals where a match ended) and ``"records"`` (with
  ``keep_records=True``: ``(game, record)`` of every hand that ended).

Decision ids. The decisions taken by the ``k``-th call of ``step`` after ``reset`` have
``step_id = k`` (0-based; ``reset`` returns the observations of step 0). A decision is
identified by ``(game, step_id)``; its seat is the ``seats[game]`` returned with its
observation. A rollout buffer of shape ``[T, B]`` indexes it directly.

Credit assignment (the design). A hand pays every seat at its end, but the seats decide at
different times, so a per-game reward stream would credit the payment to whichever seat happened
to act last. Instead each seat of each game is its own trajectory, and each hand's settlement is
credited to **each seat's own last decision** in that hand:

- the environment keeps, per (game, seat), the *pending* decision: the seat's latest decision
  of the current hand, whose outcome is not known yet;
- when the seat decides again in the same hand, its pending decision is finished with reward 0
  and ``done=False`` (its next state is the new decision);
- when the hand ends, every seat's pending decision is finished with that seat's score for the
  hand and ``done=True`` (the hand boundary: nothing after it belongs to that hand);
- a seat that took no decision in a hand (possible: a win before it was ever asked) has nothing
  to credit; its score is still in ``rewards`` but in no transition.

Each step returns the decisions it finished as ``infos["transitions"]``, a :class:`Transitions`
of equal-length arrays ``(game, seat, step_id, reward, done, match_over)`` in chronological order
per (game, seat). ``match_over`` marks the hand-end transitions of a match's last hand: a learner
that treats the whole match as the episode uses it as the terminal flag instead of ``done`` (the
next hand's decisions of the seat then continue its trajectory; hands where the seat never
decided add no reward to it). Decisions still pending when a rollout stops have unknown outcome.

PPO with GAE per seat. Collect ``T`` steps, storing per ``[t, game]`` the observation, mask,
action, log-probability, value and ``seats``; write each step's transitions into ``[T, B]``
reward / done / finished arrays with :meth:`Transitions.fill`; then the trainer's ``seat_gae``
(``training.learner``) computes
advantages along each (game, seat) trajectory (the next state of a decision is the same seat's
next decision), and a validity mask: the unfinished decisions at the end of a rollout are left
out of the loss (or keep the environment running into the next rollout and use them there: the
step ids keep counting). Zero-sum self-play with one shared policy then needs nothing else.

``SB3VecEnv`` (``zhuoji_env.envs.sb3``), a Stable-Baselines3 ``VecEnv`` where a learner holds one
seat of B games against batched opponents, is the alternative when one policy learns one seat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.game import BatchGame, check_flag
from zhuoji_env.envs.common import (
    as_actions,
    check_num_envs,
    check_reset_options,
    check_reward,
    check_seed,
    dealer_rows,
    env_rules,
    observation_box,
    wall_rows,
)
from zhuoji_env.observation import encode, encode_draws, encode_hidden
from zhuoji_env.rules import Rules

__all__ = ["SelfPlayVecEnv", "Transitions"]


class Transitions(NamedTuple):
    """Decisions finished in one step of :class:`SelfPlayVecEnv` (equal-length arrays)."""

    game: np.ndarray  # int64 [m]
    seat: np.ndarray  # int64 [m]
    step_id: np.ndarray  # int64 [m]: the step in which the decision was taken
    reward: np.ndarray  # float32 [m]: 0, or the seat's score when the hand ended after it
    done: np.ndarray  # bool [m]: the hand ended after this decision (its last one of the hand)
    match_over: np.ndarray  # bool [m]: ... and that hand was the last of the match

    def fill(self, rewards, dones, finished, start: int = 0, match_dones=None) -> None:
        """Write into ``[T, B]`` arrays the transitions with ``start <= step_id < start + T``."""
        t = self.step_id - start
        ok = (t >= 0) & (t < rewards.shape[0])
        t, g = t[ok], self.game[ok]
        rewards[t, g] = self.reward[ok]
        dones[t, g] = self.done[ok]
        finished[t, g] = True
        if match_dones is not None:
            match_dones[t, g] = self.match_over[ok]


def _empty_transitions() -> Transitions:
    z = np.zeros(0, dtype=np.int64)
    return Transitions(z, z, z, np.zeros(0, np.float32), np.zeros(0, bool), np.zeros(0, bool))


class SelfPlayVecEnv:
    """Batched self-play with per-seat credit assignment; see the module documentation."""

    def __init__(
        self,
        num_envs: int = 1024,
        rules: str | Mapping | Rules | None = "guiyang",
        seed: int | None = None,
        encode_obs: bool = True,
        keep_records: bool = False,
        reward_scale: float = 1.0,
        **switches: Any,
    ):
        num_envs = check_num_envs(num_envs)
        self.rules = env_rules(SelfPlayVecEnv, rules, switches)
        seed = check_seed(seed)
        self.num_envs = num_envs
        self.num_players = self.rules.num_players
        self.encode_obs = check_flag(encode_obs, "encode_obs")
        self.reward_scale = check_reward(reward_scale, "reward_scale", positive=True)
        self.observation_space = observation_box(self.rules)
        self.action_space = spaces.Discrete(A.NUM_ACTIONS)
        self.game = BatchGame(
            self.rules, num_envs, seed=seed, auto_reset=True, keep_records=keep_records
        )
        self._seed = seed  # what the first reset() without a seed deals
        self._rng = np.random.default_rng(seed)  # the seeds of later ones
        self._rows = np.arange(num_envs)
        self._pending = np.full((num_envs, self.num_players), -1, dtype=np.int64)
        self.step_id = 0
        self._started = False

    def reset(self, seed: int | None = None, options: Mapping | None = None):
        """New matches in every game: ``(obs, masks, seats)`` of the first deciders. Without a
        seed the first reset deals the constructor's seed, and later ones continue a generator
        seeded by the last seed given (fresh entropy where none was), as the other
        environments do."""
        seed = check_seed(seed)
        options = check_reset_options(options, "walls", "dealers")
        if "walls" in options:
            walls = wall_rows(options["walls"], self.num_envs)
            dealers = dealer_rows(options.get("dealers", 0), self.num_envs, self.num_players)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        elif self._seed is not None and not self._started:
            seed = self._seed
        else:
            seed = int(self._rng.integers(2**63))
        self.game.reset(seed)
        if "walls" in options:
            self.game.state = core.deal(self.rules, walls, dealers, 0)
        self._pending[:] = -1
        self.step_id = 0
        self._started = True
        return self._observe()

    def _observe(self):
        g = self.game
        seats = g.actor.astype(np.int64)
        obs = None
        if self.encode_obs:
            obs = encode(g.state, self._rows, seats, g.scores, g.hand_no, self.rules.hands_per_game)
        return obs, g.mask.copy(), seats

    def step(self, actions):
        if not self._started:
            raise RuntimeError("call reset() before step(): no match has been dealt yet")
        g = self.game
        rows = self._rows
        seats = g.actor.astype(np.int64)
        t = self.step_id
        out = g.step(as_actions(actions, self.num_envs, "actions"))
        parts = []
        prev = self._pending[rows, seats]
        sup = np.flatnonzero(prev >= 0)
        if sup.size:
            parts.append(
                (
                    sup,
                    seats[sup],
                    prev[sup],
                    np.zeros(sup.size, np.float32),
                    np.zeros(sup.size, bool),
                    np.zeros(sup.size, bool),
                )
            )
        self._pending[rows, seats] = t
        e = np.flatnonzero(out.hand_over)
        if e.size:
            pend = self._pending[e]
            kk, ss = np.nonzero(pend >= 0)
            gi = e[kk]
            parts.append(
                (
                    gi,
                    ss,
                    pend[kk, ss],
                    (out.rewards[gi, ss] * self.reward_scale).astype(np.float32),
                    np.ones(gi.size, bool),
                    out.match_over[gi],
                )
            )
            self._pending[e] = -1
        self.step_id += 1
        if parts:
            trans = Transitions(*(np.concatenate(c) for c in zip(*parts, strict=True)))
        else:
            trans = _empty_transitions()
        obs, masks, next_seats = self._observe()
        rewards = (out.rewards * self.reward_scale).astype(np.float32)  # as the transitions
        infos = {
            "transitions": trans,
            "step_id": t,
            "match_over": out.match_over,
            "final_scores": out.final_scores,
            "records": out.records,
        }
        return obs, masks, next_seats, rewards, out.hand_over, infos

    def hidden(self, draws: int = 0) -> np.ndarray:
        """float32 ``[num_envs, HIDDEN_SIZE + draws_size(draws)]``: what each game's seat to act
        cannot see (every concealed hand and kong, the live wall, the flip tile; seats relative
        to it, :func:`~zhuoji_env.observation.encode_hidden`), then with ``draws > 0`` the order
        of the wall (:func:`~zhuoji_env.observation.encode_draws`: each seat's next ``draws``
        draws), for an oracle critic in training. An agent must never be given it."""
        if not self._started:
            raise RuntimeError("call reset() before hidden(): no match has been dealt yet")
        if isinstance(draws, bool) or not isinstance(draws, int | np.integer) or draws < 0:
            raise ValueError(f"draws={draws!r}: must be an integer >= 0")
        seat = self.game.actor.astype(np.int64)
        out = encode_hidden(self.game.state, self._rows, seat)
        if draws:
            out = np.concatenate([out, encode_draws(self.game.state, self._rows, seat, draws)], 1)
        return out

    def random_actions(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random legal action per game."""
        return self.game.random_actions(rng)

    def close(self) -> None:
        pass
