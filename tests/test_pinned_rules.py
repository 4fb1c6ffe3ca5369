"""Contracts of the rules' switch parsing, the action table, and the search and belief tools that
no other test pinned: a mutation test (2026-12-06) planted small bugs in zhuoji_env/rules.py,
zhuoji_env/engine/actions.py, zhuoji_env/hands.py, agents/search_quality.py,
agents/belief_check.py and agents/bench_search.py, and these tests kill the survivors: a string
switch value read with its spaces; decode/describe of an index past 85; encode of a tile kind
outside 0-26 or of a tile on an action that takes none; a negative action judged legal;
search_quality's milliseconds, the judge's own seed and --steps 0; belief_check's river buckets,
its one-from-ready share, the acting seat graded as an other seat and --every 0; bench_search's
milliseconds, the direction of its ratio and --warmup 0. Expected values are worked out from
RULES.md and the modules' docstrings."""

import json
import types

import numpy as np
import pytest

from zhuoji_env.engine import actions as A
from zhuoji_env.rules import Rules, parse_switches


# ------------------------------------------------------------------ rules: SWITCH=VALUE items
def test_parse_switches_strips_a_string_value_like_a_json_one():
    """A JSON value tolerates spaces around it (``num_players= 3`` is 3); a value read as a
    string likewise, so ``flip_mode= up_down `` is the switch's value ``up_down``."""
    got = parse_switches(["num_players= 3", "flip_mode= up_down ", " chicken_scope =hand"])
    assert got == {"num_players": 3, "flip_mode": "up_down", "chicken_scope": "hand"}
    assert Rules.make("guiyang", **got).flip_mode == "up_down"


# ------------------------------------------------------------------ the flat action table
def test_action_table_ends_at_85_and_refuses_86_with_a_value_error():
    """Module docstring: 0-26 discard, 27-53 angang, 54-80 bugang, 81 pong ... 85 baoting."""
    assert A.decode(26) == ("discard", "9s")
    assert A.decode(27) == ("angang", "1m")
    assert A.decode(80) == ("bugang", "9s")
    assert [A.decode(a) for a in range(81, 86)] == [
        ("pong", None),
        ("kong", None),
        ("hu", None),
        ("pass", None),
        ("baoting", None),
    ]
    for bad in (86, 87, -1):
        with pytest.raises(ValueError, match=rf"action index {bad} out of range 0-85"):
            A.decode(bad)
        with pytest.raises(ValueError, match="out of range 0-85"):
            A.describe(bad)


def test_engine_names_an_out_of_range_action_as_such():
    """core.step refuses action 86 as an illegal action that it describes as out of range (it
    reads decode's ValueError), not with an IndexError."""
    from zhuoji_env.engine.core import IllegalActionError
    from zhuoji_env.engine.game import BatchGame

    game = BatchGame("guiyang", 2, seed=0)
    with pytest.raises(IllegalActionError, match=r"action 86 \(out of range 0-85\)"):
        game.step(np.array([86, 86]))


@pytest.mark.parametrize("tile", [27, 30, -1, 100])
def test_encode_refuses_a_tile_kind_outside_0_26(tile):
    """A tile kind is 0-26 (tiles.code): ``("discard", 27)`` is no discard, and must not turn
    into action 27 (angang 1m)."""
    assert A.encode("discard", 26) == 26 and A.encode("angang", 0) == 27
    for name in ("discard", "angang", "bugang"):
        with pytest.raises(ValueError, match="bad tile kind"):
            A.encode(name, tile)


@pytest.mark.parametrize("name", ["pong", "kong", "hu", "pass", "baoting"])
def test_encode_refuses_a_tile_on_an_action_that_takes_none(name):
    with pytest.raises(ValueError, match=rf"action '{name}' takes no tile, got '5m'"):
        A.encode(name, "5m")
    with pytest.raises(ValueError, match="takes no tile"):
        A.encode(name, 4)
    assert A.encode(name) == 81 + ("pong", "kong", "hu", "pass", "baoting").index(name)


