"""Pinned contracts of the RLlib modules (``agents.rllib``, ``training.rllib_batched``,
``training.rllib_ppo``) that the other RLlib tests leave open: each test fails with a small
planted bug (mutation testing) and passes on the code as documented. No Ray is started.

Needs the ``rllib`` extra (``make rllib``); without it the whole module is skipped.
"""

import json
import pickle

import numpy as np
import pytest

pytest.importorskip(
    "ray.rllib", reason="Ray RLlib is not installed (the 'rllib' extra: make rllib)"
)

import torch  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.evaluation.postprocessing import Postprocessing  # noqa: E402
from test_rllib import SMALL, Episode, Payload, _module, _module_dir, _saved  # noqa: E402

from agents import make_agent  # noqa: E402
from agents.rllib import RLlibAgent  # noqa: E402
from training import rllib_ppo  # noqa: E402
from training.cli import FlagError  # noqa: E402
from training.rllib_batched import BatchedEnvRunner  # noqa: E402
from zhuoji_env.engine.actions import NUM_ACTIONS  # noqa: E402
from zhuoji_env.observation import OBS_SIZE, SLICES  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _args(*flags):
    return rllib_ppo.parse_args(rllib_ppo.Args, [*SMALL, *flags])


# --------------------------------------------------------------------------- the agent
def test_reseed_makes_the_agents_draws_repeat():
    """``reseed(seed)`` replaces the agent's randomness: the same seed, the same sampled actions
    (the arena reseeds every agent per chunk so that results do not depend on the order)."""
    torch.manual_seed(0)
    agent = RLlibAgent(_module(), seed=1)
    rng = np.random.default_rng(0)
    obs = rng.random((300, OBS_SIZE), dtype=np.float32)
    obs[:, SLICES["hand"]] = rng.integers(0, 5, (300, 27))
    mask = np.zeros((300, NUM_ACTIONS), dtype=bool)
    mask[:, :27] = True  # a near-uniform policy over 27 actions: draws differ between streams
    agent.reseed(5)
    first = agent.act(obs, mask)
    agent.act(obs, mask)  # the stream moves on
    agent.reseed(5)
    again = agent.act(obs, mask)
    assert first.tolist() == again.tolist()
    agent.reseed(6)
    assert agent.act(obs, mask).tolist() != first.tolist()


def test_a_numpy_global_off_the_allow_list_is_refused(tmp_path):
    """Only the globals that rebuild arrays are loaded: another function of numpy (here one that
    writes a file) is refused by name and never runs."""
    run = _saved(tmp_path / "run")
    marker = tmp_path / "written"
    state = _module(16).get_state()
    state["pi.bias"] = Payload(np.savetxt, str(marker), [1.0])
    (_module_dir(run) / "module_state.pkl").write_bytes(pickle.dumps(state))
    with pytest.raises(ValueError, match="refused, it names numpy.savetxt"):
        make_agent(f"rllib:{run}")
    assert not marker.exists()


def test_the_agent_loads_a_checkpoint_parked_by_a_killed_swap(tmp_path):
    """A kill between the checkpoint swap's two renames leaves only ``.checkpoint.old``:
    ``rllib:OUT_DIR`` puts it back (``checkpoint_dir``) and plays it."""
    run = _saved(tmp_path / "run")
    (run / "checkpoint").rename(run / ".checkpoint.old")
    agent = make_agent(f"rllib:{run}:greedy")
    assert isinstance(agent, RLlibAgent) and agent.greedy
    assert (run / "checkpoint").is_dir() and not (run / ".checkpoint.old").exists()


# --------------------------------------------------------------------------- the runner
def test_env_runners_start_from_disjoint_seeds():
    """Each game of each env runner plays its first match from its own seed: unlike RLlib's
    runner (``seed + w + i``), the runners' first matches never share a seed. Game ``i`` of
    runner ``w`` starts from ``seed + w * (N + 1) + i`` (the module docstring; it said
    ``seed + w * N + i`` until a mutation test found RLlib's ``+ w`` in the runner's seed)."""
    seeds = []
    for w in range(1, 5):  # four remote runners
        cfg = rllib_ppo.build_config(_args("--num-env-runners=4", "--seed=7"))
        seeds += BatchedEnvRunner(config=cfg, worker_index=w)._first_seeds()
    assert len(seeds) == 4 * 4  # --envs-per-runner 4 in SMALL
    assert len(set(seeds)) == len(seeds)
    assert seeds == [7 + w * 5 + i for w in range(1, 5) for i in range(4)]


