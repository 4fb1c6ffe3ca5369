"""Baseline agents: legality over many states, the interface, greedy and rule behaviour."""

from __future__ import annotations

import re
import sys
from collections import Counter

import numpy as np
import pytest
from exception_helpers import notes
from scenario_helpers import make_wall

from agents import (
    AGENT_FACTORIES,
    Agent,
    GreedyAgent,
    RandomAgent,
    RuleAgent,
    known_specs,
    make_agent,
    register_agent,
)
from agents.arena import run_arena
from agents.base import P_RESPONSE, P_ROB, add_note, decide, live_counts, phase, visible_counts
from agents.rule import poisson_sf
from zhuoji_env import hands
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.game import BatchGame
from zhuoji_env.engine.state import BAOTING_DISCARD, OVER, RESPONSE, TURN
from zhuoji_env.observation import OBS_SIZE, encode
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import to_counts

VARIANTS = [
    "guiyang",
    "classic",
    "app",
    {"preset": "guiyang", "overrides": {"num_players": 3}},
    {"preset": "app", "overrides": {"num_players": 3}},
    {"preset": "guiyang", "overrides": {"baoting": True, "pass_win": "forbid"}},
]


def _wall(dealer: int, hands_by_seat: dict[int, str], n: int = 4, live: str = "") -> np.ndarray:
    """A one-game wall batch dealing the given hands (others from the sorted fill)."""
    wall = make_wall(dealer, hands_by_seat, live=live, n=n, partial=True)
    return np.array([wall], dtype=np.int8)


def _obs(st, g=0):
    return encode(st, np.array([g]), np.array([st.actor[g]]))


# --------------------------------------------------------------------------- legality
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: str(v))
def test_agents_choose_only_legal_actions(variant):
    """Thousands of states from games played by a mix of the agents themselves."""
    rules = Rules.make(variant)
    game = BatchGame(rules, 96, seed=7, auto_reset=True)
    agents = [RandomAgent(seed=1), GreedyAgent(seed=2), RuleAgent(seed=3, rules=rules)]
    rng = np.random.default_rng(0)
    phases, checked = Counter(), 0
    for step in range(90):
        st = game.state
        g = np.arange(game.batch_size)
        obs = encode(st, g, st.actor)
        mask = game.mask
        picks = []
        for agent in agents:
            a = agent.act(obs, mask)
            assert a.shape == (game.batch_size,)
            assert mask[g, a].all(), f"{agent.name} chose an illegal action"
            picks.append(a)
        checked += 3 * game.batch_size
        phases.update(st.phase.tolist())
        who = rng.integers(3, size=game.batch_size) if step % 2 else (g + step) % 3
        game.step(np.choose(who, picks))
    assert checked >= 25_000
    assert phases[TURN] and phases[RESPONSE]
    if rules.baoting:
        assert phases[BAOTING_DISCARD], "no 报听 was declared"


def test_single_observation_and_shapes():
    game = BatchGame("guiyang", 4, seed=1)
    st = game.state
    obs = encode(st, np.arange(4), st.actor)
    # RandomAgent (envs.common.RandomPolicy) checks the mask first and the observation against it
    random_says = (
        rf"obs must have shape \[4, {OBS_SIZE}\] to match the mask, got \(4, 10\)",
        rf"obs must have shape \[2, {OBS_SIZE}\] to match the mask, got \(4, {OBS_SIZE}\)",
    )
    encoded_says = (
        rf"obs must have shape \[k, {OBS_SIZE}\] or \[{OBS_SIZE}\], got \(4, 10\)",
        r"mask must have shape \[4, 86\] to match obs, got \(2, 86\)",
    )
    for agent, (bad_obs, bad_mask) in (
        (RandomAgent(0), random_says),
        (GreedyAgent(0), encoded_says),
        (RuleAgent(0), encoded_says),
    ):
        one = agent.act(obs[0], game.mask[0])
        assert isinstance(one, int) and game.mask[0, one]
        assert agent.act(obs[:0], game.mask[:0]).shape == (0,)
        with pytest.raises(ValueError, match=bad_obs):
            agent.act(obs[:, :10], game.mask)
        with pytest.raises(ValueError, match=bad_mask):
            agent.act(obs, game.mask[:2])
        with pytest.raises(ValueError, match="every mask row needs at least one legal action"):
            agent.act(obs, np.zeros_like(game.mask))
    assert obs.shape[1] == OBS_SIZE


