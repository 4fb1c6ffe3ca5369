"""The memory limit is the process's own, and sizes at their extremes get a message.

:func:`zhuoji_env.limits.memory_limit` is the smallest of this machine's memory, what is
available, what ``ulimit -v`` leaves and what the cgroup leaves; an allocation that fails all
the same ends a command with exit status 2, its size and the limit. Every count flag is checked
against memory before the work starts, and every prompt answers any input with a message.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.play import main as play_main
from agents.play import parse_command
from zhuoji_env import limits
from zhuoji_env.limits import SizeError
from zhuoji_env.observation import OBS_SIZE, VERSION

ROOT = Path(__file__).resolve().parents[1]
GIB = 1 << 30


def _cgroup_tree(root: Path) -> Path:
    """A v1 memory hierarchy (this process in ``/a/b``, ``a`` nearly full) and a v2 one (in
    ``/x``); returns the ``/proc/self/cgroup`` file that places the process."""

    def group(folder: Path, files: dict[str, int | str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in files.items():
            (folder / name).write_text(f"{value}\n")

    v1 = root / "memory"
    group(v1, {"memory.limit_in_bytes": 9223372036854771712, "memory.usage_in_bytes": 5 * GIB})
    group(v1 / "a", {"memory.limit_in_bytes": 10 * GIB, "memory.usage_in_bytes": 9 * GIB})
    (v1 / "a" / "memory.stat").write_text("cache 10\ntotal_inactive_file 805306368\n")
    group(v1 / "a" / "b", {"memory.limit_in_bytes": 3 * GIB, "memory.usage_in_bytes": 2 * GIB})
    group(root / "x", {"memory.max": 2 * GIB, "memory.current": GIB // 2})
    group(root, {"memory.max": "max", "memory.current": 7 * GIB})
    proc = root / "cgroup"
    proc.write_text("9:cpu,cpuacct:/a\n4:memory:/a/b\n0::/x\n")
    return proc


def test_the_limit_is_the_least_that_a_cgroup_leaves(tmp_path, monkeypatch):
    """The least any of its groups leaves: ``b``'s 1 GiB (``a`` leaves 10 - 9 GiB plus 0.75 GiB
    of reclaimable cache, ``x`` 1.5 GiB), until ``x`` fills to 1.75 GiB of its 2. It was this
    machine's memory whatever the cgroups said."""
    monkeypatch.delenv("ZHUOJI_MEMORY_LIMIT", raising=False)
    monkeypatch.setattr(limits, "CGROUP_ROOT", tmp_path)
    monkeypatch.setattr(limits, "PROC_CGROUP", _cgroup_tree(tmp_path))
    left, source = limits.cgroup_headroom()
    assert left == GIB and source.startswith("its cgroup's memory limit (")
    assert str(tmp_path / "memory" / "a" / "b" / "memory.limit_in_bytes") in source
    assert limits.memory_limit() == GIB
    with pytest.raises(SizeError, match=r"needs about 1\.50 GiB .* the 1\.00 GiB its cgroup's"):
        limits.check_memory("--batch 3", 1.5 * GIB)
    (tmp_path / "x" / "memory.current").write_text(f"{int(1.75 * GIB)}\n")
    assert limits.memory_limit() == GIB // 4  # now the v2 group leaves the least


def test_the_limit_counts_what_the_machine_has_available(monkeypatch):
    monkeypatch.delenv("ZHUOJI_MEMORY_LIMIT", raising=False)

    class Memory:
        total, available = 64 * GIB, 3 * GIB

    monkeypatch.setattr(limits.psutil, "virtual_memory", lambda: Memory)
    monkeypatch.setattr(limits, "cgroup_headroom", lambda: None)
    assert limits.memory_limit() == 3 * GIB
    with pytest.raises(SizeError, match="the 3.00 GiB available now"):
        limits.check_memory("--deals 10", 4 * GIB)


