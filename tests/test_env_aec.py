"""The PettingZoo AEC environment ``zhuoji_v1`` (zhuoji_env/envs/aec.py)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, render_test, seed_test
from scenario_helpers import CREDIT_HANDS, CREDIT_PLAN, CREDIT_WALL, make_wall

import zhuoji_env
from zhuoji_env import IllegalActionError
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.state import RESPONSE, ROB
from zhuoji_env.observation import OBS_SIZE, STATE_SIZE
from zhuoji_env.tiles import UNICODE

VARIANTS = [
    {"rules": "guiyang"},
    {"rules": "classic"},
    {"rules": "app"},
    {"rules": "guiyang", "num_players": 3},
]
IDS = ["guiyang", "classic", "app", "guiyang-3p"]


def random_action(obs, rng):
    return int(rng.choice(np.flatnonzero(obs["action_mask"])))


@pytest.mark.parametrize("kw", VARIANTS, ids=IDS)
def test_api(kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(zhuoji_env.env(**kw), num_cycles=200)


def test_api_multi_hand_match():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(zhuoji_env.env(rules="app", hands_per_game=3), num_cycles=200)


@pytest.mark.parametrize("kw", VARIANTS, ids=IDS)
def test_seed(kw):
    seed_test(lambda: zhuoji_env.env(**kw), num_cycles=200)


def test_render():
    def ansi_ok(text):
        return isinstance(text, str) and "player_0" in text and "wall" in text

    for style in ("code", "unicode"):
        render_test(
            lambda render_mode=None, style=style: zhuoji_env.env(
                render_mode=render_mode, tile_style=style
            ),
            custom_tests={"ansi": ansi_ok},
        )


def test_render_hides_other_hands_and_concealed_kongs():
    hands = dict(CREDIT_HANDS)
    hands[0] = "5m5m5m5m1m2m3m4m6m7m8m9m2p3p"  # the dealer holds four 5m
    hands[1] = "1p1p1p2s2s2s3s3s3s4s4s4s7p"
    wall = make_wall(0, hands, live="7s2p6m7p")
    e = zhuoji_env.env(render_mode="ansi")
    e.reset(seed=0, options={"wall": wall, "dealer": 0})
    e.step(A.encode("angang", "5m"))
    e.step(A.encode("discard", "9m"))
    assert e.agent_selection == "player_1"
    text = e.render()
    assert "concealed kong (hidden)" in text
    assert "13 concealed tiles" in text  # players 2 and 3
    assert "1p1p1p7p 2s2s2s3s3s3s4s4s4s7s" in text  # the viewer (to act) sees its own hand
    assert "river: 9m" in text
    full = e.unwrapped.render_text(reveal=True)
    assert "concealed kong 5m" in full and "concealed tiles" not in full
    uni = zhuoji_env.env(render_mode="ansi", tile_style="unicode", render_all=True)
    uni.reset(seed=0)
    text = uni.render()
    assert sum(text.count(g) for g in UNICODE) == 54  # 14 + 3 x 13 tiles and "drew x"


def test_spaces_and_state():
    e = zhuoji_env.env(hands_per_game=2)
    e.reset(seed=5)
    raw = e.unwrapped
    assert raw.metadata["name"] == "zhuoji_v1" and not raw.metadata["is_parallelizable"]
    assert e.possible_agents == ["player_0", "player_1", "player_2", "player_3"]
    space = e.observation_space("player_0")
    assert space["observation"].shape == (OBS_SIZE,)
    assert e.action_space("player_2").n == A.NUM_ACTIONS
    rng = np.random.default_rng(0)
    for agent in e.agent_iter(300):
        obs, _, term, trunc, _ = e.last()
        st = raw.state()
        assert st.shape == (STATE_SIZE,) and raw.state_space.contains(st)
        for other in e.agents:
            o = e.observe(other)
            assert space.contains(o)
            if other != agent:
                assert not o["action_mask"].any()
        e.step(None if term or trunc else random_action(obs, rng))


def test_selected_agent_always_has_a_real_choice():
    """Seats with no legal claim are skipped: in a window the mask offers more than pass."""
    rng = np.random.default_rng(1)
    e = zhuoji_env.env(rules="app", hands_per_game=4)
    e.reset(seed=1)
    raw = e.unwrapped
    windows = 0
    for agent in e.agent_iter(3000):
        obs, _, term, trunc, _ = e.last()
        if term or trunc:
            e.step(None)
            continue
        mask = obs["action_mask"].astype(bool)
        assert raw.agent_name_mapping[agent] == int(raw.game.actor[0])
        if raw.game.state.phase[0] in (RESPONSE, ROB):
            windows += 1
            assert mask[A.PASS] and mask[[A.HU, A.PONG, A.KONG]].any()
        e.step(random_action(obs, rng))
    assert windows > 0


def test_rewards_are_hand_settlements_and_sum_to_match_scores():
    """Consistency check: rewards against the engine's own ledger and records replayed by the
    same engine (settlement values are checked by the scenarios)."""
    rng = np.random.default_rng(2)
    e = zhuoji_env.env(hands_per_game=3)
    e.reset(seed=2)
    raw = e.unwrapped
    totals = dict.fromkeys(e.possible_agents, 0.0)
    seen_hands = set()
    for agent in e.agent_iter():
        obs, reward, term, trunc, info = e.last()
        totals[agent] += reward
        if "result" in info:
            seen_hands.add(info["hand_no"])
            seat = raw.agent_name_mapping[agent]
            assert info["hand"] + info["kong"] + info["chicken"] == info["score"]
            assert info["result"]["deltas"][seat] == info["score"]
        e.step(None if term or trunc else random_action(obs, rng))
    assert len(raw.records) == 3
    final = np.sum([r["result"]["deltas"] for r in raw.records], axis=0)
    assert [totals[a] for a in e.possible_agents] == list(final)
    assert sum(totals.values()) == 0
    assert seen_hands <= {1, 2, 3} and 3 in seen_hands
    for rec in raw.records:
        assert zhuoji_env.replay(rec)["deltas"] == rec["result"]["deltas"]


def test_credit_scenario_rewards_and_infos():
    e = zhuoji_env.env()
    e.reset(seed=0, options={"wall": CREDIT_WALL, "dealer": 0})
    for seat, a in CREDIT_PLAN:
        assert e.agent_selection == f"player_{seat}"
        e.step(a)
    raw = e.unwrapped
    result = raw.records[0]["result"]
    assert result["end"] == "ron" and result["winners"] == [1]
    assert raw.rewards["player_0"] < 0 < raw.rewards["player_1"]
    assert [raw.rewards[a] for a in e.possible_agents] == result["deltas"]
    assert raw.infos["player_0"]["hand"] == -5  # the 大对子 paid by the discarder
    assert raw.infos["player_1"]["hand"] == 5
    assert all(e.terminations.values())


def test_reset_seed_determinism_and_unseeded_sequence():
    a, b = zhuoji_env.env(), zhuoji_env.env()
    a.reset(seed=11)
    b.reset(seed=11)
    assert np.array_equal(
        a.observe(a.agent_selection)["observation"], b.observe(b.agent_selection)["observation"]
    )
    a.reset()
    b.reset()
    assert np.array_equal(a.unwrapped.state(), b.unwrapped.state())
    c = zhuoji_env.env()
    c.reset(seed=12)
    assert not np.array_equal(a.unwrapped.game.state.wall, c.unwrapped.game.state.wall)
    # the same match as game 0 of BatchGame(seed=s)
    g = zhuoji_env.BatchGame("guiyang", 3, seed=11)
    a.reset(seed=11)
    assert np.array_equal(a.unwrapped.game.state.wall[0], g.state.wall[0])


@pytest.mark.parametrize(
    "make", [zhuoji_env.raw_env, lambda: zhuoji_env.env(illegal_action="raise")]
)
def test_illegal_action_raises_with_a_helpful_message(make):
    """``raw_env`` raises by default, and so does ``env(illegal_action="raise")``."""
    e = make()
    e.reset(seed=3)
    agent = e.agent_selection
    mask = e.observe(agent)["action_mask"]
    bad = int(np.flatnonzero(mask == 0)[0])
    tried = rf"{agent} \(seat \d\) tried action {bad} \({re.escape(A.describe(bad))}\), which is"
    with pytest.raises(IllegalActionError, match=tried + r" illegal in this .*; legal: \[") as err:
        e.step(bad)
    msg = str(err.value)
    assert agent in msg and A.describe(bad) in msg and "legal" in msg
    assert A.describe(int(np.flatnonzero(mask)[0])) in msg
    e.step(int(np.flatnonzero(mask)[0]))  # the environment is unchanged and goes on
    with pytest.raises(ValueError, match="must be an integer 0-85, got 86"):
        e.step(86)  # out of the action space, in either mode


@pytest.mark.parametrize("rules,penalty", [("guiyang", -10.0), ("classic", -100.0)])
def test_illegal_action_penalty(rules, penalty):
    """``env()``'s default: TerminateIllegalWrapper's convention, one warning per environment."""
    e = zhuoji_env.env(rules=rules, hands_per_game=2)
    e.reset(seed=4)
    offender = e.agent_selection
    mask = e.observe(offender)["action_mask"]
    bad = int(np.flatnonzero(mask == 0)[0])
    with pytest.warns(UserWarning, match=f"illegal action.*{offender} .*tried action {bad} "):
        e.step(bad)
    assert all(e.terminations.values())
    assert e.rewards[offender] == penalty
    assert all(r == 0 for a, r in e.rewards.items() if a != offender)
    info = e.infos[offender]
    assert info["illegal_action"] == bad
    assert info["legal_actions"] == np.flatnonzero(mask).tolist()
    assert f"tried action {bad} ({A.describe(bad)})" in info["message"]
    assert not e.observe(offender)["action_mask"].any()  # the episode is over
    got = {}
    for agent in e.agent_iter():
        _, reward, term, _, _ = e.last()
        assert term
        got[agent] = reward
        e.step(None)
    assert got[offender] == penalty and not e.agents
    e.reset(seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning is logged once per environment
        e.step(bad)
    assert e.rewards[offender] == penalty
    custom = zhuoji_env.env(illegal_action="penalty", illegal_reward=-1)
    custom.reset(seed=4)
    with pytest.warns(UserWarning, match=r"illegal action, the episode ends with the penalty"):
        custom.step(bad)
    assert custom.rewards[custom.agent_selection] == -1


def permute_hidden(st, observer, rng):
    """A copy of game 0 with the tiles hidden from ``observer`` dealt differently: the other
    seats' concealed tiles and the undrawn wall, shuffled together, hand sizes kept."""
    st = st.copy()
    n = st.num_players
    others = [s for s in range(n) if s != observer]
    front, back = int(st.front[0]), int(st.back[0])
    pool = [np.repeat(np.arange(27), st.hand[0, s]) for s in others]
    pool.append(st.wall[0, front : back + 1].astype(np.int64))
    pool = np.concatenate(pool)
    rng.shuffle(pool)
    pos = 0
    for s in others:
        size = int(st.hand[0, s].sum())
        st.hand[0, s] = np.bincount(pool[pos : pos + size], minlength=27)
        pos += size
    st.wall[0, front : back + 1] = pool[pos:]
    return st


