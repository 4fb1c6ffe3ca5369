"""Ray RLlib training (``training.rllib_ppo``), the ``rllib:`` agent and the two-node run.

Needs the ``rllib`` extra (``make rllib``; ``make test-rllib`` runs this file there); without
it the whole module is skipped. One local Ray serves the training tests; the two-node test
starts its own two nodes as separate processes.
"""

import collections
import json
import os
import pickle
import shutil

import numpy as np
import pytest

pytest.importorskip(
    "ray.rllib", reason="Ray RLlib is not installed (the 'rllib' extra: make rllib)"
)

import torch  # noqa: E402
from ray.rllib.core import (  # noqa: E402
    COMPONENT_LEARNER,
    COMPONENT_LEARNER_GROUP,
    COMPONENT_RL_MODULE,
)
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModule, RLModuleSpec  # noqa: E402

import zhuoji_env  # noqa: E402
from agents import make_agent  # noqa: E402
from agents.arena import run_arena  # noqa: E402
from agents.rllib import NEG_INF, MaskedPolicyModule, RLlibAgent  # noqa: E402
from training import rllib_ppo  # noqa: E402
from training.rllib_two_nodes import simulate  # noqa: E402
from zhuoji_env.engine.actions import NUM_ACTIONS  # noqa: E402
from zhuoji_env.limits import SizeError  # noqa: E402
from zhuoji_env.observation import OBS_SIZE, SLICES  # noqa: E402

SMALL = [
    "--envs-per-runner=4",
    "--train-batch=512",
    "--minibatch=256",
    "--epochs=1",
    "--hidden=32",
    "--eval-deals=0",
    "--save-every=0",
]


def _module(hidden=16):
    env = rllib_ppo.ZhuojiMultiAgentEnv()
    return RLModuleSpec(
        module_class=MaskedPolicyModule,
        observation_space=env.observation_spaces["player_0"],
        action_space=env.action_spaces["player_0"],
        model_config={"hidden": hidden},
    ).build()


def test_env_seats_in_order_and_returns_match_the_raw_aec_loop():
    """The wrapper lists the seats in order, and a game played through it pays every seat
    its raw AEC return times reward_scale (the rule agent, so the hands are not all 0)."""
    env = rllib_ppo.ZhuojiMultiAgentEnv({"reward_scale": 0.1})
    assert env.agents == env.possible_agents == [f"player_{i}" for i in range(4)]
    agent = make_agent("rule", seed=0)
    nonzero = 0
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        wrapped = dict.fromkeys(env.agents, 0.0)
        actions = []
        while True:
            ((aid, o),) = obs.items()
            actions.append(int(agent.act(o["observation"], o["action_mask"])))
            obs, rew, term, _, _ = env.step({aid: actions[-1]})
            for k, r in rew.items():
                wrapped[k] += r
            if term["__all__"]:
                break
        raw = zhuoji_env.env()
        raw.reset(seed=seed)
        todo = iter(actions)
        totals = dict.fromkeys(raw.possible_agents, 0.0)
        for name in raw.agent_iter():
            _, r, t, tr, _ = raw.last()
            totals[name] += r
            raw.step(None if t or tr else next(todo))
        assert next(todo, None) is None
        assert wrapped == pytest.approx({k: 0.1 * v for k, v in totals.items()})
        nonzero += any(totals.values())
    assert nonzero == 3


def test_env_config_rejects_unknown_keys():
    with pytest.raises(ValueError, match="unknown env_config keys \\['seed'\\]"):
        rllib_ppo.ZhuojiMultiAgentEnv({"seed": 1})