def _wide_checkpoint(path: Path, wide: int) -> Path:
    """A 4 KB ``ppo:`` checkpoint of expanded zero tensors declaring a ``wide`` network."""
    shapes = {
        "body.0.weight": (wide, OBS_SIZE),
        "body.0.bias": (wide,),
        "body.2.weight": (wide, wide),
        "body.2.bias": (wide,),
        "pi.weight": (86, wide),
        "pi.bias": (86,),
        "v.weight": (1, wide),
        "v.bias": (1,),
    }
    state = {k: torch.zeros(1).expand(*s) for k, s in shapes.items()}
    torch.save({"model": state, "hidden": wide, "obs_size": OBS_SIZE, "obs_version": VERSION}, path)
    return path


def _under_ulimit_v(argv: list[str], limit: int, **env: str) -> subprocess.CompletedProcess:
    """``python argv`` with an address space of ``limit`` bytes."""
    environ = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", **env}
    if "ZHUOJI_MEMORY_LIMIT" not in env:
        environ.pop("ZHUOJI_MEMORY_LIMIT", None)
    return subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
    )


ARENA = ["-m", "agents.arena", "--deals", "1", "--no-progress", "--agents"]


def test_a_network_too_wide_for_ulimit_v_is_refused_before_allocation(tmp_path):
    """40,000 wide needs 19 GB with its copies: less than this machine may have, more than a
    4 GiB address space; it ended in torch's allocation error and a traceback."""
    path = _wide_checkpoint(tmp_path / "wide.pt", 40_000)
    assert path.stat().st_size < 4096
    p = _under_ulimit_v([*ARENA, f"ppo:{path},random"], 4 * GIB)
    assert p.returncode == 2, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    assert "wide.pt: a PolicyNet of 1,6" in p.stderr
    assert "the address-space limit (ulimit -v, 4.00 GiB) leaves" in p.stderr


def test_an_allocation_that_fails_anyway_exits_2_with_its_size_and_the_limit(tmp_path):
    """ZHUOJI_MEMORY_LIMIT lets the network through the check; its 6.4 GB layer then fails
    under the 4 GiB address space: exit 2, naming the size and the limit."""
    path = _wide_checkpoint(tmp_path / "wide.pt", 40_000)
    p = _under_ulimit_v([*ARENA, f"ppo:{path},random"], 4 * GIB, ZHUOJI_MEMORY_LIMIT=str(10**15))
    assert p.returncode == 2, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("python -m agents.arena: error: out of memory: an allocation of 5.96")
    assert "the address-space limit (ulimit -v, 4.00 GiB) leaves" in last


# --------------------------------------------------------------------------- flags, prompts

COUNT_FLAGS = [
    (
        "agents.arena",
        ["--agents", "random,greedy", "--deals", "8000", "--workers", "12", "--no-progress"],
        "8000 deals x 6 seatings in 12 worker processes (workers=12) needs about",
    ),
    (
        "agents.ladder",
        ["--agents", "random,greedy", "--deals", "4", "--bootstrap", "100000000",
         "--no-progress"],
        "--bootstrap 100000000 resamples of 2 ratings needs about 4.47 GiB",
    ),
    (
        "agents.ladder",
        ["--agents", "random,greedy", "--deals", "8000", "--workers", "12", "--no-progress"],
        "8000 deals x 6 seatings in 12 worker processes (workers=12) needs about",
    ),
    (
        "agents.belief_check",
        ["--base", "random", "--steps", "100000000", "--no-progress"],
        "--steps 100000000 sampled every 4 at 64 tables with k=8 needs about",
    ),
    (
        "agents.search_quality",
        ["--base", "random", "--steps", "100000000", "--no-progress"],
        "--steps 100000000 at 16 tables needs about",
    ),
    (
        "training.ppo_selfplay",
        ["--processes", "8", "--num-envs", "8", "--num-steps", "8", "--hidden", "8",
         "--num-minibatches", "1", "--eval-opponents", "", "--no-progress"],
        "--num-envs 8 x --num-steps 8 with --hidden 8 in --processes 8 needs about",
    ),
]  # fmt: skip
"""Count flags that started processes or filled memory unchecked (12 arena workers, a hundred
million bootstrap resamples, steps that keep every sample), each refused under a 1 GiB
ZHUOJI_MEMORY_LIMIT before any work."""

