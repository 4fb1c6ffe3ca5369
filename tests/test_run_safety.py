"""No run or shipped policy is overwritten unless asked, and every file the training tools write
is whole or absent after a kill (issue 33, findings 2, 3, 4, 8 and 11); with two tests that
planted bugs used to slip past: the entropy bonus's sign, and the preset of ship_policy's
arena tables.

The kill tests run a tool in a subprocess whose writes are wrapped (:data:`INJECT`): the Nth
write to a file whose name holds a pattern stores half its data, then the process sends itself
SIGKILL, which no handler sees; what is left on disk must be the old file or the new one.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.ppo import PolicyNet, load_checkpoint, save_checkpoint
from training import curve, ppo_selfplay, sb3_maskable, ship_policy
from training.cli import FlagError
from training.learner import Batch, ppo_update
from zhuoji_env.observation import OBS_SIZE
from zhuoji_env.rules import Rules

ROOT = Path(__file__).resolve().parents[1]

TINY = [
    "--num-envs", "4", "--num-steps", "8", "--hidden", "8", "--num-minibatches", "1",
    "--update-epochs", "1", "--eval-opponents", "", "--save-every", "1", "--no-progress",
]  # fmt: skip
"""A ppo_selfplay run of 32 decisions an update, saving at every update."""

INJECT = r"""
import builtins, io, os, runpy, signal, sys

mode, pattern, nth, module, *argv = sys.argv[1:]
nth, seen = int(nth), [0]


def due():
    seen[0] += 1
    return seen[0] == nth


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def matches(name):
    return pattern in os.path.basename(os.fsdecode(name))


