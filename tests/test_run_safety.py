"""No run or shipped policy is overwritten unless asked, and every file the training tools write
is whole or absent after a kill (issue 33, findings 2, 3, 4, 8 and 11); with two tests that
planted bugs used to slip past: the entropy bonus's sign, and the preset of ship_policy's
arena tables.

The kill tests run a tool in a subprocess whose writes are wrapped (:data:`INJECT`): the Nth
write to a file whose name holds a pattern stores half its data, then the process sends itself
SIGKILL, which no handler sees; what is left on disk must be the old file or the new one.

Also, from the review of that fix: every trainer's sizes checked before any work (and
bench_learner's, in its own flags), a resumed run's metrics cut back to its checkpoint,
training.curve's outputs replaced only with --force, a --stages file nested too deeply, the
two-node simulation's earlier run kept, and kills during sb3_maskable's, training.curve's and
rllib_ppo's writes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from json_helpers import strict_json

from agents.ppo import PolicyNet, load_checkpoint, save_checkpoint
from training import curve, ppo_selfplay, sb3_maskable, ship_policy
from training.cli import FlagError
from training.learner import Batch, ppo_update
from zhuoji_env import fileio
from zhuoji_env.observation import OBS_SIZE
from zhuoji_env.rules import Rules

ROOT = Path(__file__).resolve().parents[1]

TINY = [
    "--num-envs", "4", "--num-steps", "8", "--hidden", "8", "--num-minibatches", "1",
    "--update-epochs", "1", "--eval-opponents", "", "--save-every", "1", "--no-progress",
]  # fmt: skip
"""A ppo_selfplay run of 32 decisions an update, saving at every update."""

INJECT = r"""
import builtins, io, os, pathlib, runpy, signal, sys

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
    writing = isinstance(file, (str, bytes, os.PathLike)) and set(mode_) & set("wax+")
    if mode == "write" and writing and matches(file):
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
if hasattr(pathlib, "_NormalAccessor"):  # Python 3.10: Path.open calls the io.open it bound
    pathlib._NormalAccessor.open = staticmethod(open_)
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

import zhuoji_env.fileio as fileio

real_write_atomic = fileio.write_atomic


