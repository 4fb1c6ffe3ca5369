"""Belief sampling (``zhuoji_env.belief``): samples look to the seat exactly like the real game,
depend on nothing it cannot see, are exactly uniform over what it has not seen, and are games
the engine plays to the end."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from scenario_helpers import VARIANTS, make_wall
from scipy import stats
from test_env_aec import permute_hidden

from agents import make_agent
from zhuoji_env import belief, hands, observation
from zhuoji_env.engine import BatchGame, core
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.state import (
    AN_KONG,
    OVER,
    PONG_MELD,
    RESPONSE,
    ROB,
    TURN,
    State,
    empty_state,
)
from zhuoji_env.limits import SizeError
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import NUM_KINDS, code, kind, parse_tiles

_CLAIMS = np.zeros(A.NUM_ACTIONS)
_CLAIMS[[A.PONG, A.KONG]] = 2.0
_CLAIMS[A.BUGANG : A.BUGANG + NUM_KINDS] = 3.0
_CLAIMS[A.ANGANG : A.ANGANG + NUM_KINDS] = 3.0
_CLAIMS[A.BAOTING] = 1.0


def claiming_actions(st: State, rng) -> np.ndarray:
    """Random legal actions that take most claims and kongs offered (melds, windows, 闷豆);
    -1 for finished games."""
    score = np.where(st.mask, _CLAIMS + rng.random(st.mask.shape) * 2.5, -np.inf)
    return np.where(st.phase != OVER, score.argmax(1), -1)


def live_wall_counts(st: State) -> np.ndarray:
    out = np.zeros((st.batch_size, NUM_KINDS), np.int64)
    for i in range(st.batch_size):
        out[i] = np.bincount(st.wall[i, st.front[i] : st.back[i] + 1], minlength=NUM_KINDS)
    return out


def tile_totals(st: State) -> np.ndarray:
    """Copies of each kind in hands, melds, rivers and the live wall: 4 in a whole game."""
    m = st.meld
    melds = (3 * (m == PONG_MELD) + 4 * (m >= AN_KONG)).sum(1)
    return st.hand.sum(1) + melds + st.river_counts.sum(1) + live_wall_counts(st)


def check_samples(rules: Rules, st: State, g: np.ndarray, samples: State, k: int) -> None:
    rep = np.repeat(g, k)
    seat = st.actor[rep]
    want = observation.encode(st, rep, seat)
    got = observation.encode(samples, np.arange(rep.size), samples.actor)
    assert np.array_equal(got, want), "a sample encodes to another observation"
    assert np.array_equal(samples.mask, st.mask[rep]), "a sample has other legal actions"
    assert (tile_totals(samples) == 4).all(), "a sample does not conserve tiles"
    assert np.array_equal(samples.hand.sum(-1), st.hand[rep].sum(-1)), "hand sizes differ"
    hidden_kongs = lambda s: (s.meld == AN_KONG).sum(-1)  # noqa: E731
    assert np.array_equal(hidden_kongs(samples), hidden_kongs(st.take(rep)))


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_samples_are_real_views_and_valid_games(variant):
    """Over random games of every preset and switch family, 3 and 4 players: each sample
    encodes for the acting seat to its real observation, has its mask, conserves tiles and
    hand sizes, and plays to a settled end in the engine; uniform and improved alike."""
    game = BatchGame(variant, batch_size=32, seed=11)
    rules = game.rules
    rng = np.random.default_rng(3)
    phases = Counter()
    for step in range(120):
        st = game.state
        g = np.flatnonzero(st.phase != OVER)
        improve = 1.0 if step % 2 else 0.0
        samples = belief.sample(rules, belief.public_view(st, g), 2, rng, improve=improve)
        check_samples(rules, st, g, samples, 2)
        phases.update(st.phase[g].tolist())
        if step % 40 == 0:
            while (samples.phase != OVER).any():
                core.step(rules, samples, claiming_actions(samples, rng))
            assert (samples.end > 0).all()
            paid, got = samples.ledger.sum((2, 3)), samples.ledger.sum((1, 3))
            assert (paid.sum(1) == got.sum(1)).all()
        game.step(claiming_actions(st, rng))
    assert phases[TURN] > 1000 and phases[RESPONSE] > 50


def rob_position(num_players: int = 4):
    """A rob window (抢杠): seat 1 pongs 5m, draws the fourth 5m and adds it (bugang); seat 2,
    waiting on 4m-6m's 5m, is asked whether to rob it."""
    rules = Rules.make("guiyang", num_players=num_players)
    hands = {
        0: "5m1m2m3m1p2p3p4p4p4p9s9s9s7m",
        1: "5m5m1s2s3s4s5s6s7s8s9s2p2p",
        2: "4m6m7p8p9p7p8p9p1s1s6p6p6p",
    }
    live = "8m" * (num_players - 1) + "5m"
    wall = make_wall(0, hands, live=live, n=num_players, partial=True)
    st = core.deal(rules, np.array([wall]), 0)
    n = num_players
    script = ["discard 5m", "pong", "discard 2p"] + ["discard 8m"] * (n - 1) + ["bugang 5m"]
    for action in script:
        while st.phase[0] == RESPONSE and not (action == "pong" and st.actor[0] == 1):
            core.step(rules, st, np.array([A.PASS]))
        core.step(rules, st, np.array([A.encode(*action.split())]))
    assert st.phase[0] == ROB and st.actor[0] == 2 and st.mask[0, A.HU]
    return rules, st