def test_random_agent_is_uniform_and_seeded():
    mask = np.zeros((20_000, A.NUM_ACTIONS), bool)
    mask[:, [3, 30, 84]] = True
    obs = np.zeros((20_000, OBS_SIZE), np.float32)
    a = RandomAgent(seed=5).act(obs, mask)
    freq = np.bincount(a, minlength=A.NUM_ACTIONS)[[3, 30, 84]] / 20_000
    assert np.allclose(freq, 1 / 3, atol=0.02)
    assert (RandomAgent(seed=5).act(obs, mask) == a).all()


# --------------------------------------------------------------------------- greedy
def test_greedy_discard_keeps_least_shanten():
    rules = Rules.make("guiyang")
    # 1m2m3m 4m5m6m 7p8p9p 1s1s 5s + 9m (isolated) + 3p (isolated): shanten 1 now;
    # the best discards (9m, 3p, 5s) keep it at 1 (then one useful draw from ready)
    wall = _wall(0, {0: "1m2m3m4m5m6m7p8p9p1s1s5s9m3p"})
    st = core.deal(rules, wall, 0)
    obs = _obs(st)
    h = to_counts("1m2m3m4m5m6m7p8p9p1s1s5s9m3p")
    after = {t: int(hands.shanten(h - np.eye(27, dtype=np.int8)[t])) for t in np.flatnonzero(h)}
    best = min(after.values())
    for seed in range(10):
        a = GreedyAgent(seed=seed).act(obs[0], st.mask[0])
        assert a < 27 and after[a] == best
        assert best <= int(hands.shanten(h)) + 0  # keeps (or lowers) the shanten


def test_greedy_wins_and_passes():
    rules = Rules.make("guiyang")
    win = "1m2m3m4m5m6m7p8p9p1s1s5s6s7s"
    st = core.deal(rules, _wall(0, {0: win}), 0)
    assert GreedyAgent(0).act(_obs(st)[0], st.mask[0]) == A.HU
    assert RuleAgent(0).act(_obs(st)[0], st.mask[0]) == A.HU
    # seat 1 holds a pair of 9s; the dealer discards 9s: greedy passes, never pongs
    seats = {0: "1m2m3m4m5m6m7p8p9p1s1s5s6s9s", 1: "9s9s1p2p3p4p5p6p7m8m9m2s3s"}
    st = core.deal(rules, _wall(0, seats), 0)
    core.step(rules, st, np.array([A.DISCARD + 26]))
    assert st.phase[0] == RESPONSE and st.actor[0] == 1 and st.mask[0, A.PONG]
    assert GreedyAgent(0).act(_obs(st)[0], st.mask[0]) == A.PASS


# --------------------------------------------------------------------------- rule
def _states_with(variant, pred, games=128, steps=120, seed=3):
    """(obs, mask, extra) of actors in states where ``pred(st, i)`` holds, from mixed play."""
    rules = Rules.make(variant)
    game = BatchGame(rules, games, seed=seed)
    players = [RandomAgent(seed=1), RuleAgent(seed=2, rules=rules)]
    rng = np.random.default_rng(seed)
    found_obs, found_mask, found_lock = [], [], []
    for _ in range(steps):
        st = game.state
        g = np.arange(games)
        obs = encode(st, g, st.actor)
        sel = np.array([pred(st, i) for i in g])
        if sel.any():
            found_obs.append(obs[sel])
            found_mask.append(game.mask[sel])
            found_lock.append(st.pass_lock[g[sel], st.actor[sel]])
        picks = [p.act(obs, game.mask) for p in players]
        game.step(np.choose(rng.integers(2, size=games), picks))
    return (
        np.concatenate(found_obs),
        np.concatenate(found_mask),
        np.concatenate(found_lock),
        rules,
    )