def write_atomic(path, write):  # mode 'callback': the Nth write leaves half its file, then dies
    if mode != "callback" or not matches(path) or not due():
        return real_write_atomic(path, write)

    def cut(tmp):
        write(tmp)
        with real_open(tmp, "r+b") as f:
            f.truncate(os.fstat(f.fileno()).st_size // 2)
            os.fsync(f.fileno())
        die()

    return real_write_atomic(path, cut)


fileio.write_atomic = write_atomic
sys.argv = [module, *argv]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def killed_run(mode: str, pattern: str, nth: int, module: str, argv: list[str]):
    """Run ``python -m module argv`` with :data:`INJECT`: SIGKILL at the ``nth`` write of a file
    named like ``pattern`` (``mode`` 'write'), just before the ``nth`` rename onto a file named
    ``pattern`` (``mode`` 'replace'), or once the ``nth`` :func:`zhuoji_env.fileio.write_atomic`
    to a file named like ``pattern`` has written half its temporary file (``mode`` 'callback':
    for writers that take no wrapped file object, such as SB3's and matplotlib's).

    The tool runs in a process group of its own, which is killed afterwards: a killed
    ``training.rllib_ppo`` leaves agents of its local Ray behind."""
    with subprocess.Popen(
        [sys.executable, "-c", INJECT, mode, pattern, str(nth), module, *argv],
        cwd=ROOT, env=tool_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    ) as proc:  # fmt: skip
        try:
            out, err = proc.communicate(timeout=300)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # nothing of it left
                pass
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def tool_env() -> dict[str, str]:
    """The environment of a tool run in a subprocess: this checkout first on the import path."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


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
        ({"seconds": "n/a"}, "stages[0]['seconds'] is 'n/a': must be a finite number >= 0"),
        ({"decisions": True}, "stages[0]['decisions'] is True"),
        ({"commit": 7}, "stages[0]['commit'] is 7: must be a string or null"),
        ({"seconds": float("nan")}, "stages[0]['seconds'] is nan"),
        ({"command": "python -m training.ppo_selfplay --reward-scale=0"}, "--reward-scale is 0.0"),
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


def test_ship_policy_refuses_stages_whose_scale_is_not_the_trained_one(tmp_path, capsys):
    """A shipped file keeps its stages, not its arguments: a last command whose --reward-scale
    differs from the one trained with would have the search read its values at the wrong
    scale."""
    ckpt = tiny_checkpoint(tmp_path / "c.pt")
    saved = torch.load(ckpt, weights_only=True)
    saved["args"] = {"reward_scale": 0.5}
    torch.save(saved, ckpt)
    ship = tmp_path / "ship"
    with pytest.raises(SystemExit) as exit_:
        ship_policy.main(["--checkpoint", str(ckpt), *SHIP, "--out-dir", str(ship)])
    assert exit_.value.code == 2
    assert "--reward-scale gives 0.1, but" in capsys.readouterr().err
    assert not ship.exists()


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
        assert {n: b for n, b in snapshot(ship).items() if n != fileio.LOCK_NAME} == before
    else:  # the new .pt landed, the .json not yet: the next ship finishes the pair
        pt, js = (ship / "ppo-app.pt").read_bytes(), (ship / "ppo-app.json").read_bytes()
        assert pt != before["ppo-app.pt"] and js == before["ppo-app.json"]
        assert "finished an interrupted ship" in ship_policy.finish_interrupted(ship, "ppo-app")
        record = json.loads((ship / "ppo-app.json").read_text())
        assert record["sha256"] == sha(pt) and record["file"] == "ppo-app.pt"
    left = [p.name for p in ship.iterdir() if p.name.startswith(".")]
    assert left in ([], [fileio.LOCK_NAME])  # the lock file a killed ship leaves, unlocked


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
    match = r"--num-envs 100000000 x --num-steps 128 with a network of width 256 needs about"
    with pytest.raises(FlagError, match=match):
        ppo_selfplay.check_args(huge)
    assert ppo_selfplay.main(["--num-envs", "100000000", "--out-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "GiB of memory, more than the" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_the_memory_estimate_follows_the_sizes(tmp_path, monkeypatch):
    args = ppo_selfplay.Args(out_dir=str(tmp_path / "run"))
    need = ppo_selfplay.memory_needed(args, OBS_SIZE)
    double = ppo_selfplay.Args(num_envs=2 * args.num_envs, out_dir=str(tmp_path / "run"))
    # the games, the rollout and a minibatch's activations double; the weights do not
    weights = sum(p.numel() for p in PolicyNet(256).parameters())
    fixed = 4 * 4 * weights  # the weights, their gradients and Adam's two moments
    assert ppo_selfplay.memory_needed(double, OBS_SIZE) - fixed == 2 * (need - fixed)
    assert need > args.num_envs * 2 * 128 * 4 * OBS_SIZE  # at least the rollout's observations
    pool = ppo_selfplay.Args(pool_size=3, out_dir=str(tmp_path / "run"))
    assert ppo_selfplay.memory_needed(pool, OBS_SIZE) - need == 3 * 4 * weights  # snapshots
    wide = ppo_selfplay.memory_needed(args, OBS_SIZE, hidden=300_000)
    assert wide > 4 * 4 * 300_000**2  # the 300,000 x 300,000 layer, four times
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
        ({"decisions": "many"}, "update_2.pt: 'decisions' is 'many': must be an integer >= 0"),
        ({"rules": {"preset": "nowhere"}}, "update_2.pt: 'rules' is {'preset': 'nowhere'}: must"),
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


@pytest.mark.parametrize("flag", ["--deals", "--workers"])
@pytest.mark.parametrize("main", [curve.main, ship_policy.main], ids=["curve", "ship_policy"])
def test_curve_and_ship_policy_name_the_count_flag_below_1(tmp_path, capsys, main, flag):
    """Checked before any checkpoint is read: the folder and checkpoint given do not exist."""
    argv = [str(tmp_path / "run"), "--out", str(tmp_path / "c.png")]
    if main is ship_policy.main:
        argv = ["--checkpoint", str(tmp_path / "no.pt"), *SHIP]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, flag, "0"])
    assert exit_.value.code == 2
    assert f"error: {flag} must be >= 1, got 0" in capsys.readouterr().err


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


# --- the review of the fix: sizes in every trainer's flags, checked before any work ----------

SB3_TINY = [
    "--total-timesteps", "64", "--n-envs", "2", "--n-steps", "32", "--batch-size", "32",
    "--eval-opponents", "", "--device", "cpu",
]  # fmt: skip
"""An sb3_maskable run of 64 decisions."""

TOO_LARGE = [
    (ppo_selfplay, ["--hidden", "300000"], "--num-envs 64 x --num-steps 128 with --hidden 300000"),
    (
        ppo_selfplay,
        [*TINY, "--eval-opponents", "random", "--eval-deals", "1000000000000"],
        "--eval-deals 1000000000000",
    ),
    (sb3_maskable, ["--n-steps", "100000000"], "--n-envs 512 x --n-steps 100000000"),
    (sb3_maskable, ["--n-envs", "100000000"], "--n-envs 100000000 x --n-steps 16"),
    (
        sb3_maskable,
        [*SB3_TINY, "--eval-opponents", "random", "--eval-deals", "1000000000000"],
        "--eval-deals 1000000000000",
    ),
]


@pytest.mark.parametrize(
    "script, argv, says",
    TOO_LARGE,
    ids=[f"{s.__name__.split('.')[-1]} {' '.join(a[-2:])}" for s, a, _ in TOO_LARGE],
)
def test_sizes_too_large_for_memory_exit_2_before_any_work(tmp_path, capsys, script, argv, says):
    """Each ended in a traceback (torch's or numpy's allocation, or the arena's SizeError after
    training) instead of the estimate and the limit."""
    out = tmp_path / "run"
    assert script.main([*argv, "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"error: {says} needs about" in err and "GiB of memory, more than the" in err
    assert "Traceback" not in err and not out.exists()


def test_rllib_ppo_checks_eval_deals_against_memory(tmp_path, capsys):
    pytest.importorskip("ray.rllib", reason="Ray RLlib is not installed (make rllib)")
    from training import rllib_ppo

    args = rllib_ppo.Args(eval_deals=10**12, out_dir=str(tmp_path / "run"))
    with pytest.raises(FlagError, match="--eval-deals 1000000000000 needs about .* GiB"):
        rllib_ppo.check_args(args)
    assert rllib_ppo.main(["--eval-deals", str(10**12), "--out-dir", str(tmp_path / "run")]) == 2
    assert "--eval-deals 1000000000000 needs about" in capsys.readouterr().err
    rllib_ppo.check_args(rllib_ppo.Args(eval_deals=10**12, eval_opponents="", out_dir=args.out_dir))


def test_rllib_ppo_checks_its_runners_and_batch_against_memory_and_answers_ctrl_c(
    tmp_path, capsys, monkeypatch
):
    """Env runners and learners are processes, each importing torch: a thousand of them were
    started unchecked. Ctrl-C ended in a traceback."""
    pytest.importorskip("ray.rllib", reason="Ray RLlib is not installed (make rllib)")
    from training import rllib_ppo

    out = str(tmp_path / "run")
    monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", str(1 << 30))
    with pytest.raises(ValueError, match="--num-env-runners 1000 x --envs-per-runner 32 .* needs"):
        rllib_ppo.check_args(rllib_ppo.Args(num_env_runners=1000, eval_deals=0, out_dir=out))
    assert rllib_ppo.main(["--train-batch", str(10**8), "--eval-deals", "0", "--out-dir", out]) == 2
    assert f"--train-batch {10**8} and --hidden 256 needs about" in capsys.readouterr().err
    monkeypatch.delenv("ZHUOJI_MEMORY_LIMIT")

    def stop(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(rllib_ppo, "train", stop)
    assert rllib_ppo.main(["--eval-deals", "0", "--out-dir", out]) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (
        "python -m training.rllib_ppo: interrupted: nothing was saved; start again with: "
        f"python -m training.rllib_ppo --eval-deals 0 --out-dir {out}"
    )


def test_bench_learner_reports_a_bad_size_in_its_own_flags(capsys):
    from training import bench_learner

    for argv, says in (
        (["--num-envs", "100000000"], "--num-envs 100000000 x --num-steps 128 with a network"),
        (["--num-envs", "1", "--num-steps", "4"], "--num-envs 1 x --num-steps 4 / --processes 1"),
    ):
        with pytest.raises(SystemExit) as exit_:
            bench_learner.main(argv)
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and says in err, err
        assert "--num-minibatches" not in err and "--hidden" not in err  # not its flags


# --- a resumed run's metrics: no row past its checkpoint's update ----------------------------


def test_a_resume_drops_the_metrics_rows_its_checkpoint_never_reached(tmp_path, capsys):
    """metrics.jsonl gets a row per update, a checkpoint only every --save-every: a run killed
    after logging update 3 but before saving it resumed from update 2 and logged update 3 again
    (the review's updates 1, 2, 3, 4, 4, 5, 6)."""
    run = tmp_path / "run"
    argv = [*TINY, "--save-every", "2", "--out-dir", str(run)]
    assert ppo_selfplay.main([*argv, "--total-decisions", "96"]) == 0  # saves updates 2 and 3
    (run / "update_3.pt").unlink()  # as if killed after logging update 3, before saving it
    (run / "latest.pt").write_bytes((run / "update_2.pt").read_bytes())
    rows = (run / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["update"] for x in rows] == [1, 2, 3]
    capsys.readouterr()
    resume = ["--resume", str(run / "latest.pt"), "--total-decisions", "128"]
    assert ppo_selfplay.main([*argv, *resume]) == 0
    assert "metrics.jsonl: dropped 1 row(s) past update 2" in capsys.readouterr().out
    again = (run / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["update"] for x in again] == [1, 2, 3, 4]
    assert again[:2] == rows[:2] and again[2] != rows[2]  # update 3 as the resumed run logged it
    # a resume into another folder leaves the checkpoint's own log alone
    other = tmp_path / "other"
    branch = ["--resume", str(run / "update_2.pt"), "--total-decisions", "128"]
    assert ppo_selfplay.main([*TINY, "--out-dir", str(other), *branch]) == 0
    assert (run / "metrics.jsonl").read_text().splitlines() == again


# --- training.curve: its picture and JSON replaced only with --force -------------------------


def fake_measure(calls: list):
    """A stand-in for ``curve.measure`` that records its calls and measures nothing."""

    def measure(points, opponent, deals, seed, workers):
        calls.append(points)
        margin = {"margin": 0.5, "margin_ci95": [0.0, 1.0]}
        return [
            {"decisions": d, "checkpoint": str(p), "sampling": margin, "argmax": margin}
            for d, p, _ in points
        ]

    return measure


@pytest.mark.parametrize("existing", ["c.png", "c.json"])
def test_curve_refuses_to_replace_its_outputs_without_force(
    tmp_path, capsys, monkeypatch, existing
):
    """``--out recs/x.png`` used to replace ``recs/x.json`` without a word."""
    run = tmp_path / "run"
    run.mkdir()
    curve_run(run, 64)
    calls = []
    monkeypatch.setattr(curve, "measure", fake_measure(calls))
    (tmp_path / existing).write_bytes(b"an earlier file")
    (tmp_path / "c-2.json").write_bytes(b"taken too")
    argv = [str(run), "--out", str(tmp_path / "c.png")]
    with pytest.raises(SystemExit) as exit_:
        curve.main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and not calls  # refused before any work
    assert f"would replace '{tmp_path / existing}', already there" in err
    assert f"another --out ('{tmp_path / 'c-3.png'}' is free), or --force to replace it" in err
    assert (tmp_path / existing).read_bytes() == b"an earlier file"
    assert not (tmp_path / ({"c.png", "c.json"} - {existing}).pop()).exists()
    assert curve.main([*argv, "--force"]) == 0 and len(calls) == 1
    assert json.loads((tmp_path / "c.json").read_text())["points"][0]["decisions"] == 64
    assert (tmp_path / "c.png").read_bytes().startswith(b"\x89PNG")


# --- ship_policy: a --stages file nested too deeply ------------------------------------------


def test_ship_policy_refuses_stages_nested_too_deeply(tmp_path, capsys):
    ckpt = tiny_checkpoint(tmp_path / "c.pt")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    ship = tmp_path / "ship"
    with pytest.raises(SystemExit) as exit_:
        ship_policy.main(
            ["--checkpoint", str(ckpt), *SHIP, "--stages", str(deep), "--out-dir", str(ship)]
        )
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"--stages {deep}: arrays or objects nested too deeply to read" in err
    assert "Traceback" not in err and not ship.exists()


# --- the two-node simulation never deletes an earlier run -----------------------------------


def test_the_two_node_simulation_refuses_to_replace_an_earlier_run(tmp_path, capsys, monkeypatch):
    """It used to ``shutil.rmtree(OUT_DIR/run)`` before starting."""
    pytest.importorskip("ray.rllib", reason="Ray RLlib is not installed (make rllib)")
    from training import rllib_two_nodes

    def refuse(*args, **kwargs):
        raise AssertionError("a node was started before the folder was checked")

    monkeypatch.setattr(rllib_two_nodes, "start_node", refuse)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.jsonl").write_text('{"iteration": 1}\n')
    with pytest.raises(SystemExit) as exit_:
        rllib_two_nodes.main(["--out-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "holds an earlier simulation's run" in err
    assert f"'{tmp_path}-2' is free), or pass --force to replace it" in err
    assert (tmp_path / "run" / "metrics.jsonl").read_text() == '{"iteration": 1}\n'
    assert sorted(os.listdir(tmp_path)) == ["run"]  # no log written
    with pytest.raises(AssertionError, match="a node was started"):  # --force goes ahead
        rllib_two_nodes.main(["--out-dir", str(tmp_path), "--force"])


# --- kills during sb3_maskable's, training.curve's and rllib_ppo's writes --------------------


@pytest.mark.parametrize("mode", ["callback", "replace"])
def test_sb3_maskable_killed_while_replacing_model_zip_leaves_the_old_one(tmp_path, mode):
    """Killed with half the new model written, or just before its rename: the old model.zip."""
    out = tmp_path / "sb3"
    out.mkdir()
    (out / "model.zip").write_bytes(b"an earlier run's model")
    argv = [*SB3_TINY, "--force", "--out-dir", str(out)]
    proc = killed_run(mode, "model.zip", 1, "training.sb3_maskable", argv)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    assert (out / "model.zip").read_bytes() == b"an earlier run's model"
    kept = ("model.zip", fileio.LOCK_NAME)  # the lock a killed run leaves, unlocked
    (left,) = [p for p in out.iterdir() if p.name not in kept]  # the hidden new one
    assert left.name.startswith(".model.zip.") and left.read_bytes()[:2] == b"PK"


@pytest.mark.parametrize("target", ["c.png", "c.json"])
def test_curve_killed_while_writing_leaves_each_output_old_or_new(tmp_path, target):
    """Killed with half of the picture written (the JSON not begun), or with the picture in
    place and half of the JSON written: each file is the old one or the whole new one."""
    run = tmp_path / "run"
    run.mkdir()
    curve_run(run, 64)
    (tmp_path / "c.png").write_bytes(b"the old picture")
    (tmp_path / "c.json").write_bytes(b'{"the old": "numbers"}\n')
    argv = [str(run), "--out", str(tmp_path / "c.png"), "--deals", "1", "--force"]
    proc = killed_run("callback", target, 1, "training.curve", argv)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    assert (tmp_path / "c.json").read_bytes() == b'{"the old": "numbers"}\n'
    picture = (tmp_path / "c.png").read_bytes()
    if target == "c.png":
        assert picture == b"the old picture"
    else:  # the new picture, whole: PNG's last chunk is IEND and its CRC
        assert picture.startswith(b"\x89PNG") and picture.endswith(b"IEND\xaeB`\x82")


def test_rllib_ppo_killed_between_the_checkpoint_renames_keeps_the_old_one(tmp_path):
    """The checkpoint folder's swap killed between its two renames (the old folder parked, the
    new one not in place): the next start puts the old one back, whole, and a resume in the
    folder drops the metrics row of the iteration that checkpoint never reached."""
    pytest.importorskip("ray.rllib", reason="Ray RLlib is not installed (make rllib)")
    from agents.rllib import CHECKPOINT, RLlibAgent

    run = tmp_path / "run"
    small = [
        "--envs-per-runner=4", "--train-batch=256", "--minibatch=256", "--epochs=1",
        "--hidden=16", "--eval-deals=0", "--num-env-runners=0", f"--out-dir={run}",
    ]  # fmt: skip
    # iteration 1 saves (one rename onto checkpoint); iteration 2's swap is killed before its
    # second rename onto it
    proc = killed_run(
        "replace", CHECKPOINT, 2, "training.rllib_ppo", [*small, "--iterations=2", "--save-every=1"]
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    parked = run / f".{CHECKPOINT}.old"
    assert not (run / CHECKPOINT).exists() and parked.is_dir()
    old = {p.relative_to(parked): p.read_bytes() for p in parked.rglob("*") if p.is_file()}
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2]
    resumed = subprocess.run(
        [sys.executable, "-m", "training.rllib_ppo", *small, "--iterations=1", f"--resume={run}"],
        cwd=ROOT, env=tool_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "metrics.jsonl: dropped 1 row(s) past iteration 1" in resumed.stdout
    again = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in again] == [1, 2] and again[0] == rows[0]
    assert again[1]["seconds"] != rows[1]["seconds"]  # iteration 2 as the resumed run logged it
    assert not parked.exists()
    new = {p.relative_to(run / CHECKPOINT) for p in (run / CHECKPOINT).rglob("*") if p.is_file()}
    assert new == set(old)  # the old checkpoint was put back whole, then replaced by a new one
    RLlibAgent.load(run, seed=0)


# --- make hour / make scratch: a rerun never trains into the earlier run's folder -------------

STUB = """#!/bin/sh
echo "$@" >> calls.log
while [ $# -gt 0 ]; do
    if [ "$1" = "--out-dir" ]; then mkdir -p "$2"; [ -z "$FAIL" ] || exit 3; fi
    shift
done
"""
"""Stands in for the venv's python: logs its arguments, makes the --out-dir as a run would."""


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_hour_and_scratch_train_into_a_new_folder_on_a_rerun(tmp_path):
    """The second ``make hour`` used to pass --out-dir runs/hour again, which the trainer
    refuses (it holds the first run)."""
    shutil.copy(ROOT / "Makefile", tmp_path)
    (tmp_path / "pyproject.toml").touch()
    os.utime(tmp_path / "pyproject.toml", (0, 0))
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / ".stamp").touch()  # the venv counts as set up
    stub = tmp_path / "stub"
    stub.write_text(STUB)
    stub.chmod(0o755)

    def make(*words, **env):
        return subprocess.run(
            ["make", "-s", *words, f"PY={stub}"], cwd=tmp_path, capture_output=True, text=True,
            env={**os.environ, **env}, timeout=60,
        )  # fmt: skip

    said = []
    for words in (["hour"], ["hour"], ["scratch"], ["scratch", "RUN=runs/mine"]):
        done = make(*words)
        assert done.returncode == 0, done.stderr
        said.append(done.stdout.strip())
    assert said[1] == "make hour: the run goes to runs/hour-2"
    calls = (tmp_path / "calls.log").read_text().splitlines()
    trained = [c.split("--out-dir ")[1] for c in calls if "training.ppo_selfplay" in c]
    assert trained == ["runs/hour", "runs/hour-2", "runs/scratch", "runs/mine"]
    played = [c.split("ppo:")[1].split("/latest.pt")[0] for c in calls if "agents.arena" in c]
    assert played == [run for run in trained for _ in range(2)]  # each plays its own run
    (tmp_path / "calls.log").unlink()
    failed = make("hour", FAIL="1")  # a training that fails plays no arena
    assert failed.returncode != 0
    assert [c.split()[1] for c in (tmp_path / "calls.log").read_text().splitlines()] == [
        "training.ppo_selfplay"
    ]


# --- the review of the training scripts' output: what a run says, and what it writes ---------


def test_a_run_says_what_it_trains_and_writes_no_nan_in_metrics(tmp_path, capsys):
    """It used to start silently (100 decisions quietly became 96), and an evaluation of one
    deal wrote its undefined interval as NaN in metrics.jsonl."""
    run = tmp_path / "A"
    argv = [*TINY, "--total-decisions", "100", "--out-dir", str(run), "--eval-opponents", "random"]
    assert ppo_selfplay.main([*argv, "--eval-deals", "1", "--eval-every", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "training 96 decisions: 3 updates of 4 games x 8 steps (32 decisions each); the 100 "
        "decisions asked for, rounded down to whole updates\n"
    )
    assert "vs random: margin" in out and "n/a (one deal)" in out and "nan" not in out
    rows = [strict_json(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["decisions"] for r in rows] == [32, 64, 96]
    assert rows[-1]["eval"]["random"]["margin_ci95"] == [None, None]
    # a resume that would train nothing is refused, naming how far to go
    resume = [*TINY, "--resume", str(run / "latest.pt"), "--out-dir", str(run)]
    assert ppo_selfplay.main([*resume, "--total-decisions", "96"]) == 2
    err = capsys.readouterr().err
    assert "--total-decisions 96: the decisions of the whole run" in err
    assert "has trained 96 already (update 3); pass at least 128 to train one more update" in err
    assert ppo_selfplay.main([*resume, "--total-decisions", "128"]) == 0
    assert "training 32 decisions: 1 update of 4 games x 8 steps" in capsys.readouterr().out


def test_a_diverged_update_is_warned_about_not_only_written_as_null(tmp_path, capsys, monkeypatch):
    """metrics.jsonl writes a NaN loss as null (standard JSON), so the run says so on stderr."""
    real = ppo_selfplay.ppo_update

    def diverged(*args, **kwargs):
        return {**real(*args, **kwargs), "loss/value": float("nan")}

    monkeypatch.setattr(ppo_selfplay, "ppo_update", diverged)
    argv = [*TINY, "--total-decisions", "64", "--out-dir", str(tmp_path / "A")]
    assert ppo_selfplay.main(argv) == 0
    err = capsys.readouterr().err
    assert "warning: update 1: not finite: loss/value (the training has diverged" in err
    assert "warning: update 2: not finite: loss/value" in err
    rows = [strict_json(x) for x in (tmp_path / "A" / "metrics.jsonl").read_text().splitlines()]
    assert [r["train"]["loss/value"] for r in rows] == [None, None]


class _Met(Exception):
    """Raised where the processes would meet: nothing is started."""


def test_more_processes_than_cores_warn_and_the_start_is_announced(tmp_path, capsys, monkeypatch):
    """--processes 64 on two cores used to start without a word for 30 s and more."""
    from training import distributed

    def meet(place):
        raise _Met

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(distributed, "_meet", meet)
    argv = [*TINY, "--processes", "4", "--device", "cpu", "--out-dir", str(tmp_path / "run")]
    with pytest.raises(_Met):
        ppo_selfplay.main(argv)
    out, err = capsys.readouterr()
    assert err == (
        "python -m training.ppo_selfplay: warning: --processes 4 exceeds the 2 usable CPU cores "
        "of this machine; the processes will share them (one per core is best)\n"
    )
    assert out.startswith("starting 4 processes on this machine (--processes 4)")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)))
    with pytest.raises(_Met):
        ppo_selfplay.main(argv)
    assert capsys.readouterr().err == ""  # one process per core: no warning


# --- ppo_selfplay --resume: what the flags say, the run does ---------------------------------


def _rows(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def test_a_resume_without_annealing_trains_at_the_lr_given(tmp_path):
    """The optimizer's state brought back the learning rate it stopped at (7.5e-05 after an
    annealed run of four updates), and nothing but the annealing ever set it again."""
    run = tmp_path / "run"
    argv = [*TINY, "--out-dir", str(run)]
    assert ppo_selfplay.main([*argv, "--total-decisions", "128", "--lr", "3e-4"]) == 0
    assert _rows(run)[-1]["train"]["train/lr"] < 1e-4  # annealed towards 0
    resume = ["--resume", str(run / "latest.pt"), "--total-decisions", "192", "--no-anneal-lr"]
    assert ppo_selfplay.main([*argv, *resume, "--lr", "1e-3"]) == 0
    assert [r["train"]["train/lr"] for r in _rows(run)[4:]] == [1e-3, 1e-3]


def test_a_resume_keeps_its_checkpoints_rules_and_reward_scale(tmp_path, capsys):
    """Without --rules a resumed classic run went on under guiyang, and at the default reward
    scale, ten times the one its value head had learnt, without a word."""
    run = tmp_path / "run"
    argv = [*TINY, "--out-dir", str(run)]
    classic = ["--rules", "classic", "--reward-scale", "0.01"]
    assert ppo_selfplay.main([*argv, *classic, "--total-decisions", "32"]) == 0
    resume = ["--resume", str(run / "latest.pt"), "--total-decisions", "64"]
    capsys.readouterr()
    assert ppo_selfplay.main([*argv, *resume]) == 2
    err = capsys.readouterr().err
    assert "--reward-scale 0.1: --resume " in err and "pass --reward-scale 0.01" in err
    assert ppo_selfplay.main([*argv, *resume, "--reward-scale", "0.01"]) == 0
    ckpt = load_checkpoint(run / "latest.pt")[1]
    assert ckpt["rules"] == {"preset": "classic", "overrides": {}}
    assert [s["preset"] for s in ckpt["stages"]] == ["classic", "classic"]
    moved = ["--rules", "app", "--resume", str(run / "latest.pt"), "--total-decisions", "96"]
    assert ppo_selfplay.main([*argv, *moved, "--reward-scale", "0.01"]) == 0  # given: moved
    assert load_checkpoint(run / "latest.pt")[1]["rules"]["preset"] == "app"


def test_a_parked_folder_is_left_to_the_run_that_holds_its_folder(tmp_path):
    """``recover_dir`` (RLlib's checkpoint check and ``rllib:PATH`` agents call it) put a
    parked checkpoint back whoever held the folder, so a second run refused only later, or an
    agent loading from a run in progress, undid that run's swap between its two renames."""
    run = tmp_path / "run"
    fileio.write_dir_atomic(run / "checkpoint", lambda tmp: (tmp / "state").write_text("old"))
    os.replace(run / "checkpoint", run / ".checkpoint.old")  # a swap between its renames
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from zhuoji_env import fileio; "
         "lock = fileio.lock_dir(sys.argv[1]); print('held', flush=True); sys.stdin.read()",
         str(run)],
        cwd=ROOT, env=tool_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "held\n"
        fileio.recover_dir(run / "checkpoint")
        assert not (run / "checkpoint").exists() and (run / ".checkpoint.old").exists()
    finally:
        holder.communicate("")
    fileio.recover_dir(run / "checkpoint")  # nobody writes there now: put back
    assert (run / "checkpoint" / "state").read_text() == "old"
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint"]


def test_a_second_run_into_a_folder_being_written_is_refused(tmp_path, capsys):
    """Two runs started together on one --out-dir both went ahead: their checkpoints
    overwrote each other's and metrics.jsonl lost a row."""
    run = tmp_path / "run"
    with fileio.lock_dir(run):  # as a run that is training there holds it
        assert ppo_selfplay.main([*TINY, "--total-decisions", "32", "--out-dir", str(run)]) == 2
        assert "is being written by another run" in capsys.readouterr().err
        assert sorted(p.name for p in run.iterdir()) == [fileio.LOCK_NAME]
    assert ppo_selfplay.main([*TINY, "--total-decisions", "32", "--out-dir", str(run)]) == 0
    assert not (run / fileio.LOCK_NAME).exists()  # the finished run let it go
    with fileio.lock_dir(run):
        with pytest.raises(fileio.FolderBusy, match="being written by another run"):
            fileio.lock_dir(run)


def test_a_run_stopped_during_an_evaluation_keeps_its_checkpoint_and_its_row(
    tmp_path, monkeypatch, capsys
):
    """The checkpoint is saved before the update's evaluation (minutes of arena), its row after
    it: a run stopped between them lost that row for good. The checkpoint now holds the row
    and a resume in its folder logs it."""
    run = tmp_path / "run"
    argv = [*TINY, "--eval-every", "1", "--eval-opponents", "random", "--eval-deals", "2"]
    argv += ["--out-dir", str(run)]
    evaluate, calls = ppo_selfplay.evaluate, []

    def stop_at_update_2(*a, **k):
        calls.append(1)
        if len(calls) == 3:  # before the first update, after it, after the second
            raise KeyboardInterrupt
        return evaluate(*a, **k)

    monkeypatch.setattr(ppo_selfplay, "evaluate", stop_at_update_2)
    assert ppo_selfplay.main([*argv, "--total-decisions", "96"]) == 130  # as Ctrl-C ends it
    assert [r["update"] for r in _rows(run)] == [1]
    saved = load_checkpoint(run / "latest.pt")[1]
    assert saved["update"] == 2 and saved["row"]["update"] == 2
    monkeypatch.setattr(ppo_selfplay, "evaluate", evaluate)
    capsys.readouterr()
    resume = ["--resume", str(run / "latest.pt"), "--total-decisions", "96"]
    assert ppo_selfplay.main([*argv, *resume]) == 0
    assert "logged update 2 from its checkpoint" in capsys.readouterr().out
    rows = _rows(run)
    assert [r["update"] for r in rows] == [1, 2, 3]
    assert rows[1] == saved["row"] and "eval" not in rows[1] and "eval" in rows[2]
    assert not (run / fileio.LOCK_NAME).exists()


def test_a_final_evaluation_stopped_leaves_the_network_saved(tmp_path, monkeypatch):
    """With --save-every 0 only the last update is saved; saved after the final evaluation,
    a stop during it lost the whole run's network."""
    run = tmp_path / "run"

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(ppo_selfplay, "evaluate", stop)
    argv = [*TINY, "--save-every", "0", "--eval-every", "0", "--eval-opponents", "random"]
    assert ppo_selfplay.main([*argv, "--total-decisions", "64", "--out-dir", str(run)]) == 130
    assert load_checkpoint(run / "latest.pt")[1]["update"] == 2


def test_the_folder_lock_is_let_go_when_preparing_the_folder_fails(tmp_path):
    run = tmp_path / "run"
    argv = [*TINY, "--out-dir", str(run)]
    assert ppo_selfplay.main([*argv, "--total-decisions", "32"]) == 0
    with open(run / "metrics.jsonl", "ab") as f:
        f.write(b"\xff\xfe not UTF-8\n")
    resume = ["--resume", str(run / "latest.pt"), "--total-decisions", "64"]
    with pytest.raises(UnicodeDecodeError):
        ppo_selfplay.main([*argv, *resume])
    assert not (run / fileio.LOCK_NAME).exists()
    fileio.lock_dir(run).close()  # free in this process too


@pytest.mark.parametrize("tool", ["ship_policy", "curve"])
def test_a_negative_arena_seed_is_a_usage_error(tmp_path, capsys, tool):
    """It reached the arena and ended in its ValueError's traceback."""
    argv = {
        "ship_policy": ["--checkpoint", str(tmp_path / "x.pt"), "--name", "ppo-app"],
        "curve": [str(tmp_path)],
    }[tool]
    main = {"ship_policy": ship_policy.main, "curve": curve.main}[tool]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--seed", "-1"])
    assert exit_.value.code == 2
    assert "--seed must be >= 0 (an arena seed), got -1" in capsys.readouterr().err


def test_a_resume_whose_optimizer_state_is_another_networks_is_refused_before_any_work(
    tmp_path, capsys
):
    """torch takes any Adam state and fails at the first update, after --force had deleted
    the run in --out-dir."""
    run, other = tmp_path / "run", tmp_path / "other"
    for folder in (run, other):
        assert ppo_selfplay.main([*TINY, "--total-decisions", "32", "--out-dir", str(folder)]) == 0
    net, ckpt = load_checkpoint(run / "latest.pt")
    extra = {
        k: v for k, v in ckpt.items() if k not in ("model", "hidden", "obs_size", "obs_version")
    }
    for change, said in [
        (lambda o: o["state"][0].update(exp_avg=torch.zeros(3, 3)), "parameter 0: shape (3, 3)"),
        (lambda o: o["param_groups"][0]["params"].pop(), "the state of 7 parameters"),
        (lambda o: o.pop("param_groups"), "must be an optimizer's state dict"),
    ]:
        grafted = tmp_path / "grafted.pt"
        state = copy.deepcopy(extra)
        change(state["optimizer"])
        save_checkpoint(grafted, net, **state)
        resume = ["--resume", str(grafted), "--total-decisions", "64", "--force"]
        before = sorted(p.name for p in other.iterdir())
        assert ppo_selfplay.main([*TINY, *resume, "--out-dir", str(other)]) == 2
        assert said in capsys.readouterr().err
        assert sorted(p.name for p in other.iterdir()) == before  # nothing deleted


def test_total_decisions_counts_decisions_when_a_resume_changes_the_update_size(tmp_path):
    """It counted updates: a run of 3 updates of 32 decisions resumed with updates of 16 and
    --total-decisions 128 trained to 176; with updates of 64 and 192 it was refused as done."""
    run = tmp_path / "run"
    argv = [*TINY, "--out-dir", str(run)]
    assert ppo_selfplay.main([*argv, "--total-decisions", "96"]) == 0  # 3 updates of 4 x 8
    small = ["--resume", str(run / "latest.pt"), "--num-envs", "2", "--total-decisions", "128"]
    assert ppo_selfplay.main([*argv, *small]) == 0  # 2 updates of 2 x 8
    assert load_checkpoint(run / "latest.pt")[1]["decisions"] == 128
    large = ["--resume", str(run / "latest.pt"), "--num-envs", "8", "--total-decisions", "192"]
    assert ppo_selfplay.main([*argv, *large]) == 0  # 1 update of 8 x 8
    assert load_checkpoint(run / "latest.pt")[1]["decisions"] == 192
    with pytest.raises(FlagError, match="has trained 192 already .*pass at least 256"):
        ppo_selfplay.check_args(
            ppo_selfplay.parse_args(ppo_selfplay.Args, [*argv, *large[:-1], "200"])
        )
