"""Hand evaluation from precomputed per-suit tables (RULES.md 5).

Every function takes counts with any leading batch shape (``[..., 27]``) and returns arrays of
that leading shape, so a call is a few array operations.

The tables are indexed by one suit's nine counts read as a base-5 number (``5**9`` entries).
The core table ``DIST[idx, m, p]`` is the least number of tiles that must be added to the suit
so that it contains ``m`` sets and ``p`` pairs (0 <= m <= 4, p in {0, 1}), with at most four
copies of a kind: an exact distance, from which winning (distance 0), waits and shanten follow.
It is built once by a dynamic programme over the nine ranks and cached in ``data/``.
"""

from __future__ import annotations

import os
from operator import add, itemgetter
from pathlib import Path

import numpy as np

from zhuoji_env.fileio import write_atomic
from zhuoji_env.tiles import NUM_KINDS

_POW5 = (5 ** np.arange(8, -1, -1)).astype(np.int32)
_N_SUIT = 5**9
_INF = 99
_CACHE_NAME = "hand_tables_v4.npz"


def _build_dist() -> np.ndarray:
    """DIST[idx, m, p] for every suit vector, by a DP over ranks (rank 1 most significant)."""
    states = [
        (c1, c2, m, p)
        for m in range(5)
        for c1 in range(5)
        for c2 in range(5)
        for p in range(2)
        if c1 + c2 <= m
    ]
    sid = {s: i for i, s in enumerate(states)}
    n_states = len(states)
    value = np.full((1, n_states), _INF, dtype=np.int16)
    value[0, sid[(0, 0, 0, 0)]] = 0
    for rank in range(9):
        src, dst, demand = [], [], []
        for (c1, c2, m, p), s in sid.items():
            for r in range(5 if rank <= 6 else 1):
                for t in range(2):
                    for q in range(2 - p):
                        d = c1 + c2 + r + 3 * t + 2 * q
                        nm = m + r + t
                        if d > 4 or nm > 4:
                            continue
                        src.append(s)
                        dst.append(sid[(r, c1, nm, p + q)])
                        demand.append(d)
        order = np.argsort(dst, kind="stable")
        src_a = np.asarray(src)[order]
        dst_a = np.asarray(dst)[order]
        demand_a = np.asarray(demand, dtype=np.int16)[order]
        starts = np.flatnonzero(np.r_[True, dst_a[1:] != dst_a[:-1]])
        targets = dst_a[starts]
        new = np.full((value.shape[0], 5, n_states), _INF, dtype=np.int16)
        for h in range(5):
            cand = value[:, src_a] + np.maximum(demand_a - h, 0)
            new[:, h, targets] = np.minimum.reduceat(cand, starts, axis=1)
        value = np.minimum(new.reshape(-1, n_states), _INF)
    finals = [sid[(0, 0, m, p)] for m in range(5) for p in range(2)]
    return value[:, finals].reshape(_N_SUIT, 5, 2).astype(np.uint8)