@pytest.mark.parametrize("players", [4, 3])
def test_observation_does_not_leak_hidden_tiles(players):
    rng = np.random.default_rng(5)
    e = zhuoji_env.env(num_players=players, hands_per_game=2)
    raw = e.unwrapped
    checked = changed = 0
    for seed in range(3):
        e.reset(seed=seed)
        for i, _agent in enumerate(e.agent_iter()):
            obs, _, term, trunc, _ = e.last()
            if term or trunc:
                e.step(None)
                continue
            if i % 5 == 0:
                original = raw.game.state
                for observer in e.possible_agents:
                    seat = raw.agent_name_mapping[observer]
                    before = raw.observe(observer)
                    shuffled = permute_hidden(original, seat, rng)
                    changed += not np.array_equal(shuffled.hand, original.hand)
                    core.compute_masks(raw.rules, shuffled, np.arange(1))  # from the new hands
                    raw.game.state = shuffled
                    after = raw.observe(observer)
                    raw.game.state = original
                    assert np.array_equal(before["observation"], after["observation"]), observer
                    assert np.array_equal(before["action_mask"], after["action_mask"]), observer
                    checked += 1
            e.step(random_action(obs, rng))
    assert checked > 200 and changed > checked // 2


@pytest.mark.parametrize("players", [4, 3])
def test_single_observation_path_matches_the_batched_encoder(players):
    """``observe`` encodes one seat (a scalar fast path): it equals the batched encoding, over
    games played by the greedy agent (ready hands and their waits) and at random (kongs).
    A consistency check: a block both encoders get wrong passes it (block values are checked
    in test_observation_values)."""
    from agents.simple import GreedyAgent
    from zhuoji_env.observation import block, encode

    b = 8
    game = zhuoji_env.BatchGame("app", b, seed=9, num_players=players, hands_per_game=3)
    agent = GreedyAgent(seed=9)
    rng = np.random.default_rng(9)
    rows = np.arange(b)
    with_waits = with_kongs = 0
    for _ in range(400):
        for seat in range(players):
            seats = np.full(b, seat)
            full = encode(game.state, rows, seats, game.scores, game.hand_no, 3)
            with_waits += int(block(full, "waits").any(-1).sum())
            with_kongs += int(block(full, "kong_counts").any((-1, -2)).sum())
            for i in rows:
                one = encode(game.state, [i], [seat], game.scores, game.hand_no, 3)
                np.testing.assert_array_equal(one[0], full[i])
        obs = encode(game.state, rows, game.actor, game.scores, game.hand_no, 3)
        greedy = agent.act(obs, game.mask)
        game.step(np.where(rows % 2 == 0, greedy, game.random_actions(rng)))
    assert with_waits > 500 and with_kongs > 50


