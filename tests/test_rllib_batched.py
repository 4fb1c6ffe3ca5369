"""The batched RLlib env runner (``training.rllib_batched``, ``training.rllib_ppo --runner``).

It must hand RLlib the episodes RLlib's own ``MultiAgentEnvRunner`` builds over
``ZhuojiMultiAgentEnv``: both runners are driven by the same deterministic policy from the same
seeds, and every seat's observations, masks, actions, log-probabilities, distribution inputs,
rewards and episode boundaries are compared, then PPO's learner connectors build the same train
batch from both. The policy is exact (integer logits), so a batch of 64 rows and a batch of one
row pick the same argmax. Needs the ``rllib`` extra (``make rllib``).
"""

from __future__ import annotations

import copy
import json
import sys

import numpy as np
import pytest

pytest.importorskip(
    "ray.rllib", reason="Ray RLlib is not installed (the 'rllib' extra: make rllib)"
)

import torch  # noqa: E402
import tree  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # noqa: E402
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner  # noqa: E402
from test_rllib import SMALL  # noqa: E402

from agents.rllib import NEG_INF, MaskedPolicyModule  # noqa: E402
from training import rllib_ppo  # noqa: E402
from training.rllib_batched import (  # noqa: E402
    BatchedEnvRunner,
    BatchedTrainBatch,
    LeanPPOLearner,
    RunnerFailure,
    _TakeShuffledBatch,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TWO_HANDS = json.dumps({"preset": "guiyang", "overrides": {"hands_per_game": 2}})


class ExactModule(MaskedPolicyModule):
    """Masked logits that are integers computed exactly (float32 sums of small integers stay
    below 2**24, so no order of summation rounds), so the argmax of a game's row is the same in
    any batch; hu, kong and pong get a bonus so that
    hands are won and paid. The value head is the parent's (the learner connector uses it)."""

    def setup(self):
        super().setup()
        gen = torch.Generator().manual_seed(0)
        size = self.observation_space["observation"].shape[0]
        self.w = torch.randint(-3, 4, (size, self.action_space.n), generator=gen).float()
        self.bonus = torch.zeros(self.action_space.n)
        self.bonus[81:84] = torch.tensor([2e5, 4e5, 1e6])

    def _forward(self, batch, **kwargs):
        obs = batch[Columns.OBS]
        x = torch.round(obs["observation"] * 8)
        logits = x @ self.w + self.bonus
        return {Columns.ACTION_DIST_INPUTS: logits.masked_fill(obs["action_mask"] == 0, NEG_INF)}


def _config(runner_cls, rules="guiyang", games=4, extra=()):
    args = rllib_ppo.parse_args(
        rllib_ppo.Args,
        [
            "--num-env-runners=0",
            f"--envs-per-runner={games}",
            "--seed=7",
            f"--rules={rules}",
            *extra,
        ],
    )
    cfg = rllib_ppo.build_config(args)
    cfg.env_runners(env_runner_cls=runner_cls)
    return cfg


def _exact_config(runner_cls, rules="guiyang", games=4):
    cfg = _config(runner_cls, rules, games)
    spec = RLModuleSpec(module_class=ExactModule, model_config={"hidden": 8})
    return cfg.rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={"shared": spec}))


def _obs(sa, indices):
    """Observations of a SingleAgentEpisode as arrays, whether it holds lists or arrays."""
    o = sa.get_observations(indices)
    if isinstance(o, list):
        o = {k: np.stack([x[k] for x in o]) for k in o[0]}
    return {k: np.asarray(v) for k, v in o.items()}


FIELDS = ("observation", "action_mask", "actions", "rewards", "logp", "dist")


