"""Tests written against bugs that were planted by hand and that the rest of the suite let
through (issue 33, "Tests that let bugs through"). Each pins one line of the source with values
worked out by hand from RULES.md.

- The v2 ``wait_value`` guard (``observation.features``): a wait on a kind of which the seat
  already holds all four copies (concealed + melds) is no wait, so its pattern does not count.
  The random comparison in ``test_features.py`` makes every seat take every kong offered, so
  no seat there keeps a pong's fourth copy concealed, and ``after + mt <= 4`` passed it.
- 包鸡 (RULES.md 7.4, app): a not-ready seat pays **each** collecting seat. The hand-built
  scenarios only had collecting seats 0 and 1, so a payee loop that skips the last seat (seat
  n-1) passed them; here the last seat collects, with 4 and with 3 players.
"""

from __future__ import annotations

import numpy as np
import pytest
from scenario_helpers import J1, J2, J3, check, pays, record, result

from zhuoji_env import hands
from zhuoji_env.observation import OBS_SIZE, block, with_features
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import kind, parse_tiles, to_counts

# ======================================================================= v2 wait value guard
GUIYANG = Rules.make("guiyang").pattern_table  # largest value: flush 10 + 龙七对 20 = 30


def v2_of(concealed, pongs="", kongs="", rivers=None):
    """One v2 observation of a seat holding ``concealed`` (3k+2 tiles) with pongs and exposed
    kongs of the kinds given, ``rivers`` ``{slot: codes}`` lying in the rivers; its v1
    ``waits`` block (the discards that leave the hand ready) worked out as v1 does
    (RULES.md 5.2: a wait of which the seat holds all four copies does not count)."""
    obs = np.zeros((1, OBS_SIZE), np.float32)
    c = to_counts(concealed).astype(np.int64)
    block(obs, "hand")[0] = c
    mt = np.zeros(27, np.int64)
    for t in parse_tiles(pongs):
        block(obs, "pong")[0, 0, t] = 1
        mt[t] = 3
    for t in parse_tiles(kongs):
        block(obs, "kong_exposed")[0, 0, t] = 1
        mt[t] = 4
    for slot, codes in (rivers or {}).items():
        block(obs, "river")[0, slot] += to_counts(codes)
    nm = len(parse_tiles(pongs)) + len(parse_tiles(kongs))
    assert c.sum() + 3 * nm == 14
    for d in np.flatnonzero(c):
        after = c.copy()
        after[d] -= 1
        block(obs, "waits")[0, d] = hands.is_ready(after, mt, nm)
    return with_features(obs, GUIYANG)


def ready_discards(v2):
    return sorted(np.flatnonzero(block(v2, "waits")[0]).tolist())


def test_wait_value_issue_hand_pong_fourth_copy_concealed():
    """Issue 33's worked hand: a pong of 5p and concealed 5p 6p6p6p 2s2s2s 3s3s3s 9m.

    Discard 9m: 5p 666p 222s 333s waits 4p, 7p (456p/567p + 66p: 平胡 1) and, on paper, 5p
    (55p + 666p 222s 333s + pong 5p: 大对子 5). But the seat holds all four 5p (one concealed,
    three in the pong), so 5p is no wait: value 1/30, not 5/30 (the bug ``after + mt <= 4``).
    live: unseen 4p 4 + 7p 4 (+ 5p 0) = 8/16.
    Discard 5p: 666p 222s 333s 9m waits 9m alone (单钓 on a 大对子 with the pong: 5/30);
    live: 3 unseen 9m /16. Other discards leave the hand not ready."""
    v2 = v2_of("5p6p6p6p2s2s2s3s3s3s9m", pongs="5p")
    assert ready_discards(v2) == sorted([kind("9m"), kind("5p")])
    value, live = block(v2, "wait_value")[0], block(v2, "live_waits")[0]
    assert np.flatnonzero(value).tolist() == ready_discards(v2)
    np.testing.assert_allclose(value[[kind("9m"), kind("5p")]], [1 / 30, 5 / 30], rtol=1e-6)
    np.testing.assert_allclose(live[[kind("9m"), kind("5p")]], [8 / 16, 3 / 16], rtol=1e-6)