@pytest.mark.parametrize("improve", [0.0, 2.0])
@pytest.mark.parametrize("players", [4, 3])
def test_rob_window_samples(players, improve):
    rules, st = rob_position(players)
    samples = belief.sample(rules, belief.public_view(st), 400, 5, improve=improve)
    check_samples(rules, st, np.array([0]), samples, 400)
    bugang = samples.hand[:, 1, kind("5m")]
    assert (bugang == 1).all(), "the shown bugang tile stays in the bugang seat's hand"
    drawn = Counter(samples.drawn.tolist())
    assert drawn[kind("5m")] > 0 and len(drawn) > 3, "the drawn tile is one of its tiles"
    while (samples.phase != OVER).any():
        core.step(rules, samples, claiming_actions(samples, np.random.default_rng(0)))


def hide_differently(st: State, i: int, rng) -> State:
    """Game ``i`` with everything its actor cannot see dealt or set differently: the other
    seats' concealed tiles and the live wall shuffled together, their concealed kongs' kinds
    exchanged with unseen kinds where possible, their locks, claim choices, penalties and
    eligibility flipped, the record and the dead wall scrambled."""
    seat = int(st.actor[i])
    st = permute_hidden(st.take([i]), seat, rng)
    others = [s for s in range(st.num_players) if s != seat]
    front, back = int(st.front[0]), int(st.back[0])
    for s in others:  # a hidden 闷豆 of kind t becomes one of kind u, whose copies were hidden
        for t in np.flatnonzero(st.meld[0, s] == AN_KONG):
            hidden = st.hand[0, others].sum(0) + np.bincount(
                st.wall[0, front : back + 1], minlength=NUM_KINDS
            )
            swap = np.flatnonzero(hidden == 4)
            if not swap.size:
                continue
            u = int(rng.choice(swap))
            for name in ("meld", "meld_late", "meld_from"):
                getattr(st, name)[0, s, [t, u]] = getattr(st, name)[0, s, [u, t]]
            st.turn_kong[0, [t, u]] = st.turn_kong[0, [u, t]]
            st.hand[0, others, t] = st.hand[0, others, u]
            st.hand[0, others, u] = 0
            live = st.wall[0, front : back + 1]
            live[live == u] = t
    dead = np.r_[0:front, back + 1 : 108]
    st.wall[0, dead] = rng.permutation(st.wall[0, dead])
    st.pass_lock[0, others] = ~st.pass_lock[0, others]
    st.dealt_ready[0, others] = ~st.dealt_ready[0, others]
    st.baopai[0, others] += 7
    st.claim_opts[0, others] = rng.integers(0, 8, len(others))
    st.rec_action[0] = rng.integers(0, A.NUM_ACTIONS, st.rec_action.shape[1])
    if st.turn_seat[0] != seat:
        st.drawn[0] = rng.integers(NUM_KINDS)
    return st


