"""Vector environments: ``SelfPlayVecEnv`` (per-seat credit) and ``SB3VecEnv`` (envs/vector.py)."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pytest
from scenario_helpers import CREDIT_PLAN, CREDIT_WALL

from zhuoji_env import IllegalActionError, SelfPlayVecEnv
from zhuoji_env.engine import actions as A
from zhuoji_env.observation import OBS_SIZE, block, encode


# --------------------------------------------------------------------------- SelfPlayVecEnv
def test_selfplay_shapes_and_observations():
    """Shapes, masks and zero-sum rewards; the observations are compared with the encoder's own
    output, a consistency check (values: test_observation_values)."""
    env = SelfPlayVecEnv(8, seed=0, num_players=3)
    obs, masks, seats = env.reset(seed=0)
    assert obs.shape == (8, OBS_SIZE) and obs.dtype == np.float32
    assert masks.shape == (8, A.NUM_ACTIONS) and masks.dtype == bool
    rng = np.random.default_rng(0)
    for _ in range(50):
        g = env.game
        assert np.array_equal(seats, g.actor)
        assert np.array_equal(obs, encode(g.state, np.arange(8), seats, g.scores, g.hand_no, 1))
        assert np.array_equal(masks, g.mask) and masks.any(1).all()
        assert (block(obs, "to_act")[:, 0] == 1).all()  # the decider is always slot 0
        obs, masks, seats, rewards, dones, infos = env.step(env.random_actions(rng))
        assert rewards.shape == (8, 3) and dones.shape == (8,)
        assert (rewards[~dones] == 0).all() and (rewards.sum(1) == 0).all()


def test_credit_goes_to_each_seats_own_last_decision():
    """Seat 0 feeds seat 1's win: the feeding discard carries the loss, the win the gain."""
    env = SelfPlayVecEnv(2, seed=0)
    obs, masks, seats = env.reset(options={"walls": [CREDIT_WALL] * 2, "dealers": [0, 0]})
    finished = []
    for step_id, (seat, a) in enumerate(CREDIT_PLAN):
        assert list(seats) == [seat, seat]
        obs, masks, seats, rewards, dones, infos = env.step(np.array([a, a]))
        assert infos["step_id"] == step_id
        tr = infos["transitions"]
        finished += [
            (int(g), int(s), int(t), float(r), bool(d))
            for g, s, t, r, d in zip(tr.game, tr.seat, tr.step_id, tr.reward, tr.done, strict=True)
            if g == 0
        ]
    assert dones.all() and infos["match_over"].all()
    score = rewards[0]
    assert score[0] < 0 < score[1] and score.sum() == 0
    by_step = {t: (s, r, d) for _, s, t, r, d in finished}
    assert by_step == {
        0: (0, 0.0, False),  # seat 0's first discard: superseded by its next decision
        1: (1, 0.0, False),
        2: (2, score[2], True),
        3: (3, score[3], True),
        4: (0, score[0], True),  # the discard seat 1 won on: seat 0's loss
        5: (1, score[1], True),  # the win: seat 1's gain
    }
    # emitted when known: step 0 at step 4, the rest at the end of the hand
    assert [t for *_, t, _, _ in finished][:1] == [0]


def test_every_decision_is_finished_exactly_once():
    b, steps = 16, 400
    env = SelfPlayVecEnv(b, seed=3, hands_per_game=2)
    obs, masks, seats = env.reset(seed=3)
    rng = np.random.default_rng(3)
    decided = {}
    seen = set()
    hand_totals = defaultdict(float)
    credited = defaultdict(float)
    for t in range(steps):
        for g in range(b):
            decided[(g, t)] = int(seats[g])
        obs, masks, seats, rewards, dones, infos = env.step(env.random_actions(rng))
        tr = infos["transitions"]
        for g, s, sid, r, d in zip(tr.game, tr.seat, tr.step_id, tr.reward, tr.done, strict=True):
            key = (int(g), int(sid))
            assert key not in seen and decided[key] == s
            seen.add(key)
            credited[int(g)] += r
            assert d or r == 0
        for g in np.flatnonzero(dones):
            # the seats that decided in the hand get exactly their scores
            deciders = set(tr.seat[(tr.game == g) & tr.done])
            hand_totals[int(g)] += sum(rewards[g, s] for s in deciders)
    pending = {(g, int(t)) for g, row in enumerate(env._pending) for t in row if t >= 0}
    assert seen | pending == set(decided) and not seen & pending
    assert dict(credited) == pytest.approx(dict(hand_totals))


