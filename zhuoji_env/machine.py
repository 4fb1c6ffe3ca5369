"""The machine, libraries and code a result was measured with: :func:`describe`.

A game whose agents read ``rule``'s advice (``rule``'s own choices, the ``ppo-*`` policies'
input, the search's rollouts) replays exactly only where numpy computes it on the same SIMD
target: its float64 advice scores differ in their last bits between numpy's AVX2 and AVX-512
code, which now and then changes a decision, and every game of its batch from there on
(docs/search.md, "Replaying the arenas on another machine"). The arena and the ladder write
this description beside their numbers, the SIMD target included, so that a replay can say
whether the machine, libraries and code matched; :func:`avx2_switch` is how an AVX-512 CPU
plays numpy's AVX2 code.

The **portable numeric mode** (:func:`portable_settings`) goes further: set in the environment
before numpy and torch load, it pins every library choice a game's numbers were seen to depend
on, so that the benchmark protocol's games play out the same on every x86-64 CPU with AVX2,
AVX-512 or not, Intel or AMD, whatever its core count. ``python -m agents.ladder --protocol``
always runs under it, and ``--portable`` asks for it in any ladder or arena
(:func:`run_portably` starts the command again under it); :func:`is_portable` says whether this
process does.
"""

from __future__ import annotations

import functools
import importlib
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import NoReturn

import numpy as np


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model name (from ``cpuinfo`` on Linux), else what :mod:`platform` says."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def usable_cores() -> int | None:
    """The CPU cores this process may run on (its affinity where the system reports one, else
    the machine's count); None where neither is known."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def describe() -> dict[str, object]:
    """The CPU, usable cores, operating system and library versions of this process, and the
    commit of its code (:func:`code_version`).

    ``torch`` is the installed version (read without importing torch), None where torch is not
    installed; ``portable`` whether it computes under the portable numeric mode
    (:func:`is_portable`); ``gpu`` names the current CUDA device where torch has started CUDA in
    this process (a process that ran one network on a GPU reports it for all its later results).
    """
    cuda = getattr(sys.modules.get("torch"), "cuda", None)
    gpu = None
    if cuda is not None and cuda.is_initialized():
        gpu = cuda.get_device_name(cuda.current_device())
    return {
        "cpu": cpu_model(),
        "cores": usable_cores(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numpy_simd": numpy_simd(),
        "torch": installed("torch"),
        "gpu": gpu,
        "portable": is_portable(),
        "code": code_version(),
    }


def numpy_simd() -> str | None:
    """The widest SIMD target numpy's dispatched functions run in this process (``X86_V3`` or
    ``AVX2``: AVX2; ``X86_V4`` or ``AVX512_*``: AVX-512, :func:`is_avx512`), which the CPU and
    ``NPY_DISABLE_CPU_FEATURES`` decide; None where this numpy does not say."""
    dispatch = _numpy_dispatch()
    if dispatch is None:
        return None
    baseline, targets, features = dispatch
    on = [t for t in targets if features.get(t)] or list(baseline)
    return on[-1] if on else None


def is_avx512(target: str | None) -> bool:
    """Whether the numpy SIMD target ``target`` (:func:`numpy_simd`) is AVX-512 code: its name
    differs between numpy versions (``X86_V4`` from numpy 2.4, ``AVX512F`` ... ``AVX512_SPR``)."""
    return target is not None and (target == "X86_V4" or target.startswith("AVX512"))


def avx2_switch() -> str:
    """The value of ``NPY_DISABLE_CPU_FEATURES`` that makes this numpy run its AVX2 code on an
    AVX-512 CPU: every AVX-512 target it was built with, by this numpy's names (empty where it
    has none or does not say). Games that read ``rule``'s advice replay exactly only on the same
    target (docs/search.md), so this is how an AVX-512 machine replays results played on AVX2."""
    dispatch = _numpy_dispatch()
    return " ".join(t for t in dispatch[1] if is_avx512(t)) if dispatch else ""


def _numpy_dispatch() -> tuple[list, list, dict] | None:
    """numpy's baseline and dispatch targets and the CPU features it enables, or None."""
    for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            umath = importlib.import_module(name)
            return umath.__cpu_baseline__, umath.__cpu_dispatch__, umath.__cpu_features__
        except (ImportError, AttributeError):
            continue
    return None


def code_version(root: str | None = None) -> dict[str, object] | None:
    """The git commit of the checkout this package runs from (``root``: another checkout), and
    whether its tracked files differ from it (``dirty``; untracked files, such as a run's
    outputs, do not count). None outside a git checkout (an installed package) or where git
    cannot be run. Read once per process and root, at the first call: the arena calls it as it
    starts, so later edits to the files are not taken for the code that played."""
    code = _code_version(str(Path(root) if root else Path(__file__).resolve().parents[1]))
    return dict(code) if code else None


