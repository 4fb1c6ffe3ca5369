"""Decision-time search (``agents.search``, ``search:BASE``): it finds the winning discard a
weak base misses, it cannot act on hidden tiles, its options are checked, and it plays in the
arena, terminal play and the environments."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zhuoji_env
from agents import make_agent
from agents import search as search_module
from agents.arena import main as arena_main
from agents.base import Agent, decide
from agents.search import SearchAgent, parse_spec, rollout_probs
from zhuoji_env import belief
from zhuoji_env.engine import BatchGame, core
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.state import PONG_MELD, TURN, State, empty_state
from zhuoji_env.observation import encode
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import NUM_KINDS, parse_tiles


class LowestDiscard(Agent):
    """A weak, deterministic base: wins when it may, else discards its lowest kind, else takes
    the first legal action (a pass in a window)."""

    name = "lowest"

    def _act(self, obs, mask):
        out = np.where(mask[:, A.PASS], A.PASS, mask.argmax(1))
        discards = mask[:, :NUM_KINDS]
        out = np.where(discards.any(1), discards.argmax(1), out)
        return np.where(mask[:, A.HU], A.HU, out)


def position(own: str, concealed: dict[int, str], live: str) -> tuple[Rules, State]:
    """Seat 0 to discard from ``own`` (14 tiles, the last drawn); each other seat holds the
    ``concealed`` tiles and pongs of kinds it does not hold (4 - len/3 of them, from 1s up);
    ``live`` is the live wall in order; every other copy lies in the rivers."""
    rules = Rules.make("guiyang")
    st = empty_state(1, 4)
    st.hand[0, 0] = np.bincount(parse_tiles(own), minlength=NUM_KINDS)
    used = set(parse_tiles(own)) | {t for c in concealed.values() for t in parse_tiles(c)}
    used |= set(parse_tiles(live))
    free = iter(t for t in range(NUM_KINDS - 1, -1, -1) if t not in used)
    for seat, codes in concealed.items():
        st.hand[0, seat] = np.bincount(parse_tiles(codes), minlength=NUM_KINDS)
        for _ in range((13 - len(parse_tiles(codes))) // 3):
            t = next(free)
            st.meld[0, seat, t] = PONG_MELD
            st.meld_from[0, seat, t] = (seat + 1) % 4
    wall = parse_tiles(live)
    st.front[0], st.back[0] = 70, 70 + len(wall) - 1
    st.wall[0, 70 : 70 + len(wall)] = wall
    seen = st.hand[0].sum(0) + 3 * (st.meld[0] == PONG_MELD).sum(0)
    seen += np.bincount(wall, minlength=NUM_KINDS)
    assert (seen <= 4).all()
    for j, t in enumerate(np.repeat(np.arange(NUM_KINDS), 4 - seen)):
        s = j % 4
        st.river[0, s, st.river_len[0, s]] = t
        st.river_len[0, s] += 1
        st.river_counts[0, s, t] += 1
    st.discarded[0] = True
    st.phase[0], st.actor[0], st.turn_seat[0], st.dealer[0] = TURN, 0, 0, 1
    st.drawn[0], st.drew[0] = parse_tiles(own)[-1], True
    core.compute_masks(rules, st, np.arange(1))
    return rules, st


# Seat 0 holds 1m1m1m 2m2m2m 3m3m3m 4s4s 6p7p 9m: discarding 9m waits on 5p and 8p, seven of
# the nine unseen tiles; the lowest-discard base throws 1m and is not ready. In BAD the same
# unseen tiles lie so that seat 1 holds the other 9m: four pongs and 9m, a 大对子 that wins on
# the 9m discard (perfect information would keep it); seat 0 cannot know that.
OWN = "1m1m1m2m2m2m3m3m3m4s4s6p7p9m"
GOOD = ({1: "5p", 2: "8p", 3: "5p"}, "8p9m5p5p8p9m")
BAD = ({1: "9m", 2: "8p", 3: "5p"}, "8p5p5p9m5p8p")


def _search(rules, base, k=48, c=8, seed=0, improve=0.0, **opts):
    return SearchAgent(base, rules=rules, k=k, c=c, seed=seed, improve=improve, **opts)


def _choice(agent, st: State) -> int:
    obs = encode(st, np.array([0]), st.actor)
    return int(decide(agent, obs, st.mask, st, np.array([0]))[0])


@pytest.mark.parametrize("opts", [{}, {"k": 8, "z": 0, "race": 16}])
def test_search_finds_the_ready_discard_the_base_misses(opts):
    rules, st = position(OWN, *GOOD)
    base = LowestDiscard()
    assert _choice(base, st) == A.encode("discard", "1m")
    assert _choice(_search(rules, base, **opts), st) == A.encode("discard", "9m")


@pytest.mark.parametrize("improve", [0.0, 1.0])
def test_search_does_not_see_the_hidden_tiles(improve):
    """In BAD the 9m discard loses to seat 1's hidden 9m; search, which sees only the public
    view (the same in both), still makes the choice that is best on what it can see. (With
    ``improve`` the others' one-tile hands are all ready, so their exchanges are ties: a check
    that the option keeps to the view, not of what it models.)"""
    rules, good = position(OWN, *GOOD)
    _, bad = position(OWN, *BAD)
    assert not np.array_equal(good.hand, bad.hand)
    a, b = belief.public_view(good), belief.public_view(bad)
    for name in ("hand", "meld", "river", "river_counts", "wall", "mask"):
        assert np.array_equal(getattr(a.state, name), getattr(b.state, name)), name
    after = bad.copy()
    core.step(rules, after, np.array([A.encode("discard", "9m")]))
    assert after.mask[0, A.HU] and after.actor[0] == 1, "seat 1 may win on the 9m in BAD"
    agents = [_search(rules, LowestDiscard(), seed=3, improve=improve) for _ in (good, bad)]
    choices = [_choice(agent, s) for agent, s in zip(agents, (good, bad), strict=True)]
    assert choices == [A.encode("discard", "9m")] * 2


def test_scored_on_the_real_deal_the_hidden_tiles_decide():
    """``score`` plays the candidates from the deals it is given: from copies of the real game
    (as ``search_quality --judge real`` does) the 9m discard wins in GOOD and loses to seat 1's
    hidden 9m in BAD, where the view, and so the search, cannot tell the two apart."""
    cand = np.array([[A.encode("discard", "9m"), A.encode("discard", "1m")]])
    means = []
    for hidden in (GOOD, BAD):
        rules, st = position(OWN, *hidden)
        agent = _search(rules, LowestDiscard(), k=4, c=2)
        scores = agent.score(st.take(np.zeros(4, dtype=np.int64)), encode(st, [0], [0]), cand, 4)
        assert (scores == scores[:, :1]).all(), "a deterministic base on one real deal"
        means.append(scores[0].mean(0))
    assert means[0][0] > means[0][1] and means[1][0] < means[1][1]
    with pytest.raises(ValueError, match="k=4 deals for each of 1 decisions, got 3"):
        agent.score(st.take(np.zeros(3, dtype=np.int64)), encode(st, [0], [0]), cand, 4)


def test_candidates_follow_the_base_and_rollouts_are_paired():
    rules, st = position(OWN, *GOOD)
    agent = _search(rules, make_agent("rule", rules=rules), k=6, c=3)
    obs = encode(st, np.array([0]), st.actor)
    probs = rollout_probs(agent.base, obs, st.mask)
    cand = agent.candidates(obs, st.mask, probs)
    assert cand[0, 0] == agent.base.act(obs, st.mask)[0]
    assert st.mask[0, cand[0]].all() and len(set(cand[0].tolist())) == 3
    # the same action as two candidates meets the same deals and random numbers: equal scores
    twice = np.array([[cand[0, 0], cand[0, 1], cand[0, 1]]])
    scores = agent.evaluate(belief.public_view(st), obs, twice)
    assert scores.shape == (1, 6, 3)
    assert np.array_equal(scores[..., 1], scores[..., 2])
    random_base = _search(rules, make_agent("random", seed=4), k=6, c=2, seed=2)
    scores = random_base.evaluate(belief.public_view(st), obs, twice[:, [1, 1]])
    assert np.array_equal(scores[..., 0], scores[..., 1]), "a sampling base shares its numbers"


def test_choice_needs_a_margin_of_z_standard_errors():
    agent = SearchAgent(make_agent("random"), k=4, c=3, z=1.0)
    cand = np.array([[5, 6, 7], [5, 6, 5]])  # a row with two legal actions repeats its first
    clear = np.array([[0, 9, 1], [0, 9, 1], [0, 9, 1], [0, 9, 1]])
    noisy = np.array([[0, 10, 0], [0, -8, 0], [0, 10, 0], [0, -8, 0]])  # mean +1, se 5.2
    scores = np.stack([clear, noisy])
    assert agent.choose(scores, cand).tolist() == [1, 0]
    assert SearchAgent(make_agent("random"), k=4, c=3, z=0.0).choose(scores, cand)[1] == 1
    repeated = np.stack([clear, clear])
    repeated[1, :, 2] = 50  # a repeated candidate is never chosen, whatever it scores
    assert agent.choose(repeated, cand).tolist() == [1, 1]


@pytest.mark.parametrize(
    "spec,want",
    [
        ("rule", ("rule", {})),
        ("rule:k=8:c=2", ("rule", {"k": 8, "c": 2})),
        ("ppo-guiyang:greedy:unsure=0.9", ("ppo-guiyang:greedy", {"unsure": 0.9})),
        ("ppo:a:b.pt:k=4", ("ppo:a:b.pt", {"k": 4})),
        ("rule:z=0.5:c=4", ("rule", {"z": 0.5, "c": 4})),
        ("rule:c=all", ("rule", {"c": 86})),
        ("ppo-guiyang:leaf=1:k=64", ("ppo-guiyang", {"leaf": 1, "k": 64})),
        ("rule:confirm=128", ("rule", {"confirm": 128})),
        ("ppo-guiyang:race=64", ("ppo-guiyang", {"race": 64})),
        ("ppo-guiyang:leaf=3:mean=2", ("ppo-guiyang", {"leaf": 3, "mean": 2})),
        ("ppo-guiyang:improve=1", ("ppo-guiyang", {"improve": 1.0})),
        # a run folder named NAME=VALUE is part of the path, not an option
        ("ppo:lr=3e-4/latest.pt", ("ppo:lr=3e-4/latest.pt", {})),
        ("ppo:lr=3e-4/latest.pt:k=2", ("ppo:lr=3e-4/latest.pt", {"k": 2})),
        ("ppo:runs/k=8.pt:c=2", ("ppo:runs/k=8.pt", {"c": 2})),
        ("ppo:C:\\lr=3\\a.pt:k=2", ("ppo:C:\\lr=3\\a.pt", {"k": 2})),
    ],
)
def test_spec_options(spec, want):
    assert parse_spec(spec) == want


@pytest.mark.parametrize(
    "spec,match",
    [
        ("search", "needs a base agent"),
        ("search:rule:k=0", "out of range"),
        ("search:rule:k=x", "not an integer"),
        ("search:rule:c=1", "out of range"),
        ("search:rule:c=most", "c='most' is not an integer or 'all'"),
        ("search:rule:unsure=2", r"\(0, 1\]"),
        ("search:rule:z=-1", r"\[0, 10\]"),
        ("search:rule:z=x", "not a number"),
        ("search:rule:foo=1", "unknown option 'foo'"),
        ("search:ppo:lr=3e-4.pt", r"unknown option 'lr'.* goes with its folder: \./NAME=VALUE"),
        ("search:rule:k=2:k=3", "more than once"),
        ("search:ppo-guiyang:leaf=65", "out of range 0-64"),
        ("search:ppo-guiyang:leaf=x", "leaf='x' is not an integer"),
        ("search:rule:confirm=5000", "out of range 0-4096"),
        ("search:rule:confirm=1.5", "confirm='1.5' is not an integer"),
        ("search:rule:race=5000", "out of range 0-4096"),
        ("search:ppo-guiyang:leaf=3:mean=0", "mean=0 is out of range 1-64"),
        ("search:ppo-guiyang:mean=x", "mean='x' is not an integer"),
        ("search:ppo-guiyang:mean=3", r"needs leaf=3 or more \(got leaf=2\)"),
        ("search:rule:mean=2", r"needs value leaves \(leaf=2 or more, and a network base\)"),
        ("search:ppo-guiyang:leaf=0:mean=2", r"not whole-hand rollouts \(leaf=0\)"),
        ("search:rule:race=x", "race='x' is not an integer"),
        ("search:rule:race=32", "needs z=0 \\(got z=1\\)"),
        ("search:ppo-guiyang:race=32:z=0.5", "needs z=0 \\(got z=0.5\\)"),
        ("search:rule:improve=9", r"improve=9.0 must be a number in \[0, 8\]"),
        ("search:rule:improve=x", "improve='x' is not a number"),
        ("search:k=2", "no base agent"),
        ("search:rule:k", "search option 'k' needs a value: k=N"),
        ("search:rule:k=2:z", r"search option 'z' needs a value: z=X \(a number\)"),
        ("search:rule:leaf:k=2", "search option 'leaf' needs a value: leaf=N"),
        ("search:rule:greedy", "agent 'rule' takes no argument"),
        ("search:search:rule", "plays from observations"),
        ("search:nope", "unknown agent spec"),
    ],
)
def test_bad_specs_are_refused(spec, match):
    with pytest.raises(ValueError, match=match):
        make_agent(spec)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"base": "rule"}, TypeError, "search needs a base agent .*got 'rule'.*make_agent"),
        ({"base": None}, TypeError, "search needs a base agent .*got None"),
        ({"base": 5}, TypeError, "search needs a base agent .*got 5"),
        ({"unsure": "a"}, ValueError, r"unsure='a' must be a number in \(0, 1\] or None"),
        ({"unsure": True}, ValueError, r"unsure=True must be a number in \(0, 1\]"),
        ({"unsure": 1.5}, ValueError, r"unsure=1.5 must be a number in \(0, 1\]"),
        ({"z": "1"}, ValueError, r"z='1' must be a number in \[0, 10\]"),
        ({"z": True}, ValueError, r"z=True must be a number in \[0, 10\]"),
        ({"z": float("nan")}, ValueError, r"z=nan must be a number in \[0, 10\]"),
    ],
)
def test_the_constructor_checks_its_arguments_as_the_spec_does(kwargs, error, match):
    """``SearchAgent("rule")`` was built and failed in the arena; a string or bool ``unsure`` or
    ``z`` met a bare TypeError or went through as 1."""
    kwargs = {"base": make_agent("rule"), **kwargs}
    with pytest.raises(error, match=match):
        SearchAgent(**kwargs)


def test_the_spec_seed_is_checked_and_derives_the_same_seeds():
    with pytest.raises(ValueError, match="agent seed must be .*non-negative integer.*got -1"):
        make_agent("search:rule", seed=-1)
    with pytest.raises(TypeError, match="agent seed must be .*got 1.5"):
        make_agent("search:rule", seed=1.5)
    base_seed, own_seed = (int(s.generate_state(1)[0]) for s in np.random.SeedSequence(7).spawn(2))
    for seed in (7, np.int64(7), np.array(7)):
        agent = make_agent("search:random", seed=seed)
        assert agent.rng.integers(2**62) == np.random.default_rng(own_seed).integers(2**62)
        assert agent.base.rng.integers(2**62) == np.random.default_rng(base_seed).integers(2**62)
    a, b = (make_agent("search:random", seed=np.random.default_rng(3)) for _ in range(2))
    assert a.rng.integers(2**62) == b.rng.integers(2**62)  # drawn from the generator given


def test_act_without_a_view_is_refused():
    agent = make_agent("search:random:k=2")
    rules, st = position(OWN, *GOOD)
    obs = encode(st, np.array([0]), st.actor)
    with pytest.raises(ValueError, match="public view"):
        agent.act(obs, st.mask)
    other = position("1m1m1m2m2m2m3m3m3m4s4s6p7p7p", *GOOD)[1]
    with pytest.raises(ValueError, match="masks differ"):
        agent.act_view(obs, st.mask, belief.public_view(other))
    for wrong, name in ((st, "State"), (None, "NoneType")):  # a bare AttributeError before
        with pytest.raises(
            TypeError, match=rf"^act_view takes the games' PublicView .* got {name}"
        ):
            agent.act_view(obs, st.mask, wrong)


def test_an_environment_refuses_a_search_opponent_of_other_rules():
    """Made without rules, a search agent rolled out under guiyang's in a classic or app
    environment: every payment of its rollouts wrong, and nothing said."""
    from zhuoji_env.envs import RandomPolicy
    from zhuoji_env.envs.sb3 import SB3VecEnv
    from zhuoji_env.envs.single import SingleAgentEnv

    msg = r"holds other rules than this environment's \(every switch but .*\): its \{'preset': 'gu"
    with pytest.raises(ValueError, match="^opponents " + msg):
        SingleAgentEnv(rules="classic", opponents=make_agent("search:rule:k=2:c=2"))
    with pytest.raises(ValueError, match=r"^opponents\[1\] " + msg):
        SingleAgentEnv(rules="app", opponents=[RandomPolicy(), make_agent("rule"), RandomPolicy()])
    with pytest.raises(ValueError, match="^opponent " + msg):
        SB3VecEnv(2, "classic", opponent=make_agent("search:random:k=2"))
    env = SB3VecEnv(2, "app", opponent=make_agent("search:random:k=2", rules="app"))
    with pytest.raises(ValueError, match="^opponent " + msg):
        env.opponent = make_agent("rule")  # replaced between rollouts: checked the same way
    SingleAgentEnv(rules="classic", opponents=make_agent("search:rule:k=2", rules="classic"))
    SingleAgentEnv(hands_per_game=4, opponents=make_agent("rule"))  # plays no hand differently
    with pytest.raises(ValueError, match=r"^opponents holds other rules.*: its \{'preset': 'app'"):
        SingleAgentEnv(hands_per_game=4, opponents=make_agent("rule", rules="app"))


def test_arena_smoke(capsys):
    """A small arena of search against its base, batched over the tables: the same deals and
    seed give the same result."""
    argv = ["--agents", "search:rule:k=2:c=2,rule", "--deals", "2", "--seed", "5", "--no-progress"]
    assert arena_main(argv) == 0
    first = capsys.readouterr().out.splitlines()[:-1]  # the last line has the wall time
    assert any(line.startswith("search:rule:k=2:c=2 ") for line in first)
    assert arena_main(argv) == 0
    assert capsys.readouterr().out.splitlines()[:-1] == first


def test_environment_opponent_and_aec_view():
    from zhuoji_env.envs.single import SingleAgentEnv

    env = SingleAgentEnv(opponents=make_agent("search:random:k=2:c=2", seed=1))
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        legal = np.flatnonzero(info["action_mask"])
        obs, reward, done, trunc, info = env.step(int(rng.choice(legal)))
    aec = zhuoji_env.env()
    aec.reset(seed=2)
    agent = make_agent("search:rule:k=2:c=2", seed=0)
    for _ in range(10):
        ob = aec.observe(aec.agent_selection)
        mask = ob["action_mask"].astype(bool)
        a = agent.act_view(ob["observation"][None], mask[None], aec.unwrapped.public_view())
        aec.step(int(a[0]))


def test_batched_search_equals_one_table_at_a_time_in_its_views():
    """The views of several tables, searched together, are the views of each table alone."""
    game = BatchGame("guiyang", batch_size=6, seed=3)
    whole = belief.public_view(game.state)
    for i in range(6):
        one = belief.public_view(game.state, [i])
        assert np.array_equal(whole.take([i]).state.hand, one.state.hand)
        assert np.array_equal(whole.take([i]).an_kongs, one.an_kongs)


def test_bench_search_counts_and_refuses(capsys):
    from agents import bench_search

    argv = ["--agent", "search:rule:k=2:c=2", "--tables", "1,3", "--warmup", "2"]
    assert bench_search.main([*argv, "--decisions", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert [r["tables"] for r in out["rows"]] == [1, 3]
    assert all(0 < r["searched"] <= r["tables"] and r["seconds"] > 0 for r in out["rows"])
    assert out["seed"] == 0 and out["warmup"] == 2 and out["decisions"] == 1
    # no decision searched (ppo-guiyang sure at table 1's first decision): no cost, no ratio;
    # its time divided by 1 was the baseline of every ratio
    none = ["--agent", "search:ppo-guiyang", "--tables", "1,16", "--warmup", "1"]
    assert bench_search.main([*none, "--decisions", "1", "--json"]) == 0
    text = capsys.readouterr().out.splitlines()
    rows = json.loads(text[-1])["rows"]
    assert rows[0]["searched"] == 0 and rows[0]["ms_per_decision"] is None
    assert rows[1]["searched"] > 0 and rows[1]["ms_per_decision"] > 0
    assert text[-2].split()[-1] == "-"  # no ratio against a row without a cost
    for bad, said in (
        (["--agent", "rule"], "--agent must be a search:BASE spec"),
        (["--tables", "0"], "--tables must be integers >= 1"),
        (["--tables", "1,,3"], "--tables must be integers >= 1"),
        (["--seed", "-1"], "--seed must be a non-negative integer, got -1"),
    ):
        with pytest.raises(SystemExit) as exc:
            bench_search.main(bad)
        assert exc.value.code == 2
        assert said in capsys.readouterr().err


def test_a_repeated_candidate_is_scored_as_the_first_without_being_played_out(monkeypatch):
    """Rows with fewer legal actions than c repeat their first candidate: those columns take
    the first's scores and add no rollout games, and the other columns score as with c equal
    to the legal count (same deals, same random numbers)."""
    game = BatchGame("guiyang", batch_size=64, seed=2)
    rng = np.random.default_rng(0)
    while True:
        game.step(game.random_actions(rng))
        legal = game.state.mask.sum(1)
        rows = np.flatnonzero(legal == 2)
        if rows.size and (legal > 3).any():
            rows = np.array([rows[0], np.flatnonzero(legal > 3)[0]])
            break
    st, g = game.state, np.arange(64)
    obs, mask, view = encode(st, g, st.actor)[rows], st.mask[rows], belief.public_view(st, rows)
    played = []
    real = search_module.rollout
    monkeypatch.setattr(
        search_module, "rollout", lambda *a: played.append(a[2].batch_size) or real(*a)
    )

    def scores(c):
        agent = SearchAgent(make_agent("random", seed=1), k=5, c=c, seed=6)
        cand = agent.candidates(obs, mask, rollout_probs(agent.base, obs, mask))
        return cand, agent.evaluate(view, obs, cand)

    cand, three = scores(3)
    assert cand[0, 2] == cand[0, 0] and len(set(cand[1])) == 3
    assert played == [5 * 2 + 5 * 3]
    assert np.array_equal(three[0, :, 2], three[0, :, 0])
    two_cand, two = scores(2)
    assert np.array_equal(two_cand, cand[:, :2]) and np.array_equal(two[0], three[0, :, :2])


class ValuedRandom(Agent):
    """Wins when it may, else uniform over the legal actions, with a value of 0.25 everywhere
    at a reward scale of 0.05: 5 points."""

    name = "valued"
    reward_scale = 0.05

    def _act(self, obs, mask):
        return np.array([self.rng.choice(np.flatnonzero(m)) for m in mask])

    def policy(self, obs, mask):
        probs = np.where(mask[:, A.HU, None], np.eye(mask.shape[1])[A.HU], mask)
        return probs / probs.sum(1, keepdims=True), np.full(len(mask), 0.25)


def _midgame(seed: int) -> tuple[Rules, State]:
    game = BatchGame("guiyang", batch_size=48, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(64):  # late in the hand: some hands end before the seat decides twice
        game.step(game.random_actions(rng))
    return game.rules, game.state


def test_leaf_rollouts_stop_at_the_seats_next_choice_and_score_by_value():
    rules, start = _midgame(4)
    seat = start.actor.astype(np.int64)
    match, pair = np.zeros((48, len(search_module._MATCH_COLS)), np.float32), np.arange(48)
    ended = 0
    for leaf in (1, 2):
        st = start.copy()
        got = search_module.rollout(
            rules, ValuedRandom(), st, match, pair, np.random.default_rng(0), seat, leaf
        )
        over = st.phase == core.OVER
        ended += over.sum()
        assert (~over).any()
        assert np.array_equal(got[over], search_module.seat_scores(st, seat)[over])
        assert (got[~over] == 5.0).all(), "a stopped game is scored by the value, in points"
        assert (st.actor[~over] == seat[~over]).all() and (st.mask[~over].sum(1) > 1).all()
    assert ended
    st = start.copy()
    got = search_module.rollout(
        rules, ValuedRandom(), st, match, pair, np.random.default_rng(0), seat, 0
    )
    assert (st.phase == core.OVER).all()
    assert np.array_equal(got, search_module.seat_scores(st, seat))


class ObsValued(ValuedRandom):
    """:class:`ValuedRandom` whose value changes with what the seat sees."""

    def policy(self, obs, mask):
        return super().policy(obs, mask)[0], 0.001 * obs.sum(1)


@pytest.mark.parametrize("leaf,mean", [(2, 2), (3, 2), (3, 3)])
def test_leaf_mean_averages_the_values_of_the_seat_s_last_decisions(leaf, mean):
    rules, start = _midgame(7)
    seat = start.actor.astype(np.int64)
    match, pair = np.zeros((48, len(search_module._MATCH_COLS)), np.float32), np.arange(48)

    def scored(n, m):  # the same rollouts (one seed), stopped at the seat's n-th decision
        st = start.copy()
        rng = np.random.default_rng(0)
        got = search_module.rollout(rules, ObsValued(), st, match, pair, rng, seat, n, m)
        return got, st.phase == core.OVER

    # each single leaf is the value there, or the settlement where the hand ended first
    singles = [scored(n, 1)[0] for n in range(leaf - mean + 1, leaf + 1)]
    assert len({tuple(s) for s in singles}) == mean, "the values differ from leaf to leaf"
    got, over = scored(leaf, mean)
    assert over.any() and (~over).any(), "some hands end before the leaf, some reach it"
    assert (singles[-1][over] != 0).any(), "some of the hands that end settle to other than 0"
    assert np.allclose(got, np.mean(singles, axis=0))
    assert make_agent(f"search:ppo-guiyang:leaf={leaf}:mean={mean}").mean == mean
    with pytest.raises(ValueError, match=f"mean must be in 1-{leaf} with leaf={leaf}, got 0"):
        search_module.rollout(rules, ObsValued(), start.copy(), match, pair, 0, seat, leaf, 0)


def test_leaf_search_plays_and_needs_a_value():
    rules, st = _midgame(5)
    agent = SearchAgent(ValuedRandom(seed=1), rules=rules, k=3, c=2, unsure=None, leaf=1, seed=2)
    g = np.arange(48)
    acts = decide(agent, encode(st, g, st.actor), st.mask, st, g)
    assert st.mask[g, acts].all()
    assert make_agent("search:ppo-guiyang:leaf=3").leaf == 3
    specs = ("search:ppo-guiyang", "search:ppo-guiyang:leaf=0", "search:rule", "search:random")
    got = {
        spec: (lambda a: (a.leaf, a.k, a.unsure, a.z, a.improve))(make_agent(spec))
        for spec in specs
    }
    assert got == {
        "search:ppo-guiyang": (2, 32, 0.9, 0.0, 0.0),
        "search:ppo-guiyang:leaf=0": (0, 16, 0.9, 1.0, 0.0),
        "search:rule": (0, 16, 0.9, 1.0, 1.0),
        "search:random": (0, 16, 0.9, 1.0, 1.0),
    }, "a network base defaults to value leaves (k and z follow leaf), one without to improve=1"
    assert make_agent("search:rule:improve=0").improve == 0.0
    given = make_agent("search:ppo-guiyang:k=8:unsure=0.7:z=2")
    assert (given.k, given.unsure, given.z) == (8, 0.7, 2)
    assert SearchAgent(make_agent("ppo-guiyang"), unsure=None).unsure is None
    followed = SearchAgent(make_agent("ppo-guiyang"), k=None, z=None, leaf=0)
    assert (followed.k, followed.unsure, followed.z) == (16, 0.9, 1.0)


def test_a_greedy_network_base_is_searched_and_ranked_by_its_softmax():
    rules, st = _midgame(5)
    g = np.arange(48)
    obs, mask = encode(st, g, st.actor), st.mask.astype(bool)
    soft = make_agent("search:ppo-guiyang:c=3")
    greedy = make_agent("search:ppo-guiyang:greedy:c=3")
    ask, probs = greedy.to_search(obs, mask)
    assert np.array_equal(ask, soft.to_search(obs, mask)[0]) and ask.any()
    assert np.allclose(probs[ask].sum(1), 1, atol=1e-5) and (probs[ask].max(1) < 1).all()
    rows = np.flatnonzero(ask & (mask.sum(1) >= 3))
    top = np.argsort(-np.where(mask, probs, -1.0), axis=1, kind="stable")[rows, :3]
    cand = greedy.candidates(obs[rows], mask[rows], probs[rows])
    assert np.array_equal(np.sort(cand, 1), np.sort(top, 1))
    with pytest.raises(ValueError, match="has none"):
        make_agent("search:rule:leaf=1")


def test_reward_scale_of_reads_the_training():
    from agents.ppo import REWARD_SCALE, reward_scale_of

    ppo = "python -m training.ppo_selfplay --num-envs 8"
    assert reward_scale_of({"args": {"reward_scale": 0.02}, "stages": []}) == 0.02
    assert reward_scale_of({}) == REWARD_SCALE
    stages = [{"command": f"{ppo} --reward-scale 0.01"}, {"command": f"{ppo} --seed 2"}]
    assert reward_scale_of({"stages": stages}) == REWARD_SCALE, "the last stage ran at 0.1"
    distill = {"command": "python -m training.distill_search --base ppo-classic"}
    stages = [{"command": f"{ppo} --reward-scale=0.01"}, distill]
    assert reward_scale_of({"stages": stages}) == 0.01, "a distillation does not fit the value"
    assert make_agent("ppo-classic").reward_scale == 0.01
    assert make_agent("ppo-guiyang").reward_scale == 0.1


def _scripted(monkeypatch, agent: SearchAgent, scores_of):
    """Let ``agent`` decide at the GOOD position with its rollouts replaced by
    ``scores_of(k, c)`` (scores ``[1, k, c]``); returns its action, BASE's favourite, the
    ``(k, c)`` of each evaluation and the candidates of each."""
    st = position(OWN, *GOOD)[1]
    asked, cands = [], []

    def evaluate(view, obs, cand, k=None):
        asked.append((k, cand.shape[1]))
        cands.append(cand.copy())
        return scores_of(k, cand.shape[1])

    monkeypatch.setattr(agent, "evaluate", evaluate)
    obs = encode(st, np.array([0]), st.actor)
    acts, _, fav = agent.act_view_searched(obs, st.mask, belief.public_view(st))
    return acts[0], fav[0], asked, cands


@pytest.mark.parametrize(
    "leader,raced,want",
    [
        # candidate 2 leads the favourite by a mean of 0.5 on 4 deals, less than two standard
        # errors (2 * 0.65): a close call, raced on 6 fresh deals
        ([0, 2, -1, 1], -0.2, 2),  # 2 loses the race by 1.2 but leads by 0.8 over all 10
        ([0, 2, -1, 1], -1.0, 0),  # 2 loses the race by 6, and over all 10 deals
        ([1, 1, 1, 1], -1.0, 2),  # a lead of 1 on every deal, no spread: clear, not raced
    ],
)
def test_race_replays_a_close_call_on_fresh_deals(monkeypatch, leader, raced, want):
    """With ``race=K2`` the two best means, where the better leads by less than ``RACE_SE``
    standard errors, are played out again on K2 fresh deals and the better mean over all
    ``k + K2`` deals is played; a clear lead is not raced."""
    rules = Rules.make("guiyang")
    agent = SearchAgent(make_agent("rule", rules=rules), rules=rules, k=4, c=3, z=0, race=6)

    def scores_of(k, c):
        if k == 4:  # the favourite scores 0, candidate 1 -9, candidate 2 ``leader``
            return np.stack([np.zeros(4), np.full(4, -9.0), leader], axis=1)[None]
        return np.stack([np.full(k, raced), np.zeros(k)], axis=1)[None]

    act, fav, asked, cands = _scripted(monkeypatch, agent, scores_of)
    first = cands[0][0]
    if leader == [1, 1, 1, 1]:
        assert asked == [(4, 3)]
    else:
        assert asked == [(4, 3), (6, 2)]
        assert cands[1].tolist() == [[first[2], first[0]]], "the leader, then the runner-up"
    assert act == first[want] and fav == first[0]


@pytest.mark.parametrize("again,want", [(+1.0, 1), (-1.0, 0)])
def test_confirm_replays_an_overruling_on_fresh_deals(monkeypatch, again, want):
    """With ``confirm=K2`` a candidate that beat the favourite on k deals is played only if it
    beats it again on K2 fresh deals, the two of them alone."""
    rules = Rules.make("guiyang")
    agent = SearchAgent(make_agent("rule", rules=rules), rules=rules, k=4, c=3, confirm=6, seed=0)

    def scores_of(k, c):
        scores = np.zeros((1, k, c))
        scores[:, :, 1] = 5.0 + np.arange(k) if k == 4 else again * (1 + np.arange(k))
        return scores

    act, fav, asked, cands = _scripted(monkeypatch, agent, scores_of)
    assert asked == [(4, 3), (6, 2)]
    assert cands[1].tolist() == [[cands[0][0, 0], cands[0][0, 1]]], "the favourite and the best"
    assert act == (cands[0][0, 1] if want else fav) and fav == cands[0][0, 0]
    agent.confirm = 0
    assert _scripted(monkeypatch, agent, scores_of)[2] == [(4, 3)]


class _Recorder(Agent):
    """Plays its first legal action and keeps every observation it was shown."""

    name = "recorder"

    def __init__(self):
        super().__init__()
        self.seen = []

    def _act(self, obs, mask):
        self.seen.append(obs.copy())
        return mask.argmax(1)


@pytest.mark.parametrize("num_players", [4, 3])
def test_rollout_observations_carry_each_observers_own_match_scores(num_players):
    """Observations list match scores from their observer on; rollouts showed every seat the
    searching seat's, so another seat saw the searcher's score as its own."""
    from zhuoji_env.observation import SLICES

    game = BatchGame("guiyang", 1, seed=3, hands_per_game=2, num_players=num_players)
    game.scores[0] = [7, -5, 2, -4][:num_players]  # as if after a first hand: every seat's own
    rng = np.random.default_rng(3)
    st = game.state
    while st.mask[0].sum() < 2:
        game.step(game.random_actions(rng))
    seat, n = int(st.actor[0]), num_players
    obs = encode(st, [0], [seat], game.scores, game.hand_no, 2)
    base = _Recorder()
    agent = SearchAgent(base, rules=game.rules, k=2, c=2, unsure=None, improve=0.0, seed=0)
    agent.act_view(obs, st.mask, belief.public_view(st))
    seen = np.concatenate(base.seen[1:])  # the first call is the decision itself
    observer = (int(st.dealer[0]) - seen[:, SLICES["dealer"]].argmax(1)) % n
    want = np.stack([np.roll(game.scores[0], -int(w)) for w in observer]) / 100
    assert (observer != seat).sum() > 10
    np.testing.assert_allclose(seen[:, SLICES["scores"]][:, :n], want)
    assert (seen[:, SLICES["scores"]][:, n:] == 0).all()