def test_samples_depend_only_on_what_the_seat_sees():
    """Two states that differ only in hidden parts have the same view and, for the same key,
    the same samples; over many random decisions, with concealed kongs made."""
    game = BatchGame("guiyang", batch_size=32, seed=4)
    rng = np.random.default_rng(9)
    checked = hidden_kongs = swapped = 0
    for step in range(120):
        st = game.state
        if step % 6 == 0:
            for i in np.flatnonzero(st.phase != OVER)[:8]:
                other = hide_differently(st, int(i), rng)
                assert (tile_totals(other) == 4).all()
                assert not np.array_equal(other.wall, st.wall[[i]])
                improve = float(step % 12 == 0)
                a = belief.sample(game.rules, belief.public_view(st, [i]), 4, 123, improve)
                b = belief.sample(game.rules, belief.public_view(other), 4, 123, improve)
                for name in (
                    *("hand", "meld", "wall", "drawn", "claim_opts", "dealt_ready"),
                    *("pass_lock", "baopai"),  # the others' 过手胡 locks were not compared
                ):
                    assert np.array_equal(getattr(a, name), getattr(b, name)), name
                seat = st.actor[i]
                kongs = np.delete(st.meld[i] == AN_KONG, seat, axis=0)
                moved = np.delete(other.meld[0] == AN_KONG, seat, axis=0)
                hidden_kongs += int(kongs.sum())
                swapped += int((kongs != moved).any())
                checked += 1
        game.step(claiming_actions(st, rng))
    assert checked > 100 and hidden_kongs > 0 and swapped > 0


def test_views_blank_every_hidden_part():
    """A view carries no hidden tile: the other seats' hands are empty, the wall is blank and
    no other seat's concealed kong kind appears."""
    game = BatchGame("guiyang", batch_size=32, seed=8)
    rng = np.random.default_rng(1)
    for _ in range(100):
        game.step(claiming_actions(game.state, rng))
    st = game.state
    view = belief.public_view(st)
    rows = np.arange(st.batch_size)
    other = np.ones(st.hand.shape[:2], bool)
    other[rows, st.actor] = False
    robbed = st.phase == ROB
    assert view.state.hand[other & ~robbed[:, None]].sum() == 0
    assert (view.state.wall == -1).all() and (view.state.rec_len == 0).all()
    assert not (view.state.meld[other] == AN_KONG).any()
    assert np.array_equal(view.concealed, st.hand.sum(-1))


# ------------------------------------------------------------- exact uniformity, chi-squared
def small_position() -> tuple[Rules, State, dict[int, int]]:
    """A hand-built late position with nine hidden tiles and one hidden concealed kong.

    Seat 0 is to discard (hand 1m1m1m 2m2m2m 3m3m3m 4m4m4m 5m5m). Seat 1 holds one tile and
    pongs of 6m 7m 8m 9m; seat 2 one tile, pongs of 1p 2p 3p and a 闷豆; seat 3 four tiles and
    pongs of 4p 5p 6p; three tiles are live. Unseen: 7p x4, 8p x4, 5m x2, 9p x3: the kong is
    7p or 8p (1/2 each) and the other nine tiles are shuffled over the nine hidden places.
    """
    rules = Rules.make("guiyang")
    st = empty_state(1, 4)
    own = parse_tiles("1m1m1m2m2m2m3m3m3m4m4m4m5m5m")
    st.hand[0, 0] = np.bincount(own, minlength=NUM_KINDS)
    for seat, codes in ((1, "6m7m8m9m"), (2, "1p2p3p"), (3, "4p5p6p")):
        for t in parse_tiles(codes):
            st.meld[0, seat, t] = PONG_MELD
            st.meld_from[0, seat, t] = (seat + 1) % 4
    hidden = {"7p": 4, "8p": 4, "5m": 2, "9p": 3}
    st.meld[0, 2, kind("7p")] = AN_KONG
    for seat, codes in ((1, "8p"), (2, "5m"), (3, "8p5m9p9p")):
        st.hand[0, seat] = np.bincount(parse_tiles(codes), minlength=NUM_KINDS)
    live = parse_tiles("8p8p9p")
    st.front[0], st.back[0] = 60, 62
    st.wall[0] = 0
    st.wall[0, 60:63] = live
    seen = st.hand[0].sum(0) + 3 * (st.meld[0] == PONG_MELD).sum(0) + 4 * (st.meld[0] >= 2).sum(0)
    seen += np.bincount(live, minlength=NUM_KINDS)
    river_kinds = np.repeat(np.arange(NUM_KINDS), 4 - seen)
    for j, t in enumerate(river_kinds):
        s = j % 4
        pos = int(st.river_len[0, s])
        st.river[0, s, pos] = t
        st.river_len[0, s] += 1
        st.river_counts[0, s, t] += 1
    st.discarded[0] = True
    st.phase[0], st.actor[0], st.turn_seat[0], st.dealer[0] = TURN, 0, 0, 1
    st.drawn[0], st.drew[0] = kind("5m"), True
    core.compute_masks(rules, st, np.arange(1))
    assert (tile_totals(st) == 4).all()
    hidden = {kind(c): v for c, v in hidden.items()}
    unseen = belief.unseen_counts(belief.public_view(st))[0]
    assert unseen.tolist() == [hidden.get(t, 0) for t in range(NUM_KINDS)]
    return rules, st, hidden


