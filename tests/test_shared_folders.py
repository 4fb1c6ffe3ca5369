"""Writing in a folder others can write: no write through a planted link, no two ships of one
name at once, no pile of what killed writers left, and a Ctrl-C that says what was saved.

An attacker who can write in the output folder (a shared ``/tmp``, a group folder) plants
symbolic links under the names a writer would use, for a range of process ids (this process's
among them), pointing at a file of the user's elsewhere: that file must stay as it was, and the
output must be a file of its own.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from agents.arena import main as arena_main
from agents.ppo import PolicyNet, save_checkpoint
from zhuoji_env import fileio
from zhuoji_env.record import main as record_main
from zhuoji_env.view import main as view_main

ROOT = Path(__file__).resolve().parents[1]
RON = ROOT / "tests" / "data" / "records" / "guiyang-2-ron.json"
PRECIOUS = b"the user's own file, which no command may touch\n"


def tool_env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def plant_links(folder: Path, name: str, target: Path, spread: int = 300) -> None:
    """Links to ``target`` under every temporary name a writer of ``folder/name`` used, for the
    process ids around this one's (an attacker guesses them from ``ps``)."""
    folder.mkdir(parents=True, exist_ok=True)
    me = os.getpid()
    for pid in range(max(1, me - spread), me + spread):
        (folder / f".{name}.{pid}.tmp").symlink_to(target)


@pytest.fixture
def victim(tmp_path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "notes.txt"
    path.write_bytes(PRECIOUS)
    return path


def _checkpoint(path: Path) -> None:
    save_checkpoint(path, PolicyNet(hidden=4), update=1, decisions=0)


def _arena(path: Path) -> None:
    argv = ["--agents", "random,greedy", "--deals", "2", "--seed", "1", "--no-progress"]
    assert arena_main([*argv, "--json", str(path)]) == 0


def _page(path: Path) -> None:
    assert view_main([str(RON), "--out", str(path)]) == 0


def _log(path: Path) -> None:
    fileio.append_text_atomic(path, '{"update": 1}\n')


WRITERS = {
    "checkpoint": ("update_1.pt", _checkpoint),
    "arena --json": ("arena.json", _arena),
    "view page": ("page.html", _page),
    "metrics log": ("metrics.jsonl", _log),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_write_never_goes_through_a_planted_temporary_link(tmp_path, victim, writer):
    name, write = WRITERS[writer]
    shared = tmp_path / "shared"
    plant_links(shared, name, victim)
    write(shared / name)
    assert victim.read_bytes() == PRECIOUS
    out = shared / name
    assert out.is_file() and not out.is_symlink() and out.stat().st_size > 0


def test_records_never_go_through_a_planted_temporary_link(tmp_path, victim):
    shared = tmp_path / "recs"
    name = "guiyang-5-0.json"
    plant_links(shared, name, victim)
    assert record_main(["--seed", "5", "--n", "1", "--out", str(shared)]) == 0
    assert victim.read_bytes() == PRECIOUS
    assert (shared / name).is_file() and not (shared / name).is_symlink()


def test_a_link_at_the_output_itself_is_replaced_not_written_through(tmp_path, victim):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "arena.json").symlink_to(victim)
    fileio.write_text_atomic(shared / "arena.json", "{}\n")
    assert victim.read_bytes() == PRECIOUS
    assert not (shared / "arena.json").is_symlink()


def test_a_planted_lock_link_creates_nothing_at_its_target(tmp_path, victim):
    run = tmp_path / "run"
    run.mkdir()
    absent = tmp_path / "home" / "created-by-the-lock"
    (run / fileio.LOCK_NAME).symlink_to(absent)
    with fileio.lock_dir(run):
        assert not absent.exists()
        assert not (run / fileio.LOCK_NAME).is_symlink()
    (run / fileio.LOCK_NAME).symlink_to(victim)
    with fileio.lock_dir(run):
        with pytest.raises(fileio.FolderBusy):
            fileio.lock_dir(run)
    assert victim.read_bytes() == PRECIOUS


def test_a_log_written_as_it_goes_refuses_a_planted_link(tmp_path, victim):
    (tmp_path / "driver.log").symlink_to(victim)
    with pytest.raises(OSError, match="driver.log"):
        fileio.open_for_writing(tmp_path / "driver.log")
    assert victim.read_bytes() == PRECIOUS


def test_a_folder_swap_never_restores_a_planted_link(tmp_path, victim):
    run = tmp_path / "run"
    run.mkdir()
    (run / ".checkpoint.old").symlink_to(victim.parent)
    fileio.recover_dir(run / "checkpoint")
    assert not os.path.lexists(run / "checkpoint")
    assert not os.path.lexists(run / ".checkpoint.old")
    fileio.write_dir_atomic(run / "checkpoint", lambda tmp: (tmp / "state").write_text("new"))
    assert (run / "checkpoint" / "state").read_text() == "new"
    assert sorted(p.name for p in victim.parent.iterdir()) == ["notes.txt"]


# --- what killed writers leave ----------------------------------------------------------------

KILLED_WRITE = r"""
import os, signal, sys
from zhuoji_env import fileio

def half_then_die(tmp):
    tmp.write_bytes(b"x" * 900_000)
    os.kill(os.getpid(), signal.SIGKILL)

fileio.write_atomic(sys.argv[1], half_then_die)
"""


def test_the_temporaries_of_killed_writers_are_removed_when_the_folder_is_next_locked(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"update": 1}\n')
    for _ in range(3):
        proc = subprocess.run(
            [sys.executable, "-c", KILLED_WRITE, str(run / "metrics.jsonl")],
            cwd=ROOT, env=tool_env(), capture_output=True,
        )  # fmt: skip
        assert proc.returncode == -signal.SIGKILL, proc.stderr
    left = [p.name for p in run.iterdir() if p.name.startswith(".metrics.jsonl.")]
    assert len(left) == 3
    mine = run / f".update_3.pt.{os.getpid()}.abcdefgh.tmp"  # a live writer's: kept
    mine.write_bytes(b"being written")
    with fileio.lock_dir(run):
        assert sorted(p.name for p in run.iterdir()) == sorted(
            [".run.lock", "metrics.jsonl", mine.name]
        )
    assert (run / "metrics.jsonl").read_text() == '{"update": 1}\n'


def test_a_busy_folder_names_the_process_that_holds_it(tmp_path):
    run = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from zhuoji_env import fileio; "
         "lock = fileio.lock_dir(sys.argv[1]); print('held', flush=True); sys.stdin.read()",
         str(run), "--marker-of-the-holder"],
        cwd=ROOT, env=tool_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(fileio.FolderBusy) as busy:
            fileio.lock_dir(run)
        said = str(busy.value)
        assert f"process {holder.pid}" in said and "--marker-of-the-holder" in said
    finally:
        holder.communicate("")
    with fileio.lock_dir(run) as lock:
        info = json.loads((run / fileio.LOCK_NAME).read_text())
        assert info["pid"] == os.getpid() and lock is not None
    assert not (run / fileio.LOCK_NAME).exists()


