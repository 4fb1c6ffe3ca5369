"""The v2 observation blocks (``observation.features``) against the engine state: unseen copies
counted from the other hands, their concealed kongs and the wall; the passport from the melds
and 报听; the waits' values by trying every kind with the hand checker."""

import numpy as np
import pytest

from agents import make_agent
from zhuoji_env import hands
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.settlement import meld_tiles
from zhuoji_env.engine.state import AN_KONG, BU_KONG, MING_KONG, ROB
from zhuoji_env.envs import SelfPlayVecEnv
from zhuoji_env.observation import (
    FEATURES_SIZE,
    OBS_SIZE,
    OBS_SIZES,
    STATE_SIZE,
    VERSION_V2,
    block,
    features,
    with_features,
)
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import kind


def reference(st, g, seat, table):
    """unseen [27], passport [n], wait_value [27], live_waits [27] of one seat, the slow way."""
    n = st.num_players
    hidden_from_seat = np.zeros(27, int)
    for s in range(n):
        if s != seat:
            hidden_from_seat += st.hand[g, s]
            hidden_from_seat += 4 * (st.meld[g, s] == AN_KONG)
    live = st.wall[g, st.front[g] : st.back[g] + 1]
    hidden_from_seat += np.bincount(live, minlength=27)
    if st.phase[g] == ROB and seat != st.turn_seat[g]:  # the added tile, shown to every seat
        hidden_from_seat[st.tile[g]] -= 1
    passport = [
        bool(np.isin(st.meld[g, (seat + j) % n], [AN_KONG, BU_KONG, MING_KONG]).any())
        or st.baoting[g, (seat + j) % n] > 0
        for j in range(n)
    ]
    c = st.hand[g, seat].astype(int)
    mt = meld_tiles(st.meld[g, seat]).astype(int)
    nm = int((st.meld[g, seat] > 0).sum())
    top = max(table["flush"] + table["longqidui"], 2 * table["dandiao"])

    def wins(h):
        """(value, kind) of every kind completing 3k+1 hand ``h``."""
        out = []
        for w in range(27):
            if h[w] + mt[w] < 4:
                won = h.copy()
                won[w] += 1
                if hands.is_win(won, nm):
                    out.append((hands.hand_value(won, mt, nm, table) / top, w))
        return out

    value, livew = np.zeros(27), np.zeros(27)
    if c.sum() % 3 == 1:
        for v, w in wins(c):
            value[w], livew[w] = v, hidden_from_seat[w] / 4
    else:
        for d in np.flatnonzero(c):
            after = c.copy()
            after[d] -= 1
            found = wins(after)
            if found:
                value[d] = max(v for v, _ in found)
                livew[d] = sum(hidden_from_seat[w] for _, w in found) / 16
    return hidden_from_seat / 4, passport, value, livew


@pytest.mark.parametrize(("preset", "players"), [("guiyang", 4), ("app", 3)])
def test_features_match_the_state(preset, players):
    rules = Rules.make({"preset": preset, "overrides": {"num_players": players}})
    table = rules.pattern_table
    env = SelfPlayVecEnv(12, rules, seed=4)
    obs, masks, seats = env.reset(seed=4)
    agent = make_agent("rule", seed=1, rules=rules)
    checked = ready = ready_turn = passports = 0
    for _ in range(150):
        f = features(obs, table)
        st = env.game.state
        for g in range(env.num_envs):
            if st.phase[g] >= 4:
                continue
            unseen, passport, value, live = reference(st, g, int(seats[g]), table)
            row = np.concatenate([obs[g], f[g]])[None]
            np.testing.assert_allclose(block(row, "unseen")[0], unseen, err_msg=f"game {g}")
            assert block(row, "passport")[0, :players].tolist() == passport
            np.testing.assert_allclose(block(row, "wait_value")[0], value, rtol=1e-6)
            np.testing.assert_allclose(block(row, "live_waits")[0], live, rtol=1e-6)
            checked += 1
            ready += value.any()
            ready_turn += value.any() and st.hand[g, seats[g]].sum() % 3 == 2
            passports += any(passport)
        actions = agent.act(obs, masks)
        kongs = masks[:, A.ANGANG : A.BUGANG + 27].any(1) | masks[:, A.KONG]
        actions[kongs] = np.argmax(masks[kongs, A.ANGANG :], 1) + A.ANGANG  # every kong offered
        obs, masks, seats, *_ = env.step(actions)
    assert checked > 1000 and ready > 50 and ready_turn > 20 and passports > 50


