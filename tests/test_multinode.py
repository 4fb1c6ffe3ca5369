"""Data-parallel training over several machines, simulated on this one: each node is a separate
``python -m training.ppo_selfplay --nnodes 2 --node-rank R`` (or torchrun) process meeting at
127.0.0.1. Their update is the one-process update on the union of their batches, a node that
fails or is killed stops the other within seconds, naming it, and bad launch flags are refused
before any work."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.ppo import PolicyNet, load_checkpoint
from training import distributed, ppo_selfplay
from training.learner import Batch, ppo_update
from training.ppo_selfplay import Args, train

ROOT = Path(__file__).resolve().parent.parent

TINY = [
    "--num-envs", "8", "--num-steps", "16", "--num-minibatches", "2", "--update-epochs", "2",
    "--hidden", "32", "--eval-opponents", "", "--save-every", "1", "--no-progress", "--seed", "5",
    "--device", "cpu", "--bf16", "off",
]  # fmt: skip
UPDATE = 8 * 16  # decisions of one update

RECORD = """
import sys, torch
from training import ppo_selfplay
update = ppo_selfplay.ppo_update
def recorded(net, opt, batch, **kw):
    torch.save(
        {"net": net.state_dict(), "batch": batch._asdict(), "lr": opt.param_groups[0]["lr"],
         "rng": kw["rng"].bit_generator.state, "epochs": kw["epochs"],
         "minibatches": kw["num_minibatches"]},
        f"{sys.argv[1]}/{kw['group'].rank}.pt",
    )
    return update(net, opt, batch, **kw)
