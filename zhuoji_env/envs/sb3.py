"""``SB3VecEnv``: a learner's seat in B batched games, as a Stable-Baselines3 ``VecEnv``.

This module imports ``stable_baselines3``; ``zhuoji_env.envs.SB3VecEnv`` imports it on first
use, so that ``zhuoji_env`` itself needs neither SB3 nor torch.

``SB3VecEnv(num_envs=8, rules="guiyang", learner_seat=0, opponent=None, seed=None,
render_mode=None, illegal_action="penalty", illegal_reward=None, **switches)``: env index ``i``
is game ``i`` of one ``BatchGame``; in every game the learner plays seat ``learner_seat`` (an
int, or ``None``: drawn uniformly per game and per hand from the environment's generator) and
the other seats are played by ``opponent``, evaluated once per round for all games that wait on
an opponent: an object with the agents' batched ``act(obs, mask)`` (``obs`` float32
``[k, OBS_SIZE]``, each opponent seat's own view, ``None`` when the policy has
``needs_observation = False``; ``mask`` bool ``[k, 86]``; it returns ``k`` integer actions), for
example ``agents.make_agent("rule")``; a name or a class is refused at construction (the
environments do not import the agents), and so is a policy whose ``rules`` are not the environment's
(``rule`` or ``search:BASE`` made for another preset). The default is uniformly random legal play
(:class:`~zhuoji_env.envs.RandomPolicy`) seeded from the environment's seed. An opponent's answer
that is not ``k`` integers 0-85 is a ``TypeError``/``ValueError``, an illegal one an
:class:`~zhuoji_env.IllegalActionError`.

Why this design: with a single shared policy acting for whichever seat is to act, a per-env
reward stream cannot credit a hand to the right decisions (see ``zhuoji_env.envs.vector``) and
SB3's rollout buffer knows one trajectory per env index. With one learner seat per game every
env index is an ordinary single-agent episode: observations are always the learner's, rewards
are the learner's own, and SB3's GAE is correct as it stands. Self-play is then obtained by
passing a frozen copy of the learner as ``opponent`` (``env.opponent = ...`` between rollouts);
for simultaneous learning on every seat use :class:`~zhuoji_env.envs.SelfPlayVecEnv`.

- Episode: one match (``hands_per_game`` hands). ``step`` applies the learner's actions, then
  lets opponents play in every game until each game again waits on the learner. The reward of
  a step is the learner's settlement of the hands that ended during it (hands that end before
  the learner's first decision of a match are paid at its first step; a match in which the
  learner never decides is skipped). ``done`` marks the end of a match; the game is then
  reset at once (SB3's auto-reset convention): the returned observation is the next match's
  and ``infos[i]["terminal_observation"]`` is the learner's view of the finished match's final
  state; ``infos[i]["episode"]`` holds ``{"r": return, "l": length, "t": seconds}`` as
  ``Monitor`` writes it (``t``: the seconds since the environment was made, to the episode's
  end), so SB3 logs episode statistics without a ``VecMonitor``.
- Actions: ``B`` integers 0-85 (a ``[B]`` or ``[B, 1]`` array or sequence); anything else is a
  ``TypeError``/``ValueError`` naming what was given. An illegal learner action in game ``i``,
  under ``illegal_action="penalty"`` (default, PettingZoo's ``TerminateIllegalWrapper``
  convention), ends that game's episode with reward ``illegal_reward`` (default
  ``-10 * u * base_stake``, ``u`` the value of a plain hand; plus the score of any hand that
  ended before the learner's first decision, not yet paid), a warning logged once, and
  ``infos[i]`` holding ``"illegal_action"``, ``"legal_actions"`` and ``"message"``; the other
  games step as usual. Under ``"raise"`` it raises :class:`~zhuoji_env.IllegalActionError`
  naming the env index, the seat and the legal actions, before any game moves.
- ``env_method("action_masks")`` returns the B learner masks (what ``MaskablePPO``'s
  ``get_action_masks`` stacks); ``action_masks()`` returns them as one bool ``[B, 86]`` array.
- Rendering: ``render_mode`` ``None``, ``"ansi"``, ``"human"`` or ``"rgb_array"``.
  ``render(mode, index)`` draws game ``index`` (default 0) seen from its learner seat as the
  text table, or under ``"rgb_array"`` as the single-agent environment's picture; without an
  index, ``"rgb_array"`` tiles every game's picture (SB3's ``VecEnv.render``), and
  ``get_images()`` returns the B pictures: what SB3's ``VecVideoRecorder`` records.
- ``seed(s)`` (SB3's convention) makes the next ``reset`` deal ``BatchGame(seed=s)``; the
  constructor's ``seed`` does the same for the first reset. There are no reset options:
  ``set_options`` with any other than empty ones is a ``ValueError``. ``get_attr``, ``set_attr`` and
  other ``env_method`` calls act on the vector environment itself (all indices share it);
  ``set_attr`` of ``learner_seat``, ``illegal_action``, ``illegal_reward`` or ``opponent`` is
  checked as the constructor checks it.
- ``step``/``step_async`` before ``reset()``, ``step_async`` twice without ``step_wait``, and
  ``step_wait`` without ``step_async`` raise ``RuntimeError``, and so do ``action_masks()``
  and rendering before ``reset()``. An opponent that fails (its error propagates unchanged
  from ``reset`` or ``step``) leaves games with an opponent to act: every later ``step``
  raises ``RuntimeError`` until ``reset()``. ``render(index=i)`` and the ``indices`` of
  ``get_attr``, ``set_attr``, ``env_method`` and ``env_is_wrapped`` need game indices 0..B-1
  (``ValueError``). ``num_envs`` must be an integer >= 1 and ``illegal_reward`` a finite
  number.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import tile_images

from zhuoji_env.engine import actions as A
from zhuoji_env.engine.core import IllegalActionError
from zhuoji_env.engine.game import BatchGame, StepOutput
from zhuoji_env.envs.common import (
    OpponentFailure,
    RandomPolicy,
    as_actions,
    check_illegal_mode,
    check_num_envs,
    check_opponent,
    check_seat,
    check_seed,
    env_rules,
    illegal_info,
    illegal_message,
    illegal_penalty,
    observation_box,
    opponent_actions,
    warn_illegal,
)
from zhuoji_env.envs.render import render_table
from zhuoji_env.observation import encode
from zhuoji_env.picture import draw_game
from zhuoji_env.rules import Rules

__all__ = ["SB3VecEnv"]

_RENDER_MODES = (None, "ansi", "human", "rgb_array")


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
        illegal_action: str = "penalty",
        illegal_reward: float | None = None,
        **switches: Any,
    ):
        num_envs = check_num_envs(num_envs)
        self.rules = env_rules(SB3VecEnv, rules, switches)
        seed = check_seed(seed)
        if render_mode not in _RENDER_MODES:
            raise ValueError(
                f"render_mode must be None, 'ansi', 'human' or 'rgb_array', got {render_mode!r}"
            )
        # checked by the setters, which check set_attr's values the same way
        self.learner_seat = learner_seat
        self.opponent = RandomPolicy() if opponent is None else opponent
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.illegal_reward = illegal_reward
        self.game = BatchGame(self.rules, num_envs, seed=seed, auto_reset=False)
        self._rng = np.random.default_rng(seed)
        self._rows = np.arange(num_envs)
        self._seat = np.zeros(num_envs, dtype=np.int64)
        self._carry = np.zeros(num_envs)
        self._ep_ret = np.zeros(num_envs)
        self._ep_len = np.zeros(num_envs, dtype=np.int64)
        self._t_start = time.time()  # an episode's "t" is the time since, as Monitor's
        self._actions: np.ndarray | None = None
        self._started = False
        self._failure = OpponentFailure()
        self.skipped_matches = 0
        super().__init__(num_envs, observation_box(self.rules), spaces.Discrete(A.NUM_ACTIONS))
        self.metadata["render_fps"] = 1
        if seed is not None:
            self.seed(seed)  # SB3's seeds: the first reset deals BatchGame(seed=seed)

    @property
    def opponent(self):
        """The batched policy of the other seats; may be replaced between rollouts."""
        return self._opponent

    @opponent.setter
    def opponent(self, policy) -> None:
        check_opponent(policy, "opponent", self.rules)
        self._opponent = policy

    @property
    def learner_seat(self) -> int | None:
        """The learner's seat in every game, or ``None``: drawn per game and per hand."""
        return self._learner_seat

    @learner_seat.setter
    def learner_seat(self, seat) -> None:
        check_seat("learner_seat", seat, self.rules.num_players)
        self._learner_seat = None if seat is None else int(seat)

    @property
    def illegal_action(self) -> str:
        """What an illegal learner action does: ``"penalty"`` or ``"raise"``."""
        return self._illegal_action

    @illegal_action.setter
    def illegal_action(self, mode) -> None:
        check_illegal_mode(mode)
        self._illegal_action = mode

    @property
    def illegal_reward(self) -> float:
        """The learner's reward for an illegal action under ``"penalty"``."""
        return self._illegal_reward

    @illegal_reward.setter
    def illegal_reward(self, value) -> None:
        self._illegal_reward = illegal_penalty(self.rules, value)

    def seed(self, seed: int | None = None):
        """SB3's ``seed``: the next ``reset`` deals ``BatchGame(seed=seed)``."""
        return super().seed(check_seed(seed))

    def set_options(self, options: list[dict] | dict | None = None) -> None:
        """SB3's ``set_options``: this environment has no reset options (every game is dealt
        from ``BatchGame(seed=...)``), so only ``None``, ``{}`` or a list of empty dicts is
        taken; anything else is a ``ValueError``, not options dropped unnoticed at the next
        ``reset``."""
        given = options if isinstance(options, list) else [options]
        if any(o not in (None, {}) for o in given):
            raise ValueError(
                f"SB3VecEnv takes no reset options, got {options!r}: to deal given walls, put "
                "SingleAgentEnvs (reset options 'wall' and 'dealer') in a DummyVecEnv"
            )
        self._reset_options()

    # ------------------------------------------------------------------ helpers
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
            self._end_episodes(ended, done, new_ep, terminal)
        self.skipped_matches += int(fin.size - ended.size)
        self._carry[fin] = 0.0
        self.game.restart(fin)
        self._draw_seats(fin)

    def _end_episodes(self, idx: np.ndarray, done, new_ep, terminal) -> None:
        """Mark the games ``idx`` done, keeping the learner's view of them as terminal."""
        obs = self._encode(idx, self._seat[idx])
        for j, i in enumerate(idx):
            terminal[int(i)] = obs[j]
        done[idx] = True
        new_ep[idx] = True

    def _check_steppable(self) -> None:
        """A step needs a reset, and a new one after an opponent failed mid-step."""
        self._failure.check()
        self._require_reset("step(): no game waits on the learner yet")

    def _require_reset(self, what: str) -> None:
        """Before ``reset`` the constructor's games are not the learner's: refuse to show them."""
        if not self._started:
            raise RuntimeError(f"call reset() before {what}")

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
            acts = opponent_actions(self.opponent, obs, mask, "the opponent", g.state, wait)
            bad = np.flatnonzero(~mask[np.arange(wait.size), acts])
            if bad.size:
                j = int(bad[0])
                raise IllegalActionError(
                    illegal_message(
                        f"the opponent in env {int(wait[j])} (seat {int(seats[j])})",
                        g.state,
                        int(wait[j]),
                        int(acts[j]),
                    )
                )
            full = np.full(g.batch_size, -1, dtype=np.int64)
            full[wait] = acts
            active = np.zeros(g.batch_size, dtype=bool)
            active[wait] = True
            out = g.step(full, active)
            self._credit(out, rew, new_ep, done, terminal)

    def _learner_message(self, i: int, action: int) -> str:
        return illegal_message(
            f"the learner in env {i} (seat {int(self._seat[i])})", self.game.state, i, action
        )

    # ------------------------------------------------------------------ VecEnv API
    def reset(self):
        seed = self._seeds[0]
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        else:
            seed = int(self._rng.integers(2**63))
        self._reset_seeds()
        self._reset_options()
        self._started = False
        self._failure.clear()
        if callable(getattr(self.opponent, "reseed", None)):
            self.opponent.reseed(int(self._rng.integers(2**63)))
        self.game.reset(int(seed))
        self._draw_seats(self._rows)
        self._carry[:] = 0.0
        self._ep_ret[:] = 0.0
        self._ep_len[:] = 0
        self._actions = None
        b = self.num_envs
        new_ep = np.ones(b, dtype=bool)
        with self._failure.watch("reset()"):
            self._play_opponents(np.zeros(b), new_ep, np.zeros(b, bool), {})
        self.reset_infos = [{} for _ in range(b)]
        self._started = True
        return self._encode(self._rows, self._seat)

    def step_async(self, actions: np.ndarray) -> None:
        self._check_steppable()
        if self._actions is not None:
            raise RuntimeError(
                "step_async(actions) was called twice: call step_wait() after each step_async()"
            )
        self._actions = as_actions(actions, self.num_envs, "actions")

    def step_wait(self):
        self._check_steppable()
        if self._actions is None:
            raise RuntimeError("step_wait() needs the actions of step_async(actions) first")
        g = self.game
        acts, self._actions = self._actions, None
        b = self.num_envs
        legal = g.mask[self._rows, acts]
        bad = np.flatnonzero(~legal)
        if bad.size and self.illegal_action == "raise":
            raise IllegalActionError(self._learner_message(int(bad[0]), int(acts[bad[0]])))
        rew = self._carry.copy()
        self._carry[:] = 0.0
        new_ep = np.zeros(b, dtype=bool)
        done = np.zeros(b, dtype=bool)
        terminal: dict[int, np.ndarray] = {}
        infos: list[dict[str, Any]] = [{} for _ in range(b)]
        if bad.size:
            for i in bad:
                msg = self._learner_message(int(i), int(acts[i]))
                warn_illegal(self, msg)
                infos[i] = illegal_info(g.state, int(i), int(acts[i]), msg)
            rew[bad] += self.illegal_reward
            self._end_episodes(bad, done, new_ep, terminal)
            g.restart(bad)
            self._draw_seats(bad)
        out = g.step(np.where(legal, acts, -1), legal)
        self._credit(out, rew, new_ep, done, terminal)
        with self._failure.watch("step()"):
            self._play_opponents(rew, new_ep, done, terminal)
        self._ep_ret += rew
        self._ep_len += 1
        now = time.time()
        for i in np.flatnonzero(done):
            infos[i].update(
                {
                    "terminal_observation": terminal[int(i)],
                    "TimeLimit.truncated": False,
                    "episode": {
                        "r": float(self._ep_ret[i]),
                        "l": int(self._ep_len[i]),
                        "t": round(now - self._t_start, 6),
                    },
                }
            )
            self._ep_ret[i] = 0.0
            self._ep_len[i] = 0
        obs = self._encode(self._rows, self._seat)
        return obs, rew.astype(np.float32), done, infos

    def action_masks(self) -> np.ndarray:
        """bool ``[B, 86]``: the learner's legal actions in every game (after ``reset``)."""
        self._require_reset("action_masks()")
        return self.game.mask.copy()

    def close(self) -> None:
        pass

    def _index(self, index, name: str = "index") -> int:
        """``index`` as an int: a game 0..B-1 (a Python or numpy integer, not a bool)."""
        if (
            isinstance(index, (bool, np.bool_))
            or not isinstance(index, (int, np.integer))
            or not 0 <= index < self.num_envs
        ):
            raise ValueError(f"{name} must be a game 0-{self.num_envs - 1}, got {index!r}")
        return int(index)

    def _get_indices(self, indices) -> list[int]:
        """SB3's ``indices`` (``None``: every game; one game; or a sequence of games), checked."""
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, (int, np.integer)) and not isinstance(indices, (bool, np.bool_)):
            return [self._index(indices, "indices")]
        if isinstance(indices, (str, bytes)) or not hasattr(indices, "__iter__"):
            raise TypeError(
                f"indices must be None, a game 0-{self.num_envs - 1} or a sequence of games, "
                f"got {indices!r}"
            )
        return [self._index(i, "indices") for i in indices]

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        idx = self._get_indices(indices)
        value = getattr(self, attr_name)
        return [value for _ in idx]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        self._get_indices(indices)
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs):
        idx = self._get_indices(indices)
        if method_name == "action_masks":
            self._require_reset("action_masks()")
            return [self.game.mask[i].copy() for i in idx]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in idx]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> list[np.ndarray]:
        """SB3's ``get_images``: one uint8 ``[H, W, 3]`` picture per game, seen from the learner's
        seat (:func:`zhuoji_env.picture.draw_game`, the single-agent environment's frame)."""
        self._require_reset("rendering")
        return [self._picture(i) for i in range(self.num_envs)]

    def _picture(self, i: int) -> np.ndarray:
        """Game ``i`` as a picture from its learner seat."""
        return draw_game(self.game, i, viewer=int(self._seat[i]))

    def render(self, mode: str | None = None, index: int | None = None) -> str | np.ndarray | None:
        """The table seen from the learner's seat: of game ``index`` (default 0) as text
        (``"ansi"``: returned; ``"human"``: printed), or as a picture (``"rgb_array"``): game
        ``index``'s, or by default every game's tiled into one (SB3's ``VecEnv.render``, the
        frame ``VecVideoRecorder`` records)."""
        if index is not None:
            index = self._index(index)
        mode = mode or self.render_mode
        if mode not in _RENDER_MODES:
            raise ValueError(f"mode must be None, 'ansi', 'human' or 'rgb_array', got {mode!r}")
        self._require_reset("rendering")
        if mode == "rgb_array":
            return tile_images(self.get_images()) if index is None else self._picture(index)
        index = 0 if index is None else index
        g = self.game
        text = render_table(
            self.rules,
            g.state,
            int(index),
            scores=g.scores[index],
            hand_no=int(g.hand_no[index]),
            viewer=int(self._seat[index]),
        )
        if mode == "human":
            print(text)
            return None
        return text