def test_selfplay_illegal_action_raises():
    env = SelfPlayVecEnv(4, seed=0)
    _, masks, _ = env.reset(seed=0)
    acts = masks.argmax(1)
    acts[2] = int(np.flatnonzero(~masks[2])[0])
    tried = re.escape(A.describe(int(acts[2])))
    with pytest.raises(IllegalActionError, match=rf"^game 2: seat \d tried {tried}; legal: \["):
        env.step(acts)
    acts[2] = masks[2].argmax()
    env.step(acts)


# --------------------------------------------------------------------------- SB3VecEnv
def _sb3(**kw):
    from zhuoji_env.envs.sb3 import SB3VecEnv

    return SB3VecEnv(**kw)


class Batched:
    """An opponent with the agents' batched ``act``, from a function of ``(obs, mask)``."""

    def __init__(self, fn):
        self.act = fn


def test_sb3_vec_env_terminal_observation_and_credit():
    env = _sb3(num_envs=6, seed=1, hands_per_game=2, learner_seat=2)
    obs = env.reset()
    assert obs.shape == (6, OBS_SIZE)
    rng = np.random.default_rng(1)
    dones_seen = 0
    for _ in range(200):
        masks = np.stack(env.env_method("action_masks"))
        assert masks.shape == (6, A.NUM_ACTIONS) and masks.any(1).all()
        assert (env.game.actor == 2).all()
        before = env._ep_ret.copy()
        obs, rewards, dones, infos = env.step((rng.random(masks.shape) * masks).argmax(1))
        # the learner's running return is its seat's match score (carry: paid next step)
        g = env.game
        assert np.allclose(env._ep_ret + env._carry, g.scores[:, 2])
        for i in np.flatnonzero(dones):
            dones_seen += 1
            info = infos[i]
            term = info["terminal_observation"]
            assert term.shape == (OBS_SIZE,) and env.observation_space.contains(term)
            assert block(term, "phase").sum() == 0  # the finished hand: no decision pending
            assert block(term, "hand_no")[0] == 1.0
            assert info["episode"]["r"] == before[i] + rewards[i]
            assert not np.array_equal(term, obs[i])
        assert all("terminal_observation" not in infos[i] for i in np.flatnonzero(~dones))
    assert dones_seen > 3


def test_sb3_vec_env_seeding():
    def run(seed):
        env = _sb3(num_envs=3, learner_seat=None)
        env.seed(seed)
        out = [env.reset()]
        rng = np.random.default_rng(0)
        for _ in range(30):
            m = env.action_masks()
            o, r, d, _ = env.step((rng.random(m.shape) * m).argmax(1))
            out += [o, r, d]
        return out

    a, b, c = run(5), run(5), run(6)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


def test_sb3_vec_env_api_and_illegal_action():
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    env = _sb3(num_envs=3, seed=0, illegal_action="raise")
    env.reset()
    assert is_masking_supported(env)
    assert get_action_masks(env).shape == (3, A.NUM_ACTIONS)
    assert env.get_attr("learner_seat") == [0, 0, 0]
    assert env.env_is_wrapped(object) == [False] * 3
    assert "player_0" in env.render(mode="ansi")
    masks = env.action_masks()
    acts = masks.argmax(1)
    acts[1] = int(np.flatnonzero(~masks[1])[0])
    with pytest.raises(IllegalActionError, match=r"the learner in env 1 \(seat 0\)"):
        env.step(acts)
    np.testing.assert_array_equal(env.action_masks(), masks)  # nothing moved


