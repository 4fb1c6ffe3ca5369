"""``SingleAgentEnv``: the learner's seat against fixed opponents (zhuoji_env/envs/single.py)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from scenario_helpers import make_wall

from zhuoji_env import IllegalActionError, SingleAgentEnv, replay
from zhuoji_env.engine import actions as A
from zhuoji_env.envs import RandomPolicy
from zhuoji_env.observation import OBS_SIZE, block


def play(env, seed, rng_seed=0, max_steps=10_000):
    """One episode with random learner actions: (observations, rewards, infos)."""
    rng = np.random.default_rng(rng_seed)
    obs, info = env.reset(seed=seed)
    traj = [(obs, 0.0, info)]
    for _ in range(max_steps):
        mask = env.action_masks()
        assert mask.any() and np.array_equal(mask, info["action_mask"])
        a = int(rng.choice(np.flatnonzero(mask)))
        obs, reward, term, trunc, info = env.step(a)
        assert not trunc
        traj.append((obs, reward, info))
        if term:
            return traj
    raise AssertionError("episode did not end")


@pytest.mark.parametrize(
    "kw",
    [{}, {"learner_seat": None, "hands_per_game": 3}, {"rules": "app", "num_players": 3}],
    ids=["default", "rotating-3-hands", "app-3p"],
)
def test_gymnasium_check_env(kw):
    """check_env steps with unmasked random actions: the default (penalty) mode takes them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(SingleAgentEnv(**kw))
        check_env(SingleAgentEnv(render_mode="ansi", **kw))


def test_sb3_check_env():
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb3_check_env(SingleAgentEnv(), warn=False)


def test_deterministic_with_seed():
    kw = {"learner_seat": None, "hands_per_game": 3}
    a = play(SingleAgentEnv(**kw), seed=7)
    b = play(SingleAgentEnv(**kw), seed=7)
    assert len(a) == len(b)
    for (oa, ra, ia), (ob, rb, ib) in zip(a, b, strict=True):
        assert np.array_equal(oa, ob) and ra == rb
        assert ia.keys() == ib.keys() and ia.get("hands") == ib.get("hands")
    c = play(SingleAgentEnv(**kw), seed=8)
    assert len(c) != len(a) or any(
        not np.array_equal(x[0], y[0]) for x, y in zip(a, c, strict=True)
    )
    # reset() without a seed continues the seeded generator reproducibly
    e1, e2 = SingleAgentEnv(), SingleAgentEnv()
    e1.reset(seed=3)
    e2.reset(seed=3)
    assert np.array_equal(e1.reset()[0], e2.reset()[0])


@pytest.mark.parametrize("seat", [0, 2, None])
def test_return_is_the_learners_match_score(seat):
    """Consistency check: the return against the engine's own hand deltas, and its records
    replayed by the same engine (settlement values are checked by the scenarios)."""
    env = SingleAgentEnv(learner_seat=seat, hands_per_game=3)
    for seed in range(3):
        traj = play(env, seed=seed)
        ret = sum(r for _, r, _ in traj)
        hands = [h for _, _, info in traj for h in info.get("hands", [])]
        assert [h["hand_no"] for h in hands] == [1, 2, 3]
        assert len(env.records) == 3
        want = sum(
            rec["result"]["deltas"][h["seat"]] for rec, h in zip(env.records, hands, strict=True)
        )
        assert ret == want
        for rec, h in zip(env.records, hands, strict=True):
            assert h["hand"] + h["kong"] + h["chicken"] == h["score"]
            assert replay(rec)["deltas"] == rec["result"]["deltas"]
            if seat is not None:
                assert h["seat"] == seat
        # the observation is the learner's: its own hand is in the hand block
        obs = traj[-1][0]
        assert obs.shape == (OBS_SIZE,) and obs.dtype == np.float32


class FirstLegal:
    """A scripted opponent: the lowest legal action (a batched ``act``, as the agents have)."""

    def __init__(self):
        self.calls = 0

    def act(self, obs, mask):
        self.calls += 1
        assert obs.shape == (1, OBS_SIZE) and mask.shape == (1, A.NUM_ACTIONS)
        return mask.argmax(-1)


def test_opponents_use_the_agents_batched_act():
    first = FirstLegal()

    class Last:
        calls = 0

        def act(self, obs, mask):
            Last.calls += 1
            assert mask.dtype == bool and obs.shape == (1, OBS_SIZE)
            return [int(np.flatnonzero(mask[0])[-1])]

    env = SingleAgentEnv(opponents=[first, Last(), RandomPolicy()])
    play(env, seed=0)
    assert first.calls > 0 and Last.calls > 0
    play(SingleAgentEnv(opponents=FirstLegal()), seed=1)
    with pytest.raises(ValueError, match="a sequence of 3 policies .* got a sequence of 1"):
        SingleAgentEnv(opponents=[first])
    with pytest.raises(TypeError, match=r"batched act\(obs"):
        SingleAgentEnv(opponents=lambda obs, mask: 0)

    class Cheat:
        def act(self, obs, mask):
            return (~mask).argmax(-1)

    with pytest.raises(IllegalActionError, match="opponent player_1"):
        SingleAgentEnv(opponents=Cheat()).reset(seed=0, options={"dealer": 1, "wall": _wall()})


def _wall():
    return make_wall(
        1,
        {
            1: "1m2m3m4m5m6m7m8m9m2p3p4p7p5m",
            2: "1p1p1p2s2s2s3s3s3s4s4s4s5m",
            3: "6p6p8p8p9p9p5s5s6s7s8s9s9s",
            0: "1m1m2m2m3m3m4m6m7m8m5p5p5p",
        },
    )


