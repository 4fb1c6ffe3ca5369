"""Tests of the slow reference implementation (tests/reference.py), the engine's oracle."""

from __future__ import annotations

import json
import random
import zlib
from collections import Counter
from pathlib import Path

import pytest
from reference import RefGame, biased_pick, is_win, replay_record
from scenario_helpers import idle_move, make_wall, play

from zhuoji_env.rules import Rules
from zhuoji_env.tiles import CODES, kind, to_counts

RECORD_FILES = sorted((Path(__file__).parent / "data" / "records").glob("*.json"))


def _ledger_sums(ledger):
    sums = Counter()
    for payer, payee, amount, item in ledger:
        sums[(payer, payee, item)] += amount
    return {k: v for k, v in sums.items() if v}


# ----------------------------------------------------------------------------- records
def test_twelve_records_present():
    assert len(RECORD_FILES) == 12


@pytest.mark.parametrize("path", RECORD_FILES, ids=[p.stem for p in RECORD_FILES])
def test_record_replays_to_its_result(path):
    record = json.loads(path.read_text())
    got = replay_record(record)
    want = record["result"]
    for key in ("end", "winners", "flip", "next_dealer", "next_streak", "deltas"):
        assert got[key] == want[key], key
    assert _ledger_sums(got["ledger"]) == _ledger_sums(want["ledger"])


def test_record_errors_name_the_action_index():
    record = json.loads(RECORD_FILES[0].read_text())
    short = dict(record, actions=record["actions"][:-1])
    with pytest.raises(
        ValueError, match=rf"action {len(short['actions'])}: the record ends before"
    ):
        replay_record(short)
    longer = dict(record, actions=record["actions"] + [[0, "pass"]])
    with pytest.raises(
        ValueError,
        match=rf"action {len(record['actions'])} \[0, 'pass'\]: the hand is already over",
    ):
        replay_record(longer)
    bad = dict(record, actions=[[3, "discard", "1m"]] + record["actions"])
    with pytest.raises(
        ValueError, match=r"action 0 \[3, 'discard', '1m'\]: seat 3 tried 'discard 1m', but seat"
    ):
        replay_record(bad)


# ----------------------------------------------------------------------------- wall building
def counts(codes):
    return to_counts(codes).tolist()


def ready(codes):
    c = counts(codes)
    return any(is_win(c[:t] + [c[t] + 1] + c[t + 1 :], 0) for t in range(27) if c[t] < 4)


# ----------------------------------------------------------------------------- worked examples
def test_example_a_plain_self_draw_with_flip():
    hands = {
        2: "2m3m4m6m7m8m5p6p7p9p9p1s2s3s",  # dealer: wins at once (the 14th tile is a draw)
        0: "1m1m1m4m4m4m7p7p7p8p8p1s1s",  # ready, two 1s
        1: "5p9m5m1p3p6s9s4s2p8m6p8p7s",  # one 5p, not ready
        3: "2m3m6m8m9m2p3p4p6p4s5s7s8s",  # no chicken
    }
    assert ready(hands[0]) and not ready(hands[1])
    g = RefGame(Rules.make("guiyang"), make_wall(2, hands, live="4p"), dealer=2)
    play(g, [[2, "hu"]])
    res = g.result()
    assert res["flip"] == "4p" and res["end"] == "zimo" and res["winners"] == [2]
    assert res["deltas"] == [2, -6, 10, -6]
    assert _ledger_sums(res["ledger"]) == {
        (0, 2, "hu"): 2,
        (1, 2, "hu"): 2,
        (3, 2, "hu"): 2,
        (0, 2, "chicken"): 2,
        (1, 2, "chicken"): 2,
        (3, 2, "chicken"): 2,
        (1, 0, "chicken"): 2,
        (2, 0, "chicken"): 2,
        (3, 0, "chicken"): 2,
    }
    assert res["next_dealer"] == 2 and res["next_streak"] == 1


def test_example_b_rerpao():
    hands = {
        1: "7m7m7m7m2m3m4m5p6p7p2s3s4s9p",  # dealer with a dealt quad of 7m
        2: "1m5m9m2p6p8p3s6s9s5m9m8s2p",
        3: "1p2p4m5m6m6s7s8s5s6s7s9s9s",  # plain, waits 3p, no kong of its own
        0: "1m2m3m4p8p4s5s8s2m6m8m4p5m",
    }
    g = RefGame(Rules.make("guiyang"), make_wall(1, hands, live="1m", back="3p"), dealer=1)
    play(g, [[1, "angang", "7m"], [1, "discard", "3p"], [3, "hu"]])
    res = g.result()
    assert res["end"] == "ron" and res["winners"] == [3]
    sums = _ledger_sums(res["ledger"])
    assert sums[(1, 3, "hu")] == 1 and sums[(1, 3, "rerpao")] == 1
    assert not any(item.startswith("dou") for _, _, item in sums)  # the 闷豆 is void
    assert sum(res["deltas"]) == 0
    # without the 热炮 the same plain hand has no passport on a discard
    assert g.ready[1]  # the kong's owner was ready: only the 热炮 voided it