def exact_cells(hidden: dict[int, int]) -> dict[tuple[int, int, int, int], float]:
    """Exact probability of (kong kind, seat 1's tile, seat 2's tile, the flip tile) under the
    uniform arrangement of the unseen copies as distinct physical tiles."""
    cells = {}
    for kong in (kind("7p"), kind("8p")):
        pool = dict(hidden)
        pool[kong] -= 4
        total = sum(pool.values())
        for cell in itertools.product(pool, repeat=3):
            left, p = dict(pool), 1.0
            for j, t in enumerate(cell):
                p *= left[t] / (total - j)
                left[t] -= 1
            if p > 0:
                cells[(kong, *cell)] = 0.5 * p
    return cells


def uniformity_pvalue(rules: Rules, st: State, hidden, rng, k: int = 20_000) -> float:
    s = belief.sample(rules, belief.public_view(st), k, rng)
    kong = np.argmax(s.meld[:, 2] == AN_KONG, axis=1)
    seat1 = np.argmax(s.hand[:, 1], axis=1)
    seat2 = np.argmax(s.hand[:, 2], axis=1)
    flip = s.wall[:, 60]
    got = Counter(zip(kong.tolist(), seat1.tolist(), seat2.tolist(), flip.tolist(), strict=True))
    cells = exact_cells(hidden)
    assert set(got) <= set(cells), "a sample outside the possible arrangements"
    observed = np.array([got[c] for c in cells])
    expected = np.array([cells[c] for c in cells]) * k
    return stats.chisquare(observed, expected).pvalue


class CoarseGenerator(np.random.Generator):
    """A planted bias: uniform numbers rounded to quarters, so the shuffle's sort keys tie and
    a stable sort keeps tiles near their sorted order."""

    def random(self, size=None, dtype=np.float64, out=None):
        return np.floor(super().random(size) * 4) / 4


def test_hidden_tiles_are_exactly_uniform():
    rules, st, hidden = small_position()
    assert abs(sum(exact_cells(hidden).values()) - 1) < 1e-12
    assert uniformity_pvalue(rules, st, hidden, np.random.default_rng(2026)) > 0.01
    biased = CoarseGenerator(np.random.PCG64(2026))
    assert uniformity_pvalue(rules, st, hidden, biased) < 1e-6


def test_seat_hand_follows_the_hypergeometric_law():
    """At the first decision of a hand, the copies of a kind in another seat's 13 tiles follow
    the hypergeometric law over the 94 tiles the dealer has not seen."""
    rules = Rules.make("guiyang")
    game = BatchGame(rules, batch_size=1, seed=21)
    st = game.state
    view = belief.public_view(st)
    unseen = belief.unseen_counts(view)[0]
    t = int(np.argmax(unseen == 4))
    s = belief.sample(rules, view, 20_000, 77)
    seat = (int(st.actor[0]) + 1) % 4
    got = np.bincount(s.hand[:, seat, t], minlength=5)
    law = stats.hypergeom(int(unseen.sum()), 4, 13).pmf(np.arange(5))
    assert stats.chisquare(got, law * got.sum()).pvalue > 0.01


