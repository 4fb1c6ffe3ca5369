"""Engine properties over many random games, determinism, matches, records and bad input."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from zhuoji_env import hands, replay
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.game import BatchGame
from zhuoji_env.engine.records import RecordError, compare, deltas, record_of
from zhuoji_env.engine.settlement import meld_tiles
from zhuoji_env.engine.state import (
    BAOTING_DISCARD,
    END_QIANGGANG,
    END_RON,
    OVER,
    ROB,
    TURN,
)
from zhuoji_env.tiles import NUM_TILES

RECORDS = Path(__file__).parent / "data" / "records"
PRIORITY = np.zeros(A.NUM_ACTIONS)
PRIORITY[A.HU] = 3.0
PRIORITY[[A.KONG, A.PONG, A.BAOTING]] = 1.2
PRIORITY[A.ANGANG : A.BUGANG + 27] = 1.5


def biased_actions(game: BatchGame, rng: np.random.Generator) -> np.ndarray:
    """Legal actions that take wins, kongs and pongs often and mostly discard towards a win
    (least shanten), so that many hands end in wins."""
    st = game.state
    score = rng.random(game.mask.shape) + PRIORITY * (rng.random((game.batch_size, 1)) < 0.8)
    h = st.hand[np.arange(game.batch_size), st.actor].astype(np.int8)
    turn = np.flatnonzero((h.sum(-1) % 3 == 2) & ~game.over)
    after = np.maximum(h[turn, None, :] - np.eye(27, dtype=np.int8), 0)
    sh = hands.shanten(after).astype(float)
    score[turn, :27] -= sh * (rng.random((turn.size, 1)) < 0.9)
    a = np.where(game.mask, score + 10, -1).argmax(1)
    a[game.over] = -1
    return a


def check_invariants(game: BatchGame) -> None:
    st = game.state
    live = st.phase != OVER
    assert st.mask[live].any(1).all(), "a game in progress has no legal action"
    melds = (st.meld > 0).sum(-1)
    held = st.hand.sum(-1).astype(int) + 3 * melds
    turn = (st.phase == TURN) | (st.phase == BAOTING_DISCARD) | (st.phase == ROB)
    expect = np.full(held.shape, 13)
    rows = np.flatnonzero(live & turn)
    expect[rows, st.turn_seat[rows]] = 14
    assert (held[live] == expect[live]).all(), "hand sizes are not as due"
    wall_left = np.maximum(st.back.astype(int) - st.front + 1, 0)
    won_tile = np.isin(st.end, [END_RON, END_QIANGGANG]).astype(int)
    total = (
        st.hand.sum((1, 2)).astype(int)
        + meld_tiles(st.meld).sum((1, 2))
        + st.river_counts.sum((1, 2))
        + wall_left
        + won_tile
    )
    assert (total == NUM_TILES).all(), "tiles are not conserved"
    assert (st.hand >= 0).all() and (st.river_counts >= 0).all()


@pytest.mark.parametrize(
    "rules",
    ["guiyang", "classic", "app", {"preset": "guiyang", "overrides": {"num_players": 3}}],
)
def test_invariants_over_random_games(rules):
    """Tile conservation, hand sizes and zero-sum hands over random games; the rewards are
    compared with the engine's own ledger, a consistency check (settlement values are checked
    by the scenarios, the reference and the sample records)."""
    game = BatchGame(rules, 500, seed=11, auto_reset=False)
    rng = np.random.default_rng(5)
    ends = np.zeros(5, int)
    while not game.over.all():
        check_invariants(game)
        out = game.step(biased_actions(game, rng))
        e = np.flatnonzero(out.hand_over)
        if e.size:
            led = game.state.ledger[e]
            assert (out.rewards[e].sum(1) == 0).all(), "a hand is not zero-sum"
            assert (out.rewards[e] == deltas(led)).all()
            assert (led >= 0).all()
            ends += np.bincount(game.state.end[e], minlength=5)
    check_invariants(game)
    assert ends[1] > 50 and ends[2] > 50 and ends[4] > 5, ends  # zimo, ron and draw all occur


def _play_records(batch: int, seed: int, games: list[int], hands: int = 2):
    """Records of the first ``hands`` hands of each listed game, with per-game action streams."""
    game = BatchGame("guiyang", batch, seed=seed, keep_records=True)
    rngs = [np.random.default_rng([77, i]) for i in range(batch)]
    got: dict[int, list] = {i: [] for i in games}
    while any(len(v) < hands for v in got.values()):
        mask = game.mask
        acts = np.array([rngs[i].choice(np.flatnonzero(mask[i])) for i in range(batch)])
        for i, rec in game.step(acts).records:
            if i in got and len(got[i]) < hands:
                got[i].append(rec)
    return got


def test_single_game_equals_same_game_in_batch():
    """Consistency check (the engine against itself): a game plays the same alone or in a
    batch of any size."""
    alone = _play_records(1, seed=3, games=[0])
    small = _play_records(8, seed=3, games=[0, 7])
    big = _play_records(256, seed=3, games=[0, 7])
    assert alone[0] == big[0]
    assert small[7] == big[7]
    assert big[0] != big[7]


def test_same_seed_same_games_and_different_seed_differs():
    a = BatchGame("app", 16, seed=9)
    b = BatchGame("app", 16, seed=9)
    c = BatchGame("app", 16, seed=10)
    assert (a.state.wall == b.state.wall).all()
    assert (a.state.wall != c.state.wall).any()
    ra, rb = np.random.default_rng(1), np.random.default_rng(1)
    for _ in range(200):
        oa, ob = a.step(a.random_actions(ra)), b.step(b.random_actions(rb))
        assert (oa.rewards == ob.rewards).all()
    assert (a.state.hand == b.state.hand).all()


@pytest.mark.parametrize("preset", ["guiyang", "classic", "app"])
def test_every_recorded_game_replays_to_its_result(preset):
    """Consistency check, not a rules check: the engine's own records, replayed by the same
    engine, give the results it recorded (the rules are checked by the scenarios, the
    reference and the sample records)."""
    game = BatchGame(preset, 64, seed=21, keep_records=True)
    rng = np.random.default_rng(2)
    records = []
    while len(records) < 150:
        records += [r for _, r in game.step(biased_actions(game, rng)).records]
    assert any(r["result"]["end"] != "draw" for r in records)
    for rec in records:
        rec = json.loads(json.dumps(rec))
        assert compare(rec["result"], replay(rec)) == []


def test_match_carries_dealer_streak_and_scores():
    """Consistency check: match totals are the sum of the engine's own hand rewards, and each
    hand is dealt by the dealer and streak its own previous result named."""
    game = BatchGame("guiyang", 32, seed=4, keep_records=True, hands_per_game=4)
    rng = np.random.default_rng(0)
    per_game: dict[int, list] = {i: [] for i in range(32)}
    totals = np.zeros((32, 4), int)
    finals = {}
    while len(finals) < 32:
        out = game.step(biased_actions(game, rng))
        totals += out.rewards
        for i, rec in out.records:
            per_game[i].append(rec)
        for i in np.flatnonzero(out.match_over):
            if i not in finals:
                finals[i] = out.final_scores[i].copy()
                assert (finals[i] == totals[i]).all()
                assert len(per_game[i]) == 4
            totals[i] = 0
    for recs in per_game.values():
        for prev, nxt in zip(recs[:3], recs[1:4], strict=True):
            assert nxt["dealer"] == prev["result"]["next_dealer"]
            assert nxt["dealer_streak"] == prev["result"]["next_streak"]


@pytest.fixture
def sample():
    return json.loads((RECORDS / "guiyang-2-ron.json").read_text())


def test_streak_grows_when_dealer_wins(sample):
    res = replay(sample)
    assert res["next_dealer"] == sample["dealer"] and res["next_streak"] == 3


# --------------------------------------------------------------------------- bad input


def test_illegal_action_in_step_names_seat_and_legal_actions():
    game = BatchGame("guiyang", 2, seed=0)
    acts = game.random_actions(np.random.default_rng(0))
    illegal = int(np.flatnonzero(~game.mask[1])[0])
    acts[1] = illegal
    with pytest.raises(core.IllegalActionError, match=r"game 1: seat \d tried .*legal: \["):
        game.step(acts)
    with pytest.raises(ValueError, match=r"expected 2 actions, got shape \(1,\)"):
        game.step(acts[:1])
    with pytest.raises(
        core.IllegalActionError, match=r"game 0: seat \d tried action 999 \(out of range 0-85\)"
    ):
        game.step(np.array([999, 999]))


def test_record_errors(sample):
    bad = copy.deepcopy(sample)
    bad["actions"][3][0] = 1
    with pytest.raises(RecordError, match=r"action 3: seat 1 tried discard 7s, but seat 3"):
        replay(bad)
    bad = copy.deepcopy(sample)
    bad["actions"][0] = [1, "discard", "1m"]
    with pytest.raises(RecordError, match=r"action 0: seat 1 tried discard 1m, which is illegal"):
        replay(bad)
    short = dict(sample, actions=sample["actions"][:-2])
    with pytest.raises(
        RecordError,
        match=r"action 54: the record ends here but the hand is not over: seat 3 is to act",
    ):
        replay(short)
    long = dict(sample, actions=sample["actions"] + [[0, "pass"]])
    with pytest.raises(
        RecordError,
        match=rf"action {len(sample['actions'])} \(seat 0, pass\): the hand is already over",
    ):
        replay(long)
    with pytest.raises(
        RecordError, match=r"bad wall: 108 tiles, expected 108 .*\(wrong counts for 1m, 1s\)"
    ):
        replay(dict(sample, wall=sample["wall"][:-2] + "1m"))
    with pytest.raises(RecordError, match=r"bad wall: 107 tiles, expected 108 with four of each"):
        replay(dict(sample, wall=sample["wall"][:-2]))
    with pytest.raises(RecordError, match="unknown switch 'colour'"):
        replay(dict(sample, rules={"preset": "guiyang", "overrides": {"colour": 1}}))
    with pytest.raises(
        RecordError, match=r"bad rules: unknown preset 'tokyo': allowed \['guiyang'"
    ):
        replay(dict(sample, rules={"preset": "tokyo"}))
    with pytest.raises(RecordError, match="bad dealer 4: expected a seat 0-3"):
        replay(dict(sample, dealer=4))
    for dealer in (True, np.int64(0)):  # a record is JSON: no bools, no numpy integers
        with pytest.raises(RecordError, match=re.escape(f"bad dealer {dealer!r}: expected a")):
            replay(dict(sample, dealer=dealer))
    with pytest.raises(
        RecordError, match=r"action 0 \(seat 1\): unknown action 'chow': allowed \['discard'"
    ):
        replay(dict(sample, actions=[[1, "chow", "1m"]]))
    with pytest.raises(
        RecordError, match="unknown record format 'other': expected 'zhuoji-record-1'"
    ):
        replay(dict(sample, format="other"))
    wall_list = [sample["wall"][i : i + 2] for i in range(0, 216, 2)]
    assert replay(dict(sample, wall=wall_list)) == replay(sample)


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=120
    )


def test_replay_cli(tmp_path, sample):
    ok = _cli("zhuoji_env.replay", str(RECORDS / "app-4-qianggang.json"))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["end"] == "qianggang"
    assert "matches" in ok.stderr
    wrong = copy.deepcopy(sample)
    wrong["result"]["deltas"][0] += 1
    (tmp_path / "wrong.json").write_text(json.dumps(wrong))
    diff = _cli("zhuoji_env.replay", str(tmp_path / "wrong.json"))
    assert diff.returncode == 1 and "differs: deltas" in diff.stderr
    bad = dict(sample, actions=sample["actions"][:5])
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    err = _cli("zhuoji_env.replay", str(tmp_path / "bad.json"))
    assert err.returncode == 2 and "not over" in err.stderr
    (tmp_path / "junk.json").write_text("{not json")
    assert _cli("zhuoji_env.replay", str(tmp_path / "junk.json")).returncode == 2


def test_record_cli_writes_replayable_records(tmp_path):
    out = _cli(
        "zhuoji_env.record", "--preset", "app", "--seed", "5", "--n", "6", "--out", str(tmp_path)
    )
    assert out.returncode == 0, out.stderr
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 6
    for f in files:
        rec = json.loads(f.read_text())
        assert rec["rules"]["preset"] == "app"
        assert compare(rec["result"], replay(rec)) == []
    bad = _cli("zhuoji_env.record", "--preset", "app", "--set", "units=x", "--out", str(tmp_path))
    assert bad.returncode != 0 and "units" in bad.stderr


def test_record_of_live_game_has_no_result():
    game = BatchGame("guiyang", 1, seed=0)
    rec = record_of(game.rules, game.state, 0)
    assert "result" not in rec and rec["actions"] == []


def test_step_only_active_games_and_restart():
    game = BatchGame("guiyang", 4, seed=2, auto_reset=False)
    rng = np.random.default_rng(0)
    before = game.state.copy()
    acts = game.random_actions(rng)
    active = np.array([True, False, True, False])
    with pytest.raises(core.IllegalActionError, match="game 1 is not active"):
        game.step(acts, active)
    acts[~active] = -1
    game.step(acts, active)
    assert (game.state.hand[1] == before.hand[1]).all() and game.state.rec_len[1] == 0
    assert game.state.rec_len[0] == 1 and game.state.rec_len[2] == 1
    game.restart([0])
    assert game.state.rec_len[0] == 0 and (game.state.wall[0] != before.wall[0]).any()


def test_random_legal_is_uniform_over_legal_actions_and_never_illegal():
    class ZeroDraws:  # the edge case: every draw 0.0
        def random(self, shape):
            return np.zeros(shape)

    mask = np.zeros((2, A.NUM_ACTIONS), bool)
    mask[0, 5] = mask[1, [7, A.PASS]] = True
    assert A.random_legal(ZeroDraws(), mask).tolist() == [5, 7]
    picks = A.random_legal(np.random.default_rng(0), np.repeat(mask[1:], 4000, 0))
    counts = np.bincount(picks, minlength=A.NUM_ACTIONS)
    assert counts[7] + counts[A.PASS] == 4000 and 1800 < counts[7] < 2200


@pytest.mark.parametrize(
    "seed, error", [(-1, ValueError), ("a", TypeError), (1.5, TypeError), (True, TypeError),
                    ([1, 2], TypeError)]
)  # fmt: skip
def test_a_bad_seed_is_named(seed, error):
    """``BatchGame`` and its ``reset`` say which seeds are allowed, not numpy's message, with
    the environments' rule (``check_seed``): a wrong type is a TypeError."""
    msg = f"seed must be None or a non-negative integer, got {seed!r}"
    with pytest.raises(error, match=re.escape(msg)):
        BatchGame("guiyang", 2, seed=seed)
    game = BatchGame("guiyang", 2, seed=np.int64(3))
    assert game.seed == 3
    assert BatchGame("guiyang", 2, seed=np.array(3)).seed == 3  # a 0-d array, as the envs take
    with pytest.raises(error, match=re.escape(msg)):
        game.reset(seed)