@pytest.mark.parametrize("variant", ["guiyang", "app"])
def test_rule_wins_whenever_it_may(variant):
    obs, mask, locked, rules = _states_with(
        variant, lambda st, i: st.mask[i, A.HU], games=192, steps=150
    )
    assert len(obs) >= 30
    a = RuleAgent(0, rules=rules).act(obs, mask)
    penalty = rules.pass_win == "penalty"
    window = np.isin(phase(obs), [P_RESPONSE, P_ROB])
    expect_hu = ~(locked & window & penalty)
    assert (a[expect_hu] == A.HU).all()
    assert (a[~expect_hu] != A.HU).all()  # a locked hu would only pay the penalty
    g = GreedyAgent(0).act(obs, mask)
    assert (g[expect_hu] == A.HU).all() and (g[~expect_hu] != A.HU).all()


def test_rule_declares_baoting_when_ready():
    rules = Rules.make("app")
    # the dealer's 14 tiles: discarding 9s leaves 1m..9m 1p1p 5p6p, ready on 4p/7p
    st = core.deal(rules, _wall(0, {0: "1m2m3m4m5m6m7m8m9m1p1p5p6p9s"}), 0)
    assert st.mask[0, A.BAOTING]
    agent = RuleAgent(0, rules=rules)
    assert agent.act(_obs(st)[0], st.mask[0]) == A.BAOTING
    core.step(rules, st, np.array([A.BAOTING]))
    assert st.phase[0] == BAOTING_DISCARD
    a = agent.act(_obs(st)[0], st.mask[0])
    assert a == A.DISCARD + 26  # the only discard that keeps 4p/7p


def test_rule_declares_baoting_in_random_app_states():
    obs, mask, _, rules = _states_with(
        "app", lambda st, i: st.mask[i, A.BAOTING], games=256, steps=40
    )
    assert len(obs) >= 5
    a = RuleAgent(0, rules=rules).act(obs, mask)
    h = np.rint(obs[:, :27]).astype(np.int8)
    live = live_counts(obs)
    for i in range(len(obs)):
        ready_with_live = False
        for t in np.flatnonzero(h[i]):
            after = h[i] - np.eye(27, dtype=np.int8)[t]
            w = hands.waits(after) & (after < 4) & (live[i] > 0)
            ready_with_live |= bool(w.any())
        assert (a[i] == A.BAOTING) == ready_with_live


def test_rule_takes_a_free_concealed_kong():
    rules = Rules.make("guiyang")
    # four 9s next to a hand one tile from ready: the kong costs nothing
    st = core.deal(rules, _wall(0, {0: "9s9s9s9s1m2m3m4p5p6p7m8m2s4s"}), 0)
    assert st.mask[0, A.ANGANG + 26]
    assert RuleAgent(0).act(_obs(st)[0], st.mask[0]) == A.ANGANG + 26


def test_rule_pongs_towards_a_better_hand_and_passes_otherwise():
    rules = Rules.make("guiyang")
    # seat 1: three pairs and two triplets (大对子 one pong from ready)
    ddz = "2m2m5p5p8s8s3m3m3m6p6p6p9m"
    st = core.deal(rules, _wall(0, {0: "1m4m7m1p4p7p2s5s9s9s3s6s8p8s", 1: ddz}), 0)
    core.step(rules, st, np.array([A.DISCARD + 25]))  # the dealer discards 8s
    assert st.phase[0] == RESPONSE and st.actor[0] == 1 and st.mask[0, A.PONG]
    assert RuleAgent(0).act(_obs(st)[0], st.mask[0]) == A.PONG
    # a complete sequence hand ready on 1s/4s: a pong of 9m would break it
    ready = "1m2m3m4p5p6p7p8p9p2s3s9m9m"
    st = core.deal(rules, _wall(0, {0: "1m4m7m1p4p7p2s5s9s9s3s6s8p9m", 1: ready}), 0)
    core.step(rules, st, np.array([A.DISCARD + 8]))  # the dealer discards 9m
    assert st.phase[0] == RESPONSE and st.actor[0] == 1 and st.mask[0, A.PONG]
    assert RuleAgent(0).act(_obs(st)[0], st.mask[0]) == A.PASS