def test_example_c_qianggang():
    hands = {
        3: "6s1m5m9m1p5p9p3m7m2p8p4p6p7s",  # dealer, discards 6s
        0: "6s6s1p2p3p4m5m6m7p8p9p2m3m",  # pongs 6s, later adds the drawn 4th
        1: "1m2m3m4p5p6p7m8m9m5s6p7p2p",
        2: "2s3s4s7s8s9s2s3s4s4s5s9s9s",  # bamboo flush, waits 6s (and 3s)
    }
    live = "9m" + "1m" + "3m" + "6s"  # seat 1, 2, 3, 0 draw and (but seat 0) discard
    wall = make_wall(3, hands, live=live)
    g = RefGame(Rules.make("guiyang"), wall, dealer=3)
    play(
        g,
        [
            [3, "discard", "6s"],
            [0, "pong"],
            [2, "pass"],  # seat 2 passes its win: locked
            [0, "discard", "2m"],
            [1, "discard", "9m"],
            [2, "discard", "1m"],
            [3, "discard", "3m"],
            [0, "bugang", "6s"],
            [2, "hu"],  # seat 2's draw cleared its lock
        ],
    )
    res = g.result()
    assert res["end"] == "qianggang" and res["winners"] == [2]
    assert _ledger_sums(res["ledger"])[(0, 2, "hu")] == 33
    assert sum(res["deltas"]) == 0
    assert res["next_dealer"] == 2 and res["next_streak"] == 0


def test_example_d_exhaustive_draw_chajiao():
    hands = {
        0: "1m1m1m2m2m2m3p3p3p5p5p7p7p9m",  # dealer: 大对子 wait on 5p/7p after 9m goes
        1: "5p5p7p7p1s1s4s4s1m3m9m2p6s",  # holds the other 5p 7p, 1s 4s: not ready
        2: "2s3s4m5m6m7m8m9m2p3p4p9s9s",  # plain wait on 1s/4s
        3: "1s1s4s4s4m8m1p2p6p8p3s7s8s",  # not ready
    }
    for s in (1, 3):
        assert not ready(hands[s])
    g = RefGame(Rules.make("guiyang"), make_wall(0, hands), dealer=0)
    while not g.done:
        play(g, [idle_move(g)])  # keep every hand as dealt
    res = g.result()
    assert res["end"] == "draw" and res["flip"] is None and res["winners"] == []
    assert res["deltas"] == [10, -6, 2, -6]
    assert {item for _, _, item in _ledger_sums(res["ledger"])} == {"chajiao"}
    assert res["next_dealer"] == 0 and res["next_streak"] == 0


# ----------------------------------------------------------------------------- errors
def test_wrong_seat_and_illegal_action_raise():
    rng = random.Random(1)
    wall = [k for k in range(27) for _ in range(4)]
    rng.shuffle(wall)
    g = RefGame(Rules.make("guiyang"), wall, dealer=0)
    assert g.to_act() == 0
    t = next(t for a, t in g.legal() if a == "discard")
    with pytest.raises(ValueError, match=r"seat 1 tried 'discard .+', but seat 0 is to act"):
        g.apply(1, "discard", t)
    missing = next(k for k in range(27) if g.hands[0][k] == 0)
    with pytest.raises(ValueError, match=rf"seat 0 tried 'discard {CODES[missing]}', .* legal \["):
        g.apply(0, "discard", missing)
    with pytest.raises(ValueError, match=r"seat 0 tried 'pong', but seat 0 is to act with legal"):
        g.apply(0, "pong")
    g.apply(0, "discard", t)  # a legal move still works after the errors


def _random_game(rules, rng, uniform=False):
    wall = [k for k in range(27) for _ in range(4)]
    rng.shuffle(wall)
    n = rules.num_players
    g = RefGame(rules, wall, dealer=rng.randrange(n), dealer_streak=rng.randrange(3))
    steps = 0
    while not g.done:
        seat = g.to_act()
        legal = g.legal()
        assert legal and seat is not None
        action, tile = biased_pick(g, legal, rng, uniform)
        g.apply(seat, action, tile)
        steps += 1
        assert steps < 2000
    assert g.to_act() is None and g.legal() == []
    return g


PRESET_SPECS = ["guiyang", "classic", "app"]


