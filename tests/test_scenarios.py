"""Hand-built records, one per rule and switch of RULES.md, with results worked out by hand.

Each scenario chooses the hands, the live draws (``live``: W[13n+1], ...) and the replacement
draws (``back``: W[107], W[106], ...), lists the decisions in protocol order (RULES.md 3), and
states the result computed by hand from RULES.md, the arithmetic in comments. ``check`` replays
the record with the engine (``zhuoji_env.engine.records.replay``) and with the independent
reference (``tests/reference.py``) and compares both with the hand-worked result.

Conventions used throughout:
- ``J1``, ``J2``, ``J3`` are filler hands that are not ready (in each suit the kinds held are
  three or more ranks apart, so no runs: one more tile makes at most one triplet; four or five
  pairs, so no seven pairs either) and hold no ``1s``. With ``ready_required`` (guiyang, app)
  a seat that is not ready collects no chickens and no kongs, so only the winner's (and ready
  seats') chickens matter.
- The flip tile F is the tile the next live draw would take: the last code of ``live``.
- Unless stated, the dealer streak is 0 (so the +k term of 8.2 adds nothing).
"""

from __future__ import annotations

import numpy as np
import pytest
from reference import replay_record
from scenario_helpers import J1, J2, J3, check, pays, play_out, record, result

from zhuoji_env.engine import core
from zhuoji_env.engine.records import RecordError, compare, parse, replay


# =============================================================================== 11. examples
def test_example_a_plain_self_draw_with_flip():
    """RULES.md 11.A: plain 自摸 by the dealer (seat 2), flip 4p -> 5p chicken, a ready seat
    (0) with two 1s collects, a seat with a 5p that is not ready (1) does not."""
    hands = {
        2: "2m3m4m6m7m8m5p6p7p9p9p1s2s3s",  # 234m 678m 567p 99p 123s: plain, one 1s, one 5p
        0: "1m1m1m4m4m4m7p7p7p8p8p1s1s",  # ready (waits 8p / 1s), two 1s
        1: "5p9m5m1p3p6s9s4s2p8m6p8p7s",  # one 5p, not ready
        3: "2m3m6m8m9m2p3p4p6p4s5s7s8s",  # no chicken, not ready
    }
    rec = record(hands, [[2, "hu"]], dealer=2, live="4p")
    # hu: 平胡 1 + 自摸 1 = 2 from each of 0, 1, 3.
    # chickens: seat 2: 1s + 5p = 2 from each other seat; seat 0 (ready): 1s x2 = 2 from each.
    # deltas: s0 = -2 (hu) -2 (chicken to 2) +6 = 2; s1 = -2-2-2 = -6; s2 = 6+6-2 = 10; s3 = -6.
    ledger = [
        [0, 2, 2, "hu"], [1, 2, 2, "hu"], [3, 2, 2, "hu"],
        [0, 2, 2, "chicken"], [1, 2, 2, "chicken"], [3, 2, 2, "chicken"],
        [1, 0, 2, "chicken"], [2, 0, 2, "chicken"], [3, 0, 2, "chicken"],
    ]  # fmt: skip
    check(rec, result("zimo", [2], "4p", 2, 1, [2, -6, 10, -6], ledger))


def test_example_b_rerpao():
    """RULES.md 11.B: the dealer (seat 1) makes a timely angang 7m, draws 3p as replacement and
    discards it; seat 3 wins with a plain hand and no kong (the 热炮 is its passport)."""
    hands = {
        1: "7m7m7m7m2m3m4m5p6p7p2s3s4s9p",  # dealer with a dealt quad of 7m
        2: "1m5m9m2p6p8p3s6s9s5m9m8s2p",  # not ready
        3: "1p2p4m5m6m6s7s8s5s6s7s9s9s",  # plain, waits 3p, no kong of its own
        0: "1m2m3m4p8p4s5s8s2m6m8m4p5m",  # not ready, two 2m
    }
    actions = [[1, "angang", "7m"], [1, "discard", "3p"], [3, "hu"]]
    rec = record(hands, actions, dealer=1, live="1m", back="3p")
    # 3p: 123p 456m 678s 567s 99s, mixed: 平胡 1. 热炮 plus_one: hu 1 + rerpao 1 from seat 1.
    # The 闷豆 is void. Flip 1m -> 2m chicken. Seat 1 after the discard holds
    # 234m 567p 234s 9p + kong 7m: ready (9p), one 2m -> collects 1 from each other seat.
    # Seat 0 has two 2m but is not ready; seat 3 has no chicken.
    # deltas: s0 -1; s1 -2 +3 = 1; s2 -1; s3 +2 -1 = 1.
    ledger = [
        [1, 3, 1, "hu"], [1, 3, 1, "rerpao"],
        [0, 1, 1, "chicken"], [2, 1, 1, "chicken"], [3, 1, 1, "chicken"],
    ]  # fmt: skip
    check(rec, result("ron", [3], "1m", 3, 0, [-1, 1, -1, 1], ledger))


def test_example_c_qianggang():
    """RULES.md 11.C: seat 0 adds the 4th 6s to its pong; seat 2 robs it with 清一色 (10 + 1 as
    self-drawn); seat 0 alone pays 3 x 11 = 33; the kong never completes."""
    hands = {
        3: "6s1m5m9m1p5p9p3m7m2p8p4p6p7s",  # dealer, discards 6s
        0: "6s6s1p2p3p4m5m6m7p8p9p2m3m",  # pongs 6s, later adds the drawn 4th
        1: "1m2m3m4p5p6p7m8m9m5s6p7p2p",
        2: "2s3s4s7s8s9s2s3s4s4s5s9s9s",  # bamboo flush, waits 6s (and 3s)
    }
    actions = [
        [3, "discard", "6s"],
        [0, "pong"],
        [2, "pass"],  # seat 2 passes its win on 6s: locked until its next draw
        [0, "discard", "2m"],
        [1, "discard", "9m"],
        [2, "discard", "1m"],  # seat 2's draw cleared its lock
        [3, "discard", "3m"],
        [0, "bugang", "6s"],
        [2, "hu"],
    ]
    rec = record(hands, actions, dealer=3, live="9m1m3m6s" + "7p")
    # seat 2 + 6s: 234s 234s 456s 789s 99s, flush 平胡 = 10, + 1 (counts as self-drawn) = 11;
    # pay_for_all: seat 0 pays 3 x 11 = 33.
    # Flip 7p -> 8p chicken. Seat 0 (robbed; judged without the robbed 6s: 123p 456m 789p 3m +
    # pong 6s) is ready on 3m and holds one 8p: collects 1 from each. Seat 2 has no chicken.
    # deltas: s0 = -33 + 3 = -30; s1 -1; s2 = 33 - 1 = 32; s3 -1.
    ledger = [[0, 2, 33, "hu"], [1, 0, 1, "chicken"], [2, 0, 1, "chicken"], [3, 0, 1, "chicken"]]
    check(rec, result("qianggang", [2], "7p", 2, 0, [-30, -1, 32, -1], ledger))


D_HANDS = {
    0: "1m1m1m2m2m2m3p3p3p5p5p7p7p9m",  # dealer: after 9m goes, 大对子 wait on 5p / 7p
    1: "5p5p7p7p1s1s4s4s1m3m9m2p6s",  # not ready
    2: "2s3s4m5m6m7m8m9m2p3p4p9s9s",  # plain wait on 1s / 4s
    3: "1s1s4s4s4m8m1p2p6p8p3s7s8s",  # not ready
}


def test_example_d_exhaustive_draw_chajiao():
    """RULES.md 11.D: 黄庄; seats 0 (大对子, 5) and 2 (平胡, 1) are ready, seats 1 and 3 are
    not and pay each of them; no kongs or chickens; the dealer deals again (draw_dealer stay).
    Every seat discards what it draws, so the hands stay as dealt."""
    rec = play_out(record(D_HANDS, []))
    # chajiao: 1->0 5, 3->0 5, 1->2 1, 3->2 1. deltas: +10, -6, +2, -6.
    ledger = [[1, 0, 5, "chajiao"], [3, 0, 5, "chajiao"], [1, 2, 1, "chajiao"],
              [3, 2, 1, "chajiao"]]  # fmt: skip
    check(rec, result("draw", [], None, 0, 0, [10, -6, 2, -6], ledger))


# =============================================================================== 5.3 patterns
def test_pattern_pinghu_zimo():
    """平胡 (guiyang 1) self-drawn by the dealer on its 14 dealt tiles: 1 + 自摸 1 = 2."""
    hands = {0: "1m2m3m7m8m9m4p5p6p7s8s9s5s5s", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], live="4s")
    # hu 2 from each; flip 4s -> 5s chicken: the dealer holds 5s5s = 2 from each.
    # deltas: s0 = 3 x (2 + 2) = 12, others -4. The dealer wins: streak 0 -> 1.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=2)
    check(rec, result("zimo", [0], "4s", 0, 1, [12, -4, -4, -4], ledger))


def test_pattern_daduizi_ron():
    """大对子 (5) on a discard: not plain, so no passport is needed."""
    hands = {0: J2 + "6s", 1: J1, 2: "7m7m7m2p2p2p7s7s7s9p9p6s6s", 3: J3}
    rec = record(hands, [[0, "discard", "6s"], [2, "hu"]], live="6m")
    # seat 2 + 6s: 777m 222p 777s 666s 99p = 大对子 5, paid by the discarder.
    # flip 6m -> 7m chicken: seat 2 holds 7m x3 = 3 from each other seat.
    # deltas: s0 = -5 - 3 = -8; s1 -3; s2 = 5 + 9 = 14; s3 -3.
    ledger = [[0, 2, 5, "hu"], [0, 2, 3, "chicken"], [1, 2, 3, "chicken"], [3, 2, 3, "chicken"]]
    check(rec, result("ron", [2], "6m", 2, 0, [-8, -3, 14, -3], ledger))


def test_pattern_qidui_zimo():
    """七对 (10) self-drawn: 10 + 1 = 11."""
    hands = {0: "7m7m8m8m7p7p8p8p2s2s3s3s5s5s", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], live="1s")
    # seven pairs, no four alike, no standard reading: 10 + 自摸 1 = 11 from each.
    # flip 1s -> 2s chicken: 2s x2 = 2 from each. deltas: s0 = 3 x 13 = 39, others -13.
    ledger = pays((1, 2, 3), 0, hu=11, chicken=2)
    check(rec, result("zimo", [0], "1s", 0, 1, [39, -13, -13, -13], ledger))


def test_pattern_longqidui_ron():
    """龙七对 (20): seven pairs with four 1s (two pairs), won on a discard."""
    hands = {0: J1 + "4m", 1: "1s1s1s1s3s3s8m8m7p7p9p9p4m", 2: J2, 3: J3}
    rec = record(hands, [[0, "discard", "4m"], [1, "hu"]], live="5s")
    # seat 1 + 4m: 1s1s1s1s 3s3s 8m8m 7p7p 9p9p 4m4m = 龙七对 20 (mixed suits).
    # flip 5s -> 6s (seat 1 has none); its four 1s = 4 chickens from each other seat.
    # deltas: s0 = -20 - 4 = -24; s1 = 20 + 12 = 32; s2 -4; s3 -4.
    ledger = [[0, 1, 20, "hu"], [0, 1, 4, "chicken"], [2, 1, 4, "chicken"], [3, 1, 4, "chicken"]]
    check(rec, result("ron", [1], "5s", 1, 0, [-24, 32, -4, -4], ledger))


def test_pattern_qingyise_ron():
    """清一色 (flush 平胡, 10) on a discard: a flush hand is not plain, no passport needed."""
    hands = {0: J3 + "4p", 1: J1, 2: J2, 3: "1p2p3p4p5p6p7p8p9p2p3p9p9p"}
    rec = record(hands, [[0, "discard", "4p"], [3, "hu"]], live="5m")
    # seat 3 + 4p: 123p 456p 789p 234p 99p = 10 + bonus 0 = 10.
    # flip 5m -> 6m: seat 3 has none, no 1s: no chickens. deltas: -10, 0, 0, +10.
    check(rec, result("ron", [3], "5m", 3, 0, [-10, 0, 0, 10], [[0, 3, 10, "hu"]]))


def test_pattern_qingdadui_zimo():
    """清大对 (10 + 5 = 15) self-drawn: 15 + 1 = 16."""
    hands = {0: "2s2s2s3s3s3s5s5s5s6s6s6s8s8s", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], live="7s")
    # 222s 333s 555s 666s 88s: flush, all triplets: 15 (> flush 平胡 10) + 1 = 16 each.
    # flip 7s -> 8s chicken: 8s x2 = 2 each. deltas: s0 = 3 x 18 = 54, others -18.
    ledger = pays((1, 2, 3), 0, hu=16, chicken=2)
    check(rec, result("zimo", [0], "7s", 0, 1, [54, -18, -18, -18], ledger))


def test_pattern_qingqidui_ron_beats_flush_pinghu():
    """清七对 (10 + 10 = 20): the hand also reads as a flush 平胡 (123m 123m 567m 567m 99m,
    10); the value is the largest reading."""
    hands = {0: J2 + "7m", 1: J1, 2: "1m1m2m2m3m3m5m5m6m6m9m9m7m", 3: J3}
    rec = record(hands, [[0, "discard", "7m"], [2, "hu"]], live="8m")
    # 20 from the discarder. flip 8m -> 9m chicken: seat 2 holds 9m x2 = 2 from each.
    # deltas: s0 = -20 - 2 = -22; s1 -2; s2 = 20 + 6 = 26; s3 -2 (J3's 9m9m: not ready).
    ledger = [[0, 2, 20, "hu"], [0, 2, 2, "chicken"], [1, 2, 2, "chicken"], [3, 2, 2, "chicken"]]
    check(rec, result("ron", [2], "8m", 2, 0, [-22, -2, 26, -2], ledger))


def test_pattern_qinglongbei_zimo():
    """青龙背 (10 + 20 = 30) self-drawn: bamboo seven pairs with four 1s; 30 + 1 = 31."""
    hands = {0: "1s1s1s1s2s2s3s3s5s5s6s6s8s8s", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], live="3p")
    # 31 from each; flip 3p -> 4p (none held); four 1s = 4 chickens from each.
    # deltas: s0 = 3 x 35 = 105, others -35.
    ledger = pays((1, 2, 3), 0, hu=31, chicken=4)
    check(rec, result("zimo", [0], "3p", 0, 1, [105, -35, -35, -35], ledger))


def test_pattern_classic_daduizi_zimo_fan_units():
    """classic (番): 大对子 30, 自摸 +0; chickens 10 each, hand scope, and every seat with
    chickens collects (no ready_required). A streak of 3 adds nothing in classic (switch off)
    but still grows: next_streak 4."""
    hands = {0: "7m7m7m2p2p2p7s7s7s9p9p9p4s4s", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], preset="classic", live="3s", streak=3)
    # hu 30 from each. flip 3s -> 4s chicken: dealer 4s x2 = 20 from each; seat 3 (J3, not
    # ready, classic collects anyway) one 4s = 10 from each.
    # deltas: s0 = 90 + 60 - 10 = 140; s1 = -30 - 20 - 10 = -60; s2 = -60; s3 = -30-20+30 = -20.
    ledger = pays((1, 2, 3), 0, hu=30, chicken=20)
    ledger += pays((0, 1, 2), 3, chicken=10)
    check(rec, result("zimo", [0], "3s", 0, 4, [140, -60, -60, -20], ledger))


