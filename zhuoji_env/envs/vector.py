"""Vector environments over ``BatchGame``: batched self-play, and a Stable-Baselines3 ``VecEnv``.

SelfPlayVecEnv: every seat of B games, one shared policy
====================================================================
``SelfPlayVecEnv(num_envs=1024, rules="guiyang", seed=None, **switches)`` runs B games of
``BatchGame(B, auto_reset=True)`` in lock-step. In every game exactly one seat decides at a
time (RULES.md 3), so a step takes one action per game, for whichever seat is asked:

- ``reset(seed=None, options=None) -> (obs, masks, seats)``: ``obs`` float32 ``[B, OBS_SIZE]``,
  the observations of the B seats to act (``observation.encode`` in one call), ``masks`` bool
  ``[B, 86]`` their legal actions, ``seats`` int64 ``[B]`` which seat acts in each game.
  ``options={"walls": [B,108], "dealers": [B]}`` deals the first hands from given walls.
- ``step(actions) -> (obs, masks, seats, rewards, dones, infos)``: applies ``actions`` (int
  ``[B]``; an illegal action raises :class:`~zhuoji_env.IllegalActionError` naming the game,
  the seat and the legal actions, before anything changes) and returns the next deciders'
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

SB3VecEnv: a learner's seat in B games, for Stable-Baselines3
==============================================================
``SB3VecEnv(num_envs=8, rules="guiyang", learner_seat=0, opponent=None, seed=None,
**switches)`` subclasses ``stable_baselines3.common.vec_env.VecEnv`` (imported on first use, so
``zhuoji_env`` does not need SB3). Env index ``i`` is game ``i`` of one ``BatchGame``; in every
game the learner plays seat ``learner_seat`` (an int, or ``None``: drawn uniformly per game and
per hand from the environment's generator) and the other seats are played by ``opponent``, a
*batched* policy evaluated once per round for all games that wait on an opponent: an object with
``act(obs, mask)`` or a callable ``f(obs, mask)``, with ``obs`` float32 ``[k, OBS_SIZE]`` (each
opponent seat's own view; ``None`` when the policy has ``needs_observation = False``) and
``mask`` bool ``[k, 86]``, returning ``k`` actions. The default is uniformly random legal play
(:class:`~zhuoji_env.envs.RandomPolicy`) seeded from the environment's seed.

Why this design: with a single shared policy acting for whichever seat is to act, a per-env
reward stream cannot credit a hand to the right decisions (see above) and SB3's rollout buffer
knows one trajectory per env index. With one learner seat per game every env index is an
ordinary single-agent episode: observations are always the learner's, rewards are the learner's
own, and SB3's GAE is correct as it stands. Self-play is then obtained by passing a frozen copy
of the learner as ``opponent`` (``env.opponent = ...`` between rollouts); for simultaneous
learning on every seat use :class:`SelfPlayVecEnv`.

- Episode: one match (``hands_per_game`` hands). ``step`` applies the learner's actions, then
  lets opponents play in every game until each game again waits on the learner. The reward of
  a step is the learner's settlement of the hands that ended during it (hands that end before
  the learner's first decision of a match are paid at its first step; a match in which the
  learner never decides is skipped). ``done`` marks the end of a match; the game is then
  reset at once (SB3's auto-reset convention): the returned observation is the next match's
  and ``infos[i]["terminal_observation"]`` is the learner's view of the finished match's final
  state; ``infos[i]["episode"]`` holds ``{"r": return, "l": length, "t": seconds}`` as
  ``Monitor`` writes it, so SB3 logs episode statistics without a ``VecMonitor``.
- ``env_method("action_masks")`` returns the B learner masks (what ``MaskablePPO``'s
  ``get_action_masks`` stacks); ``action_masks()`` returns them as one bool ``[B, 86]`` array.
- ``seed(s)`` (SB3's convention) makes the next ``reset`` deal ``BatchGame(seed=s)``; the
  constructor's ``seed`` does the same for the first reset. ``get_attr``, ``set_attr`` and
  other ``env_method`` calls act on the vector environment itself (all indices share it).
- An illegal learner action raises :class:`~zhuoji_env.IllegalActionError` naming the env
  index, the seat and the legal actions.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.core import IllegalActionError
from zhuoji_env.engine.game import BatchGame, StepOutput
from zhuoji_env.envs.aec import (
    RandomPolicy,
    check_seat,
    illegal_message,
    observation_box,
    render_table,
    wall_rows,
)
from zhuoji_env.observation import encode
from zhuoji_env.rules import Rules

__all__ = ["SelfPlayVecEnv", "Transitions"]  # and SB3VecEnv, on first use


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


def _walls_option(options: Mapping, b: int) -> tuple[np.ndarray, np.ndarray]:
    walls = wall_rows(options["walls"], b)
    dealers = np.broadcast_to(np.asarray(options.get("dealers", 0)), b)
    return walls, dealers


def _check_legal(who: str, st, rows, seats, mask, acts) -> None:
    """Raise :class:`IllegalActionError` for the first of ``acts`` (of ``who`` in games ``rows``
    at ``seats``, with masks ``mask``) that is not legal."""
    ok = (acts >= 0) & (acts < A.NUM_ACTIONS)
    ok[ok] = mask[np.flatnonzero(ok), acts[ok]]
    if not ok.all():
        j = int(np.flatnonzero(~ok)[0])
        i = int(rows[j])
        raise IllegalActionError(
            illegal_message(f"{who} in env {i} (seat {int(seats[j])})", st, i, acts[j])
        )


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
        self.rules = Rules.make(rules, **switches)
        self.num_envs = num_envs
        self.num_players = self.rules.num_players
        self.encode_obs = encode_obs
        self.reward_scale = float(reward_scale)
        self.observation_space = observation_box(self.rules)
        self.action_space = spaces.Discrete(A.NUM_ACTIONS)
        self.game = BatchGame(
            self.rules, num_envs, seed=seed, auto_reset=True, keep_records=keep_records
        )
        self._rows = np.arange(num_envs)
        self._pending = np.full((num_envs, self.num_players), -1, dtype=np.int64)
        self.step_id = 0

    def reset(self, seed: int | None = None, options: Mapping | None = None):
        """New matches in every game: ``(obs, masks, seats)`` of the first deciders."""
        self.game.reset(seed)
        if options and "walls" in options:
            walls, dealers = _walls_option(options, self.num_envs)
            self.game.state = core.deal(self.rules, walls, dealers, 0)
        self._pending[:] = -1
        self.step_id = 0
        return self._observe()

    def _observe(self):
        g = self.game
        seats = g.actor.astype(np.int64)
        obs = None
        if self.encode_obs:
            obs = encode(
                g.state, self._rows, seats, g.scores, g.hand_no, self.rules.hands_per_game
            )
        return obs, g.mask.copy(), seats

    def step(self, actions):
        g = self.game
        rows = self._rows
        seats = g.actor.astype(np.int64)
        t = self.step_id
        out = g.step(np.asarray(actions))
        parts = []
        prev = self._pending[rows, seats]
        sup = np.flatnonzero(prev >= 0)
        if sup.size:
            parts.append((sup, seats[sup], prev[sup], np.zeros(sup.size, np.float32),
                          np.zeros(sup.size, bool), np.zeros(sup.size, bool)))
        self._pending[rows, seats] = t
        e = np.flatnonzero(out.hand_over)
        if e.size:
            pend = self._pending[e]
            kk, ss = np.nonzero(pend >= 0)
            gi = e[kk]
            parts.append((
                gi, ss, pend[kk, ss],
                (out.rewards[gi, ss] * self.reward_scale).astype(np.float32),
                np.ones(gi.size, bool), out.match_over[gi],
            ))
            self._pending[e] = -1
        self.step_id += 1
        if parts:
            trans = Transitions(*(np.concatenate(c) for c in zip(*parts, strict=True)))
        else:
            trans = _empty_transitions()
        obs, masks, next_seats = self._observe()
        rewards = out.rewards.astype(np.float32) * np.float32(self.reward_scale)
        infos = {
            "transitions": trans,
            "step_id": t,
            "match_over": out.match_over,
            "final_scores": out.final_scores,
            "records": out.records,
        }
        return obs, masks, next_seats, rewards, out.hand_over, infos

    def random_actions(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random legal action per game."""
        return self.game.random_actions(rng)

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------- SB3
def _policy_actions(policy, obs, mask) -> np.ndarray:
    a = policy.act(obs, mask) if hasattr(policy, "act") else policy(obs, mask)
    return np.asarray(a, dtype=np.int64).reshape(-1)