@pytest.mark.parametrize(
    "active, got",
    [
        ([True], r"dtype bool and shape \(1,\)"),
        (np.ones(2, bool), r"dtype bool and shape \(2,\)"),
        ("yes", r"dtype <U3 and shape \(\)"),
        ([1, 0, 1], r"dtype int64 and shape \(3,\)"),
        (np.ones((1, 3), bool), r"dtype bool and shape \(1, 3\)"),
    ],
    ids=["one-flag", "short", "string", "ints", "2-D"],
)
def test_active_must_be_one_bool_per_game(active, got):
    """[True] was broadcast to every game, 'yes' taken as true, a wrong length a numpy
    broadcast error and a 2-D array an IndexError."""
    game = BatchGame("guiyang", 3, seed=0)
    acts = game.random_actions(np.random.default_rng(0))
    msg = rf"^active must be None or a bool array of shape \(3,\), one flag per game, got {got}$"
    with pytest.raises(ValueError, match=msg):
        game.step(acts, active)
    assert (game.state.rec_len == 0).all()


@pytest.mark.parametrize(
    "idx, message",
    [
        (5, "got 0-D"),
        ([-1], "game index -1 out of range"),
        ([0, 0], r"repeat a game: expected a 1-D list or array of distinct game indices 0-2$"),
        ([1.5], "got dtype float64"),
        ([True, False, True], r"got dtype bool \(for a mask, pass np.flatnonzero\(mask\)\)"),
        ([[0, 1]], "got 2-D"),
    ],
    ids=["scalar", "negative", "repeated", "fraction", "bools", "2-D"],
)
def test_restart_refuses_bad_game_indices(idx, message):
    """The check public_view makes (check_games): these restarted the wrong games, or the
    same game twice (drawing its next wall twice)."""
    game = BatchGame("guiyang", 3, seed=0)
    before = game.state.copy()
    with pytest.raises(ValueError, match=message):
        game.restart(idx)
    assert np.array_equal(game.state.wall, before.wall)