def test_wait_value_flush_pong_fourth_copy_concealed():
    """Pongs of 1m, 2m and 6m, concealed 6m 7m7m7m 9s: all manzu after the 9s goes.

    Discard 9s: 6m 777m waits 5m, 8m (567m/678m + 77m: 清一色 10) and, on paper, 6m (66m + 777m:
    清大对 15), but the seat holds all four 6m (one concealed + the pong): value 10/30, not
    15/30 (the bug). live: unseen 5m 4 + 8m 4 = 8/16.
    Discard 6m: 777m 9s waits 9s (大对子 5, not flush): 5/30, live 3/16."""
    v2 = v2_of("6m7m7m7m9s", pongs="1m2m6m")
    assert ready_discards(v2) == sorted([kind("9s"), kind("6m")])
    value, live = block(v2, "wait_value")[0], block(v2, "live_waits")[0]
    np.testing.assert_allclose(value[[kind("9s"), kind("6m")]], [10 / 30, 5 / 30], rtol=1e-6)
    np.testing.assert_allclose(live[[kind("9s"), kind("6m")]], [8 / 16, 3 / 16], rtol=1e-6)
    assert np.count_nonzero(value) == 2


def test_wait_value_pong_fourth_copy_in_a_river_still_counts():
    """The other side of the guard: pongs of 2m and 6m, an exposed kong of 7p, concealed 1m 3m
    7m7m 9s. Discard 9s: 1m3m 77m waits 2m only (123m + 77m: 平胡 1). The seat holds three 2m
    (its pong), so the fourth copy is not its own: 2m is a wait (3 < 4), value 1/30, even
    though that last 2m lies in slot 2's river (the value is the pattern; live_waits says no
    copy is left: 0/16). A guard that drops waits held three times (``< 3``), or that asks
    for unseen copies, would give 0."""
    v2 = v2_of("1m3m7m7m9s", pongs="2m6m", kongs="7p", rivers={2: "2m4s"})
    assert ready_discards(v2) == [kind("9s")]
    assert block(v2, "unseen")[0, kind("2m")] == 0
    value, live = block(v2, "wait_value")[0], block(v2, "live_waits")[0]
    np.testing.assert_allclose(value[kind("9s")], 1 / 30, rtol=1e-6)
    assert live[kind("9s")] == 0
    assert np.count_nonzero(value) == 1


# ==================================================================== 包鸡 to the last seat
NOT_READY_1S = "1m1m4m4m7m5p5p8p8p3s6s9s9s1s"  # J1 of test_scenarios + 1s: discards the 1s
READY_NO_CHICKEN = "3m4m5m6p7p8p3s4s5s7s8s9s4p"  # ready on 4p; no 1s, no 2m (the flip chicken)
WINNER = "2m3m4m6p7p8p6s7s8s9m9m4s5s"  # waits 3s / 6s; holds one 2m
NOT_READY_2S = "2m2m5m5m8m3p3p6p6p9p2s5s1s"  # J2 with a 1s for its 8s: draws 8s, discards 1s