def test_pattern_classic_qingqidui_ron_fan_units():
    """classic 清七对 = 50 + 40 = 90 on a discard; a seat that is not ready collects chickens."""
    hands = {0: J2 + "7m", 1: J1, 2: "1m1m2m2m3m3m5m5m6m6m9m9m7m", 3: J3}
    rec = record(hands, [[0, "discard", "7m"], [2, "hu"]], preset="classic", live="8m")
    # hu 90. flip 8m -> 9m: seat 2 9m x2 = 20 from each; seat 3 (J3) 9m x2 = 20 from each.
    # deltas: s0 = -90 - 20 - 20 = -130; s1 = -40; s2 = 90 + 60 - 20 = 130; s3 = 60 - 20 = 40.
    ledger = [[0, 2, 90, "hu"]] + pays((0, 1, 3), 2, chicken=20)
    ledger += pays((0, 1, 2), 3, chicken=20)
    check(rec, result("ron", [2], "8m", 2, 0, [-130, -40, 130, 40], ledger))


def test_pattern_app_dandiao():
    """app 单吊 (10): seat 1 pongs four times and wins its single 4s on a discard; as a
    大对子 the hand would be worth 5. Chickens: app scope counts meld tiles."""
    hands = {0: J1 + "7m", 1: "7m7m2p2p7p7p6s6s4s8m9p2s8s", 2: J2, 3: J3}
    actions = [
        [0, "discard", "7m"], [1, "pong"], [1, "discard", "8m"],
        [2, "discard", "2p"], [1, "pong"], [1, "discard", "9p"],
        [2, "discard", "7p"], [1, "pong"], [1, "discard", "2s"],
        [2, "discard", "6s"], [1, "pong"], [1, "discard", "8s"],
        [2, "discard", "4s"], [1, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, preset="app", live="2p7p6s4s" + "5s")
    # seat 1: pongs 7m 2p 7p 6s + 4s4s: 单吊 10 (mixed suits), paid by seat 2.
    # flip 5s -> 6s: the pong of 6s = 3 chickens from each. Nobody else is ready; no 1s
    # anywhere, so no 包鸡. deltas: s0 -3; s1 = 10 + 9 = 19; s2 = -10 - 3 = -13; s3 -3.
    ledger = [[2, 1, 10, "hu"], [0, 1, 3, "chicken"], [2, 1, 3, "chicken"], [3, 1, 3, "chicken"]]
    check(rec, result("ron", [1], "5s", 1, 0, [-3, 19, -13, -3], ledger))


def test_pattern_app_daduizi_zimo_no_plain_extra():
    """app 自摸 extra is +1 on a plain hand only (一扣二): a 大对子 self-drawn is worth 5."""
    hands = {0: "7m7m7m2p2p2p7s7s7s9p9p9p4s4s", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], preset="app", live="3s")
    # hu 5 from each; flip 3s -> 4s: dealer 4s x2 = 2 chickens from each.
    # deltas: s0 = 3 x 7 = 21, others -7.
    ledger = pays((1, 2, 3), 0, hu=5, chicken=2)
    check(rec, result("zimo", [0], "3s", 0, 1, [21, -7, -7, -7], ledger))


# =============================================================================== 4. kongs
# Seat 1 below holds 2p2p2p 234m 678p 78s 9m9m (or close to it): with its kong of 2p it
# wins 234m 678p 678s 99m on 6s (or 9s), a mixed 平胡. 2p is in no filler hand.
K_HAND = "2p2p2p2m3m4m6p7p8p7s8s9m9m"


def test_kong_mendou_timely_and_gangkai():
    """闷豆 (angang of the tile just drawn, timely): each other seat pays 2; the seat then wins
    on its replacement draw (杠上开花 +1)."""
    hands = {0: J1 + "7s", 1: "2p2p2p3m4m5m6s7s8s4p5p9s9s", 2: J2, 3: J3}
    actions = [[0, "discard", "7s"], [1, "angang", "2p"], [1, "hu"]]
    rec = record(hands, actions, live="2p" + "2m", back="6p")
    # seat 1 draws 2p, angang, draws 6p: 345m 678s 456p 99s + kong 2p, mixed 平胡.
    # hu = 1 + 自摸 1 + 杠上开花 1 = 3 from each; dou_an 2 from each (winner: ready).
    # flip 2m -> 3m chicken: seat 1 holds one 3m = 1 from each.
    # deltas: s1 = 3 x (3 + 2 + 1) = 18, others -6.
    ledger = pays((0, 2, 3), 1, hu=3, dou_an=2, chicken=1)
    check(rec, result("zimo", [1], "2m", 1, 0, [-6, 18, -6, -6], ledger))


def test_kong_zhuanwandou_timely():
    """转弯豆: seat 1 pongs 2p, later draws the 4th 2p and adds it at once (timely): each other
    seat pays 3; it wins on the replacement (杠上开花)."""
    hands = {0: J1 + "2p", 1: "2p2p2m3m4m6p7p8p7s8s9m9m2s", 2: J2, 3: J3}
    actions = [
        [0, "discard", "2p"], [1, "pong"], [1, "discard", "2s"],
        [2, "discard", "8m"], [3, "discard", "9p"], [0, "discard", "7m"],
        [1, "bugang", "2p"], [1, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, live="8m9p7m2p" + "1m", back="6s")
    # hu 1 + 1 + 1 = 3 from each; dou_bu 3 from each; flip 1m -> 2m: one 2m = 1 from each.
    # deltas: s1 = 3 x 7 = 21, others -7.
    ledger = pays((0, 2, 3), 1, hu=3, dou_bu=3, chicken=1)
    check(rec, result("zimo", [1], "1m", 1, 0, [-7, 21, -7, -7], ledger))


def test_kong_diandou():
    """点豆 (kong on a discard): the feeder alone pays 1; the replacement wins (杠上开花)."""
    hands = {0: J1 + "2p", 1: K_HAND, 2: J2, 3: J3}
    rec = record(hands, [[0, "discard", "2p"], [1, "kong"], [1, "hu"]], live="1m", back="6s")
    # hu 3 from each; dou_ming 1 from seat 0; flip 1m -> 2m: 1 chicken from each.
    # deltas: s0 = -3 - 1 - 1 = -5; s1 = 9 + 1 + 3 = 13; s2 = -4; s3 = -4.
    ledger = pays((0, 2, 3), 1, hu=3, chicken=1)
    ledger += [[0, 1, 1, "dou_ming"]]
    check(rec, result("zimo", [1], "1m", 1, 0, [-5, 13, -4, -4], ledger))


def test_kong_hanbaodou_late_angang():
    """憨包豆: seat 1 draws the 4th 2p but discards something else; on its next turn (after
    drawing 9m) it makes the angang: late, pays nothing, but still draws a replacement (and
    杠上开花 still applies)."""
    hands = {0: J1 + "7m", 1: "2p2p2p2m3m4m6p7p8p7s8s9m8m", 2: J2, 3: J3}
    actions = [
        [0, "discard", "7m"], [1, "discard", "8m"],  # seat 1 drew 2p and keeps it
        [2, "discard", "9p"], [3, "discard", "2s"], [0, "discard", "3s"],
        [1, "angang", "2p"], [1, "hu"],  # drew 9m: 2p is not its latest draw
    ]  # fmt: skip
    rec = record(hands, actions, live="2p9p2s3s9m" + "1m", back="6s")
    # hu 3 from each; no dou; flip 1m -> 2m: 1 chicken from each. deltas: s1 +12, others -4.
    ledger = pays((0, 2, 3), 1, hu=3, chicken=1)
    check(rec, result("zimo", [1], "1m", 1, 0, [-4, 12, -4, -4], ledger))


def test_kong_hanbaodou_late_bugang_in_pong_turn():
    """憨包豆: seat 1 holds three 2p, pongs the dealer's 2p and adds its third at once: the turn
    began with a pong (no draw), so the 转弯豆 is late and pays nothing."""
    hands = {0: J1 + "2p", 1: K_HAND, 2: J2, 3: J3}
    actions = [[0, "discard", "2p"], [1, "pong"], [1, "bugang", "2p"], [1, "hu"]]
    rec = record(hands, actions, live="1m", back="6s")
    # hu 3 (杠上开花 on the replacement) from each; no dou; 1 chicken (2m) from each.
    ledger = pays((0, 2, 3), 1, hu=3, chicken=1)
    check(rec, result("zimo", [1], "1m", 1, 0, [-4, 12, -4, -4], ledger))


def test_kong_dealt_quad_non_dealer_is_timely():
    """Dealt quad: seat 1 was dealt four 2p, draws 9m and makes the angang before its first
    discard: not late (the exception), each other seat pays 2."""
    hands = {0: J1 + "7m", 1: "2p2p2p2p2m3m4m6p7p8p7s8s9m", 2: J2, 3: J3}
    actions = [[0, "discard", "7m"], [1, "angang", "2p"], [1, "hu"]]
    rec = record(hands, actions, live="9m" + "1m", back="6s")
    # hu 3 + dou_an 2 + chicken 1 (2m) = 6 from each. deltas: s1 +18, others -6.
    ledger = pays((0, 2, 3), 1, hu=3, dou_an=2, chicken=1)
    check(rec, result("zimo", [1], "1m", 1, 0, [-6, 18, -6, -6], ledger))


def test_kong_dealt_quad_dealer_is_timely():
    """Dealt quad of the dealer: its 14th tile (9m) is its 'draw', the quad is 2p; the angang
    before its first discard is still not late."""
    hands = {0: "2p2p2p2p2m3m4m6p7p8p7s8s9m9m", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "angang", "2p"], [0, "hu"]], live="1m", back="6s")
    # hu 3 + dou_an 2 + chicken 1 = 6 from each; the dealer wins: streak 0 -> 1.
    ledger = pays((1, 2, 3), 0, hu=3, dou_an=2, chicken=1)
    check(rec, result("zimo", [0], "1m", 0, 1, [18, -6, -6, -6], ledger))


KONG_NOT_READY_HANDS = {
    0: "2m3m4m6p7p8p6s7s8s9m9m4s5s8m",  # dealer: after 8m goes, plain wait 3s / 6s
    1: "2p2p2p1m1m4m4m7m5p5p3s6s9s",  # angang 2p, never ready
    2: J2,
    3: J3,
}
KONG_NOT_READY_ACTIONS = [
    [0, "discard", "8m"],
    [1, "angang", "2p"],  # drew 2p: timely
    [1, "discard", "9p"],  # its replacement
    [2, "discard", "2s"],
    [3, "discard", "7m"],
    [0, "hu"],  # drew 3s
]


def test_kong_owner_not_ready_collects_nothing():
    """ready_required (双杀, guiyang): seat 1's timely 闷豆 pays nothing because seat 1 is not
    ready when the hand ends."""
    rec = record(KONG_NOT_READY_HANDS, KONG_NOT_READY_ACTIONS, live="2p2s7m3s" + "1m", back="9p")
    # dealer 234m 678p 678s 345s 99m: hu 2 from each; flip 1m -> 2m: dealer 1 chicken.
    # seat 2 (J2) holds 2m2m but is not ready: collects nothing. deltas: +9, -3, -3, -3.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=1)
    check(rec, result("zimo", [0], "1m", 0, 1, [9, -3, -3, -3], ledger))


def test_kong_and_chickens_without_ready_required():
    """ready_required off: the same hand, now seat 1's 闷豆 collects 2 from each other seat and
    seat 2 collects its two 2m chickens though neither is ready."""
    rec = record(
        KONG_NOT_READY_HANDS,
        KONG_NOT_READY_ACTIONS,
        overrides={"ready_required": False},
        live="2p2s7m3s" + "1m",
        back="9p",
    )
    # hu 2 and chicken 1 to the dealer from each; dou_an 2 to seat 1 from 0, 2, 3; chicken 2
    # to seat 2 from 0, 1, 3 (no other seat holds 2m or 1s; no chicken lies in a river).
    # s0 = 6 + 3 - 2 - 2 = 5; s1 = -2 - 1 + 6 - 2 = 1; s2 = -2 - 1 - 2 + 6 = 1;
    # s3 = -2 - 1 - 2 - 2 = -7.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=1)
    ledger += pays((0, 2, 3), 1, dou_an=2)
    ledger += pays((0, 1, 3), 2, chicken=2)
    check(rec, result("zimo", [0], "1m", 0, 1, [5, 1, 1, -7], ledger))


def test_kong_in_pong_turn_before_first_discard_is_timely():
    """The dealt-quad exception also covers a turn that began with a pong: seat 1 (dealt four
    2p) pongs the dealer's 5s as its first action and makes the angang before any discard."""
    hands = {0: J1 + "5s", 1: "2p2p2p2p5s5s2m3m4m6p7p8p9m", 2: J2, 3: J3}
    actions = [[0, "discard", "5s"], [1, "pong"], [1, "angang", "2p"], [1, "hu"]]
    rec = record(hands, actions, live="1m", back="9m")
    # replacement 9m: pong 5s, kong 2p, 234m 678p 99m: 平胡 1 + 1 + 杠上开花 1 = 3; dou_an 2
    # (timely); flip 1m -> 2m: 1. Each pays 6: -6, 18, -6, -6.
    ledger = pays((0, 2, 3), 1, hu=3, dou_an=2, chicken=1)
    check(rec, result("zimo", [1], "1m", 1, 0, [-6, 18, -6, -6], ledger))