def test_module_masks_illegal_actions():
    """Only the legal actions keep their logits; the agent never samples another."""
    torch.manual_seed(0)
    module = _module()
    rng = np.random.default_rng(0)
    obs = rng.random((3, OBS_SIZE), dtype=np.float32)
    obs[:, SLICES["hand"]] = rng.integers(0, 5, (3, 27))  # counts, as agents check
    mask = np.zeros((3, NUM_ACTIONS), dtype=bool)
    mask[0, [3, 84]] = True
    mask[1, 81:85] = True
    mask[2, 7] = True
    batch = {
        Columns.OBS: {
            "observation": torch.from_numpy(obs),
            "action_mask": torch.from_numpy(mask.astype(np.int8)),
        }
    }
    out = module.forward_inference(batch)
    logits = out[Columns.ACTION_DIST_INPUTS]
    assert logits.shape == (3, NUM_ACTIONS)
    assert (logits[torch.from_numpy(~mask)] == NEG_INF).all()
    assert (logits[torch.from_numpy(mask)] > -10).all()
    values = module.compute_values(batch)
    assert values.shape == (3,)
    assert torch.allclose(values, module.compute_values(batch, out[Columns.EMBEDDINGS]))
    agent = RLlibAgent(module, seed=1)
    many = np.repeat(obs, 200, 0), np.repeat(mask, 200, 0)
    acts = agent.act(*many)
    assert mask[np.repeat(np.arange(3), 200), acts].all()
    assert set(acts[200:400]) == {81, 82, 83, 84}
    greedy = RLlibAgent(module, greedy=True).act(obs, mask)
    assert greedy.tolist() == logits.argmax(-1).tolist()


@pytest.mark.parametrize(
    "flag, message",
    [
        ("--iterations=0", "--iterations 0: must be an integer >= 1"),
        ("--minibatch=2048", "--minibatch 2048: must be at most --train-batch 512"),
        ("--reward-scale=0", "--reward-scale 0.0: must be > 0"),
        ("--gamma=1.5", "--gamma 1.5: must be in \\[0, 1\\]"),
        ("--resume=/nonexistent/run", "no RLlib checkpoint at '/nonexistent/run'"),
        ("--eval-deals=5 --eval-opponents=rule,nobody", "unknown agent spec 'nobody'"),
        (f"--out-dir={__file__}/run", "test_rllib.py' is a file, not a folder"),
    ],
)
def test_bad_flags_are_named(flag, message):
    args = rllib_ppo.parse_args(rllib_ppo.Args, [*SMALL, *flag.split()])
    with pytest.raises(ValueError, match=message):
        rllib_ppo.check_args(args)


def test_args_of_another_type_are_refused_before_a_run_is_replaced():
    """From Python, force="no" is a string, not False: it would have replaced a run."""
    args = rllib_ppo.parse_args(rllib_ppo.Args, SMALL)
    args.force = "no"
    with pytest.raises(ValueError, match="--force 'no': must be True or False, not str"):
        rllib_ppo.check_args(args)


def test_bad_flag_exits_2(capsys):
    assert rllib_ppo.main(["--epochs=0"]) == 2
    assert "--epochs 0: must be an integer >= 1" in capsys.readouterr().err


def test_a_second_run_into_a_folder_being_written_exits_2(tmp_path, capsys):
    from zhuoji_env import fileio

    run = tmp_path / "run"
    with fileio.lock_dir(run):  # as a run training there holds it
        assert rllib_ppo.main([*SMALL, "--iterations=1", f"--out-dir={run}"]) == 2
    assert "is being written by another run" in capsys.readouterr().err
    assert sorted(p.name for p in run.iterdir()) == []  # the lock let go, nothing written


def test_the_ladder_fingerprints_an_rllib_run_by_its_learners_files(tmp_path):
    """A run continued with --resume plays another network under the same rllib:OUT_DIR: its
    pairs must not be reused."""
    from agents import ladder

    learner = tmp_path / "run" / "checkpoint" / "learner_group" / "learner"
    learner.mkdir(parents=True)
    (learner / "module_state.pkl").write_bytes(b"weights")
    before = ladder.fingerprint(f"rllib:{tmp_path / 'run'}:greedy")
    (learner / "module_state.pkl").write_bytes(b"weights, resumed")
    assert before is not None and before != ladder.fingerprint(f"rllib:{tmp_path / 'run'}")