_SB3_CLASS = None


def _make_sb3_class():
    from stable_baselines3.common.vec_env import VecEnv

    class SB3VecEnv(VecEnv):
        """A learner's seat in B games as a Stable-Baselines3 ``VecEnv``; see the module docs."""

        def __init__(
            self,
            num_envs: int = 8,
            rules: str | Mapping | Rules | None = "guiyang",
            learner_seat: int | None = 0,
            opponent: Any = None,
            seed: int | None = None,
            render_mode: str | None = None,
            **switches: Any,
        ):
            self.rules = Rules.make(rules, **switches)
            n = self.rules.num_players
            check_seat("learner_seat", learner_seat, n)
            if render_mode not in (None, "ansi", "human"):
                raise ValueError(
                    f"render_mode must be None, 'ansi' or 'human', got {render_mode!r}"
                )
            self.learner_seat = learner_seat
            self.opponent = RandomPolicy() if opponent is None else opponent
            self.render_mode = render_mode
            self.game = BatchGame(self.rules, num_envs, seed=seed, auto_reset=False)
            self._rng = np.random.default_rng(seed)
            self._rows = np.arange(num_envs)
            self._seat = np.zeros(num_envs, dtype=np.int64)
            self._carry = np.zeros(num_envs)
            self._ep_ret = np.zeros(num_envs)
            self._ep_len = np.zeros(num_envs, dtype=np.int64)
            self._ep_start = np.full(num_envs, time.time())
            self._actions: np.ndarray | None = None
            self.skipped_matches = 0
            super().__init__(num_envs, observation_box(self.rules), spaces.Discrete(A.NUM_ACTIONS))
            if seed is not None:
                self.seed(seed)  # SB3's seeds: the first reset deals BatchGame(seed=seed)

        # -------------------------------------------------------------- helpers
        def _draw_seats(self, idx: np.ndarray) -> None:
            if self.learner_seat is None:
                self._seat[idx] = self._rng.integers(self.rules.num_players, size=idx.size)
            else:
                self._seat[idx] = self.learner_seat

        def _encode(self, idx: np.ndarray, seats: np.ndarray) -> np.ndarray:
            g = self.game
            return encode(g.state, idx, seats, g.scores, g.hand_no, self.rules.hands_per_game)

        def _credit(self, out: StepOutput, rew, new_ep, done, terminal) -> None:
            e = np.flatnonzero(out.hand_over)
            if not e.size:
                return
            r = out.rewards[e, self._seat[e]].astype(np.float64)
            cur = ~new_ep[e]
            rew[e[cur]] += r[cur]
            self._carry[e[~cur]] += r[~cur]
            m = out.match_over[e]
            self._draw_seats(e[~m])
            fin = e[m]
            if not fin.size:
                return
            ended = fin[~new_ep[fin]]
            if ended.size:
                obs = self._encode(ended, self._seat[ended])
                for j, i in enumerate(ended):
                    terminal[int(i)] = obs[j]
                done[ended] = True
                new_ep[ended] = True
            self.skipped_matches += int(fin.size - ended.size)
            self._carry[fin] = 0.0
            self.game.restart(fin)
            self._draw_seats(fin)

        def _play_opponents(self, rew, new_ep, done, terminal) -> None:
            g = self.game
            while True:
                wait = np.flatnonzero(g.actor != self._seat)
                if not wait.size:
                    return
                seats = g.actor[wait].astype(np.int64)
                mask = g.mask[wait]
                obs = None
                if getattr(self.opponent, "needs_observation", True):
                    obs = self._encode(wait, seats)
                acts = _policy_actions(self.opponent, obs, mask)
                if acts.shape != wait.shape:
                    raise ValueError(
                        f"the opponent returned {acts.shape} actions for {wait.size} games"
                    )
                _check_legal("the opponent", g.state, wait, seats, mask, acts)
                full = np.full(g.batch_size, -1, dtype=np.int64)
                full[wait] = acts
                active = np.zeros(g.batch_size, dtype=bool)
                active[wait] = True
                out = g.step(full, active)
                self._credit(out, rew, new_ep, done, terminal)

        # -------------------------------------------------------------- VecEnv API
        def reset(self):
            seed = self._seeds[0]
            if seed is not None:
                self._rng = np.random.default_rng(seed)
            else:
                seed = int(self._rng.integers(2**63))
            self._reset_seeds()
            if callable(getattr(self.opponent, "seed", None)):
                self.opponent.seed(int(self._rng.integers(2**63)))
            self.game.reset(int(seed))
            self._draw_seats(self._rows)
            self._carry[:] = 0.0
            self._ep_ret[:] = 0.0
            self._ep_len[:] = 0
            self._ep_start[:] = time.time()
            b = self.num_envs
            new_ep = np.ones(b, dtype=bool)
            self._play_opponents(np.zeros(b), new_ep, np.zeros(b, bool), {})
            self.reset_infos = [{} for _ in range(b)]
            return self._encode(self._rows, self._seat)

        def step_async(self, actions: np.ndarray) -> None:
            self._actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)

        def step_wait(self):
            g = self.game
            acts = self._actions
            b = self.num_envs
            _check_legal("the learner", g.state, self._rows, self._seat, g.mask, acts)
            rew = self._carry.copy()
            self._carry[:] = 0.0
            new_ep = np.zeros(b, dtype=bool)
            done = np.zeros(b, dtype=bool)
            terminal: dict[int, np.ndarray] = {}
            out = g.step(acts)
            self._credit(out, rew, new_ep, done, terminal)
            self._play_opponents(rew, new_ep, done, terminal)
            self._ep_ret += rew
            self._ep_len += 1
            infos: list[dict[str, Any]] = [{} for _ in range(b)]
            now = time.time()
            for i in np.flatnonzero(done):
                infos[i] = {
                    "terminal_observation": terminal[int(i)],
                    "TimeLimit.truncated": False,
                    "episode": {
                        "r": float(self._ep_ret[i]),
                        "l": int(self._ep_len[i]),
                        "t": round(now - self._ep_start[i], 6),
                    },
                }
                self._ep_ret[i] = 0.0
                self._ep_len[i] = 0
                self._ep_start[i] = now
            obs = self._encode(self._rows, self._seat)
            return obs, rew.astype(np.float32), done, infos

        def action_masks(self) -> np.ndarray:
            """bool ``[B, 86]``: the learner's legal actions in every game."""
            return self.game.mask.copy()

        def close(self) -> None:
            pass

        def get_attr(self, attr_name: str, indices=None) -> list[Any]:
            value = getattr(self, attr_name)
            return [value for _ in self._get_indices(indices)]

        def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
            setattr(self, attr_name, value)

        def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs):
            idx = list(self._get_indices(indices))
            if method_name == "action_masks":
                return [self.game.mask[i].copy() for i in idx]
            result = getattr(self, method_name)(*method_args, **method_kwargs)
            return [result for _ in idx]

        def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
            return [False for _ in self._get_indices(indices)]

        def render(self, mode: str | None = None, index: int = 0) -> str | None:
            """The table of game ``index`` seen from the learner's seat."""
            g = self.game
            text = render_table(
                self.rules, g.state, index, scores=g.scores[index],
                hand_no=int(g.hand_no[index]), viewer=int(self._seat[index]),
            )
            if (mode or self.render_mode) == "human":
                print(text)
                return None
            return text

    SB3VecEnv.__module__ = __name__
    SB3VecEnv.__qualname__ = "SB3VecEnv"
    return SB3VecEnv


def __getattr__(name: str):
    global _SB3_CLASS
    if name == "SB3VecEnv":
        if _SB3_CLASS is None:
            _SB3_CLASS = _make_sb3_class()
        return _SB3_CLASS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