def test_is_legal_refuses_negative_actions_even_where_the_last_column_is_legal():
    """is_legal: each action must be in range 0-85 *and* legal; -1 must not read the mask's last
    column (baoting) by negative indexing."""
    mask = np.zeros((3, A.NUM_ACTIONS), bool)
    mask[:, A.BAOTING] = True
    mask[:, 5] = True
    got = A.is_legal(mask, np.array([-1, A.BAOTING, 5]))
    assert got.tolist() == [False, True, True]
    assert A.is_legal(mask, np.array([-86, 86, 0])).tolist() == [False, False, False]


# ------------------------------------------------------------------ agents.search_quality
def test_search_quality_ms_is_milliseconds_per_searched_decision(monkeypatch):
    """``ms`` is each setting's time per decision it searched, in milliseconds: a clock that
    advances 2 ms per searched row gives exactly 2.0."""
    from agents import search_quality
    from agents.search import SearchAgent

    clock = [0.0]
    monkeypatch.setattr(
        search_quality, "time", types.SimpleNamespace(perf_counter=lambda: clock[0])
    )
    pick = SearchAgent.pick

    def timed(self, view, obs, rows, cand):
        clock[0] += 0.002 * len(rows)
        return pick(self, view, obs, rows, cand)

    monkeypatch.setattr(SearchAgent, "pick", timed)
    specs = search_quality.settings("k=2:z=0", "rule", 3, 0.9)
    out = search_quality.run("rule", specs, 2, 2, 4, 3, 3, 0.9, "guiyang")
    (row,) = out["rows"]
    assert row["searched"] > 0
    assert row["ms"] == pytest.approx(2.0)


def test_search_quality_judge_and_settings_draw_from_their_own_seeds(monkeypatch):
    """Module docstring: the judge's deals are independent of the settings' (so a pick that won
    on its own noisy deals is not credited for it): no setting shares the judge's seed, nor
    another setting's."""
    from agents import search_quality
    from agents.search import SearchAgent

    seeds = []
    init = SearchAgent.__init__

    def spy(self, *args, **kwargs):
        seeds.append(kwargs["seed"])
        init(self, *args, **kwargs)

    monkeypatch.setattr(SearchAgent, "__init__", spy)
    specs = search_quality.settings("k=2:z=0;k=2:z=0:c=2;k=3:z=0", "rule", 3, 0.9)
    search_quality.run("rule", specs, 2, 1, 1, 0, 3, 0.9, "guiyang")
    assert len(seeds) == 4  # the judge, then the three settings
    assert len(set(seeds)) == 4


def test_search_quality_refuses_zero_steps(capsys):
    from agents import search_quality

    with pytest.raises(SystemExit) as exc:
        search_quality.main(["--base", "rule", "--steps", "0", "--tables", "1", "--no-progress"])
    assert exc.value.code == 2
    assert "--steps must be at least 1, got 0" in capsys.readouterr().err


# ------------------------------------------------------------------ agents.belief_check
def test_belief_check_table_buckets_and_shares_exact():
    """BUCKETS: 0-1, 2-4, 5-7, 8-11, 12+ discards (left-closed); a cell is the share ready
    (shanten <= 0, one decimal) / one from ready (shanten exactly 1, no decimal)."""
    import pandas as pd

    from agents import belief_check

    df = pd.DataFrame(
        {
            "river": [0, 1, 1, 4, 12, 0, 4],
            "hands": ["real"] * 5 + ["improve=0"] * 2,
            "shanten": [0, 1, 2, 1, 0, 3, 0],
        }
    )
    out = belief_check.table(df)
    assert list(out.columns) == ["real hands", "real", "improve=0"]
    assert list(out.index) == ["0-1", "2-4", "12+"]
    assert out["real hands"].tolist() == [3, 1, 1]
    assert out["real"].tolist() == ["33.3% / 33%", "0.0% / 100%", "100.0% / 0%"]
    assert out.loc["0-1", "improve=0"] == "0.0% / 0%"
    assert out.loc["2-4", "improve=0"] == "100.0% / 0%"


