"""Tiles: kinds, codes, parsing, count vectors and the next/previous tile (RULES.md 1)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from zhuoji_env import tiles as T

ALL_CODES = [f"{r}{s}" for s in "mps" for r in range(1, 10)]


# ------------------------------------------------------------------------ kinds and codes
def test_constants():
    assert T.NUM_KINDS == 27
    assert T.NUM_TILES == 108
    assert T.COPIES == 4
    assert T.YAOJI == 18 == T.kind("1s")
    assert list(T.CODES) == ALL_CODES


@pytest.mark.parametrize(
    "code, kind",
    [("1m", 0), ("5m", 4), ("9m", 8), ("1p", 9), ("9p", 17), ("1s", 18), ("5s", 22), ("9s", 26)],
)
def test_known_kinds(code, kind):
    assert T.kind(code) == kind
    assert T.code(kind) == code


@pytest.mark.parametrize("k", range(27))
def test_round_trip_kind_code(k):
    c = T.code(k)
    assert len(c) == 2
    assert c[1] == "mps"[k // 9]
    assert int(c[0]) == k % 9 + 1
    assert T.kind(c) == k
    assert T.code(np.int64(k)) == c
    assert T.suit_of(k) == k // 9


@pytest.mark.parametrize("c", ALL_CODES)
def test_round_trip_code_kind(c):
    assert T.code(T.kind(c)) == c


def test_unicode_glyphs():
    assert len(T.UNICODE) == 27
    assert T.UNICODE[0] == "\U0001f007"  # one of characters
    assert T.UNICODE[9] == "\U0001f019"  # one of circles
    assert T.UNICODE[18] == "\U0001f010"  # one of bamboos
    assert len(set(T.UNICODE)) == 27


@pytest.mark.parametrize("bad", ["0m", "1z", "10m", "", "m1", "1M", " 1m", "1", "5mm"])
def test_bad_code_strings(bad):
    with pytest.raises(
        ValueError,
        match=rf"^bad tile code {re.escape(repr(bad))}: expected rank 1-9 then suit m, p or s",
    ):
        T.kind(bad)


@pytest.mark.parametrize("bad", [None, 5, 0, 1.0, ("1", "m")])
def test_bad_code_non_strings(bad):
    with pytest.raises(
        ValueError,
        match=rf"^bad tile code {re.escape(repr(bad))}: expected rank 1-9 then suit m, p or s",
    ):
        T.kind(bad)


@pytest.mark.parametrize("bad", [-1, 27, 100, "1m", None, 1.5])
def test_bad_kind(bad):
    with pytest.raises(
        ValueError, match=rf"^bad tile kind {re.escape(repr(bad))}: expected an integer 0-26$"
    ):
        T.code(bad)


# ------------------------------------------------------------------------ parse and format
def test_parse_string_and_list():
    assert T.parse_tiles("1m2m3m") == [0, 1, 2]
    assert T.parse_tiles("9s1s5p") == [26, 18, 13]
    assert T.parse_tiles(["9s", "1s", "5p"]) == [26, 18, 13]
    assert T.parse_tiles(("1m",)) == [0]
    assert T.parse_tiles("") == []
    assert T.parse_tiles([]) == []


def test_parse_all_codes():
    assert T.parse_tiles("".join(ALL_CODES)) == list(range(27))
    assert T.parse_tiles(ALL_CODES) == list(range(27))


@pytest.mark.parametrize(
    "bad, why",
    [
        ("1m0m", "bad tile code '0m': expected rank 1-9"),
        ("1m1z", "bad tile code '1z': expected rank 1-9"),
        ("5p5", "tile string of odd length 3: '5p5'"),
    ],
)
def test_parse_bad_string(bad, why):
    with pytest.raises(ValueError, match="^" + why):
        T.parse_tiles(bad)


def test_parse_odd_length_names_the_text():
    with pytest.raises(ValueError, match="^tile string of odd length 3: '10m'$"):
        T.parse_tiles("10m")


@pytest.mark.parametrize("bad", ["0m", "1z", "10m", ""])
def test_parse_bad_list_item(bad):
    with pytest.raises(
        ValueError,
        match=rf"^bad tile code {re.escape(repr(bad))}: expected rank 1-9 then suit m, p or s",
    ):
        T.parse_tiles(["1m", bad])


def test_format():
    assert T.format_tiles([0, 1, 2]) == "1m2m3m"
    assert T.format_tiles([26, 18, 13]) == "9s1s5p"
    assert T.format_tiles(np.array([9, 9], dtype=np.int8)) == "1p1p"
    assert T.format_tiles([]) == ""
    with pytest.raises(ValueError, match="bad tile kind 27: expected an integer 0-26"):
        T.format_tiles([27])


def test_format_parse_round_trip():
    rng = np.random.default_rng(0)
    for _ in range(200):
        kinds = [int(k) for k in rng.integers(0, 27, size=rng.integers(0, 20))]
        text = T.format_tiles(kinds)
        assert len(text) == 2 * len(kinds)
        assert T.parse_tiles(text) == kinds


# ------------------------------------------------------------------------ counts
def test_to_counts_from_string_list_and_kinds():
    expected = np.zeros(27, dtype=np.int8)
    expected[0] = 2
    expected[13] = 1
    expected[18] = 1
    for src in ("1m1m5p1s", ["1m", "5p", "1m", "1s"], [0, 13, 0, 18], np.array([18, 0, 0, 13])):
        got = T.to_counts(src)
        assert got.shape == (27,)
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, expected)


def test_to_counts_empty():
    for src in ("", [], ()):
        np.testing.assert_array_equal(T.to_counts(src), np.zeros(27, dtype=np.int8))


@pytest.mark.parametrize(
    "bad, shown",
    [([27], "kind 27"), ([-1], "kind -1"), ("1m1z", "code '1z'"), (["1m", "0p"], "code '0p'")],
)
def test_to_counts_bad(bad, shown):
    with pytest.raises(ValueError, match=f"bad tile {shown}"):
        T.to_counts(bad)


def test_from_counts_and_str():
    c = T.to_counts("5p1m1s1m")
    assert T.from_counts(c) == [0, 0, 13, 18]
    assert T.counts_to_str(c) == "1m1m5p1s"
    assert T.counts_to_str(np.zeros(27, dtype=np.int8)) == ""


@pytest.mark.parametrize(
    "bad, why",
    [
        (np.zeros(26, int), r"got int64 of shape \(26,\)"),
        (np.zeros((2, 27), int), r"got int64 of shape \(2, 27\)"),
        (-np.eye(27, dtype=int)[9], "got other counts of 1p"),
        (5 * np.eye(27, dtype=int)[0], "got other counts of 1m"),  # five tiles of a kind
        (np.r_[2.7, np.zeros(26)], r"got float64 of shape \(27,\)"),  # read as 2 before
        (np.ones(27, bool), r"got bool of shape \(27,\)"),
    ],
)
def test_from_counts_bad(bad, why):
    with pytest.raises(ValueError, match=f"expected 27 integer counts 0-4, {why}"):
        T.from_counts(bad)


def test_formats_and_counts_refuse_what_they_used_to_truncate_or_wrap():
    """format_tiles ran int() before code(), so 0.9 read as 1m and "12" as 2m3m; to_counts
    wrapped 130 copies to -126 in int8; kind_counts truncated floats."""
    for bad in ([0.9], [True], "12"):
        with pytest.raises(ValueError):
            T.format_tiles(bad)
    with pytest.raises(ValueError, match="more than 4 tiles of 1m: a kind has 4 copies"):
        T.to_counts("1m" * 5)
    with pytest.raises(ValueError, match="more than 4 tiles of 1m"):
        T.to_counts("1m" * 130)
    with pytest.raises(ValueError, match="tile kinds must be integers 0-26 in rows"):
        T.kind_counts([[0.9, 26.5]])
    with pytest.raises(ValueError, match="tile kinds must be integers 0-26 in rows"):
        T.kind_counts(3)
    assert T.kind_counts(np.zeros((2, 0), int)).shape == (2, 27)


def test_counts_round_trip_random():
    rng = np.random.default_rng(1)
    full = T.full_set()
    for _ in range(200):
        n = int(rng.integers(0, 20))
        kinds = sorted(int(k) for k in rng.choice(full, size=n, replace=False))
        c = T.to_counts(kinds)
        assert c.sum() == n
        assert c.max(initial=0) <= 4
        assert T.from_counts(c) == kinds
        np.testing.assert_array_equal(T.to_counts(T.counts_to_str(c)), c)


def test_full_set():
    f = T.full_set()
    assert f.shape == (108,)
    assert list(f[:5]) == [0, 0, 0, 0, 1]
    assert list(f[-4:]) == [26] * 4
    np.testing.assert_array_equal(T.to_counts(f), np.full(27, 4, dtype=np.int8))


# ------------------------------------------------------------------------ next / prev
@pytest.mark.parametrize(
    "tile, nxt, prv",
    [
        ("5m", "6m", "4m"),
        ("1m", "2m", "9m"),
        ("9m", "1m", "8m"),
        ("9p", "1p", "8p"),
        ("1p", "2p", "9p"),
        ("1s", "2s", "9s"),
        ("9s", "1s", "8s"),
        ("5s", "6s", "4s"),
    ],
)
def test_next_prev_examples(tile, nxt, prv):
    k = T.kind(tile)
    assert T.code(T.next_kind(k)) == nxt
    assert T.code(T.prev_kind(k)) == prv
    assert isinstance(T.next_kind(k), int)
    assert isinstance(T.prev_kind(k), int)


@pytest.mark.parametrize("k", range(27))
def test_next_prev_all(k):
    rank, suit = k % 9, k // 9
    assert T.next_kind(k) == suit * 9 + (rank + 1) % 9
    assert T.prev_kind(k) == suit * 9 + (rank - 1) % 9
    assert T.prev_kind(T.next_kind(k)) == k
    assert T.next_kind(T.prev_kind(k)) == k
    assert T.suit_of(T.next_kind(k)) == suit


def test_next_prev_arrays():
    ks = np.arange(27)
    nxt = T.next_kind(ks)
    prv = T.prev_kind(ks)
    assert nxt.shape == prv.shape == (27,)
    np.testing.assert_array_equal(nxt, [T.next_kind(int(k)) for k in ks])
    np.testing.assert_array_equal(prv, [T.prev_kind(int(k)) for k in ks])
    np.testing.assert_array_equal(T.prev_kind(nxt), ks)
    # nine applications of next come back to the start
    x = ks
    for _ in range(9):
        x = T.next_kind(x)
    np.testing.assert_array_equal(x, ks)
    np.testing.assert_array_equal(T.suit_of(ks), ks // 9)


def test_kind_counts_of_rows():
    walls = np.stack([T.full_set(), T.full_set()[::-1]]).astype(np.int64)
    walls[1, :2] = [0, 26]
    got = T.kind_counts(walls)
    assert got.shape == (2, 27) and (got[0] == 4).all()
    assert got[1, 0] == 5 and got[1, 26] == 3 and got[1].sum() == 108
    assert T.kind_counts([3, 3, 5]).tolist() == [0, 0, 0, 2, 0, 1] + [0] * 21
    with pytest.raises(ValueError, match="tile kinds must be 0-26"):
        T.kind_counts([0, 27])


@pytest.mark.parametrize("kind", [1.7, 1.0, True, np.float64(2.0), np.bool_(True), "1"])
def test_kinds_that_are_not_integers_are_refused(kind):
    """1.7 and True were read as kind 1."""
    with pytest.raises(ValueError, match=rf"^bad tile kind {re.escape(repr(kind))}: expected an "):
        T.to_counts([0, kind])
    with pytest.raises(ValueError, match=r"^bad tile kind .*: expected an integer 0-26$"):
        T.code(kind)
    assert T.to_counts(np.array([1, 1, 26], dtype=np.int8))[[1, 26]].tolist() == [2, 1]