def whole_matches(episodes) -> dict:
    """The matches played from their start to their end in ``episodes`` (chunks of several
    ``sample()`` calls), each seat's chunks joined: {key: (seats, decisions, chunks)}, keyed
    by every seat's first observation. Checks on the way that a chunk starts from the last
    observation of the seat's previous chunk, and that only the last chunk is terminated."""
    chunks: dict[str, list] = {}
    for e in episodes:
        chunks.setdefault(e.id_, []).append(e)
    out = {}
    for cs in chunks.values():
        if cs[0].env_t_started != 0 or not cs[-1].is_done:
            continue
        assert [c.is_done for c in cs] == [False] * (len(cs) - 1) + [True]
        assert [c.env_t_started for c in cs[1:]] == [c.env_t for c in cs[:-1]]
        seats: dict[str, dict[str, list]] = {}
        for c in cs:
            for aid, sa in c.agent_episodes.items():
                sa.validate()
                n = len(sa)
                o = _obs(sa, slice(0, n + 1))
                d = seats.setdefault(aid, {f: [] for f in FIELDS} | {"t": [], "term": []})
                if d["observation"]:  # the chunk starts where the seat's last one ended
                    assert np.array_equal(d["observation"][-1][-1], o["observation"][0])
                    assert sa.t_started == d["t"][-1] + len(d["actions"][-1])
                    d["observation"][-1] = d["observation"][-1][:-1]
                    d["action_mask"][-1] = d["action_mask"][-1][:-1]
                d["observation"].append(o["observation"])
                d["action_mask"].append(o["action_mask"])
                d["actions"].append(np.asarray(sa.get_actions(slice(0, n))))
                d["rewards"].append(np.asarray(sa.get_rewards(slice(0, n)), np.float64))
                d["logp"].append(
                    np.asarray(sa.get_extra_model_outputs(Columns.ACTION_LOGP, slice(0, n)))
                )
                d["dist"].append(
                    np.asarray(sa.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS, slice(0, n)))
                )
                d["t"].append(sa.t_started)
                d["term"].append(sa.is_terminated)
        joined = {
            aid: {f: np.concatenate(d[f]) for f in FIELDS} | {"term": d["term"]}
            for aid, d in seats.items()
        }
        key = tuple(sorted((aid, d["observation"][0].tobytes()) for aid, d in joined.items()))
        out[key] = (joined, sum(len(c) for c in cs), len(cs))
    return out


def _sample(runner, calls, steps, explore=False):
    episodes = []
    for _ in range(calls):
        episodes += runner.sample(num_timesteps=steps, explore=explore)
    return episodes