def _derive(dist: np.ndarray) -> dict[str, np.ndarray]:
    """Completion flags and wait masks per suit vector."""
    digits = (np.arange(_N_SUIT)[:, None] // _POW5[None, :]) % 5
    total = digits.sum(1)
    m = np.minimum(total // 3, 4)
    rows = np.arange(_N_SUIT)
    sets_only = (total % 3 == 0) & (total <= 12) & (dist[rows, m, 0] == 0)
    with_pair = (total % 3 == 2) & (total <= 14) & (dist[rows, m, 1] == 0)
    complete = (sets_only | with_pair).astype(np.uint8)
    # Codes whose sum over the three suits is 6 exactly for a standard winning hand: sets only 1,
    # sets and a pair 4, anything else 30; and the pairs of an all-even suit (else 30), whose
    # sum is 7 exactly for seven pairs. Three codes never overflow uint8.
    win_code = np.where(sets_only, 1, np.where(with_pair, 4, 30)).astype(np.uint8)
    even = (digits % 2 == 0).all(1)
    pair_code = np.where(even, total // 2, 30).astype(np.uint8)
    waits = np.zeros(_N_SUIT, dtype=np.uint16)
    for r in range(9):
        can_add = digits[:, r] < 4
        added = np.where(can_add, rows + _POW5[r], 0)
        waits |= (can_add & (complete[added] == 1)).astype(np.uint16) << r
    rem = (total % 3).astype(np.uint8)
    return {
        "waits": waits,
        "win_code": win_code,
        "pair_code": pair_code,
        "rem": rem,
    }


def _save_tables(path: Path, tables: dict[str, np.ndarray]) -> None:
    """``np.savez_compressed`` into exactly ``path`` (given a name, numpy would add ``.npz``)."""
    with open(path, "wb") as f:
        np.savez_compressed(f, **tables)


def _load_tables() -> dict[str, np.ndarray]:
    here = Path(__file__).parent / "data" / _CACHE_NAME
    user = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "zhuoji_env"
    for path in (here, user / _CACHE_NAME):
        if path.exists():
            with np.load(path) as f:
                return {k: f[k] for k in f.files}
    dist = _build_dist()
    tables = {"dist": dist, **_derive(dist)}
    for path in (here, user / _CACHE_NAME):
        try:
            write_atomic(path, lambda tmp: _save_tables(tmp, tables))
            break
        except OSError:
            continue
    return tables


_T = _load_tables()
DIST: np.ndarray = _T["dist"]
"""``[5**9, 5, 2]`` uint8: tiles to add for m sets and p pairs in one suit."""
SUIT_WAITS: np.ndarray = _T["waits"]
"""``[5**9]`` uint16: bit r set where adding rank r+1 makes the suit complete."""
WIN_CODE: np.ndarray = _T["win_code"]
"""``[5**9]`` uint8: 1 sets only, 4 sets and one pair, 30 otherwise (three suits sum to 6)."""
PAIR_CODE: np.ndarray = _T["pair_code"]
"""``[5**9]`` uint8: pairs in an all-even suit, 30 otherwise (three suits sum to 7)."""
SUIT_REM: np.ndarray = _T["rem"]
"""``[5**9]`` uint8: the suit's tile count mod 3."""
_SHIFTS = np.arange(NUM_KINDS, dtype=np.uint32)
_POW5_BLOCK = np.zeros((NUM_KINDS, 3), dtype=np.float32)
for _s in range(3):
    _POW5_BLOCK[9 * _s : 9 * _s + 9, _s] = _POW5


def _out_of_range(c: np.ndarray) -> bool:
    if c.dtype == np.int8:  # one pass: negative counts wrap to >= 128
        return bool((c.view(np.uint8) > 4).any())
    return bool(c.min() < 0 or c.max() > 4)


def _counts(concealed) -> np.ndarray:
    """Validated counts ``[..., 27]``: integers 0-4 (a dtype check, free for the engine's)."""
    c = np.asarray(concealed)
    if c.dtype.kind not in "iu":
        raise ValueError(f"tile counts must be integers 0-4, got dtype {c.dtype}")
    if c.shape[-1:] != (NUM_KINDS,):
        raise ValueError(f"expected counts with last axis 27, got shape {c.shape}")
    if c.size and _out_of_range(c):
        raise ValueError("tile counts must be 0-4")
    return c


def _melds(melds) -> np.ndarray:
    """Validated numbers of melds: integers 0-4 (an int, or an integer array to broadcast)."""
    m = np.asarray(melds)
    if m.dtype.kind not in "iu" or (m.size and (m.min() < 0 or m.max() > 4)):
        raise ValueError(f"melds must be integers 0-4 (the number of melds), got {melds!r}")
    return m


def _meld_tiles(meld_tiles) -> np.ndarray:
    """Validated tiles per kind in melds ``[..., 27]``: integers 0-4 (a pong 3, a kong 4)."""
    try:
        return _counts(meld_tiles)
    except ValueError as exc:
        raise ValueError(f"meld_tiles: {exc}") from None


def _check_seven_pairs(seven_pairs) -> None:
    """``seven_pairs`` is True or False: a string such as ``"no"`` would count as true."""
    if not isinstance(seven_pairs, (bool, np.bool_)):
        raise TypeError(f"seven_pairs must be True or False, got {seven_pairs!r}")


def suit_index(concealed) -> np.ndarray:
    """Base-5 index of each suit: ``[..., 3]`` int32 (counts must be 0-4)."""
    c = _counts(concealed)
    # A float32 product is exact here (indices < 2**24) and runs on BLAS.
    return (c.astype(np.float32) @ _POW5_BLOCK).astype(np.int32)


def _seven_pairs(c: np.ndarray) -> np.ndarray:
    return (c.sum(-1) == 14) & ((c % 2) == 0).all(-1)


def is_win(concealed, melds: int | np.ndarray = 0) -> np.ndarray:
    """Whether a 3k+2 concealed hand wins (RULES.md 5.1).

    ``melds`` is the number of melds (broadcast); seven pairs need none and 14 concealed tiles,
    four identical tiles counting as two pairs.
    """
    idx = suit_index(concealed)
    i0, i1, i2 = idx[..., 0], idx[..., 1], idx[..., 2]
    standard = (WIN_CODE[i0] + WIN_CODE[i1] + WIN_CODE[i2]) == 6
    seven = (PAIR_CODE[i0] + PAIR_CODE[i1] + PAIR_CODE[i2]) == 7
    return standard | (seven & (_melds(melds) == 0))


def waits(concealed, melds: int | np.ndarray = 0) -> np.ndarray:
    """For a 3k+1 hand, bool ``[..., 27]``: the kinds that would make it a winning hand.

    Copies left are ignored; a kind already held four times concealed is never a wait.
    """
    c = _counts(concealed)
    idx = suit_index(c)
    rem = SUIT_REM[idx].astype(np.int16)
    code = WIN_CODE[idx].astype(np.int16)
    # Adding to suit s completes the hand when s goes from rem 1 to sets and a pair while the
    # other two are sets only (codes sum to 2), or from rem 2 to sets only while the other two
    # are sets, and sets and a pair (codes sum to 5).
    others = code.sum(-1, keepdims=True) - code
    need = np.where(rem == 1, 2, np.where(rem == 2, 5, -1))
    bits = np.where(others == need, SUIT_WAITS[idx], 0).astype(np.uint32)
    packed = bits[..., 0] | (bits[..., 1] << 9) | (bits[..., 2] << 18)
    out = ((packed[..., None] >> _SHIFTS) & 1).astype(bool)
    odd = c % 2 == 1
    seven = (odd.sum(-1) == 1) & (c.sum(-1) == 13) & (_melds(melds) == 0)
    out |= seven[..., None] & odd
    return out


def is_ready(concealed, meld_tiles=None, melds: int | np.ndarray = 0) -> np.ndarray:
    """叫牌 (RULES.md 5.2): some wait of which the seat does not hold all four copies.

    ``meld_tiles`` is ``[..., 27]`` the tiles of each kind in the seat's melds (a pong 3, a kong 4).
    """
    c = _counts(concealed)
    held = c if meld_tiles is None else c + _meld_tiles(meld_tiles)
    return (waits(c, melds) & (held < 4)).any(-1)


def shanten(concealed, seven_pairs: bool = True) -> np.ndarray:
    """Shanten number (-1 complete, 0 ready, ...) of 3k+1 or 3k+2 concealed hands.

    The standard shape counts exactly (at most four copies of a kind); with ``seven_pairs``,
    14-tile targets may also be seven pairs, four identical tiles counting as two pairs.
    """
    _check_seven_pairs(seven_pairs)
    c = _counts(concealed)
    n = c.sum(-1)
    if np.any(n % 3 == 0) or np.any(n > 14):
        raise ValueError("shanten needs 3k+1 or 3k+2 concealed tiles, at most 14")
    flat = c.reshape(-1, NUM_KINDS)
    m = flat.shape[0]
    d = DIST[suit_index(flat)].astype(np.int16).reshape(m, 3, 10)  # [m, suit, (sets, pair)]
    inf = np.full((m, 1), _INF, dtype=np.int16)
    # suits 0 and 1 combined over (sets, pair), then closed with suit 2
    pair01 = _conv(d[:, 0], d[:, 1])
    d2 = np.concatenate([d[:, 2], inf], 1)
    nf = n.reshape(-1)
    best = (pair01 + np.take_along_axis(d2, _LAST[np.minimum(nf // 3, 4)], 1)).min(-1)
    out = np.minimum(best, _INF) - 1
    if seven_pairs:
        out = np.where(nf >= 13, np.minimum(out, 6 - (flat // 2).sum(-1)), out)
    return out.astype(np.int8).reshape(n.shape)


def shanten_neighbours(concealed, change: int, seven_pairs: bool = True):
    """Shanten of hands and of each hand with one tile of each kind added or removed.

    ``change=+1`` takes 3k+1 hands (the draws), ``change=-1`` 3k+2 hands (the discards).
    Returns ``(s [...], s_next [..., 27])`` int8: ``s`` equals :func:`shanten` of the hands and
    ``s_next[..., t]`` equals :func:`shanten` of the hand with one ``t`` added (removed), 99
    where that is impossible (a fifth copy; a kind not held). A change touches one suit only, so
    the other two suits are combined once per hand and each kind costs one table lookup: about
    the cost of three :func:`shanten` calls instead of 28.
    """
    integer = isinstance(change, (int, np.integer)) and not isinstance(change, (bool, np.bool_))
    if not integer or change not in (1, -1):  # 1.0 and True are no changes
        raise ValueError(f"change must be +1 (add a tile) or -1 (remove one), got {change!r}")
    _check_seven_pairs(seven_pairs)
    c = _counts(concealed)
    n = c.sum(-1)
    if np.any(n % 3 != (1 if change == 1 else 2)) or np.any(n > 14):
        kind = "3k+1" if change == 1 else "3k+2"
        raise ValueError(f"shanten_neighbours(change={change}) needs {kind} tiles, at most 14")
    flat = c.reshape(-1, NUM_KINDS)
    m, nf = flat.shape[0], n.reshape(-1)
    idx = suit_index(flat)  # [m, 3]
    # uint8 throughout: distances are <= INF (99), sums of two <= 198
    d = DIST[idx].reshape(m, 3, 10)
    # for each suit, the other two combined (capped at INF), then read by this suit's
    # (sets, pair) through the gather of ``shanten`` (the completing column, 10: INF)
    rest = np.full((m, 3, 11), _INF, dtype=np.uint8)
    np.minimum(_conv(d[:, _OTHER_A], d[:, _OTHER_B]), _INF, out=rest[..., :10])
    last = _LAST[np.minimum(nf // 3, 4)]  # [m, 10]
    rest = rest[np.arange(m)[:, None, None], _SUITS[:, None], last[:, None, :]]  # [m, 3, 10]
    base = np.minimum((d[:, 0] + rest[:, 0]).min(-1), _INF).astype(np.int16) - 1
    # every kind at once (hand, suit, rank): one lookup of the changed suit, its index left
    # alone where the change is impossible (masked below)
    ok = flat < 4 if change == 1 else flat > 0  # [m, 27]
    step = np.where(ok.reshape(m, 3, 9), change * _SUIT_POW5, 0)
    moved = DIST.reshape(_N_SUIT, 10)[idx[:, :, None] + step]  # [m, 3, 9, 10]
    after = _min_plus_last(moved, rest[:, :, None, :]).reshape(m, NUM_KINDS)
    after = np.minimum(after, _INF).astype(np.int16) - 1
    if seven_pairs:
        pairs = (flat // 2).sum(-1)
        base = np.where(nf >= 13, np.minimum(base, 6 - pairs), base)
        gained = (flat % 2 == 1 if change == 1 else flat % 2 == 0).astype(np.int16)
        pairs_next = pairs[:, None] + change * gained
        seven = (nf + change >= 13)[:, None]
        after = np.where(seven, np.minimum(after, 6 - pairs_next), after)
    s_next = np.where(ok, after, 99).astype(np.int8)
    return base.astype(np.int8).reshape(n.shape), s_next.reshape(c.shape)


def _min_plus_last(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(a + b).min(-1)`` for uint8 arrays with a short last axis, as elementwise minima over
    its slices (numpy's reduction along a short last axis is several times slower)."""
    out = a[..., 0] + b[..., 0]
    tmp = np.empty_like(out)
    for j in range(1, a.shape[-1]):
        np.add(a[..., j], b[..., j], out=tmp)
        np.minimum(out, tmp, out=out)
    return out


def _conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Min-plus convolution ``[..., 10]`` of two suits' distances ``[..., 10]`` over
    (sets, pair). Worked with (sets, pair) as the leading axis, so that every gather copies
    whole rows and the minimum runs over contiguous rows: several times faster than along a
    short last axis."""
    lead = a.shape[:-1]
    a_t = np.ascontiguousarray(a.reshape(-1, 10).T)
    b_t = np.ascontiguousarray(b.reshape(-1, 10).T)
    sums = a_t[_PAIR01_A] + b_t[_PAIR01_B]  # [10 (sets, pair), width, n]
    return sums.min(1).T.reshape(lead + (10,))


def _shanten_gathers() -> tuple[np.ndarray, np.ndarray]:
    """Gather indices of the suit convolution in :func:`shanten`.

    ``_PAIR01[m * 2 + p]`` lists the (suit 0, suit 1) combinations ``(m0, p0, m1, p1)``, as
    flat indices into their 100 sums, with ``m0 + m1 = m`` and ``p0 + p1 = p`` (rows padded by
    repeating an entry, which leaves their minimum alone); ``_LAST[k, m * 2 + p]`` is the
    column of suit 2's distances (10: INF) that completes k sets and one pair.
    """
    groups: dict[tuple[int, int], list[int]] = {(m, p): [] for m in range(5) for p in range(2)}
    for m0 in range(5):
        for p0 in range(2):
            for m1 in range(5 - m0):
                for p1 in range(2 - p0):
                    groups[(m0 + m1, p0 + p1)].append(((m0 * 2 + p0) * 5 + m1) * 2 + p1)
    width = max(len(v) for v in groups.values())
    pair01 = np.zeros((10, width), dtype=np.int64)
    for (m, p), combos in groups.items():
        pair01[m * 2 + p] = combos + combos[:1] * (width - len(combos))  # padded by repeats
    last = np.full((5, 10), 10, dtype=np.int64)
    for k in range(5):
        for m01 in range(5):
            for p01 in range(2):
                if 0 <= k - m01 <= 4:
                    last[k, m01 * 2 + p01] = (k - m01) * 2 + (1 - p01)
    return pair01, last


_PAIR01, _LAST = _shanten_gathers()
_PAIR01_A, _PAIR01_B = _PAIR01 // 10, _PAIR01 % 10  # each combination's (m0, p0) and (m1, p1)
_SUITS = np.arange(3)
_OTHER_A, _OTHER_B = np.array([1, 0, 0]), np.array([2, 2, 1])  # the other suits of 0, 1, 2
_SUIT_POW5 = np.tile(_POW5, (3, 1))  # [suit, rank]: the index step of one tile of that rank


# --------------------------------------------------------------------------- patterns
def shape_and_flush(concealed, meld_tiles, melds):
    """Best-reading shapes of a winning hand as flags, and flush (清一色).

    ``meld_tiles``: ``[..., 27]`` tiles per kind in melds; ``melds``: number of melds.
    Returns ``(daduizi, seven, dragon, dandiao, flush)`` bool arrays; a plain standard hand has
    all shape flags false.
    """
    c = _counts(concealed).astype(np.int16)
    mt = _meld_tiles(meld_tiles).astype(np.int16)
    nm = _melds(melds)
    seven = _seven_pairs(c) & (nm == 0)
    dragon = seven & (c == 4).any(-1)
    # 大对子: concealed part is triplets and one pair (melds are pongs or kongs: no chow here).
    daduizi = ~((c == 1) | (c == 4)).any(-1) & ((c == 2).sum(-1) == 1)
    dandiao = (nm == 4) & (c.sum(-1) == 2)
    allt = c + mt
    suits_present = (allt.reshape(allt.shape[:-1] + (3, 9)).sum(-1) > 0).sum(-1)
    flush = suits_present == 1
    return daduizi, seven, dragon, dandiao, flush


def hand_value(concealed, meld_tiles, melds, table: dict[str, int]) -> np.ndarray:
    """Pattern value (RULES.md 5.3) of winning hands: the largest over the readings.

    ``table`` is ``Rules.pattern_table``.
    """
    return _value(shape_and_flush(concealed, meld_tiles, melds), table)


def is_plain(concealed, meld_tiles, melds) -> np.ndarray:
    """A non-flush 平胡 (needs a passport to win on a discard, RULES.md 5.3)."""
    return _plain(shape_and_flush(concealed, meld_tiles, melds))


def value_and_plain(concealed, meld_tiles, melds, table: dict[str, int]):
    """``(hand_value, is_plain)`` of winning hands (RULES.md 5.3), from one reading of shapes."""
    shapes = shape_and_flush(concealed, meld_tiles, melds)
    return _value(shapes, table), _plain(shapes)


def _plain(shapes) -> np.ndarray:
    daduizi, seven, _, dandiao, flush = shapes
    return ~(daduizi | seven | flush | dandiao)


def _value(shapes, table: dict[str, int]) -> np.ndarray:
    daduizi, seven, dragon, dandiao, flush = shapes
    base = np.full(daduizi.shape, table["pinghu"], dtype=np.int32)
    base = np.where(daduizi, table["daduizi"], base)
    base = np.where(seven, table["qidui"], base)
    base = np.where(dragon, table["longqidui"], base)
    flush_value = table["flush"] + np.where(daduizi | seven, base, 0)
    value = np.where(flush, flush_value, base)
    if table["dandiao"]:
        dd = np.where(flush, 2 * table["dandiao"], table["dandiao"])
        value = np.where(dandiao, np.maximum(value, dd), value)
    return value


def chajiao_value(concealed, meld_tiles, melds, table: dict[str, int]) -> np.ndarray:
    """查叫 value (RULES.md 7.5) of a 3k+1 hand: best pattern value over its waits, 0 if none."""
    c = _counts(concealed)
    shape = c.shape[:-1]
    c = c.reshape(-1, NUM_KINDS)
    mt = np.broadcast_to(_meld_tiles(meld_tiles), shape + (NUM_KINDS,)).reshape(c.shape)
    nm = np.broadcast_to(_melds(melds), shape).reshape(-1)
    rows, kinds = np.nonzero(waits(c, nm) & (c + mt < 4))
    won = c[rows] + np.eye(NUM_KINDS, dtype=c.dtype)[kinds]
    out = np.zeros(c.shape[0], dtype=np.int32)
    np.maximum.at(out, rows, hand_value(won, mt[rows], nm[rows], table))
    return out.reshape(shape)


# --------------------------------------------------------------------------- one hand, plain Python
# The batch-1 paths (the AEC environment: ``engine.fastpath`` and ``observation``) evaluate one
# hand at a time, where numpy's per-call overhead dominates. These functions read the same tables
# through memoryviews with Python integers; tests check them against the array functions above.
# ``counts`` is a list of 27 ints (0-4); nothing is validated.
_DIST_MV = memoryview(DIST.reshape(-1))
_WIN_MV = memoryview(WIN_CODE)
_PAIR_MV = memoryview(PAIR_CODE)
_REM_MV = memoryview(SUIT_REM)
_WAITS_MV = memoryview(SUIT_WAITS)
_POW5_LIST = _POW5.tolist()
_CONV_GETTERS = tuple(
    (itemgetter(*(x // 10 for x in row)), itemgetter(*(x % 10 for x in row)))
    for row in _PAIR01.tolist()
)  # per (sets, pair) cell: getters of the (suit a, suit b) cells that sum to it
_LAST_GETTERS = tuple(itemgetter(*row) for row in _LAST.tolist())


def suit_indices_one(counts: list[int]) -> list[int]:
    """:func:`suit_index` of one hand."""
    out = []
    for s in (0, 9, 18):
        i = 0
        for x in counts[s : s + 9]:
            i = i * 5 + x
        out.append(i)
    return out


def is_win_one(counts: list[int], melds: int, idx: list[int] | None = None) -> bool:
    """:func:`is_win` of one hand (``idx``: its suit indices, when known)."""
    i0, i1, i2 = suit_indices_one(counts) if idx is None else idx
    if _WIN_MV[i0] + _WIN_MV[i1] + _WIN_MV[i2] == 6:
        return True
    return melds == 0 and _PAIR_MV[i0] + _PAIR_MV[i1] + _PAIR_MV[i2] == 7


def waits_one(counts: list[int], melds: int, idx: list[int] | None = None) -> list[int]:
    """The kinds of :func:`waits` of one 3k+1 hand, ascending."""
    idx = suit_indices_one(counts) if idx is None else idx
    code = [_WIN_MV[i] for i in idx]
    total = code[0] + code[1] + code[2]
    out = []
    for s in range(3):
        rem = _REM_MV[idx[s]]
        if total - code[s] == (2 if rem == 1 else 5 if rem == 2 else -1):
            bits = _WAITS_MV[idx[s]]
            out.extend(9 * s + r for r in range(9) if bits >> r & 1)
    if melds == 0 and sum(counts) == 13:
        odd = [t for t in range(NUM_KINDS) if counts[t] % 2]
        if len(odd) == 1 and odd[0] not in out:
            out.append(odd[0])
            out.sort()
    return out


def _conv_one(a, b) -> list[int]:
    """:func:`_conv` of two suits' distances, plus the INF column."""
    out = [min(map(add, ga(a), gb(b))) for ga, gb in _CONV_GETTERS]
    out.append(_INF)
    return out


def shanten_one(counts: list[int]) -> int:
    """:func:`shanten` of one hand (seven pairs included)."""
    n = sum(counts)
    i0, i1, i2 = suit_indices_one(counts)
    rest = _LAST_GETTERS[min(n // 3, 4)](
        _conv_one(_DIST_MV[10 * i0 : 10 * i0 + 10], _DIST_MV[10 * i1 : 10 * i1 + 10])
    )
    best = min(min(map(add, _DIST_MV[10 * i2 : 10 * i2 + 10], rest)), _INF) - 1
    if n >= 13:
        best = min(best, 6 - sum(x // 2 for x in counts))
    return best


def discard_shanten_one(counts: list[int], idx: list[int] | None = None):
    """:func:`shanten_neighbours` ``(change=-1)`` of one 3k+2 hand: ``(s, after)``, ``after`` a
    list of 27 (99 for kinds not held)."""
    idx = suit_indices_one(counts) if idx is None else idx
    n = sum(counts)
    last = _LAST_GETTERS[min(n // 3, 4)]
    d0, d1, d2 = (_DIST_MV[10 * i : 10 * i + 10] for i in idx)
    rests = (last(_conv_one(d1, d2)), last(_conv_one(d0, d2)), last(_conv_one(d0, d1)))
    base = min(min(map(add, d0, rests[0])), _INF) - 1
    after = [99] * NUM_KINDS
    for s in range(3):
        rest, i0 = rests[s], 10 * idx[s]
        for r in range(9):
            if counts[9 * s + r]:
                i = i0 - 10 * _POW5_LIST[r]
                after[9 * s + r] = min(min(map(add, _DIST_MV[i : i + 10], rest)), _INF) - 1
    if n == 14:
        pairs = sum(x // 2 for x in counts)
        base = min(base, 6 - pairs)
        for t, c in enumerate(counts):
            if c:
                after[t] = min(after[t], 6 - pairs + (c % 2 == 0))
    return base, after


def ready_discards_one(
    counts: list[int], melds: int, meld_tiles: list[int] | None = None, idx=None, after=None
) -> list[int]:
    """The kinds whose discard leaves one 3k+2 hand ready (叫牌, RULES.md 5.2: a wait of which
    the seat, ``meld_tiles`` included, does not hold all four). ``after`` is the hand's
    :func:`discard_shanten_one`, when known: only discards to shanten 0 can be ready."""
    idx = suit_indices_one(counts) if idx is None else idx
    after = discard_shanten_one(counts, idx)[1] if after is None else after
    rest = list(counts)
    held = list(counts)
    if meld_tiles is not None:
        held = [c + m for c, m in zip(counts, meld_tiles, strict=True)]
    out = []
    for t, x in enumerate(after):
        if x == 0:
            moved = list(idx)
            moved[t // 9] -= _POW5_LIST[t % 9]
            rest[t] -= 1
            held[t] -= 1
            if any(held[w] < 4 for w in waits_one(rest, melds, moved)):
                out.append(t)
            rest[t] += 1
            held[t] += 1
    return out