def test_sb3_vec_env_illegal_action_penalty():
    """The default: the offending game's episode ends with the penalty and the info; the other
    games step as usual (compared with a twin environment given only legal actions; a
    deterministic opponent, so that the games do not share random draws)."""
    first = Batched(lambda obs, mask: mask.argmax(1))
    env, twin = _sb3(num_envs=3, seed=4, opponent=first), _sb3(num_envs=3, seed=4, opponent=first)
    env.reset(), twin.reset()
    masks = env.action_masks()
    acts = masks.argmax(1)
    bad = acts.copy()
    bad[1] = int(np.flatnonzero(~masks[1])[0])
    with pytest.warns(UserWarning, match=r"the learner in env 1 \(seat 0\) tried action"):
        obs, rew, done, infos = env.step(bad)
    t_obs, t_rew, t_done, _ = twin.step(acts)
    assert rew[1] == -10.0 and done.tolist() == [t_done[0], True, t_done[2]]
    assert infos[1]["illegal_action"] == bad[1]
    assert infos[1]["legal_actions"] == np.flatnonzero(masks[1]).tolist()
    assert infos[1]["episode"] == {"r": -10.0, "l": 1, "t": infos[1]["episode"]["t"]}
    assert block(infos[1]["terminal_observation"], "phase").sum() == 1  # the learner's turn
    for i in (0, 2):
        np.testing.assert_array_equal(obs[i], t_obs[i])
        assert rew[i] == t_rew[i] and "illegal_action" not in infos[i]
    assert (env.game.actor == 0).all() and env.action_masks()[1].any()  # game 1 dealt anew


def test_sb3_vec_env_illegal_opponent_action():
    def first_illegal(obs, mask):
        return (~mask.astype(bool)).argmax(1)

    env = _sb3(num_envs=2, seed=3, opponent=Batched(first_illegal))
    with pytest.raises(IllegalActionError, match=r"the opponent in env \d \(seat [123]\)"):
        for _ in range(10):
            env.reset()


def test_sb3_vec_env_batched_opponent():
    calls = []

    def first_legal(obs, mask):
        calls.append(obs.shape[0])
        assert obs.shape == (mask.shape[0], OBS_SIZE)
        return mask.argmax(1)

    env = _sb3(num_envs=4, seed=2, opponent=Batched(first_legal))
    env.reset()
    for _ in range(20):
        env.step(env.action_masks().argmax(1))
    assert calls and max(calls) <= 4


def test_maskable_ppo_smoke_on_sb3_vec_env(one_torch_thread):
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import Logger

    env = _sb3(num_envs=4, seed=0, hands_per_game=2, learner_seat=None)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.set_logger(Logger(None, []))  # SB3's default logger makes a /tmp/SB3-* folder
    model.learn(total_timesteps=512)
    assert model.num_timesteps >= 512


def test_sb3_vec_env_constructor_seed_is_the_first_resets():
    a = _sb3(num_envs=3, seed=5)
    b = _sb3(num_envs=3)
    b.seed(5)
    c = _sb3(num_envs=3, seed=6)
    first = a.reset()
    np.testing.assert_array_equal(first, b.reset())
    assert not np.array_equal(first, c.reset())
    assert not np.array_equal(first, a.reset())  # later resets draw new matches


def test_sb3_vec_env_opponent_failing_mid_step_stops_until_reset():
    """The opponent's error propagates unchanged; games are left with an opponent to act, so
    later steps must not play the learner's actions for opponents' seats."""
    broken = [False]

    def maybe_illegal(obs, mask):
        return (~mask if broken[0] else mask).argmax(1)

    env = _sb3(num_envs=2, seed=0, opponent=Batched(maybe_illegal))
    env.reset()
    broken[0] = True
    with pytest.raises(IllegalActionError, match=r"the opponent in env \d \(seat [123]\)"):
        env.step(env.action_masks().argmax(1))
    assert (env.game.actor != 0).any()  # half-stepped
    rivers = env.game.state.river_len.copy()
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"an opponent failed .*call reset\(\)"):
            env.step(env.game.mask.argmax(1))
    with pytest.raises(RuntimeError, match="an opponent failed"):
        env.step_wait()
    np.testing.assert_array_equal(env.game.state.river_len, rivers)  # nothing was played
    broken[0] = False
    env.reset()
    env.step(env.action_masks().argmax(1))


