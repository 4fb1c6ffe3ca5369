"""Scoring that no other test pinned: a mutation test of the scoring, records and observation
code (settlement.py, records.py, observation.py, replay.py) planted 42 small bugs there, one of
them not a valid program (rewritten); of the 41 run, 39 were killed by the rest of the suite and
2 survived it: one is equivalent (the batched encoder's ``tile`` block gated on "in play"
instead of "in a claim window": the engine holds ``tile == -1`` on every turn), and this file
kills the other:

- ``base_stake`` multiplies the pass-win penalty (包牌, item ``baopai``) like every other
  payment (RULES.md 7: "All amounts are in units ... times ``base_stake``"). Settlement added
  the penalties after multiplying the ledger by ``base_stake``, and the suite let it through:
  no hand-built scenario paid a penalty at a stake above 1, and the random engine-vs-reference
  games at stake 2 never had a locked seat choose ``hu``. Pinned after a self-draw and after an
  exhaustive draw (7.1: penalties are paid whatever the ending).
"""

from __future__ import annotations

import pytest
from scenario_helpers import J1, J3, check, pays, play_out, record, result

PW_HANDS = {
    0: J1 + "8m",  # dealer: discards 8m
    1: "1m2m2m5m5m6m3p3p6p2s5s8s8s",  # not ready, no 8m / 9p
    2: "7p7p7p2p2p2p7s7s7s8m8m9p9p",  # 大对子, waits 8m / 9p
    3: J3,
}


@pytest.mark.parametrize("stake", [2, 3])
def test_pass_win_penalty_is_multiplied_by_base_stake(stake):
    """guiyang, dealer 0 with streak 1, ``base_stake`` s. Seat 2 passes its win on the dealer's
    8m (pass-locked, RULES.md 5.4), then chooses hu on seat 1's 9p while locked: the win is
    void and seat 2 pays every other seat the pattern value, 大对子 5 (5.3), + k = 1 where the
    dealer is paid (8.2): 6 to seat 0, 5 to seats 1 and 3. Play goes on; seat 2 draws 8m and
    self-draws 777p 222p 777s 888m 99p: 大对子 5 + 自摸 1 = 6 from each (7.2), + 1 from the
    dealer = 7. Flip 6s -> 7s is a chicken (7.4): seat 2 holds three, 3 from each; no other
    seat is ready (双杀), so nobody else collects.
    In units: s0 = 6 - 7 - 3 = -4; s1 = s3 = 5 - 6 - 3 = -4; s2 = -16 + 19 + 9 = 12.
    RULES.md 7: every amount, the penalty included, is times ``base_stake``: all of it x s.
    (The bug paid the penalties unscaled: 6, 5, 5 at any stake.)"""
    actions = [[0, "discard", "8m"], [2, "pass"], [1, "discard", "9p"], [2, "hu"], [2, "hu"]]
    over = {"base_stake": stake}
    rec = record(PW_HANDS, actions, overrides=over, live="9p8m" + "6s", streak=1)
    ledger = [[2, 0, 6 * stake, "baopai"], [2, 1, 5 * stake, "baopai"]]
    ledger += [[2, 3, 5 * stake, "baopai"], [0, 2, 7 * stake, "hu"]]
    ledger += pays((1, 3), 2, hu=6 * stake) + pays((0, 1, 3), 2, chicken=3 * stake)
    deltas = [-4 * stake, -4 * stake, 12 * stake, -4 * stake]
    check(rec, result("zimo", [2], "6s", 2, 0, deltas, ledger))


def test_pass_win_penalty_is_multiplied_by_base_stake_on_a_draw():
    """The same void win at ``base_stake`` 2, then nobody claims anything and the wall runs out
    (黄庄). Penalties are paid whatever the ending (7.1): 6, 5, 5 units as above. 查叫 (7.5):
    seat 2 is the only ready seat (777p 222p 777s 88m 99p waits 8m / 9p, 大对子 5), so each
    other seat pays it 5, + 1 from the dealer: 6, 5, 5 units. Both x 2: every seat nets 0,
    but the ledger shows 12, 10, 10 each way. The dealer keeps the deal without winning:
    streak stays 1 (8.2). (The bug: baopai 6, 5, 5, deltas -6, -5, +16, -5.)"""
    actions = [[0, "discard", "8m"], [2, "pass"], [1, "discard", "9p"], [2, "hu"]]
    rec = play_out(record(PW_HANDS, actions, overrides={"base_stake": 2}, live="9p", streak=1))
    ledger = [[2, 0, 12, "baopai"], [2, 1, 10, "baopai"], [2, 3, 10, "baopai"]]
    ledger += [[0, 2, 12, "chajiao"], [1, 2, 10, "chajiao"], [3, 2, 10, "chajiao"]]
    check(rec, result("draw", [], None, 0, 1, [0, 0, 0, 0], ledger))