def test_rllib_agent_spec_errors(tmp_path):
    with pytest.raises(ValueError, match="needs a checkpoint"):
        make_agent("rllib")
    with pytest.raises(ValueError, match="no RLlib checkpoint at"):
        make_agent(f"rllib:{tmp_path}")
    with pytest.raises(ValueError, match=r"unknown option 'cuda' .*; the options are greedy$"):
        make_agent(f"rllib:{tmp_path}:cuda")
    with pytest.raises(ValueError, match="option 'greedy' given more than once"):
        make_agent(f"rllib:{tmp_path}:greedy:greedy")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One local Ray (up until the module's tests end); one short iteration, one more resumed
    from its checkpoint, and one with a league of one frozen snapshot."""
    import ray

    out = tmp_path_factory.mktemp("rllib")
    rllib_ppo.init_ray(rllib_ppo.parse_args(rllib_ppo.Args, []))
    try:
        assert rllib_ppo.main([*SMALL, "--iterations=1", f"--out-dir={out / 'run'}"]) == 0
        first = (out / "run" / "metrics.jsonl").read_text().splitlines()
        shutil.copytree(out / "run", out / "resumed")  # a resumed run appends to its metrics
        resume = [f"--resume={out / 'resumed'}", f"--out-dir={out / 'resumed'}"]
        assert rllib_ppo.main([*SMALL, "--iterations=1", *resume]) == 0
        (out / "league").mkdir()  # an earlier run's file, which --force deletes
        (out / "league" / "metrics.jsonl").write_text('{"earlier": "run"}\n')
        league = ["--league-size=1", "--league-every=1", "--league-prob=0.5", "--force"]
        assert (
            rllib_ppo.main([*SMALL, "--iterations=1", *league, f"--out-dir={out / 'league'}"]) == 0
        )
        yield out, [json.loads(line) for line in first]
    finally:
        ray.shutdown()


def test_one_iteration_trains_and_logs_every_seat(trained):
    out, rows = trained
    (row,) = rows
    assert row["iteration"] == 1
    assert row["decisions"] >= 512
    assert row["decisions_per_s"] > 0
    assert list(row["seat_returns"]) == [f"player_{i}" for i in range(4)]
    assert row["module_steps_trained"] >= 512
    assert np.isfinite(row["loss/policy"])
    assert (out / "run" / "checkpoint" / "learner_group").is_dir()
    layout = json.loads((out / "run" / "cluster.json").read_text())
    assert len(layout["runner_nodes"]) == 1


def test_resume_continues_from_the_checkpoint(trained):
    out, _ = trained
    earlier, row = [
        json.loads(x) for x in (out / "resumed" / "metrics.jsonl").read_text().splitlines()
    ]
    assert earlier["iteration"] == 1
    assert row["iteration"] == 2
    assert row["decisions"] >= 512


def test_league_seats_play_a_frozen_snapshot_of_the_learner(trained):
    """Frozen seats sample; after the iteration the snapshot holds the learner's trained
    weights (it started as the initial policy, so equality means it was taken after training)."""
    out, _ = trained
    (row,) = [json.loads(x) for x in (out / "league" / "metrics.jsonl").read_text().splitlines()]
    assert set(row["module_steps_sampled"]) == {"shared", "frozen_0"}
    assert min(row["module_steps_sampled"].values()) > 0
    modules = (
        out
        / "league"
        / "checkpoint"
        / COMPONENT_LEARNER_GROUP
        / COMPONENT_LEARNER
        / COMPONENT_RL_MODULE
    )
    shared = RLModule.from_checkpoint(str(modules / "shared")).state_dict()
    frozen = RLModule.from_checkpoint(str(modules / "frozen_0")).state_dict()
    assert shared.keys() == frozen.keys()
    assert all(torch.equal(shared[k], frozen[k]) for k in shared)


def test_snapshot_reaches_the_env_runners_and_stays_frozen(trained):
    """A snapshot replaces the frozen module on the remote env runner too, and the next
    iteration's weight sync (of the trained module only) leaves it alone."""
    args = rllib_ppo.parse_args(rllib_ppo.Args, [*SMALL, "--league-size=1"])
    algo = rllib_ppo.build_config(args).build_algo()

    def runner_weights(module_id):
        (state,) = algo.env_runner_group.foreach_env_runner(
            lambda r: r.module[module_id].get_state(), local_env_runner=False
        )
        return state

    try:
        moved = algo.learner_group.get_weights(["shared"])["shared"]
        moved = {k: np.asarray(v) + 1.0 for k, v in moved.items()}  # unlike any initial weights
        algo.learner_group.set_weights({"shared": moved})
        rllib_ppo.snapshot(algo, 0)
        frozen = runner_weights("frozen_0")
        algo.train()
        after, shared = runner_weights("frozen_0"), runner_weights("shared")
    finally:
        algo.stop()
    assert frozen.keys() == moved.keys()
    assert all(np.allclose(frozen[k], moved[k], atol=1e-6) for k in moved)
    assert all(np.array_equal(after[k], frozen[k]) for k in frozen)
    assert not np.array_equal(shared["pi.weight"], frozen["pi.weight"])


class Episode:
    """What ``league_mapping``'s policy mapping reads of an RLlib episode: its id."""

    def __init__(self, id_):
        self.id_ = id_


def test_league_mapping_keeps_a_seat_for_the_game():
    mapping = rllib_ppo.league_mapping(3, 0.5)
    picks = [mapping(f"player_{s}", Episode(f"ep{e}")) for e in range(200) for s in range(4)]
    assert picks[:4] == [mapping(f"player_{s}", Episode("ep0")) for s in range(4)]
    counts = {m: picks.count(m) for m in set(picks)}
    assert set(counts) == {"shared", "frozen_0", "frozen_1", "frozen_2"}
    assert 300 < counts["shared"] < 500
    assert rllib_ppo.league_mapping(0, 0.5)("player_0", Episode("x")) == "shared"


def test_rllib_agent_plays_the_checkpoint_in_the_arena(trained):
    """``rllib:DIR`` is an agent like any other: it plays only legal actions in the arena and
    the same greedy action as the module's argmax."""
    out, _ = trained
    agent = make_agent(f"rllib:{out / 'run'}", seed=3)
    assert isinstance(agent, RLlibAgent)
    res = run_arena([agent, "random"], 2, seed=0, progress=False, labels=["rllib", "random"])
    assert res.summary()["agents"]["rllib"]["hands"] == 2 * 6 * 2  # 2 deals, 6 seatings, 2 seats
    greedy = make_agent(f"rllib:{out / 'run' / 'checkpoint'}:greedy")
    env = zhuoji_env.env()
    env.reset(seed=5)
    o = env.observe(env.agent_selection)
    obs, mask = o["observation"], o["action_mask"].astype(bool)
    a = greedy.act(obs, mask)
    assert mask[a]
    logits = greedy.module.forward_inference(
        {
            Columns.OBS: {
                "observation": torch.from_numpy(obs[None]),
                "action_mask": torch.from_numpy(mask[None].astype(np.int8)),
            }
        }
    )[Columns.ACTION_DIST_INPUTS]
    assert a == int(logits.argmax())


def test_arena_cli_takes_the_rllib_agent(trained, capsys):
    from agents.arena import main

    out, _ = trained
    assert main(["--agents", f"rllib:{out / 'run'},random", "--deals", "1", "--no-progress"]) == 0
    assert "rllib" in capsys.readouterr().out


def test_two_nodes_runners_sample_on_the_worker_and_the_learner_trains(tmp_path):
    """A head and a worker node (separate ``ray start`` processes): the env runners run on the
    worker node only, and the driver's learner trains on what they sampled."""
    out = simulate(tmp_path, iterations=1, runners=1)
    assert out["checks"] == dict.fromkeys(out["checks"], True)
    assert len(out["layout"]["nodes"]) == 2


# --------------------------------------------------------------------------- loading safely
class Payload:
    """Unpickling this calls ``func(*args)``: a stand-in for code planted in a checkpoint."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _module_dir(run):
    return (
        run
        / "checkpoint"
        / COMPONENT_LEARNER_GROUP
        / COMPONENT_LEARNER
        / COMPONENT_RL_MODULE
        / "shared"
    )


def _saved(run, hidden=16):
    """A run folder whose checkpoint holds a freshly built module, saved by Ray itself."""
    torch.manual_seed(0)
    _module(hidden).save_to_path(_module_dir(run))
    return run


def _state_file(run):
    return _module_dir(run) / "module_state.pkl"


def test_a_crafted_rllib_checkpoint_never_runs_its_code(tmp_path):
    """Both pickles Ray would read (the module's class and its state) carry a payload:
    ``rllib:`` refuses the state, naming the global, and runs neither."""
    run = _saved(tmp_path / "run")
    ran_state, ran_class = tmp_path / "ran_state", tmp_path / "ran_class"
    _state_file(run).write_bytes(pickle.dumps(Payload(os.system, f"touch {ran_state}")))
    (_module_dir(run) / "class_and_ctor_args.pkl").write_bytes(
        pickle.dumps(Payload(os.system, f"touch {ran_class}"))
    )
    for spec in (f"rllib:{run}", f"rllib:{run / 'checkpoint'}:greedy"):
        with pytest.raises(ValueError, match="refused, it names posix.system") as info:
            make_agent(spec)
        text = str(info.value)
        assert str(_state_file(run)) in text and "could run code" in text
        assert "rllib+trusted:" in text and "runs any code" in text
    assert not ran_state.exists() and not ran_class.exists()


def test_a_payload_among_real_weights_is_refused(tmp_path):
    run = _saved(tmp_path / "run")
    marker = tmp_path / "ran"
    state = _module(16).get_state()
    state["pi.bias"] = Payload(eval, f"__import__('os').system('touch {marker}')")
    _state_file(run).write_bytes(pickle.dumps(collections.OrderedDict(state)))
    with pytest.raises(ValueError, match="refused, it names builtins.eval"):
        make_agent(f"rllib:{run}")
    assert not marker.exists()


def test_the_safe_load_of_a_saved_module_equals_rays_own(tmp_path):
    run = _saved(tmp_path / "run", hidden=24)
    safe, trusted = make_agent(f"rllib:{run}"), make_agent(f"rllib+trusted:{run}")
    assert safe.module.model_config == {"hidden": 24}
    ours, theirs = safe.module.state_dict(), trusted.module.state_dict()
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda s: s.update({"body.2.weight": np.zeros((16, 17), np.float32)}), "has shape"),
        (lambda s: s.pop("vf.bias"), r"missing \['vf.bias'\]"),
        (lambda s: s.update({"pi.bias": np.zeros(86, np.int64)}), "not an RLlib module state"),
        (lambda s: s.update({"pi.bias": np.full(86, np.nan, np.float32)}), "NaN or infinite"),
    ],
)
def test_a_module_state_that_does_not_fit_is_refused(tmp_path, change, match):
    run = _saved(tmp_path / "run")
    state = _module(16).get_state()
    change(state)
    _state_file(run).write_bytes(pickle.dumps(state))
    with pytest.raises(ValueError, match=match):
        make_agent(f"rllib:{run}")


def test_module_states_too_large_or_of_another_format_are_refused(tmp_path, monkeypatch):
    run = _saved(tmp_path / "run", hidden=64)
    with monkeypatch.context() as m:
        m.setenv("ZHUOJI_MEMORY_LIMIT", "100000")
        with pytest.raises(SizeError, match=r"module_state\.pkl .* needs about"):
            make_agent(f"rllib:{run}")
    size = _state_file(run).stat().st_size
    monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", str(5 * size // 2))  # the file fits, the net not
    with pytest.raises(SizeError, match="a MaskedPolicyModule of 89,111 weights needs about"):
        make_agent(f"rllib:{run}")
    monkeypatch.delenv("ZHUOJI_MEMORY_LIMIT")
    _state_file(run).write_bytes(b"not a pickle at all")
    with pytest.raises(ValueError, match="not an RLlib module state, a damaged pickle"):
        make_agent(f"rllib:{run}")
    (_module_dir(run) / "module_state.msgpack").write_bytes(b"")
    with pytest.raises(ValueError, match="saved as msgpack.*rllib\\+trusted:"):
        make_agent(f"rllib:{run}")


def test_a_trained_checkpoint_plays_the_same_loaded_safely_or_by_ray(trained):
    """The safe load of a trained run gives the same logits and greedy actions as
    ``RLModule.from_checkpoint`` on positions of random games."""
    out, _ = trained
    env = zhuoji_env.env()
    rng = np.random.default_rng(0)
    obs, masks = [], []
    for seed in range(3):
        env.reset(seed=seed)
        for _ in env.agent_iter():
            o, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            obs.append(o["observation"])
            masks.append(o["action_mask"].astype(bool))
            env.step(int(rng.choice(np.flatnonzero(masks[-1]))))
    obs, masks = np.stack(obs), np.stack(masks)
    assert len(obs) > 200
    safe = make_agent(f"rllib:{out / 'run'}:greedy")
    trusted = RLlibAgent(RLModule.from_checkpoint(str(_module_dir(out / "run"))), greedy=True)
    batch = {
        Columns.OBS: {
            "observation": torch.from_numpy(obs),
            "action_mask": torch.from_numpy(masks.astype(np.int8)),
        }
    }
    with torch.no_grad():
        ours = safe.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        theirs = trusted.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(ours, theirs)
    assert (safe.act(obs, masks) == trusted.act(obs, masks)).all()