def test_sb3_vec_env_set_attr_is_checked_as_the_constructor():
    env = _sb3(num_envs=3, seed=0)
    env.reset()
    for name, bad, err, match in [
        ("learner_seat", 7, ValueError, "learner_seat must be a seat 0-3 or None, got 7"),
        ("learner_seat", "1", ValueError, "learner_seat must be a seat 0-3 or None, got '1'"),
        ("illegal_action", "bogus", ValueError, "illegal_action must be 'penalty' or 'raise'"),
        ("illegal_reward", "x", TypeError, "illegal_reward must be a finite number, got 'x'"),
    ]:
        with pytest.raises(err, match=re.escape(match)):
            env.set_attr(name, bad)
        with pytest.raises(err, match=re.escape(match)):
            _sb3(num_envs=3, **{name: bad})
    assert env.get_attr("learner_seat") == [0] * 3 and env.illegal_action == "penalty"
    env.set_attr("learner_seat", np.int64(2))
    env.set_attr("illegal_reward", -3)
    assert env.get_attr("learner_seat") == [2] * 3 and env.illegal_reward == -3.0
    env.set_attr("illegal_reward", None)  # the default again
    assert env.illegal_reward == -10.0


def test_sb3_vec_env_action_masks_before_reset():
    env = _sb3(num_envs=2, seed=0)
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before action_masks\(\)$"):
        env.action_masks()
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before action_masks\(\)$"):
        env.env_method("action_masks")
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before rendering$"):
        env.get_images()
    env.reset()
    assert env.action_masks().any(1).all()


def test_sb3_vec_env_pictures_for_video_recorders():
    """SB3's ``VecVideoRecorder`` needs ``render_mode="rgb_array"`` and frames from ``render()``
    (SB3 tiles ``get_images()``): one picture per game from the learner's seat."""
    from stable_baselines3.common.vec_env.base_vec_env import tile_images

    from zhuoji_env.picture import draw_game

    env = _sb3(num_envs=3, seed=0, learner_seat=None, render_mode="rgb_array")
    assert env.render_mode == "rgb_array" and "rgb_array" in env.metadata["render_modes"]
    env.reset()
    env.step(env.action_masks().argmax(1))
    images = env.get_images()
    assert len(images) == 3
    for i, img in enumerate(images):
        assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
        np.testing.assert_array_equal(img, draw_game(env.game, i, viewer=int(env._seat[i])))
    np.testing.assert_array_equal(env.render(), tile_images(images))
    np.testing.assert_array_equal(env.render(mode="rgb_array", index=2), images[2])
    assert "player_0" in env.render(mode="ansi", index=1)


