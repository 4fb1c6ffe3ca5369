"""Arena statistics from known hands: hand-built deals played by scripted agents through
``agents.arena.run_chunk``, every agent's counts compared with counts made by hand.

The deals are three of the rule scenarios (``tests/test_scenarios.py``), whose settlements are
worked out by hand there:

1. ``test_pattern_daduizi_ron``: the dealer (seat 0) discards 6s, seat 2 wins on it with a
   大对子: hu 5 from seat 0; flip 6m -> 7m chicken, seat 2 holds three: 3 from each other seat.
   Deltas -8, -3, +14, -3.
2. ``test_kong_mendou_timely_and_gangkai``: seat 0 discards 7s, seat 1 draws the 4th 2p, makes a
   timely 闷豆 and self-draws on its replacement: hu 3, 闷豆 2 and one chicken 1 from each
   other seat. Deltas -6, +18, -6, -6.
3. ``test_example_d_exhaustive_draw_chajiao``: nobody claims anything, every seat discards what
   it draws; 黄庄 with 查叫: seats 1 and 3 pay seat 0 5 and seat 2 1. Deltas +10, -6, +2, -6.

The scripted agent wins when it may and kongs when it may (deals 1 and 2) or never (deal 3),
otherwise discards the tile it just drew and passes every claim, which replays each scenario's
decisions exactly. Four such agents play every deal in two seatings; an agent's count is the sum
over the two seats it holds, so a count credited to the wrong seat or agent shows.
"""

from __future__ import annotations

import numpy as np
import pytest
from scenario_helpers import make_wall

from agents import arena
from agents.base import Agent
from zhuoji_env.engine import actions as A
from zhuoji_env.observation import block
from zhuoji_env.rules import Rules

J1 = "1m1m4m4m7m5p5p8p8p3s6s9s9s"  # the scenarios' filler hands (not ready, no 1s)
J2 = "2m2m5m5m8m3p3p6p6p9p2s5s8s"
J3 = "3m3m6m6m9m9m1p1p4p4p7p4s7s"
DEALS = [  # (hands, live draws, replacement draws); the dealer is seat 0
    ({0: J2 + "6s", 1: J1, 2: "7m7m7m2p2p2p7s7s7s9p9p6s6s", 3: J3}, "6m", ""),
    ({0: J1 + "7s", 1: "2p2p2p3m4m5m6s7s8s4p5p9s9s", 2: J2, 3: J3}, "2p2m", "6p"),
    (
        {
            0: "1m1m1m2m2m2m3p3p3p5p5p7p7p9m",
            1: "5p5p7p7p1s1s4s4s1m3m9m2p6s",
            2: "2s3s4m5m6m7m8m9m2p3p4p9s9s",
            3: "1s1s4s4s4m8m1p2p6p8p3s7s8s",
        },
        "",
        "",
    ),
]
SEATINGS = np.array([[2, 0, 3, 1], [3, 2, 1, 0]])  # agent index at seats 0..3
# seats held by each agent over the two seatings: a0 {1, 3}, a1 {2, 3}, a2 {0, 1}, a3 {0, 2}

# per deal, each agent's sums over its two seats, counted by hand from the deltas above
EXPECTED = {
    0: {  # deal 1, seats: deltas -8 -3 +14 -3; seat 2 wins (hu 5, chickens 9); seat 0 dealt in
        "hands": [2, 2, 2, 2],
        "score": [-6, 11, -11, 6],
        "wins": [0, 1, 0, 1],
        "self_draws": [0, 0, 0, 0],
        "deal_ins": [0, 0, 1, 1],
        "draws": [0, 0, 0, 0],
        "hu_value": [0, 5, 0, 5],
        "kongs": [0, 0, 0, 0],
        "chickens": [0, 9, 0, 9],
        "dou": [0, 0, 0, 0],
        "baoting": [0, 0, 0, 0],
    },
    1: {  # deal 2, seats: deltas -6 +18 -6 -6; seat 1 self-draws (hu 9, kong, dou 6, chickens 3)
        "hands": [2, 2, 2, 2],
        "score": [12, -12, 12, -12],
        "wins": [1, 0, 1, 0],
        "self_draws": [1, 0, 1, 0],
        "deal_ins": [0, 0, 0, 0],
        "draws": [0, 0, 0, 0],
        "hu_value": [9, 0, 9, 0],
        "kongs": [1, 0, 1, 0],
        "chickens": [3, 0, 3, 0],
        "dou": [6, 0, 6, 0],
        "baoting": [0, 0, 0, 0],
    },
    2: {  # deal 3, seats: deltas +10 -6 +2 -6; a draw at every seat, 查叫 only
        "hands": [2, 2, 2, 2],
        "score": [-12, -4, 4, 12],
        "wins": [0, 0, 0, 0],
        "self_draws": [0, 0, 0, 0],
        "deal_ins": [0, 0, 0, 0],
        "draws": [2, 2, 2, 2],
        "hu_value": [0, 0, 0, 0],
        "kongs": [0, 0, 0, 0],
        "chickens": [0, 0, 0, 0],
        "dou": [0, 0, 0, 0],
        "baoting": [0, 0, 0, 0],
    },
}


