"""The batched engine against the slow reference (EnvPool's practice).

Both play the same walls; at every decision the seat asked and the set of legal actions must
agree, the same biased-random choice is applied to both, and the settled results must agree.
"""

from __future__ import annotations

import dataclasses
import random
import zlib

import numpy as np
import pytest
from reference import RefGame, biased_pick

from zhuoji_env import hands
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core, fastpath
from zhuoji_env.engine.records import compare, result_of
from zhuoji_env.engine.state import OVER
from zhuoji_env.rules import Rules

VARIANTS = [
    "guiyang",
    "classic",
    "app",
    {"preset": "guiyang", "overrides": {"num_players": 3}},
    {"preset": "app", "overrides": {"num_players": 3}},
    {"preset": "guiyang", "overrides": {"flip_mode": "up_down", "pass_win": "forbid"}},
    {"preset": "guiyang", "overrides": {"baoting": True, "base_stake": 2}},
    {"preset": "classic", "overrides": {"pass_win": "forbid", "draw_dealer": "stay"}},
    {"preset": "app", "overrides": {"pass_win": "penalty", "zeren": "on", "chongfeng": 1}},
    {"preset": "guiyang", "overrides": {"rerpao": "transfer", "qianggang": "plus_nine_burn"}},
    {"preset": "classic", "overrides": {"rerpao": "plus_one_burn", "chicken_scope": "all"}},
    {"preset": "guiyang", "overrides": {"chicken_scope": "yaoji_river", "bao_ji": True}},
    {"preset": "guiyang", "overrides": {"ready_required": False, "jian_dou_san": True}},
    {"preset": "app", "overrides": {"zimo_bonus": 2, "units": "fan", "chicken_unit": 3}},
    {"preset": "classic", "overrides": {"draw_dealer": "classic", "num_players": 3}},
]


def _legal_set(st, i):
    out = set()
    for a in np.flatnonzero(st.mask[i]):
        name, tile = A.decode(a)
        out.add((name, None if tile is None else A.encode("discard", tile)))
    return out


def _run(spec, games, seed):
    rules = Rules.make(spec)
    rng = random.Random(seed)
    n = rules.num_players
    walls, refs = [], []
    for _ in range(games):
        wall = [k for k in range(27) for _ in range(4)]
        rng.shuffle(wall)
        dealer, streak = rng.randrange(n), rng.randrange(3)
        walls.append(wall)
        refs.append(RefGame(rules, wall, dealer=dealer, dealer_streak=streak))
    st = core.deal(
        rules,
        np.array(walls, dtype=np.int8),
        np.array([g.dealer for g in refs]),
        np.array([g.streak for g in refs]),
    )
    uniform = [rng.random() < 0.2 for _ in range(games)]
    decisions = 0
    while (st.phase != OVER).any():
        acts = np.full(games, -1)
        for i, g in enumerate(refs):
            assert (st.phase[i] == OVER) == g.done, f"game {i}: end disagrees"
            if g.done:
                continue
            seat = g.to_act()
            assert int(st.actor[i]) == seat, f"game {i}: actor {st.actor[i]} vs reference {seat}"
            legal = g.legal()
            assert _legal_set(st, i) == set(legal), f"game {i} seat {seat}: legal sets differ"
            name, tile = biased_pick(g, legal, rng, uniform[i])
            g.apply(seat, name, tile)
            acts[i] = A.encode(name, tile)
            decisions += 1
        core.step(rules, st, acts)
    ends = set()
    for i, g in enumerate(refs):
        assert g.done
        want = g.result()
        got = result_of(st, i)
        assert compare(want, got) == [], f"game {i}: {compare(want, got)}"
        ends.add(got["end"])
    return decisions, ends


@pytest.mark.parametrize("spec", VARIANTS, ids=[str(i) for i in range(len(VARIANTS))])
def test_engine_matches_reference(spec):
    decisions, ends = _run(spec, games=120, seed=zlib.crc32(str(spec).encode()))
    assert decisions > 1000
    assert {"zimo", "ron", "draw"} <= ends


# --------------------------------------------------------------------------- the batch-1 fast path
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


@pytest.mark.parametrize(
    "bad",
    [
        np.array([-1]),
        np.array([A.NUM_ACTIONS]),
        np.array([5.0]),
        np.array([[5]]),
        np.array([5, 5]),
        np.array([True]),
        [5],
    ],
    ids=["minus-one", "out-of-range", "float", "2d", "two", "bool", "list"],
)
def test_fast_path_leaves_other_input_to_the_array_code(bad):
    """Odd or illegal input: ``step_one`` declines without touching the state, and
    ``core.step`` then reports exactly what the array code reports."""
    rules = Rules.make("guiyang")
    wall = np.random.default_rng(0).permutation(np.repeat(np.arange(27), 4))[None]
    st = core.deal(rules, wall, 0)
    illegal = np.array([int(np.flatnonzero(~st.mask[0])[0])])
    for a in (bad, illegal):
        before = st.copy()
        assert fastpath.step_one(rules, st, a) is None
        for f in dataclasses.fields(st):
            np.testing.assert_array_equal(getattr(st, f.name), getattr(before, f.name), f.name)
    with pytest.raises((ValueError, core.IllegalActionError)) as fast:
        core.step(rules, st, illegal)
    with pytest.raises(type(fast.value)) as slow:
        core.step_arrays(rules, st.copy(), illegal)
    assert str(fast.value) == str(slow.value)