# ------------------------------------------------- improved hands (a model of the others' play)
def test_an_exchange_keeps_what_the_hand_needs():
    """In the hand-built position, seat 3 (8p 5m 9p 9p, one discard counted) makes one
    exchange with a uniformly chosen place of the live wall (8p 8p 9p) and puts back a tile
    that leaves it ready: after an 8p only the 5m does (8p8p 9p9p), after the 9p the 5m or the
    8p (9p9p9p with 8p or 5m alone); never a 9p."""
    rules, st, _ = small_position()
    st.river_len[0] = [0, 0, 0, 1]
    out = Counter()
    for seed in range(60):
        s = st.copy()
        other = np.array([[False, True, True, True]])
        belief.improve_hands(s, other, 1.0, np.random.default_rng(seed))
        assert np.array_equal(s.hand[0, :3], st.hand[0, :3]), "only seat 3 exchanged"
        change = s.hand[0, 3].astype(int) - st.hand[0, 3]
        moved = np.flatnonzero(s.wall[0] != st.wall[0])
        assert moved.size == 1 and 60 <= moved[0] <= 62, "it kept the tile it drew"
        got, put = int(st.wall[0, moved[0]]), int(s.wall[0, moved[0]])
        assert change[got] == 1 and change[put] == -1 and abs(change).sum() == 2
        assert hands.shanten(s.hand[0, 3]) == 0
        out[code(got), code(put)] += 1
    assert set(out) == {("8p", "5m"), ("9p", "5m"), ("9p", "8p")}, out
    assert out["8p", "5m"] > 25, "the drawn place is uniform: two of the three are 8p"


def test_improved_others_are_as_ready_as_real_players():
    """Mid-hand, in games of the rule-based player, many of the others' hands with six or more
    discards are ready (听); the uniform belief deals almost none ready, the improved one
    many, a little more than ``rule`` holds (it was set by ``ppo-guiyang``'s play)."""
    game = BatchGame("guiyang", batch_size=48, seed=5)
    player = make_agent("rule", seed=0, rules=game.rules)
    rng = np.random.default_rng(0)
    real, uniform, improved = [], [], []
    for step in range(90):
        st = game.state
        if step >= 40 and step % 5 == 0:
            g = np.flatnonzero(st.phase == TURN)
            view = belief.public_view(st, g)
            u = belief.sample(game.rules, view, 4, rng)
            m = belief.sample(game.rules, view, 4, rng, improve=1.0)
            for q in range(4):
                late = (st.actor[g] != q) & (st.river_len[g, q] >= 6)
                rows = np.repeat(late, 4)
                real.append(hands.shanten(st.hand[g[late], q]) <= 0)
                uniform.append(hands.shanten(u.hand[rows, q]) <= 0)
                improved.append(hands.shanten(m.hand[rows, q]) <= 0)
        g = np.arange(st.batch_size)
        game.step(player.act(observation.encode(st, g, st.actor), st.mask))
    real, uniform, improved = (np.concatenate(x).mean() for x in (real, uniform, improved))
    assert uniform < 0.05 < 0.25 < real
    assert 0.25 < improved < real + 0.2, (real, improved)


# ------------------------------------------------------------------------------ bad input
def test_bad_input_is_refused():
    rules, st, _ = small_position()
    view = belief.public_view(st)
    for k in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="samples per game"):
            belief.sample(rules, view, k, 0)
    for improve in (-0.5, 9, "1", True):
        with pytest.raises(ValueError, match="improve"):
            belief.sample(rules, view, 1, 0, improve=improve)
    with pytest.raises(ValueError, match="3-player"):
        belief.sample(rules, belief.public_view(rob_position(3)[1]), 1, 0)
    over = st.copy()
    over.phase[0] = OVER
    with pytest.raises(ValueError, match="is over"):
        belief.public_view(over)
    broken = belief.public_view(st)
    broken.concealed[0, 1] += 3
    with pytest.raises(ValueError, match="conserve"):
        belief.sample(rules, broken, 1, 0)