# =============================================================================== 5.3 passport
def test_passport_plain_ron_with_exposed_kong():
    """A plain hand may win on an ordinary discard when its owner has a kong (here a 点豆)."""
    hands = {0: J1 + "2p", 1: K_HAND, 2: J2, 3: J3}
    actions = [
        [0, "discard", "2p"], [1, "kong"], [1, "discard", "2s"],  # replacement 2s
        [2, "discard", "9p"], [3, "discard", "6s"], [1, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, live="9p6s" + "1m", back="2s")
    # hu 1 (plain, ron) from seat 3; dou_ming 1 from seat 0; flip 1m -> 2m: 1 from each.
    # deltas: s0 = -1 - 1 = -2; s1 = 1 + 1 + 3 = 5; s2 = -1; s3 = -1 - 1 = -2.
    ledger = [[3, 1, 1, "hu"], [0, 1, 1, "dou_ming"]]
    ledger += pays((0, 2, 3), 1, chicken=1)
    check(rec, result("ron", [1], "1m", 1, 0, [-2, 5, -1, -2], ledger))


def test_passport_plain_ron_with_late_kong():
    """A late kong (憨包豆) pays nothing but is still a passport."""
    hands = {0: J1 + "2p", 1: K_HAND, 2: J2, 3: J3}
    actions = [
        [0, "discard", "2p"], [1, "pong"], [1, "bugang", "2p"],  # late: the turn began with a pong
        [1, "discard", "2s"], [2, "discard", "9p"], [3, "discard", "6s"], [1, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, live="9p6s" + "1m", back="2s")
    # hu 1 from seat 3; no dou; 1 chicken (2m) from each. s1 = 1 + 3 = 4; s3 = -2.
    ledger = [[3, 1, 1, "hu"]] + pays((0, 2, 3), 1, chicken=1)
    check(rec, result("ron", [1], "1m", 1, 0, [-1, 4, -1, -2], ledger))


def test_passport_refused_plain_win():
    """A plain hand without a passport may not win on a discard: with no other claim the seat
    is not even asked (the next seat draws and is to act), and when asked for a pong ``hu`` is
    not among its options. Replay raises, naming the action index."""
    # seat 2 (234m 678p 345s 99m 78s) would win a 平胡 on the dealer's 6s
    hands = {0: J1 + "6s", 1: J2, 2: "3s4s5s2m3m4m6p7p8p7s8s9m9m", 3: J3}
    rec = record(hands, [[0, "discard", "6s"], [2, "hu"]], live="1m")
    with pytest.raises(
        RecordError,
        match=r"^action 1: seat 2 tried hu, but seat 1 is to act \(legal for it: \['discard",
    ):
        replay(rec)
    with pytest.raises(
        ValueError,
        match=r"action 1 \[2, 'hu'\]: seat 2 tried 'hu', but seat 1 is to act with legal",
    ):
        replay_record(rec)
    # a shanpon wait 7s / 9m holding a pair of 7s: asked (pong), but not offered hu
    hands = {0: J1 + "7s", 1: "2m3m4m6p7p8p4s5s6s9m9m7s7s", 2: J2, 3: J3}
    rec = record(hands, [[0, "discard", "7s"], [1, "hu"]], live="1m")
    with pytest.raises(
        RecordError,
        match=r"^action 1: seat 1 tried hu, which is illegal here; legal: \['pong', 'pass'\]$",
    ):
        replay(rec)
    with pytest.raises(
        ValueError,
        match=r"action 1 \[1, 'hu'\]: seat 1 tried 'hu', but seat 1 is to act with legal",
    ):
        replay_record(rec)
    # ... while passing is accepted there (the record then stops early, after 2 actions)
    rec = record(hands, [[0, "discard", "7s"], [1, "pass"]], live="1m")
    with pytest.raises(
        RecordError,
        match=r"^action 2: the record ends here but the hand is not over: seat 1 is to act",
    ):
        replay(rec)
    with pytest.raises(ValueError, match="action 2: the record ends before the hand does"):
        replay_record(rec)


def test_passport_plain_rob():
    """Robbing a kong needs no passport: seat 2 (plain, no kong) was not offered the dealer's
    2p, but robs seat 1's 转弯豆 of 2p; the win counts as self-drawn and seat 1 pays 3x."""
    hands = {0: J1 + "2p", 1: "2p2p2m3m4m6p7p8p7s8s9m9m2s",
             2: "3p4p5m6m7m3s4s5s6m7m8m9s9s", 3: J3}  # fmt: skip
    actions = [
        [0, "discard", "2p"], [1, "pong"], [1, "discard", "2s"],
        [2, "discard", "9p"], [3, "discard", "8s"], [0, "discard", "8m"],
        [1, "bugang", "2p"], [2, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, live="9p8s8m2p" + "1m")
    # seat 2 + 2p: 234p 567m 345s 678m 99s, plain: 1 + 1 (self-drawn) = 2; seat 1 pays 3 x 2.
    # flip 1m -> 2m: seat 1 (ready on 6s / 9s with its pong 2p) holds one 2m: 1 from each.
    # deltas: s0 -1; s1 = -6 + 3 = -3; s2 = 6 - 1 = 5; s3 -1.
    ledger = [[1, 2, 6, "hu"]] + pays((0, 2, 3), 1, chicken=1)
    check(rec, result("qianggang", [2], "1m", 2, 0, [-1, -3, 5, -1], ledger))


# =============================================================================== 3.4 报听 (app)
BT_DEALER = "2m3m4m6p7p8p3s4s5s9m9m7s8s8m"  # after 8m goes: plain wait on 6s / 9s


def test_baoting_hard_dealer_wins_on_discard():
    """硬报 (the dealer declares): its plain hand may win on an ordinary discard (报听 is a
    passport) and the hu line carries +20."""
    hands = {0: BT_DEALER, 1: J1, 2: J2, 3: J3}
    actions = [[0, "baoting"], [0, "discard", "8m"], [1, "discard", "6s"], [0, "hu"]]
    rec = record(hands, actions, preset="app", live="6s" + "1m")
    # hu: 平胡 1 + 硬报 20 = 21 from seat 1 (no self-draw). flip 1m -> 2m: the dealer holds one
    # 2m = 1 from each. No 1s anywhere: no 包鸡. deltas: s0 = 21 + 3 = 24; s1 = -22; -1; -1.
    ledger = [[1, 0, 21, "hu"]] + pays((1, 2, 3), 0, chicken=1)
    check(rec, result("ron", [0], "1m", 0, 1, [24, -22, -1, -1], ledger))


def test_baoting_soft_self_draw():
    """软报: seat 1's 13 dealt tiles are not ready (234m 678p 345s 78s 9m 7m); after drawing 9m
    it declares and discards 7m; its hand is then frozen; it self-draws 9s: app value
    平胡 1 + 一扣二 1 + 软报 10 = 12."""
    hands = {0: J1 + "7m", 1: "2m3m4m6p7p8p3s4s5s9m7s8s7m", 2: J2, 3: J3}
    actions = [
        [0, "discard", "7m"], [1, "baoting"], [1, "discard", "7m"],
        [2, "discard", "9p"], [3, "discard", "2s"], [0, "discard", "3s"], [1, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, preset="app", live="9m9p2s3s9s" + "1m")
    # hu 12 from each; flip 1m -> 2m: one 2m = 1 from each. deltas: s1 = 39, others -13.
    ledger = pays((0, 2, 3), 1, hu=12, chicken=1)
    check(rec, result("zimo", [1], "1m", 1, 0, [-13, 39, -13, -13], ledger))


def test_baoting_shabao_discarder_declared():
    """杀报: the dealer declared (硬报) and its frozen discard of the drawn 3s is won on by seat
    2's plain hand (the discarder's 报听 is the passport); the dealer pays its own 20 on top."""
    hands = {0: BT_DEALER, 1: J1, 2: "5m6m7m1p2p3p6m7m8m2s4s8s8s", 3: J3}
    actions = [
        [0, "baoting"], [0, "discard", "8m"],
        [1, "discard", "9p"], [2, "discard", "7p"], [3, "discard", "5m"],
        [0, "discard", "3s"], [2, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, preset="app", live="9p7p5m3s" + "1m")
    # seat 2 + 3s: 567m 123p 678m 234s 88s = 平胡 1; + 杀报 20 = 21 in the hu line.
    # flip 1m -> 2m: the dealer (ready on 6s / 9s) holds one 2m: 1 from each.
    # deltas: s0 = -21 + 3 = -18; s1 -1; s2 = 21 - 1 = 20; s3 -1.
    ledger = [[0, 2, 21, "hu"]] + pays((1, 2, 3), 0, chicken=1)
    check(rec, result("ron", [2], "1m", 2, 0, [-18, -1, 20, -1], ledger))


def test_baoting_hard_non_dealer_dealt_ready():
    """硬报 for a non-dealer whose 13 dealt tiles were already ready (234m 678p 345s 99m 78s):
    it declares on its first turn and self-draws 9s later: 1 + 1 + 20 = 22 (app)."""
    hands = {0: J1 + "7m", 1: BT_DEALER[:-2], 2: J2, 3: J3}
    actions = [
        [0, "discard", "7m"], [1, "baoting"], [1, "discard", "8m"],  # drew 8m
        [2, "discard", "9p"], [3, "discard", "2s"], [0, "discard", "3s"], [1, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, preset="app", live="8m9p2s3s9s" + "1m")
    # hu 22 and chicken 1 (2m) from each: -23, 69, -23, -23.
    ledger = pays((0, 2, 3), 1, hu=22, chicken=1)
    check(rec, result("zimo", [1], "1m", 1, 0, [-23, 69, -23, -23], ledger))


def test_baoting_classic_units():
    """classic with baoting on: 硬报 is +200 (番 units); the declared dealer wins a plain hand
    on a discard (passport) for 10 + 200."""
    hands = {0: BT_DEALER, 1: J1, 2: J2, 3: J3}
    actions = [[0, "baoting"], [0, "discard", "8m"], [1, "discard", "6s"], [0, "hu"]]
    rec = record(hands, actions, preset="classic", overrides={"baoting": True},
                 live="6s" + "1m")  # fmt: skip
    # hu 210 from seat 1. Chickens (classic, 10 each, every holder collects): flip 1m -> 2m;
    # the dealer's one 2m = 10 from each; seat 2 (J2) 2m2m = 20 from each.
    # s0 = 210 + 30 - 20 = 220; s1 = -210 - 10 - 20 = -240; s2 = -10 + 60 = 50; s3 = -30.
    ledger = [[1, 0, 210, "hu"]] + pays((1, 2, 3), 0, chicken=10)
    ledger += pays((0, 1, 3), 2, chicken=20)
    check(rec, result("ron", [0], "1m", 0, 1, [220, -240, 50, -30], ledger))


# =============================================================================== 7.2 热炮, 抢杠
B_HANDS = {
    1: "7m7m7m7m2m3m4m5p6p7p2s3s4s9p",
    2: "1m5m9m2p6p8p3s6s9s5m9m8s2p",
    3: "1p2p4m5m6m6s7s8s5s6s7s9s9s",
    0: "1m2m3m4p8p4s5s8s2m6m8m4p5m",
}
B_ACTIONS = [[1, "angang", "7m"], [1, "discard", "3p"], [3, "hu"]]


def test_rerpao_transfer_classic():
    """热炮 transfer (classic): example B's hand; the discarder pays the hand value (10) plus
    what its void 闷豆 would have collected (20 x 3 = 60) as item rerpao."""
    rec = record(B_HANDS, B_ACTIONS, preset="classic", dealer=1, live="1m", back="3p")
    # hu 10, rerpao 60 from seat 1. Chickens (classic: 10 each, hand scope, every seat with
    # chickens collects): flip 1m -> 2m; seat 0 holds 2m x2 = 20 from each; seat 1 holds one
    # 2m = 10 from each; seats 2 and 3 hold none.
    # s0 = 60 - 10 = 50; s1 = -70 - 20 + 30 = -60; s2 = -20 - 10 = -30; s3 = 70 - 20 - 10 = 40.
    ledger = [[1, 3, 10, "hu"], [1, 3, 60, "rerpao"]]
    ledger += pays((1, 2, 3), 0, chicken=20)
    ledger += pays((0, 2, 3), 1, chicken=10)
    check(rec, result("ron", [3], "1m", 3, 0, [50, -60, -30, 40], ledger))


def test_rerpao_transfer_exposed_kong_classic():
    """热炮 transfer after a 点豆: seat 1 kongs the dealer's 2p, discards its replacement 3s,
    seat 3 wins (plain, passport 热炮); the 点豆 is void (the feeder pays nothing) and its 10
    goes to the winner as rerpao."""
    hands = {0: J1 + "2p", 1: K_HAND, 2: J2, 3: "3m4m5m6m7m8m4p5p6p4s5s7p7p"}
    actions = [[0, "discard", "2p"], [1, "kong"], [1, "discard", "3s"], [3, "hu"]]
    rec = record(hands, actions, preset="classic", live="9s", back="3s")
    # seat 3 + 3s: 345m 678m 456p 345s 77p = 平胡 10; rerpao 10 (点豆). Flip 9s -> 1s (golden):
    # nobody holds a 1s: no chickens. deltas: 0, -20, 0, +20.
    ledger = [[1, 3, 10, "hu"], [1, 3, 10, "rerpao"]]
    check(rec, result("ron", [3], "9s", 3, 0, [0, -20, 0, 20], ledger))


def test_rerpao_plus_one_burn_app():
    """热炮 plus_one_burn (app): example B's hand; value + 1, and the discarder is burned: its
    chickens (one 2m, and it is ready) collect nothing."""
    rec = record(B_HANDS, B_ACTIONS, preset="app", dealer=1, live="1m", back="3p")
    # hu 1 + rerpao 1. Seat 0 (two 2m) is not ready; seat 3 has no chicken; no 1s anywhere.
    check(rec, result("ron", [3], "1m", 3, 0, [0, -2, 0, 2],
                      [[1, 3, 1, "hu"], [1, 3, 1, "rerpao"]]))  # fmt: skip


C_HANDS = {
    3: "6s1m5m9m1p5p9p3m7m2p8p4p6p7s",
    0: "6s6s1p2p3p4m5m6m7p8p9p2m3m",
    1: "1m2m3m4p5p6p7m8m9m5s6p7p2p",
    2: "2s3s4s7s8s9s2s3s4s4s5s9s9s",
}
C_ACTIONS = [
    [3, "discard", "6s"], [0, "pong"], [2, "pass"], [0, "discard", "2m"],
    [1, "discard", "9m"], [2, "discard", "1m"], [3, "discard", "3m"],
    [0, "bugang", "6s"], [2, "hu"],
]  # fmt: skip


def test_qianggang_plus_nine_burn_app():
    """抢杠 plus_nine_burn (app): example C's hand; the robbed seat pays the value without a
    self-draw extra, + 9, and is burned (its ready 8p chicken collects nothing)."""
    rec = record(C_HANDS, C_ACTIONS, preset="app", dealer=3, live="9m1m3m6s" + "7p")
    # hu = 清一色 10 + 9 = 19. No 1s anywhere: no 包鸡.
    check(rec, result("qianggang", [2], "7p", 2, 0, [-19, 0, 19, 0], [[0, 2, 19, "hu"]]))


def test_qianggang_dealer_robbed_with_streak():
    """抢杠 pay_for_all (包三家) when the robbed seat is the dealer with streak 2: it pays what the
    three others would have paid on the self-drawn win, 3 x 2 + the streak term of its own
    payment (+2); the two other payers' payments carry none (RULES.md 7.2)."""
    hands = {0: "2p2p2m3m4m6p7p8p7s8s9m9m2s8m", 1: J1,
             2: "3p4p5m6m7m3s4s5s6m7m8m9s9s", 3: J3}  # fmt: skip
    actions = [
        [0, "discard", "8m"], [1, "discard", "2p"], [0, "pong"], [0, "discard", "2s"],
        [1, "discard", "9p"], [2, "discard", "8s"], [3, "discard", "9p"],
        [0, "bugang", "2p"], [2, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, live="2p9p8s9p2p" + "1m", streak=2)
    # seat 2 (plain, robbing: no passport needed) + 2p: 234p 567m 345s 678m 99s = 1 + 1 = 2;
    # the dealer pays 3 x 2 + 2 = 8. flip 1m -> 2m: the dealer (ready on 6s / 9s, pong 2p)
    # holds one 2m: 1 from each. s0 = -8 + 3 = -5; s1 -1; s2 = 8 - 1 = 7; s3 -1.
    ledger = [[0, 2, 8, "hu"]] + pays((1, 2, 3), 0, chicken=1)
    check(rec, result("qianggang", [2], "1m", 2, 0, [-5, -1, 7, -1], ledger))


ROBBER = "3p4p5m6m7m3s4s5s6m7m8m9s9s"  # plain, waits 2p / 5p, no kong


# The rob of a 2p 转弯豆 with the dealer as the robber or as a third seat (streak 2). Seat 1
# (ROB_PONGER, never ready) pongs the dealer's first discard 2p, discards 1m, later draws the
# last 2p and adds it to its pong; seat 0 (ROBBER: 234p 567m 345s 678m 99s with 2p, a plain 平胡)
# robs it. The other discards (9p, 2s, 8s, each just drawn) nobody can claim. Flip 5s -> 6s: no
# seat holds a 6s or a 1s, so no chickens; no kong stands (the robbed one is void).
ROB_PONGER = "1m1m4m4m7m5p5p8p8p2p2p9s9s"  # J1 with 2p2p for 3s6s
ROB_ACTIONS_AFTER_THE_PONG = [
    [1, "discard", "1m"], [2, "discard", "9p"], [3, "discard", "2s"], [0, "discard", "8s"],
    [1, "bugang", "2p"], [0, "hu"],
]  # fmt: skip
ROB_LIVE = "9p2s8s2p" + "5s"


def test_qianggang_dealer_robs_with_streak():
    """抢杠 pay_for_all (包三家) when the robber is the dealer with streak 2: each of the three
    other seats would have paid the hand value + 2 on its self-drawn win, so the robbed seat
    pays 3 x (2 + 2) (RULES.md 7.2: (n-1) x k when the winner is the dealer)."""
    hands = {0: ROBBER + "2p", 1: ROB_PONGER, 2: J2, 3: J3}  # the dealer's 14 tiles win; it
    actions = [[0, "discard", "2p"], [1, "pong"]] + ROB_ACTIONS_AFTER_THE_PONG  # declines
    rec = record(hands, actions, live=ROB_LIVE, streak=2)
    # hand value: 平胡 1 + 自摸 1 = 2. Seat 1 pays 3 x 2 + 3 x 2 = 12. The dealer wins: it deals
    # again with streak 3. deltas: +12, -12, 0, 0.
    check(rec, result("qianggang", [0], "5s", 0, 3, [12, -12, 0, 0], [[1, 0, 12, "hu"]]))


def test_qianggang_dealer_third_seat_with_streak():
    """抢杠 pay_for_all (包三家) when the dealer (seat 3, streak 2) is neither the robber nor the
    robbed seat: the dealer is one of the payers the robbed seat stands in for, so it pays
    3 x 2 + 2 (k once) -- RULES.md 7.2 (sample record guiyang-4 has this case)."""
    hands = {3: J3 + "2p", 0: ROBBER, 1: ROB_PONGER, 2: J2}
    actions = [[3, "discard", "2p"], [1, "pong"]] + ROB_ACTIONS_AFTER_THE_PONG
    rec = record(hands, actions, dealer=3, live=ROB_LIVE, streak=2)
    # hand value 2; seat 1 pays 3 x 2 + 2 = 8. The deal passes to the winner, streak 0.
    check(rec, result("qianggang", [0], "5s", 0, 0, [8, -8, 0, 0], [[1, 0, 8, "hu"]]))


def test_rerpao_two_winners_each_get_the_extra():
    """热炮 (plus_one) with two winners: each receives its hand value and its own +1."""
    hands = {
        1: "7m7m7m7m2m3m4m5p6p7p2s3s4s9p",  # dealer: angang 7m, discards the replacement 3p
        2: "4p5p1m2m3m6p7p8p2s3s4s8s8s",  # plain, waits 3p / 6p
        3: "1p2p4m5m6m6s7s8s5s6s7s9s9s",  # plain, waits 3p
        0: "1m1m4m8m8m1p4p4p8p8p2s5s5s",  # not ready
    }
    actions = [[1, "angang", "7m"], [1, "discard", "3p"], [2, "hu"], [3, "hu"]]
    rec = record(hands, actions, dealer=1, live="9s", back="3p")
    # 1 + rerpao 1 to each of 2 and 3. Flip 9s -> 1s (golden): no 1s anywhere.
    # Next dealer: the first winner counting from the dealer (seat 1): seat 2.
    ledger = [[1, w, 1, item] for w in (2, 3) for item in ("hu", "rerpao")]
    check(rec, result("ron", [2, 3], "9s", 2, 0, [0, -4, 2, 2], ledger))


BURN_HANDS = {
    0: J1 + "8m",
    1: "2p2p2p2p7s7s7s2m3m4m6p7p8p",  # dealt quad 2p, three 7s
    2: J2,
    3: "3m4m5m6m7m8m4p5p6p4s5s7p7p",  # plain, waits 3s / 6s
}


BURN_ACTIONS = [
    [0, "discard", "8m"],
    [1, "angang", "2p"], [1, "discard", "1p"],  # drew 9m; dealt-quad exception: timely
    [2, "discard", "9p"], [3, "discard", "1p"], [0, "discard", "2s"],
    [1, "angang", "7s"], [1, "discard", "3s"],  # drew 7s, replacement 3s
    [3, "hu"],
]  # fmt: skip


def test_rerpao_voids_only_the_kongs_of_that_turn():
    """热炮 plus_one voids only the kongs completed in the turn of the discard: seat 1's earlier
    闷豆 of 2p still collects (seat 1 is ready on 9m), its 闷豆 of 7s does not."""
    rec = record(BURN_HANDS, BURN_ACTIONS, live="9m9p1p2s7s" + "9s", back="1p3s")
    # hu 1 + rerpao 1 from seat 1; dou_an 2 from each of 0, 2, 3 to seat 1 (the 2p kong).
    # flip 9s -> 1s: no 1s anywhere. s0 = -2; s1 = -2 + 6 = 4; s2 = -2; s3 = 2 - 2 = 0.
    ledger = [[1, 3, 1, "hu"], [1, 3, 1, "rerpao"]] + pays((0, 2, 3), 1, dou_an=2)
    check(rec, result("ron", [3], "9s", 3, 0, [-2, 4, -2, 0], ledger))


def test_rerpao_burn_voids_all_kongs_of_the_burned_seat():
    """app 热炮 burns the discarder: even its earlier, valid 闷豆 collects nothing."""
    rec = record(BURN_HANDS, BURN_ACTIONS, preset="app", live="9m9p1p2s7s" + "9s", back="1p3s")
    check(rec, result("ron", [3], "9s", 3, 0, [0, -2, 0, 2],
                      [[1, 3, 1, "hu"], [1, 3, 1, "rerpao"]]))  # fmt: skip


@pytest.mark.parametrize(
    "preset, ledger",
    [
        # classic transfer: the void kong is late, worth 0: no rerpao line; hu 平胡 10
        ("classic", [[1, 3, 10, "hu"]]),
        # guiyang plus_one: hu 1 + rerpao 1
        ("guiyang", [[1, 3, 1, "hu"], [1, 3, 1, "rerpao"]]),
    ],
)
def test_rerpao_after_a_late_kong(preset, ledger):
    """热炮 after a late kong (the bugang in a pong turn): still a 热炮 (passport for seat 3's
    plain hand); under transfer a late kong transfers nothing. Flip 9s -> 1s: no 1s held."""
    hands = {0: J1 + "2p", 1: K_HAND, 2: J2, 3: "3m4m5m6m7m8m4p5p6p4s5s7p7p"}
    actions = [
        [0, "discard", "2p"], [1, "pong"], [1, "bugang", "2p"],
        [1, "discard", "3s"], [3, "hu"],  # the replacement 3s: 345m 678m 456p 345s 77p
    ]  # fmt: skip
    rec = record(hands, actions, preset=preset, live="9s", back="3s")
    total = sum(line[2] for line in ledger)
    check(rec, result("ron", [3], "9s", 3, 0, [0, -total, 0, total], ledger))


def test_angang_cannot_be_robbed():
    """3.3: an angang opens no rob window: seat 2 waits on 2p, yet after the dealer's 闷豆 of
    its dealt four 2p the dealer's next decision (hu on its replacement) follows at once."""
    hands = {0: "2p2p2p2p2m3m4m6p7p8p7s8s9m9m", 1: J1, 2: ROBBER, 3: J3}
    rec = record(hands, [[0, "angang", "2p"], [0, "hu"]], live="1m", back="6s")
    # hu 3 + dou_an 2 + chicken 1 (2m) from each; seat 2 is ready but holds no chicken.
    ledger = pays((1, 2, 3), 0, hu=3, dou_an=2, chicken=1)
    check(rec, result("zimo", [0], "1m", 0, 1, [18, -6, -6, -6], ledger))


def test_late_bugang_can_be_robbed():
    """4: a late bugang (in a pong turn) can still be robbed: seat 2 (plain) robs it."""
    hands = {0: J1 + "2p", 1: K_HAND, 2: ROBBER, 3: J3}
    actions = [[0, "discard", "2p"], [1, "pong"], [1, "bugang", "2p"], [2, "hu"]]
    rec = record(hands, actions, live="1m")
    # seat 2 + 2p: 234p 567m 345s 678m 99s = 1 + 1 (self-drawn) = 2; seat 1 pays 3 x 2 = 6.
    # flip 1m -> 2m: seat 1 (pong 2p; 234m 678p 78s 99m: ready) one 2m = 1 from each.
    # s0 = -1; s1 = -6 + 3 = -3; s2 = 6 - 1 = 5; s3 = -1.
    ledger = [[1, 2, 6, "hu"]] + pays((0, 2, 3), 1, chicken=1)
    check(rec, result("qianggang", [2], "1m", 2, 0, [-1, -3, 5, -1], ledger))


def test_two_robbers_each_paid_for_all():
    """Two seats rob one bugang (pay_for_all): the robbed seat pays each of them 3 x its own
    value; the next dealer is the first winner counting from the dealer."""
    hands = {
        0: J1 + "2p",
        1: "2p2p2m3m4m6p7p8p7s8s9m9m2s",
        2: ROBBER,  # plain, waits 2p / 5p
        3: "1p3p6p7p8p4s5s6s5m6m7m3m3m",  # plain, waits 2p
    }
    actions = [
        [0, "discard", "2p"], [1, "pong"], [1, "discard", "2s"],
        [2, "discard", "9p"], [3, "discard", "8s"], [0, "discard", "8m"],
        [1, "bugang", "2p"], [2, "hu"], [3, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, live="9p8s8m2p" + "1m")
    # each robber: 平胡 1 + 1 = 2, paid 3 x 2 = 6 by seat 1. flip 1m -> 2m: seat 1 (ready on
    # 6s / 9s) one 2m = 1 from each. s0 -1; s1 = -12 + 3 = -9; s2 = 6 - 1 = 5; s3 = 5.
    ledger = [[1, 2, 6, "hu"], [1, 3, 6, "hu"]] + pays((0, 2, 3), 1, chicken=1)
    check(rec, result("qianggang", [2, 3], "1m", 2, 0, [-1, -9, 5, 5], ledger))


def test_rerpao_transfer_uses_the_ruleset_kong_values():
    """热炮 transfer under guiyang kong values (override rerpao transfer): example B's void 闷豆
    would have collected 2 x 3 = 6, paid to the winner as rerpao."""
    rec = record(B_HANDS, B_ACTIONS, overrides={"rerpao": "transfer"}, dealer=1, live="1m",
                 back="3p")  # fmt: skip
    # hu 1 + rerpao 6 from seat 1; seat 1 (ready, one 2m) collects 1 from each.
    # s0 -1; s1 = -7 + 3 = -4; s2 -1; s3 = 7 - 1 = 6.
    ledger = [[1, 3, 1, "hu"], [1, 3, 6, "rerpao"]] + pays((0, 2, 3), 1, chicken=1)
    check(rec, result("ron", [3], "1m", 3, 0, [-1, -4, -1, 6], ledger))


@pytest.mark.parametrize(
    "overrides, ledger, deltas",
    [
        # 双杀 (guiyang's ready_required): seat 1 is not ready, so its void 闷豆 would have
        # collected nothing under 7.3: rerpao 0. Only hu 1 is paid (no ready seat holds 2m).
        ({"rerpao": "transfer"}, [[1, 3, 1, "hu"]], [0, -1, 0, 1]),
        # without ready_required the 闷豆 would have collected 2 x 3 = 6: rerpao 6. Every seat
        # with chickens collects: seat 0 two 2m (2 from each), seat 1 one 2m (1 from each).
        # s0 = 6 - 1 = 5; s1 = -1 - 6 - 2 + 3 = -6; s2 = -2 - 1 = -3; s3 = 7 - 2 - 1 = 4.
        (
            {"rerpao": "transfer", "ready_required": False},
            [[1, 3, 1, "hu"], [1, 3, 6, "rerpao"]]
            + pays((1, 2, 3), 0, chicken=2)
            + pays((0, 2, 3), 1, chicken=1),
            [5, -6, -3, 4],
        ),
    ],
    ids=["ready-required", "classic-collecting"],
)
def test_rerpao_transfer_discarder_not_ready(overrides, ledger, deltas):
    """热炮 transfer with a discarder that is not ready at the end (example B with 2s5s8s for
    seat 1's 2s3s4s): under ready_required the transfer is 0 (RULES.md 7.2)."""
    hands = {**B_HANDS, 1: "7m7m7m7m2m3m4m5p6p7p2s5s8s9p"}
    rec = record(hands, B_ACTIONS, overrides=overrides, dealer=1, live="1m", back="3p")
    # seat 3 + 3p: 123p 456m 678s 567s 99s, 平胡 1 (热炮 passport). Seat 1 after discarding 3p
    # holds 234m 567p 2s 5s 8s 9p + the void 闷豆 7m: not ready. Flip 1m -> 2m.
    check(rec, result("ron", [3], "1m", 3, 0, deltas, ledger))


# =============================================================================== 一炮多响
def test_two_winners_next_dealer_first_from_dealer():
    """一炮多响 with two winners on seat 2's 5s: seats 3 (七对) and 1 (大对子). The next dealer is
    the first winner counting from the dealer (seat 0): seat 1, not seat 3 (the first after
    the discarder). Each winner's hand includes the 5s for its chickens."""
    hands = {
        0: "3m3m9m9m4p4p7p7p8s8s6p3s9p5m",
        1: "7m7m7m8p8p8p7s7s7s9s9s5s5s",  # 大对子, waits 9s / 5s
        2: "1m1m4m4m7m2p2p5p5p9p3s6s2s",
        3: "2m2m3p3p6m6m4s4s8m8m1p1p5s",  # 七对, waits 5s
    }
    actions = [[0, "discard", "5m"], [1, "discard", "6p"], [2, "discard", "5s"],
               [3, "hu"], [1, "hu"]]  # fmt: skip
    rec = record(hands, actions, live="6p5s" + "4s")
    # seat 2 pays 5 to seat 1 and 10 to seat 3. Flip 4s -> 5s chicken: seat 1 holds 5s x3 (with
    # the won tile) = 3 from each; seat 3 holds 5s x2 = 2 from each.
    # s0 = -3 - 2 = -5; s1 = 5 + 9 - 2 = 12; s2 = -15 - 3 - 2 = -20; s3 = 10 + 6 - 3 = 13.
    ledger = [[2, 1, 5, "hu"], [2, 3, 10, "hu"]]
    ledger += pays((0, 2, 3), 1, chicken=3) + pays((0, 1, 2), 3, chicken=2)
    check(rec, result("ron", [1, 3], "4s", 1, 0, [-5, 12, -20, 13], ledger))


def test_three_winners_discarder_deals_streak_kept():
    """一炮多响 with three winners on the dealer's own discard (streak 1): the dealer (the
    discarder) deals again, its streak unchanged; each of its payments carries +1."""
    hands = {
        0: "1m1m4m4m9m9m6p6p3s3s5s7p2s5p",  # discards its 14th tile 5p
        1: "7m7m7m8m8m8m7s7s7s9s9s9s5p",  # 大对子 single wait 5p: 5
        2: "2m2m3m3m4s4s6s6s2s2s8s8s5p",  # 七对: 10
        3: "1p2p3p4p6p7p8p9p2p3p4p9p9p",  # 清一色 (waits 5p): 10
    }
    actions = [[0, "discard", "5p"], [1, "hu"], [2, "hu"], [3, "hu"]]
    rec = record(hands, actions, live="8s", streak=1)
    # dealer pays 5 + 1, 10 + 1, 10 + 1. Flip 8s -> 9s: seat 1 holds 9s x3 = 3 from each.
    # s0 = -28 - 3 = -31; s1 = 6 + 9 = 15; s2 = 11 - 3 = 8; s3 = 11 - 3 = 8.
    ledger = [[0, 1, 6, "hu"], [0, 2, 11, "hu"], [0, 3, 11, "hu"]]
    ledger += pays((0, 2, 3), 1, chicken=3)
    check(rec, result("ron", [1, 2, 3], "8s", 0, 1, [-31, 15, 8, 8], ledger))


def test_two_winners_including_the_dealer():
    """Two winners, one of them the dealer (streak 1): the dealer deals again (it is the first
    winner counting from itself) and its streak grows; its hu payment carries +1."""
    hands = {
        0: "2m2m3p3p6m6m4s4s8m8m1p1p5s5m",  # 七对, waits 5s (after discarding 5m)
        1: "1m1m4m4m7m2p2p5p5p8p3s6s9s",
        2: "7m7m7m8p8p8p7s7s7s9s9s5s5s",  # 大对子, waits 9s / 5s
        3: "3m3m6m9m9m1p4p4p7p2s2s8s8s",
    }
    actions = [[0, "discard", "5m"], [1, "discard", "5s"], [2, "hu"], [0, "hu"]]
    rec = record(hands, actions, live="5s" + "4s", streak=1)
    # seat 1 pays the dealer 10 + 1 = 11 and seat 2 5. Flip 4s -> 5s: the dealer 5s x2 = 2
    # from each; seat 2 5s x3 = 3 from each.
    # s0 = 11 + 6 - 3 = 14; s1 = -16 - 2 - 3 = -21; s2 = 5 + 9 - 2 = 12; s3 = -2 - 3 = -5.
    ledger = [[1, 0, 11, "hu"], [1, 2, 5, "hu"]]
    ledger += pays((1, 2, 3), 0, chicken=2) + pays((0, 1, 3), 2, chicken=3)
    check(rec, result("ron", [0, 2], "4s", 0, 2, [14, -21, 12, -5], ledger))


def test_hu_beats_an_earlier_pong_choice():
    """Response window: seat 1 (asked first) chooses pong, seat 2 (asked after it) chooses hu:
    the win takes precedence and the pong never happens."""
    hands = {
        0: J3 + "9p",
        1: "1m1m4m4m7m5p5p8p8p3s6s9p9p",  # pair of 9p, not ready
        2: "2m2m5m5m3p3p6p6p2s2s8s8s9p",  # 七对, waits 9p
        3: "1m4m7m7m2p2p5p8p2s5s5s9s9s",  # not ready
    }
    rec = record(hands, [[0, "discard", "9p"], [1, "pong"], [2, "hu"]], live="7s")
    # 七对 10 from the dealer; flip 7s -> 8s: seat 2's 8s8s = 2 from each.
    ledger = [[0, 2, 10, "hu"]] + pays((0, 1, 3), 2, chicken=2)
    check(rec, result("ron", [2], "7s", 2, 0, [-12, -2, 16, -2], ledger))


# =============================================================================== 7.5 黄庄查叫
def test_draw_chajiao_with_dealer_streak():
    """Example D with a dealer streak of 2: the 查叫 payments to the dealer carry +2; a draw
    keeps the deal and the streak (draw_dealer stay)."""
    rec = play_out(record(D_HANDS, [], streak=2))
    # 1->0: 5 + 2 = 7; 3->0: 7; 1->2: 1; 3->2: 1. deltas: +14, -8, +2, -8.
    ledger = [[1, 0, 7, "chajiao"], [3, 0, 7, "chajiao"], [1, 2, 1, "chajiao"],
              [3, 2, 1, "chajiao"]]  # fmt: skip
    check(rec, result("draw", [], None, 0, 2, [14, -8, 2, -8], ledger))


def test_draw_classic_dealer_ready_stays():
    """draw_dealer classic, two seats not ready and the dealer ready: the dealer deals again.
    classic 查叫 in 番: 大对子 30, 平胡 10."""
    rec = play_out(record(D_HANDS, [], preset="classic", streak=2))
    # 1->0 30, 3->0 30, 1->2 10, 3->2 10 (no streak term in classic): +60, -40, +20, -40.
    ledger = [[1, 0, 30, "chajiao"], [3, 0, 30, "chajiao"], [1, 2, 10, "chajiao"],
              [3, 2, 10, "chajiao"]]  # fmt: skip
    check(rec, result("draw", [], None, 0, 2, [60, -40, 20, -40], ledger))


DRAW_READY_2 = "2s3s4m5m6m7m8m9m2p3p4p9s9s"  # 平胡 wait 1s / 4s: classic 10
DRAW_READY_3 = "4s4s6s6s8s8s6p6p1p1p3m3m8p"  # 七对 wait 8p: classic 40
DRAW_NOT_READY_1 = "1m4m7m2p5p8p3s6s9s7s7s5s5s"  # m and p kinds isolated: not ready


def test_draw_classic_exactly_one_not_ready_deals():
    """draw_dealer classic: only seat 1 is not ready: it pays everybody and deals next."""
    hands = {0: "1m1m1m2m2m2m3p3p3p5p5p7p7p9m", 1: DRAW_NOT_READY_1, 2: DRAW_READY_2,
             3: DRAW_READY_3}  # fmt: skip
    rec = play_out(record(hands, [], preset="classic"))
    # seat 1 pays 0: 30 (大对子), 2: 10, 3: 40. deltas: +30, -80, +10, +40.
    ledger = [[1, 0, 30, "chajiao"], [1, 2, 10, "chajiao"], [1, 3, 40, "chajiao"]]
    check(rec, result("draw", [], None, 1, 0, [30, -80, 10, 40], ledger))


def test_draw_classic_dealer_not_ready_first_ready_after_dealer():
    """draw_dealer classic: seats 0 (the dealer) and 1 are not ready: the first ready seat
    after the dealer (seat 2) deals; the streak resets."""
    hands = {0: "1m1m1m2m2m2m3p3p3p5p7p9m5m9m", 1: DRAW_NOT_READY_1, 2: DRAW_READY_2,
             3: DRAW_READY_3}  # fmt: skip
    rec = play_out(record(hands, [], preset="classic", streak=1))
    # seats 0 and 1 each pay seat 2 10 and seat 3 40: -50, -50, +20, +80.
    ledger = [[s, w, v, "chajiao"] for s in (0, 1) for w, v in ((2, 10), (3, 40))]
    check(rec, result("draw", [], None, 2, 0, [-50, -50, 20, 80], ledger))


@pytest.mark.parametrize("preset", ["guiyang", "classic"])
def test_draw_nobody_ready_nobody_pays(preset):
    """黄庄 with no seat ready: nobody pays; the dealer deals again (draw_dealer stay, and
    classic: 'if no seat ... is ready, the dealer deals again'), streak unchanged."""
    hands = {0: J3 + "8m", 1: "1m1m4m4m7m5p5p8p8p3s6s9p9p", 2: J2,
             3: "1m4m7m7m2p2p5p8p2s5s5s9s9s"}  # fmt: skip
    rec = play_out(record(hands, [], preset=preset, streak=1))
    check(rec, result("draw", [], None, 0, 1, [0, 0, 0, 0], []))


def test_draw_kongs_are_not_paid():
    """黄庄 after a timely 闷豆: no kong payments, only 查叫 (the dealer's 大对子 wait with its
    kong: 5; seat 2's 平胡: 1)."""
    hands = {
        0: "2p2p2p2p1m1m1m3p3p3p5p5p7p7p",  # dealt quad 2p; then 大对子 wait 5p / 7p
        1: "2m2m5m5m8m1p1p4p8p8p1s4s7s",  # not ready
        2: "2s3s4m5m6m7m8m9m4p5p6p9s9s",  # plain wait 1s / 4s
        3: "3m3m6m6m9m3p6p9p9p2s2s5s8s",  # not ready
    }
    rec = play_out(record(hands, [[0, "angang", "2p"]]))
    # 1->0 5, 3->0 5, 1->2 1, 3->2 1; no dou_an. deltas: +10, -6, +2, -6.
    ledger = [[1, 0, 5, "chajiao"], [3, 0, 5, "chajiao"], [1, 2, 1, "chajiao"],
              [3, 2, 1, "chajiao"]]  # fmt: skip
    check(rec, result("draw", [], None, 0, 0, [10, -6, 2, -6], ledger))


def test_ready_excludes_a_fifth_copy():
    """5.2: a seat whose only winning tile is a kind it holds all four of (1m1m1m1m 234p 567p
    789s waits only on a fifth 1m) is not ready: at the 黄庄 it pays the ready dealer."""
    hands = {0: BT_DEALER, 1: J2, 2: J3, 3: "1m1m1m1m2p3p4p5p6p7p7s8s9s"}
    rec = play_out(record(hands, []))
    # the dealer (plain wait 6s / 9s: 1) is the only ready seat: 1 from each: +3, -1, -1, -1.
    ledger = pays((1, 2, 3), 0, chajiao=1)
    check(rec, result("draw", [], None, 0, 0, [3, -1, -1, -1], ledger))


def test_baoting_bonus_in_chajiao():
    """app 黄庄查叫: the declared dealer (硬报) is ready on a plain hand: 1 + 20 = 21 from each
    seat that is not ready. Its frozen hand discards every tile it draws."""
    hands = {0: BT_DEALER, 1: J1, 2: J2, 3: J3}
    rec = play_out(record(hands, [[0, "baoting"], [0, "discard", "8m"]], preset="app"))
    ledger = pays((1, 2, 3), 0, chajiao=21)
    check(rec, result("draw", [], None, 0, 0, [63, -21, -21, -21], ledger))


@pytest.mark.parametrize("preset", ["guiyang", "classic"])
def test_draw_everybody_ready_nobody_pays(preset):
    """7.5 / 8.1: every seat is ready at the 黄庄: nobody pays and the dealer deals again."""
    hands = {
        0: "1m1m1m2m2m2m3p3p3p5p5p7p7p9m",  # 大对子 wait 5p / 7p
        1: "4m5m6m7m8m9m9p9p9p1s1s5s6s",  # plain wait 4s / 7s
        2: DRAW_READY_2,
        3: DRAW_READY_3,
    }
    rec = play_out(record(hands, [], preset=preset, streak=1))
    check(rec, result("draw", [], None, 0, 1, [0, 0, 0, 0], []))


# =============================================================================== 7.4 chickens
def test_chicken_flip_9m_wraps_to_1m():
    """Flip 9m: the chicken is next(9m) = 1m (9 wraps to 1)."""
    hands = {0: "1m1m2p3p4p6s7s8s5m6m7m7p8p9p", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], live="9m")
    # 平胡 自摸: 2 from each; the dealer's 1m1m = 2 chickens from each (J1's two 1m: not
    # ready). deltas: 3 x 4 = 12, others -4.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=2)
    check(rec, result("zimo", [0], "9m", 0, 1, [12, -4, -4, -4], ledger))


def test_chicken_golden_flip_9s():
    """金鸡: flip 9s makes the flip chicken 1s itself: every 1s is worth 2."""
    hands = {0: "1s1s2p3p4p6s7s8s5m6m7m7p8p9p", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], live="9s")
    # hu 2; chickens 1s x2 x 2 = 4 from each. deltas: 3 x 6 = 18, others -6.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=4)
    check(rec, result("zimo", [0], "9s", 0, 1, [18, -6, -6, -6], ledger))


def test_chicken_up_down():
    """上下鸡 (flip_mode up_down): flip 5p makes 6p and 4p chickens (5p itself is not)."""
    hands = {0: "4p5p6p6p7p8p2m3m4m6s7s8s9m9m", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], overrides={"flip_mode": "up_down"}, live="5p")
    # hu 2; chickens 4p x1 + 6p x2 = 3 from each. deltas: 3 x 5 = 15, others -5.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=3)
    check(rec, result("zimo", [0], "5p", 0, 1, [15, -5, -5, -5], ledger))


def test_chicken_up_down_golden_by_previous():
    """上下鸡 with flip 2s: previous(2s) = 1s is a flip chicken, so 1s is golden (2); 3s is the
    other chicken."""
    hands = {0: "1s2s3s3s4s5s2m3m4m6p7p8p9m9m", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], overrides={"flip_mode": "up_down"}, live="2s")
    # hu 2; chickens 1s (golden) 2 + 3s x2 = 4 from each. deltas: 18, -6, -6, -6.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=4)
    check(rec, result("zimo", [0], "2s", 0, 1, [18, -6, -6, -6], ledger))


def _last_turn(game):
    """True at the turn that follows the draw of the last tile."""
    return game.wall_empty() and game.phase == "turn"


def test_chicken_no_flip_when_the_wall_is_empty():
    """A win on the very last tile (W[107], drawn by seat 3 after 55 live draws): the wall is
    empty, there is no flip, only 1s counts. All four 1s are in hands, so none is in a river."""
    hands = {
        0: "3m3m6m6m9m9m1p1p4p4p7p4s1s7s",  # J3 with a 1s, 14th tile 7s
        1: "1m1m4m4m7m5p5p8p8p3s6s9s1s",  # J1 with a 1s
        2: "2m2m5m5m8m3p3p6p6p9p2s5s1s",  # J2 with a 1s
        3: "1s2s3s2m3m4m6p7p8p5m6m7m9p",  # plain, waits 9p
    }
    rec = play_out(record(hands, [], back="9p"), stop=_last_turn)
    assert rec["actions"][-1][0] == 2  # the last discard before seat 3's final draw
    rec["actions"].append([3, "hu"])
    # hu 2 from each; chickens: seat 3's one 1s = 1 from each. deltas: -3, -3, -3, +9.
    ledger = pays((0, 1, 2), 3, hu=2, chicken=1)
    check(rec, result("zimo", [3], None, 3, 0, [-3, -3, -3, 9], ledger))


CF_DEALER = "1s2m3m4m6p7p8p6s7s8s9m9m4s5s"  # discards 1s: plain wait 3s / 6s
CF_ACTIONS = [
    [0, "discard", "1s"],  # the first 1s discarded: nobody holds 1s, nobody claims it
    [1, "discard", "9p"], [2, "discard", "2s"], [3, "discard", "7m"],
    [0, "hu"],  # drew 3s
]  # fmt: skip


def test_chicken_chongfeng():
    """冲锋鸡: the dealer's first-discarded 1s stays in its river: worth 2 to it (guiyang), paid
    as item chongfeng (and not also as an ordinary river chicken)."""
    rec = record({0: CF_DEALER, 1: J1, 2: J2, 3: J3}, CF_ACTIONS, live="9p2s7m3s" + "1m")
    # hu 2; flip 1m -> 2m: one 2m = chicken 1; chongfeng 2. Each of 1, 2, 3 pays 5.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=1, chongfeng=2)
    check(rec, result("zimo", [0], "1m", 0, 1, [15, -5, -5, -5], ledger))


def test_chicken_chongfeng_golden():
    """冲锋鸡 when golden (flip 9s): worth 4."""
    rec = record({0: CF_DEALER, 1: J1, 2: J2, 3: J3}, CF_ACTIONS, live="9p2s7m3s" + "9s")
    # hu 2; no 1s in hand (2m is no chicken now); chongfeng 2 x 2 = 4. Each pays 6.
    ledger = pays((1, 2, 3), 0, hu=2, chongfeng=4)
    check(rec, result("zimo", [0], "9s", 0, 1, [18, -6, -6, -6], ledger))


def test_chicken_zeren_on():
    """责任鸡 on: the dealer's first 1s is ponged by seat 1, which later wins (so collects): the
    dealer pays seat 1 one 1s unit (zeren); the pong's three 1s are seat 1's chickens."""
    hands = {0: J1 + "1s", 1: "1s1s7m7m7m2p2p2p9s9s5s5s8m", 2: J2, 3: J3}
    actions = [
        [0, "discard", "1s"], [1, "pong"], [1, "discard", "8m"],
        [2, "discard", "5s"], [1, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, live="5s" + "3m")
    # seat 1 + 5s: pong 1s, 777m 222p 555s 99s = 大对子 5 from seat 2. Flip 3m -> 4m (none).
    # chickens: 1s x3 = 3 from each; zeren 1 from seat 0.
    # s0 = -3 - 1 = -4; s1 = 5 + 9 + 1 = 15; s2 = -5 - 3 = -8; s3 = -3.
    ledger = [[2, 1, 5, "hu"], [0, 1, 1, "zeren"]] + pays((0, 2, 3), 1, chicken=3)
    check(rec, result("ron", [1], "3m", 1, 0, [-4, 15, -8, -3], ledger))


ZEREN_HANDS = {
    0: "2m3m4m6p7p8p6s7s8s9m9m4s5s1s",  # dealer: discards 1s, plain wait 3s / 6s
    1: "1s1s1m1m4m4m7m5p5p8p8p3s6s",  # pongs the 1s, then never ready
    2: J2,
    3: J3,
}
ZEREN_ACTIONS = [
    [0, "discard", "1s"], [1, "pong"], [1, "discard", "7m"],
    [2, "discard", "9p"], [3, "discard", "2s"], [0, "hu"],  # the dealer drew 3s
]  # fmt: skip


def test_chicken_zeren_on_claimer_not_collecting():
    """责任鸡 on (guiyang): the claimer (seat 1) is not ready, so collects no chickens, so no
    责任鸡 is paid."""
    rec = record(ZEREN_HANDS, ZEREN_ACTIONS, live="9p2s3s" + "1m")
    # hu 2 and chicken 1 (one 2m) to the dealer from each: 9, -3, -3, -3.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=1)
    check(rec, result("zimo", [0], "1m", 0, 1, [9, -3, -3, -3], ledger))


def test_chicken_zeren_reversible_and_baoji_app():
    """app: 责任鸡 reversible -- the claimer (seat 1) is not ready and the discarder (the
    winner) is: the claimer pays the discarder one unit; 包鸡 -- seat 1, not ready, also pays
    each collecting seat for the 1s in its melds (the pong: 3)."""
    rec = record(ZEREN_HANDS, ZEREN_ACTIONS, preset="app", live="9p2s3s" + "1m")
    # hu: 平胡 1 + 一扣二 1 = 2 from each; chicken 1 (2m) from each; zeren 1->0 1; bao_ji 1->0 3.
    # s0 = 6 + 3 + 1 + 3 = 13; s1 = -2 - 1 - 1 - 3 = -7; s2 = -3; s3 = -3.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=1)
    ledger += [[1, 0, 1, "zeren"], [1, 0, 3, "bao_ji"]]
    check(rec, result("zimo", [0], "1m", 0, 1, [13, -7, -3, -3], ledger))


def test_chicken_baoji_river_and_chongfeng_app():
    """app 包鸡: seat 2 discards the first 1s (its 冲锋鸡, 3) and seat 3 a second 1s (an ordinary
    river 1s, 1); neither is ready, so each pays the collecting winner that value."""
    hands = {
        0: "2m3m4m6p7p8p6s7s8s9m9m4s5s8m",  # discards 8m: plain wait 3s / 6s
        1: J1,
        2: "2m2m5m5m8m3p3p6p6p9p2s5s1s",  # J2 with a 1s for its 8s
        3: "3m3m6m6m9m9m1p1p4p4p7p4s1s",  # J3 with a 1s for its 7s
    }
    actions = [
        [0, "discard", "8m"], [1, "discard", "9p"],
        [2, "discard", "1s"], [3, "discard", "1s"],  # after drawing 8s and 7s: J2, J3 again
        [0, "hu"],  # drew 3s
    ]  # fmt: skip
    rec = record(hands, actions, preset="app", live="9p8s7s3s" + "1m")
    # hu 2 and chicken 1 (2m) to the dealer from each; bao_ji 2->0 3 (冲锋鸡), 3->0 1.
    # s0 = 6 + 3 + 3 + 1 = 13; s1 = -3; s2 = -3 - 3 = -6; s3 = -3 - 1 = -4.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=1)
    ledger += [[2, 0, 3, "bao_ji"], [3, 0, 1, "bao_ji"]]
    check(rec, result("zimo", [0], "1m", 0, 1, [13, -3, -6, -4], ledger))


def test_chicken_baoji_to_a_ready_seat_without_chickens_app():
    """app 包鸡 goes to every collecting seat (RULES.md 7.4): seat 1 is ready (waits 4p) and
    holds no chicken at all, yet collects, so seats 2 and 3 pay it their 1s as they pay the
    winner (the hands and play of the test above, with a ready seat 1)."""
    hands = {
        0: "2m3m4m6p7p8p6s7s8s9m9m4s5s8m",
        1: "3m4m5m6p7p8p3s4s5s7s8s9s4p",  # ready on 4p; no 2m, no 1s
        2: "2m2m5m5m8m3p3p6p6p9p2s5s1s",
        3: "3m3m6m6m9m9m1p1p4p4p7p4s1s",
    }
    actions = [
        [0, "discard", "8m"], [1, "discard", "9p"],
        [2, "discard", "1s"], [3, "discard", "1s"], [0, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, preset="app", live="9p8s7s3s" + "1m")
    # hu 2 (平胡 1 + 一扣二 1) and chicken 1 (2m) to the dealer from each. Seat 1's chicken
    # total is 0, so it receives no chicken. 包鸡 from seat 2 (its 冲锋鸡, 3) and seat 3 (a river
    # 1s, 1) to each collecting seat: the dealer and seat 1.
    # s0 = 6 + 3 + 3 + 1 = 13; s1 = -3 + 3 + 1 = 1; s2 = -3 - 3 - 3 = -9; s3 = -3 - 1 - 1 = -5.
    ledger = pays((1, 2, 3), 0, hu=2, chicken=1)
    ledger += [[2, 0, 3, "bao_ji"], [3, 0, 1, "bao_ji"], [2, 1, 3, "bao_ji"], [3, 1, 1, "bao_ji"]]
    check(rec, result("zimo", [0], "1m", 0, 1, [13, 1, -9, -5], ledger))


SCOPE_ACTIONS = [
    [0, "discard", "1s"],
    [1, "discard", "9p"], [2, "discard", "2s"], [3, "discard", "7m"],
    [0, "discard", "2m"],  # drew 2m: the flip chicken goes to the river
    [2, "pass"],  # J2 holds 2m2m: asked (pong), passes
    [1, "discard", "8m"], [2, "discard", "9p"], [3, "discard", "2s"],
    [0, "hu"],  # drew 3s
]  # fmt: skip


@pytest.mark.parametrize(
    "overrides, each",
    [
        # all: concealed 2m 1 + river 1s 1 + river 2m 1 = 3; each pays hu 2 + 3 = 5
        ({"chicken_scope": "all", "chongfeng": 0}, {"chicken": 3}),
        # hand: concealed 2m only = 1
        ({"chicken_scope": "hand", "chongfeng": 0}, {"chicken": 1}),
        # yaoji_river: concealed 2m + river 1s = 2 (the discarded flip chicken does not count)
        ({"chicken_scope": "yaoji_river", "chongfeng": 0}, {"chicken": 2}),
        # guiyang default (all, 冲锋鸡 2): the river 1s is the 冲锋鸡: chicken 2m + 2m = 2
        ({}, {"chicken": 2, "chongfeng": 2}),
        # hand with 冲锋鸡 2: the 冲锋鸡 counts whatever the scope; chicken: concealed 2m = 1
        ({"chicken_scope": "hand"}, {"chicken": 1, "chongfeng": 2}),
        # yaoji_river with 冲锋鸡 2: concealed 2m = 1 (the river 2m does not count) + 冲锋鸡 2
        ({"chicken_scope": "yaoji_river"}, {"chicken": 1, "chongfeng": 2}),
    ],
    ids=["all", "hand", "yaoji_river", "all-chongfeng", "hand-chongfeng", "yaoji-chongfeng"],
)
def test_chicken_scope(overrides, each):
    """chicken_scope: the dealer wins holding one 2m (flip 1m) with 1s and 2m in its river."""
    rec = record({0: CF_DEALER, 1: J1, 2: J2, 3: J3}, SCOPE_ACTIONS, overrides=overrides,
                 live="9p2s7m2m8m9p2s3s" + "1m")  # fmt: skip
    ledger = pays((1, 2, 3), 0, hu=2)
    ledger += pays((1, 2, 3), 0, **each)
    per_seat = 2 + sum(each.values())
    deltas = [3 * per_seat, -per_seat, -per_seat, -per_seat]
    check(rec, result("zimo", [0], "1m", 0, 1, deltas, ledger))


def test_chicken_kong_60_classic():
    """classic chicken_kong_60: the dealer's 闷豆 of 1s (dealt quad, timely) collects 60 from
    each other seat for those four tiles; it then wins on the replacement."""
    hands = {0: "1s1s1s1s2m3m4m6p7p8p7s8s9m9m", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "angang", "1s"], [0, "hu"]], preset="classic", live="1p", back="6s")
    # hu: 平胡 10 + 自摸 0 + 杠上开花 10 = 20 from each; dou_an 20 from each; chicken 60 from
    # each (flip 1p -> 2p: nobody holds a 2p; the four 1s are all in the kong).
    # deltas: 3 x 100 = 300, others -100.
    ledger = pays((1, 2, 3), 0, hu=20, dou_an=20, chicken=60)
    check(rec, result("zimo", [0], "1p", 0, 1, [300, -100, -100, -100], ledger))


def test_chicken_first_1s_won_on_is_no_chongfeng():
    """A win on the first discarded 1s: the tile is the winner's (3 x 1s with its pair), it is
    not in the discarder's river and is no 冲锋鸡; the discarder (ready) still collects its own
    chickens."""
    hands = {0: "2m3m4m6p7p8p3s4s5s9m9m7s8s1s", 1: J1,
             2: "1s1s7m7m7m2p2p2p9p9p9p5s5s", 3: J3}  # fmt: skip
    rec = record(hands, [[0, "discard", "1s"], [2, "hu"]], live="1m")
    # 大对子 5 from the dealer. flip 1m -> 2m. seat 2: 1s x3 = 3 from each; the dealer (ready
    # on 6s / 9s) one 2m = 1 from each.
    # s0 = -5 - 3 + 3 = -5; s1 = -3 - 1 = -4; s2 = 5 + 9 - 1 = 13; s3 = -4.
    ledger = [[0, 2, 5, "hu"]] + pays((0, 1, 3), 2, chicken=3)
    ledger += pays((1, 2, 3), 0, chicken=1)
    check(rec, result("ron", [2], "1m", 2, 0, [-5, -4, 13, -4], ledger))


def test_void_kong_tiles_still_count_as_chickens():
    """Example B with flip 6m: the 热炮 voids seat 1's 闷豆 of 7m, but its four 7m are still
    chickens, collected by seat 1 (ready on 9p)."""
    rec = record(B_HANDS, B_ACTIONS, dealer=1, live="6m", back="3p")
    # hu 1 + rerpao 1 from seat 1; chicken 4 to seat 1 from each of 0, 2, 3.
    # s0 -4; s1 = -2 + 12 = 10; s2 -4; s3 = 2 - 4 = -2.
    ledger = [[1, 3, 1, "hu"], [1, 3, 1, "rerpao"]] + pays((0, 2, 3), 1, chicken=4)
    check(rec, result("ron", [3], "6m", 3, 0, [-4, 10, -4, -2], ledger))


def test_chicken_zeren_golden():
    """责任鸡 when 1s is golden (上下鸡, flip 2s: previous(2s) = 1s): the ponged 1s are worth 2
    each and the 责任鸡 is 2."""
    hands = {0: J1 + "1s", 1: "1s1s7m7m7m2p2p2p9s9s5s5s8m", 2: J2, 3: J3}
    actions = [
        [0, "discard", "1s"], [1, "pong"], [1, "discard", "8m"],
        [2, "discard", "5s"], [1, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, overrides={"flip_mode": "up_down"}, live="5s" + "2s")
    # 大对子 5 from seat 2; chickens 1s x3 x 2 = 6 (3s, the other flip chicken: none held);
    # zeren 2 from seat 0. s0 = -6 - 2 = -8; s1 = 5 + 18 + 2 = 25; s2 = -11; s3 = -6.
    ledger = [[2, 1, 5, "hu"], [0, 1, 2, "zeren"]] + pays((0, 2, 3), 1, chicken=6)
    check(rec, result("ron", [1], "2s", 1, 0, [-8, 25, -11, -6], ledger))


# =============================================================================== 5.4 pass-win
PW_HANDS = {
    0: J1 + "8m",
    1: "1m2m2m5m5m6m3p3p6p2s5s8s8s",  # not ready, no 8m / 9p
    2: "7p7p7p2p2p2p7s7s7s8m8m9p9p",  # 大对子, waits 8m / 9p
    3: J3,
}


def test_pass_win_penalty():
    """pass_win penalty: seat 2 passes the dealer's 8m (locked), then chooses hu on seat 1's
    9p: the win is void, seat 2 pays everybody the 大对子 value (5, +1 with the dealer, streak
    1) as baopai, and play goes on: seat 2 draws the last 8m and wins by self-draw."""
    actions = [[0, "discard", "8m"], [2, "pass"], [1, "discard", "9p"], [2, "hu"], [2, "hu"]]
    rec = record(PW_HANDS, actions, live="9p8m" + "6s", streak=1)
    # baopai: 2->0 5 + 1 = 6, 2->1 5, 2->3 5.
    # 自摸 大对子: 5 + 1 = 6 from each, the dealer 6 + 1 = 7.
    # flip 6s -> 7s: seat 2 holds 7s x3 = 3 from each.
    # s0 = 6 - 7 - 3 = -4; s1 = 5 - 6 - 3 = -4; s2 = -16 + 19 + 9 = 12; s3 = 5 - 6 - 3 = -4.
    ledger = [[2, 0, 6, "baopai"], [2, 1, 5, "baopai"], [2, 3, 5, "baopai"]]
    ledger += [[0, 2, 7, "hu"], [1, 2, 6, "hu"], [3, 2, 6, "hu"]]
    ledger += pays((0, 1, 3), 2, chicken=3)
    check(rec, result("zimo", [2], "6s", 2, 0, [-4, -4, 12, -4], ledger))


def test_pass_win_forbid():
    """pass_win forbid: while locked, seat 2 is asked about the 9p (it holds a pair) but hu is
    not offered: the record's hu at action 3 is illegal."""
    actions = [[0, "discard", "8m"], [2, "pass"], [1, "discard", "9p"], [2, "hu"]]
    rec = record(PW_HANDS, actions, overrides={"pass_win": "forbid"}, live="9p8m" + "6s")
    with pytest.raises(
        RecordError,
        match=r"^action 3: seat 2 tried hu, which is illegal here; legal: \['pong', 'pass'\]$",
    ):
        replay(rec)
    with pytest.raises(
        ValueError,
        match=r"action 3 \[2, 'hu'\]: seat 2 tried 'hu', but seat 2 is to act with legal",
    ):
        replay_record(rec)
    # unlocked (no pass before), the same hu is legal
    rec = record(PW_HANDS, [[0, "discard", "8m"], [2, "hu"]],
                 overrides={"pass_win": "forbid"}, live="9p8m" + "6s")  # fmt: skip
    # 大对子 5 from the dealer; flip W[53] = 9p -> 1p: seat 2 holds none; no 1s.
    check(rec, result("ron", [2], "9p", 2, 0, [-5, 0, 5, 0], [[0, 2, 5, "hu"]]))


def test_pass_win_penalty_on_a_rob():
    """pass_win penalty on a rob: seat 2 passes its win on the dealer's 6s (seat 0 pongs it),
    then, still locked (no draw since), chooses hu on seat 0's late bugang of 6s: void; seat 2
    pays each other seat the value with the self-draw extra (10 + 1); the kong completes and
    seat 0 wins on its replacement."""
    hands = {
        3: J3 + "6s",  # dealer
        0: "6s6s6s1p2p3p4m5m6m7p8p9p2m",
        1: J2,
        2: "2s3s4s7s8s9s2s3s4s4s5s9s9s",  # bamboo flush, waits 3s / 6s
    }
    actions = [
        [3, "discard", "6s"], [0, "pong"], [2, "pass"],
        [0, "bugang", "6s"], [2, "hu"],  # void: seat 2 is locked
        [0, "hu"],  # replacement 2m
    ]  # fmt: skip
    rec = record(hands, actions, dealer=3, live="9p", back="2m")
    # baopai 2->0, 2->1, 2->3: 11 each. seat 0: 123p 456m 789p 22m + late kong 6s: 平胡 1 + 1 +
    # 杠上开花 1 = 3 from each; the late kong pays nothing. flip 9p -> 1p: seat 0's one 1p = 1
    # from each (seat 2, ready, holds no chicken).
    # s0 = 11 + 9 + 3 = 23; s1 = 11 - 3 - 1 = 7; s2 = -33 - 3 - 1 = -37; s3 = 7.
    ledger = [[2, s, 11, "baopai"] for s in (0, 1, 3)]
    ledger += pays((1, 2, 3), 0, hu=3, chicken=1)
    check(rec, result("zimo", [0], "9p", 0, 0, [23, 7, -37, 7], ledger))


def test_pass_win_penalty_includes_own_baoting_bonus():
    """app with pass_win penalty: the declared dealer passes seat 1's 6s, then takes hu on
    seat 2's 9s while locked: void, it pays each seat 1 + its own 硬报 20 = 21 (baopai); it
    later self-draws the last 9s: 1 + 1 + 20 = 22 from each."""
    hands = {0: BT_DEALER, 1: J1, 2: J2, 3: J3}
    actions = [
        [0, "baoting"], [0, "discard", "8m"],
        [1, "discard", "6s"], [0, "pass"],
        [2, "discard", "9s"], [0, "hu"], [1, "pass"],  # seat 1 (9s9s) asked after the dealer
        [3, "discard", "7m"], [0, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, preset="app", overrides={"pass_win": "penalty"},
                 live="6s9s7m9s" + "1m")  # fmt: skip
    # baopai 21 to each; hu 22 and chicken 1 (2m) from each.
    # s0 = -63 + 66 + 3 = 6; each other seat: 21 - 22 - 1 = -2.
    ledger = [[0, s, 21, "baopai"] for s in (1, 2, 3)]
    ledger += pays((1, 2, 3), 0, hu=22, chicken=1)
    check(rec, result("zimo", [0], "1m", 0, 1, [6, -2, -2, -2], ledger))


def test_pass_win_forbid_on_a_rob():
    """pass_win forbid: the locked seat 2 is not asked about seat 0's bugang (no rob window
    at all), so the kong completes and seat 0 wins on its replacement."""
    hands = {3: J3 + "6s", 0: "6s6s6s1p2p3p4m5m6m7p8p9p2m", 1: J2,
             2: "2s3s4s7s8s9s2s3s4s4s5s9s9s"}  # fmt: skip
    actions = [[3, "discard", "6s"], [0, "pong"], [2, "pass"], [0, "bugang", "6s"], [0, "hu"]]
    rec = record(hands, actions, dealer=3, overrides={"pass_win": "forbid"}, live="9p",
                 back="2m")  # fmt: skip
    # seat 0: 平胡 1 + 1 + 杠上开花 1 = 3 from each; late kong: 0; chicken 1p: 1 from each.
    ledger = pays((1, 2, 3), 0, hu=3, chicken=1)
    check(rec, result("zimo", [0], "9p", 0, 0, [12, -4, -4, -4], ledger))


def test_pass_win_penalty_paid_on_a_draw():
    """7.1: pass-win penalties are paid whatever the ending, a 黄庄 too. Seat 2's void win pays
    5 to each (+1 with the dealer, streak 1); at the draw seat 2 is the only ready seat and
    collects the same amounts as 查叫."""
    actions = [[0, "discard", "8m"], [2, "pass"], [1, "discard", "9p"], [2, "hu"]]
    rec = play_out(record(PW_HANDS, actions, live="9p", streak=1))
    ledger = [[2, 0, 6, "baopai"], [2, 1, 5, "baopai"], [2, 3, 5, "baopai"]]
    ledger += [[0, 2, 6, "chajiao"], [1, 2, 5, "chajiao"], [3, 2, 5, "chajiao"]]
    check(rec, result("draw", [], None, 0, 1, [0, 0, 0, 0], ledger))


@pytest.mark.parametrize("overrides", [{}, {"qianggang": "plus_nine_burn"}])
def test_penalty_on_a_rob_includes_the_self_draw_extra_in_both_rob_modes(overrides):
    """5.4: a locked seat that robs pays the pattern value plus the self-draw extra (not +9)."""
    hands = {0: "4s1m1m1m2m2m2m3m3m3m5p5p5p9p", 1: "4s4s4s6m6m7m7m8m8m1p1p2p2p",
             2: "1s2s3s5s6s7s8s8s8s9s9s2s3s", 3: "9m9m9m7p7p7p8p8p8p6p6p6p4p"}  # fmt: skip
    acts = [[0, "discard", "4s"], [1, "pong"], [2, "pass"], [1, "bugang", "4s"], [2, "hu"]]
    rec = play_out(record(hands, acts, overrides=overrides))
    got = replay(rec)
    assert compare(replay_record(rec), got) == []
    baopai = sorted(line for line in got["ledger"] if line[3] == "baopai")
    # seat 2 passed the flush win on 4s (locked), then chose hu on the robbed 4s:
    # 清一色 10 + 自摸 1 = 11 to each other seat
    assert baopai == [[2, 0, 11, "baopai"], [2, 1, 11, "baopai"], [2, 3, 11, "baopai"]]


# =============================================================================== 8.2 streak
def test_streak_dealer_self_draw():
    """dealer_streak_bonus (guiyang): the dealer (streak 2) self-draws: every hand payment
    carries +2 (chickens do not); next_streak 3."""
    hands = {0: "1m2m3m7m8m9m4p5p6p7s8s9s5s5s", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], live="4s", streak=2)
    # hu 2 + 2 = 4 from each; chicken 5s x2 = 2 from each. deltas: 18, -6, -6, -6.
    ledger = pays((1, 2, 3), 0, hu=4, chicken=2)
    check(rec, result("zimo", [0], "4s", 0, 3, [18, -6, -6, -6], ledger))


def test_streak_other_seat_self_draw():
    """Streak 2, seat 1 self-draws (闷豆 + 杠上开花): only the dealer's hu payment carries +2
    (kongs and chickens do not); the deal passes and the streak resets."""
    hands = {0: J1 + "7s", 1: "2p2p2p3m4m5m6s7s8s4p5p9s9s", 2: J2, 3: J3}
    actions = [[0, "discard", "7s"], [1, "angang", "2p"], [1, "hu"]]
    rec = record(hands, actions, live="2p" + "2m", back="6p", streak=2)
    # hu 3 (+2 from the dealer = 5); dou_an 2; chicken 1 (3m).
    # s0 = -5 - 2 - 1 = -8; s1 = 5 + 3 + 3 + 6 + 3 = 20; s2 = -6; s3 = -6.
    ledger = [[0, 1, 5, "hu"], [2, 1, 3, "hu"], [3, 1, 3, "hu"]]
    ledger += pays((0, 2, 3), 1, dou_an=2, chicken=1)
    check(rec, result("zimo", [1], "2m", 1, 0, [-8, 20, -6, -6], ledger))


# =============================================================================== 3 players
def test_three_players_kong_and_self_draw():
    """num_players 3: the deal uses W[0..39] (the dealer's 14th is W[39]), the first live draw
    is W[40]. Seat 1 draws the 4th 2p, makes a 闷豆 and wins on the replacement W[107]."""
    hands = {0: J1 + "7m", 1: K_HAND, 2: J2}
    actions = [[0, "discard", "7m"], [1, "angang", "2p"], [1, "hu"]]
    rec = record(hands, actions, overrides={"num_players": 3}, live="2p" + "1m", back="6s")
    wall = rec["wall"]
    assert wall[2 * 39 : 2 * 41] == "7m2p"  # the dealer's 14th tile, then the first live draw
    # hu 3 (1 + 1 + 杠上开花 1), dou_an 2, chicken 1 (2m, flip W[41] = 1m) from each of 2.
    ledger = pays((0, 2), 1, hu=3, dou_an=2, chicken=1)
    check(rec, result("zimo", [1], "1m", 1, 0, [-6, 12, -6], ledger))


def test_three_players_qianggang_pays_for_two():
    """num_players 3, 抢杠 pay_for_all: the robbed seat pays (n-1) = 2 x the hand value."""
    hands = {0: J1 + "2p", 1: "2p2p2m3m4m6p7p8p7s8s9m9m2s", 2: "3p4p5m6m7m3s4s5s6m7m8m9s9s"}
    actions = [
        [0, "discard", "2p"], [1, "pong"], [1, "discard", "2s"],
        [2, "discard", "9p"], [0, "discard", "8m"], [1, "bugang", "2p"], [2, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, overrides={"num_players": 3}, live="9p8m2p" + "1m")
    # seat 2: 平胡 1 + 1 = 2; seat 1 pays 2 x 2 = 4. flip 1m -> 2m: seat 1 (ready) holds one
    # 2m: 1 from each of 0 and 2. s0 = -1; s1 = -4 + 2 = -2; s2 = 4 - 1 = 3.
    ledger = [[1, 2, 4, "hu"], [0, 1, 1, "chicken"], [2, 1, 1, "chicken"]]
    check(rec, result("qianggang", [2], "1m", 2, 0, [-1, -2, 3], ledger))


# =============================================================================== other switches
def test_switch_jian_dou_san():
    """jian_dou_san (见豆三): every kong is worth 3; the 闷豆 scenario pays 3 instead of 2."""
    hands = {0: J1 + "7s", 1: "2p2p2p3m4m5m6s7s8s4p5p9s9s", 2: J2, 3: J3}
    actions = [[0, "discard", "7s"], [1, "angang", "2p"], [1, "hu"]]
    rec = record(hands, actions, overrides={"jian_dou_san": True}, live="2p2m", back="6p")
    # hu 3 + dou_an 3 + chicken 1 = 7 from each: -7, 21, -7, -7.
    ledger = pays((0, 2, 3), 1, hu=3, dou_an=3, chicken=1)
    check(rec, result("zimo", [1], "2m", 1, 0, [-7, 21, -7, -7], ledger))


def test_switch_dou_values():
    """dou_values [5, 6, 7]: the 点豆 scenario's feeder pays 7."""
    hands = {0: J1 + "2p", 1: K_HAND, 2: J2, 3: J3}
    rec = record(hands, [[0, "discard", "2p"], [1, "kong"], [1, "hu"]],
                 overrides={"dou_values": [5, 6, 7]}, live="1m", back="6s")  # fmt: skip
    # hu 3 and chicken 1 from each; dou_ming 7 from seat 0.
    # s0 = -3 - 7 - 1 = -11; s1 = 9 + 7 + 3 = 19; s2 = -4; s3 = -4.
    ledger = pays((0, 2, 3), 1, hu=3, chicken=1)
    ledger += [[0, 1, 7, "dou_ming"]]
    check(rec, result("zimo", [1], "1m", 1, 0, [-11, 19, -4, -4], ledger))


def test_switch_bonuses_and_chicken_unit():
    """zimo_bonus 3, gangkai_bonus 2, chicken_unit 2 on the 闷豆 + 杠上开花 scenario."""
    hands = {0: J1 + "7s", 1: "2p2p2p3m4m5m6s7s8s4p5p9s9s", 2: J2, 3: J3}
    actions = [[0, "discard", "7s"], [1, "angang", "2p"], [1, "hu"]]
    over = {"zimo_bonus": 3, "gangkai_bonus": 2, "chicken_unit": 2}
    rec = record(hands, actions, overrides=over, live="2p2m", back="6p")
    # hu 1 + 3 + 2 = 6; dou_an 2; chicken one 3m x 2 = 2: 10 from each: -10, 30, -10, -10.
    ledger = pays((0, 2, 3), 1, hu=6, dou_an=2, chicken=2)
    check(rec, result("zimo", [1], "2m", 1, 0, [-10, 30, -10, -10], ledger))


def test_switch_base_stake():
    """base_stake 3 multiplies every payment (the 平胡 自摸 scenario)."""
    hands = {0: "1m2m3m7m8m9m4p5p6p7s8s9s5s5s", 1: J1, 2: J2, 3: J3}
    rec = record(hands, [[0, "hu"]], overrides={"base_stake": 3}, live="4s")
    ledger = pays((1, 2, 3), 0, hu=6, chicken=6)
    check(rec, result("zimo", [0], "4s", 0, 1, [36, -12, -12, -12], ledger))


# ---------------------------------------------------------------- mutants that survived
# Four positions a mutation test of the engine found unpinned (2026-12-06): each changed rule
# passed every other test. Worked by hand from RULES.md; the reference agrees (check()).
ROB_WAITER_36 = "1m2m3m5p6p7p7m8m9m4s5s9p9p"  # plain, waits 3s / 6s


def test_passing_a_rob_locks_the_seat_until_its_next_draw():
    """5.4: seat 2 passes robbing seat 0's (late) bugang 6s, so it is locked until its next
    draw; seat 0's replacement 3s discard is a 热炮 (a passport for seat 2's plain hand), seat 2
    takes hu: void, it pays 1 (平胡) to each other seat (baopai). Seat 1 then self-draws 8m."""
    hands = {
        3: J3 + "6s",  # dealer
        0: "6s6s6s1p2p3p4m5m6m7p8p9p2m",
        1: "2p3p4p5m6m7m2s3s4s8m8m8s8s",  # waits 8m / 8s
        2: ROB_WAITER_36,
    }
    actions = [
        [3, "discard", "6s"], [0, "pong"],
        [0, "bugang", "6s"], [2, "pass"],
        [0, "discard", "3s"], [2, "hu"],  # void: locked by the rob pass
        [1, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, dealer=3, live="8m" + "5p", back="3s")
    # baopai 2->0,1,3: 1 each. seat 1: 平胡 1 + 自摸 1 = 2 from each. Late kong: 0. Flip 5p -> 6p:
    # ready seats 0 (waits 2m), 1 (winner), 2 (waits 3s/6s); seat 2 holds one 6p: 1 from each.
    ledger = [[2, s, 1, "baopai"] for s in (0, 1, 3)]
    ledger += pays((0, 2, 3), 1, hu=2) + pays((0, 1, 3), 2, chicken=1)
    check(rec, result("zimo", [1], "5p", 1, 0, [-2, 6, -2, -2], ledger))


def test_a_burned_seat_collects_no_reversed_zeren():
    """7.4: a burned seat never collects 责任鸡, reversed or not. Dealer 0 discards the first 1s,
    seat 2 pongs it; seat 0 later angangs 4m and discards its replacement 3s: 热炮, seat 1 wins,
    seat 0 is burned (rerpao plus_one_burn). Seat 0 is ready, seat 2 is not: the reversal
    (zeren reversible) would pay seat 0, but seat 0 is burned."""
    hands = {
        0: "1s4m4m4m1p2p3p7p8p9p6m7m8m5m",
        1: "1m2m3m5p6p7p7m8m9m4s5s9s9s",  # waits 3s / 6s
        2: "1s1s2m2m5m5m8m3p3p6p6p9p5s",
        3: J3,
    }
    actions = [
        [0, "discard", "1s"], [2, "pong"], [2, "discard", "9p"],
        [3, "discard", "2s"],
        [0, "angang", "4m"], [0, "discard", "3s"], [1, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, overrides={"zeren": "reversible", "rerpao": "plus_one_burn"},
                 live="2s4m" + "1p", back="3s")  # fmt: skip
    # hu 1 (平胡) + rerpao 1 from seat 0. The 闷豆 is void. Only seat 1 collects chickens: none.
    ledger = [[0, 1, 1, "hu"], [0, 1, 1, "rerpao"]]
    check(rec, result("ron", [1], "1p", 1, 0, [-2, 2, 0, 0], ledger))


def test_a_rob_after_a_kong_in_the_same_turn_is_no_rerpao():
    """7.2: 热炮 is a win on a discard. Seat 0 angangs 4m (timely), its replacement is 6s and it
    bugangs 6s onto its pong; seat 2 robs. The 闷豆 keeps its value and no rerpao item is paid."""
    hands = {
        3: J3 + "6s",  # dealer
        0: "6s6s4m4m4m1p2p3p7p8p9p5m9s",
        1: J2,
        2: ROB_WAITER_36,
    }
    actions = [
        [3, "discard", "6s"], [0, "pong"], [0, "discard", "9s"],
        [1, "discard", "9s"], [2, "discard", "9s"], [3, "discard", "9s"],
        [0, "angang", "4m"], [0, "bugang", "6s"], [2, "hu"],
    ]  # fmt: skip
    rec = record(hands, actions, dealer=3, live="9s9s9s4m" + "3p", back="6s")
    # seat 2: 平胡 1 + 自摸 1 = 2, seat 0 pays 3 x 2 = 6. Seat 0 (ready: waits 5m) collects its
    # 闷豆: 2 from each. Flip 3p -> 4p: no collector holds a chicken.
    ledger = [[0, 2, 6, "hu"]] + pays((1, 2, 3), 0, dou_an=2)
    check(rec, result("qianggang", [2], "3p", 2, 0, [0, -2, 4, -2], ledger))


def test_three_winners_on_a_non_dealers_discard_make_it_dealer():
    """8.1: three winners on seat 0's discard (dealer 3, streak 1): seat 0 deals next, streak 0."""
    hands = {
        3: "1p2p3p4p6p7p8p9p2p3p4p9p9p" + "5m",  # dealer, 清一色 waits 5p
        0: "1m1m4m4m9m9m6p6p3s3s5s7p5p",
        1: "7m7m7m8m8m8m7s7s7s9s9s9s5p",  # 大对子 waits 5p
        2: "2m2m3m3m4s4s6s6s2s2s8s8s5p",  # 七对 waits 5p
    }
    actions = [[3, "discard", "5m"], [0, "discard", "5p"], [1, "hu"], [2, "hu"], [3, "hu"]]
    rec = record(hands, actions, dealer=3, live="2s" + "8s", streak=1)
    # seat 0 pays 5, 10, 10 + 1 (the dealer's streak). Flip 8s -> 9s: seat 1 holds 9s x3.
    ledger = [[0, 1, 5, "hu"], [0, 2, 10, "hu"], [0, 3, 11, "hu"]]
    ledger += pays((0, 2, 3), 1, chicken=3)
    check(rec, result("ron", [1, 2, 3], "8s", 0, 0, [-29, 14, 7, 8], ledger))


# Four more rules that only random comparisons with the reference pinned (the same mutation
# test: whether a seed reached such a position decided whether the bug was caught).


def test_chongfeng_alone_makes_a_seat_collect_without_ready_required():
    """7.4 "Who collects", ready_required off: a seat collects when its chicken total, 冲锋鸡
    included, is above 0. Seat 1 (J1, not ready, not a winner) draws and discards the first
    1s, which nobody claims; its ordinary chicken total is 0, its 冲锋鸡 is 2, so it collects
    2 from every other seat. The dealer then self-draws 3s."""
    hands = {
        0: "2m3m4m6p7p8p6s7s8s9m9m4s5s9p",  # discards 9p: plain wait 3s / 6s
        1: J1,
        2: J2,
        3: J3,
    }
    actions = [
        [0, "discard", "9p"],
        [1, "discard", "1s"],  # the first 1s discarded: nobody holds a 1s, nobody claims it
        [2, "discard", "2s"], [3, "discard", "7m"],
        [0, "hu"],  # drew 3s: 234m 678p 678s 99m 345s
    ]  # fmt: skip
    rec = record(hands, actions, overrides={"ready_required": False},
                 live="1s2s7m3s" + "1p")  # fmt: skip
    # hu: 平胡 1 + 自摸 1 = 2 from each of 1, 2, 3 (streak 0). No kongs. Flip 1p -> 2p: nobody
    # holds or has discarded a 2p, and the only 1s out of the wall is seat 1's 冲锋鸡, so every
    # chicken total is 0; seat 1's 冲锋鸡 is 2 (not golden): 2 from each of 0, 2, 3.
    # s0 = 6 - 2 = 4; s1 = -2 + 6 = 4; s2 = -2 - 2 = -4; s3 = -4. The dealer won: streak 1.
    ledger = pays((1, 2, 3), 0, hu=2) + pays((0, 2, 3), 1, chongfeng=2)
    check(rec, result("zimo", [0], "1p", 0, 1, [4, 4, -4, -4], ledger))


def test_two_winners_next_dealer_counts_from_a_dealer_other_than_seat_0():
    """8.1: with two winners the first winner in turn order counting from the current dealer
    deals next. Dealer 2 discards its 14th tile 5s; seats 3 (七对) and 0 (大对子) win on it.
    Counting from seat 2 (2, 3, 0, 1) the first winner is seat 3, not seat 0."""
    hands = {
        2: "1m1m4m4m7m2p2p5p5p9p3s6s2s" + "5s",  # dealer, not ready after the 5s goes
        3: "2m2m3p3p6m6m4s4s8m8m1p1p5s",  # 七对, waits 5s
        0: "7m7m7m8p8p8p7s7s7s9s9s5s5s",  # 大对子, waits 9s / 5s
        1: "3m3m9m9m4p4p7p7p8s8s6p3s9p",  # not ready, no 5s
    }
    actions = [[2, "discard", "5s"], [3, "hu"], [0, "hu"]]
    rec = record(hands, actions, dealer=2, live="4s")
    # seat 2 pays seat 3 10 (七对) and seat 0 5 (大对子); streak 0. Flip 4s -> 5s: each winner's
    # hand includes the 5s won on: seat 0 holds 5s x3 = 3 from each of 1, 2, 3; seat 3 holds
    # 5s x2 = 2 from each of 0, 1, 2. Nobody holds a 1s; seats 1 and 2 are not ready.
    # s0 = 5 + 9 - 2 = 12; s1 = -3 - 2 = -5; s2 = -15 - 3 - 2 = -20; s3 = 10 + 6 - 3 = 13.
    # Next dealer: seat 3 (the deal passes: streak 0).
    ledger = [[2, 0, 5, "hu"], [2, 3, 10, "hu"]]
    ledger += pays((1, 2, 3), 0, chicken=3) + pays((0, 1, 2), 3, chicken=2)
    check(rec, result("ron", [0, 3], "4s", 3, 0, [12, -5, -20, 13], ledger))


# the dealer (seat 0, streak 2) is robbed: it pongs seat 1's 2p, later draws the last 2p and
# adds it; seat 2 robs. The dealer is ready (6s / 9s) with one 2m (flip 1m), but burned: it
# collects nothing. hu: 平胡 1 + 9 + k 2 = 12 from seat 0; seat 2 holds no 2m and no 1s.
NINE_BURN_DEALER_ROBBED = (
    {0: "2p2p2m3m4m6p7p8p7s8s9m9m2s8m", 1: J1, 2: ROBBER, 3: J3},
    [
        [0, "discard", "8m"], [1, "discard", "2p"], [0, "pong"], [0, "discard", "2s"],
        [1, "discard", "9p"], [2, "discard", "8s"], [3, "discard", "9p"],
        [0, "bugang", "2p"], [2, "hu"],
    ],
    "2p9p8s9p2p" + "1m",
    ("qianggang", [2], "1m", 2, 0, [-12, 0, 12, 0], [[0, 2, 12, "hu"]]),
)  # fmt: skip
# the dealer (seat 0, streak 2) robs: seat 1 pongs the dealer's 2p, later draws the last 2p
# and adds it; the dealer (whose dealt 14 tiles win; it declines) robs. hu: 平胡 1 + 9 + k 2
# = 12 from seat 1. Flip 5s -> 6s: nobody holds a 6s or a 1s. The dealer won: streak 3.
NINE_BURN_DEALER_ROBS = (
    {0: ROBBER + "2p", 1: ROB_PONGER, 2: J2, 3: J3},
    [
        [0, "discard", "2p"], [1, "pong"],
        [1, "discard", "1m"], [2, "discard", "9p"], [3, "discard", "2s"],
        [0, "discard", "8s"], [1, "bugang", "2p"], [0, "hu"],
    ],
    "9p2s8s2p" + "5s",
    ("qianggang", [0], "5s", 0, 3, [12, -12, 0, 0], [[1, 0, 12, "hu"]]),
)  # fmt: skip


@pytest.mark.parametrize(
    "hands, actions, live, expected",
    [NINE_BURN_DEALER_ROBBED, NINE_BURN_DEALER_ROBS],
    ids=["dealer robbed", "dealer robs"],
)
def test_qianggang_plus_nine_burn_carries_the_dealer_streak(hands, actions, live, expected):
    """7.2 抢杠 under ``qianggang = plus_nine_burn`` in guiyang (dealer_streak_bonus on, streak
    2): the robbed seat alone pays the hand value without a self-draw extra, + 9, and, as a
    hand payment between the dealer and another seat (8.2), + k."""
    rec = record(hands, actions, overrides={"qianggang": "plus_nine_burn"}, live=live, streak=2)
    check(rec, result(*expected))


# Seat 1 holds three 2p; the fourth is W[107], the last tile, drawn by seat 3 (the 55th live
# draw: no kong, so W[53..107] are all live draws, the k-th going to seat k mod 4). Every seat
# discards what it draws and passes when asked, so the hands at the end are the dealt ones.
LAST_DISCARD_HANDS = {
    0: J3 + "9p",  # dealer: discards 9p first
    1: "2p2p2p3p2m3m4m6s7s8s9m9m5s",  # 222p 3p 234m 678s 99m 5s: not ready
    2: J2,
    3: J1,
}


def _to_the_last_discard_of_the_wall():
    rec = play_out(record(LAST_DISCARD_HANDS, [], back="2p"), stop=_last_turn)
    discards = [a for a in rec["actions"] if a[1] == "discard"]
    assert discards[-1][0] == 2  # seat 3 has drawn the last tile and is to act
    rec["actions"].append([3, "discard", "2p"])  # the wall is empty: no replacement tile
    return rec


def test_no_kong_claim_on_the_last_discard():
    """3.2: ``kong`` on a discard needs a replacement tile, so it is not offered when the wall
    is empty. Seat 3 discards the last tile drawn, 2p; seat 1 holds three 2p and is asked with
    only ``pong`` and ``pass`` (no seat can win on 2p): a record in which it chooses ``kong``
    is refused by replay. The pong is legal: seat 1 pongs, discards 5s, nobody claims it, a
    live draw is due with an empty wall: 黄庄."""
    rec = _to_the_last_discard_of_the_wall()
    # the legal set in the window, by the batch-1 fast path and by the array code alike
    rules, wall, dealer, streak, decisions = parse(rec)
    for step in (core.step, core.step_arrays):
        st = core.deal(rules, wall[None], dealer, streak)
        for _seat, a in decisions:
            step(rules, st, np.array([a]))
        assert st.front[0] > st.back[0]  # the wall is empty
        assert (int(st.actor[0]), core.legal_names(st, 0)) == (1, ["pong", "pass"])
    rec["actions"].append([1, "kong"])
    n = len(rec["actions"]) - 1
    with pytest.raises(
        RecordError,
        match=rf"^action {n}: seat 1 tried kong, which is illegal here; "
        r"legal: \['pong', 'pass'\]$",
    ):
        replay(rec)
    with pytest.raises(
        ValueError, match=rf"action {n} \[1, 'kong'\]: seat 1 tried 'kong', but seat 1 is to act"
    ):
        replay_record(rec)

    rec = _to_the_last_discard_of_the_wall()
    rec["actions"] += [[1, "pong"], [1, "discard", "5s"]]
    # seat 1: pong 2p + 2p3p 234m 678s 99m, ready on 1p / 4p (平胡: 查叫 value 1). Seats 0 (J3),
    # 2 (J2), 3 (J1) are not ready: each pays seat 1 1 (streak 0). No kongs or chickens on a
    # draw; no flip. draw_dealer stay: the dealer deals again, streak unchanged (0).
    ledger = pays((0, 2, 3), 1, chajiao=1)
    check(rec, result("draw", [], None, 0, 0, [-1, 3, -1, -1], ledger))