@pytest.mark.parametrize("players", [4, 3])
def test_a_rob_windows_added_tile_is_not_unseen(players):
    """The robber sees the fourth 5m added to the pong (the ``tile`` block), still in the bugang
    seat's hand: ``unseen`` counted it, and ``live_waits`` put the robber's 5m wait at 1/4."""
    from test_belief import rob_position

    from zhuoji_env.observation import encode_one

    rules, st = rob_position(players)
    table = rules.pattern_table
    for seat in range(players):
        obs = encode_one(st, 0, seat)
        row = np.concatenate([obs, features(obs[None], table)[0]])[None]
        unseen, _, value, live = reference(st, 0, seat, table)
        np.testing.assert_allclose(block(row, "unseen")[0], unseen)
        np.testing.assert_allclose(block(row, "live_waits")[0], live, rtol=1e-6)
    assert block(row, "unseen")[0, kind("5m")] == 0  # 3 in the pong and the one shown
    robber = encode_one(st, 0, 2)
    robber_row = np.concatenate([robber, features(robber[None], table)[0]])[None]
    assert block(robber_row, "live_waits")[0, kind("5m")] == 0


def test_v2_is_v1_then_features():
    rules = Rules.make("guiyang")
    env = SelfPlayVecEnv(4, rules, seed=0)
    obs, _, _ = env.reset(seed=0)
    v2 = with_features(obs, rules.pattern_table)
    assert v2.shape == (4, OBS_SIZES[VERSION_V2]) == (4, OBS_SIZE + FEATURES_SIZE)
    assert np.array_equal(v2[:, :OBS_SIZE], obs)
    assert np.array_equal(block(v2, "hand"), block(obs, "hand"))
    with pytest.raises(ValueError, match="only in zhuoji-obs-v2"):
        block(obs, "unseen")
    with pytest.raises(ValueError, match="v1 observations"):
        features(v2, rules.pattern_table)


def test_an_unknown_block_lists_the_blocks():
    """It was a bare KeyError('bogus')."""
    obs = np.zeros((2, OBS_SIZE), np.float32)
    with pytest.raises(
        ValueError, match=r"^unknown block 'bogus': the blocks are \['hand', 'pong'"
    ):
        block(obs, "bogus")
    state = np.zeros((2, STATE_SIZE), np.float32)
    with pytest.raises(ValueError, match=r"^unknown block 'bogus': the blocks are \[.*'flip'\]$"):
        block(state, "bogus")
    with pytest.raises(
        ValueError, match=r"^unknown block 'all_hands': the blocks are \[.*'live_waits'\]$"
    ):
        block(obs, "all_hands")
    assert block(state, "all_hands").shape == (2, 4, 27)


def test_worked_example_with_a_concealed_kong():
    """1s1s1s 3m3m3m 9s9s 5p5p and a concealed kong of 7p (闷豆), one 9s in slot 2's river, slot
    1 declared 硬报: waiting on 9s and 5p for 大对子 (5 of guiyang's largest 30), with 1 and 2
    copies unseen; holding also a drawn 2m, only its discard leaves the hand ready."""
    obs = np.zeros((2, OBS_SIZE), np.float32)
    for k, n in {"1s": 3, "3m": 3, "9s": 2, "5p": 2}.items():
        block(obs, "hand")[:, kind(k)] = n
    block(obs, "kong_concealed_own")[:, kind("7p")] = 1
    block(obs, "kong_counts")[:, 0, 0] = 1
    block(obs, "river")[:, 2, kind("9s")] = 1
    block(obs, "baoting")[:, 1, 0] = 1
    block(obs, "waits")[0, [kind("9s"), kind("5p")]] = 1  # as v1 encodes them
    block(obs, "hand")[1, kind("2m")] = 1
    block(obs, "waits")[1, kind("2m")] = 1
    v2 = with_features(obs, Rules.make("guiyang").pattern_table)
    unseen = block(v2, "unseen") * 4
    assert unseen[0, kind("7p")] == 0 and unseen[0, kind("9s")] == 1 and unseen[0, kind("1s")] == 1
    assert unseen[1, kind("2m")] == 3 and unseen[0, kind("2m")] == 4
    assert block(v2, "passport")[0].tolist() == [1, 1, 0, 0]
    value, live = block(v2, "wait_value"), block(v2, "live_waits")
    assert np.flatnonzero(value[0]).tolist() == sorted([kind("9s"), kind("5p")])
    np.testing.assert_allclose(value[0, [kind("9s"), kind("5p")]], [5 / 30, 5 / 30])
    np.testing.assert_allclose(live[0, [kind("9s"), kind("5p")]], [1 / 4, 2 / 4])
    assert np.flatnonzero(value[1]).tolist() == [kind("2m")]
    np.testing.assert_allclose([value[1, kind("2m")], live[1, kind("2m")]], [5 / 30, 3 / 16])