def test_sampling_episodes_returns_as_many_as_asked():
    """``sample(num_episodes=k)`` returns ``k`` whole matches, as RLlib's runner does, even when
    several games end at the same step (8 games start together, so some do)."""
    from test_rllib_batched import _config

    runner = BatchedEnvRunner(config=_config(BatchedEnvRunner, games=8, extra=["--hidden=16"]))
    for k in (1, 2, 3, 5, 8):
        episodes = runner.sample(num_episodes=k, explore=True)
        assert len(episodes) == k
        assert all(e.is_done and e.env_t_started == 0 for e in episodes)


# --------------------------------------------------------------------------- the learner
@pytest.mark.parametrize("kl", [False, True], ids=["kl-off", "kl-on"])
def test_lean_loss_is_rllibs_loss_where_the_clips_bite(kl):
    """``LeanPPOLearner``'s loss is RLlib's PPO loss, term for term, also on rows where the
    probability ratio leaves ``[1 - clip, 1 + clip]`` on either side and where the value loss
    exceeds ``vf_clip_param`` (which an ordinary short update rarely reaches); with the KL
    penalty on (never in ``training.rllib_ppo``) it is RLlib's, KL term included."""
    from test_rllib_batched import _config, _learners

    cfg = _config(BatchedEnvRunner, extra=["--hidden=16"])
    if kl:
        cfg.training(use_kl_loss=True, kl_coeff=0.5)
    lean, stock = _learners(cfg)
    gen = torch.Generator().manual_seed(1)
    k = 64
    obs = torch.rand((k, OBS_SIZE), generator=gen)
    mask = torch.ones((k, NUM_ACTIONS), dtype=torch.int8)
    actions = torch.randint(0, NUM_ACTIONS, (k,), generator=gen)
    batch = {Columns.OBS: {"observation": obs, "action_mask": mask}, Columns.ACTIONS: actions}
    module = lean.module["shared"]
    with torch.no_grad():
        logits = module.forward_train(batch)[Columns.ACTION_DIST_INPUTS]
    logp = torch.log_softmax(logits, -1)[torch.arange(k), actions]
    # ratios exp(-logp shift): 0.5 to 2, far outside [0.8, 1.2] on both sides, and 1
    shift = torch.tensor([-0.7, -0.3, 0.0, 0.3, 0.7]).repeat(k // 5 + 1)[:k]
    batch[Columns.ACTION_LOGP] = logp + shift
    # the sampling policy's logits: not the current ones, so that the KL term is not 0
    batch[Columns.ACTION_DIST_INPUTS] = logits + torch.randn(logits.shape, generator=gen)
    batch[Postprocessing.ADVANTAGES] = torch.linspace(-2, 2, k)
    batch[Postprocessing.VALUE_TARGETS] = torch.linspace(-20, 20, k)  # squared errors to 400
    config = lean.config.get_config_for_module("shared")
    assert config.vf_clip_param < 400 and config.clip_param == 0.2
    losses = []
    for learner in (lean, stock):
        fwd = learner.module["shared"].forward_train(batch)
        losses.append(
            learner.compute_loss_for_module(
                module_id="shared", config=config, batch=batch, fwd_out=fwd
            )
        )
    torch.testing.assert_close(losses[0], losses[1], rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- the trainer
@pytest.mark.parametrize(
    "flag, message",
    [
        ("--league-prob=1.5", "--league-prob 1.5: must be in \\[0, 1\\]"),
        ("--lr=0", "--lr 0.0: must be > 0"),
    ],
)
def test_more_bad_flags_are_named(flag, message):
    with pytest.raises(ValueError, match=message):
        rllib_ppo.check_args(_args(flag))


def test_a_minibatch_of_the_whole_train_batch_is_allowed(tmp_path):
    """``--minibatch`` must be at most ``--train-batch``: equal is allowed."""
    rllib_ppo.check_args(_args("--minibatch=512", f"--out-dir={tmp_path / 'run'}"))


def test_resuming_another_run_into_a_folder_holding_a_run_is_refused(tmp_path):
    """``--resume A --out-dir B`` where B holds a different run would overwrite B's run: it is
    refused (only resuming B itself may write there), unless ``--force``."""
    for name in ("a", "b"):
        (tmp_path / name / "checkpoint" / "learner_group").mkdir(parents=True)
        (tmp_path / name / "metrics.jsonl").write_text('{"iteration": 1}\n')
    a, b = tmp_path / "a", tmp_path / "b"
    with pytest.raises(FlagError, match="holds a run"):
        rllib_ppo.check_args(_args(f"--resume={a}", f"--out-dir={b}"))
    assert rllib_ppo.replaced_files(_args(f"--resume={b}", f"--out-dir={b}")) == []
    forced = rllib_ppo.replaced_files(_args(f"--resume={a}", f"--out-dir={b}", "--force"))
    assert sorted(p.name for p in forced) == ["checkpoint", "metrics.jsonl"]


def test_league_prob_is_the_chance_of_a_frozen_seat():
    """With ``--league-prob 0.1`` about one seat in ten is played by a snapshot."""
    mapping = rllib_ppo.league_mapping(2, 0.1)
    picks = [mapping(f"player_{s}", Episode(f"ep{e}")) for e in range(500) for s in range(4)]
    frozen = sum(p != "shared" for p in picks)
    assert 100 < frozen < 300  # 2,000 seats, 200 expected
    assert rllib_ppo.league_mapping(2, 0.0)("player_0", Episode("x")) == "shared"
    assert rllib_ppo.league_mapping(2, 1.0)("player_0", Episode("x")) != "shared"


def test_seat_returns_are_logged_in_hand_points():
    """RLlib's returns are scaled by ``--reward-scale``; ``metrics.jsonl`` gives hand points."""
    result = {
        "env_runners": {"agent_episode_returns_mean": {"player_1": -0.5, "player_0": 1.5}},
        "learners": {"shared": {"policy_loss": 0.25}},
    }
    row = rllib_ppo.summarize(result, 100, 2.0, 3, reward_scale=0.1)
    assert row["seat_returns"] == pytest.approx({"player_0": 15.0, "player_1": -5.0})
    assert list(row["seat_returns"]) == ["player_0", "player_1"]
    assert row["decisions_per_s"] == 50.0 and row["loss/policy"] == 0.25


class _FakeAlgo:
    """What ``rllib_ppo._train`` uses of an RLlib algorithm: 600 decisions an iteration."""

    def __init__(self):
        self.iteration, self.lifetime = 0, 0

    def restore_from_path(self, path):
        self.iteration, self.lifetime = 5, 5000  # a checkpoint of 5 iterations

    def train(self):
        self.iteration += 1
        self.lifetime += 600
        return {
            "env_runners": {
                "num_env_steps_sampled_lifetime": self.lifetime,
                "num_env_steps_sampled": 600,
            }
        }

    def save_to_path(self, path):
        with open(f"{path}/state", "w") as f:
            f.write(str(self.iteration))

    def stop(self):
        pass


@pytest.fixture
def fake_algo(monkeypatch):
    """``rllib_ppo.train`` on :class:`_FakeAlgo` (no Ray); yields the league slots snapshot."""
    slots = []

    class Config:
        def build_algo(self):
            return _FakeAlgo()

    monkeypatch.setattr(rllib_ppo, "init_ray", lambda args: None)
    monkeypatch.setattr(rllib_ppo, "build_config", lambda args: Config())
    monkeypatch.setattr(rllib_ppo, "cluster_layout", lambda algo: {})
    monkeypatch.setattr(rllib_ppo, "snapshot", lambda algo, slot: slots.append(slot))
    return slots


def test_league_snapshots_replace_the_oldest_slot(tmp_path, fake_algo):
    """Every ``--league-every`` iterations a snapshot replaces the oldest slot, so the slots
    taken in turn cycle through the whole league."""
    run = tmp_path / "run"
    league = ["--league-size=2", "--league-every=2", "--iterations=8"]
    rllib_ppo.train(_args(*league, f"--out-dir={run}"))
    slots = fake_algo
    assert slots[:2] == [0, 1]  # the league starts as the initial policy
    taken = slots[2:]
    assert len(taken) == 4  # after iterations 2, 4, 6 and 8
    assert sorted(taken[:2]) == [0, 1] and taken[2:] == taken[:2]
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(1, 9))
    assert [r["decisions"] for r in rows] == [600 * i for i in range(1, 9)]


def test_a_resumed_run_counts_its_own_decisions(tmp_path, fake_algo):
    """A run resumed from a checkpoint logs the decisions of this run (and their rate), not
    the checkpoint's lifetime count, while its iterations go on from the checkpoint's."""
    (tmp_path / "old" / "checkpoint" / "learner_group").mkdir(parents=True)
    run = tmp_path / "new"
    rllib_ppo.train(_args("--iterations=2", f"--resume={tmp_path / 'old'}", f"--out-dir={run}"))
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [6, 7]
    assert [r["decisions"] for r in rows] == [600, 1200]


def test_frozen_league_modules_are_never_trained():
    """``--league-size`` adds frozen copies that are never trained, whichever learner
    connector builds the batch (RLlib's own pipeline with ``--runner aec`` would give them
    rows)."""
    for runner in ("batched", "aec"):
        cfg = rllib_ppo.build_config(_args("--league-size=2", f"--runner={runner}"))
        learner = cfg.build_learner(spaces=BatchedEnvRunner(config=cfg).get_spaces())
        assert learner.should_module_be_updated("shared")
        assert not learner.should_module_be_updated("frozen_0")
        assert not learner.should_module_be_updated("frozen_1")
