"""Engine behaviour (core, rerpao, fastpath, state, game) that no other test pinned: a mutation
test (round E) planted 58 small bugs in zhuoji_env/engine/{core,rerpao,fastpath,state,game}.py,
11 survived the whole suite, 7 of them change nothing observable (MUTANTS.md says why), and
these tests kill the other 4: 报听 is not offered once the seat has a meld (a concealed kong of
a dealt quad before its first discard); a concealed kong has no feeder in ``State.meld_from``
(-1, as on every kind without a meld); an inactive game of a batch of one keeps its state and
refuses an action (the fast path must not take it); ``next_dealer`` is -1 until the hand ends.

Positions are hand-built walls (``scenario_helpers.make_wall``) dealt with ``core.deal`` and
stepped with ``core.step`` at batch size 1, so the fast path and its shadow check run too."""

import dataclasses

import numpy as np
import pytest
from scenario_helpers import J1, J2, J3, make_wall

from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import kind

# the filler hand J1 with 8m for its 7m, which the dealer below holds all four of
J1_NO_7M = J1.replace("7m", "8m")

# the dealer (seat 0) holds a dealt quad of 7m: 7777m 123m 456p 234s 9p
QUAD_DEALER = "7m7m7m7m1m2m3m4p5p6p2s3s4s9p"


def _deal(rules, hands, *, live="", back="", dealer=0):
    wall = np.array([make_wall(dealer, hands, live=live, back=back)])
    return core.deal(rules, wall, dealer)


def _step(rules, st, action):
    return core.step(rules, st, np.array([action]))


def test_baoting_not_offered_after_a_concealed_kong_before_the_first_discard():
    """RULES.md 3.4: 报听 may be declared at the seat's first turn, before its first discard,
    "if it has no melds". The dealer's 14 dealt tiles allow it (discard a 7m: 777m 123m 456p
    234s 9p waits on 9p, RULES.md 5.2). After ``angang 7m`` (legal: four 7m, wall not empty,
    3.1) and the replacement draw 5s the seat is still before its first discard and discarding
    5s would leave 123m 456p 234s 9p + kong, ready on 9p, but the kong is a meld: no 报听."""
    rules = Rules.make("guiyang", baoting=True)
    st = _deal(rules, {0: QUAD_DEALER, 1: J1_NO_7M, 2: J2, 3: J3}, back="5s")
    assert st.mask[0, A.BAOTING]  # no meld yet: 报听 is legal
    assert st.mask[0, A.ANGANG + kind("7m")]
    _step(rules, st, A.ANGANG + kind("7m"))
    assert st.actor[0] == 0 and st.hand[0, 0, kind("5s")] == 1  # its turn goes on after 补牌
    assert not st.discarded[0, 0]
    assert not st.mask[0, A.BAOTING]
    # the other decisions of the turn are still there: discards of what it holds, and a hu
    # only with a winning hand (123m 456p 234s 9p 5s + kong is none)
    assert st.mask[0, A.DISCARD + kind("5s")] and st.mask[0, A.DISCARD + kind("9p")]
    assert not st.mask[0, A.HU]


def test_concealed_kong_has_no_feeder():
    """``State.meld_from`` holds the feeder of a pong or 点豆 and -1 elsewhere (state.py). A
    闷豆 (``angang``, RULES.md 4) is made from the seat's own tiles: nobody fed it, so its
    ``meld_from`` stays -1, like every kind of every seat without a meld after the deal."""
    rules = Rules.make("guiyang")
    st = _deal(rules, {0: QUAD_DEALER, 1: J1_NO_7M, 2: J2, 3: J3}, back="5s")
    assert (st.meld_from == -1).all()  # nothing melded at the deal
    _step(rules, st, A.ANGANG + kind("7m"))
    assert st.meld[0, 0, kind("7m")] == 2  # AN_KONG
    assert st.meld_from[0, 0, kind("7m")] == -1
    assert (st.meld_from == -1).all()


def test_inactive_single_game_keeps_its_state():
    """``core.step``'s contract (and ``BatchGame.step``'s): with ``active`` only those games
    move; an inactive game takes -1 and keeps its state, and a legal action passed for it is
    refused. This holds at batch size 1 too, where the fast path would otherwise take the
    dealer's discard. (No rule of RULES.md is involved: an inactive game is simply not asked.)"""
    rules = Rules.make("guiyang")
    st = _deal(rules, {0: QUAD_DEALER, 1: J1_NO_7M, 2: J2, 3: J3})
    a = np.array([A.DISCARD + kind("9p")])
    assert st.mask[0, a[0]]
    before = st.copy()
    with pytest.raises(core.IllegalActionError, match="not active"):
        core.step(rules, st, a, active=np.array([False]))
    for bad in ([1], True):  # a list of ints or one flag for all is refused, not broadcast
        with pytest.raises(ValueError, match="active must be"):
            core.step(rules, st, a, active=bad)
    assert not core.step(rules, st, np.array([-1]), active=np.array([False])).any()
    for f in dataclasses.fields(st):
        assert np.array_equal(getattr(st, f.name), getattr(before, f.name)), f.name
    core.step(rules, st, a, active=np.array([True]))  # active: the discard is made (3.2)
    assert st.river_len[0, 0] == 1 and st.river[0, 0, 0] == kind("9p")


def test_next_dealer_is_empty_until_the_hand_ends():
    """RULES.md 8.1 decides the next dealer when the hand ends; until then ``next_dealer`` is
    the empty slot -1 (state.py: "-1 marks an empty slot"). The dealer's 14 dealt tiles 123m
    456m 789m 234p 55s are a winning 平胡 (5.1), so it may ``hu`` at once (3.1: the dealt 14th
    tile counts as drawn); one winner deals next (8.1) and a dealer who wins and deals again
    has streak 0 + 1 = 1 (8.2)."""
    rules = Rules.make("guiyang")
    st = _deal(rules, {0: "1m2m3m4m5m6m7m8m9m2p3p4p5s5s", 1: J1_NO_7M, 2: J2, 3: J3})
    assert st.next_dealer[0] == -1
    assert st.mask[0, A.HU]
    assert _step(rules, st, A.HU)[0]
    assert st.next_dealer[0] == 0 and st.next_streak[0] == 1