@pytest.mark.parametrize("unit", [1, 3], ids=["chicken_unit-1", "chicken_unit-3"])
def test_baoji_paid_to_the_last_seat_4p_app(unit):
    """app, 4 players, dealer 0. Seat 0 (not ready) discards the first 1s (冲锋鸡); seat 1
    (ready on 4p, no chicken) draws and discards 9p; seat 2 (not ready) draws 8s and discards
    a second 1s; seat 3 draws 3s and wins by 自摸: 234m 678p 678s 345s 99m, plain.
    Flip 1m -> chicken 2m (not golden). Collecting seats (双杀: winners and ready seats): 3 and
    1 -- the last seat collects. ``chicken_unit`` u (1, or 3 by override) scales chickens and
    the 1s unit but not hand values or the 冲锋鸡 (RULES.md 7.4: given in units).

    hu: 平胡 1 + 一扣二 1 = 2 from each of 0, 1, 2 to 3.
    chicken: seat 3 holds one 2m = u from each other seat; seat 1's total is 0 (no chicken).
    冲锋鸡: seat 0's, but seat 0 does not collect; no claim, so no 责任鸡.
    包鸡 (RULES.md 7.4): seat 0 owes its 冲锋鸡 at the 冲锋鸡 value, 3; seat 2 owes its river 1s
    at the 1s unit, u; each pays that to each collecting seat, 3 and 1.
    u = 1: s3 = 3 x 2 + 3 x 1 + 3 + 1 = 13; s1 = -2 - 1 + 3 + 1 = 1;
           s0 = -2 - 1 - 3 - 3 = -9; s2 = -2 - 1 - 1 - 1 = -5 (sum 0).
    u = 3: s3 = 6 + 9 + 3 + 3 = 21; s1 = -2 - 3 + 3 + 3 = 1;
           s0 = -2 - 3 - 3 - 3 = -11; s2 = -2 - 3 - 3 - 3 = -11 (sum 0).
    The winner deals next, streak 0. A 包鸡 loop skipping seat 3 as payee would give
    (u = 1) s3 = 9, s0 = -6, s2 = -4."""
    hands_ = {0: NOT_READY_1S, 1: READY_NO_CHICKEN, 2: NOT_READY_2S, 3: WINNER}
    actions = [
        [0, "discard", "1s"], [1, "discard", "9p"], [2, "discard", "1s"], [3, "hu"],
    ]  # fmt: skip
    over = {"chicken_unit": unit}
    rec = record(hands_, actions, preset="app", overrides=over, live="9p8s3s" + "1m")
    ledger = pays((0, 1, 2), 3, hu=2, chicken=unit)
    ledger += pays((0,), 3, bao_ji=3) + pays((0,), 1, bao_ji=3)
    ledger += pays((2,), 3, bao_ji=unit) + pays((2,), 1, bao_ji=unit)
    deltas = {1: [-9, 1, -5, 13], 3: [-11, 1, -11, 21]}[unit]
    check(rec, result("zimo", [3], "1m", 3, 0, deltas, ledger))


@pytest.mark.parametrize("ready_seat", [True, False], ids=["ready-seat-1", "winner-only"])
def test_baoji_paid_to_the_last_seat_3p_app(ready_seat):
    """app, 3 players, dealer 0: seat 0 (not ready) discards the first 1s (冲锋鸡); seat 1 draws
    and discards 9p; seat 2 (the last seat) draws 3s and wins by 自摸 (the hand above).
    Flip 1m -> chicken 2m.

    hu 2 (平胡 1 + 一扣二 1) and chicken 1 (one 2m) from each of 0, 1 to 2.
    包鸡: seat 0 owes its 冲锋鸡, 3, to each collecting seat.
    - seat 1 ready (on 4p, no chicken): collecting 2 and 1:
      s2 = 2 x 2 + 2 x 1 + 3 = 9; s1 = -2 - 1 + 3 = 0; s0 = -2 - 1 - 3 - 3 = -9.
    - seat 1 not ready (J3 without 7s, discards its drawn 9p): it owes nothing (no 1s in its
      discards or melds; concealed ones are never charged) and collects nothing:
      s2 = 4 + 2 + 3 = 9; s1 = -2 - 1 = -3; s0 = -2 - 1 - 3 = -6."""
    seat1 = READY_NO_CHICKEN if ready_seat else "3m3m6m6m9m9m1p1p4p4p7p4s2s"
    hands_ = {0: NOT_READY_1S, 1: seat1, 2: WINNER}
    actions = [[0, "discard", "1s"], [1, "discard", "9p"], [2, "hu"]]
    rec = record(hands_, actions, preset="app", overrides={"num_players": 3}, live="9p3s" + "1m")
    ledger = pays((0, 1), 2, hu=2, chicken=1) + pays((0,), 2, bao_ji=3)
    if ready_seat:
        ledger += pays((0,), 1, bao_ji=3)
        deltas = [-9, 0, 9]
    else:
        deltas = [-6, -3, 9]
    check(rec, result("zimo", [2], "1m", 2, 0, deltas, ledger))


