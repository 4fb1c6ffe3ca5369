"""Sizes checked against this machine's memory before anything is allocated.

A batch of a trillion games, a checkpoint that declares a 300,000-wide layer or an arena of
10**12 deals would otherwise fail deep inside numpy or torch (or take the machine down). The
tools estimate what a size needs first and raise :class:`SizeError`, which names the size, the
estimate and the limit.
"""

from __future__ import annotations

import os


class SizeError(ValueError):
    """A size whose memory estimate exceeds :func:`memory_limit`."""


def memory_limit() -> int:
    """Bytes a single allocation may plan on: the physical memory of this machine.

    ``ZHUOJI_MEMORY_LIMIT`` (bytes) lowers or raises it, for tests and for shared machines.
    """
    env = os.environ.get("ZHUOJI_MEMORY_LIMIT")
    if env is not None:
        try:
            value = int(env)
        except ValueError:
            raise ValueError(
                f"ZHUOJI_MEMORY_LIMIT={env!r}: expected a whole number of bytes"
            ) from None
        if value <= 0:
            raise ValueError(f"ZHUOJI_MEMORY_LIMIT={env!r}: expected a positive number of bytes")
        return value
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): 16 GiB
        return 16 << 30


def _gib(n: float) -> str:
    return f"{n / (1 << 30):,.2f} GiB"


def check_memory(what: str, estimate: float) -> None:
    """Raise :class:`SizeError` if ``estimate`` bytes exceeds :func:`memory_limit`; ``what``
    names the size asked for, e.g. ``"--num-envs 100000000"``. The message says whether the
    limit is this machine's memory or ``ZHUOJI_MEMORY_LIMIT``'s."""
    limit = memory_limit()
    if estimate > limit:
        source = (
            "that ZHUOJI_MEMORY_LIMIT sets"
            if os.environ.get("ZHUOJI_MEMORY_LIMIT") is not None
            else "this machine has"
        )
        raise SizeError(
            f"{what} needs about {_gib(estimate)} of memory, more than the {_gib(limit)} "
            f"{source} (set ZHUOJI_MEMORY_LIMIT in bytes to change the limit)"
        )
