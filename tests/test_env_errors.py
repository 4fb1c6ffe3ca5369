"""Bad input to the environments: each case ends as a correct result or a clear error naming what
was given and what is allowed (issue 11, "Environments"; issue 10, the actions taken)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import zhuoji_env
from zhuoji_env import SelfPlayVecEnv, SingleAgentEnv
from zhuoji_env.engine import actions as A
from zhuoji_env.envs import RandomPolicy
from zhuoji_env.observation import OBS_SIZE
from zhuoji_env.tiles import format_tiles

# what each non-integer action must say it got
NOT_INTEGERS = [
    (1.0, r"got 1\.0 \(float\)"),
    (1.9, r"got 1\.9 \(float\)"),
    (np.float32(2.0), r"got np\.float32\(2\.0\) \(float32\)"),
    (True, r"got True \(bool\)"),
    (np.bool_(True), r"got np\.True_ \(bool"),
    ("1", r"got '1' \(str\)"),
    (np.array([1]), r"got array\(\[1\]\) \(ndarray of shape \(1,\)\)"),
    (np.array(1.0), r"got array\(1\.\) \(ndarray of shape \(\)\)"),
]
ALLOWED = r"must be an integer 0-85 \(int, numpy integer or 0-d integer array\)"


def _integer_likes(a: int):
    return [a, np.int64(a), np.int8(a), np.uint16(a), np.array(a), np.array(a, dtype=np.int16)]


class Batched:
    """An opponent with the agents' batched ``act``, from a function of ``(obs, mask)``."""

    def __init__(self, fn):
        self.act = fn


# --------------------------------------------------------------------------- AEC
@pytest.mark.parametrize("make", [zhuoji_env.env, zhuoji_env.raw_env], ids=["env", "raw_env"])
def test_aec_takes_integer_likes_and_refuses_the_rest(make):
    e = make()
    e.reset(seed=2)
    for like in _integer_likes(0):  # any integer-like is that integer: the same steps follow
        e.reset(seed=2)
        mask = e.observe(e.agent_selection)["action_mask"]
        legal = int(np.flatnonzero(mask)[0])
        ref = make()
        ref.reset(seed=2)
        like = (
            type(like)(legal) if not isinstance(like, np.ndarray) else np.array(legal, like.dtype)
        )
        e.step(like)
        ref.step(legal)
        assert e.agent_selection == ref.agent_selection
        np.testing.assert_array_equal(e.unwrapped.state(), ref.unwrapped.state())
    e.reset(seed=2)
    before = e.unwrapped.state()
    agent = e.agent_selection
    for bad, said in NOT_INTEGERS + [(None, r"got None \(NoneType\)")]:
        with pytest.raises(TypeError, match=f"the action of {agent} {ALLOWED}, {said}"):
            e.step(bad)
    for bad in (86, -1, np.int64(200)):
        with pytest.raises(ValueError, match=f"must be an integer 0-85, got {int(bad)}"):
            e.step(bad)
    np.testing.assert_array_equal(e.unwrapped.state(), before)  # nothing changed
    assert e.agent_selection == agent


def test_aec_legal_zero_d_array_is_accepted():
    """The issue's case: ``np.array(a)`` of a legal ``a`` was refused as illegal."""
    e = zhuoji_env.raw_env()
    e.reset(seed=0)
    seat = e.game.state.actor[0]
    a = int(np.flatnonzero(e.action_mask())[0])
    e.step(np.array(a))
    assert e.game.state.river_len[0, seat] == 1 and e.game.state.river[0, seat, 0] == a


def test_raw_env_before_reset_after_the_end_and_unknown_agents():
    e = zhuoji_env.raw_env()
    for call, what in [
        (lambda: e.step(0), "step"),
        (lambda: e.observe("player_0"), "observe"),
        (e.state, "state"),
        (e.render_text, "rendering"),
        (e.render_picture, "rendering"),
    ]:
        with pytest.raises(RuntimeError, match=f"call reset\\(\\) before {what}"):
            call()
    e.reset(seed=1)
    with pytest.raises(ValueError, match=r"unknown agent 'player_9': the agents are \['player_0'"):
        e.observe("player_9")
    with pytest.raises(ValueError, match="unknown agent 'player_9'"):
        e.action_mask("player_9")
    rng = np.random.default_rng(0)
    for _agent in e.agent_iter():
        _, _, term, trunc, _ = e.last()
        e.step(None if term or trunc else int(rng.choice(np.flatnonzero(e.action_mask()))))
    assert not e.agents
    with pytest.raises(RuntimeError, match="the match is over .*: call reset"):
        e.step(0)
    e.reset(seed=1)  # and it plays again
    assert e.agents == e.possible_agents