ppo_selfplay.ppo_update = recorded
sys.exit(ppo_selfplay.main(sys.argv[2:]))
"""
"""``python -c RECORD FOLDER FLAGS``: the trainer, each process saving the network, batch and
random state it starts its update from to ``FOLDER/<rank>.pt``."""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node(rank: int, port: int, argv: list[str], record: Path | None = None) -> subprocess.Popen:
    """Node ``rank`` of two meeting at 127.0.0.1:``port``, in a session of its own."""
    head = ["-c", RECORD, str(record)] if record else ["-m", "training.ppo_selfplay"]
    where = ["--nnodes", "2", "--node-rank", str(rank), "--master-addr", "127.0.0.1"]
    return _start([sys.executable, *head, *argv, *where, "--master-port", str(port)])


def _start(command: list[str]) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


def _finish(*nodes: subprocess.Popen, timeout: float = 120) -> list[tuple[int, str, str]]:
    """Each node's exit status, stdout and stderr; what is left of them is killed."""
    out = []
    try:
        for node in nodes:
            printed, err = node.communicate(timeout=timeout)
            out.append((node.returncode, printed, err))
    finally:
        for node in nodes:
            try:
                os.killpg(node.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return out


class _Given:
    """``permutation(n)``: the rows in order (the minibatches are already drawn)."""

    @staticmethod
    def permutation(n: int) -> np.ndarray:
        return np.arange(n)


def _union_update(records: list[dict]) -> PolicyNet:
    """The one-process update on the union of the processes' batches, its minibatches drawn
    share by share: minibatch ``k`` of each epoch is the union of every process's ``k``-th,
    drawn as that process draws it (its random state), as many per epoch as the process with
    the fewest decisions has."""
    first = records[0]
    net = PolicyNet(first["net"]["v.weight"].shape[1])
    net.load_state_dict(first["net"])
    opt = torch.optim.Adam(net.parameters(), lr=first["lr"], eps=1e-5)
    batches = [Batch(**r["batch"]) for r in records]
    union = Batch(*(None if x[0] is None else torch.cat(x) for x in zip(*batches, strict=True)))
    sizes = [b.act.numel() for b in batches]
    mbs = [max(1, n // first["minibatches"]) for n in sizes]
    steps = min(n // mb for n, mb in zip(sizes, mbs, strict=True))
    starts = np.cumsum([0, *sizes[:-1]])
    rngs = [np.random.default_rng() for _ in records]
    for rng, r in zip(rngs, records, strict=True):
        rng.bit_generator.state = r["rng"]
    for _ in range(first["epochs"]):
        perms = [rng.permutation(n) + lo for rng, n, lo in zip(rngs, sizes, starts, strict=True)]
        rows = torch.from_numpy(
            np.concatenate(
                [
                    p[k * mb : (k + 1) * mb]
                    for k in range(steps)
                    for p, mb in zip(perms, mbs, strict=True)
                ]
            )
        )
        epoch = Batch(*(None if x is None else x[rows] for x in union))
        ppo_update(
            net, opt, epoch, epochs=1, num_minibatches=steps, rng=_Given(), clip_coef=0.2,
            ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5,
        )  # fmt: skip
    return net


def test_two_nodes_update_as_one_process_on_the_union_of_their_batches(tmp_path):
    """Two launches, node ranks 0 and 1: the parameters after their update are those of one
    process's update on the union of their batches (to float32's rounding: the loss's sums run
    in another order; measured 1e-8 apart, where the update moved them 1e-3), and exactly those
    of ``--processes 2`` on one machine (the same processes). Random pool seats leave the
    nodes unequal shares of the learner's decisions, each weighted by its size."""
    port, out, rec = _port(), tmp_path / "nodes", tmp_path / "record"
    rec.mkdir()
    pool = ["--pool-agents", "random", "--pool-prob", "0.5"]
    argv = [*TINY, *pool, "--total-decisions", str(UPDATE), "--out-dir", str(out)]
    nodes = [_node(rank, port, argv, rec) for rank in (0, 1)]
    (code0, printed0, err0), (code1, printed1, err1) = _finish(*nodes)
    assert code0 == 0 and code1 == 0, err0[-3000:] + err1[-3000:]
    assert f"trained {UPDATE} decisions" in printed0 and printed1 == ""  # node 0 logs, alone
    records = [torch.load(rec / f"{rank}.pt", weights_only=True) for rank in (0, 1)]
    sizes = [r["batch"]["act"].numel() for r in records]
    assert sizes[0] != sizes[1] and all(0 < n <= UPDATE // 2 for n in sizes)
    _, ckpt = load_checkpoint(out / "latest.pt")
    assert ckpt["update"] == 1 and ckpt["decisions"] == UPDATE
    assert ckpt["stages"][-1]["processes"] == 2
    assert "--nnodes 2 --master-addr 127.0.0.1" in ckpt["stages"][-1]["command"]
    one = _union_update(records).state_dict()
    for k, v in one.items():
        assert not torch.equal(v, records[0]["net"][k]), k  # it learned
        torch.testing.assert_close(ckpt["model"][k], v, rtol=1e-5, atol=1e-7, msg=k)
    args = ppo_selfplay.parse_args(Args, [*argv, "--processes", "2"])
    train(Args(**{**vars(args), "out_dir": str(tmp_path / "one-machine")}))
    _, same = load_checkpoint(tmp_path / "one-machine" / "latest.pt")
    for k, v in same["model"].items():
        assert torch.equal(ckpt["model"][k], v), k


def test_a_node_refusing_its_flags_stops_the_other_at_once(tmp_path):
    port, out = _port(), tmp_path / "run"
    argv = [*TINY, "--total-decisions", str(UPDATE), "--out-dir", str(out)]
    start = time.monotonic()
    first = _node(0, port, argv)
    missing = str(tmp_path / "missing.pt")
    (code0, _, err0), (code1, _, err1) = _finish(
        first, _node(1, port, [*argv, "--resume", missing])
    )
    assert time.monotonic() - start < 60  # not the 5 minutes of the join's timeout
    assert code1 == 2 and f"error: --resume '{missing}': no checkpoint file" in err1
    assert code0 == 1
    assert err0.strip().splitlines()[-1] == (
        f"RuntimeError: data-parallel training stopped: process 1 (node 1) raised FlagError: "
        f"--resume '{missing}': no checkpoint file at '{missing}' (exit code 2)"
    )
    assert not out.exists()


def test_nodes_started_with_other_flags_are_stopped_before_training(tmp_path):
    port, out = _port(), tmp_path / "run"
    argv = ["--total-decisions", str(2 * UPDATE), "--out-dir", str(out)]
    other = [*TINY, *argv]
    other[other.index("--num-steps") + 1] = "32"
    (code0, _, err0), (code1, _, err1) = _finish(
        _node(0, port, [*TINY, *argv]), _node(1, port, other)
    )
    says = (
        "data-parallel training stopped: process 1 (node 1) was started with other flags than "
        "process 0: --num-steps 32 (process 0: 16); every node runs the same command but for "
        "--node-rank (and --master-addr)"
    )
    assert code0 == 1 and says in err0, err0[-3000:]
    assert code1 == 1 and says in err1, err1[-3000:]
    assert not list(out.glob("*.pt"))


def _two_training_nodes(tmp_path):
    """Two loopback nodes of a long run, returned once both train (node 0 wrote metrics)."""
    port, out = _port(), tmp_path / "run"
    argv = [*TINY, "--total-decisions", str(1000 * UPDATE), "--out-dir", str(out)]
    nodes = [_node(rank, port, argv) for rank in (0, 1)]
    deadline = time.monotonic() + 60
    while not (out / "metrics.jsonl").exists():
        assert time.monotonic() < deadline and nodes[0].poll() is None, _finish(*nodes)
        time.sleep(0.1)
    return nodes


def test_a_killed_node_stops_the_other_within_seconds(tmp_path):
    """SIGKILL records nothing: the heartbeats name the node that vanished."""
    nodes = _two_training_nodes(tmp_path)
    nodes[1].kill()
    killed = time.monotonic()
    (code0, _, err0), (code1, _, _) = _finish(*nodes)
    assert time.monotonic() - killed < 30, err0[-3000:]
    assert code1 == -signal.SIGKILL
    assert code0 == 1
    assert (
        err0.strip()
        .splitlines()[-1]
        .endswith(
            "data-parallel training stopped: process 1 (node 1) stopped without recording an exit "
            "code: killed (by a signal, or for want of memory), or its machine or network went down"
        )
    )


def test_a_frozen_node_stops_the_other_within_a_minute(tmp_path):
    """SIGSTOP, as a machine that froze or was cut off: no connection closes, and the collective
    call waiting for it would wait for hours; its heartbeats, missing for 30 s, name it. Thawed,
    it finds node 0 gone."""
    nodes = _two_training_nodes(tmp_path)
    os.kill(nodes[1].pid, signal.SIGSTOP)
    frozen = time.monotonic()
    try:
        ((code0, _, err0),) = _finish(nodes[0], timeout=90)
        stopped = time.monotonic() - frozen
    finally:
        os.kill(nodes[1].pid, signal.SIGCONT)
    ((code1, _, err1),) = _finish(nodes[1])
    assert distributed.SILENT < stopped < 60
    says = (
        "data-parallel training stopped: process 1 (node 1) has sent no heartbeat for 30 s: "
        "its process is frozen, or its machine or network is down"
    )
    assert code0 == 1 and says in err0, err0[-3000:]
    assert code1 == 1 and "data-parallel training stopped: the run's store at" in err1


def test_a_resumed_run_takes_another_number_of_processes(tmp_path):
    """One process's checkpoint continues on two nodes, and theirs on one process: the network
    and the optimizer's state carry over, and each stage records its processes."""
    argv = [*TINY, "--total-decisions", str(UPDATE)]
    alone = ppo_selfplay.parse_args(Args, [*argv, "--out-dir", str(tmp_path / "a")])
    train(alone)
    _, first = load_checkpoint(tmp_path / "a" / "latest.pt")
    port, out = _port(), tmp_path / "b"
    more = [*TINY, "--total-decisions", str(2 * UPDATE), "--out-dir", str(out)]
    more += ["--resume", str(tmp_path / "a" / "latest.pt")]
    for code, _, err in _finish(*[_node(rank, port, more) for rank in (0, 1)]):
        assert code == 0, err[-3000:]
    _, second = load_checkpoint(out / "latest.pt")
    assert second["update"] == 2 and [s["processes"] for s in second["stages"]] == [1, 2]
    step = [c["optimizer"]["state"][0]["step"] for c in (first, second)]
    assert 0 < step[0] < step[1]  # Adam's state went on, not started again
    again = {"total_decisions": 3 * UPDATE, "resume": str(out / "latest.pt"), "out_dir": str(out)}
    train(Args(**{**vars(alone), **again}))  # on in its own folder
    _, third = load_checkpoint(out / "latest.pt")
    assert third["update"] == 3 and [s["processes"] for s in third["stages"]] == [1, 2, 1]


@pytest.mark.skipif(shutil.which("torchrun", path=Path(sys.executable).parent) is None,
                    reason="torchrun is not installed beside this Python")  # fmt: skip
def test_torchrun_nodes_train_as_the_flags_nodes_do(tmp_path):
    """``torchrun --nnodes 2 --node-rank R --nproc-per-node 1 -m training.ppo_selfplay``: the
    processes take their places from torchrun's variables, and train the same run."""
    port, out = _port(), tmp_path / "torchrun"
    argv = [*TINY, "--total-decisions", str(UPDATE), "--out-dir", str(out)]
    torchrun = [str(Path(sys.executable).parent / "torchrun"), "--nnodes", "2"]
    where = ["--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port", str(port)]
    nodes = [
        _start([*torchrun, "--node-rank", str(rank), *where, "-m", "training.ppo_selfplay", *argv])
        for rank in (0, 1)
    ]
    for code, _, err in _finish(*nodes):
        assert code == 0, err[-3000:]
    _, ckpt = load_checkpoint(out / "latest.pt")
    assert ckpt["stages"][-1]["processes"] == 2
    assert ckpt["stages"][-1]["command"].startswith(
        f"torchrun --nnodes 2 --nproc-per-node 1 --node-rank 0 --master-addr 127.0.0.1 "
        f"--master-port {port} -m training.ppo_selfplay "
    )
    args = ppo_selfplay.parse_args(Args, [*argv, "--processes", "2"])
    train(Args(**{**vars(args), "out_dir": str(tmp_path / "one-machine")}))
    _, same = load_checkpoint(tmp_path / "one-machine" / "latest.pt")
    for k, v in same["model"].items():
        assert torch.equal(ckpt["model"][k], v), k


TORCHRUN = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


@pytest.mark.parametrize(
    "argv, env, message",
    [
        (["--nnodes", "2"], {}, "--nnodes 2: the nodes meet at node 0, so it needs --master-addr"),
        (["--nnodes", "2", "--master-addr", "127.0.0.1", "--node-rank", "2"], {},
         r"--node-rank 2: must be below --nnodes 2 \(the nodes are numbered 0 to 1\)"),
        (["--node-rank", "1"], {}, "--node-rank 1: places this machine in a run over several "
         "machines, so it needs --nnodes > 1"),
        (["--master-addr", "10.0.0.1"], {}, "--master-addr '10.0.0.1': places this machine"),
        (["--master-port", "1234"], {}, "--master-port 1234: places this machine"),
        (["--nnodes", "2", "--master-addr", "127.0.0.1", "--master-port", "70000"], {},
         "--master-port 70000: must be 1 to 65535"),
        (["--nnodes", "0"], {}, "--nnodes 0: must be an integer >= 1"),
        (["--nnodes", "3", "--master-addr", "127.0.0.1", "--processes", "2"], {},
         r"--num-envs 8: must be a multiple of the run's processes \(--nnodes 3 x --processes 2 "
         r"= 6\) \(each process plays an equal share of the games\)"),
        (["--nnodes", "2", "--master-addr", "127.0.0.1", "--num-minibatches", "65"], {},
         r"--num-minibatches 65: must be at most --num-envs x --num-steps / processes "
         r"\(--nnodes 2 x --processes 1 = 2\) = 64"),
        (["--nnodes", "2", "--master-addr", "no-such-host.invalid"], {},
         "--master-addr 'no-such-host.invalid': this machine cannot resolve it"),
        (["--processes", "2"], TORCHRUN, "--processes 2: RANK and WORLD_SIZE are set, so torchrun"),
        (["--nnodes", "2", "--node-rank", "1"], TORCHRUN,
         "leave out --nnodes, --node-rank$"),
        ([], {**TORCHRUN, "RANK": "2"},
         "environment variable RANK='2': must be an integer from 0 to 1"),
        ([], {**TORCHRUN, "MASTER_ADDR": ""}, "environment variable MASTER_ADDR is not set"),
        ([], {**TORCHRUN, "RANK": "0", "WORLD_SIZE": "3"},
         r"--num-envs 8: must be a multiple of the run's processes \(torchrun's WORLD_SIZE 3\)"),
    ],
)  # fmt: skip
def test_bad_launches_are_refused_before_any_work(tmp_path, monkeypatch, argv, env, message):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = ppo_selfplay.parse_args(Args, [*TINY, *argv, "--out-dir", str(tmp_path / "run")])
    with pytest.raises(ppo_selfplay.FlagError, match=message):
        train(args)
    assert not (tmp_path / "run").exists()


def test_nodes_on_several_machines_need_an_address_gloo_can_be_reached_at(tmp_path, monkeypatch):
    """A host name resolving to a loopback address (Debian's /etc/hosts gives 127.0.1.1) would
    make gloo listen where no other machine reaches it; GLOO_SOCKET_IFNAME names the interface."""
    resolve = {"node0.example": "10.0.0.1", "this-machine": "127.0.1.1"}
    monkeypatch.setattr(socket, "gethostname", lambda: "this-machine")
    monkeypatch.setattr(socket, "gethostbyname", resolve.__getitem__)
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)
    args = Args(nnodes=2, master_addr="node0.example", out_dir=str(tmp_path / "run"))
    with pytest.raises(ppo_selfplay.FlagError, match="set GLOO_SOCKET_IFNAME to the network"):
        distributed.launch(args)
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "eth0")
    assert distributed.launch(args).size == 2
    monkeypatch.delenv("GLOO_SOCKET_IFNAME")
    resolve["this-machine"] = "10.0.0.2"
    assert distributed.launch(args).holds_store


def test_processes_refuse_a_cuda_device_on_several_nodes(tmp_path, monkeypatch):
    monkeypatch.setattr(ppo_selfplay, "device_from_flag", lambda flag: torch.device("cuda"))
    args = Args(nnodes=2, master_addr="127.0.0.1", device="cuda", out_dir=str(tmp_path / "run"))
    with pytest.raises(ppo_selfplay.FlagError, match="--nnodes 2 x --processes 1 = 2: data-para"):
        train(args)
    assert not (tmp_path / "run").exists()
