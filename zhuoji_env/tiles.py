"""Tiles: the 27 kinds of the 108-tile set, their codes, and count vectors.

Kinds 0-8 are characters (万, ``1m``..``9m``), 9-17 dots (筒, ``1p``..``9p``), 18-26 bamboo
(条, ``1s``..``9s``). ``1s`` (kind 18) is the 幺鸡 chicken. A hand is a length-27 vector of counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

NUM_KINDS = 27
NUM_TILES = 108
COPIES = 4
SUITS = "mps"
YAOJI = 18
"""Kind index of ``1s``, the 幺鸡."""

CODES: tuple[str, ...] = tuple(f"{rank}{suit}" for suit in SUITS for rank in range(1, 10))
_KIND_OF_CODE = {code: kind for kind, code in enumerate(CODES)}

UNICODE: tuple[str, ...] = tuple(
    chr(base + rank) for base in (0x1F007, 0x1F019, 0x1F010) for rank in range(9)
)
"""Unicode mahjong glyphs of the 27 kinds (🀇..🀏, 🀙..🀡, 🀐..🀘)."""


def kind(code: str) -> int:
    """Kind index of a tile code such as ``"5m"``; a bad code raises ``ValueError``."""
    try:
        return _KIND_OF_CODE[code]
    except (KeyError, TypeError):
        raise ValueError(
            f"bad tile code {code!r}: expected rank 1-9 then suit m, p or s, e.g. '5m', '1s'"
        ) from None


def code(k: int) -> str:
    """Tile code of a kind index 0-26 (an integer: a bool or a float is refused)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < NUM_KINDS:
        raise ValueError(f"bad tile kind {k!r}: expected an integer 0-26")
    return CODES[int(k)]


def parse_tiles(text: str | Sequence[str]) -> list[int]:
    """Kinds of a concatenated code string (``"1m2m3m"``) or of a list of codes (a sequence or
    an array; a dict, a set, bytes or a number is a ``TypeError``)."""
    if not isinstance(text, (str, Sequence, np.ndarray)) or isinstance(text, (bytes, bytearray)):
        raise TypeError(
            f"tiles must be a string of codes ('1m2m3m') or a list of codes, got "
            f"{type(text).__name__}"
        )
    if isinstance(text, str):
        if len(text) % 2:
            raise ValueError(f"tile string of odd length {len(text)}: {text!r}")
        return [kind(text[i : i + 2]) for i in range(0, len(text), 2)]
    return [kind(c) for c in text]


def format_tiles(kinds: Iterable[int]) -> str:
    """Concatenated codes of a sequence of kinds (``code`` checks each: no bool or float)."""
    if isinstance(kinds, str):
        raise ValueError(f"format_tiles takes kinds (integers 0-26), got the string {kinds!r}")
    return "".join(code(k) for k in kinds)


def to_counts(tiles: str | Sequence[str] | Iterable[int]) -> np.ndarray:
    """A 27-vector of counts (int8) from codes or integer kinds (``code`` checks each)."""
    if isinstance(tiles, str) or (
        isinstance(tiles, Sequence) and len(tiles) and isinstance(tiles[0], str)
    ):
        kinds = parse_tiles(tiles)  # type: ignore[arg-type]
    else:
        kinds = list(tiles)  # type: ignore[arg-type]
        for k in kinds:
            code(k)
    counts = np.bincount(np.asarray(kinds, dtype=np.int64), minlength=NUM_KINDS)
    if counts.max(initial=0) > 4:
        extra = format_tiles(np.flatnonzero(counts > 4))
        raise ValueError(f"more than 4 tiles of {extra}: a kind has 4 copies")
    return counts.astype(np.int8)


def kind_counts(rows) -> np.ndarray:
    """Counts ``[..., 27]`` of the kinds in rows of kinds ``[..., L]`` (a wall, a batch of walls).

    Raises ``ValueError`` for a kind outside 0-26.
    """
    t = np.asarray(rows)
    if t.ndim < 1 or (t.size and t.dtype.kind not in "iu"):
        raise ValueError(
            f"tile kinds must be integers 0-{NUM_KINDS - 1} in rows [..., L], got "
            f"{t.dtype} of shape {t.shape}"
        )
    t = t.astype(np.int64)
    if t.size and (t.min() < 0 or t.max() >= NUM_KINDS):
        raise ValueError(f"tile kinds must be 0-{NUM_KINDS - 1}")
    if not t.size:
        return np.zeros(t.shape[:-1] + (NUM_KINDS,), dtype=np.int64)
    flat = t.reshape(-1, t.shape[-1])
    offsets = np.arange(flat.shape[0])[:, None] * NUM_KINDS
    counts = np.bincount((flat + offsets).ravel(), minlength=flat.shape[0] * NUM_KINDS)
    return counts.reshape(t.shape[:-1] + (NUM_KINDS,))


def from_counts(counts: np.ndarray) -> list[int]:
    """Sorted kinds of a 27-vector of counts."""
    counts = np.asarray(counts)
    if counts.shape != (NUM_KINDS,) or counts.dtype.kind not in "iu":
        raise ValueError(
            f"expected 27 integer counts 0-4, got {counts.dtype} of shape {counts.shape}"
        )
    if (counts < 0).any() or (counts > 4).any():
        bad = format_tiles(np.flatnonzero((counts < 0) | (counts > 4)))
        raise ValueError(f"expected 27 integer counts 0-4, got other counts of {bad}")
    return [k for k in range(NUM_KINDS) for _ in range(int(counts[k]))]


def counts_to_str(counts: np.ndarray) -> str:
    """Codes of a count vector, sorted (``"1m1m5p"``)."""
    return format_tiles(from_counts(counts))


def _kinds(k) -> np.ndarray:
    """Kinds (a scalar or an array) as integers 0-26; ``ValueError`` otherwise (``suit_of(30)``
    gave 3, ``next_kind(27)`` 28 and ``next_kind(4.5)`` 5)."""
    a = np.asarray(k)
    if a.dtype.kind not in "iu" or (a.size and (a.min() < 0 or a.max() >= NUM_KINDS)):
        raise ValueError(f"tile kinds must be integers 0-{NUM_KINDS - 1}, got {k!r}")
    return a


def suit_of(k):
    """Suit index 0 (m), 1 (p), 2 (s) of kinds (scalar or array)."""
    a = _kinds(k)
    return int(a) // 9 if a.ndim == 0 else a // 9


def next_kind(k):
    """The next tile: rank + 1 in the same suit, 9 wrapping to 1 (翻鸡 uses it)."""
    k = _kinds(k)
    out = (k // 9) * 9 + (k % 9 + 1) % 9
    return int(out) if out.ndim == 0 else out


def prev_kind(k):
    """The previous tile: rank - 1 in the same suit, 1 wrapping to 9 (上下鸡)."""
    k = _kinds(k)
    out = (k // 9) * 9 + (k % 9 + 8) % 9
    return int(out) if out.ndim == 0 else out


def full_set() -> np.ndarray:
    """The 108 tiles as kinds in sorted order (int8)."""
    return np.repeat(np.arange(NUM_KINDS, dtype=np.int8), COPIES)