def test_a_view_of_no_games_and_a_fraction_improve():
    """``public_view(st, [])`` is a view: sampling it crashed inside numpy; a ``Fraction`` passed
    the improve check and crashed in the exchanges, after the shuffle."""
    from fractions import Fraction

    rules, st, _ = small_position()
    empty = belief.sample(rules, belief.public_view(st, []), 3, 0)
    assert empty.batch_size == 0 and empty.hand.shape[1:] == st.hand.shape[1:]
    view = belief.public_view(st)
    a = belief.sample(rules, view, 4, 7, improve=Fraction(1, 2))
    b = belief.sample(rules, view, 4, 7, improve=0.5)
    assert (a.hand == b.hand).all() and (a.wall == b.wall).all()


def baoting_views() -> tuple[BatchGame, np.ndarray]:
    """An app batch and the games whose actor may declare 报听 (action 85) now."""
    game, rng = BatchGame("app", 64, seed=1), np.random.default_rng(0)
    while not game.mask[:, A.BAOTING].any():
        game.step(game.random_actions(rng))
    return game, np.flatnonzero(game.mask[:, A.BAOTING])


def test_a_view_sampled_under_other_rules_is_refused():
    """An app view where 报听 is legal sampled under guiyang gave samples without it."""
    game, g = baoting_views()
    view = belief.public_view(game.state, g)
    assert belief.sample(game.rules, view, 3, 0).mask[:, A.BAOTING].all()
    with pytest.raises(ValueError, match=r"^game 0 of the view was not made under these rules"):
        belief.sample(Rules.make("guiyang"), view, 3, 0)


def test_sample_takes_what_rules_make_takes_and_only_views():
    game, g = baoting_views()
    view = belief.public_view(game.state, g)
    want = belief.sample(game.rules, view, 2, 0)
    for spec in ("app", {"preset": "app", "overrides": {}}):
        got = belief.sample(spec, view, 2, 0)
        assert all(np.array_equal(getattr(got, f), getattr(want, f)) for f in vars(want))
    for bad in (None, game.state):
        with pytest.raises(TypeError, match=r"^sample takes a PublicView \(belief.public_view"):
            belief.sample(game.rules, bad, 2, 0)


@pytest.mark.parametrize(
    "games, message",
    [
        (np.array([True, False, True]), "got dtype bool"),
        ([-1], "^game index -1 out of range: expected a 1-D list or array of game indices 0-2$"),
        ([0.7], "got dtype float64"),
        ([[0, 1]], "got 2-D"),
        ([5], "^game index 5 out of range"),
        (2, "got 0-D"),
    ],
    ids=["bools", "negative", "fraction", "2-D", "past-end", "scalar"],
)
def test_public_view_refuses_bad_game_indices(games, message):
    """Booleans were read as indices 0/1, -1 as the last game, 0.7 as game 0, [[0, 1]]
    flattened and 5 a bare numpy IndexError."""
    game = BatchGame("guiyang", 3, seed=0)
    with pytest.raises(ValueError, match=message):
        belief.public_view(game.state, games)
    assert belief.public_view(game.state, [2, 2, 0]).batch_size == 3
    assert belief.public_view(game.state, []).batch_size == 0


def test_sample_size_is_checked_against_memory(monkeypatch):
    """k=10**9 was a MemoryError from numpy (about 300 GiB); now the batch's SizeError."""
    rules, st, _ = small_position()
    view = belief.public_view(st)
    with pytest.raises(SizeError, match=r"^k=1000000000 samples of 1 games needs about "):
        belief.sample(rules, view, 10**9, 0)
    monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", str(1 << 20))
    with pytest.raises(SizeError, match=r"^k=200 samples of 1 games needs about "):
        belief.sample(rules, view, 200, 0)
    assert belief.sample(rules, view, 20, 0).batch_size == 20