def test_illegal_learner_action():
    """``"raise"`` raises and leaves the environment as it was; the default ``"penalty"`` ends
    the episode with the penalty, a warning and the info."""
    env = SingleAgentEnv(illegal_action="raise")
    obs, info = env.reset(seed=1)
    mask = env.action_masks()
    bad = int(np.flatnonzero(~mask)[0])
    tried = rf"^learner \(seat 0\) tried action {bad} \({re.escape(A.describe(bad))}\), which is"
    with pytest.raises(IllegalActionError, match=tried + r" illegal in this .*; legal: \["):
        env.step(bad)
    env.step(int(np.flatnonzero(mask)[0]))  # unchanged, goes on
    pen = SingleAgentEnv(rules="classic")
    pen.reset(seed=1)
    with pytest.warns(UserWarning, match=f"learner \\(seat 0\\) tried action {bad} "):
        _, reward, term, trunc, info = pen.step(bad)
    assert reward == -100.0 and term and not trunc and info["illegal_action"] == bad
    assert info["legal_actions"] == np.flatnonzero(mask).tolist()
    assert not info["action_mask"].any() and not pen.action_masks().any()
    with pytest.raises(RuntimeError, match="episode is over"):
        pen.step(0)


TIANHU_HANDS = {
    0: "1m1m1m2m2m2m3m3m3m4m4m4m5m5m",
    1: "1p1p1p2s2s2s3s3s3s4s4s4s7p",
    2: "6p6p8p8p9p9p5s5s6s7s8s9s9s",
    3: "5m6m7m8m9m9m9m6m7m8m5p5p5p",
}


class Greedy:
    """Wins whenever it can, else plays its first legal action."""

    def act(self, obs, mask):
        return np.where(mask[:, A.HU], A.HU, mask.argmax(-1))


def test_hands_before_the_first_decision_are_paid_at_the_first_step():
    """A dealer's 天胡 before the learner (seat 1) ever decides."""
    wall = make_wall(0, TIANHU_HANDS)
    greedy = Greedy()
    env = SingleAgentEnv(learner_seat=1, opponents=greedy, hands_per_game=2)
    obs, info = env.reset(seed=0, options={"wall": wall, "dealer": 0})
    assert info["skipped_matches"] == 0 and len(env.records) == 1
    first = env.records[0]["result"]
    assert first["end"] == "zimo" and first["winners"] == [0]
    assert block(obs, "hand_no")[0] == 0.5
    mask = env.action_masks()
    _, reward, _, _, info = env.step(int(np.flatnonzero(mask)[0]))
    paid = first["deltas"][1] + sum(h["score"] for h in info["hands"][1:])
    assert reward == paid and info["hands"][0]["hand_no"] == 1


def test_a_given_wall_that_ends_before_the_learner_decides_is_refused():
    """With one hand per match, the 天胡 wall above never reaches a learner decision: reset
    says so instead of silently dealing other walls (it used to skip to another match)."""
    wall = make_wall(0, TIANHU_HANDS)
    env = SingleAgentEnv(learner_seat=1, opponents=Greedy())
    msg = (
        r"reset option 'wall' cannot be played to a learner decision: the hand dealt from it "
        r"\(dealer seat 0\) ended before the learner's first decision \(zimo, winners \[0\]\)"
    )
    with pytest.raises(ValueError, match=msg):
        env.reset(seed=0, options={"wall": wall, "dealer": 0})
    with pytest.raises(RuntimeError, match=r"call reset\(\)"):
        env.step(0)
    env.reset(seed=0)  # a dealt match still plays
    assert env.action_masks().any()


class Breakable:
    """An opponent that plays its first legal action until ``broken``, then its first illegal
    one."""

    needs_observation = False

    def __init__(self):
        self.broken = False

    def act(self, obs, mask):
        return (~mask if self.broken else mask).argmax(-1)


def test_an_opponent_failing_mid_step_stops_the_env_until_reset():
    """The opponent's error propagates unchanged; the game is left with an opponent to act, so
    the next step must not play the learner's action for that opponent's seat."""
    opponent = Breakable()
    env = SingleAgentEnv(learner_seat=0, opponents=opponent)
    env.reset(seed=0)
    opponent.broken = True
    with pytest.raises(IllegalActionError, match="opponent player_[123]"):
        env.step(int(env.action_masks().argmax()))
    assert int(env.game.actor[0]) != 0  # half-stepped: an opponent is to act
    state = env.game.state.river_len.copy()
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"an opponent failed .*call reset\(\)"):
            env.step(int(env.game.mask[0].argmax()))
    np.testing.assert_array_equal(env.game.state.river_len, state)  # nothing was played
    opponent.broken = False
    env.reset(seed=0)
    env.step(int(env.action_masks().argmax()))


def test_render_from_the_learners_seat():
    env = SingleAgentEnv(learner_seat=2, render_mode="ansi", tile_style="unicode")
    env.reset(seed=0)
    text = env.render()
    assert "player_2 [" in text and "you" in text


def test_maskable_ppo_smoke(one_torch_thread):
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import Logger

    env = SingleAgentEnv(hands_per_game=2)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0)
    model.set_logger(Logger(None, []))  # SB3's default logger makes a /tmp/SB3-* folder
    model.learn(total_timesteps=256)
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(action)]