@pytest.mark.parametrize(
    "seed,err,said",
    [
        ("abc", TypeError, "'abc'"),
        (1.5, TypeError, "1.5"),
        ([1, 2], TypeError, r"\[1, 2\]"),
        (True, TypeError, "True"),
        (-1, ValueError, "-1"),
    ],
)
def test_reset_seed_must_be_a_non_negative_integer(seed, err, said):
    msg = f"seed must be None or a non-negative integer, got {said}"
    for env in (zhuoji_env.raw_env(), SingleAgentEnv(), SelfPlayVecEnv(2)):
        with pytest.raises(err, match=msg):
            env.reset(seed=seed)
    with pytest.raises(err, match=msg):
        SelfPlayVecEnv(2, seed=seed)
    with pytest.raises(err, match=msg):
        _sb3(seed=seed)
    with pytest.raises(err, match=msg):
        _sb3().seed(seed)


def test_reset_seed_numpy_integer_is_that_integer():
    a, b = zhuoji_env.raw_env(), zhuoji_env.raw_env()
    a.reset(seed=np.int64(7))
    b.reset(seed=7)
    np.testing.assert_array_equal(a.state(), b.state())


def _full_wall():
    """A shuffled wall: four of each kind."""
    return np.random.default_rng(0).permutation(np.repeat(np.arange(27), 4))


@pytest.mark.parametrize(
    "options,err,match",
    [
        (
            {"dealer": 1.7, "wall": "W"},
            TypeError,
            r"dealer must be seats 0-3 \(integers\), got 1\.7",
        ),
        ({"dealer": True, "wall": "W"}, TypeError, "dealer must be seats 0-3"),
        ({"dealer": 4, "wall": "W"}, ValueError, "dealer must be seats 0-3, got 4"),
        ({"dealer": 1}, ValueError, "reset option 'dealer' needs 'wall'"),
        ({"wall": "W107"}, ValueError, r"wall must hold 108 tiles, got shape \(107,\)"),
        ({"wall": "W5"}, ValueError, "wall must hold each of the 27 kinds four times; kind 0 "),
        ({"wall": "1m2x"}, ValueError, "wall: bad tile codes"),
        ({"wall": "W27"}, ValueError, "tile kinds must be 0-26, got 0-27"),
        ({"wall": "Wf"}, TypeError, "wall must be 108 tile codes or 108 integer kinds"),
        ("dealer=1", TypeError, "options must be a dict or None"),
    ],
)
def test_reset_options_are_checked(options, err, match):
    wall = _full_wall()
    variants = {
        "W": wall,
        "W107": wall[:107],
        "W5": np.concatenate([wall[:107], [0]]),
        "W27": np.concatenate([wall[:107], [27]]),
        "Wf": wall.astype(float),
    }
    if isinstance(options, dict) and "wall" in options:
        options = {**options, "wall": variants.get(options["wall"], options["wall"])}
    for env in (zhuoji_env.raw_env(), SingleAgentEnv()):
        with pytest.raises(err, match=match):
            env.reset(seed=0, options=options)


def test_reset_wall_as_codes_or_kinds_deals_the_same():
    wall = _full_wall()
    a, b = zhuoji_env.raw_env(), zhuoji_env.raw_env()
    a.reset(seed=0, options={"wall": wall, "dealer": np.int64(2)})
    b.reset(seed=0, options={"wall": format_tiles(wall), "dealer": 2})
    np.testing.assert_array_equal(a.state(), b.state())
    assert a.game.state.dealer[0] == 2


