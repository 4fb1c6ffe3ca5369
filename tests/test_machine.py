"""What a result records about the machine it was measured on (``zhuoji_env.machine``)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from agents.arena import run_arena
from zhuoji_env import machine

ROOT = Path(__file__).resolve().parents[1]


def test_describe_names_this_python_numpy_torch_and_cpu(monkeypatch):
    m = machine.describe()
    assert m["python"] == platform.python_version() and m["numpy"] == np.__version__
    assert isinstance(m["cpu"], str) and m["cpu"] and m["cores"] >= 1
    assert machine.installed("numpy") == np.__version__  # read without importing
    assert machine.installed("no-such-package-zhuoji") is None
    assert m["torch"] == machine.installed("torch")  # whether or not this process imported it
    line = machine.machine_line(m)
    assert line.startswith(f"{m['cpu']} ({m['cores']} cores), python {m['python']}, numpy ")
    monkeypatch.setattr(machine, "installed", lambda package: "9.9")
    assert machine.machine_line({**machine.describe(), "code": None}).endswith(", torch 9.9")
    monkeypatch.setattr(machine, "installed", lambda package: None)  # a machine without torch
    assert machine.describe()["torch"] is None
    assert "torch" not in machine.machine_line(machine.describe())
    assert machine.machine_line({**m, "cores": None}).startswith(f"{m['cpu']} (? cores)")


def test_describe_names_a_gpu_only_where_cuda_started(monkeypatch):
    cuda = types.SimpleNamespace(
        is_initialized=lambda: True, current_device=lambda: 0, get_device_name=lambda i: "H200"
    )
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(__version__="9.9", cuda=cuda))
    m = machine.describe()
    assert m["gpu"] == "H200" and machine.machine_line({**m, "code": None}).endswith(", GPU H200")
    cuda.is_initialized = lambda: False  # torch loaded, CUDA never started: no GPU was used
    assert machine.describe()["gpu"] is None
    monkeypatch.setitem(sys.modules, "torch", None)  # never imported
    assert machine.describe()["gpu"] is None


def test_cpu_model_reads_cpuinfo_and_falls_back(tmp_path, monkeypatch):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Test CPU 9000 @ 3.0GHz\n")
    assert machine.cpu_model(str(info)) == "Test CPU 9000 @ 3.0GHz"
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    assert machine.cpu_model(str(tmp_path / "missing")) == "riscv64"
    info.write_text("processor\t: 0\n")  # no model name (some ARM kernels)
    assert machine.cpu_model(str(info)) == "riscv64"


def test_an_arena_records_its_chunk_and_machine():
    res = run_arena(["random", "greedy"], 2, seed=3, progress=False, chunk_games=6)
    s = res.summary()
    assert s["chunk_games"] == 6 and s["machine"]["numpy"] == np.__version__
    line = f"played on {machine.machine_line(s['machine'])}, with --chunk 6"
    assert res.table().splitlines()[-2] == line  # the last line stays the one with the wall time


def git_in(root, *args) -> str:
    """A git command in ``root`` that ignores the user's and the system's git configuration."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    config = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    out = subprocess.run(["git", *config, "-C", str(root), *args], check=True, env=env,
                         capture_output=True)  # fmt: skip
    return out.stdout.decode().strip()


