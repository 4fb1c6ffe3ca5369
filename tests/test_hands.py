"""Hand evaluation (RULES.md 5): wins, waits, ready, shanten, patterns and values.

Exact cases first, then agreement with the ``mahjong`` package (riichi rules restricted to the
27 suited kinds), brute force and small independent reference functions on random hands, then
batch/single agreement and bad input.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mahjong.agari import Agari
from mahjong.shanten import Shanten

from zhuoji_env import hands as H
from zhuoji_env import tiles as T
from zhuoji_env.rules import Rules

EYE = np.eye(27, dtype=np.int8)
TABLES = {p: Rules.make(p).pattern_table for p in ("guiyang", "classic", "app")}


def P(text: str) -> np.ndarray:
    """Counts of a shorthand hand such as ``"123m456p11s"``."""
    codes, digits = [], ""
    for ch in text.replace(" ", ""):
        if ch.isdigit():
            digits += ch
        else:
            assert ch in "mps", text
            codes += [d + ch for d in digits]
            digits = ""
    assert not digits, text
    return T.to_counts(codes)


def M(*melds: str) -> np.ndarray:
    """Meld tiles of pongs/kongs written ``"5p"`` (pong) or ``"5p5p5p5p"``/``"5555p"`` (kong)."""
    out = np.zeros(27, dtype=np.int8)
    for m in melds:
        c = P(m)
        if c.sum() == 1:
            c = c * 3
        out += c
    return out


def wait_codes(c, melds=0) -> str:
    return T.format_tiles(np.flatnonzero(H.waits(c, melds)))


def t34(c) -> list[int]:
    return [int(x) for x in c] + [0] * 7


# ============================================================================ exact: is_win
@pytest.mark.parametrize(
    "hand, melds, expected",
    [
        ("11m", 4, True),
        ("11m", 0, True),
        ("12m", 4, False),
        ("111m22p", 3, True),
        ("123m11p", 3, True),
        ("123m12p", 3, False),
        ("123m456m789m123p11s", 0, True),
        ("123m456m789m123p12s", 0, False),
        ("11122233344455m", 0, True),
        ("11123456789999m", 0, True),  # nine gates + 9m
        ("11123456789995m", 0, True),  # nine gates + 5m
        ("123456789m123p45s", 0, False),
        ("111m", 0, False),  # 3k tiles never win
        ("1112m", 0, False),  # 3k+1 tiles never win
        ("123m456p789s234s11m", 0, True),
        ("123m456p789s234s19m", 0, False),
        ("1111m234p567p8s", 1, False),  # 1111m is a set and a single, not a pair
        ("1111m234p567p", 0, False),
        ("11112233m", 2, True),  # 11 + 123 + 123: a concealed quad split
    ],
)
def test_is_win_standard(hand, melds, expected):
    assert bool(H.is_win(P(hand), melds)) is expected


@pytest.mark.parametrize(
    "hand, std",
    [
        ("11m22m33p44p55s66s99s", False),
        ("11m44m77m11p44p77p99s", False),
        ("1111m2222p3333s44s", False),  # four identical count as two pairs
        ("1111m22p44p66p88s99s", False),
        ("11223344556677m", True),  # also 123 123 456 456 77
        ("1111m22m33m44m55m66m", True),  # also 11 123 123 456 456
    ],
)
def test_is_win_seven_pairs(hand, std):
    c = P(hand)
    assert c.sum() == 14
    assert H.is_win(c, 0)
    # seven pairs need no melds
    assert bool(H.is_win(c, 1)) is std
    assert bool(H.is_win(c, np.int64(2))) is std


@pytest.mark.parametrize("hand", ["11m44m77m99s", "11m44m77m11p44p", "1111m", "11m"])
def test_seven_pairs_need_fourteen_tiles(hand):
    c = P(hand)
    if hand == "11m":
        assert H.is_win(c, 0)  # a standard pair, not seven pairs
        return
    assert not H.is_win(c, 0)


# ============================================================================ exact: waits
@pytest.mark.parametrize(
    "hand, melds, expected",
    [
        ("1112345678999m", 0, "1m2m3m4m5m6m7m8m9m"),
        ("1112345678999m", 1, "1m2m3m4m5m6m7m8m9m"),
        ("23m55p", 3, "1m4m"),
        ("13m55p", 3, "2m"),
        ("12m55p", 3, "3m"),
        ("89m55p", 3, "7m"),
        ("11m99p", 3, "1m9p"),
        ("4m", 4, "4m"),
        ("3456m", 3, "3m6m"),
        ("2345678m", 2, "2m5m8m"),
        ("1111m22m33m44m55m6m", 1, "2m3m5m6m"),
        ("1122334455667m", 1, "1m4m7m"),
        ("111m222p99p33s444s", 1, "9p3s"),
        ("111m222p999p3s444s", 1, "2s3s5s"),
        ("1111m2222p3333s4s", 1, ""),
        ("1111m234p567p", 1, ""),  # the only shape wait would be a fifth 1m
        ("11m22m33p44p55s66s9s", 0, "9s"),  # seven pairs single
        ("111m22p44p66p88s99s", 0, "1m"),  # triplet as the odd one: 1111m = two pairs
        ("1111m2222p3333s4s", 0, "4s"),  # quads as two pairs each
        ("11m44m77m11p44p77p9s", 0, "9s"),
        ("11m44m77m11p44p77p9s", 1, ""),  # no seven pairs with a meld
        ("1111m22m33m44m55m6m", 0, "2m3m5m6m"),
        ("1122334455667m", 0, "1m4m7m"),
    ],
)
def test_waits_exact(hand, melds, expected):
    c = P(hand)
    assert c.sum() % 3 == 1
    assert wait_codes(c, melds) == expected


@pytest.mark.parametrize(
    "hand, expected",
    [
        ("1m4m7m1p4p7p1s4s7s2p5s8m9p", ""),  # four partial shapes (12p 79p 78m 45s), shanten 4
        ("111m222p999p3s444s", "2s3s5s"),
        ("1111m234p567p888s", ""),  # the only wait would be a fifth 1m
        ("123m456m789m12p4s", ""),
    ],
)
def test_waits_thirteen_concealed_no_melds(hand, expected):
    assert wait_codes(P(hand), 0) == expected


def test_waits_thirteen_concealed_with_melds_ok():
    # the same hands with melds > 0 (seven pairs excluded) are right
    assert wait_codes(P("1m4m7m1p4p7p1s4s7s2p5s8m9p"), 1) == ""
    assert wait_codes(P("111m222p999p3s444s"), 1) == "2s3s5s"
    assert wait_codes(P("1111m234p567p888s"), 1) == ""


def test_wait_on_held_four_is_never_a_wait():
    # 1111m + 234p 567p 888s: adding 1m is impossible.
    c = P("1111m234p567p888s")
    assert not H.waits(c, 1)[0]


# ============================================================================ exact: is_ready
def test_is_ready_dead_wait_through_melds():
    # concealed 5m + three runs, a pong of 5m: the only wait is the fourth 5m, held in the pong.
    c = P("5m123p456p789p")
    assert wait_codes(c, 1) == "5m"
    assert not H.is_ready(c, M("5m"), 1)
    assert H.chajiao_value(c, M("5m"), 1, TABLES["guiyang"]) == 0
    # the same hand with a pong of another kind is ready
    assert H.is_ready(c, M("9s"), 1)
    assert H.is_ready(c, None, 1)
    assert H.chajiao_value(c, M("9s"), 1, TABLES["guiyang"]) == 1


def test_is_ready_dead_wait_concealed_quad():
    c = P("1111m234p567p")
    assert not H.is_ready(c, M("9s"), 1)
    assert not H.is_ready(c, None, 1)
    assert H.chajiao_value(c, M("9s"), 1, TABLES["guiyang"]) == 0


def test_is_ready_pong_makes_tanki_dead():
    # a single 9s concealed beside a pong of 9s (and three other pongs): the wait is the 5th 9s
    c = P("9s")
    mt = M("9s", "1m", "2p", "3s")
    assert wait_codes(c, 4) == "9s"
    assert not H.is_ready(c, mt, 4)
    assert H.is_ready(c, M("8s", "1m", "2p", "3s"), 4)


@pytest.mark.parametrize(
    "hand, melds, ready",
    [
        ("1112345678999m", 0, True),
        ("123m456m789m123p1s", 0, True),
        ("11m44m77m11p44p77p9s", 0, True),
        ("111m22p44p66p88s99s", 0, True),
        ("1111m2222p3333s4s", 0, True),
        ("1111m2222p3333s4s", 1, False),
        ("13m55p", 3, True),
        ("19m55p", 3, False),
        ("4m", 4, True),
    ],
)
def test_is_ready_exact(hand, melds, ready):
    assert bool(H.is_ready(P(hand), None, melds)) is ready


@pytest.mark.parametrize(
    "hand", ["1m4m7m1p4p7p1s4s7s2p5s8m9p", "1111m234p567p888s", "123m456m789m12p4s"]
)
def test_is_ready_thirteen_concealed_not_ready(hand):
    assert not H.is_ready(P(hand), None, 0)


# ============================================================================ exact: shanten
@pytest.mark.parametrize(
    "hand, std, seven",
    [
        ("123m456m789m123p11s", -1, -1),
        ("11m", -1, -1),
        ("123m456m789m123p1s", 0, 0),
        ("123m456m789m123p12s", 0, 0),
        ("1m", 0, 0),
        ("1m9p", 0, 0),
        ("1m4m7m1p4p7p1s", 4, 4),  # two sets and a pair from nothing: 5 tiles to add
        ("1m4m7m9m1p4p7p1s4s7s", 5, 5),  # one kanchan, three sets + pair: 6 tiles
        ("1m1m4m7m1p1p4p7p1s1s4s7s7s", 4, 2),  # four pairs, no runs
        ("11m44m77m11p44p77p9s", 3, 0),  # six pairs: seven pairs ready
        ("11m44m77m11p44p77p99s", 3, -1),
        ("1111m2222p3333s4s", 2, 0),  # quads are two pairs each
        ("1111m2222p3333s44s", 1, -1),
        ("111m222m333m444m5m", 0, 0),
        ("1112345678999m", 0, 0),
    ],
)
def test_shanten_exact(hand, std, seven):
    c = P(hand)
    assert H.shanten(c, seven_pairs=False) == std
    assert H.shanten(c, seven_pairs=True) == seven
    assert H.shanten(c) == seven  # default includes seven pairs


def test_shanten_matches_riichi_on_exact_cases():
    sh = Shanten()
    for hand in ("1m4m7m1p4p7p1s", "1m4m7m9m1p4p7p1s4s7s", "1111m234p567p", "1111m2222p3333s4s"):
        c = P(hand)
        assert H.shanten(c, False) == sh.calculate_shanten(
            t34(c), use_chiitoitsu=False, use_kokushi=False
        )


# ============================================================================ patterns and values
# (concealed, meld tiles, melds, (guiyang, classic, app), plain)
VALUE_CASES = {
    "pinghu": ("123m456p789s234s11m", (), 0, (1, 10, 1), True),
    "daduizi": ("111m222p333s999s55m", (), 0, (5, 30, 5), False),
    "qidui": ("11m22m33p44p55s66s99s", (), 0, (10, 40, 10), False),
    "longqidui": ("1111m22p44p66p88s99s", (), 0, (20, 50, 20), False),
    "qingyise": ("123m456m789m234m11m", (), 0, (10, 50, 10), False),
    "qingdadui": ("111m222m444m666m99m", (), 0, (15, 80, 15), False),
    "qingqidui": ("11m22m44m55m77m88m99m", (), 0, (20, 90, 20), False),
    "qinglongbei": ("1111m22m44m55m77m99m", (), 0, (30, 100, 30), False),
    # app 单吊: all four sets are melds; guiyang/classic read it as 大对子 (melds are pongs/kongs)
    "dandiao": ("55p", ("1m", "2m", "3333p", "9s"), 4, (5, 30, 10), False),
    "dandiao_flush": ("55p", ("1p", "2p", "3333p", "9p"), 4, (15, 80, 20), False),
    "daduizi_melds": ("111m222p55s", ("9s", "5555p"), 2, (5, 30, 5), False),
    "daduizi_melds_flush": ("111s222s55s", ("9s", "4444s"), 2, (15, 80, 15), False),
    "pinghu_with_pong": ("123m456m99p", ("1s", "5p"), 2, (1, 10, 1), True),
    "flush_broken_by_meld": ("123m456m789m11m", ("5p",), 1, (1, 10, 1), True),
    "flush_with_meld": ("123m456m789m11m", ("5m",), 1, (10, 50, 10), False),
    "flush_with_kong": ("234m234m789m99m", ("5555m",), 1, (10, 50, 10), False),
    # seven pairs impossible with melds: a pairs-only concealed part reads as runs
    "pairs_with_melds": ("11m22m33m44p", ("7s", "8s"), 2, (1, 10, 1), True),
    "pairs_with_melds_flush": ("11m22m33m44m", ("7m", "8m"), 2, (10, 50, 10), False),
    # both seven pairs and standard: the larger value
    "both_readings_flush": ("11223344556677m", (), 0, (20, 90, 20), False),
    "both_readings": ("112233m445566p77s", (), 0, (10, 40, 10), False),
    "both_readings_dragon": ("1111m22m33m44m55m66m", (), 0, (30, 100, 30), False),
    # triplets or runs: 大对子 wins
    "triplets_or_runs": ("111m222m333m444p55p", (), 0, (5, 30, 5), False),
    "triplets_or_runs_flush": ("111m222m333m555m99m", (), 0, (15, 80, 15), False),
}


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_hand_value_cases(name):
    hand, meld_spec, melds, expected, plain = VALUE_CASES[name]
    c = P(hand)
    mt = M(*meld_spec)
    assert (c + mt).max() <= 4
    assert c.sum() + 3 * melds == 14
    assert int((mt > 0).sum()) == melds
    assert H.is_win(c, melds), name
    for preset, value in zip(("guiyang", "classic", "app"), expected, strict=True):
        assert H.hand_value(c, mt, melds, TABLES[preset]) == value, preset
        assert ref_value(c, mt, melds, TABLES[preset]) == value, preset
    assert bool(H.is_plain(c, mt, melds)) is plain


@pytest.mark.parametrize(
    "hand, meld_spec, melds, flags",
    [
        ("123m456p789s234s11m", (), 0, (False, False, False, False, False)),
        ("111m222p333s999s55m", (), 0, (True, False, False, False, False)),
        ("11m22m33p44p55s66s99s", (), 0, (False, True, False, False, False)),
        ("1111m22p44p66p88s99s", (), 0, (False, True, True, False, False)),
        ("1111m22m44m55m77m99m", (), 0, (False, True, True, False, True)),
        # three quads and a pair: runs 123m are needed, no all-triplets reading
        ("1111m2222m3333m55p", (), 0, (False, True, True, False, False)),
        ("55p", ("1m", "2m", "3333p", "9s"), 4, (True, False, False, True, False)),
        ("55p", ("1p", "2p", "3333p", "9p"), 4, (True, False, False, True, True)),
        ("123m456m789m11m", ("5p",), 1, (False, False, False, False, False)),
        ("123m456m789m11m", ("5m",), 1, (False, False, False, False, True)),
    ],
)
def test_shape_and_flush(hand, meld_spec, melds, flags):
    got = H.shape_and_flush(P(hand), M(*meld_spec), melds)
    assert tuple(bool(x) for x in got) == flags


@pytest.mark.parametrize(
    "hand, meld_spec, melds, expected",
    [
        # waits 2s (plain), 3s (大对子), 5s (plain)
        ("111m222p999p3s444s", (), 0, (5, 30, 5)),
        ("222p999p3s444s", ("1m",), 1, (5, 30, 5)),
        ("222p999p3s444s", ("1s",), 1, (5, 30, 5)),
        # nine gates: every wait is a flush
        ("1112345678999m", (), 0, (10, 50, 10)),
        ("1112345678999m", (), 1, (10, 50, 10)),
        # a seven-pairs wait making 龙七对
        ("111m22p44p66p88s99s", (), 0, (20, 50, 20)),
        # 单吊 wait
        ("5p", ("1m", "2m", "3333p", "9s"), 4, (5, 30, 10)),
        ("5p", ("1p", "2p", "3333p", "9p"), 4, (15, 80, 20)),
        # a plain wait
        ("123m456p789s23s11m", (), 0, (1, 10, 1)),
        # not ready
        ("123m456p789s25s", ("1m",), 1, (0, 0, 0)),
        ("1111m234p567p", ("9s",), 1, (0, 0, 0)),
        ("5m123p456p789p", ("5m",), 1, (0, 0, 0)),
    ],
)
def test_chajiao_value_cases(hand, meld_spec, melds, expected):
    c = P(hand)
    mt = M(*meld_spec)
    for preset, value in zip(("guiyang", "classic", "app"), expected, strict=True):
        assert H.chajiao_value(c, mt, melds, TABLES[preset]) == value, preset
        assert ref_chajiao(c, mt, melds, TABLES[preset]) == value, preset
    assert bool(H.is_ready(c, mt, melds)) is (expected[0] > 0)


def test_chajiao_value_zero_when_not_ready_no_melds():
    c = P("1m4m7m1p4p7p1s4s7s2p5s8m9p")
    assert H.chajiao_value(c, np.zeros(27, np.int8), 0, TABLES["guiyang"]) == 0


# ============================================================================ references
def _std_readings(counts: list[int], start: int = 0, pair: bool = False) -> set[bool]:
    """Set of 'all sets are triplets' flags over the standard splits (sets + exactly one pair)."""
    i = start
    while i < 27 and counts[i] == 0:
        i += 1
    if i == 27:
        return {True} if pair else set()
    out: set[bool] = set()
    if not pair and counts[i] >= 2:
        counts[i] -= 2
        out |= _std_readings(counts, i, True)
        counts[i] += 2
    if counts[i] >= 3:
        counts[i] -= 3
        out |= _std_readings(counts, i, pair)
        counts[i] += 3
    if i % 9 <= 6 and counts[i + 1] and counts[i + 2]:
        for j in (i, i + 1, i + 2):
            counts[j] -= 1
        out |= {False} if _std_readings(counts, i, pair) else set()
        for j in (i, i + 1, i + 2):
            counts[j] += 1
    return out


def ref_seven_pairs(counts) -> bool:
    """14 tiles, every kind an even count (a quad is two pairs)."""
    n = 0
    pairs = 0
    for x in counts:
        x = int(x)
        n += x
        while x >= 2:
            x -= 2
            pairs += 1
        if x:
            return False
    return n == 14 and pairs == 7


def ref_is_win(counts, melds: int) -> bool:
    return bool(_std_readings([int(x) for x in counts])) or (melds == 0 and ref_seven_pairs(counts))


def ref_value(counts, meld_tiles, melds: int, table: dict) -> int:
    """Pattern value by enumerating every reading (RULES.md 5.3); 0 if not a win."""
    counts = [int(x) for x in counts]
    allt = [a + int(b) for a, b in zip(counts, meld_tiles, strict=True)]
    flush = len({k // 9 for k in range(27) if allt[k]}) == 1
    shapes = []
    for all_triplets in _std_readings(list(counts)):
        shapes.append("daduizi" if all_triplets else "pinghu")
    if melds == 0 and ref_seven_pairs(counts):
        shapes.append("longqidui" if 4 in counts else "qidui")
    values = []
    for s in shapes:
        if flush:
            values.append(table["flush"] + (0 if s == "pinghu" else table[s]))
        else:
            values.append(table[s])
    if values and table["dandiao"] and melds == 4 and sum(counts) == 2:
        values.append(table["dandiao"] * (2 if flush else 1))
    return max(values, default=0)


def ref_chajiao(counts, meld_tiles, melds: int, table: dict) -> int:
    best = 0
    for t in range(27):
        if counts[t] + meld_tiles[t] >= 4:
            continue
        won = np.array(counts, dtype=np.int8)
        won[t] += 1
        best = max(best, ref_value(won, meld_tiles, melds, table))
    return best


def ref_seven_pairs_shanten(counts) -> int:
    """Tiles to add (keeping pairs, completing singles) for seven pairs, minus one."""
    pairs = sum(int(x) // 2 for x in counts)
    singles = sum(int(x) % 2 for x in counts)
    keep = 2 * min(pairs, 7) + min(7 - min(pairs, 7), singles)
    return 14 - keep - 1


# ============================================================================ random hands
FULL = T.full_set().astype(np.int64)


def random_hands(rng, n: int, size: int) -> np.ndarray:
    """n hands of `size` distinct tiles of the 108, as counts [n, 27] int8."""
    keys = rng.random((n, 108))
    picks = np.argpartition(keys, size - 1, axis=1)[:, :size] if size else np.zeros((n, 0), int)
    out = np.zeros((n, 27), dtype=np.int8)
    np.add.at(out, (np.repeat(np.arange(n), size), FULL[picks.ravel()]), 1)
    return out


def winning_hands(
    rng, n: int, nsets: int, p_triplet: float = 0.35, p_flush: float = 0.0
) -> np.ndarray:
    """n standard winning hands of nsets sets and a pair (counts <= 4).

    A fraction ``p_flush`` of them take every set and the pair from one suit.
    """
    done = []
    total = 0
    while total < n:
        m = 2 * (n - total) + 16
        c = np.zeros((m, 27), dtype=np.int16)
        rows = np.arange(m)
        row_suit = rng.integers(0, 3, m)
        one_suit = rng.random(m) < p_flush

        def suit():
            return np.where(one_suit, row_suit, rng.integers(0, 3, m))  # noqa: B023

        for _ in range(nsets):
            trip = rng.random(m) < p_triplet
            k_trip = suit() * 9 + rng.integers(0, 9, m)
            start = suit() * 9 + rng.integers(0, 7, m)
            np.add.at(c, (rows[trip], k_trip[trip]), 3)
            for d in range(3):
                np.add.at(c, (rows[~trip], start[~trip] + d), 1)
        np.add.at(c, (rows, suit() * 9 + rng.integers(0, 9, m)), 2)
        ok = c.max(1) <= 4
        done.append(c[ok].astype(np.int8))
        total += int(ok.sum())
    return np.concatenate(done)[:n]


def remove_random_tile(rng, c: np.ndarray) -> np.ndarray:
    c = c.copy()
    n = c.sum(1)
    r = (rng.random(len(c)) * n).astype(np.int64)
    k = (np.cumsum(c, 1) <= r[:, None]).sum(1)
    c[np.arange(len(c)), k] -= 1
    return c


def add_random_tile(rng, c: np.ndarray) -> np.ndarray:
    c = c.copy()
    rows = np.arange(len(c))
    k = rng.integers(0, 27, len(c))
    bad = c[rows, k] >= 4
    while bad.any():
        k[bad] = rng.integers(0, 27, int(bad.sum()))
        bad = c[rows, k] >= 4
    c[rows, k] += 1
    return c


def near_hands(rng, n: int, size: int) -> np.ndarray:
    """Hands of `size` tiles near a win: wins, wins minus a tile, one or two tiles replaced."""
    if size % 3 == 2:
        w = winning_hands(rng, n, size // 3)
        parts = np.array_split(w, 4)
        two_out = remove_random_tile(rng, parts[3])
        out = [
            parts[0],
            add_random_tile(rng, remove_random_tile(rng, parts[1])),
            add_random_tile(rng, remove_random_tile(rng, parts[2])),
            add_random_tile(rng, add_random_tile(rng, remove_random_tile(rng, two_out))),
        ]
    else:
        w = winning_hands(rng, n, size // 3)
        parts = np.array_split(w, 3)
        out = [
            remove_random_tile(rng, parts[0]),
            remove_random_tile(rng, parts[1]),
            add_random_tile(rng, remove_random_tile(rng, remove_random_tile(rng, parts[2]))),
        ]
    out = np.concatenate(out)
    assert (out.sum(1) == size).all() and out.max() <= 4 and out.min() >= 0
    return out


def pairs_hands(rng, n: int, size: int) -> np.ndarray:
    """Hands made mostly of pairs (and some quads), for seven pairs; `size` 13 or 14."""
    c = np.zeros((n, 27), dtype=np.int8)
    rows = np.arange(n)
    for _ in range(7):
        k = rng.integers(0, 27, n)
        full = c[rows, k] >= 3
        while full.any():
            k[full] = rng.integers(0, 27, int(full.sum()))
            full = c[rows, k] >= 3
        c[rows, k] += 2
    c = np.concatenate([c[: n // 2], add_random_tile(rng, remove_random_tile(rng, c[n // 2 :]))])
    if size == 13:
        c = remove_random_tile(rng, c)
    return c


# ============================================================================ vs mahjong package
SIZES_WIN = (2, 5, 8, 11, 14)
SIZES_READY = (1, 4, 7, 10, 13)
N_RANDOM = 6000
N_NEAR = 4000


@pytest.mark.parametrize("size", SIZES_WIN + SIZES_READY)
def test_against_mahjong_package(size):
    """10 sizes x 10,000 hands = 100,000 hands, 40% near a win."""
    rng = np.random.default_rng(1000 + size)
    hands = np.concatenate([random_hands(rng, N_RANDOM, size), near_hands(rng, N_NEAR, size)])
    assert len(hands) == N_RANDOM + N_NEAR
    sh = Shanten()
    ours_sh = H.shanten(hands, seven_pairs=False)
    theirs_sh = np.array(
        [
            sh.calculate_shanten(t34(h), use_chiitoitsu=False, use_kokushi=False)
            for h in hands.tolist()
        ]
    )
    mism = np.flatnonzero(ours_sh != theirs_sh)
    assert not len(mism), [
        (T.counts_to_str(hands[i]), int(ours_sh[i]), int(theirs_sh[i])) for i in mism[:5]
    ]
    near_sh = ours_sh[N_RANDOM:]
    if size % 3 == 2:
        ours_win = H.is_win(hands, melds=1)
        theirs_win = np.array([Agari.is_agari(t34(h)) for h in hands.tolist()])
        # riichi also accepts seven distinct pairs; we exclude seven pairs with melds=1
        distinct_pairs = (hands.sum(1) == 14) & ((hands == 0) | (hands == 2)).all(1)
        theirs_win = np.where(distinct_pairs, theirs_sh == -1, theirs_win)
        mism = np.flatnonzero(ours_win != theirs_win)
        assert not len(mism), [
            (T.counts_to_str(hands[i]), bool(ours_win[i]), bool(theirs_win[i])) for i in mism[:5]
        ]
        np.testing.assert_array_equal(ours_win, ours_sh == -1)
        # the near-win hands really are near: plenty of wins and of ready hands
        assert (near_sh == -1).mean() > 0.25
        assert (near_sh == 0).mean() > 0.2
    else:
        assert (near_sh == 0).mean() > 0.6
        assert not H.is_win(hands, 0).any()


@pytest.mark.parametrize("size", SIZES_WIN)
def test_is_win_with_seven_pairs_reference(size):
    rng = np.random.default_rng(2000 + size)
    hands = np.concatenate([random_hands(rng, 2000, size), near_hands(rng, 2000, size)])
    if size == 14:
        hands = np.concatenate([hands, pairs_hands(rng, 3000, 14)])
    sp = np.array([ref_seven_pairs(h) for h in hands.tolist()])
    if size == 14:
        assert sp.mean() > 0.2
    else:
        assert not sp.any()
    win0 = H.is_win(hands, 0)
    win1 = H.is_win(hands, 1)
    np.testing.assert_array_equal(win0, win1 | sp)
    # a reference split agrees too (on a subset: it is a slow Python search)
    for h, w0, w1 in zip(hands[::7].tolist(), win0[::7], win1[::7], strict=True):
        assert ref_is_win(h, 0) == w0, T.counts_to_str(np.array(h))
        assert ref_is_win(h, 1) == w1, T.counts_to_str(np.array(h))


@pytest.mark.parametrize("size", (1, 2, 4, 5, 7, 8, 10, 11, 13, 14))
def test_seven_pairs_shanten(size):
    rng = np.random.default_rng(3000 + size)
    parts = [random_hands(rng, 3000, size), near_hands(rng, 1000, size)]
    if size >= 13:
        parts.append(pairs_hands(rng, 3000, size))
    hands = np.concatenate(parts)
    std = H.shanten(hands, seven_pairs=False)
    both = H.shanten(hands, seven_pairs=True)
    if size >= 13:
        ref = np.array([ref_seven_pairs_shanten(h) for h in hands.tolist()])
        np.testing.assert_array_equal(both, np.minimum(std, ref))
        assert (ref < std).mean() > 0.2
        assert (ref <= 0).sum() > 100
    else:
        np.testing.assert_array_equal(both, std)


# ============================================================================ waits: brute force
def brute_waits(hands: np.ndarray, melds) -> np.ndarray:
    won = np.minimum(hands[:, None, :] + EYE, 4)
    return H.is_win(won, np.asarray(melds)[..., None]) & (hands < 4)


@pytest.mark.parametrize(
    "size, melds",
    [
        (1, 4),
        (1, 0),
        (4, 3),
        (4, 0),
        (7, 2),
        (7, 0),
        (10, 1),
        (10, 0),
        (13, 1),
        (13, 0),
    ],
)
def test_waits_brute_force(size, melds):
    rng = np.random.default_rng(4000 + 10 * size + melds)
    parts = [random_hands(rng, 3000, size), near_hands(rng, 3000, size)]
    if size == 13:
        parts.append(pairs_hands(rng, 1000, 13))
    hands = np.concatenate(parts)
    got = H.waits(hands, melds)
    expected = brute_waits(hands, melds)
    bad = np.flatnonzero((got != expected).any(1))
    assert not len(bad), [(T.counts_to_str(hands[i]), wait_codes(hands[i], melds)) for i in bad[:5]]
    assert expected.any(1).mean() > 0.3  # many ready hands
    # melds as an array broadcast the same
    np.testing.assert_array_equal(H.waits(hands, np.full(len(hands), melds)), got)


def test_waits_thirteen_no_melds_on_ready_hands():
    """Seven-pairs waits where the hand is ready: the brute force agrees despite the bug."""
    rng = np.random.default_rng(5)
    hands = pairs_hands(rng, 2000, 13)
    hands = hands[H.shanten(hands, True) == 0]
    hands = hands[
        np.array([sum(int(x) % 2 for x in h) == 1 for h in hands.tolist()])
    ]  # exactly one odd kind
    assert len(hands) > 100
    np.testing.assert_array_equal(H.waits(hands, 0), brute_waits(hands, 0))


@pytest.mark.parametrize("size, melds", [(4, 3), (7, 2), (10, 1), (1, 4)])
def test_is_ready_and_chajiao_with_melds(size, melds):
    """is_ready and chajiao_value against the references, with random pong/kong melds."""
    rng = np.random.default_rng(6000 + size)
    hands = near_hands(rng, 1500, size)
    mt = np.zeros_like(hands)
    rows = np.arange(len(hands))
    for _ in range(melds):
        k = rng.integers(0, 27, len(hands))
        room = 4 - hands[rows, k] - mt[rows, k]
        kong = rng.random(len(hands)) < 0.3
        add = np.where(kong & (room >= 4), 4, 3)
        ok = room >= add
        mt[rows[ok], k[ok]] += add[ok]
    ready = H.is_ready(hands, mt, melds)
    held = hands + mt
    expected_ready = (brute_waits(hands, melds) & (held < 4)).any(1)
    np.testing.assert_array_equal(ready, expected_ready)
    assert 0.2 < ready.mean() < 1.0
    for name, table in TABLES.items():
        got = H.chajiao_value(hands, mt, melds, table)
        assert ((got > 0) == ready).all(), name
        for i in range(0, len(hands), 5):
            assert got[i] == ref_chajiao(hands[i], mt[i], melds, table), (
                name,
                T.counts_to_str(hands[i]),
                T.counts_to_str(mt[i]),
            )


def test_is_ready_thirteen_no_melds_brute_force():
    rng = np.random.default_rng(7)
    hands = np.concatenate([random_hands(rng, 2000, 13), near_hands(rng, 2000, 13)])
    np.testing.assert_array_equal(H.is_ready(hands), brute_waits(hands, 0).any(1))


def random_melds(rng, hands: np.ndarray, melds: int, p_same_suit: float = 0.7) -> np.ndarray:
    """Meld tiles for `melds` pongs/kongs per hand, of kinds absent from the concealed hand.

    Most melds are in the suit of the hand's first tile, so that flushes with melds occur.
    """
    n = len(hands)
    rows = np.arange(n)
    suit = np.argmax(hands > 0, axis=1) // 9
    mt = np.zeros_like(hands)
    placed = np.zeros(n, dtype=int)
    for _ in range(200):
        need = placed < melds
        if not need.any():
            break
        same = rng.random(n) < p_same_suit
        k = np.where(same, suit * 9 + rng.integers(0, 9, n), rng.integers(0, 27, n))
        size = np.where(rng.random(n) < 0.3, 4, 3)
        ok = need & (hands[rows, k] == 0) & (mt[rows, k] == 0)
        mt[rows[ok], k[ok]] = size[ok]
        placed += ok
    assert (placed == melds).all()
    return mt


@pytest.mark.parametrize("nsets", [0, 1, 2, 3, 4])
def test_hand_value_random_wins(nsets):
    """hand_value and is_plain on random winning hands against the reading reference."""
    rng = np.random.default_rng(8000 + nsets)
    hands = winning_hands(rng, 1200, nsets, p_triplet=0.5, p_flush=0.4)
    melds = np.full(len(hands), 4 - nsets)
    mt = random_melds(rng, hands, 4 - nsets)
    if nsets == 4:  # seven pairs (with quads) too
        more = pairs_hands(rng, 1000, 14)
        more = more[H.is_win(more, 0)]
        hands = np.concatenate([hands, more])
        mt = np.concatenate([mt, np.zeros_like(more)])
        melds = np.concatenate([melds, np.zeros(len(more), dtype=int)])
    assert H.is_win(hands, melds).all()
    assert ((hands + mt) <= 4).all()
    for name, table in TABLES.items():
        got = H.hand_value(hands, mt, melds, table)
        for i in range(len(hands)):
            assert got[i] == ref_value(hands[i], mt[i], int(melds[i]), table), (
                name,
                T.counts_to_str(hands[i]),
                T.counts_to_str(mt[i]),
            )
        assert (got >= table["flush"]).mean() > 0.1, name
        if nsets >= 2:
            assert (got == table["pinghu"]).mean() > 0.1, name
        if nsets == 0 and table["dandiao"]:
            assert (got == table["dandiao"]).any() and (got == 2 * table["dandiao"]).any()
    # plain = a non-flush 平胡 = guiyang value 1
    plain = H.is_plain(hands, mt, melds)
    np.testing.assert_array_equal(plain, H.hand_value(hands, mt, melds, TABLES["guiyang"]) == 1)
    for table in TABLES.values():
        value, both_plain = H.value_and_plain(hands, mt, melds, table)
        np.testing.assert_array_equal(value, H.hand_value(hands, mt, melds, table))
        np.testing.assert_array_equal(both_plain, plain)


# ============================================================================ batch vs single
@st.composite
def hand_counts(draw, sizes=(1, 2, 4, 5, 7, 8, 10, 11, 13, 14)):
    n = draw(st.sampled_from(sizes))
    picks = draw(st.lists(st.integers(0, 107), min_size=n, max_size=n, unique=True))
    c = np.zeros(27, dtype=np.int8)
    for p in picks:
        c[p // 4] += 1
    return c


@st.composite
def hand_batch(draw):
    a = draw(st.integers(1, 4))
    b = draw(st.integers(1, 4))
    hands = np.stack([draw(hand_counts()) for _ in range(a * b)])
    melds = np.array([draw(st.integers(0, 4)) for _ in range(a * b)])
    mt = np.zeros_like(hands)
    for i in range(a * b):
        k = draw(st.integers(0, 26))
        if hands[i, k] <= 1 and draw(st.booleans()):
            mt[i, k] = 3
    return a, b, hands, melds, mt


FUNCS = {
    "is_win": lambda c, mt, m: H.is_win(c, m),
    "waits": lambda c, mt, m: H.waits(c, m),
    "is_ready": lambda c, mt, m: H.is_ready(c, mt, m),
    "shanten": lambda c, mt, m: H.shanten(c),
    "shanten_std": lambda c, mt, m: H.shanten(c, seven_pairs=False),
    "hand_value_g": lambda c, mt, m: H.hand_value(c, mt, m, TABLES["guiyang"]),
    "hand_value_a": lambda c, mt, m: H.hand_value(c, mt, m, TABLES["app"]),
    "is_plain": lambda c, mt, m: H.is_plain(c, mt, m),
    "value_and_plain": lambda c, mt, m: np.stack(H.value_and_plain(c, mt, m, TABLES["app"]), -1),
    "chajiao_c": lambda c, mt, m: H.chajiao_value(c, mt, m, TABLES["classic"]),
    "chajiao_a": lambda c, mt, m: H.chajiao_value(c, mt, m, TABLES["app"]),
    "shape_and_flush": lambda c, mt, m: np.stack(H.shape_and_flush(c, mt, m), -1),
    "suit_index": lambda c, mt, m: H.suit_index(c),
}


@settings(max_examples=150, deadline=None)
@given(hand_batch())
def test_batch_matches_single(batch):
    a, b, hands, melds, mt = batch
    for name, f in FUNCS.items():
        flat = f(hands, mt, melds)
        assert flat.shape[0] == a * b, name
        grid = f(hands.reshape(a, b, 27), mt.reshape(a, b, 27), melds.reshape(a, b))
        np.testing.assert_array_equal(grid.reshape(flat.shape), flat, err_msg=name)
        as64 = f(hands.astype(np.int64), mt.astype(np.int64), melds)
        np.testing.assert_array_equal(as64, flat, err_msg=name)
        for i in range(a * b):
            single = f(hands[i], mt[i], int(melds[i]))
            assert np.shape(single) == flat.shape[1:], name
            np.testing.assert_array_equal(single, flat[i], err_msg=name)
        if name != "suit_index":
            lst = f(hands[0].tolist(), mt[0].tolist(), int(melds[0]))
            np.testing.assert_array_equal(lst, flat[0], err_msg=name)


@settings(max_examples=100, deadline=None)
@given(hand_counts(sizes=(1, 4, 7, 10, 13)), st.integers(1, 4))
def test_waits_imply_wins_property(c, melds):
    w = H.waits(c, melds)
    for t in np.flatnonzero(w):
        assert c[t] < 4
        assert H.is_win(c + EYE[t], melds)
    assert bool(H.is_ready(c, None, melds)) == bool(w.any())
    # shanten counts at most four copies of a kind, so shanten 0 is exactly "has a wait"
    assert (H.shanten(c, False) == 0) == bool(w.any())
    np.testing.assert_array_equal(brute_waits(c[None], melds)[0], w)


def test_scalar_melds_broadcast():
    rng = np.random.default_rng(9)
    hands = np.concatenate([pairs_hands(rng, 200, 14), near_hands(rng, 200, 14)])
    for m in (0, 1):
        np.testing.assert_array_equal(H.is_win(hands, m), H.is_win(hands, np.full(400, m)))
    mixed = np.arange(400) % 2
    np.testing.assert_array_equal(
        H.is_win(hands, mixed), np.where(mixed == 0, H.is_win(hands, 0), H.is_win(hands, 1))
    )


def test_output_dtypes_and_shapes():
    c = P("123m456m789m123p1s")
    assert H.waits(c).shape == (27,)
    assert H.waits(c).dtype == bool
    assert H.is_win(c).shape == ()
    assert H.shanten(c).shape == ()
    assert H.shanten(np.stack([c, c, c])).shape == (3,)
    assert H.suit_index(c).shape == (3,)
    assert H.DIST.shape == (5**9, 5, 2)
    assert H.WIN_CODE.shape == H.PAIR_CODE.shape == H.SUIT_REM.shape == (5**9,)
    assert H.SUIT_WAITS.shape == (5**9,)


# ============================================================================ bad input
BAD_SHAPES = [(26,), (28,), (3, 26), (2, 3, 9), (0,)]


@pytest.mark.parametrize("shape", BAD_SHAPES)
@pytest.mark.parametrize(
    "fn",
    [
        lambda c: H.is_win(c),
        lambda c: H.waits(c),
        lambda c: H.is_ready(c),
        lambda c: H.shanten(c),
        lambda c: H.suit_index(c),
        lambda c: H.hand_value(c, np.zeros(27, np.int8), 0, TABLES["guiyang"]),
        lambda c: H.is_plain(c, np.zeros(27, np.int8), 0),
        lambda c: H.chajiao_value(c, np.zeros(27, np.int8), 0, TABLES["guiyang"]),
        lambda c: H.shape_and_flush(c, np.zeros(27, np.int8), 0),
    ],
    ids=[
        "is_win",
        "waits",
        "is_ready",
        "shanten",
        "suit_index",
        "hand_value",
        "is_plain",
        "chajiao_value",
        "shape_and_flush",
    ],
)
def test_wrong_last_axis(fn, shape):
    c = np.zeros(shape, dtype=np.int8)
    with pytest.raises(
        ValueError, match=rf"expected counts with last axis 27, got shape {re.escape(str(shape))}$"
    ):
        fn(c)


@pytest.mark.parametrize("size", [0, 3, 6, 9, 12, 15, 17])
def test_shanten_bad_sizes(size):
    rng = np.random.default_rng(size)
    c = random_hands(rng, 1, size)[0] if size else np.zeros(27, np.int8)
    why = r"shanten needs 3k\+1 or 3k\+2 concealed tiles"
    with pytest.raises(ValueError, match=why):
        H.shanten(c)
    with pytest.raises(ValueError, match=why):
        H.shanten(c, seven_pairs=False)
    # one bad hand in a batch is enough
    good = P("123m456m789m123p1s")
    with pytest.raises(ValueError, match=why):
        H.shanten(np.stack([good, c]))


# ============================================================================ neighbours
@pytest.mark.parametrize("seven", [True, False])
@pytest.mark.parametrize("change", [1, -1])
def test_shanten_neighbours_equal_shanten_of_changed_hands(change, seven):
    rng = np.random.default_rng(5 + change)
    sizes = (1, 4, 7, 10, 13) if change == 1 else (2, 5, 8, 11, 14)
    h = np.concatenate(
        [f(rng, 600, size) for size in sizes for f in (random_hands, near_hands)]
        + [pairs_hands(rng, 600, sizes[-1])]
    )
    s, s_next = H.shanten_neighbours(h, change, seven)
    np.testing.assert_array_equal(s, H.shanten(h, seven))
    possible = h < 4 if change == 1 else h > 0
    r, t = np.nonzero(possible)
    np.testing.assert_array_equal(s_next[r, t], H.shanten(h[r] + change * EYE[t], seven))
    assert (s_next[~possible] == 99).all()


@settings(max_examples=200, deadline=None)
@given(hand_counts(sizes=(2, 5, 8, 11, 14)))
def test_shanten_neighbours_discards_property(c):
    s, after = H.shanten_neighbours(c, -1)
    assert s.shape == () and after.shape == (27,)
    assert s == H.shanten(c)
    for t in range(27):
        assert after[t] == (H.shanten(c - EYE[t]) if c[t] else 99)
    # a discard never lowers shanten, and the best discard keeps it
    assert after[c > 0].min() == s or (s == -1 and after[c > 0].min() == 0)


def test_shanten_neighbours_bad_input():
    with pytest.raises(ValueError, match="change must be"):
        H.shanten_neighbours(np.zeros(27, np.int8), 2)
    c13 = T.to_counts(T.parse_tiles("1m2m3m4m5m6m7m8m9m1p2p3p4p"))
    with pytest.raises(ValueError, match="3k\\+2"):
        H.shanten_neighbours(c13, -1)
    with pytest.raises(ValueError, match="3k\\+1"):
        H.shanten_neighbours(c13 + EYE[0], 1)


# ======================================================================= one hand, plain Python
def test_one_hand_functions_equal_the_array_functions():
    rng = np.random.default_rng(11)
    turn = np.concatenate(
        [f(rng, 400, size) for size in (2, 5, 8, 11, 14) for f in (random_hands, near_hands)]
        + [pairs_hands(rng, 400, 14)]
    )
    wait = np.concatenate(
        [f(rng, 400, size) for size in (1, 4, 7, 10, 13) for f in (random_hands, near_hands)]
        + [pairs_hands(rng, 400, 13)]
    )
    s, after = H.shanten_neighbours(turn, -1)
    for i, c in enumerate(turn.tolist()):
        assert H.suit_indices_one(c) == H.suit_index(turn[i]).tolist()
        assert H.discard_shanten_one(c) == (s[i], after[i].tolist())
        for melds in (0, 1):
            assert H.is_win_one(c, melds) == H.is_win(turn[i], melds)
    # ready discards, without melds and with a kong of a kind the hand lacks (its waits die)
    held = turn > 0
    r, t = np.nonzero(held)
    ready = np.zeros(turn.shape, bool)
    ready[r, t] = H.is_ready(turn[r] - EYE[t])
    lacks = (turn == 0).argmax(-1)
    mt = 4 * EYE[lacks]
    ready_kong = np.zeros(turn.shape, bool)
    ready_kong[r, t] = H.is_ready(turn[r] - EYE[t], mt[r], 1)
    for i, c in enumerate(turn.tolist()):
        assert H.ready_discards_one(c, 0) == np.flatnonzero(ready[i]).tolist()
        assert H.ready_discards_one(c, 1, mt[i].tolist()) == np.flatnonzero(ready_kong[i]).tolist()
    assert ready.any(-1).sum() > 100
    sh = H.shanten(wait)
    for i, c in enumerate(wait.tolist()):
        assert H.shanten_one(c) == sh[i]
        for melds in (0, 1):
            assert H.waits_one(c, melds) == np.flatnonzero(H.waits(wait[i], melds)).tolist()


@settings(max_examples=150, deadline=None)
@given(hand_counts(sizes=(1, 4, 7, 10, 13)), st.integers(0, 4))
def test_one_hand_waits_property(c, melds):
    cl = c.tolist()
    assert H.waits_one(cl, melds) == np.flatnonzero(H.waits(c, melds)).tolist()
    assert H.shanten_one(cl) == H.shanten(c)
    for t in range(27):
        if c[t] < 4:
            assert H.is_win_one((c + EYE[t]).tolist(), melds) == H.is_win(c + EYE[t], melds)


@pytest.mark.parametrize(
    "counts, dtype",
    [
        (np.full(27, 0.5), "float64"),
        (T.to_counts("1m1m1m2m3m4m5m6m7m8m9m9m9m").astype(float), "float64"),
        ([True] * 13 + [False] * 14, "bool"),
    ],
    ids=["halves", "whole-floats", "bools"],
)
def test_counts_that_are_not_integers_are_refused(counts, dtype):
    """0.5s were an IndexError about index types; floats and bools are refused by dtype (the
    engine's int8 counts pay one attribute look-up)."""
    for f in (H.shanten, H.is_win, H.waits, H.is_ready, H.suit_index):
        with pytest.raises(
            ValueError, match=f"^tile counts must be integers 0-4, got dtype {dtype}$"
        ):
            f(counts)
    assert H.shanten(T.to_counts("1m1m1m2m3m4m5m6m7m8m9m9m9m").astype(np.uint8)) == 0
