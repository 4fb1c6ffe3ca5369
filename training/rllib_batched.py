"""RLlib's view of zhuoji games: the single-game env and the batched env runner.

``ZhuojiMultiAgentEnv`` is ``zhuoji_env.env()`` behind RLlib's ``PettingZooEnv``: what RLlib's
own ``MultiAgentEnvRunner`` steps, one decision of one game at a time, through its per-step
machinery (an episode object and two connector pipelines per game and step).

``BatchedEnvRunner`` (``training.rllib_ppo --runner batched``, the default) is an RLlib env
runner that plays its ``num_envs_per_env_runner`` games as one
:class:`~zhuoji_env.engine.game.BatchGame`: each step is one engine call for all of them, one
observation encoding, and one forward pass per RLlib module present at the table (one, or a few
with a league), sampled with the module's own action distribution as RLlib's ``GetActions``
connector does. It hands back the episodes RLlib's runner would: one ``MultiAgentEpisode`` per
match (chunks of it at each ``sample()`` boundary, ids kept across chunks), holding one
``SingleAgentEpisode`` per seat with

- observations ``{"observation": float32 [OBS_SIZE], "action_mask": int8 [86]}``: the seat's
  observation at each of its decisions, then its observation at the end of the match (the mask
  all zero) or, in a chunk cut before the end, its latest observation, which the next chunk
  starts from;
- the actions, and as extra model outputs ``action_dist_inputs`` (the masked logits),
  ``action_logp`` and ``weights_seq_no``;
- rewards as ``PettingZooEnv`` delivers them: a hand's settlement (times ``reward_scale``)
  goes to the seat's last decision before it, arriving with the seat's next observation (in
  the next hand of a longer match, or at the match's end); a seat that had no decision yet in
  the match gets nothing for it (RLlib keeps such a reward out of every transition too);
- ``terminated`` at the end of the match (an episode is a match, as in the AEC environment);
  seats that never decided have no episode.

``tests/test_rllib_batched.py`` holds these equal to RLlib's own runner over
``ZhuojiMultiAgentEnv``, seed for seed and action for action. What differs, none of which
PPO's learner reads: no ``embeddings`` column (RLlib's runner stores the module's hidden layer
for every decision), ``infos`` are empty, and continuation chunks carry no lookback buffer.
The episodes are numpy'ized (RLlib's ``to_numpy()`` form), so the learner's connectors batch
them by array instead of item by item.

Game ``i`` of env runner ``w`` plays its first match from seed ``seed + w * (N + 1) + i``
(``N`` games a runner: RLlib has set the runner's own seed to ``seed + w``, and the runner adds
``w * N + i``, so no two runners share a seed; RLlib's own runner seeds its games ``seed + w + i``,
the same for the local runner and overlapping between remote ones), then every match from a
seed drawn from that one's stream, as ``zhuoji_env.env()`` does after a seeded reset.

A failure inside ``sample()`` is raised as :class:`RunnerFailure` naming the runner (its index,
node and process) and the original error, so the trainer can stop with one clear line.

``BatchedTrainBatch`` is the learner's side of the same idea: PPO's whole learner connector
pipeline (RLlib's default pieces, ``AddOneTsToEpisodesAndTruncate`` and
``GeneralAdvantageEstimation``) for these numpy'ized episodes, by array instead of item by item.
``tests/test_rllib_batched.py`` holds its batch equal to that pipeline's. ``LeanPPOLearner``
is RLlib's torch PPO learner with three of its per-step costs cut (an unused action
distribution in the loss, its non-finite gradient checks and its per-epoch shuffle), the update
unchanged.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import defaultdict

import numpy as np
import torch
import tree
from ray.rllib.algorithms.ppo.ppo import (
    LEARNER_RESULTS_KL_KEY,
    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,
    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY,
)
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.metrics import (
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    WEIGHTS_SEQ_NO,
)
from ray.rllib.utils.postprocessing.value_predictions import compute_value_targets
from ray.rllib.utils.torch_utils import explained_variance

import zhuoji_env
from zhuoji_env.engine import core
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.engine.game import BatchGame, first_deals
from zhuoji_env.observation import encode
from zhuoji_env.rules import Rules

ENV_CONFIG_KEYS = ("rules", "reward_scale")
TIMER_KEYS = ("batched_env_s", "batched_inference_s", "batched_episodes_s", "batched_runner_s")
"""Seconds of ``sample()``: in the engine and observation encoding, in the forward passes and
sampling, in the per-decision bookkeeping and episode building, and in all (summed over
runners and ``sample()`` calls in an iteration's results, under ``env_runners``)."""


class ZhuojiMultiAgentEnv(PettingZooEnv):
    """``zhuoji_env.env()`` as an RLlib multi-agent env: RLlib's ``PettingZooEnv`` with the
    agents in seat order (the wrapper takes them from a set) and rewards scaled.

    ``config``: ``rules`` (preset name, rules object or record) and ``reward_scale``."""

    def __init__(self, config: dict | None = None):
        config = dict(config or {})
        unknown = set(config) - set(ENV_CONFIG_KEYS)
        if unknown:
            raise ValueError(
                f"unknown env_config keys {sorted(unknown)}: allowed 'rules', 'reward_scale'"
            )
        self.reward_scale = float(config.get("reward_scale", 1.0))
        super().__init__(zhuoji_env.env(rules=config.get("rules", "guiyang")))
        self.agents = sorted(self._agent_ids)
        self.possible_agents = list(self.agents)

    def step(self, action):
        obs, rew, terminated, truncated, info = super().step(action)
        rew = {agent: r * self.reward_scale for agent, r in rew.items()}
        return obs, rew, terminated, truncated, info


class RunnerFailure(RuntimeError):
    """An env runner's ``sample()`` failed; the message names the runner and the error."""


class _Seat:
    """One seat's part of the current chunk of its match (what its SingleAgentEpisode gets)."""

    __slots__ = (
        "obs",
        "masks",
        "env_ts",
        "acts",
        "logps",
        "dists",
        "seqs",
        "rews",
        "owed",
        "t_started",
        "sa_id",
    )

    def __init__(self):
        self.obs: list = []  # observation rows received in this chunk (the first may be carried)
        self.masks: list = []
        self.env_ts: list[int] = []  # the match's decision count when each arrived
        self.acts: list[int] = []  # one per observation acted on (the last may be pending)
        self.logps: list[float] = []
        self.dists: list = []
        self.seqs: list[int] = []
        self.rews: list[float] = []  # one per finished transition (len(obs) - 1)
        self.owed = 0.0  # reward for the last action, paid with the next observation
        self.t_started = 0  # the seat's decisions in earlier chunks of the match
        self.sa_id = uuid.uuid4().hex

    def observe(self, obs, mask, env_t: int) -> bool:
        """A new observation for the seat; True when it is the seat's first of the match."""
        first = not self.obs and not self.t_started
        if self.obs:  # it finishes the transition of the seat's last action
            self.rews.append(self.owed)
        self.owed = 0.0  # a reward before the seat's first decision is nobody's (RLlib's too)
        self.obs.append(obs)
        self.masks.append(mask)
        self.env_ts.append(env_t)
        return first

    def act(self, action: int, logp: float, dist, seq: int) -> None:
        self.acts.append(action)
        self.logps.append(logp)
        self.dists.append(dist)
        self.seqs.append(seq)

    def episode(self, agent_id, module_id, ma_id, spaces, terminated: bool):
        """The seat's SingleAgentEpisode of this chunk (None when it holds no transition)."""
        n = len(self.rews)
        if n == 0:
            return None
        obs_space, act_space = spaces
        sa = SingleAgentEpisode(
            id_=self.sa_id,
            agent_id=agent_id,
            module_id=module_id,
            multi_agent_episode_id=ma_id,
            observations=InfiniteLookbackBuffer(
                {"observation": np.stack(self.obs), "action_mask": np.stack(self.masks)}
            ),
            observation_space=obs_space,
            infos=[{} for _ in range(n + 1)],
            actions=InfiniteLookbackBuffer(np.asarray(self.acts[:n], dtype=np.int32)),
            action_space=act_space,
            rewards=InfiniteLookbackBuffer(np.asarray(self.rews, dtype=np.float64)),
            extra_model_outputs={
                Columns.ACTION_DIST_INPUTS: InfiniteLookbackBuffer(np.stack(self.dists[:n])),
                Columns.ACTION_LOGP: InfiniteLookbackBuffer(
                    np.asarray(self.logps[:n], dtype=np.float32)
                ),
                WEIGHTS_SEQ_NO: InfiniteLookbackBuffer(np.asarray(self.seqs[:n], np.int64)),
            },
            terminated=terminated,
            t_started=self.t_started,
            len_lookback_buffer=0,
        )
        return sa

    def carry(self) -> None:
        """Start the next chunk from the seat's latest observation (and its action, if taken)."""
        n = len(self.rews)
        if n == 0:
            return
        self.t_started += n
        del self.obs[:n], self.masks[:n], self.env_ts[:n]
        del self.acts[:n], self.logps[:n], self.dists[:n], self.seqs[:n]
        self.rews = []


class _Match:
    """The current chunk of one game's match."""

    __slots__ = ("id_", "modules", "seats", "env_t", "env_t_started", "start_time")

    def __init__(self, id_: str, modules: list[str], num_players: int, env_t: int = 0):
        self.id_ = id_
        self.modules = modules
        self.seats = [_Seat() for _ in range(num_players)]
        self.env_t = env_t  # decisions of the match so far
        self.env_t_started = env_t  # ... before this chunk
        self.start_time = time.perf_counter()


class BatchedEnvRunner(MultiAgentEnvRunner):
    """An RLlib env runner that steps its games as one batch; see the module documentation.

    It is RLlib's ``MultiAgentEnvRunner`` (modules, weight sync, state, metrics, callbacks at
    ``sample()``'s start and end) with its own ``_sample``: the one-game env that RLlib builds is
    kept for the spaces and the connector pipelines' state only. RLlib's per-episode callbacks
    and any custom env-to-module or module-to-env connector do not run."""

    def make_env(self):
        games = self.config.num_envs_per_env_runner
        env_config = dict(self.config.env_config)
        unknown = set(env_config) - set(ENV_CONFIG_KEYS)
        if unknown:
            raise ValueError(
                f"unknown env_config keys {sorted(unknown)}: allowed 'rules', 'reward_scale'"
            )
        env_cls = self.config.env
        if not (isinstance(env_cls, type) and issubclass(env_cls, ZhuojiMultiAgentEnv)):
            raise ValueError(
                f"BatchedEnvRunner plays zhuoji games only: config.env must be "
                f"ZhuojiMultiAgentEnv, not {env_cls!r}"
            )
        # RLlib's own env, one game of it: the spaces, and what the connectors are built on.
        self.config.num_envs_per_env_runner = 1
        try:
            super().make_env()
        finally:
            self.config.num_envs_per_env_runner = games
        self.num_envs = games
        self.rules = Rules.make(env_config.get("rules", "guiyang"))
        self.reward_scale = float(env_config.get("reward_scale", 1.0))
        self.num_players = self.rules.num_players
        self.agent_ids = [f"player_{s}" for s in range(self.num_players)]
        single = self.env.envs[0].unwrapped
        self._spaces = {
            a: (single.get_observation_space(a), single.get_action_space(a)) for a in self.agent_ids
        }
        self.game = BatchGame(self.rules, games, seed=0, auto_reset=False)
        self._rows = np.arange(games)
        self._matches: list[_Match] | None = None
        self._seed_rngs: list[np.random.Generator] | None = None
        self._needs_initial_reset = True

    # ------------------------------------------------------------------ matches
    def _first_seeds(self) -> list[int | None]:
        if self._seed is None:
            return [None] * self.num_envs
        return [
            self._seed + (self.worker_index or 0) * self.num_envs + i for i in range(self.num_envs)
        ]

    def _reset_all(self, seeded: bool) -> None:
        """New matches in every game: from the first seeds when ``seeded``, else from each
        game's stream of match seeds (as an unseeded ``reset()`` of RLlib's envs)."""
        self._ongoing_episodes_for_metrics.clear()  # chunks of matches that end here unplayed
        if seeded or self._seed_rngs is None:
            seeds = self._first_seeds() if seeded else [None] * self.num_envs
            self._seed_rngs = [np.random.default_rng(s) for s in seeds]
            first = [s if s is not None else self._draw_seed(i) for i, s in enumerate(seeds)]
        else:
            first = [self._draw_seed(i) for i in range(self.num_envs)]
        self._deal(self._rows, first)
        self._observe_all()

    def _draw_seed(self, i: int) -> int:
        return int(self._seed_rngs[i].integers(2**63))

    def _deal(self, idx: np.ndarray, seeds: list[int]) -> None:
        """Deal new matches into games ``idx`` from ``seeds``, as ``zhuoji_env.env().reset(seed)``
        deals them (the wall and first dealer from the stream ``(seed, 0)``, later hands too)."""
        g = self.game
        rngs = [np.random.default_rng([int(s), 0]) for s in seeds]
        walls, dealers = first_deals(rngs, self.num_players)
        for i, rng in zip(idx, rngs, strict=True):
            g._rngs[int(i)] = rng
        g.scores[idx] = 0
        g.hand_no[idx] = 0
        g.state.put(idx, core.deal(self.rules, walls, dealers, 0))
        if self._matches is None:
            self._matches = [None] * self.num_envs
        mapping = self.config.policy_mapping_fn
        for i in idx:
            shell = MultiAgentEpisode(agent_to_module_mapping_fn=mapping)
            modules = [shell.module_for(a) for a in self.agent_ids]
            self._matches[int(i)] = _Match(shell.id_, modules, self.num_players)

    def _observe_all(self) -> None:
        """Encode every game's actor and hand each its observation."""
        g = self.game
        self._seats = g.actor.astype(np.int64)
        self._obs = encode(
            g.state, self._rows, self._seats, g.scores, g.hand_no, self.rules.hands_per_game
        )
        self._masks = g.mask.astype(np.int8)
        for i, m in enumerate(self._matches):
            m.seats[self._seats[i]].observe(self._obs[i], self._masks[i], m.env_t)

    # ------------------------------------------------------------------ acting
    def _act(self, explore: bool):
        """Actions, log-probabilities and distribution inputs of every game's actor: one
        forward pass per module at the table."""
        n = self.num_envs
        mod_of = np.array([self._matches[i].modules[self._seats[i]] for i in range(n)])
        actions = np.empty(n, np.int64)
        logps = np.empty(n, np.float32)
        dists = np.empty((n, NUM_ACTIONS), np.float32)
        obs = torch.from_numpy(self._obs)
        masks = torch.from_numpy(self._masks)
        for module_id in np.unique(mod_of):
            rows = None if (mod_of == module_id).all() else np.flatnonzero(mod_of == module_id)
            batch = {
                Columns.OBS: {
                    "observation": obs if rows is None else obs[rows],
                    "action_mask": masks if rows is None else masks[rows],
                }
            }
            if self._device is not None and str(self._device) != "cpu":
                batch = {
                    Columns.OBS: {k: v.to(self._device) for k, v in batch[Columns.OBS].items()}
                }
            module = self.module[str(module_id)]
            with torch.no_grad():
                if explore:
                    out = module.forward_exploration(batch, t=self._global_t)
                    dist_cls = module.get_exploration_action_dist_cls()
                else:
                    out = module.forward_inference(batch)
                    dist_cls = module.get_inference_action_dist_cls()
                logits = out[Columns.ACTION_DIST_INPUTS]
                dist = dist_cls.from_logits(logits)
                if not explore:
                    dist = dist.to_deterministic()
                a = dist.sample()
                lp = dist.logp(a)
            sel = slice(None) if rows is None else rows
            actions[sel] = a.cpu().numpy()
            logps[sel] = lp.cpu().numpy()
            dists[sel] = logits.cpu().numpy()
        return actions, logps, dists

    # ------------------------------------------------------------------ sampling
    def _sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list[MultiAgentEpisode]:
        try:
            return self._sample_batched(
                num_timesteps=num_timesteps,
                num_episodes=num_episodes,
                explore=explore,
                random_actions=random_actions,
                force_reset=force_reset,
            )
        except Exception as exc:
            raise RunnerFailure(
                f"{self.describe()} failed in sample(): {type(exc).__name__}: {exc}"
            ) from exc

    def apply(self, func, *args, **kwargs):
        """RLlib's remote call (``FaultAwareApply.apply``), except that a :class:`RunnerFailure`
        reaches the caller as the call's error, message and all: RLlib's own ``apply`` ends the
        actor on any error, and the driver then learns only that the actor died."""
        failure = None

        def call(runner, *a, **k):
            nonlocal failure
            try:
                return func(runner, *a, **k)
            except RunnerFailure as exc:
                failure = exc
                return None

        out = super().apply(call, *args, **kwargs)
        if failure is not None:
            raise failure
        return out

    def describe(self) -> str:
        """``env runner K (node N, pid P)``: which runner this is."""
        import ray

        node = "-"
        if ray.is_initialized():
            node = ray.get_runtime_context().get_node_id()[:12]
        return f"env runner {self.worker_index or 0} (node {node}, pid {os.getpid()})"

    def _sample_batched(self, *, num_timesteps, num_episodes, explore, random_actions, force_reset):
        if random_actions:
            raise ValueError("BatchedEnvRunner samples from its modules only (random_actions)")
        clock = time.perf_counter
        timers = dict.fromkeys(TIMER_KEYS, 0.0)
        start = t0 = clock()
        if force_reset or num_episodes is not None or self._needs_initial_reset:
            self._reset_all(seeded=self._needs_initial_reset or num_episodes is not None)
            self._needs_initial_reset = num_episodes is not None
        timers["batched_env_s"] += clock() - t0
        done: list[MultiAgentEpisode] = []
        counts = _Counts()
        env_steps = 0
        n = self.num_envs
        lifetime = self.num_env_steps_sampled_lifetime // (self.config.num_env_runners or 1)
        hpg = self.rules.hands_per_game
        while (len(done) < num_episodes) if num_timesteps is None else (env_steps < num_timesteps):
            self._global_t = (lifetime + env_steps) * (self.config.num_env_runners or 1)
            t0 = clock()
            actions, logps, dists = self._act(explore)
            t1 = clock()
            seq = self._weights_seq_no
            for i in range(n):
                m = self._matches[i]
                m.seats[self._seats[i]].act(int(actions[i]), float(logps[i]), dists[i], seq)
                m.env_t += 1
            t2 = clock()
            g = self.game
            out = g.step(actions)
            env_steps += n
            ended = np.flatnonzero(out.match_over)
            term_obs = None
            if ended.size:
                k = self.num_players
                term_obs = encode(
                    g.state,
                    np.repeat(ended, k),
                    np.tile(np.arange(k), ended.size),
                    g.scores,
                    g.hand_no,
                    hpg,
                ).reshape(ended.size, k, -1)
            t3 = clock()
            for i in np.flatnonzero(out.hand_over):
                seats = self._matches[i].seats
                for s in range(self.num_players):
                    if seats[s].obs:  # a seat with no decision yet in the match gets nothing
                        seats[s].owed += float(out.rewards[i, s]) * self.reward_scale
            zero_mask = np.zeros(NUM_ACTIONS, np.int8)
            for j, i in enumerate(ended):
                m = self._matches[i]
                for s, seat in enumerate(m.seats):
                    if seat.obs:  # a seat never asked in the match has no episode
                        seat.observe(term_obs[j, s], zero_mask, m.env_t)
                counts.note_terminal(m, self.agent_ids)
                done.append(self._chunk(m, terminated=True))
            t4 = clock()
            if ended.size:
                self._deal(ended, [self._draw_seed(int(i)) for i in ended])
            g_seats = g.actor.astype(np.int64)
            self._seats = g_seats
            self._obs = encode(g.state, self._rows, g_seats, g.scores, g.hand_no, hpg)
            self._masks = g.mask.astype(np.int8)
            t5 = clock()
            cont = np.ones(n, bool)
            cont[ended] = False
            for i in np.flatnonzero(cont):
                m = self._matches[i]
                s = g_seats[i]
                m.seats[s].observe(self._obs[i], self._masks[i], m.env_t)
                counts.note_obs(m, s, self.agent_ids[s])
            for i in ended:  # the new matches' first observations (a reset: not counted)
                m = self._matches[i]
                m.seats[g_seats[i]].observe(self._obs[i], self._masks[i], 0)
            t6 = clock()
            timers["batched_inference_s"] += t1 - t0
            timers["batched_env_s"] += (t3 - t2) + (t5 - t4)
            timers["batched_episodes_s"] += (t2 - t1) + (t4 - t3) + (t6 - t5)
        t0 = clock()
        chunks = []
        if num_timesteps is None:
            done = done[:num_episodes]  # as many as asked, as RLlib's runner returns
        else:
            for m in self._matches:
                if m.env_t > m.env_t_started:
                    chunks.append(self._chunk(m, terminated=False))
                    self._ongoing_episodes_for_metrics[m.id_].append(chunks[-1])
        timers["batched_episodes_s"] += clock() - t0
        timers["batched_runner_s"] = clock() - start
        self._done_episodes_for_metrics.extend(done)
        self._log_counts(env_steps, len(done), counts, timers)
        return done + chunks

    def _chunk(self, m: _Match, terminated: bool) -> MultiAgentEpisode:
        """The match's current chunk as a MultiAgentEpisode; an ongoing match continues in a
        new chunk from every seat's latest observation."""
        ma = MultiAgentEpisode(
            id_=m.id_,
            agent_module_ids=dict(zip(self.agent_ids, m.modules, strict=True)),
            agent_to_module_mapping_fn=self.config.policy_mapping_fn,
            observation_space={a: sp[0] for a, sp in self._spaces.items()},
            action_space={a: sp[1] for a, sp in self._spaces.items()},
        )
        ma.env_t_started = m.env_t_started
        ma.env_t = m.env_t
        ma.is_terminated = terminated
        order = sorted(range(self.num_players), key=lambda s: m.seats[s].env_ts[:1] or [m.env_t])
        for s in order:  # RLlib lists a match's agents as they first observe (in a first chunk)
            seat = m.seats[s]
            aid = self.agent_ids[s]
            sa = seat.episode(aid, m.modules[s], m.id_, self._spaces[aid], terminated)
            if sa is None:
                continue
            ma.agent_episodes[aid] = sa
            index = ma.env_t_to_agent_t[aid]
            index.data = [MultiAgentEpisode.SKIP_ENV_TS_TAG] * (m.env_t - m.env_t_started + 1)
            for j, et in enumerate(seat.env_ts):
                if et >= m.env_t_started:  # a carried first observation is the last chunk's
                    index.data[et - m.env_t_started] = seat.t_started + j
            ma.agent_t_started[aid] = seat.t_started
        now = time.perf_counter()
        ma._start_time, ma._last_step_time = m.start_time, now
        if not terminated:
            for seat in m.seats:
                seat.carry()
            m.env_t_started = m.env_t
            m.start_time = now
        return ma

    def _log_counts(self, env_steps: int, episodes: int, counts: _Counts, timers) -> None:
        log = self.metrics.log_value
        log(NUM_ENV_STEPS_SAMPLED, env_steps, reduce="sum")
        log(NUM_ENV_STEPS_SAMPLED_LIFETIME, env_steps, reduce="lifetime_sum", with_throughput=True)
        if env_steps:
            self._log_env_steps(metric=self._metrics_num_env_steps_sampled, num_steps=env_steps)
        log(NUM_EPISODES, episodes, reduce="sum")
        log(NUM_EPISODES_LIFETIME, episodes, reduce="lifetime_sum")
        for aid, k in counts.agent.items():
            log((NUM_AGENT_STEPS_SAMPLED, aid), k, reduce="sum")
            log((NUM_AGENT_STEPS_SAMPLED_LIFETIME, aid), k, reduce="lifetime_sum")
        for mid, k in counts.module_obs.items():
            log((NUM_MODULE_STEPS_SAMPLED, mid), k, reduce="sum")
            log((NUM_MODULE_STEPS_SAMPLED_LIFETIME, mid), k, reduce="lifetime_sum")
        for key, seconds in timers.items():
            log(key, seconds, reduce="sum")


class _Counts:
    """Agent and module steps of a ``sample()``, counted as RLlib's runner counts them (every
    observation an agent receives after a step: one a decision, every seat at a match's end)."""

    def __init__(self):
        self.agent: dict[str, int] = defaultdict(int)
        self.module_obs: dict[str, int] = defaultdict(int)

    def note_obs(self, m: _Match, seat: int, aid: str) -> None:
        self.agent[aid] += 1
        self.module_obs[m.modules[seat]] += 1

    def note_terminal(self, m: _Match, agent_ids: list[str]) -> None:
        for s, aid in enumerate(agent_ids):
            self.agent[aid] += 1
            self.module_obs[m.modules[s]] += 1


MODEL_OUTPUTS = (Columns.ACTION_LOGP, Columns.ACTION_DIST_INPUTS, WEIGHTS_SEQ_NO)
"""The runner's model outputs that :class:`BatchedTrainBatch` reads and passes to the batch."""


class BatchedTrainBatch(ConnectorV2):
    """PPO's learner connector pipeline for :class:`BatchedEnvRunner`'s episodes, by array.

    RLlib's default pipeline builds the train batch item by item: it appends a phantom time step
    to every seat's episode (the bootstrap observation, masked out of the loss), batches each
    column from per-step lists, runs one value pass and computes GAE (``compute_value_targets``)
    over the whole batch, then standardises the advantages over every row, phantom ones too.
    This piece does the same with one concatenation per column: the same value pass over the
    same rows (ordered steps first, bootstrap rows after, so that the train batch's observations
    are a view: the values can differ from RLlib's in the last bit), RLlib's own
    ``compute_value_targets`` on the same arrays, the same standardisation; then it keeps the
    real time steps only, so the batch holds exactly the transitions sampled (no
    ``loss_mask``: PPO's loss is then the plain mean, which equals the masked mean over the same
    rows). So the SGD steps see real rows only (32 an update of 8,192 decisions in minibatches
    of 1,024 for 4 epochs, where RLlib's ~9% of masked rows make about 35), and the learner's
    counts of module steps trained and its value function's explained variance leave the
    phantom rows out.

    Only the modules in ``modules_to_train`` get rows (RLlib drops the others' after the
    pipeline). Episodes must be numpy'ized, as the batched runner hands them over (a lookback
    buffer, as RLlib's sharding among several learners gives split episodes, is skipped);
    episodes with list buffers, or a stateful module, are refused. Tensors go to the module's
    device."""

    def __init__(
        self,
        input_observation_space=None,
        input_action_space=None,
        *,
        gamma: float,
        lambda_: float,
        modules_to_train,
        **kwargs,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.gamma = float(gamma)
        self.lambda_ = float(lambda_)
        self.modules_to_train = frozenset(modules_to_train)

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        by_module: dict[str, list[SingleAgentEpisode]] = defaultdict(list)
        for sa in self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False):
            if sa.module_id in self.modules_to_train and len(sa) > 0:
                _check_numpy_episode(sa)
                by_module[sa.module_id].append(sa)
        for module_id, eps in by_module.items():
            module = rl_module[module_id]
            if module.is_stateful():
                raise ValueError(
                    f"BatchedTrainBatch batches single time steps; module {module_id!r} is "
                    f"stateful: use RLlib's default learner connectors"
                )
            batch[module_id] = self._module_batch(module, eps)
        return batch

    def _module_batch(self, module, eps: list[SingleAgentEpisode]) -> dict:
        device = next(module.parameters()).device

        def column(buffers) -> np.ndarray:
            return np.concatenate([_own_rows(b) for b in buffers])

        lens = np.array([len(e) for e in eps])
        # The observations: every episode's steps, then every episode's bootstrap one (the value
        # pass needs both, the train batch the first part only, as a view; RLlib interleaves
        # them, so the values may differ from its pass in the last bit).
        own = [_own_rows(e.observations) for e in eps]
        obs = {
            key: np.concatenate([o[key][:-1] for o in own] + [o[key][-1:] for o in own])
            for key in own[0]
        }
        steps = int(lens.sum())
        with torch.no_grad():
            values = module.compute_values(
                {Columns.OBS: {k: torch.from_numpy(v).to(device) for k, v in obs.items()}}
            )
        values = values.cpu().numpy()
        # Row r of RLlib's extended batch: an episode's step, or its phantom (bootstrap) row.
        phantom = np.zeros(values.size, bool)
        phantom[np.cumsum(lens + 1) - 1] = True
        real = ~phantom
        values[real], values[phantom] = values[:steps].copy(), values[steps:].copy()
        last = np.flatnonzero(phantom) - 1  # each episode's last real step
        terminated = np.array([e.is_terminated for e in eps])
        terminateds = np.zeros(phantom.size, bool)
        truncateds = np.zeros(phantom.size, bool)
        terminateds[last] = terminated
        truncateds[last] = ~terminated  # a cut chunk, or a truncated episode: bootstrap
        rewards = np.zeros(phantom.size, np.float64)
        rewards[real] = column([e.rewards for e in eps])
        targets = compute_value_targets(
            values=values,
            rewards=rewards,
            terminateds=terminateds,
            truncateds=truncateds,
            gamma=self.gamma,
            lambda_=self.lambda_,
        )
        advantages = targets - values
        advantages = (advantages - advantages.mean()) / max(1e-4, advantages.std())
        out = {
            Columns.OBS: {k: v[:steps] for k, v in obs.items()},
            Postprocessing.ADVANTAGES: advantages[real],
            Postprocessing.VALUE_TARGETS: targets[real],
            Columns.ACTIONS: column([e.actions for e in eps]),
        }
        for key in MODEL_OUTPUTS:
            out[key] = column([e.extra_model_outputs[key] for e in eps])
        return tree.map_structure(lambda a: torch.from_numpy(a).to(device), out)


def _own_rows(buffer: InfiniteLookbackBuffer):
    """A numpy'ized buffer's rows of its own episode (past any lookback)."""
    return tree.map_structure(lambda a: a[buffer.lookback :], buffer.data)


def _check_numpy_episode(sa: SingleAgentEpisode) -> None:
    missing = set(MODEL_OUTPUTS) - set(sa.extra_model_outputs)
    if missing:
        raise ValueError(
            f"BatchedTrainBatch: episode {sa.id_} of {sa.agent_id!r} lacks the model outputs "
            f"{sorted(missing)} (BatchedEnvRunner stores them)"
        )
    buffers = [sa.observations, sa.actions, sa.rewards, *sa.extra_model_outputs.values()]
    if not all(b.finalized for b in buffers):
        raise ValueError(
            f"BatchedTrainBatch takes numpy'ized episodes (as BatchedEnvRunner builds them); "
            f"episode {sa.id_} of {sa.agent_id!r} holds lists: use RLlib's default learner "
            f"connectors for other env runners"
        )


class LeanPPOLearner(PPOTorchLearner):
    """RLlib's ``PPOTorchLearner`` with three of its per-step costs cut: the same loss, gradients
    and optimizer steps on the same minibatches.

    - The loss: RLlib builds the sampling policy's action distribution (a softmax over every
      row) for the KL term even when that term is off; here only when it is on.
    - Non-finite gradients: RLlib's ``apply_gradients`` checks every gradient tensor with
      ``isfinite(...).all()`` twice a step (a tenth of a minibatch step for this small
      network). Here one sum per tensor decides: a tensor whose sum is finite holds no NaN or
      infinity, so when every sum is finite the optimizer steps at once; otherwise (or with
      gradient scalers or learning-rate schedulers) RLlib's own method runs, with its zeroing
      of non-finite gradients.
    - The per-epoch shuffle: RLlib's ``SampleBatch.shuffle`` gathers every column with torch's
      advanced indexing; ``_TakeShuffledBatch`` draws the same permutation and gathers CPU
      columns with ``numpy.take``, about three times faster on this machine."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        """RLlib's PPO loss (``PPOTorchLearner.compute_loss_for_module``, the same terms and
        logged metrics) without the sampling policy's action distribution that it builds from
        ``action_dist_inputs`` for the KL term alone, when that term is off."""
        if config.use_kl_loss:
            return super().compute_loss_for_module(
                module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
            )
        module = self.module[module_id].unwrapped()
        if Columns.LOSS_MASK in batch:
            mask = batch[Columns.LOSS_MASK]
            num_valid = torch.sum(mask)

            def possibly_masked_mean(data_):
                return torch.sum(data_[mask]) / num_valid

        else:
            possibly_masked_mean = torch.mean
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        logp_ratio = torch.exp(dist.logp(batch[Columns.ACTIONS]) - batch[Columns.ACTION_LOGP])
        mean_kl_loss = torch.tensor(0.0, device=logp_ratio.device)
        curr_entropy = dist.entropy()
        mean_entropy = possibly_masked_mean(curr_entropy)
        advantages = batch[Postprocessing.ADVANTAGES]
        surrogate_loss = torch.min(
            advantages * logp_ratio,
            advantages * torch.clamp(logp_ratio, 1 - config.clip_param, 1 + config.clip_param),
        )
        if config.use_critic:
            value_fn_out = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
            vf_loss = torch.pow(value_fn_out - batch[Postprocessing.VALUE_TARGETS], 2.0)
            vf_loss_clipped = torch.clamp(vf_loss, 0, config.vf_clip_param)
            mean_vf_loss = possibly_masked_mean(vf_loss_clipped)
            mean_vf_unclipped_loss = possibly_masked_mean(vf_loss)
        else:
            z = torch.tensor(0.0, device=surrogate_loss.device)
            value_fn_out = mean_vf_unclipped_loss = vf_loss_clipped = mean_vf_loss = z
        entropy_coeff = self.entropy_coeff_schedulers_per_module[module_id].get_current_value()
        total_loss = possibly_masked_mean(
            -surrogate_loss + config.vf_loss_coeff * vf_loss_clipped - entropy_coeff * curr_entropy
        )
        self.metrics.log_dict(
            {
                POLICY_LOSS_KEY: -possibly_masked_mean(surrogate_loss),
                VF_LOSS_KEY: mean_vf_loss,
                LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY: mean_vf_unclipped_loss,
                LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY: explained_variance(
                    batch[Postprocessing.VALUE_TARGETS], value_fn_out
                ),
                ENTROPY_KEY: mean_entropy,
                LEARNER_RESULTS_KL_KEY: mean_kl_loss,
            },
            key=module_id,
            window=1,
        )
        return total_loss

    def apply_gradients(self, gradients_dict) -> None:
        if (
            self._grad_scalers is not None
            or self._lr_scheduler_classes is not None
            or not gradients_dict
            or not bool(
                torch.isfinite(torch.stack([g.sum() for g in gradients_dict.values()])).all()
            )
        ):
            return super().apply_gradients(gradients_dict)
        for pid, grad in gradients_dict.items():
            self._params[pid].grad = grad
        for module_id, optimizer_names in self._module_optimizers.items():
            for optimizer_name in optimizer_names:
                self.get_optimizer(module_id, optimizer_name).step()

    def _make_batch_if_necessary(self, training_data):
        batch = super()._make_batch_if_necessary(training_data)
        if not isinstance(batch, MultiAgentBatch):
            return batch
        batches = {
            mid: _TakeShuffledBatch(b) if _take_shuffles(b) else b
            for mid, b in batch.policy_batches.items()
        }
        return MultiAgentBatch(batches, env_steps=batch.env_steps())


def _take_shuffles(batch: SampleBatch) -> bool:
    """Whether ``_TakeShuffledBatch`` shuffles ``batch`` as RLlib would: rows without a
    time rank or infos, every column a CPU tensor."""
    if batch.get(SampleBatch.SEQ_LENS) is not None or Columns.INFOS in batch:
        return False
    leaves = tree.flatten(dict(batch))
    return all(isinstance(v, torch.Tensor) and v.device.type == "cpu" for v in leaves)


class _TakeShuffledBatch(SampleBatch):
    """A ``SampleBatch`` whose ``shuffle`` draws RLlib's permutation (``np.random.permutation``
    of the rows) and gathers each CPU column with ``numpy.take``."""

    def shuffle(self) -> SampleBatch:
        permutation = np.random.permutation(self.count)
        shuffled = tree.map_structure(
            lambda v: torch.from_numpy(np.take(v.numpy(), permutation, axis=0)), dict(self)
        )
        self.update(shuffled)
        self.intercepted_values = {}
        return self