# --- two ships of one name --------------------------------------------------------------------


def test_a_second_ship_into_a_folder_being_shipped_to_is_refused_at_once(tmp_path, capsys):
    """Without a lock the second ship deleted the first's staged file as a killed ship's, and
    the first crashed after its arena work."""
    from agents.ppo import PolicyNet, save_checkpoint
    from training import ship_policy
    from zhuoji_env.rules import Rules

    stage = {"command": "python -m training.ppo_selfplay", "commit": None, "preset": "app",
             "decisions": 64, "seconds": 1.5}  # fmt: skip
    ckpt = tmp_path / "c.pt"
    rules = Rules.make("app").to_record()
    save_checkpoint(ckpt, PolicyNet(8), update=1, decisions=64, rules=rules, stages=[stage])
    ship = tmp_path / "ship"
    first = subprocess.Popen(
        [sys.executable, "-c", "import sys; from zhuoji_env import fileio; "
         "lock = fileio.lock_dir(sys.argv[1]); "
         "open(sys.argv[1] + '/.ppo-app.pt.new', 'w').write('being measured'); "
         "print('held', flush=True); sys.stdin.read()",
         str(ship), "training.ship_policy"],
        cwd=ROOT, env=tool_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    argv = ["--checkpoint", str(ckpt), "--name", "ppo-app", "--deals", "1", "--workers", "1"]
    try:
        assert first.stdout.readline() == "held\n"
        with pytest.raises(SystemExit) as exit_:
            ship_policy.main([*argv, "--out-dir", str(ship)])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert f"process {first.pid}" in err and "training.ship_policy" in err
        assert (ship / ".ppo-app.pt.new").read_text() == "being measured"
    finally:
        first.communicate("")
    assert ship_policy.main([*argv, "--out-dir", str(ship)]) == 0
    assert sorted(p.name for p in ship.iterdir()) == ["ppo-app.json", "ppo-app.pt"]


# --- Ctrl-C -----------------------------------------------------------------------------------

TINY = [
    "--num-envs", "4", "--num-steps", "8", "--hidden", "8", "--num-minibatches", "1",
    "--update-epochs", "1", "--eval-opponents", "", "--save-every", "1", "--no-progress",
]  # fmt: skip


def _interrupt_when(proc: subprocess.Popen, ready, seconds: float = 240) -> tuple[str, str]:
    """Send Ctrl-C's SIGINT to ``proc`` once ``ready()`` holds; its output."""
    deadline = time.monotonic() + seconds
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)  # as the terminal sends it: to the whole process group
    return proc.communicate(timeout=120)