class Cut:
    # a file open for writing whose Nth write (over all matching files) stores half and dies
    def __init__(self, f):
        self._f = f

    def __getattr__(self, key):
        return getattr(self._f, key)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._f.__exit__(*exc)

    def write(self, data):
        if mode == "write" and due():
            self._f.write(data[: len(data) // 2])
            self._f.flush()
            os.fsync(self._f.fileno())
            die()
        return self._f.write(data)


real_open, real_sendfile, real_replace = io.open, os.sendfile, os.replace
cut_fds = set()


def open_(file, mode_="r", *args, **kwargs):
    f = real_open(file, mode_, *args, **kwargs)
    if isinstance(file, (str, bytes, os.PathLike)) and set(mode_) & set("wax+") and matches(file):
        cut_fds.add(f.fileno())
        return Cut(f)
    return f


def sendfile(out_fd, in_fd, offset, count):  # shutil.copyfile's fast path
    if mode == "write" and out_fd in cut_fds and offset == 0 and due():
        real_sendfile(out_fd, in_fd, 0, os.fstat(in_fd).st_size // 2)
        os.fsync(out_fd)
        die()
    return real_sendfile(out_fd, in_fd, offset, count)


def replace(src, dst, **kwargs):
    if mode == "replace" and os.path.basename(os.fsdecode(dst)) == pattern and due():
        die()
    return real_replace(src, dst, **kwargs)


builtins.open = io.open = open_
os.sendfile, os.replace = sendfile, replace

import torch

real_save = torch.save


def save(obj, f, *args, **kwargs):  # torch.save to a path writes from C++, not through open
    if mode == "write" and isinstance(f, (str, os.PathLike)) and matches(f) and due():
        buf = io.BytesIO()
        real_save(obj, buf, *args, **kwargs)
        with real_open(f, "wb") as out:
            out.write(buf.getvalue()[: len(buf.getvalue()) // 2])
            out.flush()
            os.fsync(out.fileno())
        die()
    return real_save(obj, f, *args, **kwargs)


torch.save = save
sys.argv = [module, *argv]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def killed_run(mode: str, pattern: str, nth: int, module: str, argv: list[str]):
    """Run ``python -m module argv`` with :data:`INJECT`: SIGKILL at the ``nth`` write of a file
    named like ``pattern`` (``mode`` 'write'), or just before the ``nth`` rename onto a file
    named ``pattern`` (``mode`` 'replace')."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-c", INJECT, mode, pattern, str(nth), module, *argv],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- finding 2: a fresh run into a folder holding a run -------------------------------------


def test_a_fresh_run_refuses_a_folder_holding_a_run_and_force_replaces_it(tmp_path, capsys):
    run = tmp_path / "A"
    assert ppo_selfplay.main([*TINY, "--total-decisions", "96", "--out-dir", str(run)]) == 0
    before = snapshot(run)
    assert {"latest.pt", "update_3.pt", "metrics.jsonl"} <= set(before)
    capsys.readouterr()
    again = [*TINY, "--total-decisions", "64", "--out-dir", str(run), "--seed", "99"]
    assert ppo_selfplay.main(again) == 2
    err = capsys.readouterr().err
    assert "holds a run (latest.pt, metrics.jsonl, update_1.pt, update_2.pt, update_3.pt)" in err
    assert f"--resume '{run / 'latest.pt'}'" in err and "--force" in err
    assert f"'{tmp_path / 'A-2'}' is free" in err and "Traceback" not in err
    assert snapshot(run) == before  # nothing touched
    # --force deletes the old run first: no update_3.pt of it beside the new run's two
    assert ppo_selfplay.main([*again, "--force"]) == 0
    assert sorted(p.name for p in run.iterdir()) == [
        "latest.pt", "metrics.jsonl", "update_1.pt", "update_2.pt",
    ]  # fmt: skip
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2]
    assert load_checkpoint(run / "latest.pt")[1]["args"]["seed"] == 99


def test_a_resume_continues_only_its_own_run_from_its_newest_checkpoint(tmp_path):
    run, other = tmp_path / "A", tmp_path / "B"
    for folder in (run, other):
        ppo_selfplay.main([*TINY, "--total-decisions", "64", "--out-dir", str(folder)])
    args = ppo_selfplay.parse_args(ppo_selfplay.Args, [*TINY, "--total-decisions", "128"])

    def check(**kw):
        return ppo_selfplay.check_args(ppo_selfplay.Args(**{**vars(args), **kw}))

    check(resume=str(run / "latest.pt"), out_dir=str(run))  # the run goes on in its folder
    check(resume=str(run / "latest.pt"), out_dir=str(tmp_path / "C"))  # or in a new one
    with pytest.raises(FlagError, match=r"later checkpoints \(update_2.pt\).*resume from"):
        check(resume=str(run / "update_1.pt"), out_dir=str(run))
    with pytest.raises(FlagError, match="holds a run .* new --out-dir"):
        check(resume=str(run / "latest.pt"), out_dir=str(other))
    check(resume=str(run / "latest.pt"), out_dir=str(other), force=True)
    assert (other / "update_2.pt").exists()  # check_args deletes nothing; train does
    ppo_selfplay.train(
        ppo_selfplay.Args(**{**vars(args), "resume": str(run / "latest.pt"),
                             "out_dir": str(other), "force": True})
    )  # fmt: skip
    assert sorted(p.name for p in other.glob("update_*.pt")) == ["update_3.pt", "update_4.pt"]


def test_sb3_maskable_refuses_to_overwrite_a_model_zip(tmp_path, capsys):
    out = tmp_path / "sb3"
    out.mkdir()
    (out / "model.zip").write_bytes(b"an earlier run's model")
    argv = [
        "--total-timesteps", "64", "--n-envs", "2", "--n-steps", "32", "--batch-size", "32",
        "--eval-opponents", "", "--device", "cpu", "--out-dir", str(out),
    ]  # fmt: skip
    assert sb3_maskable.main(argv) == 2
    err = capsys.readouterr().err
    assert "holds model.zip of an earlier run" in err and "--force" in err
    assert (out / "model.zip").read_bytes() == b"an earlier run's model"
    assert sb3_maskable.main([*argv, "--force"]) == 0
    assert (out / "model.zip").read_bytes()[:2] == b"PK"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary left


def test_rllib_ppo_refuses_a_folder_holding_a_run(tmp_path):
    pytest.importorskip("ray.rllib", reason="Ray RLlib is not installed (make rllib)")
    from agents.rllib import CHECKPOINT, COMPONENT_LEARNER_GROUP
    from training import rllib_ppo

    out = tmp_path / "run"
    (out / CHECKPOINT / COMPONENT_LEARNER_GROUP).mkdir(parents=True)
    (out / "metrics.jsonl").write_text('{"iteration": 1}\n')
    with pytest.raises(FlagError, match=r"holds a run \(checkpoint, metrics.jsonl\)"):
        rllib_ppo.check_args(rllib_ppo.Args(out_dir=str(out)))
    assert rllib_ppo.main(["--out-dir", str(out)]) == 2
    rllib_ppo.check_args(rllib_ppo.Args(out_dir=str(out), resume=str(out)))  # continues it
    rllib_ppo.check_args(rllib_ppo.Args(out_dir=str(out), force=True))
    assert rllib_ppo.replaced_files(rllib_ppo.Args(out_dir=str(out), force=True)) == [
        out / CHECKPOINT, out / "metrics.jsonl",
    ]  # fmt: skip
    # a checkpoint swap killed between its renames: the old checkpoint is put back
    (out / CHECKPOINT).rename(out / f".{CHECKPOINT}.old")
    rllib_ppo.check_args(rllib_ppo.Args(out_dir=str(out), resume=str(out)))
    assert (out / CHECKPOINT / COMPONENT_LEARNER_GROUP).is_dir()


# --- findings 4 and 2: every write of a run is whole or absent after a SIGKILL ---------------


@pytest.mark.parametrize("target", ["checkpoint", "latest", "metrics"])
def test_a_run_killed_while_writing_leaves_each_file_old_or_new(tmp_path, target):
    pattern = {"checkpoint": "update_", "latest": "latest.pt", "metrics": "metrics.jsonl"}[target]
    run = tmp_path / "run"
    argv = [*TINY, "--total-decisions", "96", "--out-dir", str(run)]
    proc = killed_run("write", pattern, 2, "training.ppo_selfplay", argv)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    first = (run / "update_1.pt").read_bytes()
    load_checkpoint(run / "update_1.pt")
    latest = (run / "latest.pt").read_bytes()
    if target == "checkpoint":  # the second checkpoint was being written: absent, latest old
        assert not (run / "update_2.pt").exists() and latest == first
    else:
        second = (run / "update_2.pt").read_bytes()
        assert latest in (first, second)  # whole: the old copy or the new one
        load_checkpoint(run / "latest.pt")
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["update"] for x in lines] == [1, 2][: len(lines)] and lines


def test_a_folder_is_swapped_whole_and_a_log_appended_whole(tmp_path, monkeypatch):
    """``write_dir_atomic`` (RLlib's checkpoint folder) and ``append_text_atomic`` (metrics)
    under faults: a write that raises leaves the old content; a swap stopped between its two
    renames leaves no folder, and ``recover_dir`` puts the old one back."""
    from zhuoji_env import fileio

    folder = tmp_path / "checkpoint"
    fileio.write_dir_atomic(folder, lambda tmp: (tmp / "state").write_text("old"))

    def failing(tmp):
        (tmp / "state").write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        fileio.write_dir_atomic(folder, failing)
    assert (folder / "state").read_text() == "old" and sorted(os.listdir(tmp_path)) == [
        "checkpoint"
    ]
    real, calls = os.replace, []

    def stop_at_the_second(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as a kill would stop it
        real(src, dst)

    monkeypatch.setattr(fileio.os, "replace", stop_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        fileio.write_dir_atomic(folder, lambda tmp: (tmp / "state").write_text("new"))
    monkeypatch.setattr(fileio.os, "replace", real)
    assert not folder.exists()
    fileio.recover_dir(folder)
    assert (folder / "state").read_text() == "old"
    fileio.write_dir_atomic(folder, lambda tmp: (tmp / "state").write_text("new"))
    assert (folder / "state").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"]
    log = tmp_path / "metrics.jsonl"
    fileio.append_text_atomic(log, "1\n")
    fileio.append_text_atomic(log, "2\n")
    monkeypatch.setattr(Path, "write_bytes", lambda self, data: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        fileio.append_text_atomic(log, "3\n")
    assert log.read_text() == "1\n2\n"


# --- finding 3: ship_policy checks everything first and lands NAME.pt and NAME.json together --


def tiny_checkpoint(path: Path, preset: str = "app", **stage) -> Path:
    """A checkpoint that ship_policy takes as ``ppo-<preset>`` (8 hidden units)."""
    torch.manual_seed(0)
    stages = [
        {"command": "python -m training.ppo_selfplay", "commit": None, "preset": preset,
         "decisions": 64, "seconds": 1.5, **stage},
    ]  # fmt: skip
    rules = Rules.make(preset).to_record()
    save_checkpoint(path, PolicyNet(8), update=1, decisions=64, rules=rules, stages=stages)
    return path


def old_pair(folder: Path, name: str = "ppo-app") -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.pt").write_bytes(b"the shipped weights")
    (folder / f"{name}.json").write_text(json.dumps({"sha256": sha(b"the shipped weights")}))
    return snapshot(folder)


SHIP = ["--name", "ppo-app", "--deals", "1", "--workers", "1"]


def test_ship_policy_checks_every_stage_before_writing_anything(tmp_path, capsys):
    ship = tmp_path / "ship"
    for bad, says in (
        ({"seconds": "n/a"}, "stage 0: 'seconds' is 'n/a', it must be a finite number >= 0"),
        ({"decisions": True}, "'decisions' is True"),
        ({"commit": 7}, "'commit' is 7, it must be a string or null"),
        ({"seconds": float("nan")}, "'seconds' is nan"),
    ):
        ckpt = tiny_checkpoint(tmp_path / "c.pt", **bad)
        with pytest.raises(SystemExit) as exit_:
            ship_policy.main(["--checkpoint", str(ckpt), *SHIP, "--out-dir", str(ship)])
        assert exit_.value.code == 2
        assert says in capsys.readouterr().err
        assert not ship.exists()  # nothing written, not even the folder
    before = old_pair(ship)
    ckpt = tiny_checkpoint(tmp_path / "c.pt", seconds="n/a")
    with pytest.raises(SystemExit):
        ship_policy.main(["--checkpoint", str(ckpt), *SHIP, "--out-dir", str(ship), "--force"])
    assert snapshot(ship) == before


def test_ship_policy_replaces_a_shipped_pair_only_with_force(tmp_path, capsys):
    ckpt = tiny_checkpoint(tmp_path / "c.pt")
    ship = tmp_path / "ship"
    before = old_pair(ship)
    argv = ["--checkpoint", str(ckpt), *SHIP, "--out-dir", str(ship)]
    with pytest.raises(SystemExit) as exit_:
        ship_policy.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "holds ppo-app.pt and ppo-app.json (the shipped ppo-app): pass --force" in err
    assert snapshot(ship) == before
    assert ship_policy.main([*argv, "--force"]) == 0
    record = json.loads((ship / "ppo-app.json").read_text())
    assert record["sha256"] == sha((ship / "ppo-app.pt").read_bytes())
    assert sorted(p.name for p in ship.iterdir()) == ["ppo-app.json", "ppo-app.pt"]


@pytest.mark.parametrize(
    "when, replacing",
    [("writing the json", False), ("writing the json", True), ("between the renames", True)],
)
def test_ship_policy_killed_leaves_the_old_pair_or_one_it_finishes(tmp_path, when, replacing):
    ckpt = tiny_checkpoint(tmp_path / "c.pt")
    ship = tmp_path / "ship"
    ship.mkdir()
    before = old_pair(ship) if replacing else {}
    argv = ["--checkpoint", str(ckpt), *SHIP, "--out-dir", str(ship)]
    argv += ["--force"] if replacing else []
    if when == "writing the json":
        proc = killed_run("write", "ppo-app.json", 1, "training.ship_policy", argv)
    else:
        proc = killed_run("replace", "ppo-app.json", 1, "training.ship_policy", argv)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    if when == "writing the json":  # neither file touched: the old pair, or none
        assert {n: b for n, b in snapshot(ship).items() if not n.startswith(".")} == before
        assert "deleted the staged files" in ship_policy.finish_interrupted(ship, "ppo-app")
        assert snapshot(ship) == before
    else:  # the new .pt landed, the .json not yet: the next ship finishes the pair
        pt, js = (ship / "ppo-app.pt").read_bytes(), (ship / "ppo-app.json").read_bytes()
        assert pt != before["ppo-app.pt"] and js == before["ppo-app.json"]
        assert "finished an interrupted ship" in ship_policy.finish_interrupted(ship, "ppo-app")
        record = json.loads((ship / "ppo-app.json").read_text())
        assert record["sha256"] == sha(pt) and record["file"] == "ppo-app.pt"
    assert not [p.name for p in ship.iterdir() if p.name.startswith(".")]


def test_ship_policy_plays_its_tables_under_the_checkpoints_preset(tmp_path, monkeypatch):
    """A planted bug played every table under guiyang whatever the checkpoint's preset."""
    ckpt = tiny_checkpoint(tmp_path / "c.pt", preset="classic")
    played = []
    real = ship_policy.against_each

    def spy(agent, label, opponents, deals, seed, rules, workers=1):
        played.append(Rules.make(rules).to_record())
        return real(agent, label, opponents, deals, seed, rules, workers)

    monkeypatch.setattr(ship_policy, "against_each", spy)
    argv = ["--checkpoint", str(ckpt), "--name", "ppo-classic", "--deals", "1", "--workers", "1"]
    assert ship_policy.main([*argv, "--out-dir", str(tmp_path / "ship")]) == 0
    classic = Rules.make("classic").to_record()
    assert played == [classic] * len(ship_policy.PLAYS)
    record = json.loads((tmp_path / "ship" / "ppo-classic.json").read_text())
    for tables in record["arena"]["against"].values():
        for table in tables.values():
            assert table["summary"]["rules"] == classic and table["summary"]["preset"] == "classic"
    assert all("--preset classic" in c for c in record["arena"]["commands"])


# --- finding 8: sizes checked against memory before anything is allocated ---------------------


def test_a_run_too_large_for_memory_is_refused_before_any_allocation(tmp_path, capsys):
    huge = ppo_selfplay.Args(num_envs=100_000_000, out_dir=str(tmp_path / "run"))
    with pytest.raises(FlagError, match=r"--num-envs 100000000 x --num-steps 128 needs about"):
        ppo_selfplay.check_args(huge)
    assert ppo_selfplay.main(["--num-envs", "100000000", "--out-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "GiB of memory, more than the" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_the_memory_estimate_follows_the_sizes(tmp_path, monkeypatch):
    args = ppo_selfplay.Args(out_dir=str(tmp_path / "run"))
    need = ppo_selfplay.memory_needed(args, OBS_SIZE)
    double = ppo_selfplay.Args(num_envs=512, out_dir=str(tmp_path / "run"))
    assert ppo_selfplay.memory_needed(double, OBS_SIZE) == 2 * need
    assert need > 256 * 2 * 128 * 4 * OBS_SIZE  # at least the rollout's observations
    monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", str(need - 1))
    with pytest.raises(FlagError, match="needs about"):
        ppo_selfplay.check_args(args)
    monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", str(need))
    ppo_selfplay.check_args(args)
    monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", "lots")
    with pytest.raises(FlagError, match="ZHUOJI_MEMORY_LIMIT='lots'"):
        ppo_selfplay.check_args(args)


# --- finding 11: training.curve checks everything before playing ------------------------------


@pytest.fixture
def no_games(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a game was played before every input was checked")

    monkeypatch.setattr(curve, "against_each", refuse)


def curve_run(folder: Path, *decisions: int) -> None:
    for k, d in enumerate(decisions, 1):
        tiny_checkpoint(folder / f"update_{k}.pt")
        ckpt = torch.load(folder / f"update_{k}.pt", weights_only=True)
        ckpt["decisions"] = d
        torch.save(ckpt, folder / f"update_{k}.pt")


def edit(path: Path, **changes) -> None:
    ckpt = torch.load(path, weights_only=True)
    for key, value in changes.items():
        if value is None:
            del ckpt[key]
        else:
            ckpt[key] = value
    torch.save(ckpt, path)


@pytest.mark.parametrize(
    "change, says",
    [
        ({"decisions": None}, "update_2.pt: its 'decisions' is None"),
        ({"decisions": "many"}, "update_2.pt: its 'decisions' is 'many'"),
        ({"rules": {"preset": "nowhere"}}, "update_2.pt: its rules {'preset': 'nowhere'}"),
        ({"rules": None}, "update_2.pt: records no rules"),
    ],
)
def test_curve_refuses_a_bad_checkpoint_before_measuring_any(
    tmp_path, capsys, no_games, change, says
):
    run = tmp_path / "run"
    run.mkdir()
    curve_run(run, 64, 128)
    edit(run / "update_2.pt", **change)
    with pytest.raises(SystemExit) as exit_:
        curve.main([str(run), "--out", str(tmp_path / "c.png")])
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "c.png").exists()


def test_curve_refuses_an_out_it_cannot_write_before_measuring(tmp_path, capsys, no_games):
    run = tmp_path / "run"
    run.mkdir()
    curve_run(run, 64)
    for out, says in (
        (tmp_path / "x.pt", "the suffix names the picture's format, one of"),
        (tmp_path / "nosuffix", "the suffix names the picture's format"),
        (tmp_path / "nowhere" / "c.png", "is not a folder"),
    ):
        with pytest.raises(SystemExit) as exit_:
            curve.main([str(run), "--out", str(out)])
        assert exit_.value.code == 2 and says in capsys.readouterr().err
    (tmp_path / "c.json").mkdir()
    with pytest.raises(SystemExit):
        curve.main([str(run), "--out", str(tmp_path / "c.png")])
    assert "c.json' is a folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        curve.main([str(run), "--opponent", "nobody", "--out", str(tmp_path / "d.png")])
    assert "unknown agent spec 'nobody'" in capsys.readouterr().err


# --- the entropy bonus's sign (training/learner.py) ------------------------------------------


def test_the_entropy_bonus_alone_raises_the_entropy_by_a_gradient_ascent_step(one_torch_thread):
    """With zero advantages and no value loss, one plain SGD step of ``ppo_update`` moves every
    parameter by ``lr x ent_coef x`` the gradient of the policy's mean entropy: up, never down
    (a flipped sign moves it the other way). The expected step is computed here by autograd on
    a copy of the network, densely, with the masked entropy written out."""
    torch.manual_seed(3)
    net = PolicyNet(8)
    with torch.no_grad():  # a peaked policy, far from the uniform one's maximal entropy
        net.pi.bias.copy_(3 * torch.randn(86))
    rng = np.random.default_rng(3)
    n = 24
    obs = torch.from_numpy((rng.random((n, OBS_SIZE)) < 0.05).astype(np.float32))
    mask = torch.from_numpy(rng.random((n, 86)) < 0.3)
    mask[:, 0] = True
    act = torch.from_numpy(np.array([int(np.flatnonzero(m)[0]) for m in mask.numpy()]))

    def entropy(model):
        logits, _ = model(obs, mask)
        p = torch.softmax(logits, -1)
        return -(p * torch.log_softmax(logits, -1)).where(mask, 0.0).sum(-1).mean()

    ref = copy.deepcopy(net)
    before = entropy(ref)
    grads = torch.autograd.grad(before, list(ref.parameters()), allow_unused=True)
    lr, coef = 0.5, 0.3
    expected = [
        p.detach() + (0 if g is None else lr * coef * g)
        for p, g in zip(ref.parameters(), grads, strict=True)
    ]
    with torch.no_grad():
        logits, value = net(obs, mask)
        logp = torch.log_softmax(logits, -1).gather(-1, act[:, None]).squeeze(-1)
    zeros = torch.zeros(n)
    stats = ppo_update(
        net,
        torch.optim.SGD(net.parameters(), lr=lr),
        Batch(obs, mask, act, logp, zeros, value, value),
        epochs=1,
        num_minibatches=1,
        clip_coef=0.2,
        ent_coef=coef,
        vf_coef=0.0,
        max_grad_norm=1e9,
        rng=np.random.default_rng(0),
    )
    assert stats["loss/entropy"] == pytest.approx(before.item(), rel=1e-5)
    for got, want in zip(net.parameters(), expected, strict=True):
        torch.testing.assert_close(got.detach(), want, rtol=1e-5, atol=1e-7)
    with torch.no_grad():
        assert entropy(net) > before + 1e-3