@functools.cache
def _code_version(top: str) -> dict[str, object] | None:
    if not (Path(top) / ".git").exists():
        return None
    head = git_output(top, "rev-parse", "HEAD")
    status = git_output(top, "status", "--porcelain", "--untracked-files=no")
    if head is None or status is None:
        return None
    return {"commit": head.decode("ascii", "replace").strip(), "dirty": bool(status.strip())}


def git_output(top: str, *words: str) -> bytes | None:
    """What ``git -C top WORDS`` prints (bytes: file names need not be UTF-8), or None where git
    cannot be run or fails. ``GIT_*`` variables are dropped (``GIT_DIR`` would name another
    repository) and no optional lock is taken (none held against the user's own git)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        run = subprocess.run(
            ["git", "--no-optional-locks", "-C", top, *words],
            capture_output=True,
            env=env,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return run.stdout


def installed(package: str) -> str | None:
    """The installed version of ``package``, or None where it is not installed."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine_line(m: dict) -> str:
    """One line of :func:`describe`'s dict, for a printed table."""
    parts = [
        f"{m['cpu']} ({m['cores'] or '?'} cores)",
        f"python {m['python']}",
        f"numpy {m['numpy']}" + (f" ({m['numpy_simd']})" if m.get("numpy_simd") else ""),
    ]
    parts += [f"torch {m['torch']}"] if m.get("torch") else []
    parts += [f"GPU {m['gpu']}"] if m.get("gpu") else []
    code = m.get("code")
    if code:
        parts += [f"commit {code['commit'][:10]}{' with changes' if code['dirty'] else ''}"]
    parts += ["portable numerics"] if m.get("portable") else []
    return ", ".join(parts)


# --------------------------------------------------------------------------- portable numerics
PORTABLE_MARK = "ZHUOJI_PORTABLE_RESTART"
"""Set in the environment of a command :func:`run_portably` started again, so that a second
restart is refused rather than looped."""

_STARTED_WITH = dict(os.environ)  # as numpy, imported above, and torch, later, read it


def portable_settings() -> dict[str, str] | None:
    """The environment of the portable numeric mode, or None on a CPU that is not x86-64.

    What each pins, and why (``docs/ladder.md``, "Numbers that reproduce"):

    - ``NPY_DISABLE_CPU_FEATURES``: numpy's AVX-512 code (:func:`avx2_switch`), whose float64
      ``exp`` and ``log`` differ in their last bits from the C library's, which numpy's AVX2 and
      older code call: ``rule``'s advice turns on them;
    - ``ATEN_CPU_CAPABILITY=avx2``: torch's own kernels (the policies' softmax) run their AVX2
      code on an AVX-512 CPU too;
    - ``MKL_CBWR=COMPATIBLE`` and ``MKL_NUM_THREADS=1``: the policies' matrix products run
      oneMKL's reproducible branch, the same on Intel and AMD CPUs of any instruction set, at a
      fixed thread count (its results depend on the thread count otherwise);
    - ``ONEDNN_MAX_CPU_ISA=AVX2``: any torch operation that oneDNN computes, its AVX2 code.
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    return {
        "NPY_DISABLE_CPU_FEATURES": avx2_switch(),
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_CBWR": "COMPATIBLE",
        "MKL_NUM_THREADS": "1",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
    }


def is_portable() -> bool:
    """Whether this process computes under the portable numeric mode: its settings were in the
    environment as it started (before numpy and torch read them) and numpy runs no AVX-512
    code."""
    want = portable_settings()
    return (
        want is not None
        and all(_STARTED_WITH.get(k) == v for k, v in want.items())
        and not is_avx512(numpy_simd())
    )


def run_portably(module: str, argv: Sequence[str]) -> NoReturn:
    """Replace this process by ``python -m module ARGV`` under the portable numeric mode (numpy
    and torch read its settings only as they load, so a running process cannot switch).
    ``RuntimeError`` where the mode does not exist here (not an x86-64 CPU) or where this process
    is already such a restart and still not under it."""
    settings = portable_settings()
    if settings is None:
        raise RuntimeError(
            f"the portable numeric mode is for x86-64 CPUs; this one is {platform.machine()!r}"
        )
    if os.environ.get(PORTABLE_MARK):
        raise RuntimeError(
            f"restarted under the portable numeric mode's settings {settings}, this process "
            f"still does not run under them (numpy's SIMD target: {numpy_simd()})"
        )
    sys.stdout.flush()
    sys.stderr.flush()
    env = {**os.environ, **settings, PORTABLE_MARK: "1"}
    os.execve(sys.executable, [sys.executable, "-m", module, *argv], env)