# --------------------------------------------------------------------------- SingleAgentEnv
@pytest.mark.parametrize("mode", ["penalty", "raise"])
def test_single_takes_integer_likes_and_refuses_the_rest(mode):
    env = SingleAgentEnv(illegal_action=mode)
    ref = SingleAgentEnv(illegal_action=mode)
    for like in _integer_likes(0):
        env.reset(seed=3)
        ref.reset(seed=3)
        a = int(np.flatnonzero(env.action_masks())[0])
        like = type(like)(a) if not isinstance(like, np.ndarray) else np.array(a, like.dtype)
        got, want = env.step(like), ref.step(a)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:4] == want[1:4]
    env.reset(seed=3)
    mask = env.action_masks()
    for bad, said in NOT_INTEGERS + [(None, r"got None \(NoneType\)")]:
        with pytest.raises(TypeError, match=f"the learner's action \\(seat 0\\) {ALLOWED}, {said}"):
            env.step(bad)
    with pytest.raises(ValueError, match="must be an integer 0-85, got 86"):
        env.step(86)
    np.testing.assert_array_equal(env.action_masks(), mask)  # not taken as illegal: unchanged


def test_single_step_and_rendering_before_reset():
    env = SingleAgentEnv()
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        env.step(0)
    for render in (env.render_text, env.render_picture):
        with pytest.raises(RuntimeError, match=r"^call reset\(\) before rendering$"):
            render()


def test_opponent_names_are_refused_at_construction():
    msg = r"got the string 'rule': pass agents.make_agent\('rule'\) instead"
    with pytest.raises(TypeError, match=msg):
        SingleAgentEnv(opponents="rule")
    with pytest.raises(TypeError, match=r"opponents\[1\] .*got the string 'rule'"):
        SingleAgentEnv(opponents=[RandomPolicy(), "rule", RandomPolicy()])
    with pytest.raises(TypeError, match=msg):
        _sb3(opponent="rule")
    env = _sb3()
    with pytest.raises(TypeError, match=msg):
        env.opponent = "rule"  # replaced between rollouts: checked the same way
    with pytest.raises(TypeError, match=r"must have a batched act\(obs"):
        env.set_attr("opponent", lambda obs, mask: mask.argmax(1))


@pytest.mark.parametrize(
    "answer,err,match",
    [
        (lambda m: None, TypeError, r"must be 1 action \(integers\), got None"),
        (lambda m: [0, 1], ValueError, r"must be 1 action \(shape \(1,\)\), got shape \(2,\)"),
        (lambda m: m.argmax(-1) + 0.5, TypeError, "must be integers 0-85, got an array of dtype"),
        (lambda m: ["0"], TypeError, "must be integers 0-85"),
        (lambda m: [99], ValueError, "must be integers 0-85, got 99 at index 0"),
    ],
)
def test_single_opponent_answers_are_checked(answer, err, match):
    env = SingleAgentEnv(opponents=Batched(lambda obs, mask: answer(mask)))
    with pytest.raises(err, match="the actions of opponent player_[123] .*" + match):
        env.reset(seed=0, options={"wall": _full_wall(), "dealer": 1})


def test_single_opponent_integer_like_answers_are_taken():
    """A list, a numpy integer, a 0-d array inside a list: all the same action."""
    runs = []
    for wrap in (lambda a: [int(a)], lambda a: np.array([a], np.int8), lambda a: [np.array(a)]):
        env = SingleAgentEnv(opponents=Batched(lambda obs, mask, w=wrap: w(mask[0].argmax())))
        obs, _ = env.reset(seed=0, options={"wall": _full_wall(), "dealer": 1})
        runs.append((obs, env.game.state.river_len.copy()))
    for obs, rl in runs[1:]:
        np.testing.assert_array_equal(obs, runs[0][0])
        np.testing.assert_array_equal(rl, runs[0][1])


# --------------------------------------------------------------------------- SB3VecEnv
def _sb3(**kw):
    from zhuoji_env.envs.sb3 import SB3VecEnv

    return SB3VecEnv(**{"num_envs": 3, **kw})