def test_rule_is_deterministic_and_uses_only_the_observation():
    game = BatchGame("guiyang", 64, seed=9)
    st = game.state
    obs = encode(st, np.arange(64), st.actor)
    a = RuleAgent(seed=1).act(obs, game.mask)
    b = RuleAgent(seed=2).act(obs.copy(), game.mask.copy())
    assert (a == b).all()


# --------------------------------------------------------------------------- helpers
def test_visible_and_live_counts():
    rules = Rules.make("guiyang")
    st = core.deal(rules, _wall(0, {0: "1m1m1m2m3m4m5m6m7m8m9m9m9m9m"}), 0)
    core.step(rules, st, np.array([A.DISCARD + 0]))  # 1m into the river
    obs = encode(st, np.array([0]), np.array([0]))  # the discarder's view
    vis = visible_counts(obs)[0]
    assert vis[0] == 3 and vis[8] == 4 and vis[1] == 1
    assert live_counts(obs)[0, 0] == 1 and live_counts(obs)[0, 8] == 0


def test_poisson_sf():
    from math import exp, factorial

    lam = 2.5
    for k in range(6):
        expect = 1 - sum(exp(-lam) * lam**j / factorial(j) for j in range(k))
        assert poisson_sf(np.array([k]), np.array([lam]))[0] == pytest.approx(expect)


# --------------------------------------------------------------------------- registry
def test_make_agent_specs():
    assert {"random", "greedy", "rule"} <= set(known_specs())
    assert isinstance(make_agent("random", seed=1), RandomAgent)
    assert isinstance(make_agent("greedy"), GreedyAgent)
    assert isinstance(make_agent("rule", rules="app"), RuleAgent)
    with pytest.raises(ValueError, match=r"unknown agent spec 'nosuch:x.pt'.*greedy.*random.*rule"):
        make_agent("nosuch:x.pt")
    with pytest.raises(ValueError, match=r"^agent 'random' takes no argument, got random:3$"):
        make_agent("random:3")


def test_register_agent_hook():
    class Fixed(Agent):
        name = "fixed"

        def __init__(self, path, seed=None):
            super().__init__(seed)
            self.path = path

        def _act(self, obs, mask):
            return mask.argmax(-1)

    register_agent("fixedtest", lambda arg, seed=None, rules=None: Fixed(arg, seed))
    try:
        agent = make_agent("fixedtest:some/ckpt.pt", seed=0)
        assert isinstance(agent, Fixed) and agent.path == "some/ckpt.pt"
        with pytest.raises(
            ValueError,
            match=r"^agent prefix 'fixedtest' is already registered \(pass replace=True\)$",
        ):
            register_agent("fixedtest", lambda arg, seed=None, rules=None: Fixed(arg))
        with pytest.raises(
            ValueError,
            match=r"^bad agent prefix 'a:b': a non-empty name without ':', ',', '#' or spaces$",
        ):
            register_agent("a:b", lambda arg, seed=None, rules=None: Fixed(arg))
    finally:
        AGENT_FACTORIES.pop("fixedtest", None)