@pytest.mark.parametrize("players", [4, 3])
def test_hidden_is_what_the_seat_to_act_cannot_see(players):
    """hidden(): every seat's concealed tiles and concealed kongs in the observer's seat order
    (absent seats zero), the live wall and the flip tile, matching the engine state; asking
    for it changes nothing the observation says."""
    from zhuoji_env.engine.state import AN_KONG
    from zhuoji_env.observation import HIDDEN_SIZE, STATE_SLICES

    rules = {"preset": "guiyang", "overrides": {"num_players": players}}
    env = SelfPlayVecEnv(16, rules, seed=3)
    with pytest.raises(RuntimeError, match="call reset"):
        env.hidden()
    obs, masks, seats = env.reset(seed=3)
    rng = np.random.default_rng(0)
    kongs = 0
    for _ in range(120):
        # take concealed kongs whenever offered, so that some appear in the hidden part
        angang = masks[:, A.ANGANG : A.ANGANG + 27]
        actions = env.random_actions(rng)
        rows = np.flatnonzero(angang.any(1))
        actions[rows] = A.ANGANG + angang[rows].argmax(1)
        obs, masks, seats, *_ = env.step(actions)
        again = obs.copy()
        hidden = env.hidden()
        assert np.array_equal(obs, again)
        st = env.game.state
        full = np.concatenate([obs, hidden], -1)
        hands, concealed = block(full, "all_hands"), block(full, "all_concealed_kongs")
        assert np.array_equal(hands[:, 0], block(obs, "hand"))  # slot 0 is the observer
        assert not hands[:, players:].any() and not concealed[:, players:].any()
        for b in range(16):
            for j in range(players):
                seat = (seats[b] + j) % players
                assert np.array_equal(hands[b, j], st.hand[b, seat])
                assert np.array_equal(concealed[b, j], st.meld[b, seat] == AN_KONG)
            live = st.wall[b, st.front[b] : st.back[b] + 1]
            assert np.array_equal(block(full, "live_wall")[b], np.bincount(live, minlength=27))
            flip = block(full, "flip")[b]
            assert flip.sum() == (live.size > 0) and (not live.size or flip[live[0]] == 1)
        kongs += int(concealed.any(axis=(1, 2)).sum())
    assert kongs > 0
    assert STATE_SLICES["flip"].stop == OBS_SIZE + HIDDEN_SIZE


@pytest.mark.parametrize("players", [4, 3])
def test_hidden_draws_are_the_tiles_each_seat_draws_next(players):
    """hidden(draws), asked at every decision of hands where nobody claims, kongs or wins: each
    seat's next draws (seats relative to the seat to act) are the tiles that seat then draws,
    zero past the end of the wall; the next replacement draws are the back of the live wall."""
    from zhuoji_env.observation import HIDDEN_SIZE, REPLACEMENTS_AHEAD, draws_size

    draws, games = 5, 16
    rules = {"preset": "guiyang", "overrides": {"num_players": players}}
    env = SelfPlayVecEnv(games, rules, seed=11)
    obs, masks, seats = env.reset(seed=11)
    rng = np.random.default_rng(1)
    for _ in range(int(rng.integers(0, 30))):  # somewhere into the hands (random play)
        obs, masks, seats, *_ = env.step(env.random_actions(rng))
    for bad in (-1, 2.0, True):
        with pytest.raises(ValueError, match="must be an integer >= 0"):
            env.hidden(bad)
    seen = [[[] for _ in range(players)] for _ in range(games)]  # each seat's draws, in order
    asked = []  # (game, seat to act, its view of the draws, draws each seat had made by then)
    live = np.ones(games, bool)
    for _ in range(600):
        hidden = env.hidden(draws)
        assert hidden.shape == (games, HIDDEN_SIZE + draws_size(draws))
        ahead = hidden[:, HIDDEN_SIZE:].reshape(games, -1, 27)
        st = env.game.state
        for b in np.flatnonzero(live):
            rep = ahead[b, 4 * draws :]
            assert rep.shape[0] == REPLACEMENTS_AHEAD
            for i in range(REPLACEMENTS_AHEAD):
                pos = st.back[b] - i
                assert rep[i].sum() == (pos >= st.front[b])
                assert pos < st.front[b] or rep[i, st.wall[b, pos]]
            asked.append((b, seats[b], ahead[b, : 4 * draws], [len(d) for d in seen[b]]))
        discard = masks[:, : A.DISCARD + 27]
        actions = np.where(discard.any(1), discard.argmax(1), A.PASS)
        actions = np.where(masks[np.arange(games), actions], actions, masks.argmax(1))
        before = st.front.copy()
        obs, masks, seats, _, over, _ = env.step(actions)
        st = env.game.state
        for b in np.flatnonzero(live & ~over & (st.front != before)):
            seen[b][st.turn_seat[b]].append(int(st.wall[b, before[b]]))
        live &= ~over
        if not live.any():
            break
    assert not live.any()  # every hand ran to its end (an empty wall: nobody claims or wins)
    short = 0
    for b, actor, view, made in asked:
        pred = view.reshape(4, draws, 27)
        assert not pred[players:].any()
        for r in range(players):
            seat = (actor + r) % players
            got = seen[b][seat][made[seat] : made[seat] + draws]
            hot = pred[r][: len(got)]
            assert hot.sum(1).tolist() == [1] * len(got)
            assert hot.argmax(1).tolist() == got
            assert not pred[r][len(got) :].any()  # draws that the emptied wall never gave
            short += len(got) < draws
    assert len(asked) > 20 * games and short > 0