def test_restart_of_no_games_does_nothing():
    """It was "need at least one array to stack"."""
    game = BatchGame("guiyang", 3, seed=0)
    before = game.state.copy()
    game.restart([])
    game.restart(np.array([], dtype=np.int64))
    assert np.array_equal(game.state.wall, before.wall)


def test_batch_game_sizes_and_flags():
    """np.int64 batch sizes are accepted as num_envs is elsewhere; auto_reset='no' used to
    auto-reset (any truthy value did)."""
    assert BatchGame("guiyang", np.int64(4), seed=0).batch_size == 4
    assert type(BatchGame("guiyang", np.int64(4), seed=0).batch_size) is int
    for size in (0, 2.0, True, "4"):
        with pytest.raises(ValueError, match=rf"^batch_size must be an integer >= 1, got {size!r}"):
            BatchGame("guiyang", size)
    for name, value in (("auto_reset", "no"), ("auto_reset", 0), ("keep_records", None)):
        with pytest.raises(TypeError, match=rf"^{name} must be True or False, got {value!r} \("):
            BatchGame("guiyang", 2, **{name: value})


def test_random_actions_takes_a_generator_or_a_seed():
    """None and an int were an AttributeError on .random."""
    game = BatchGame("guiyang", 3, seed=0)
    want = game.random_actions(np.random.default_rng(7))
    assert np.array_equal(game.random_actions(7), want)
    assert np.array_equal(game.random_actions(np.int64(7)), want)
    assert game.mask[np.arange(3), game.random_actions(None)].all()
    for rng, error in ((-1, ValueError), (1.5, TypeError), ("x", TypeError)):
        with pytest.raises(error, match=r"^rng must be a numpy.random.Generator \(or BitGenerator"):
            game.random_actions(rng)


def test_as_generator_takes_what_numpy_seeds_with():
    """SeedSequence, BitGenerator and a 0-d integer array seed as numpy does (the last failed
    with numpy's 'len() of unsized object'); a legacy RandomState is refused by name."""
    from zhuoji_env.engine.game import as_generator

    want = np.random.default_rng(5).integers(1000, size=4).tolist()
    for seed in (5, np.int64(5), np.array(5), np.random.SeedSequence(5), np.random.PCG64(5)):
        assert as_generator(seed).integers(1000, size=4).tolist() == want
    assert as_generator([1, 2]).integers(1000) == np.random.default_rng([1, 2]).integers(1000)
    with pytest.raises(TypeError, match=r"^agent seed must be .*got RandomState"):
        as_generator(np.random.RandomState(0), "agent seed")
