"""The batched engine against the slow reference (EnvPool's practice).

Both play the same walls; at every decision the seat asked and the set of legal actions must
agree, the same biased-random choice is applied to both, and the settled results must agree.
"""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest
from reference import RefGame, biased_pick
from scenario_helpers import VARIANTS

from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.records import compare, result_of
from zhuoji_env.engine.state import OVER
from zhuoji_env.rules import Rules


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