def test_selfplay_constructor_seed_is_the_first_resets_and_later_ones_follow_it():
    """``reset()`` without a seed dealt fresh random games whatever the constructor's seed,
    so a seeded environment was not reproducible."""
    a, b = (SelfPlayVecEnv(4, seed=7, encode_obs=False) for _ in range(2))
    first = a.game.state.wall.copy()
    a.reset(), b.reset()
    assert (a.game.state.wall == first).all() and (b.game.state.wall == first).all()
    a.reset(), b.reset()
    assert (a.game.state.wall == b.game.state.wall).all()
    assert not (a.game.state.wall == first).all()
    a.reset(seed=3), b.reset(seed=3)
    a.reset(), b.reset()
    assert (a.game.state.wall == b.game.state.wall).all()


def test_selfplay_refused_reset_options_leave_its_random_numbers_alone():
    """A ``reset`` refused for its options reseeded (or advanced) the generator first, so the
    later unseeded resets dealt other games."""
    a, b = (SelfPlayVecEnv(2, seed=1, encode_obs=False) for _ in range(2))
    a.reset(seed=5), b.reset(seed=5)
    with pytest.raises(ValueError, match="unknown reset option 'wals'"):
        b.reset(options={"wals": []})
    with pytest.raises(ValueError, match="unknown reset option 'wals'"):
        b.reset(seed=9, options={"wals": []})
    a.reset(), b.reset()
    assert (a.game.state.wall == b.game.state.wall).all()


def test_sb3_vec_env_episode_time_is_monitors(monkeypatch):
    """``infos[i]["episode"]["t"]`` is SB3 ``Monitor``'s: seconds from the environment's
    construction to the episode's end (a float), not the episode's own duration."""
    from zhuoji_env.envs import sb3

    now = [1000.0]
    monkeypatch.setattr(sb3.time, "time", lambda: now[0])
    env = _sb3(num_envs=2, seed=1)
    now[0] = 1003.0
    env.reset()
    rng = np.random.default_rng(0)
    ends, want = [], []
    for step in range(60):
        now[0] = 1010.0 + 10 * step
        masks = env.action_masks()
        _, _, dones, infos = env.step((rng.random(masks.shape) * masks).argmax(1))
        ends += [infos[i]["episode"]["t"] for i in np.flatnonzero(dones)]
        want += [10.0 + 10 * step] * int(dones.sum())
    assert len(ends) >= 3 and all(type(t) is float for t in ends) and ends == want


def test_selfplay_rewards_equal_their_transitions_at_any_scale():
    """The rewards rounded twice (float32 score times float32 scale), the transitions once:
    3 x 0.3 gave 0.90000004 in one and 0.9 in the other."""
    env = SelfPlayVecEnv(32, seed=1, encode_obs=False, reward_scale=0.3)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    ended = 0
    for _ in range(300):
        *_, rewards, dones, infos = env.step(env.random_actions(rng))
        tr = infos["transitions"]
        end = tr.done
        np.testing.assert_array_equal(tr.reward[end], rewards[tr.game[end], tr.seat[end]])
        ended += int(dones.sum())
    assert ended > 20