def test_sb3_order_of_calls():
    env = _sb3(seed=0)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        env.step(np.zeros(3, np.int64))
    env.reset()
    with pytest.raises(RuntimeError, match=r"step_wait\(\) needs the actions of step_async"):
        env.step_wait()
    acts = env.action_masks().argmax(1)
    env.step_async(acts)
    env.step_wait()
    with pytest.raises(RuntimeError, match="step_wait"):
        env.step_wait()  # the actions are used once


def test_sb3_actions_are_checked():
    env = _sb3(seed=0)
    env.reset()
    masks = env.action_masks()
    acts = masks.argmax(1)
    with pytest.raises(
        ValueError, match=r"actions must be 3 actions \(shape \(3,\)\), got shape \(2,\)"
    ):
        env.step(acts[:2])
    with pytest.raises(
        TypeError, match="actions must be integers 0-85, got an array of dtype float64"
    ):
        env.step(acts + 0.9)
    with pytest.raises(TypeError, match="actions must be integers 0-85"):
        env.step(["1", "2", "3"])
    with pytest.raises(TypeError, match="actions must be integers 0-85"):
        env.step(np.ones(3, bool))
    with pytest.raises(ValueError, match="actions must be integers 0-85, got 86 at index 1"):
        env.step(np.array([0, 86, 0]))
    np.testing.assert_array_equal(env.action_masks(), masks)  # nothing moved
    twin = _sb3(seed=0)
    twin.reset()
    a = env.step([np.int64(x) for x in acts])  # a list of numpy integers, and a [B, 1] column
    b = twin.step(acts[:, None])
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_sb3_render_index():
    env = _sb3(seed=0)
    env.reset()
    assert "player_0" in env.render(mode="ansi", index=2)
    for bad in (99, -1, 1.0, True):
        with pytest.raises(ValueError, match=f"index must be a game 0-2, got {bad!r}"):
            env.render(mode="ansi", index=bad)


@pytest.mark.parametrize(
    "answer,err,match",
    [
        (lambda m: None, TypeError, r"actions \(integers\), got None"),
        (lambda m: np.zeros(m.shape[0] + 1, np.int64), ValueError, "got shape"),
        (lambda m: m.argmax(-1).astype(float), TypeError, "dtype float64"),
    ],
)
def test_sb3_opponent_answers_are_checked(answer, err, match):
    env = _sb3(seed=0, opponent=Batched(lambda obs, mask: answer(mask)), learner_seat=None)
    with pytest.raises(err, match="the actions of the opponent must be .*" + match):
        for _ in range(5):
            env.reset()


# --------------------------------------------------------------------------- SelfPlayVecEnv
def test_selfplay_walls_dealers_and_actions_are_checked():
    env = SelfPlayVecEnv(2, seed=0)
    wall = _full_wall()
    with pytest.raises(ValueError, match="walls must hold 2 walls .one per game., got 3"):
        env.reset(options={"walls": [wall] * 3})
    with pytest.raises(ValueError, match=r"walls\[1\] must hold 108 tiles"):
        env.reset(options={"walls": [wall, wall[:100]]})
    with pytest.raises(ValueError, match=r"dealers must be one seat or 2 seats, got shape \(3,\)"):
        env.reset(options={"walls": [wall, wall], "dealers": [0, 1, 2]})
    with pytest.raises(ValueError, match="'dealers' needs 'walls'"):
        env.reset(options={"dealers": [0, 1]})
    _, masks, _ = env.reset(options={"walls": [wall, format_tiles(wall)], "dealers": [3, 1]})
    assert env.game.state.dealer.tolist() == [3, 1]
    with pytest.raises(ValueError, match=r"actions must be 2 actions \(shape \(2,\)\)"):
        env.step(masks.argmax(1)[:1])
    with pytest.raises(TypeError, match="actions must be integers 0-85"):
        env.step(masks.argmax(1) * 1.0)
    env.step(list(masks.argmax(1)))


def test_one_random_policy():
    from agents import RandomAgent, make_agent

    assert RandomAgent is RandomPolicy
    agent = make_agent("random", seed=3)
    assert isinstance(agent, RandomPolicy) and agent.name == "random"
    mask = np.zeros((4, A.NUM_ACTIONS), bool)
    mask[:, [5, 84]] = True
    a = agent.act(None, mask)  # the environments pass obs=None (needs_observation is False)
    b = RandomPolicy(3).act(np.zeros((4, OBS_SIZE), np.float32), mask)
    np.testing.assert_array_equal(a, b)
    assert set(a.tolist()) <= {5, 84}