@pytest.mark.parametrize(
    "rules, games, steps", [("guiyang", 4, 50), (TWO_HANDS, 8, 100)], ids=["one-hand", "two-hand"]
)
def test_batched_runner_gives_rllibs_episodes(rules, games, steps):
    """Same seeds, same (exact, greedy) policy: every match that RLlib's single-game runner
    played whole (4 sample() calls of ``steps`` steps a game) is played by the batched runner
    with the same observations, masks, actions, log-probs, distribution inputs, rewards and ends,
    whether its own sample() calls cut the matches after every step, every 3 or every 37 steps
    (RLlib's runner idles a step per game to reset it, so its cuts fall elsewhere). In two-hand
    matches the first hand's payment reaches a seat with its next observation, across cuts."""
    stock = MultiAgentEnvRunner(config=_exact_config(None, rules, games))
    theirs = whole_matches(_sample(stock, 4, steps * games))
    assert len(theirs) >= 8
    paid = paid_mid_match = 0
    for cut_every in (1, 3, 37):
        batched = BatchedEnvRunner(config=_exact_config(BatchedEnvRunner, rules, games))
        calls = -(-(4 * steps + 50) // cut_every)  # more steps: it must reach all their ends
        ours = whole_matches(_sample(batched, calls, cut_every * games))
        assert set(theirs) <= set(ours), cut_every
        for key, (seats, decisions, _) in theirs.items():
            mine, my_decisions, _ = ours[key]
            assert my_decisions == decisions
            assert sorted(mine) == sorted(seats)
            for aid, d in seats.items():
                for f in FIELDS:
                    assert mine[aid][f].shape == d[f].shape, (aid, f, cut_every)
                    np.testing.assert_allclose(
                        mine[aid][f], d[f], rtol=0, atol=1e-6, err_msg=f"{f}, cut {cut_every}"
                    )
                assert d["term"][-1] and mine[aid]["term"][-1]
                assert not (d["action_mask"][-1].any() or mine[aid]["action_mask"][-1].any())
                paid += np.count_nonzero(d["rewards"])
                paid_mid_match += np.count_nonzero(d["rewards"][:-1])
    assert paid > 0  # some hands paid, so the rewards' seats and steps were compared
    if rules == TWO_HANDS:
        assert paid_mid_match > 0  # ... and some first hands, paid to a decision mid-match


def test_a_payment_owed_at_a_cut_is_paid_in_the_next_chunk():
    """A seat's chunk ends at its latest observation; a hand that ended after its last action
    pays that action when the seat next observes, in the next chunk (rare in play: the cut must
    fall between the hand's end and the seat's next turn)."""
    from training.rllib_batched import _Seat

    obs = [np.full(3, k, np.float32) for k in range(4)]
    mask = np.ones(86, np.int8)
    spaces = (None, None)
    seat = _Seat()
    seat.observe(obs[0], mask, 0)
    seat.act(5, -1.0, np.zeros(86, np.float32), 1)
    seat.observe(obs[1], mask, 4)
    seat.act(6, -2.0, np.zeros(86, np.float32), 1)
    seat.owed += 2.5  # the hand ended after action 6
    first = seat.episode("player_0", "shared", "m", spaces, terminated=False)
    assert list(first.actions.data) == [5] and list(first.rewards.data) == [0.0]
    seat.carry()
    seat.observe(obs[2], mask, 9)
    seat.act(7, -3.0, np.zeros(86, np.float32), 2)
    seat.observe(obs[3], np.zeros(86, np.int8), 12)  # the match's end
    second = seat.episode("player_0", "shared", "m", spaces, terminated=True)
    assert second.t_started == 1 and second.id_ == first.id_
    assert list(second.actions.data) == [6, 7] and list(second.rewards.data) == [2.5, 0.0]
    assert second.observations.data["observation"][:, 0].tolist() == [1, 2, 3]
    assert list(second.extra_model_outputs[Columns.ACTION_LOGP].data) == [-2.0, -3.0]


def _default_connectors(cfg):
    """``cfg`` with RLlib's default learner connectors (PPO's: one step added, GAE)."""
    return cfg.learners(learner_connector=None, add_default_connectors_to_learner_pipeline=True)


def test_the_learner_builds_the_same_train_batch():
    """PPO's learner connectors (one step added, GAE with the value head) turn the whole
    matches of both runners into the same train batch, column by column."""
    cfg = _default_connectors(_exact_config(None))
    stock = MultiAgentEnvRunner(config=cfg)
    batched = BatchedEnvRunner(config=_exact_config(BatchedEnvRunner))
    learner = cfg.build_learner(spaces=stock.get_spaces())

    def by_key(episodes):
        return {
            tuple(
                sorted(
                    (a, _obs(sa, 0)["observation"].tobytes()) for a, sa in e.agent_episodes.items()
                )
            ): e
            for e in episodes
        }

    theirs = by_key(stock.sample(num_episodes=4, explore=False))
    ours = by_key(batched.sample(num_episodes=4, explore=False))
    common = sorted(set(theirs) & set(ours))
    assert len(common) >= 3

    def train_batch(episodes):
        return learner._learner_connector(
            rl_module=learner.module, batch={}, episodes=episodes, shared_data={}, metrics=None
        )["shared"]

    a = train_batch([theirs[k] for k in common])
    b = train_batch([ours[k] for k in common])
    assert set(a) - {Columns.EMBEDDINGS} == set(b)
    assert len(b[Columns.ADVANTAGES]) > 100
    for col in b:
        for x, y in zip(tree.flatten(a[col]), tree.flatten(b[col]), strict=True):
            assert x.shape == y.shape, col
            assert torch.allclose(x.double(), y.double(), atol=1e-5), col


def _both_pipelines(cfg, spaces):
    """A learner of ``cfg`` (``BatchedTrainBatch``) and one with RLlib's default pipeline."""
    learner = cfg.build_learner(spaces=spaces)
    assert isinstance(learner, LeanPPOLearner)
    (piece,) = learner._learner_connector.connectors
    assert isinstance(piece, BatchedTrainBatch)
    stock = _default_connectors(cfg.copy(copy_frozen=False)).build_learner(spaces=spaces)
    stock.module.set_state(learner.module.get_state())
    return learner, stock


def _assert_same_train_batch(learner, stock, episodes, league: bool) -> None:
    """``learner``'s batch is ``stock``'s (RLlib's pipeline) without its masked rows."""
    theirs = stock._learner_connector(
        rl_module=stock.module,
        batch={},
        episodes=copy.deepcopy(episodes),  # RLlib's pipeline extends them in place
        shared_data={},
        metrics=None,
    )
    ours = learner._learner_connector(
        rl_module=learner.module, batch={}, episodes=episodes, shared_data={}, metrics=None
    )
    assert set(ours) == {"shared"}
    assert set(theirs) == ({"shared", "frozen_0"} if league else {"shared"})
    a, b = theirs["shared"], ours["shared"]
    real = a[Columns.LOSS_MASK].numpy()
    assert 0 < real.sum() < len(real) and len(b[Columns.ACTIONS]) == real.sum()
    dropped = {Columns.LOSS_MASK, Columns.REWARDS, Columns.TERMINATEDS, Columns.TRUNCATEDS}
    assert set(b) == set(a) - dropped
    for col in b:
        for x, y in zip(tree.flatten(a[col]), tree.flatten(b[col]), strict=True):
            assert x.dtype == y.dtype, col
            if col in (Columns.ADVANTAGES, Columns.VALUE_TARGETS):  # from the value pass,
                # whose float32 results have differed in the last bit between runs
                np.testing.assert_allclose(x.numpy()[real], y.numpy(), rtol=0, atol=1e-6)
            else:
                np.testing.assert_array_equal(x.numpy()[real], y.numpy(), err_msg=col)


@pytest.mark.parametrize("league", [False, True], ids=["one-module", "league"])
def test_batched_train_batch_is_rllibs_default_pipeline(league):
    """``BatchedTrainBatch`` against RLlib's own pipeline (AddOneTsToEpisodesAndTruncate, the
    default pieces, GeneralAdvantageEstimation) on the batched runner's episodes: chunks cut
    mid-match and matches that ended, gamma and lambda below 1, with a league. Its batch is that
    pipeline's batch with the phantom (loss-masked) rows left out, value for value (the value
    pass's advantages and targets to float32 rounding), and holds the trained module only."""
    extra = ["--hidden=16", "--gamma=0.97", "--gae-lambda=0.9"]
    if league:
        extra += ["--league-size=1", "--league-prob=0.5"]
    cfg = _config(BatchedEnvRunner, games=8, extra=extra)
    runner = BatchedEnvRunner(config=cfg)
    learner, stock = _both_pipelines(cfg, runner.get_spaces())
    ended = cut = 0
    for _ in range(3):
        episodes = runner.sample(num_timesteps=8 * 40, explore=True)
        ended += sum(e.is_done for e in episodes)
        cut += sum(not e.is_done for e in episodes)
        _assert_same_train_batch(learner, stock, episodes, league)
    assert ended and cut


def test_batched_train_batch_reads_the_shards_of_several_learners():
    """With several learners RLlib shards the episodes, splitting some: each shard's batch is
    still RLlib's."""
    from ray.rllib.utils.minibatch_utils import ShardEpisodesIterator

    cfg = _config(BatchedEnvRunner, games=8, extra=["--hidden=16", "--gamma=0.97"])
    runner = BatchedEnvRunner(config=cfg)
    learner, stock = _both_pipelines(cfg, runner.get_spaces())
    runner.sample(num_timesteps=8 * 30, explore=True)
    episodes = runner.sample(num_timesteps=8 * 50, explore=True)
    shards = list(ShardEpisodesIterator(episodes, num_shards=3, len_lookback_buffer=1))
    assert sum(len(shard) for shard in shards) > len(episodes)  # some episode was split
    for shard in shards:
        _assert_same_train_batch(learner, stock, shard, league=False)


def _learners(cfg):
    """The lean learner of ``cfg`` and RLlib's, the same module weights in both."""
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    spaces = BatchedEnvRunner(config=cfg).get_spaces()
    lean = cfg.build_learner(spaces=spaces)
    stock = (
        cfg.copy(copy_frozen=False)
        .learners(learner_class=PPOTorchLearner)
        .build_learner(spaces=spaces)
    )
    assert type(stock) is PPOTorchLearner and isinstance(lean, LeanPPOLearner)
    stock.module.set_state(lean.module.get_state())
    return lean, stock


def test_lean_learner_updates_as_rllibs_learner():
    """``LeanPPOLearner.update`` (its shuffle and its optimizer steps) leaves the weights that
    RLlib's ``PPOTorchLearner`` leaves, from the same episodes, weights and numpy seed, both
    with RLlib's default pipeline; and its batches are the take-shuffled kind."""
    from ray.rllib.core.learner.training_data import TrainingData

    cfg = _default_connectors(_config(BatchedEnvRunner, games=8, extra=["--hidden=16"]))
    lean, stock = _learners(cfg)
    runner = BatchedEnvRunner(config=cfg)
    episodes = runner.sample(num_timesteps=8 * 40, explore=True)
    made = lean._make_batch_if_necessary(TrainingData(episodes=copy.deepcopy(episodes)))
    assert all(isinstance(b, _TakeShuffledBatch) for b in made.policy_batches.values())
    for learner in (lean, stock):
        np.random.seed(4)
        learner.update(
            episodes=copy.deepcopy(episodes),
            timesteps={"num_env_steps_sampled_lifetime": 320},
            num_epochs=2,
            minibatch_size=64,
            shuffle_batch_per_epoch=True,
        )
    mine, theirs = lean.module["shared"].state_dict(), stock.module["shared"].state_dict()
    assert mine.keys() == theirs.keys()
    for key in mine:
        assert torch.equal(mine[key], theirs[key]), key
    start = BatchedEnvRunner(config=cfg).module["shared"].state_dict()
    moved = any(not torch.equal(mine[k], start[k]) for k in mine)
    assert moved


def test_batched_train_batch_refuses_episodes_it_cannot_read():
    """Episodes with list buffers (RLlib's own runner, not numpy'ized) get a clear error."""
    cfg = _exact_config(None)
    stock = MultiAgentEnvRunner(config=cfg)
    learner = cfg.build_learner(spaces=stock.get_spaces())
    episodes = stock.sample(num_episodes=1, explore=False)
    with pytest.raises(ValueError, match="numpy'ized episodes .* holds lists"):
        learner._learner_connector(
            rl_module=learner.module, batch={}, episodes=episodes, shared_data={}, metrics=None
        )


def test_take_shuffle_is_rllibs_shuffle():
    """Same permutation, same rows: ``_TakeShuffledBatch.shuffle`` against
    ``SampleBatch.shuffle`` from the same numpy seed, nested observation dict included."""
    from ray.rllib.policy.sample_batch import SampleBatch

    gen = torch.Generator().manual_seed(3)
    data = {
        Columns.OBS: {
            "observation": torch.randn(50, 7, generator=gen),
            "action_mask": torch.ones(50, 86, dtype=torch.int8),
        },
        Columns.ACTIONS: torch.arange(50, dtype=torch.int32),
        Columns.ACTION_LOGP: torch.randn(50, generator=gen),
    }
    data[Columns.OBS]["action_mask"][:, 0] = torch.arange(50) % 7
    np.random.seed(11)
    theirs = SampleBatch(dict(data)).shuffle()
    np.random.seed(11)
    ours = _TakeShuffledBatch(dict(data)).shuffle()
    assert not torch.equal(ours[Columns.ACTIONS], data[Columns.ACTIONS])
    for x, y in zip(tree.flatten(dict(theirs)), tree.flatten(dict(ours)), strict=True):
        assert x.dtype == y.dtype and torch.equal(x, y)


@pytest.mark.parametrize("poison", [None, float("nan"), float("inf")])
def test_lean_learner_applies_gradients_as_rllib(poison):
    """Two Adam steps from the same gradients leave the same weights as RLlib's learner, also
    when a gradient holds a NaN or an infinity (RLlib zeroes those entries, and so must the
    fallback)."""
    lean, stock = _learners(_config(BatchedEnvRunner, extra=["--hidden=16"]))
    gen = torch.Generator().manual_seed(5)
    for step in range(2):
        grads = [torch.randn(p.shape, generator=gen) for p in lean._params.values()]
        if poison is not None and step == 1:
            grads[0].view(-1)[3] = poison
        for learner in (lean, stock):  # each keys its gradients by its own parameters
            keyed = zip(learner._params, grads, strict=True)
            learner.apply_gradients({k: g.clone() for k, g in keyed})
    for mine, theirs in zip(lean._params.values(), stock._params.values(), strict=True):
        assert torch.isfinite(mine).all()
        assert torch.equal(mine, theirs)


def test_sampled_actions_are_legal_and_their_log_probs_are_the_modules():
    """Exploring with the real module: every action is legal under its stored mask, and its
    stored log-probability is the log-softmax of the stored (masked) logits."""
    runner = BatchedEnvRunner(config=_config(BatchedEnvRunner, games=8, extra=["--hidden=16"]))
    episodes = _sample(runner, 2, 400, explore=True)
    n = 0
    for e in episodes:
        for sa in e.agent_episodes.values():
            k = len(sa)
            masks = _obs(sa, slice(0, k))["action_mask"]
            acts = np.asarray(sa.get_actions(slice(0, k)))
            dist = torch.from_numpy(
                np.asarray(sa.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS, slice(0, k)))
            )
            logp = np.asarray(sa.get_extra_model_outputs(Columns.ACTION_LOGP, slice(0, k)))
            assert masks[np.arange(k), acts].all()
            expect = torch.log_softmax(dist, -1)[torch.arange(k), torch.from_numpy(acts).long()]
            np.testing.assert_allclose(logp, expect.numpy(), atol=1e-5)
            n += k
    assert n >= 600  # transitions (the decisions whose next observation came)
    decisions = sum(len(e) for e in episodes)
    assert decisions == 800  # 2 calls of 400: 50 steps of 8 games
    assert int(runner.get_metrics()["num_env_steps_sampled"]) == decisions