DRIVER = r"""
import contextlib, importlib, io, json, os, sys
results = []
for module, argv, out in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = importlib.import_module(module).main([*argv, "--out-dir", out] if out else argv)
        except SystemExit as exc:
            code = exc.code
    results.append([code, err.getvalue()])
print(json.dumps(results))
"""


def test_every_count_flag_that_takes_memory_is_refused_before_the_work_starts(tmp_path):
    cases = [
        [m, argv, str(tmp_path / f"out{i}") if m.startswith("training") else ""]
        for i, (m, argv, _) in enumerate(COUNT_FLAGS)
    ]
    env = {**os.environ, "ZHUOJI_MEMORY_LIMIT": str(GIB), "OMP_NUM_THREADS": "1"}
    p = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(cases)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (8 * GIB, 8 * GIB)),
    )
    assert p.returncode == 0, p.stderr[-3000:]
    results = json.loads(p.stdout.strip().splitlines()[-1])
    for (module, _, says), (code, err) in zip(COUNT_FLAGS, results, strict=True):
        assert code == 2 and "Traceback" not in err, (module, code, err[-1500:])
        assert says in err and "more than the 1.00 GiB that ZHUOJI_MEMORY_LIMIT sets" in err, (
            module,
            err[-800:],
        )
    assert not any(tmp_path.iterdir())


@given(st.text(max_size=60) | st.from_regex(r"\s*[0-9]{1,6000}\s*", fullmatch=True))
@settings(max_examples=300, deadline=None)
def test_every_prompt_answer_gets_a_message(text):
    """A 5,000-digit number ended the game with int()'s traceback."""
    legal = np.zeros(86, bool)
    legal[[4, 30, 83]] = True
    action, message = parse_command(text, legal)
    assert (action is not None and legal[action] and message == "") or (
        action is None and message and len(message) < 2000
    )


def test_a_5000_digit_answer_is_rejected_and_the_game_goes_on():
    answers = iter(["5" * 5000, "quit"])
    said = []
    assert (
        play_main(["--seed", "1", "--opponents", "random"], lambda _: next(answers), said.append)
        == 0
    )
    assert any(
        line.startswith("Rejected: no action number 555555555555... (5000 digits) (0-85)")
        for line in said
    )
    assert said[-1] == "Bye."


def test_an_allocation_failure_is_told_by_its_size_and_other_errors_are_left_alone():
    cpu = RuntimeError(
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
        "memory: you tried to allocate 6400000000 bytes. Error code 12"
    )
    assert limits.allocation_failure(cpu).startswith("out of memory: an allocation of 5.96 GiB")
    gpu = RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79 GiB total)")
    assert limits.allocation_failure(gpu).startswith("out of GPU memory: an allocation of 2.00")
    with pytest.raises(MemoryError) as numpy_error:
        np.empty(1 << 62, dtype=np.uint8)
    assert "an allocation of 4,294,967,296.00 GiB" in limits.allocation_failure(numpy_error.value)
    assert limits.allocation_failure(RuntimeError("shapes do not match")) is None
    assert limits.allocation_failure(ValueError("out of memory")) is None


def command_modules() -> list[str]:
    """Every module of the project that runs as a command (``python -m``): those whose source
    ends by calling ``main`` under ``if __name__ == "__main__"``."""
    root = Path(__file__).resolve().parent.parent
    return sorted(
        ".".join(path.relative_to(root).with_suffix("").parts)
        for package in ("zhuoji_env", "agents", "training")
        for path in (root / package).rglob("*.py")
        if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")
    )


@pytest.mark.parametrize("module", command_modules())
def test_every_command_ends_an_allocation_failure_as_exit_2(module):
    """Each command's ``main`` itself carries the out-of-memory exit (a decorator that slips
    onto a helper defined above ``main`` leaves the command's tracebacks as they were)."""
    if module.split(".")[-1] in {"rllib_ppo", "bench_rllib", "rllib_two_nodes"}:
        pytest.importorskip("ray")
    main = importlib.import_module(module).main
    assert getattr(main, "out_of_memory_prog", None), f"{module}.main is not decorated"
    assert main.out_of_memory_prog.endswith(module.removesuffix(".__main__"))
