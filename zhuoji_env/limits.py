"""Sizes checked against the memory this process may use before anything is allocated.

A batch of a trillion games, a checkpoint that declares a 300,000-wide layer or an arena of
10**12 deals would otherwise fail deep inside numpy or torch (or take the machine down). The
tools estimate what a size needs first and raise :class:`SizeError`, which names the size, the
estimate and the limit. The limit (:func:`memory_limit`) is the smallest of this machine's
memory, what is available now (other programs hold the rest), what the process's address-space
limit (``ulimit -v``) leaves and what its cgroup's memory limit (a container's, a job's) leaves.
An allocation that fails all the same (an estimate is a lower bound) ends a command with exit
status 2 and a message giving the size and the limit (:func:`exits_2_when_out_of_memory`), not
a traceback.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import psutil

try:
    import resource
except ImportError:  # Windows: no address-space limit to read
    resource = None

CGROUP_ROOT = Path("/sys/fs/cgroup")
"""Where the cgroup file systems are mounted (v2 here, v1's memory controller in ``memory/``)."""
PROC_CGROUP = Path("/proc/self/cgroup")
"""This process's cgroups, one line per hierarchy: ``ID:CONTROLLERS:PATH``."""
UNLIMITED = 1 << 60
"""A cgroup v1 limit at or above this is no limit (it writes 2**63 rounded to pages)."""


PROCESS_BYTES = 80 << 20
"""Memory of a worker process that plays the engine (an interpreter with numpy and the engine
imported: 80 MB measured), counted per process a count flag starts."""
TORCH_PROCESS_BYTES = 270 << 20
"""Memory of a worker process that imports torch (270 MB measured with the agents and the
trainer imported), counted per process that may load a network."""


class SizeError(ValueError):
    """A size whose memory estimate exceeds :func:`memory_limit`."""


def _gib(n: float) -> str:
    return f"{n / (1 << 30):,.2f} GiB"


def _read_int(path: Path) -> int | None:
    """The integer in a cgroup file, None where there is no file or no limit (``max``)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _stat_value(path: Path, key: str) -> int:
    """A counter of a cgroup's ``memory.stat`` (0 where absent)."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        pass
    return 0


def cgroup_headroom() -> tuple[int, str] | None:
    """The bytes this process's cgroups leave it (the least, over its cgroup and the ones
    above it, of the memory limit less what the group uses, its reclaimable file cache not
    counted), with the file that sets that limit; None where no cgroup limits memory."""
    try:
        lines = PROC_CGROUP.read_text().splitlines()
    except OSError:
        return None
    best = None
    for line in lines:
        _, controllers, rel = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":  # cgroup v2, the unified hierarchy
            base, files = CGROUP_ROOT, ("memory.max", "memory.current", "inactive_file")
        elif "memory" in controllers.split(","):  # cgroup v1's memory controller
            base = CGROUP_ROOT / "memory"
            files = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
        else:
            continue
        folder = base / rel.strip("/")
        while True:
            limit = _read_int(folder / files[0])
            if limit is not None and limit < UNLIMITED:
                used = _read_int(folder / files[1]) or 0
                used -= min(used, _stat_value(folder / "memory.stat", files[2]))
                left = max(0, limit - used)
                if best is None or left < best[0]:
                    best = (left, f"its cgroup's memory limit ({folder / files[0]}) leaves")
            if folder == base or folder.parent == folder:
                break
            folder = folder.parent
    return best


def address_space_headroom() -> tuple[int, str] | None:
    """The bytes the process's address-space limit (``ulimit -v``, ``RLIMIT_AS``) leaves it
    beyond what it has mapped already; None where there is no such limit."""
    if resource is None:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    mapped = psutil.Process().memory_info().vms
    return max(0, soft - mapped), f"the address-space limit (ulimit -v, {_gib(soft)}) leaves"


def limits() -> list[tuple[int, str]]:
    """Every bound on the memory this process may still allocate, each with what sets it:
    this machine's memory, what is available now, and where set, the address-space limit's and
    the cgroup's headroom."""
    memory = psutil.virtual_memory()
    found = [
        (memory.total, "this machine has"),
        (memory.available, "available now (other programs hold the rest)"),
    ]
    for headroom in (address_space_headroom(), cgroup_headroom()):
        if headroom is not None:
            found.append(headroom)
    return found


def _override() -> int | None:
    """``ZHUOJI_MEMORY_LIMIT`` in bytes, if set (checked)."""
    env = os.environ.get("ZHUOJI_MEMORY_LIMIT")
    if env is None:
        return None
    try:
        value = int(env)
    except ValueError:
        raise ValueError(f"ZHUOJI_MEMORY_LIMIT={env!r}: expected a whole number of bytes") from None
    if value <= 0:
        raise ValueError(f"ZHUOJI_MEMORY_LIMIT={env!r}: expected a positive number of bytes")
    return value


def binding_limit() -> tuple[int, str]:
    """The smallest of :func:`limits` and what sets it, or ``ZHUOJI_MEMORY_LIMIT`` (bytes)
    where it is set: it replaces them all, lower or higher, for tests and shared machines."""
    value = _override()
    if value is not None:
        return value, "that ZHUOJI_MEMORY_LIMIT sets"
    return min(limits())


def memory_limit() -> int:
    """Bytes a single allocation may plan on (:func:`binding_limit`)."""
    return binding_limit()[0]


def check_memory(what: str, estimate: float) -> None:
    """Raise :class:`SizeError` if ``estimate`` bytes exceeds :func:`memory_limit`; ``what``
    names the size asked for, e.g. ``"--num-envs 100000000"``. The message says which limit
    binds: this machine's memory, what is available, ``ulimit -v``, the cgroup's or
    ``ZHUOJI_MEMORY_LIMIT``'s."""
    limit, source = binding_limit()
    if estimate > limit:
        raise SizeError(
            f"{what} needs about {_gib(estimate)} of memory, more than the {_gib(limit)} "
            f"{source} (set ZHUOJI_MEMORY_LIMIT in bytes to change the limit)"
        )


_TORCH_SIZE = re.compile(r"(?:tried to allocate|Tried to allocate) (\d+) bytes")
_TORCH_UNITS = re.compile(r"Tried to allocate ([\d.]+) (KiB|MiB|GiB|TiB)")


def allocation_failure(exc: BaseException) -> str | None:
    """The message for an allocation that failed (``MemoryError``, numpy's with its size, or
    torch's allocator error, the CPU's or a GPU's): the size where known and the limit; None
    for any other error."""
    size = None
    if isinstance(exc, MemoryError):
        size = getattr(exc, "_total_size", None)  # numpy's _ArrayMemoryError
    elif isinstance(exc, RuntimeError) and (
        "can't allocate memory" in str(exc) or "out of memory" in str(exc)
    ):
        text = str(exc)
        found = _TORCH_SIZE.search(text)
        units = _TORCH_UNITS.search(text)
        if found:
            size = int(found[1])
        elif units:
            scale = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
            size = float(units[1]) * scale[units[2]]
    else:
        return None
    asked = f"an allocation of {_gib(size)}" if size else "an allocation"
    if "CUDA" in str(exc):  # the GPU's memory, which the limits here do not measure
        return f"out of GPU memory: {asked} failed on the GPU (make the sizes smaller)"
    limit, source = min(limits())  # the real ones: ZHUOJI_MEMORY_LIMIT may have let it through
    return (
        f"out of memory: {asked} failed, more than the {_gib(limit)} {source} (make the sizes "
        "smaller, or free memory)"
    )


def exits_2_when_out_of_memory(prog: str) -> Callable:
    """Decorate a command's ``main``: an allocation that fails in it (:func:`allocation_failure`)
    ends the command with ``prog: error: out of memory: ...`` and exit status 2, as a size the
    checks refuse would, instead of a traceback."""

    def decorate(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def run(*args, **kwargs) -> int:
            try:
                return main(*args, **kwargs)
            except (MemoryError, RuntimeError) as exc:
                message = allocation_failure(exc)
                if message is None:
                    raise
                print(f"{prog}: error: {message}", file=sys.stderr)
                return 2

        run.out_of_memory_prog = prog  # what tests look for on every command's main
        return run

    return decorate