def test_league_seats_are_played_by_their_mapped_module():
    """With a league, each seat of a match keeps the module the policy mapping gives it, and
    its logits are that module's (the modules' weights differ)."""
    cfg = _config(
        BatchedEnvRunner, games=8, extra=["--hidden=16", "--league-size=2", "--league-prob=0.5"]
    )
    runner = BatchedEnvRunner(config=cfg)
    mapping = rllib_ppo.league_mapping(2, 0.5)
    episodes = _sample(runner, 2, 300, explore=True)
    used = set()
    for e in episodes:
        for aid, sa in e.agent_episodes.items():
            assert sa.module_id == mapping(aid, e)
            used.add(sa.module_id)
            k = len(sa)
            o = _obs(sa, slice(0, k))
            batch = {Columns.OBS: {key: torch.from_numpy(v) for key, v in o.items()}}
            with torch.no_grad():
                logits = runner.module[sa.module_id].forward_inference(batch)
            stored = sa.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS, slice(0, k))
            np.testing.assert_allclose(
                np.asarray(stored), logits[Columns.ACTION_DIST_INPUTS].numpy(), atol=1e-5
            )
    assert used == {"shared", "frozen_0", "frozen_1"}
    sampled = runner.get_metrics()["num_module_steps_sampled"]
    assert set(sampled) == used