# --------------------------------------------------------------------------- review fixes
def test_unknown_reset_options_are_refused():
    wall = _full_wall()
    allowed = "the options are 'wall' and 'dealer'"
    with pytest.raises(ValueError, match=f"unknown reset option 'walls': {allowed}"):
        SingleAgentEnv().reset(seed=0, options={"walls": [wall]})
    with pytest.raises(ValueError, match=f"unknown reset option 'nosuch': {allowed}"):
        zhuoji_env.raw_env().reset(options={"nosuch": 1})
    with pytest.raises(ValueError, match="unknown reset option 'options'"):
        SingleAgentEnv().reset(seed=0, options={"options": 1})  # only the AEC env lets it by
    with pytest.raises(
        ValueError, match="unknown reset option 'wall': the options are 'walls' and 'dealers'"
    ):
        SelfPlayVecEnv(2).reset(seed=0, options={"wall": [wall, wall]})
    env = zhuoji_env.raw_env()
    env.reset(seed=0, options={"options": 1})  # what PettingZoo's api_test passes
    env.reset(seed=0, options={"options": 1, "wall": wall, "dealer": 2})
    assert int(env.game.state.dealer[0]) == 2


@pytest.mark.parametrize(
    "value,err,said",
    [
        (float("nan"), ValueError, "nan"),
        (float("inf"), ValueError, "inf"),
        ("a", TypeError, r"'a' \(str\)"),
        (True, TypeError, r"True \(bool\)"),
        (None, TypeError, r"None \(NoneType\)"),
    ],
)
def test_rewards_must_be_finite_numbers(value, err, said):
    msg = f"illegal_reward must be a finite number, got {said}"
    if value is not None:  # None is the default illegal_reward
        for make in (zhuoji_env.env, SingleAgentEnv, _sb3):
            with pytest.raises(err, match=msg):
                make(illegal_reward=value)
    with pytest.raises(err, match=f"reward_scale must be a finite number > 0, got {said}"):
        SelfPlayVecEnv(2, reward_scale=value)


def test_reward_scale_must_be_positive_and_numbers_are_taken():
    for bad in (0, -0.5):
        with pytest.raises(
            ValueError, match=f"reward_scale must be a finite number > 0, got {bad}"
        ):
            SelfPlayVecEnv(2, reward_scale=bad)
    assert SelfPlayVecEnv(2, reward_scale=np.float32(0.5)).reward_scale == 0.5
    assert zhuoji_env.raw_env(illegal_reward=np.int64(-3)).illegal_reward == -3.0
    assert type(SingleAgentEnv(illegal_reward=-2).illegal_reward) is float


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_num_envs_is_named(bad):
    msg = f"num_envs must be an integer >= 1, got {bad!r}"
    with pytest.raises(ValueError, match=msg):
        SelfPlayVecEnv(bad)
    with pytest.raises(ValueError, match=msg):
        _sb3(num_envs=bad)


@pytest.mark.parametrize(
    "make,bad,own",
    [
        (SingleAgentEnv, "seat", "learner_seat"),
        (zhuoji_env.env, "rulez", "rules"),
        (SelfPlayVecEnv, "num_player", "num_envs"),
        (_sb3, "opponents", "opponent"),
    ],
    ids=["single", "env", "selfplay", "sb3"],
)
def test_an_unknown_keyword_names_the_arguments_and_the_switches(make, bad, own):
    with pytest.raises(ValueError) as e:
        make(**{bad: 1})
    msg = str(e.value)
    assert f"unknown keyword {bad!r}: neither an argument of " in msg
    if make is zhuoji_env.env:  # named as the user called it, beside PettingZoo's raw_env
        assert msg.startswith("zhuoji_env.env() / raw_env: unknown keyword")
    assert re.search(rf"\(.*\b{own}\b.*\) nor a rule switch \(num_players, ", msg)
    assert "base_stake)" in msg