class Scripted(Agent):
    """Wins and kongs when allowed and legal; otherwise passes a claim, or discards the tile it
    just drew (which it always has: it never pongs)."""

    name = "scripted"

    def __init__(self, wins: bool, kongs: bool):
        super().__init__(0)
        self.wins, self.kongs = wins, kongs

    def _act(self, obs, mask):
        out = []
        for o, m in zip(obs, mask, strict=True):
            kongs = np.flatnonzero(m[A.ANGANG : A.BUGANG + 27]) + A.ANGANG
            if self.wins and m[A.HU]:
                out.append(A.HU)
            elif self.kongs and kongs.size:
                out.append(kongs[0])
            elif self.kongs and m[A.KONG]:
                out.append(A.KONG)
            elif m[A.PASS]:
                out.append(A.PASS)
            else:
                drawn = block(o, "drawn")
                assert drawn.any(), "a turn without a drawn tile"
                out.append(A.DISCARD + int(drawn.argmax()))
        return out


@pytest.fixture
def hand_built_deals(monkeypatch):
    """Deal ids 0, 1, 2 deal the three scenarios (dealer seat 0) instead of seeded walls."""
    walls = np.array([make_wall(0, h, live=live, back=back) for h, live, back in DEALS])

    def deal_walls(seed, deal_ids, num_players):
        ids = np.asarray(deal_ids)
        return walls[ids], np.zeros(len(ids), dtype=np.int64)

    monkeypatch.setattr(arena, "deal_walls", deal_walls)


def _play(deal_ids, wins_and_kongs):
    agents = [Scripted(wins_and_kongs, wins_and_kongs) for _ in range(4)]
    rules = Rules.make("guiyang")
    chunk = arena.Chunk(0, np.array(deal_ids))
    return arena.run_chunk(rules, agents, SEATINGS, 0, chunk)["acc"]


def test_each_agents_counts_are_the_hand_counted_ones(hand_built_deals):
    acc = np.concatenate([_play([0, 1], True), _play([2], False)])
    assert acc.shape == (3, 4, len(arena.FIELDS))
    for d, fields in EXPECTED.items():
        for name, want in fields.items():
            got = acc[d, :, arena.FIELDS.index(name)].tolist()
            assert got == want, f"deal {d + 1}, {name}: {got} != {want}"


def test_summary_rates_from_the_hand_built_deals(hand_built_deals):
    acc = np.concatenate([_play([0, 1], True), _play([2], False)])
    labels = ["a0", "a1", "a2", "a3"]
    res = arena.ArenaResult(labels, labels, Rules.make("guiyang"), 0, SEATINGS, acc)
    s = res.summary()
    a3 = s["agents"]["a3"]  # seats 0 and 2: six seat-hands
    assert a3["hands"] == 6
    assert a3["mean"] == pytest.approx((6 / 2 - 12 / 2 + 12 / 2) / 3)  # deal means 3, -6, 6
    assert a3["win_rate"] == pytest.approx(1 / 6) and a3["win_value"] == pytest.approx(5.0)
    assert a3["deal_in_rate"] == pytest.approx(1 / 6) and a3["self_draw_rate"] == 0
    assert a3["chickens_per_hand"] == pytest.approx(9 / 6) and a3["draw_rate"] == pytest.approx(
        2 / 6
    )
    a0 = s["agents"]["a0"]  # seats 1 and 3
    assert a0["self_draw_rate"] == pytest.approx(1 / 6) and a0["kongs_per_hand"] == pytest.approx(
        1 / 6
    )
    assert a0["dou_per_hand"] == pytest.approx(6 / 6) and a0["deal_in_rate"] == 0
    assert s["draw_rate"] == pytest.approx(8 / 24)
    # a0 - a3 per deal: (-6 - 6) / 2, (12 + 12) / 2, (-12 - 12) / 2 = -6, 12, -12
    assert s["pairs"]["a3 - a0"]["mean"] == pytest.approx(-(-6 + 12 - 12) / 3)