class FailingRunner(BatchedEnvRunner):
    """A runner whose sampling fails (a stand-in for any error inside it)."""

    def _sample_batched(self, **kwargs):
        raise FloatingPointError("injected failure")


def test_a_failure_in_sample_names_the_runner():
    runner = FailingRunner(config=_config(FailingRunner))
    with pytest.raises(
        RunnerFailure,
        match=r"^env runner 0 \(node -, pid \d+\) failed in "
        r"sample\(\): FloatingPointError: injected failure$",
    ) as info:
        runner.sample()
    assert isinstance(info.value.__cause__, FloatingPointError)


def test_unknown_runner_flag_is_named():
    args = rllib_ppo.parse_args(rllib_ppo.Args, [*SMALL, "--runner=threads"])
    with pytest.raises(ValueError, match="--runner 'threads': must be one of batched, aec"):
        rllib_ppo.check_args(args)


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray for the training runs of this module."""
    import ray

    rllib_ppo.init_ray(rllib_ppo.parse_args(rllib_ppo.Args, []))
    yield
    ray.shutdown()


def _rows(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_training_runs_with_either_runner(ray_local, tmp_path):
    """Two iterations with the batched runner (a league of one snapshot, so two modules share
    the batch), one with RLlib's own: both train, log every seat and checkpoint, and the
    batched runner resumes the other's run."""
    league = ["--league-size=1", "--league-every=1", "--league-prob=0.5"]
    run = tmp_path / "batched"
    assert rllib_ppo.main([*SMALL, "--iterations=2", *league, f"--out-dir={run}"]) == 0
    rows = _rows(run)
    assert [r["iteration"] for r in rows] == [1, 2]
    assert rows[-1]["decisions"] >= 2 * 512
    assert list(rows[-1]["seat_returns"]) == [f"player_{i}" for i in range(4)]
    assert set(rows[-1]["module_steps_sampled"]) == {"shared", "frozen_0"}
    assert rows[-1]["module_steps_trained"] >= 512
    assert all(np.isfinite(r["loss/policy"]) for r in rows)
    assert json.loads((run / "args.json").read_text())["runner"] == "batched"
    old = tmp_path / "aec"
    assert rllib_ppo.main([*SMALL, "--iterations=1", "--runner=aec", f"--out-dir={old}"]) == 0
    (row,) = _rows(old)
    assert row["decisions"] >= 512 and np.isfinite(row["loss/policy"])
    assert (old / "checkpoint" / "learner_group").is_dir()
    # a checkpoint of either runner continues with the other (same modules, same state)
    resume = [f"--resume={old}", f"--out-dir={old}", "--runner=batched"]
    assert rllib_ppo.main([*SMALL, "--iterations=1", *resume]) == 0
    assert [r["iteration"] for r in _rows(old)] == [1, 2]


def test_a_runner_failure_ends_the_run_with_its_message(ray_local, tmp_path, monkeypatch, capsys):
    """A remote env runner raising inside sample(): the trainer stops at once with exit
    status 1 and one line naming the runner and its error (RLlib would otherwise end the actor
    and carry on without samples)."""
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the actor's class
    monkeypatch.setattr(rllib_ppo, "runner_class", lambda name: FailingRunner)
    status = rllib_ppo.main([*SMALL, "--iterations=2", f"--out-dir={tmp_path / 'run'}"])
    assert status == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("python -m training.rllib_ppo: error: env runner 1 (node ")
    assert last.endswith("failed in sample(): FloatingPointError: injected failure")
    assert not (tmp_path / "run" / "metrics.jsonl").exists()