def test_selfplay_step_before_reset():
    env = SelfPlayVecEnv(2, seed=0)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        env.step(np.zeros(2, np.int64))
    _, masks, _ = env.reset()
    env.step(masks.argmax(1))


def test_sb3_step_async_twice_and_indices():
    env = _sb3(seed=0)
    env.reset()
    acts = env.action_masks().argmax(1)
    env.step_async(acts)
    with pytest.raises(
        RuntimeError, match=r"step_async\(actions\) was called twice: call step_wait\(\) after"
    ):
        env.step_async(acts)
    env.step_wait()  # the first actions are still pending
    env.step(env.action_masks().argmax(1))
    for bad in ([9], 3, [0, -1], [1.0]):
        last = bad[-1] if isinstance(bad, list) else bad
        msg = f"indices must be a game 0-2, got {last!r}"
        with pytest.raises(ValueError, match=re.escape(msg)):
            env.get_attr("num_envs", indices=bad)
        with pytest.raises(ValueError, match=re.escape(msg)):
            env.set_attr("render_mode", None, indices=bad)
        with pytest.raises(ValueError, match=re.escape(msg)):
            env.env_method("action_masks", indices=bad)
        with pytest.raises(ValueError, match=re.escape(msg)):
            env.env_is_wrapped(object, indices=bad)
    with pytest.raises(TypeError, match="indices must be None, a game 0-2 or a sequence"):
        env.get_attr("num_envs", indices="0")
    assert env.get_attr("num_envs", indices=np.int64(2)) == [3]
    assert len(env.env_method("action_masks", indices=[0, 2])) == 2
    assert env.env_is_wrapped(object) == [False] * 3


def test_render_viewer_must_be_a_seat_as_for_the_picture():
    """``render_text`` and ``render(viewer=...)`` check the viewer as ``render_picture`` does
    (9 was an IndexError, -1 showed seat 3, 'a' failed in int())."""
    from zhuoji_env.envs.render import render_table

    e = zhuoji_env.raw_env(render_mode="ansi")
    e.reset(seed=0)
    for bad in (9, -1, "a", True, 1.0):
        for call in (e.render_text, e.render_picture, e.render):
            with pytest.raises(
                ValueError, match=r"viewer must be .*a seat 0-3.*got " + re.escape(repr(bad))
            ):
                call(viewer=bad)
        with pytest.raises(ValueError, match="viewer must be a seat 0-3 or None"):
            render_table(e.rules, e.game.state, viewer=bad)
    assert "player_2 [" in e.render_text(viewer=np.int64(2))


def test_raw_env_action_mask_before_reset():
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before action_mask\(\)$"):
        zhuoji_env.raw_env().action_mask()


@pytest.mark.parametrize(
    "make,name",
    [
        (lambda v: zhuoji_env.env(render_all=v), "render_all"),
        (lambda v: zhuoji_env.raw_env(render_all=v), "render_all"),
        (lambda v: SingleAgentEnv(render_all=v), "render_all"),
        (lambda v: SelfPlayVecEnv(2, encode_obs=v), "encode_obs"),
        (lambda v: SelfPlayVecEnv(2, keep_records=v), "keep_records"),
    ],
)
def test_boolean_options_must_be_bools(make, name):
    """``render_all='no'`` is truthy: it showed every concealed hand."""
    for bad in ("no", 0, 1, None, np.array([True])):
        with pytest.raises(TypeError, match=f"^{name} must be True or False, got "):
            make(bad)
    make(True)
    make(np.bool_(False))


def test_bools_in_a_list_of_actions_are_refused():
    """``np.asarray([True, 1, 6, 0])`` is an integer array: the bool must not play action 1."""
    env = SelfPlayVecEnv(4, seed=0)
    _, masks, _ = env.reset(seed=0)
    acts = [int(a) for a in masks.argmax(1)]
    state = env.game.state.river_len.copy()
    for bad, j, said in [
        ([True, *acts[1:]], 0, r"True \(bool\)"),
        ((*acts[:2], np.bool_(False), acts[3]), 2, r"np\.False_ \(bool"),
        ([*acts[:3], np.array(True)], 3, r"array\(True\) \(ndarray of shape \(\)\)"),
        ([[a] for a in acts[:3]] + [[True]], 3, r"True \(bool\)"),
    ]:
        with pytest.raises(
            TypeError, match=rf"actions\[{j}\] must be an integer 0-85 .*got {said}"
        ):
            env.step(bad)
    np.testing.assert_array_equal(env.game.state.river_len, state)  # nothing moved
    env.step(acts)  # Python integers are still taken


