"""Behaviour of the environments, records, v2 features and ``rule`` that no other test pinned:
a mutation test (2026-12-06) planted 40 small bugs in them, and these tests kill the 14
non-equivalent ones that survived the rest of the suite (the SB3 carry and skip paths, the
single-agent env's opponent order, carry and last seat, the AEC penalty and reseeding, the
records' bounds and next_streak check, a dead wait's value, rule's 责任鸡 and 点豆 scores)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from scenario_helpers import make_wall
from test_env_single import TIANHU_HANDS, Greedy

from agents.rule import RuleAgent
from zhuoji_env import SingleAgentEnv
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.game import BatchGame, StepOutput
from zhuoji_env.engine.records import (
    MAX_AMOUNT,
    RecordError,
    ResultMismatch,
    compare,
    parse_result,
    replay,
)
from zhuoji_env.engine.state import PONG_MELD
from zhuoji_env.envs import SelfPlayVecEnv
from zhuoji_env.envs.aec import raw_env
from zhuoji_env.envs.common import observation_box, state_box
from zhuoji_env.observation import (
    OBS_SIZE,
    SLICES,
    STATE_SLICES,
    _own_waits,
    _shanten_features,
    block,
    with_features,
)
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import kind, to_counts


def _tianhu_wall():
    return make_wall(0, TIANHU_HANDS)  # dealer 0 holds a complete hand: 天胡 at once


def _illegal(mask) -> int:
    return int(np.flatnonzero(~np.asarray(mask, bool))[0])


# --------------------------------------------------------------------------- aec.py
def test_aec_illegal_action_after_a_hand_pays_the_penalty_alone():
    """Mutant aec.py:383 (the offender's cumulative reward not cleared): seat 0 reads its
    hand-1 score on its turn, then offends; what it reads next is the penalty alone, not the
    hand score a second time plus the penalty (TerminateIllegalWrapper's convention)."""
    env = raw_env(illegal_action="penalty", hands_per_game=2)
    env.reset(seed=0, options={"wall": _tianhu_wall(), "dealer": 0})
    assert env.agent_selection == "player_0" and env.action_mask()[A.HU]
    env.step(A.HU)  # 天胡: hand 1 over, seat 0 deals hand 2 (the dealer stays)
    assert env.agent_selection == "player_0"
    hand1 = env.records[0]["result"]["deltas"][0]
    assert hand1 > 0
    _, r1, term, _, _ = env.last()
    assert r1 == hand1 and not term
    with pytest.warns(UserWarning):
        env.step(_illegal(env.action_mask()))
    _, r2, term, _, info = env.last()
    assert term and "illegal_action" in info
    assert r2 == env.illegal_reward == -10.0
    assert r1 + r2 == hand1 - 10.0  # the episode return: the hand once, and the penalty


def test_aec_reset_without_a_seed_follows_the_last_seed_given():
    """Mutant aec.py:298 (a seed given once the generator exists does not reseed it): the
    module docs: reset() draws the next match's seed from a generator seeded by the last
    seed given."""
    a = raw_env()
    a.reset(seed=5)
    a.reset()
    want = a.state().copy()
    b = raw_env()
    b.reset(seed=7)
    b.reset()
    b.reset(seed=5)  # the last seed given is 5 again
    b.reset()
    np.testing.assert_array_equal(b.state(), want)
    b.reset(seed=5)
    b.reset()
    np.testing.assert_array_equal(b.state(), want)


# --------------------------------------------------------------------------- common.py
@pytest.mark.parametrize("hands", [1, 3, 8])
def test_the_streak_bound_is_the_documented_one(hands):
    """Mutant common.py:112 ((hands_per_game - 1) / 10): aec.py's docs give the streak's
    bound as 0 to hands_per_game / 10, in every space that holds it."""
    rules = Rules.make("guiyang", hands_per_game=hands)
    for box, sl in ((observation_box(rules), SLICES), (state_box(rules), STATE_SLICES)):
        assert box.low[sl["streak"]].tolist() == [0.0]
        assert box.high[sl["streak"]].tolist() == [np.float32(hands / 10)]
    env = raw_env(hands_per_game=hands)
    space = env.observation_space("player_0")["observation"]
    assert space.high[SLICES["streak"]].tolist() == [np.float32(hands / 10)]


# --------------------------------------------------------------------------- single.py
class _Recorder:
    """Plays the first legal action and notes the seat it was asked for."""

    def __init__(self):
        self.env = None
        self.seats = set()

    def act(self, obs, mask):
        self.seats.add(int(self.env.game.actor[0]))
        return mask.argmax(-1)


@pytest.mark.parametrize("learner", [0, 1, 3])
def test_single_opponents_j_plays_the_seat_j_plus_1_after_the_learner(learner):
    """Mutant single.py:272 (the opponent index counted the other way round): the module
    docs give ``opponents[j]`` the seat ``learner_seat + 1 + j``."""
    ops = [_Recorder() for _ in range(3)]
    env = SingleAgentEnv(learner_seat=learner, opponents=ops, hands_per_game=2)
    for p in ops:
        p.env = env
    for seed in range(3):
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, done, _, _ = env.step(int(env.action_masks().argmax()))
    for j, p in enumerate(ops):
        assert p.seats == {(learner + 1 + j) % 4}, (j, p.seats)


def test_single_illegal_first_action_still_pays_the_hand_before_it():
    """Mutant single.py:303 (the carried score dropped on an illegal action): a dealer's
    天胡 ends hand 1 before the learner (seat 1) decides; an illegal first action earns that
    hand's score plus the penalty."""
    env = SingleAgentEnv(learner_seat=1, opponents=Greedy(), hands_per_game=2)
    env.reset(seed=0, options={"wall": _tianhu_wall(), "dealer": 0})
    paid = env.records[0]["result"]["deltas"][1]
    assert paid < 0
    with pytest.warns(UserWarning):
        _, reward, term, trunc, info = env.step(_illegal(env.action_masks()))
    assert term and not trunc and "illegal_action" in info
    assert reward == paid + env.illegal_reward == paid - 10.0


def test_single_a_finished_match_is_seen_from_its_last_hands_seat():
    """Mutant single.py:259 (a seat drawn after the last hand too): with learner_seat=None
    the final step's info seat, observation and hands all belong to the seat that played the
    last hand."""
    from zhuoji_env.observation import encode_one

    env = SingleAgentEnv(learner_seat=None, hands_per_game=2)
    for seed in range(6):
        env.reset(seed=seed)
        done = False
        while not done:
            obs, _, done, _, info = env.step(int(env.action_masks().argmax()))
        last = info["hands"][-1]
        assert info["seat"] == last["seat"] == env.seat, seed
        g = env.game
        want = encode_one(g.state, 0, last["seat"], g.scores, g.hand_no, 2)
        np.testing.assert_array_equal(obs, want)


# --------------------------------------------------------------------------- sb3.py
def _sb3(**kw):
    from zhuoji_env.envs.sb3 import SB3VecEnv

    return SB3VecEnv(**kw)


def _out(b, hand_over, match_over, seat_rewards, seats):
    rewards = np.zeros((b, 4), np.int64)
    for i, r in enumerate(seat_rewards):
        rewards[i, seats[i]] = r
        rewards[i, (seats[i] + 1) % 4] = -r
    return StepOutput(
        rewards, np.array(hand_over), np.array(match_over), np.zeros((b, 4), np.int64)
    )


def test_sb3_a_hand_of_a_new_match_is_carried_to_its_first_step():
    """Mutant sb3.py:230 (every hand's score added to this step's reward): in a game whose
    episode already ended in this step (``new_ep``), a hand that ends before the learner's
    first decision of the next match belongs to that match: carried, not paid now."""
    env = _sb3(num_envs=2, seed=0, hands_per_game=3)
    env.reset()
    seats = env._seat.copy()
    out = _out(2, [True, True], [False, False], [5, 7], seats)
    rew, new_ep, done = np.zeros(2), np.array([True, False]), np.zeros(2, bool)
    env._credit(out, rew, new_ep, done, {})
    assert rew.tolist() == [0.0, 7.0]
    assert env._carry.tolist() == [5.0, 0.0]


def test_sb3_a_match_with_no_learner_decision_is_skipped_not_ended_again():
    """Mutant sb3.py:237 (every finished match ended as an episode): a match that ends in a
    game whose episode already ended in this step had no learner decision: counted in
    ``skipped_matches``, its carry dropped, and the finished episode's terminal observation
    and done flag left alone."""
    env = _sb3(num_envs=2, seed=0)
    env.reset()
    seats = env._seat.copy()
    env._carry[0] = 3.0
    out = _out(2, [True, False], [True, False], [4, 0], seats)
    terminal = {}
    rew, new_ep, done = np.zeros(2), np.array([True, False]), np.zeros(2, bool)
    env._credit(out, rew, new_ep, done, terminal)
    assert env.skipped_matches == 1
    assert terminal == {} and done.tolist() == [False, False]
    assert rew.tolist() == [0.0, 0.0] and env._carry.tolist() == [0.0, 0.0]


def test_sb3_an_illegal_first_action_still_pays_the_carried_hand():
    """Mutant sb3.py:355 (the penalty replaces the reward): the module docs: the illegal
    action's reward is illegal_reward plus the score of any hand that ended before the
    learner's first decision, not yet paid (set here as the carry such a hand leaves)."""
    env = _sb3(num_envs=2, seed=0, hands_per_game=2)
    env.reset()
    env._carry[1] = 7.0  # a hand paid at the first step (dealt ones of this kind are rare)
    masks = env.action_masks()
    acts = masks.argmax(1)
    acts[1] = _illegal(masks[1])
    with pytest.warns(UserWarning):
        _, rew, done, infos = env.step(acts)
    assert done[1] and "illegal_action" in infos[1]
    assert rew[1] == pytest.approx(7.0 - 10.0)
    assert infos[1]["episode"]["r"] == pytest.approx(-3.0)


# --------------------------------------------------------------------------- records.py
def _result(deltas):
    return {
        "end": "draw",
        "winners": [],
        "flip": None,
        "next_dealer": 0,
        "next_streak": 1,
        "deltas": deltas,
        "ledger": [],
    }


def test_a_delta_below_minus_max_amount_is_refused():
    """Mutant records.py:255 (only the upper bound checked): deltas are integers of size at
    most MAX_AMOUNT, negative ones too."""
    parse_result(_result([-MAX_AMOUNT, MAX_AMOUNT, 0, 0]), 4)  # at the bounds: taken
    with pytest.raises(RecordError, match="bad result 'deltas'"):
        parse_result(_result([-(MAX_AMOUNT + 1), 0, 0, 0]), 4)
    with pytest.raises(RecordError, match="bad result 'deltas'"):
        parse_result(_result([0, 0, MAX_AMOUNT + 1, 0]), 4)


def _finished_record(seed=0):
    g = BatchGame(Rules.make("guiyang"), 1, seed=seed, keep_records=True, auto_reset=False)
    rng = np.random.default_rng(seed)
    while True:
        out = g.step(g.random_actions(rng))
        if out.hand_over[0]:
            return out.records[0][1]


def test_a_stored_next_streak_that_differs_is_a_mismatch():
    """Mutant records.py:335 (next_streak left out of compare): a record whose result holds
    another next_streak replays to a ResultMismatch naming it."""
    rec = _finished_record()
    assert replay(rec) == rec["result"]
    bad = copy.deepcopy(rec)
    bad["result"]["next_streak"] = rec["result"]["next_streak"] + 1
    ns = rec["result"]["next_streak"]
    assert compare(bad["result"], rec["result"]) == [
        f"next_streak: record has {ns + 1}, replay gives {ns}"
    ]
    with pytest.raises(ResultMismatch, match="next_streak"):
        replay(bad)
    assert replay(bad, check=False) == rec["result"]


# --------------------------------------------------------------------------- observation.py
def test_a_wait_on_a_kind_all_held_has_no_value():
    """Mutant observation.py:535 (a 3k+2 hand's waits taken without the melds' copies): pong of
    5p, hand 5p 6p6p6p 1m1m1m 9s9s9s 2s. Discarding 2s waits on 4p and 7p (plain, 1 of
    guiyang's 30) and on 5p only on paper (the four 5p are the pong and the hand's: 大对子 5
    would need a fifth); discarding 5p waits on 2s for 大对子 (5). Nothing else is seen."""
    hand = to_counts("5p6p6p6p1m1m1m9s9s9s2s").astype(np.int16)
    meld = np.zeros((1, 27), np.int8)
    meld[0, kind("5p")] = PONG_MELD
    sh, _, _ = _shanten_features(hand[None])
    waits = _own_waits(hand[None], meld, sh)
    assert np.flatnonzero(waits[0]).tolist() == sorted([kind("5p"), kind("2s")])  # as v1
    obs = np.zeros((1, OBS_SIZE), np.float32)
    block(obs, "hand")[0] = hand
    block(obs, "pong")[0, 0, kind("5p")] = 1
    block(obs, "waits")[0] = waits[0]
    v2 = with_features(obs, Rules.make("guiyang").pattern_table)
    value, live = block(v2, "wait_value")[0], block(v2, "live_waits")[0]
    assert np.flatnonzero(value).tolist() == sorted([kind("5p"), kind("2s")])
    np.testing.assert_allclose(value[[kind("2s"), kind("5p")]], [1 / 30, 5 / 30], rtol=1e-6)
    np.testing.assert_allclose(live[[kind("2s"), kind("5p")]], [8 / 16, 3 / 16], rtol=1e-6)


# --------------------------------------------------------------------------- agents/rule.py
def _positions():
    """Real positions from rule self-play (kongs always taken, pongs of 1s passed): a turn of
    a seat whose only kong is a 点豆, and response windows on the first and a later 1s."""
    env = SelfPlayVecEnv(64, "guiyang", seed=3)
    obs, masks, seats = env.reset(seed=3)
    agent = RuleAgent(seed=1)
    found = {}
    for _ in range(400):
        ph, kc, y = block(obs, "phase"), block(obs, "kong_counts"), block(obs, "yaoji")
        ones = block(obs, "tile")[:, kind("1s")] > 0
        for g in range(env.num_envs):
            row = (obs[g : g + 1].copy(), masks[g : g + 1].copy())
            if ph[g, 0] > 0 and kc[g, 0, 2] > 0 and kc[g, 0, :2].sum() == 0:
                found.setdefault("ming", row)
            if ph[g, 1] > 0 and ones[g] and masks[g, A.PONG] and y[g, 5] > 0.5:
                found.setdefault("first1s" if y[g, 0] < 0.3 else "later1s", row)
        if len(found) == 3:
            return found
        actions = agent.act(obs, masks)
        actions[masks[:, A.KONG]] = A.KONG
        actions[masks[:, A.PONG] & ones & ~masks[:, A.KONG]] = A.PASS  # 1s stay in rivers
        obs, masks, seats, *_ = env.step(actions)
    raise AssertionError(f"positions not found: {sorted(found)}")


def test_rule_zeren_bonus_is_for_a_pong_of_the_first_1s_only():
    """Mutant rule.py:420 (the first-1s test inverted): with 责任鸡 on, a pong of the first
    1s discarded (still in the river) scores more than with it off, and nothing else moves;
    a pong of a later 1s scores the same either way."""
    pos = _positions()
    on = RuleAgent(seed=0, rules="guiyang")
    off = RuleAgent(seed=0, rules={"preset": "guiyang", "overrides": {"zeren": "off"}})
    obs, mask = pos["first1s"]
    s_on, s_off = on.advice(obs, mask)[1][0], off.advice(obs, mask)[1][0]
    assert s_on[A.PONG] > s_off[A.PONG]
    others = np.arange(A.NUM_ACTIONS) != A.PONG
    np.testing.assert_array_equal(s_on[others], s_off[others])
    obs, mask = pos["later1s"]
    np.testing.assert_array_equal(on.advice(obs, mask)[1], off.advice(obs, mask)[1])


def test_rule_a_ming_kong_is_paid_by_its_discarder_alone():
    """Mutant rule.py:283 (a 点豆's payment counted from every opponent): with dou_values
    (1, 1, 3) a 点豆 (3 from the discarder) collects what a 转弯豆 does (1 from each of three),
    so the same position scores the same whichever the kong is."""
    obs, mask = _positions()["ming"]
    as_bu = obs.copy()
    kc = block(as_bu, "kong_counts")
    kc[0, 0, 1], kc[0, 0, 2] = kc[0, 0, 2], 0
    assert not np.array_equal(as_bu, obs)
    even = RuleAgent(seed=0, rules={"preset": "guiyang", "overrides": {"dou_values": [1, 1, 3]}})
    np.testing.assert_array_equal(even.advice(obs, mask)[1], even.advice(as_bu, mask)[1])
    plain = RuleAgent(seed=0)  # guiyang's (2, 3, 1): a 点豆 collects 1, a 转弯豆 9
    assert not np.array_equal(plain.advice(obs, mask)[1], plain.advice(as_bu, mask)[1])
