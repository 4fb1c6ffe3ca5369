"""Data-parallel training (``--processes``): an update split across processes is the one
process's update on the union of their batches, the processes stay in step, and bad settings
are refused before any work."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as tmp

from agents.ppo import PolicyNet, load_checkpoint
from training import distributed, ppo_selfplay
from training.cli import FlagError
from training.learner import Batch, CloneLoss, Demonstrations, Magnet, ProcessGroup, ppo_update
from training.ppo_selfplay import Args, train
from zhuoji_env.observation import OBS_SIZE

SIZES = (40, 24)  # unequal shares: each process's part of the mean must be weighted by its size
MINIBATCHES = 4  # of 10 + 6 decisions: each minibatch is normalised over its own union
SETTINGS = dict(clip_coef=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5)


def _net_and_batch(n: int) -> tuple[PolicyNet, Batch]:
    """A small network and a batch of ``n`` decisions with sparse observations, a few legal
    actions each, and advantages of mean and spread far from 0 and 1."""
    torch.manual_seed(0)
    net = PolicyNet(16)
    rng = np.random.default_rng(0)
    obs = rng.random((n, OBS_SIZE), dtype=np.float32) * (rng.random((n, OBS_SIZE)) < 0.06)
    mask = rng.random((n, 86)) < 0.2
    mask[np.arange(n), rng.integers(86, size=n)] = True
    act = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
    obs, mask, act = torch.from_numpy(obs), torch.from_numpy(mask), torch.from_numpy(act)
    with torch.no_grad():
        logits, value = net(obs, mask)
        logp = torch.log_softmax(logits, -1).gather(-1, act[:, None]).squeeze(-1) - 0.05
    adv = torch.from_numpy(rng.normal(2.0, 3.0, n).astype(np.float32))
    ret = torch.from_numpy(rng.normal(size=n).astype(np.float32))
    return net, Batch(obs, mask, act, logp, adv, ret, value)


class _Interleaved:
    """Permutations of the union that put process 0's ``k``-th minibatch beside process 1's,
    each drawn as that process draws its own (``default_rng(rank)``)."""

    def __init__(self):
        self.rngs = [np.random.default_rng(rank) for rank in range(len(SIZES))]

    def permutation(self, n: int) -> np.ndarray:
        assert n == sum(SIZES)
        starts = np.cumsum((0, *SIZES[:-1]))
        parts = [r.permutation(m) + lo for r, m, lo in zip(self.rngs, SIZES, starts, strict=True)]
        mbs = [m // MINIBATCHES for m in SIZES]
        return np.concatenate(
            [
                p[k * mb : (k + 1) * mb]
                for k in range(MINIBATCHES)
                for p, mb in zip(parts, mbs, strict=True)
            ]
        )


def _update(net: PolicyNet, batch: Batch, rng, group=None, clone=None, magnet=None) -> dict:
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, eps=1e-5)
    return ppo_update(
        net, opt, batch, epochs=3, num_minibatches=MINIBATCHES, rng=rng, group=group,
        clone=clone, magnet=magnet, **SETTINGS,
    )  # fmt: skip


def _magnet() -> Magnet:
    """A magnet toward a network of other weights than the one trained."""
    torch.manual_seed(7)
    return Magnet(PolicyNet(16), 0.3)


def _clone() -> CloneLoss:
    """A clone term on 30 made-up demonstrations, drawing 8 at each step."""
    rng = np.random.default_rng(9)
    obs = rng.random((3, 10, OBS_SIZE), dtype=np.float32) * (rng.random((3, 10, OBS_SIZE)) < 0.06)
    mask = rng.random((3, 10, 86)) < 0.2
    act = rng.integers(86, size=(3, 10))
    np.put_along_axis(mask, act[..., None], True, -1)
    zeros = np.zeros((3, 10), np.float32)
    return CloneLoss(Demonstrations(obs, mask, act, zeros, zeros > 0), 0.5, 8, rng)


def _join(rank: int, store: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)


def _split_update(rank: int, store: str, out: str, term: str) -> None:
    """Process ``rank`` updates on its share of the batch (the first one with the clone term
    when ``term`` is ``clone``; every process with the same magnet when it is ``magnet``) and
    saves its network and stats."""
    _join(rank, store)
    try:
        net, b = _net_and_batch(sum(SIZES))
        lo = sum(SIZES[:rank])
        part = Batch(*(None if x is None else x[lo : lo + SIZES[rank]] for x in b))
        clone = _clone() if term == "clone" and rank == 0 else None
        magnet = _magnet() if term == "magnet" else None
        rng = np.random.default_rng(rank)
        stats = _update(net, part, rng, ProcessGroup(), clone, magnet)
        torch.save({"model": net.state_dict(), "stats": stats}, f"{out}/{rank}.pt")
        dist.barrier()  # neither tears gloo down while the other may still use it
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("term", ["", "clone", "magnet"], ids=["ppo", "with-clone-term", "magnet"])
def test_update_split_across_processes_is_the_update_on_their_union(tmp_path, term):
    """Also with ``--bc-coef``'s term, held by the first process alone: the summed gradients
    are those of one process's PPO loss on the union plus the term at its full weight; and
    with the magnet term (``--magnet-coef``), held by every process: its mean over the union."""
    tmp.spawn(_split_update, args=(str(tmp_path / "store"), str(tmp_path), term), nprocs=2)
    net, b = _net_and_batch(sum(SIZES))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    clone = _clone() if term == "clone" else None
    stats = _update(
        net, b, _Interleaved(), clone=clone, magnet=_magnet() if term == "magnet" else None
    )
    assert ("loss/clone" in stats) is (term == "clone")
    assert ("loss/magnet_kl" in stats) is (term == "magnet")
    for rank in range(2):
        got = torch.load(tmp_path / f"{rank}.pt", weights_only=True)
        for k, v in net.state_dict().items():
            assert not torch.equal(v, before[k]) or k.startswith("v."), k  # it learned
            torch.testing.assert_close(got["model"][k], v, rtol=1e-4, atol=1e-5, msg=k)
        expected = {k: v for k, v in stats.items() if rank == 0 or k != "loss/clone"}
        assert got["stats"] == pytest.approx(expected, rel=1e-4, abs=1e-5)


def _drifted(rank: int, store: str, out: str) -> None:
    """Process 1 nudges one weight; both processes then check that they agree."""
    _join(rank, store)
    try:
        net, _ = _net_and_batch(4)
        if rank == 1:
            with torch.no_grad():
                net.pi.bias[3] += 1e-4
        try:
            ProcessGroup().check_same_parameters(net)
            message = ""
        except RuntimeError as exc:
            message = str(exc)
        (Path(out) / f"{rank}.txt").write_text(message)
    finally:
        dist.destroy_process_group()


def test_processes_that_drift_apart_are_caught(tmp_path):
    tmp.spawn(_drifted, args=(str(tmp_path / "store"), str(tmp_path)), nprocs=2)
    for rank in range(2):
        text = (tmp_path / f"{rank}.txt").read_text()
        assert "drifted apart: 1 of 2 hold other parameters than process 0" in text


def _small(out, **kw) -> Args:
    base = dict(
        total_decisions=3 * 8 * 16,
        num_envs=8,
        num_steps=16,
        num_minibatches=2,
        update_epochs=2,
        hidden=32,
        eval_opponents="random",
        eval_every=0,
        eval_deals=2,
        save_every=1,
        progress=False,
        out_dir=str(out),
        seed=5,
        processes=2,
        device="cpu",
    )
    return Args(**{**base, **kw})


def test_two_processes_train_save_and_repeat_themselves(tmp_path, one_torch_thread):
    a = train(_small(tmp_path / "a"))
    assert a["decisions"] == 3 * 8 * 16  # both processes' games
    rows = [json.loads(x) for x in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2, 3]
    for r in rows:
        assert 0 < r["train"]["train/trained_decisions"] <= 8 * 16
        assert np.isfinite(r["train"]["loss/policy"])
    assert "random" in rows[-1]["eval"]
    net, ckpt = load_checkpoint(tmp_path / "a" / "latest.pt")
    assert ckpt["args"]["processes"] == 2 and "--processes 2" in ckpt["stages"][-1]["command"]
    train(_small(tmp_path / "b"))
    _, again = load_checkpoint(tmp_path / "b" / "latest.pt")
    for k, v in ckpt["model"].items():
        assert torch.equal(v, again["model"][k]), k  # same seed, same processes: same run
    one = train(_small(tmp_path / "c", processes=1))
    assert one["decisions"] == a["decisions"]
    _, single = load_checkpoint(tmp_path / "c" / "latest.pt")
    assert not torch.equal(single["model"]["pi.bias"], ckpt["model"]["pi.bias"])  # other deals


def test_clone_term_in_the_first_process_only_keeps_the_processes_in_step(tmp_path):
    """``--bc-coef``: the first process holds the demonstrations and adds the clone term to its
    share of each step's loss; the summed gradients keep every process's parameters equal (the
    trainer checks them at each save) and the term is logged."""
    kw = dict(bc_agent="greedy", bc_decisions=256, bc_epochs=1, bc_coef=0.5)
    out = train(_small(tmp_path, **kw))
    assert [r["update"] for r in out["updates"]] == [1, 2, 3]
    assert all(r["train"]["loss/clone"] > 0 for r in out["updates"])


def _failing_process(args: Args, place, job) -> None:
    """A process that joins the group and then fails, as a bug in its share would."""
    from training import distributed, ppo_selfplay

    def fail(*args, **kwargs):
        raise ValueError("planted failure")

    ppo_selfplay.run = fail  # in this process only: it was spawned
    distributed.data_parallel(args, place, job)


def _dying_process(args: Args, place, job) -> None:
    """A process that fails before it joins the group, as a broken import would."""
    raise ImportError("planted failure while starting")


def test_a_process_dying_before_it_joins_ends_the_run_at_once(tmp_path, monkeypatch):
    from training import distributed

    monkeypatch.setattr(distributed, "_other_process", _dying_process)
    start = time.perf_counter()
    with pytest.raises(RuntimeError) as exc:
        train(_small(tmp_path / "run"))
    assert str(exc.value) == (
        "data-parallel training stopped: process 1 (node 0) exited with code 1 before joining "
        "the run"
    )
    assert time.perf_counter() - start < 120  # not the 5 minutes of the join timeout
    assert not list((tmp_path / "run").glob("*.pt"))


def _first_other_dying(args: Args, place, job) -> None:
    """Process 1 fails while starting; the others join as healthy processes do."""
    from training.distributed import data_parallel

    if place.rank == 1:
        raise ImportError("planted failure while starting")
    data_parallel(args, place, job)


def test_with_three_processes_the_healthy_one_is_stopped_not_blamed(tmp_path, monkeypatch):
    from training import distributed

    monkeypatch.setattr(distributed, "_other_process", _first_other_dying)
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="process 1 .node 0. exited with code 1") as exc:
        train(_small(tmp_path / "run", processes=3, num_envs=12))
    assert "process 2" not in str(exc.value)  # waiting to join, stopped: not a failure
    assert time.perf_counter() - start < 60  # not a minute's join per waiting process


def test_a_failing_process_stops_the_run_and_is_named(tmp_path, monkeypatch):
    from training import distributed

    monkeypatch.setattr(distributed, "_other_process", _failing_process)
    with pytest.raises(RuntimeError) as exc:
        train(_small(tmp_path / "run"))
    assert str(exc.value) == (
        "data-parallel training stopped: process 1 (node 0) raised ValueError: planted failure "
        "(exit code 1)"
    )
    assert not list((tmp_path / "run").glob("*.pt"))


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(processes=0), "--processes 0"),
        (dict(processes=3), "--processes 3: must divide --num-envs 8"),
        (dict(num_minibatches=65), "--num-minibatches 65: must be at most"),
    ],
)
def test_bad_process_settings_are_refused_before_any_work(tmp_path, kw, message):
    with pytest.raises(FlagError, match=message):
        train(_small(tmp_path / "run", **kw))
    assert not (tmp_path / "run").exists()


def test_processes_refuse_a_cuda_device(tmp_path, monkeypatch):
    from training import ppo_selfplay

    monkeypatch.setattr(ppo_selfplay, "device_from_flag", lambda flag: torch.device("cuda"))
    with pytest.raises(FlagError, match="data-parallel processes share the CPU's cores"):
        train(_small(tmp_path / "run", device="cuda"))
    assert not (tmp_path / "run").exists()


def test_bench_learner_measures_two_processes(capsys, one_torch_thread):
    from training import bench_learner

    argv = ["--updates", "1", "--num-envs", "4", "--num-steps", "8", "--json"]
    assert bench_learner.main([*argv, "--processes", "2"]) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["settings"]["processes"] == 2 and res["decisions"] == 32
    assert 0 < res["trained_decisions"] <= 32
    with pytest.raises(SystemExit) as exc:
        bench_learner.main([*argv, "--processes", "3"])
    assert exc.value.code == 2
    assert "--processes 3 must divide --num-envs 4" in capsys.readouterr().err
    for flag in ("--updates", "--num-envs", "--num-steps", "--processes"):
        with pytest.raises(SystemExit) as exc:  # all four were named whichever was wrong
            bench_learner.main([*argv, flag, "-1"])
        assert exc.value.code == 2
        assert f"error: {flag} must be >= 1, got -1" in capsys.readouterr().err


def test_a_best_response_with_a_magnet_trains_in_two_processes(tmp_path):
    """``training.best_response`` runs its processes with its own job (one learner seat a game
    against the target in each), a lagged magnet included; the trainer checks the processes'
    parameters equal at each save, and the checkpoints record the best response."""
    from training import best_response

    run = {**vars(_small(tmp_path)), "eval_opponents": "", "magnet_coef": 0.2, "magnet": "lagged",
           "magnet_every": 2}  # fmt: skip
    args = best_response.Args(**run, target="greedy", final_deals=2)
    out = best_response.train(args)
    assert [r["update"] for r in out["updates"]] == [1, 2, 3]
    assert all(r["train"]["loss/magnet_kl"] >= 0 for r in out["updates"])
    _, ckpt = load_checkpoint(tmp_path / "latest.pt")
    assert ckpt["args"]["target"] == "greedy" and ckpt["args"]["processes"] == 2
    assert "training.best_response" in ckpt["stages"][-1]["command"]
    assert out["final"]["sampling"]["deals"] == 2


def test_the_first_process_may_work_on_alone_after_the_others_finished(tmp_path, monkeypatch):
    """Process 0 evaluates, measures and plots after the other processes' shares have ended
    (a best response's final measurement takes minutes); their silence then is no frozen
    process. Here process 0's own watch counts 1 s of silence as frozen, and it works on 4 s."""
    monkeypatch.setattr(distributed, "SILENT", 1.0)
    run = ppo_selfplay.run

    def slow_lead(*args, **kw):
        out = run(*args, **kw)
        if out:  # process 0's results; the spawned process 1 runs the module as it is
            time.sleep(4)
        return out

    monkeypatch.setattr(ppo_selfplay, "run", slow_lead)
    out = train(_small(tmp_path, eval_opponents=""))
    assert out["decisions"] == 3 * 8 * 16