def test_a_bad_agent_is_named_not_trusted():
    """Found by a probe: a prefix with spaces that make_agent can never reach, a factory that
    is not callable or returns no agent, and actions that are floats (silently truncated),
    of the wrong shape, or illegal (blamed on a seat, not the agent) were all let through."""
    for prefix in (" rule", "rule ", "a b"):
        with pytest.raises(ValueError, match="without ':', ',', '#' or spaces"):
            register_agent(prefix, lambda arg, seed=None, rules=None: None)
    with pytest.raises(ValueError, match="the factory must be callable .* got int"):
        register_agent("fivetest", 5)

    class Returns(Agent):
        def __init__(self, out):
            super().__init__(0)
            self.out = out

        def _act(self, obs, mask):
            return self.out(mask)

        def __repr__(self):
            return "Returns()"

    register_agent("objtest", lambda arg, seed=None, rules=None: object())
    try:
        with pytest.raises(ValueError, match="factory returned a object without act or reseed"):
            make_agent("objtest")
    finally:
        AGENT_FACTORIES.pop("objtest", None)
    obs = np.zeros((2, OBS_SIZE), np.float32)
    mask = np.zeros((2, 86), bool)
    mask[:, [3, 5]] = True
    assert Returns(lambda m: m.argmax(-1)).act(obs, mask).tolist() == [3, 3]
    cases = [
        (lambda m: m.argmax(-1) + 0.7, "shape \\(2,\\) and dtype float64: expected 2 integer"),
        (lambda m: np.zeros((2, 2), int), "shape \\(2, 2\\)"),
        (lambda m: [3], "shape \\(1,\\)"),
        (lambda m: np.array([3, 4]), "illegal action 4 in row 1; legal there: \\[3, 5\\]"),
        (lambda m: np.array([99, 3]), "illegal action 99 in row 0"),
    ]
    for out, message in cases:
        with pytest.raises(ValueError, match="^agent Returns\\(\\) returned .*" + message):
            Returns(out).act(obs, mask)

    class Duck:  # an agent by its methods alone (no Agent.act): decide checks its actions
        def act(self, obs, mask):
            return np.array([3, 4])

        def __repr__(self):
            return "Duck()"

    with pytest.raises(ValueError, match="^agent Duck\\(\\) returned the illegal action 4"):
        decide(Duck(), obs, mask, None, np.arange(2))


def _has_ray() -> bool:
    import importlib.util

    return importlib.util.find_spec("ray") is not None


@pytest.mark.skipif(_has_ray(), reason="the rllib extra is installed here")
def test_rllib_agent_without_the_extra_names_the_install():
    with pytest.raises(ValueError, match=r"agent 'rllib' needs Ray RLlib .*make rllib") as info:
        make_agent("rllib:x")
    assert 'pip install -e ".[rllib]"' in str(info.value)


def test_an_exception_inside_an_agent_names_its_spec_and_the_games():
    """An agent that raises inside act is named by the spec it was made from (a note on the
    exception), in the arena as in decide; its action errors name the spec too."""

    class Broken(Agent):
        def _act(self, obs, mask):
            raise RuntimeError("model file corrupt")

    register_agent("brokentest", lambda arg, seed=None, rules=None: Broken(seed))
    try:
        agent = make_agent("brokentest:x")
        assert agent.spec == "brokentest:x"
        with pytest.raises(RuntimeError, match="model file corrupt") as info:
            run_arena([agent, "random"], deals=1, seed=0, progress=False)
        (note,) = notes(info.value)
        assert re.fullmatch(r"raised by agent 'brokentest:x' deciding \d+ game\(s\)", note)
    finally:
        AGENT_FACTORIES.pop("brokentest", None)
    rule = make_agent("rule")
    obs = np.zeros((1, OBS_SIZE), np.float32)
    mask = np.zeros((1, 86), bool)
    mask[0, 3] = True
    rule._act = lambda obs, mask: np.array([4])
    with pytest.raises(ValueError, match="^agent 'rule' returned the illegal action 4") as info:
        decide(rule, obs, mask, None, np.arange(1))
    assert not getattr(info.value, "__notes__", None)  # the message names it already


