"""The memory limit is the process's own, and sizes at their extremes get a message.

:func:`zhuoji_env.limits.memory_limit` is the smallest of this machine's memory, what is
available, what ``ulimit -v`` leaves and what the cgroup leaves; an allocation that fails all
the same ends a command with exit status 2, its size and the limit. Every count flag is checked
against memory before the work starts, and every prompt answers any input with a message.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import torch

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