@pytest.mark.parametrize("preset", PRESET_SPECS)
def test_random_play_invariants(preset):
    rng = random.Random(zlib.crc32(preset.encode()))
    for i in range(167 if preset != "app" else 166):  # 500 games in all
        g = _random_game(Rules.make(preset), rng, uniform=i % 4 == 0)
        res = g.result()
        assert res["end"] in ("zimo", "ron", "qianggang", "draw")
        assert sum(res["deltas"]) == 0
        per_seat = [0] * g.n
        for payer, payee, amount, _item in res["ledger"]:
            assert amount != 0 and payer != payee
            per_seat[payer] -= amount
            per_seat[payee] += amount
        assert per_seat == res["deltas"]
        assert len({(a, b, it) for a, b, _, it in res["ledger"]}) == len(res["ledger"])
        # tiles are conserved: hands + melds + rivers + the undrawn wall = 108
        held = sum(sum(h) for h in g.hands)
        held += sum(m.size for ms in g.melds for m in ms)
        held += sum(len(r) for r in g.river)
        held += g.back - g.front + 1
        if res["end"] in ("ron", "qianggang"):
            held += 1  # the tile won on (or robbed) belongs to no one's concealed hand
        assert held == 108


VARIANTS = [
    {"preset": "guiyang", "overrides": {"num_players": 3}},
    {"preset": "classic", "overrides": {"num_players": 3, "flip_mode": "up_down"}},
    {"preset": "app", "overrides": {"num_players": 3, "pass_win": "penalty"}},
    {
        "preset": "guiyang",
        "overrides": {
            "baoting": True,
            "zeren": "reversible",
            "bao_ji": True,
            "chicken_scope": "yaoji_river",
            "base_stake": 3,
        },
    },
    {
        "preset": "classic",
        "overrides": {
            "ready_required": True,
            "rerpao": "plus_one_burn",
            "qianggang": "plus_nine_burn",
            "chongfeng": 1,
        },
    },
    {
        "preset": "app",
        "overrides": {
            "units": "fan",
            "draw_dealer": "classic",
            "dealer_streak_bonus": True,
            "chicken_kong_60": True,
        },
    },
]


@pytest.mark.parametrize("spec", VARIANTS, ids=[str(i) for i in range(len(VARIANTS))])
def test_random_play_variants(spec):
    rules = Rules.make(spec)
    rng = random.Random(7)
    for _ in range(40):
        g = _random_game(rules, rng)
        res = g.result()
        assert sum(res["deltas"]) == 0 and len(res["deltas"]) == rules.num_players
        for _, _, amount, _ in res["ledger"]:
            assert amount % rules.base_stake == 0


# ----------------------------------------------------------------------------- mechanics
PASS_WIN_HANDS = {
    0: "5m1p3p6p9p2s4s6s8s1m2m9m4m8p",  # dealer, discards 5m
    1: "3m4m6m8m9m2p4p7p9p5s7s9s1s",
    2: "1m1m1m2p2p2p3s3s3s5m5m7m7m",  # 大对子, waits 5m / 7m
    3: "3m6m8m3p5p6p8p9p2s4s6s8s1s",
}


def test_pass_win_penalty():
    wall = make_wall(0, PASS_WIN_HANDS, live="7m")
    g = RefGame(Rules.make("guiyang"), wall, dealer=0, dealer_streak=1)
    play(g, [[0, "discard", "5m"]])
    assert g.to_act() == 2 and ("hu", None) in g.legal()
    play(g, [[2, "pass"], [1, "discard", "7m"]])
    assert g.to_act() == 2 and ("hu", None) in g.legal()  # still legal while locked...
    play(g, [[2, "hu"]])  # ...but void: seat 2 pays the 大对子 value to everyone
    assert not g.done and g.to_act() == 2 and g.phase == "turn"  # play goes on: seat 2 draws
    assert not g.locked[2]  # its draw cleared the lock
    assert _ledger_sums(g.ledger) == {(2, 0, "baopai"): 6, (2, 1, "baopai"): 5, (2, 3, "baopai"): 5}


def test_pass_win_forbid():
    wall = make_wall(0, PASS_WIN_HANDS, live="7m")
    g = RefGame(Rules.make("guiyang", pass_win="forbid"), wall, dealer=0)
    play(g, [[0, "discard", "5m"], [2, "pass"], [1, "discard", "7m"]])
    assert g.to_act() == 2 and set(g.legal()) == {("pong", None), ("pass", None)}


def test_baoting_freezes_the_hand():
    hands = {
        0: "1m2m3m4p5p6p7s8s9s2m2m5p6p9m",  # dealer: discarding 9m leaves it ready (4p/7p)
        1: "3m4m6m8m9m2p3p7p9p5s7s9s1s",
        2: "1m1m5m7m2p8p9p3s3s4s6s1s1s",
        3: "3m6m8m1p1p3p8p9p2s4s6s8s5m",
    }
    g = RefGame(Rules.make("app"), make_wall(0, hands, live="8m1p"), dealer=0)
    assert ("baoting", None) in g.legal()
    play(g, [[0, "baoting"]])
    assert g.baoting[0] == "hard"
    assert g.legal() == [("discard", kind("9m"))]
    play(g, [[0, "discard", "9m"]])
    while g.to_act() != 0:  # the others discard what they draw, nobody claims
        play(g, [idle_move(g)])
    assert g.legal() == [("discard", g.last_draw)]  # no discard choice, no kong, no 报听