def test_agents_refuse_masks_observations_and_seeds_that_are_not_what_they_say():
    """A string mask's "False" is not legal, a 0.5 is not a mask, a NaN or fractional tile count
    is not an observation, and True is not a seed: each refused with what was wrong (they used
    to be cast: a string mask made every action legal, True seeded as 1)."""
    game = BatchGame("guiyang", batch_size=4, seed=3)
    st = game.state
    obs = encode(st, np.arange(4), st.actor.astype(np.int64))
    mask = st.mask
    for spec in ("rule", "greedy", "ppo-guiyang"):
        agent = make_agent(spec, seed=1)
        want = agent.act(obs, mask)
        agent.reseed(1)
        assert agent.act(obs, mask.astype(np.int8)).tolist() == want.tolist()
        with pytest.raises(TypeError, match="bools or the numbers 0 and 1, got dtype <U5"):
            agent.act(obs, mask.astype(str))
        with pytest.raises(ValueError, match=r"got the values \[0.5\]"):
            agent.act(obs, mask * 0.5)
        bad = obs.copy()
        bad[2, 5] = np.nan
        with pytest.raises(ValueError, match="obs holds NaN or infinite values"):
            agent.act(bad, mask)
        bad = obs.copy()
        bad[1, 0] = 0.5  # the hand block's first count
        with pytest.raises(ValueError, match="hand block must hold tile counts 0-4"):
            agent.act(bad, mask)
    for seed, error in [(True, TypeError), (1.5, TypeError), ("x", TypeError), ([], TypeError),
                        (-1, ValueError), ([1, -2], ValueError)]:  # fmt: skip
        with pytest.raises(error, match="agent seed must be"):
            make_agent("rule", seed=seed)
        with pytest.raises(error, match="agent seed must be"):
            make_agent("rule").reseed(seed)
    a, b = make_agent("greedy", seed=[7, np.int64(2)]), make_agent("greedy", seed=(7, 2))
    assert a.act(obs, mask).tolist() == b.act(obs, mask).tolist()


def test_add_note_where_python_has_no_notes():
    """Python 3.10 has no add_note: there the note joins the message, so it is still shown."""

    class Old(ValueError):
        @property
        def add_note(self):
            raise AttributeError("add_note")

    exc = Old("bad thing", 3)
    add_note(exc, "raised by agent 'x'")
    assert exc.args == ("bad thing (raised by agent 'x')", 3)
    new = ValueError("bad thing")
    add_note(new, "raised by agent 'x'")
    assert notes(new) == ["raised by agent 'x'"]  # a note on 3.11+, the message's end on 3.10
    noted = ("bad thing",) if sys.version_info >= (3, 11) else ("bad thing (raised by agent 'x')",)
    assert new.args == noted


def test_decide_does_not_blame_the_agent_for_the_view():
    """The public view is made before the agent is asked: an error there (a finished game has
    no view) carries no note naming the agent."""
    game = BatchGame("guiyang", batch_size=2, seed=0)
    game.state.phase[1] = OVER
    agent = make_agent("search:rule:k=2")
    obs = np.zeros((1, OBS_SIZE), np.float32)
    with pytest.raises(ValueError, match="game 1 is over") as info:
        decide(agent, obs, game.state.mask[1:], game.state, np.array([1]))
    assert not getattr(info.value, "__notes__", None)


@pytest.mark.parametrize("spec", ["ppo-guiyang", "ppo:x.pt", "sb3:x.zip", "search:ppo-guiyang"])
def test_a_network_agent_without_torch_names_the_extra(spec, monkeypatch, capsys):
    """Without the train extra a shipped policy ended the arena and agents.play in a traceback
    (ModuleNotFoundError: torch), where an ``rllib:`` agent without Ray named its extra."""
    from agents import arena

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    for module in ("agents.ppo", "agents.sb3"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(ValueError, match=r"needs torch \(the train extra is not installed: pip"):
        make_agent(spec)
    with pytest.raises(SystemExit) as exit_:
        arena.main(["--agents", f"{spec},rule", "--deals", "1"])
    assert exit_.value.code == 2 and "the train extra is not installed" in capsys.readouterr().err