def test_waits_block_skips_waits_on_a_kind_held_four_times():
    """A hand whose only wait is a kind it holds four times (here in a kong) is not ready
    (RULES.md 5.2): no ``waits`` entry, on either encoding path, though its shanten is 0."""
    from zhuoji_env.engine.state import MING_KONG
    from zhuoji_env.observation import block, encode
    from zhuoji_env.tiles import parse_tiles, to_counts

    game = zhuoji_env.BatchGame("guiyang", 2, seed=1)
    st = game.state
    five_m = parse_tiles("5m")[0]
    st.meld[:, 0] = 0
    st.meld[:, 0, five_m] = MING_KONG
    st.hand[0, 0] = to_counts("4m6m1p2p3p4p5p6p7p7p")  # waits on 5m only: dead
    st.hand[1, 0] = to_counts("4m6m1p2p3p4p5p6p7p7p9s")  # discarding 9s leaves that hand
    batched = encode(st, [0, 1], [0, 0])
    for i in range(2):
        one = encode(st, [i], [0])[0]
        np.testing.assert_array_equal(one, batched[i])
        assert not block(one, "waits").any()
        assert block(one, "shanten").argmax() == 1  # shanten 0
    st.meld[:, 0, five_m] = 0  # without the kong, 5m is live again
    st.hand[:, 0, five_m] = 0
    for i, idx in ((0, five_m), (1, parse_tiles("9s")[0])):
        one = encode(st, [i], [0])[0]
        assert np.flatnonzero(block(one, "waits")).tolist() == [idx]