def fresh_code_version(root=None):
    machine._code_version.cache_clear()  # read once per process and root
    return machine.code_version(str(root) if root else None)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_code_version_names_the_checkout_commit_and_changes(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    root.mkdir()
    assert fresh_code_version(root) is None  # not a git checkout: an installed package
    git_in(root, "init", "-q")
    (root / "a.py").write_text("x = 1\n")
    odd = os.fsdecode(b"caf\xe9.py")  # a file name that is not UTF-8
    (root / odd).write_text("y = 1\n")
    git_in(root, "add", "a.py", odd)
    git_in(root, "commit", "-qm", "one")
    git_in(root, "config", "core.quotePath", "false")  # git status then prints the raw bytes
    head = git_in(root, "rev-parse", "HEAD")
    assert machine.code_version(str(root)) is None  # the first reading stays for the process
    assert fresh_code_version(root) == {"commit": head, "dirty": False}
    (root / "notes.txt").write_text("untracked files (a run's outputs) do not count\n")
    assert fresh_code_version(root) == {"commit": head, "dirty": False}
    (root / odd).write_text("y = 2\n")
    assert fresh_code_version(root) == {"commit": head, "dirty": True}
    machine.code_version(str(root))["commit"] = "changed by a caller"
    assert machine.code_version(str(root))["commit"] == head  # each call gets its own copy
    other = tmp_path / "other"
    other.mkdir()
    git_in(other, "init", "-q")
    git_in(other, "commit", "-q", "--allow-empty", "-m", "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))  # would win over git -C
    assert fresh_code_version(root) == {"commit": head, "dirty": True}
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    assert fresh_code_version(root) is None  # git cannot be run
    monkeypatch.undo()
    line = machine.machine_line({**machine.describe(), "code": {"commit": head, "dirty": True}})
    assert line.endswith(f"commit {head[:10]} with changes")
    assert "commit" not in machine.machine_line({**machine.describe(), "code": None})
    fresh_code_version()


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout"
)
def test_code_version_reads_this_checkout():
    assert fresh_code_version()["commit"] == git_in(ROOT, "rev-parse", "HEAD")


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout"
)
def test_source_commit_names_this_checkout():
    from training.cli import source_commit

    head = git_in(ROOT, "rev-parse", "HEAD")
    dirty = bool(git_in(ROOT, "status", "--porcelain"))  # untracked files count here
    assert source_commit() == head + ("+dirty" if dirty else "")


def _simd_run(code: str, disable: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    if disable:
        env["NPY_DISABLE_CPU_FEATURES"] = disable
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _cpu_runs_avx512() -> bool:
    """Whether numpy should run AVX-512 code here, decided apart from ``numpy_simd``: the CPU has
    AVX512F by numpy's own detection, this numpy was built with an AVX-512 target, and no
    ``NPY_DISABLE_CPU_FEATURES`` is set."""
    dispatch = machine._numpy_dispatch()
    if dispatch is None or os.environ.get("NPY_DISABLE_CPU_FEATURES"):
        return False
    _, targets, features = dispatch
    return bool(features.get("AVX512F")) and any(machine.is_avx512(t) for t in targets)


def test_the_numpy_simd_target_is_recorded_and_follows_numpys_switch():
    m = machine.describe()
    assert m["numpy_simd"] == machine.numpy_simd()
    parts = machine.machine_line(m).split(", ")
    shown = f"numpy {m['numpy']}" + (f" ({m['numpy_simd']})" if m["numpy_simd"] else "")
    assert shown in parts
    assert f"numpy {m['numpy']}" in machine.machine_line({**m, "numpy_simd": None}).split(", ")
    if not _cpu_runs_avx512():
        pytest.skip(f"numpy dispatches to {m['numpy_simd']} here, not AVX-512")
    assert machine.is_avx512(m["numpy_simd"])
    switch = machine.avx2_switch()
    assert switch and all(machine.is_avx512(t) for t in switch.split())
    code = "from zhuoji_env import machine; print(machine.numpy_simd())"
    target = _simd_run(code, switch).strip()
    assert target != "None" and not machine.is_avx512(target)


def test_avx512_targets_are_told_by_their_names_in_every_numpy():
    for name in ("X86_V4", "AVX512F", "AVX512_SKX", "AVX512_ICL", "AVX512_SPR"):
        assert machine.is_avx512(name)
    for name in ("X86_V3", "AVX2", "FMA3", "SSE42", "ASIMDFHM", None):
        assert not machine.is_avx512(name)


def test_rules_advice_differs_in_its_last_bits_between_numpys_simd_targets():
    """Why games replay exactly only on the same SIMD target (zhuoji_env.machine): the same
    observations give float64 advice scores that differ between AVX2 and AVX-512 code."""
    if not _cpu_runs_avx512():
        pytest.skip("needs a CPU on which numpy runs AVX-512 code")
    code = """
import hashlib
import numpy as np
from agents.registry import make_agent
from agents.rule import RuleAgent
from zhuoji_env.engine import BatchGame
from zhuoji_env.observation import encode
game, rnd, rule = BatchGame("guiyang", 64, seed=5), make_agent("random", seed=5), RuleAgent()
g, scores = np.arange(64), []
for _ in range(60):
    st = game.state
    obs = encode(st, g, st.actor)
    scores.append(rule.advice(obs, st.mask)[1])
    game.step(rnd.act(obs, st.mask))
print(hashlib.sha256(np.nan_to_num(np.concatenate(scores)).tobytes()).hexdigest())
"""
    default = _simd_run(code, None)
    assert default == _simd_run(code, None)  # the same target: the same bits
    assert default != _simd_run(code, machine.avx2_switch())
