"""The batch-1 fast path (``zhuoji_env.engine.fastpath``) against the array code.

``core.step`` of a one-game batch takes the fast path for the moves it covers; it must leave
exactly the state the array code leaves. Besides these tests, the whole suite runs in shadow
mode (``tests/conftest.py`` sets ``ZHUOJI_FASTPATH_SHADOW=1``), which checks every batch-1
step of every test the same way.
"""

from __future__ import annotations

import dataclasses
import os
import zlib

import numpy as np
import pytest
from scenario_helpers import VARIANTS

from zhuoji_env import hands
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core, fastpath
from zhuoji_env.engine.state import OVER
from zhuoji_env.rules import Rules


def _weights(rng) -> np.ndarray:
    """Action weights of one hand: toward kongs, pongs and 报听 so every branch comes up, and
    toward taking wins or (half the hands) passing them, which locks the seat (过手胡)."""
    w = np.ones(A.NUM_ACTIONS)
    w[A.HU] = 40.0 if rng.random() < 0.5 else 0.1
    w[A.ANGANG : A.BUGANG + 27] = 30.0
    w[A.PONG] = w[A.KONG] = 3.0
    w[A.BAOTING] = 20.0
    return w


def _toward_wins(st, weights, rng) -> np.ndarray:
    """Weighted random, except that most discards keep the least shanten (hands get ready)."""
    w = weights * st.mask[0] * rng.random(A.NUM_ACTIONS)
    best = int(w.argmax())
    if best < 27 and rng.random() < 0.9:
        _, after = hands.shanten_neighbours(st.hand[0, st.actor[0]], -1)
        after = np.where(st.mask[0, :27], after + rng.random(27), np.inf)
        best = int(after.argmin())
    return np.array([best])


@pytest.mark.parametrize("spec", VARIANTS, ids=[str(i) for i in range(len(VARIANTS))])
def test_fast_path_equals_array_code(spec):
    """``core.step`` of a one-game batch (``fastpath`` where it applies) leaves exactly the
    state that the array code leaves, field by field, after every step."""
    rules = Rules.make(spec)
    rng = np.random.default_rng(zlib.crc32(str(spec).encode()))
    fast = slow = locks = 0
    for _ in range(20):
        wall = rng.permutation(np.repeat(np.arange(27), 4))[None]
        st = core.deal(rules, wall, int(rng.integers(rules.num_players)), int(rng.integers(3)))
        weights = _weights(rng)
        while st.phase[0] != OVER:
            a = _toward_wins(st, weights, rng)
            ref = st.copy()
            want = core.step_arrays(rules, ref, a)
            got = fastpath.step_one(rules, st, a)
            if got is None:
                got = core.step_arrays(rules, st, a)
                slow += 1
            else:
                fast += 1
                locks += int(st.pass_lock.any())
            assert got.tolist() == want.tolist()
            for f in dataclasses.fields(st):
                np.testing.assert_array_equal(getattr(st, f.name), getattr(ref, f.name), f.name)
    assert fast > 4 * slow > 0 and locks > 0, (fast, slow, locks)


OUT_OF_RANGE = r"game 0: seat 0 tried action {} \(out of range 0-85\); legal: \['discard 2m'"


@pytest.mark.parametrize(
    "bad, err, why",
    [
        (np.array([-1]), core.IllegalActionError, OUT_OF_RANGE.format(-1)),
        (np.array([A.NUM_ACTIONS]), core.IllegalActionError, OUT_OF_RANGE.format(A.NUM_ACTIONS)),
        (np.array([5.0]), ValueError, "^actions must be integers, got dtype float64$"),
        (np.array([[5]]), ValueError, r"^expected 1 actions, got shape \(1, 1\)$"),
        (np.array([5, 5]), ValueError, r"^expected 1 actions, got shape \(2,\)$"),
        (np.array([True]), ValueError, "^actions must be integers, got dtype bool$"),
        ([5], core.IllegalActionError, r"^game 0: seat 0 tried discard 6m; legal: \['discard 2m'"),
        (np.array([0]), core.IllegalActionError, r"^game 0: seat 0 tried discard 1m; legal: \["),
    ],
    ids=["minus-one", "out-of-range", "float", "2d", "two", "bool", "list", "illegal"],
)
def test_fast_path_leaves_other_input_to_the_array_code(bad, err, why):
    """Odd or illegal input: ``step_one`` declines without touching the state, and
    ``core.step`` then reports exactly what the array code reports (this deal's dealer may
    not discard 1m or 6m)."""
    rules = Rules.make("guiyang")
    wall = np.random.default_rng(0).permutation(np.repeat(np.arange(27), 4))[None]
    st = core.deal(rules, wall, 0)
    before = st.copy()
    assert fastpath.step_one(rules, st, bad) is None
    for f in dataclasses.fields(st):
        np.testing.assert_array_equal(getattr(st, f.name), getattr(before, f.name), f.name)
    with pytest.raises(err, match=why) as fast:
        core.step(rules, st, bad)
    with pytest.raises(err, match=why) as slow:
        core.step_arrays(rules, st.copy(), bad)
    assert type(fast.value) is type(slow.value) and str(fast.value) == str(slow.value)


def _dealt(preset="guiyang"):
    rules = Rules.make(preset)
    wall = np.random.default_rng(0).permutation(np.repeat(np.arange(27), 4))[None]
    return rules, core.deal(rules, wall, 0)


def test_shadow_mode_is_on_in_the_test_suite():
    """``tests/conftest.py`` sets ``ZHUOJI_FASTPATH_SHADOW`` before the engine is imported."""
    assert os.environ[core.SHADOW_ENV] == "1" and core.SHADOW


def test_shadow_mode_catches_a_planted_difference(monkeypatch):
    """A fast path that leaves one field wrong (here ``pass_lock``) is caught on that step,
    with the field named; without shadow mode the same step goes through unnoticed."""
    real = fastpath.step_one

    def planted(rules, st, actions):
        ended = real(rules, st, actions)
        if ended is not None:
            st.pass_lock[0, 3] = ~st.pass_lock[0, 3]
        return ended

    monkeypatch.setattr(fastpath, "step_one", planted)
    monkeypatch.setattr(core, "SHADOW", True)
    rules, st = _dealt()
    discard = np.array([int(np.flatnonzero(st.mask[0, :27])[0])])
    with pytest.raises(core.FastPathMismatchError, match=r"in: pass_lock$"):
        core.step(rules, st.copy(), discard)
    monkeypatch.setattr(core, "SHADOW", False)
    assert core.step(rules, st, discard).tolist() == [False]
    assert st.pass_lock[0, 3]


def test_shadow_mode_checks_the_ended_flag(monkeypatch):
    """A fast path that reports a hand ended when the array code does not is caught too."""
    real = fastpath.step_one

    def flipped(rules, st, actions):
        ended = real(rules, st, actions)
        return None if ended is None else ~ended

    monkeypatch.setattr(fastpath, "step_one", flipped)
    monkeypatch.setattr(core, "SHADOW", True)
    rules, st = _dealt()
    discard = np.array([int(np.flatnonzero(st.mask[0, :27])[0])])
    with pytest.raises(
        core.FastPathMismatchError, match=r"differ after action \[\d+\] .* in: ended$"
    ):
        core.step(rules, st, discard)