def _rows(metrics: Path) -> int:
    return len(metrics.read_text().splitlines()) if metrics.exists() else 0


@pytest.mark.parametrize("processes", [1, 2])
def test_ctrl_c_on_a_trainer_ends_with_one_line_that_resumes_it(tmp_path, processes):
    """It ended in a KeyboardInterrupt traceback (from every process of a data-parallel run)."""
    from training import ppo_selfplay

    run = tmp_path / "run"
    argv = [*TINY, "--total-decisions", "1000000", "--processes", str(processes)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "training.ppo_selfplay", *argv, "--out-dir", str(run)],
        cwd=ROOT, env=tool_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    out, err = _interrupt_when(proc, lambda: _rows(run / "metrics.jsonl") >= 2)
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    prefix = "python -m training.ppo_selfplay: interrupted: "
    assert last.startswith(prefix) and " holds update " in last, last
    command = shlex.split(last.partition("resume with: ")[2])
    assert command[:3] == ["python", "-m", "training.ppo_selfplay"] and "--force" not in command
    resume = command[command.index("--resume") + 1]  # latest.pt, or a newer update_<k>.pt
    assert last.startswith(f"{prefix}{resume} holds update ") and Path(resume).parent == run
    saved = torch.load(resume, weights_only=True)
    flags = command[3:]
    flags[flags.index("--total-decisions") + 1] = str(saved["decisions"] + 32)
    if "--processes" in flags:  # resumed in this process
        del flags[flags.index("--processes") : flags.index("--processes") + 2]
    assert ppo_selfplay.main(flags) == 0  # the command goes on from where it stopped
    assert torch.load(run / "latest.pt", weights_only=True)["update"] == saved["update"] + 1


def test_ctrl_c_before_any_checkpoint_says_nothing_was_saved(tmp_path, monkeypatch, capsys):
    from training import ppo_selfplay

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(ppo_selfplay, "ppo_update", stop)
    run = tmp_path / "run"
    assert ppo_selfplay.main([*TINY, "--total-decisions", "64", "--out-dir", str(run)]) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("python -m training.ppo_selfplay: interrupted: nothing was saved;")
    assert "start again with: python -m training.ppo_selfplay" in last


def test_ctrl_c_on_a_ship_leaves_the_old_pair_and_says_so(tmp_path, monkeypatch, capsys):
    from training import ship_policy

    stage = {"command": "python -m training.ppo_selfplay", "commit": None, "preset": "app",
             "decisions": 64, "seconds": 1.5}  # fmt: skip
    ckpt = tmp_path / "c.pt"
    rules = {"preset": "app", "overrides": {}}
    save_checkpoint(ckpt, PolicyNet(8), update=1, decisions=64, rules=rules, stages=[stage])

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(ship_policy, "arena_tables", stop)
    ship = tmp_path / "ship"
    argv = ["--checkpoint", str(ckpt), "--name", "ppo-app", "--out-dir", str(ship)]
    assert ship_policy.main(argv) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("python -m training.ship_policy: interrupted: nothing was shipped")
    assert list(ship.iterdir()) == []  # no staged file, no lock


def test_ctrl_c_on_the_trainers_that_save_at_the_end_says_so(tmp_path, monkeypatch, capsys):
    """sb3_maskable saves model.zip, distill_search its three files, only when they end."""
    import sb3_contrib

    from training import distill_search, sb3_maskable

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(sb3_contrib.MaskablePPO, "learn", stop)
    argv = ["--total-timesteps", "64", "--n-envs", "2", "--n-steps", "32", "--batch-size", "32",
            "--eval-opponents", "", "--out-dir", str(tmp_path / "sb3")]  # fmt: skip
    assert sb3_maskable.main(argv) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(
        "python -m training.sb3_maskable: interrupted: model.zip is saved when training ends and "
        "a run does not resume: nothing was saved; start again with: python -m "
        "training.sb3_maskable "
    )
    base = tmp_path / "base.pt"
    save_checkpoint(base, PolicyNet(8), update=1, decisions=64, rules={"preset": "guiyang"})
    monkeypatch.setattr(distill_search, "collect", stop)
    out = tmp_path / "distilled"
    assert distill_search.main(["--base", str(base), "--tables", "2", "--out-dir", str(out)]) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(
        "python -m training.distill_search: interrupted: the searched decisions and the network "
        "are written at the end: nothing was saved; start again with: python -m "
    )