def test_wall_as_a_numpy_string_array():
    wall = _full_wall()
    codes = np.array([format_tiles([k]) for k in wall])
    a, b = SingleAgentEnv(), SingleAgentEnv()
    obs_a, _ = a.reset(seed=0, options={"wall": codes, "dealer": 1})
    obs_b, _ = b.reset(seed=0, options={"wall": wall, "dealer": 1})
    np.testing.assert_array_equal(obs_a, obs_b)
    e = zhuoji_env.raw_env()
    e.reset(seed=0, options={"wall": codes})
    np.testing.assert_array_equal(e.game.state.wall[0], wall)
    v = SelfPlayVecEnv(2, seed=0)
    v.reset(options={"walls": np.stack([codes, codes[::-1]])})
    np.testing.assert_array_equal(v.game.state.wall, [wall, wall[::-1]])
    with pytest.raises(ValueError, match="wall: bad tile codes"):
        a.reset(options={"wall": np.array(["xx"] * 108)})


def test_random_policy_masks_must_be_bool_or_0_1():
    """A string mask made every action legal (any non-empty string is true)."""
    mask = np.zeros((2, A.NUM_ACTIONS), dtype=bool)
    mask[:, 5] = True
    p = RandomPolicy(0)
    with pytest.raises(TypeError, match="mask must be bools or the numbers 0 and 1, got dtype <U"):
        p.act(None, np.where(mask, "1", "0"))
    with pytest.raises(ValueError, match=r"mask must be bools or .*, got the values \[0.5\]"):
        p.act(None, mask * 0.5)
    with pytest.raises(ValueError, match=r"mask must be bools or .*, got the values \[2\]"):
        p.act(None, mask * 2)
    with pytest.raises(TypeError, match="agent seed must be"):
        RandomPolicy(True)
    assert p.act(None, mask.astype(np.int8)).tolist() == [5, 5]
    assert p.act(None, mask * 1.0).tolist() == [5, 5]
    assert p.act(None, mask[0].tolist()) == 5


def test_render_reveal_must_be_a_bool():
    """``render(reveal='no')`` is truthy: it showed every seat's concealed hand."""
    aec = zhuoji_env.raw_env(render_mode="ansi")
    aec.reset(seed=0)
    single = SingleAgentEnv(render_mode="ansi")
    single.reset(seed=0)
    for call in (
        aec.render,
        aec.render_text,
        aec.render_picture,
        single.render_text,
        single.render_picture,
    ):
        with pytest.raises(TypeError, match=r"^reveal must be True or False, got 'no'"):
            call(reveal="no")
    assert aec.render(reveal=False) == aec.render_text()


def test_sb3_has_no_reset_options_and_says_so():
    """SB3's ``set_options`` stored options that ``reset`` never read: a bogus wall dealt the
    seed's games without a word."""
    env = _sb3(seed=0)
    first = env.reset()
    for bad in ({"wall": "1m" * 108}, [{}, {"dealer": 1}, {}]):
        with pytest.raises(ValueError, match=r"^SB3VecEnv takes no reset options, got "):
            env.set_options(bad)
    for empty in (None, {}, [{}, {}, {}]):
        env.set_options(empty)
    env.seed(0)
    assert (env.reset() == first).all()


def test_an_opponent_class_is_refused_at_construction():
    msg = r"^opponents? must be a policy object, got the class RandomPolicy: pass an instance"
    with pytest.raises(TypeError, match=msg):
        SingleAgentEnv(opponents=RandomPolicy)
    with pytest.raises(TypeError, match=msg):
        _sb3(opponent=RandomPolicy)
    SingleAgentEnv(opponents=RandomPolicy()).reset(seed=0)