def test_belief_check_grades_only_the_other_seats():
    """Readiness rows: every seat other than the acting one that holds 3k+1 tiles, at every
    --every-th step (here every step); the acting seat, answering a discard with 3k+1 tiles of
    its own, is not graded."""
    from agents import belief_check
    from agents.registry import make_agent
    from zhuoji_env import hands
    from zhuoji_env.engine.game import BatchGame
    from zhuoji_env.observation import encode

    rules = Rules.make("guiyang")
    player = make_agent("rule", seed=2, rules=rules)
    df, _ = belief_check.grades(6, 30, 1, 1, [0.0], player, rules, seed=3)
    game, again = BatchGame(rules, batch_size=6, seed=3), make_agent("rule", seed=2, rules=rules)
    g, want, actor_ready = np.arange(6), [], 0
    for _ in range(30):
        st = game.state
        for q in range(4):
            graded = (st.actor != q) & (st.hand[:, q].sum(-1) % 3 == 1)
            want.extend(hands.shanten(st.hand[graded, q]).tolist())
            actor_ready += int(((st.actor == q) & (st.hand[:, q].sum(-1) % 3 == 1)).sum())
        game.step(again.act(encode(st, g, st.actor), st.mask))
    assert actor_ready > 0  # some acting seat held 3k+1 tiles (a claim to answer)
    real = df[df.hands == "real"]
    assert len(real) == len(want) == (df.hands == "improve=0").sum()
    assert sorted(real.shanten.tolist()) == sorted(want)


def test_belief_check_refuses_every_zero(capsys):
    from agents import belief_check

    with pytest.raises(SystemExit) as exc:
        belief_check.main(["--base", "rule", "--every", "0", "--no-progress"])
    assert exc.value.code == 2
    assert "--every must be at least 1, got 0" in capsys.readouterr().err


# ------------------------------------------------------------------ agents.bench_search
def _fake_measure(calls):
    costs = {1: (2, 0.5), 4: (8, 0.4)}  # tables: (searched, seconds)

    def measure(spec, tables, warmup, decisions, seed, preset):
        calls.append((tables, warmup))
        searched, seconds = costs[tables]
        return {"tables": tables, "searched": searched, "seconds": seconds}

    return measure


def test_bench_search_ms_and_ratio_to_one_table(monkeypatch, capsys):
    """ms per decision = 1000 x seconds / searched; the last column is that over one table's
    (the cost falls with the tables searched together: below 1)."""
    from agents import bench_search

    calls = []
    monkeypatch.setattr(bench_search, "measure", _fake_measure(calls))
    assert bench_search.main(["--agent", "search:rule", "--tables", "1,4", "--json"]) == 0
    text = capsys.readouterr().out.splitlines()
    rows = json.loads(text[-1])["rows"]
    assert [r["ms_per_decision"] for r in rows] == [pytest.approx(250.0), pytest.approx(50.0)]
    one, four = text[-3].split(), text[-2].split()
    assert one[0] == "1" and one[3] == "250.0" and one[4] == "1.00x"
    assert four[0] == "4" and four[3] == "50.0" and four[4] == "0.20x"


def test_bench_search_takes_zero_warmup(monkeypatch, capsys):
    """--warmup >= 0: no warm-up is allowed."""
    from agents import bench_search

    calls = []
    monkeypatch.setattr(bench_search, "measure", _fake_measure(calls))
    assert bench_search.main(["--agent", "search:rule", "--tables", "1", "--warmup", "0"]) == 0
    assert calls == [(1, 0)]
    with pytest.raises(SystemExit) as exc:
        bench_search.main(["--agent", "search:rule", "--tables", "1", "--warmup", "-1"])
    assert exc.value.code == 2
    assert "--warmup >= 0" in capsys.readouterr().err