# ============================================================== 冲锋鸡 and chicken_unit


@pytest.mark.parametrize(("flip", "chicken", "chongfeng"), [("1m", 3, 2), ("9s", 0, 4)])
def test_chongfeng_not_scaled_by_chicken_unit(flip, chicken, chongfeng):
    """guiyang with ``chicken_unit`` 3: the dealer discards the first 1s (nobody claims it: its
    冲锋鸡), the others discard what they draw (9p, 2s, 7m) and the dealer wins by 自摸 on 3s
    (234m 678p 678s 345s 99m, plain). RULES.md 7.4: 冲锋鸡 is given in units, ``chicken_unit``
    does not scale it; chickens are scaled.

    hu: 平胡 1 + 自摸 1 = 2 from each (not scaled).
    flip 1m: chicken 2m, the dealer holds one: 1 x 3 = 3; 冲锋鸡 2. Each pays 2 + 3 + 2 = 7.
    flip 9s (金鸡): 1s is the only chicken, the dealer holds none (its river 1s is the 冲锋鸡):
    chicken 0; 冲锋鸡 2 x 2 = 4 (not 12). Each pays 2 + 4 = 6.
    The dealer keeps the deal by winning: streak 0 -> 1."""
    hands_ = {0: "1s2m3m4m6p7p8p6s7s8s9m9m4s5s", 1: J1, 2: J2, 3: J3}
    actions = [
        [0, "discard", "1s"], [1, "discard", "9p"], [2, "discard", "2s"],
        [3, "discard", "7m"], [0, "hu"],
    ]  # fmt: skip
    over = {"chicken_unit": 3}
    rec = record(hands_, actions, overrides=over, live="9p2s7m3s" + flip)
    items = {"hu": 2, "chongfeng": chongfeng} | ({"chicken": chicken} if chicken else {})
    ledger = pays((1, 2, 3), 0, **items)
    each = sum(items.values())
    check(rec, result("zimo", [0], flip, 0, 1, [3 * each, -each, -each, -each], ledger))


# ====================================================== 热炮 transfer with three players
def test_rerpao_transfer_three_players_classic():
    """热炮 transfer (classic) at a 3-player table: RULES.md 11.B's hands without seat 3's filler.
    The dealer (seat 1) makes a timely 闷豆 of 7m, draws 3p as replacement and discards it;
    seat 2 wins on it (123p 456m 678s 567s 99s: 平胡 10, passport 热炮); seat 0 is not asked.

    hu 10 from seat 1. rerpao (transfer): what the void 闷豆 would have collected under 7.3,
    20 from each of the n - 1 = 2 other seats = 40 (60 at a 4-player table).
    Chickens (classic: unit 10, hand scope, a seat with chickens collects): flip 1m -> 2m;
    seat 0 holds two 2m = 20 from each of 1, 2; seat 1 one 2m = 10 from each of 0, 2; the
    void kong pays nothing.
    s0 = 40 - 10 = 30; s1 = -10 - 40 - 20 + 20 = -50; s2 = 10 + 40 - 20 - 10 = 20 (sum 0).
    The winner deals next, streak 0."""
    hands_ = {
        1: "7m7m7m7m2m3m4m5p6p7p2s3s4s9p",  # dealer, a dealt quad of 7m
        2: "1p2p4m5m6m6s7s8s5s6s7s9s9s",  # plain, waits 3p, no kong
        0: "1m2m3m4p8p4s5s8s2m6m8m4p5m",  # not ready, two 2m
    }
    actions = [[1, "angang", "7m"], [1, "discard", "3p"], [2, "hu"]]
    over = {"num_players": 3}
    rec = record(hands_, actions, preset="classic", overrides=over, dealer=1, live="1m", back="3p")
    ledger = [[1, 2, 10, "hu"], [1, 2, 40, "rerpao"]]
    ledger += pays((1, 2), 0, chicken=20) + pays((0, 2), 1, chicken=10)
    check(rec, result("ron", [2], "1m", 2, 0, [30, -50, 20], ledger))