def test_belief_check_counts_readiness(capsys):
    """``agents.belief_check`` grades real and sampled hands; uniform samples are seldom ready
    where the real hands of the rule-based player often are; bad flags exit 2 naming them,
    before any play."""
    from agents import belief_check

    rules = Rules.make("guiyang")
    player = make_agent("rule", seed=1, rules=rules)
    df, danger = belief_check.grades(16, 80, 4, 4, [0.0, 1.0], player, rules, seed=1)
    late = df[df.river >= 5]
    ready = late.groupby("hands").shanten.agg(lambda s: (s <= 0).mean())
    assert ready["improve=0"] < 0.05 < 0.15 < min(ready["real"], ready["improve=1"])
    assert (
        belief_check.main(["--base", "rule", "--tables", "4", "--steps", "20", "--no-progress"])
        == 0
    )
    out = capsys.readouterr().out
    assert "real hands" in out and "AUC" in out
    real = danger[danger.hands == "real"]
    assert len(real) > 100 and (real.predicted == real.real).all()
    for source in ("improve=0", "improve=1"):
        part = danger[danger.hands == source]
        assert np.array_equal(part.real.to_numpy(), real.real.to_numpy())
        assert ((part.predicted >= 0) & (part.predicted <= 1)).all()
    bad = (
        (["--improve", "1,x"], "comma-separated"),
        (["--improve", "0,9"], "--improve"),
        (["--improve", "0,,1"], "comma-separated"),
        (["--improve", "0,1,1.0"], "'0,1,1.0': improve=1 is given twice"),
        (["--seed", "-1"], "--seed must be a non-negative integer, got -1"),
        (["--k", "0"], "--k"),
        (["--base", "nope"], "unknown agent spec"),
        (["--preset", "nope"], "nope"),
    )
    for flags, message in bad:
        with pytest.raises(SystemExit) as exit_info:
            belief_check.main(flags)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


def test_belief_check_help_shows_defaults_without_markup(capsys):
    from agents import belief_check

    with pytest.raises(SystemExit):
        belief_check.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default 0,1)" in text and "(default 64)" in text and "(default 8)" in text
    assert "``" not in text and ":func:" not in text


def test_danger_is_the_win_the_engine_offers():
    """``belief_check.dangerous`` says a discard is dangerous exactly where the engine, stepping
    that discard, offers another seat ``hu`` (passport and 过手胡 lock included), over random
    games of every preset with hands drawn towards ready (improved samples of the real games)."""
    from agents import belief_check

    rng = np.random.default_rng(8)
    offered = 0
    for variant in VARIANTS:
        game = BatchGame(variant, batch_size=16, seed=21)
        rules = game.rules
        for step in range(60):
            st = game.state
            if step % 6 == 0:
                g = np.flatnonzero(st.phase != OVER)
                drawn = belief.sample(rules, belief.public_view(st, g), 4, rng, improve=3.0)
                rows, kinds = belief_check.held_discards(drawn)
                said = belief_check.dangerous(rules, drawn, rows, kinds)
                after = drawn.take(rows)
                core.step(rules, after, A.DISCARD + kinds)
                hu = (after.claim_opts & core.OPT_HU) > 0
                window = (after.phase == RESPONSE) & (after.turn_seat == drawn.actor[rows])
                assert np.array_equal(said, window & hu.any(1))
                offered += int(said.sum())
            game.step(claiming_actions(st, rng))
    assert offered > 20


def test_danger_table_exact():
    """Brier score, the real share's and the AUC (ties count half) on a hand-made frame."""
    import pandas as pd

    from agents import belief_check

    real = np.array([True, False, False, False])
    df = pd.DataFrame(
        {
            "hands": ["real"] * 4 + ["improve=0"] * 4,
            "real": np.concatenate([real, real]),
            "predicted": np.concatenate([real.astype(float), [0.5, 0.5, 0.0, 0.25]]),
        }
    )
    row = belief_check.danger_table(df).loc["improve=0"]
    assert row["predicted"] == "31.2%" and row["real"] == "25.0%"
    assert row["Brier"] == "0.1406" and row["Brier of the real share"] == "0.1875"
    assert row["AUC"] == "0.833"
    for real, why in ((False, "no tile was dangerous"), (True, "no tile was safe")):
        same = df.assign(real=real)
        assert belief_check.danger_table(same).loc["improve=0", "AUC"] == f"n/a ({why})"
