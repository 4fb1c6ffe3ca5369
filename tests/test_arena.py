"""The arena: seating, identical walls across rotations, statistics, JSON output."""

from __future__ import annotations

import errno
import importlib.util
import itertools
import json
import math
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from exception_helpers import notes

from agents import arena
from agents.arena import (
    ArenaResult,
    clustered_mean_ci,
    json_text,
    labels_of,
    mean_ci,
    run_arena,
    seatings,
)
from zhuoji_env.engine.game import BatchGame
from zhuoji_env.engine.records import compare, replay
from zhuoji_env.tiles import format_tiles


@pytest.mark.parametrize(
    "agents, seats, mode, rows",
    [
        (3, 4, "permute", 36),
        (3, 4, "rotate", 12),
        (2, 3, "permute", 6),
        (2, 3, "rotate", 6),
        (4, 4, "permute", 24),
        (4, 4, "rotate", 4),
        (2, 4, "permute", 6),
        (2, 4, "rotate", 2),
        (3, 3, "permute", 6),
        (5, 4, "rotate", 5),
        (1, 4, "permute", 1),
    ],
)
def test_every_agent_sits_in_every_seat_equally(agents, seats, mode, rows):
    s = seatings(agents, seats, mode)
    assert s.shape == (rows, seats)
    assert len({tuple(r) for r in s}) == rows
    per_seat = [Counter(s[:, seat].tolist()) for seat in range(seats)]
    for a in range(agents):
        assert len({c[a] for c in per_seat}) == 1, f"agent {a} is not in every seat equally"
        assert per_seat[0][a] > 0
    assert len({per_seat[0][a] for a in range(agents)}) == 1, "agents hold unequal shares"
    if mode == "permute":  # relabelling the agents maps the seatings onto themselves
        rows_set = {tuple(r) for r in s}
        for perm in itertools.permutations(range(agents)):
            assert {tuple(perm[a] for a in r) for r in s} == rows_set


def test_rotate_is_the_cyclic_assignment():
    s = seatings(3, 4, "rotate")
    # one agent doubled in turn; base round-robin (a0 a1 a2 a2 for a2 doubled), seat s gets
    # base[(s + r) % 4]
    assert s.tolist() == [
        [0, 1, 2, 2], [1, 2, 2, 0], [2, 2, 0, 1], [2, 0, 1, 2],
        [0, 1, 2, 1], [1, 2, 1, 0], [2, 1, 0, 1], [1, 0, 1, 2],
        [0, 1, 2, 0], [1, 2, 0, 0], [2, 0, 0, 1], [0, 0, 1, 2],
    ]  # fmt: skip
    assert arena.compositions(3, 4) == [(1, 1, 2), (1, 2, 1), (2, 1, 1)]
    assert arena.compositions(2, 3) == [(1, 2), (2, 1)]
    assert arena.compositions(5, 4) == sorted(
        tuple(int(a != out) for a in range(5)) for out in range(5)
    )
    assert seatings(4, 4, "rotate").tolist() == [
        [(seat + r) % 4 for seat in range(4)] for r in range(4)
    ]
    with pytest.raises(ValueError, match=r"unknown seating mode 'shuffle': allowed \['"):
        seatings(3, 4, "shuffle")


def test_labels_are_distinct():
    assert labels_of(["rule", "rule", "random", "random"]) == [
        "rule#1",
        "rule#2",
        "random#1",
        "random#2",
    ]
    assert labels_of(["random", "greedy", "rule"]) == ["random", "greedy", "rule"]


def test_the_same_walls_are_replayed_in_every_rotation():
    res = run_arena(["random", "greedy", "rule"], 3, seed=4, progress=False, keep_games=True)
    g = res.games
    rotations = len(res.rotations)
    assert rotations == 36 and len(g["deal"]) == 3 * rotations
    fresh = BatchGame("guiyang", 3, seed=4, auto_reset=False).state
    for d in range(3):
        rows = np.flatnonzero(g["deal"] == d)
        assert sorted(g["rotation"][rows].tolist()) == list(range(rotations))
        assert (g["wall"][rows] == g["wall"][rows[0]]).all()
        assert (g["dealer"][rows] == g["dealer"][rows[0]]).all()
        assert len({g["records"][i]["wall"] for i in rows}) == 1
        assert g["records"][rows[0]]["wall"] == format_tiles(fresh.wall[d])  # BatchGame's deal d
        assert g["dealer"][rows[0]] == fresh.dealer[d]
        for i in rows:
            assert (g["seat_agent"][i] == res.rotations[g["rotation"][i]]).all()
    assert len({format_tiles(w) for w in g["wall"]}) == 3  # deals differ
    for i in range(0, len(g["records"]), 7):  # records replay to the scores the arena counted
        rec = g["records"][i]
        assert compare(rec["result"], replay(rec)) == []
        assert rec["result"]["deltas"] == g["scores"][i].tolist()


def check_order_free(specs, players, seating="permute", deals=6):
    """Every order of ``specs`` gives identical means, margins and seat shares, and every
    agent holds every seat equally often."""
    results = [
        run_arena(
            list(order),
            deals,
            seed=9,
            rules={"preset": "guiyang", "overrides": {"num_players": players}},
            progress=False,
            seating=seating,
        )
        for order in itertools.permutations(specs)
    ]
    first = results[0].summary()
    hands = {a: first["agents"][a]["hands"] for a in specs}
    assert len(set(hands.values())) == 1, f"unequal seat-hands {hands}"
    for res in results[1:]:
        s = res.summary()
        for a in specs:
            assert s["agents"][a]["mean"] == first["agents"][a]["mean"]
            assert s["agents"][a]["hands"] == hands[a]
        for a, b in itertools.combinations(specs, 2):
            assert res.margin(a, b) == results[0].margin(a, b)
    per_seat = Counter()
    for row in results[0].rotations:
        per_seat.update((seat, results[0].labels[a]) for seat, a in enumerate(row))
    assert len(set(per_seat.values())) == 1 and len(per_seat) == players * len(specs)


@pytest.mark.parametrize(
    "specs, players",
    [(["ppo-guiyang", "random"], 3), (["random", "greedy", "rule"], 4), (["rule", "random"], 4)],
)
@pytest.mark.parametrize("seating", ["permute", "rotate"])
@pytest.mark.filterwarnings("ignore:ppo-guiyang was trained under")
def test_the_order_of_the_agents_changes_no_mean_and_no_margin(specs, players, seating):
    """Both orders (and every order of three), with a sampling policy and random in the field,
    so their random streams must follow them."""
    check_order_free(specs, players, seating)


def test_the_order_test_catches_an_unfair_seating(monkeypatch):
    """The old seating (the first-named agent doubled at a 3-seat table) fails it."""
    monkeypatch.setattr(arena, "seatings", lambda a, n, mode: np.array([[0, 1, 0], [1, 0, 0]]))
    with pytest.raises(AssertionError, match="unequal seat-hands"):
        check_order_free(["greedy", "random"], 3)


def test_the_order_test_catches_streams_that_follow_the_position(monkeypatch):
    """Playing the agents in the order given (random streams by position) fails it."""
    monkeypatch.setattr(arena, "label_order", lambda labels, specs: list(range(len(labels))))
    with pytest.raises(AssertionError):
        check_order_free(["random", "greedy"], 4, deals=4)


def test_mean_ci_matches_a_hand_worked_t_interval():
    # mean 3, sd sqrt(2.5) = 1.5811, se 0.70711, t(0.975, 4) = 2.776445: half-width 1.963243
    m, lo, hi = mean_ci([1, 2, 3, 4, 5])
    assert m == pytest.approx(3.0)
    assert lo == pytest.approx(1.036757, abs=1e-5)
    assert hi == pytest.approx(4.963243, abs=1e-5)
    # [2, 4, 4, 5]: mean 3.75, sd 1.258306, se 0.629153, t(0.975, 3) = 3.182446
    m, lo, hi = mean_ci([2, 4, 4, 5])
    assert (lo, hi) == pytest.approx((3.75 - 2.002243, 3.75 + 2.002243), abs=1e-5)
    assert np.isnan(mean_ci([1.0])[1])


def test_clustered_mean_ci_matches_a_hand_worked_interval():
    # mean 4; deviations -3 -2 | -1 0 | 1 5 sum to -5, -1, 6 by cluster: 62 squared;
    # se = sqrt(3/2 * 62) / 6 = 1.607275, t(0.975, 2) = 4.302653: half-width 6.915547
    m, lo, hi = clustered_mean_ci([1, 2, 3, 4, 5, 9], ["a", "a", "b", "b", "c", "c"])
    assert m == pytest.approx(4.0)
    assert (lo, hi) == pytest.approx((4 - 6.915547, 4 + 6.915547), abs=1e-5)
    # one sample a cluster is the plain t interval; one cluster has none
    x = np.random.default_rng(0).normal(size=40)
    assert clustered_mean_ci(x, np.arange(40)) == pytest.approx(mean_ci(x))
    assert np.isnan(clustered_mean_ci([1.0, 2.0, 3.0], [7, 7, 7])[1])
    # correlated samples within a cluster widen it
    assert np.ptp(clustered_mean_ci(np.repeat(x[:10], 4), np.repeat(np.arange(10), 4))[1:]) > (
        1.5 * np.ptp(mean_ci(np.repeat(x[:10], 4))[1:])
    )
    with pytest.raises(ValueError, match="one cluster per sample"):
        clustered_mean_ci([1.0, 2.0], [0, 1, 2])


@pytest.mark.parametrize("level", [2, 0, 1, -0.5, float("nan"), True, "0.9", None])
def test_mean_ci_refuses_a_level_outside_0_1(level):
    with pytest.raises(ValueError, match="level must be a number strictly between 0 and 1"):
        mean_ci([1, 2, 3], level=level)


def test_summary_statistics_from_known_sums():
    # two deals, two agents; fields in arena.FIELDS order
    f = {name: i for i, name in enumerate(arena.FIELDS)}
    acc = np.zeros((2, 2, len(arena.FIELDS)), dtype=np.int64)
    acc[:, :, f["hands"]] = 2
    acc[:, :, f["score"]] = [[4, -4], [-2, 2]]
    acc[:, 0, f["wins"]] = [1, 0]
    acc[:, 0, f["hu_value"]] = [6, 0]
    acc[:, 1, f["deal_ins"]] = [1, 0]
    res = ArenaResult(
        ["a", "b"],
        ["a", "b"],
        arena.Rules.make("guiyang"),
        0,
        np.array([[0, 1, 0, 1], [1, 0, 1, 0]]),
        acc,
    )
    s = res.summary()
    a = s["agents"]["a"]
    assert a["mean"] == pytest.approx(0.5)  # deal means 2 and -1
    assert a["win_rate"] == pytest.approx(0.25) and a["win_value"] == pytest.approx(6.0)
    assert s["agents"]["b"]["deal_in_rate"] == pytest.approx(0.25)
    pair = s["pairs"]["b - a"]
    assert pair["mean"] == pytest.approx(-1.0)  # differences -4 and 2
    assert pair["ci95"][1] == pytest.approx(-1.0 + 12.706205 * 3.0, abs=1e-4)
    assert not pair["significant"]


def test_arena_cli_writes_the_documented_json(tmp_path, capsys):
    out = tmp_path / "arena.json"
    rc = arena.main(
        [
            "--agents",
            "random,greedy,rule",
            "--deals",
            "20",
            "--seed",
            "1",
            "--json",
            str(out),
            "--no-progress",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "pairwise margins" in text and "rule" in text
    data = json.loads(out.read_text())
    assert data["deals"] == 20 and data["seed"] == 1 and data["preset"] == "guiyang"
    assert data["games"] == 20 * 36 and len(data["seating"]) == 36
    assert set(data["agents"]) == {"random", "greedy", "rule"}
    keys = {
        "mean",
        "ci95",
        "win_rate",
        "self_draw_rate",
        "deal_in_rate",
        "win_value",
        "kongs_per_hand",
        "chickens_per_hand",
        "dou_per_hand",
        "draw_rate",
        "hands",
    }
    for a in data["agents"].values():
        assert keys <= set(a) and len(a["ci95"]) == 2
        assert a["ci95"][0] <= a["mean"] <= a["ci95"][1]
    assert set(data["pairs"]) == {"greedy - random", "rule - random", "rule - greedy"}
    # zero-sum: every agent holds the same number of seat-hands (each doubled in a third)
    m = {k: v["mean"] for k, v in data["agents"].items()}
    assert {v["hands"] for v in data["agents"].values()} == {20 * 36 * 4 // 3}
    assert m["random"] + m["greedy"] + m["rule"] == pytest.approx(0.0, abs=1e-9)


def test_duplicate_agents_three_players_and_workers():
    kw = dict(seed=2, rules={"preset": "app", "overrides": {"num_players": 3}}, progress=False)
    one = run_arena(["rule", "rule", "random"], 6, chunk_games=12, **kw)
    two = run_arena(["rule", "rule", "random"], 6, chunk_games=12, workers=2, **kw)
    assert one.labels == ["rule#1", "rule#2", "random"]
    assert (one.acc == two.acc).all()  # results do not depend on the number of processes
    assert one.summary()["num_players"] == 3


def test_cli_rejects_unknown_agents(capsys):
    with pytest.raises(SystemExit) as info:
        arena.main(["--agents", "random,nosuch", "--deals", "2"])
    assert info.value.code == 2
    assert "unknown agent spec 'nosuch'" in capsys.readouterr().err


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is not None, reason="the rllib extra is installed here"
)
def test_cli_names_the_install_of_a_missing_rllib_extra(capsys):
    with pytest.raises(SystemExit) as info:
        arena.main(["--agents", "rllib:/tmp,random", "--deals", "2"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "error: agent 'rllib' needs Ray RLlib (the rllib extra is not installed: " in err
    assert 'pip install -e ".[rllib]", or make rllib' in err


def test_margin_is_the_paired_difference_in_either_order():
    res = run_arena(["greedy", "random"], 6, seed=2, progress=False)
    m, (lo, hi) = res.margin("greedy", "random")
    pair = res.summary()["pairs"]["random - greedy"]
    assert m == pytest.approx(-pair["mean"]) and [lo, hi] == pytest.approx(
        [-x for x in pair["ci95"][::-1]]
    )
    assert res.margin("random", "greedy")[0] == pytest.approx(-m)
    with pytest.raises(ValueError, match=r"no agent 'rule' in this arena: its labels are \['gr"):
        res.margin("rule", "greedy")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"seed": -1}, "seed must be an integer >= 0, got -1"),
        ({"seed": 1.5}, "seed must be an integer >= 0, got 1.5"),
        ({"workers": 0}, "workers must be an integer >= 1, got 0"),
        ({"chunk_games": 0}, "chunk_games must be an integer >= 1, got 0"),
    ],
)
def test_run_arena_refuses_a_bad_seed_workers_or_chunk(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        run_arena(["random", "greedy"], 2, progress=False, **kwargs)


def test_one_deal_prints_its_intervals_as_not_applicable():
    """One deal has no interval: the table says n/a with the reason, never nan."""
    acc = np.zeros((1, 2, len(arena.FIELDS)), dtype=np.int64)
    acc[:, :, arena.FIELD_INDEX["hands"]] = 2
    acc[:, :, arena.FIELD_INDEX["score"]] = [[4, -4]]
    rotations = np.array([[0, 1, 0, 1], [1, 0, 1, 0]])
    res = ArenaResult(["a", "b"], ["a", "b"], arena.Rules.make("guiyang"), 0, rotations, acc)
    table = res.table()
    assert "nan" not in table and "significant" not in table
    assert table.count("n/a (one deal)") == 3
    assert "b - a   -4.000  95% CI n/a (one deal)" in table


def test_a_ppo_folder_is_refused_with_its_checkpoints(tmp_path, capsys):
    (tmp_path / "latest.pt").write_bytes(b"")
    (tmp_path / "update_1.pt").write_bytes(b"")
    with pytest.raises(SystemExit) as info:
        arena.main(["--agents", f"ppo:{tmp_path},random", "--deals", "2", "--no-progress"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"'{tmp_path}' is a folder, not a checkpoint file: name a .pt file in it, e.g. " in err
    assert f"'{tmp_path / 'latest.pt'}' (its .pt files: latest.pt, update_1.pt)" in err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--seed", "-1"], "--seed must be a non-negative integer, got -1"),
        (["--json", "/nonexistent-dir/out.json"], "--json '/nonexistent-dir/out.json': its folder"),
        (["--json", "."], "--json '.': is a folder, not a file"),
        (["--plugin", "nosuchmodule"], "--plugin 'nosuchmodule': cannot import it"),
        (["--deals", "0"], "--deals must be >= 1, got 0"),
        (["--workers", "0"], "--workers must be >= 1, got 0"),
        (["--chunk", "-3"], "--chunk must be >= 1, got -3"),
        (["--agents", "rule,,random"], "--agents 'rule,,random': item 2 is empty"),
        (["--agents", "random,"], "--agents 'random,': item 2 is empty"),
        (["--agents", " "], "--agents ' ': no agent spec given"),
        (
            ["--set", "num_players=3", "--set", "num_players=4"],
            "switch 'num_players' is set twice ('num_players=3', then 'num_players=4')",
        ),
    ],
)
def test_cli_checks_flags_before_the_run(monkeypatch, capsys, extra, message):
    def no_run(*a, **k):
        raise AssertionError("the arena ran before its flags were checked")

    monkeypatch.setattr(arena, "run_arena", no_run)
    with pytest.raises(SystemExit) as info:
        arena.main(["--agents", "random,greedy", "--deals", "2", *extra])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_names_a_plugin_whose_import_raises(monkeypatch, tmp_path):
    """A plugin that imports but raises (a bug in it, not a missing module) keeps its traceback,
    with a note naming the --plugin."""
    (tmp_path / "raising_plugin.py").write_text("raise RuntimeError('bad registry call')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match="bad registry call") as info:
        arena.main(["--agents", "random,greedy", "--deals", "1", "--plugin", "raising_plugin"])
    assert notes(info.value) == ["raised while importing --plugin 'raising_plugin'"]


FILE_PLUGIN = """
from agents import register_agent
from agents.simple import GreedyAgent


class FromAFile(GreedyAgent):
    name = "from-a-file"


register_agent("from-a-file", lambda arg, seed=None, rules=None: FromAFile(seed=seed), replace=True)
"""


def test_a_plugin_given_by_its_path_registers_its_agent_in_the_workers_too(
    monkeypatch, tmp_path, capsys
):
    """``--plugin path/to/file.py``, a folder not on the import path: the agent it registers
    plays, in worker processes too (fresh interpreters, which import its class by name)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "arena_file_plugin.py").write_text(FILE_PLUGIN)
    try:
        argv = ["--agents", "random,from-a-file", "--deals", "2", "--chunk", "6", "--workers", "2"]
        assert (
            arena.main([*argv, "--no-progress", "--plugin", str(folder / "arena_file_plugin.py")])
            == 0
        )
    finally:
        sys.modules.pop("arena_file_plugin", None)
    assert "from-a-file" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name, message",
    [
        ("missing.py", "no such Python file (a path ending in .py)"),
        ("not-a-name.py", "'not-a-name' is not a module name (letters, digits and _, not starting "
         "with a digit); rename the file"),
        ("agents.py", "the module name 'agents' is taken by"),
    ],
)  # fmt: skip
def test_a_plugin_path_that_cannot_be_its_own_module_is_refused(
    monkeypatch, tmp_path, capsys, name, message
):
    monkeypatch.setattr(sys, "path", list(sys.path))
    if name != "missing.py":
        (tmp_path / name).write_text("raise AssertionError('imported')\n")
    with pytest.raises(SystemExit) as info:
        arena.main(["--agents", "random,greedy", "--deals", "1", "--plugin", str(tmp_path / name)])
    assert info.value.code == 2
    assert f"--plugin {str(tmp_path / name)!r}: {message}" in capsys.readouterr().err


def test_cli_keeps_an_existing_json_unless_force(monkeypatch, tmp_path, capsys):
    """An existing --json FILE is refused before any game is played (exit 2); --force replaces
    it whole, through a temporary name, leaving nothing else in the folder."""
    out = tmp_path / "g.json"
    out.write_text("my old summary\n")
    argv = ["--agents", "random,random", "--deals", "1", "--no-progress", "--json", str(out)]

    def no_run(*a, **k):
        raise AssertionError("the arena ran before --json was checked")

    with monkeypatch.context() as m:
        m.setattr(arena, "run_arena", no_run)
        with pytest.raises(SystemExit) as info:
            arena.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"--json '{out}' exists: give another name, or --force to replace it" in err
    assert "Traceback" not in err and out.read_text() == "my old summary\n"
    assert arena.main([*argv, "--force"]) == 0
    assert json.loads(out.read_text())["deals"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["g.json"]


def test_cli_checks_the_json_folder_is_writable_before_the_run(monkeypatch, tmp_path, capsys):
    """The summary is written to a temporary name in FILE's folder, then renamed: a writable
    FILE in a folder that is not writable is refused before the run, not after it."""
    out = tmp_path / "g.json"
    out.write_text("old\n")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != tmp_path and real_access(p, mode))

    def no_run(*a, **k):
        raise AssertionError("the arena ran before --json was checked")

    monkeypatch.setattr(arena, "run_arena", no_run)
    with pytest.raises(SystemExit) as info:
        arena.main(["--agents", "random,random", "--deals", "1", "--json", str(out), "--force"])
    assert info.value.code == 2
    assert f"--json '{out}': its folder '{tmp_path}' is not writable" in capsys.readouterr().err


def test_cli_reports_a_failed_json_write_and_keeps_the_old_file(monkeypatch, tmp_path, capsys):
    out = tmp_path / "g.json"
    out.write_text("old\n")

    def full(path, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(arena, "write_text_atomic", full)
    argv = ["--agents", "random,random", "--deals", "1", "--no-progress", "--json", str(out)]
    with pytest.raises(SystemExit) as info:
        arena.main([*argv, "--force"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"--json '{out}': cannot write it (No space left on device)" in err
    assert "Traceback" not in err and out.read_text() == "old\n"


def test_json_summary_is_standard_json_with_one_deal(tmp_path):
    """One deal leaves the intervals undefined: they are written as null, not NaN (which
    Python reads but a JSON parser in a browser or another language refuses)."""
    out = tmp_path / "one.json"
    assert arena.main(["--agents", "random,greedy", "--deals", "1", "--json", str(out)]) == 0

    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    summary = json.loads(out.read_text(), parse_constant=refuse)
    assert summary["agents"]["random"]["ci95"] == [None, None]


# --------------------------------------------------------------------------- the stable wall
def stable_game_draws(deals: int, seed: int):
    """Play rule in every seat on the stable wall, one step at a time as ``play_games`` does,
    and list every live draw made before the first replacement draw: (game, seat, its count
    of earlier live draws, the tile drawn), with the dealt walls."""
    from agents import make_agent
    from zhuoji_env.engine import core
    from zhuoji_env.engine.state import OVER
    from zhuoji_env.observation import encode

    rules = arena.Rules.make("guiyang")
    walls, dealers = arena.deal_walls(seed, np.arange(deals), 4)
    st = core.deal(rules, walls.copy(), dealers, 0)
    stable = arena.StableWall(st, 4)
    rule = make_agent("rule", seed=0)
    back0 = st.back.copy()
    counts = np.zeros((deals, 4), dtype=np.int64)
    draws = []
    while (st.phase != OVER).any():
        live = np.flatnonzero(st.phase != OVER)
        stable.before_step(st, live)
        front = st.front.copy()
        actions = np.full(deals, -1)
        actions[live] = rule.act(encode(st, live, st.actor[live].astype(np.int64)), st.mask[live])
        core.step(rules, st, actions)
        for g in live[st.front[live] > front[live]]:
            seat = int(st.turn_seat[g])
            if st.back[g] == back0[g]:  # no replacement draw yet: every wanted tile is there
                draws.append((int(g), seat, int(counts[g, seat]), int(st.drawn[g])))
            counts[g, seat] += 1
    return walls, dealers, st, draws


def test_stable_wall_seats_draw_their_own_sub_wall_across_claims():
    walls, dealers, st, draws = stable_game_draws(40, seed=3)
    start = 13 * 4 + 1
    first = (dealers.astype(np.int64) + 1) % 4
    moved = 0
    for g, seat, k, tile in draws:
        want = start + k * 4 + (seat - first[g]) % 4
        if want >= 108:  # a seat drawing past its share takes the front tile
            continue
        assert tile == walls[g, want], (g, seat, k)
        moved += st.wall[g, want] != walls[g, want]
    assert len(draws) > 1000 and moved > 50  # claims did reorder the wall, and draws followed
    # only undrawn tiles moved: the deal is untouched and the wall holds the same tiles
    assert (st.wall[:, :start] == walls[:, :start]).all()
    assert (np.sort(st.wall, 1) == np.sort(walls, 1)).all()


def test_stable_wall_games_replay_under_the_rules_and_match_shared_ones_without_claims():
    from zhuoji_env.engine import core
    from zhuoji_env.engine.records import parse, result_of

    kw = dict(seed=6, progress=False, keep_games=True)
    stable = run_arena(["rule", "greedy"], 12, wall="stable", **kw)
    shared = run_arena(["rule", "greedy"], 12, **kw)
    assert stable.summary()["wall"] == "stable" and shared.summary()["wall"] == "shared"
    for i, rec in enumerate(stable.games["records"]):
        assert compare(rec["result"], replay(rec)) == []  # RULES.md's engine, its final wall
        assert rec["result"]["deltas"] == stable.games["scores"][i].tolist()
    differ = sum(
        a["wall"] != b["wall"]
        for a, b in zip(stable.games["records"], shared.games["records"], strict=True)
    )
    assert differ > 20
    # a shared hand without claims, played again move for move on the stable wall, is the same
    # hand: no tile ever moves
    quiet = 0
    for rec in shared.games["records"]:
        if any(a[1] in ("pong", "kong") for a in rec["actions"]):
            continue
        rules, wall, dealer, streak, moves = parse(rec)
        st = core.deal(rules, wall[None].copy(), np.array([dealer]), streak)
        stable_wall = arena.StableWall(st, rules.num_players)
        for _, action in moves:
            stable_wall.before_step(st, np.array([0]))
            core.step(rules, st, np.array([action]))
        assert (st.wall[0] == wall).all() and compare(rec["result"], result_of(st, 0)) == []
        quiet += 1
    assert quiet > 3
    with pytest.raises(ValueError, match=r"unknown wall mode 'split': allowed \['shared'"):
        run_arena(["rule", "greedy"], 2, wall="split", progress=False)


def test_stable_wall_keeps_the_order_and_size_of_known_margins():
    """rule > greedy > random under both walls, margins within sampling error of each other."""
    res = {
        w: run_arena(["random", "greedy", "rule"], 60, seed=8, wall=w, progress=False)
        for w in arena.WALLS
    }
    for a, b in [("rule", "greedy"), ("greedy", "random")]:
        (m1, ci1), (m2, ci2) = res["shared"].margin(a, b), res["stable"].margin(a, b)
        assert ci1[0] > 0 and ci2[0] > 0
        se = math.hypot(ci1[1] - ci1[0], ci2[1] - ci2[0]) / (2 * 1.96)
        assert abs(m1 - m2) < 4 * se


def test_device_plays_the_specs_networks_there_under_their_own_labels(monkeypatch, capsys):
    import torch

    plain = run_arena(["ppo-scratch", "random"], 2, seed=3, progress=False)
    on_cpu = run_arena(["ppo-scratch", "random"], 2, seed=3, progress=False, device="cpu")
    assert on_cpu.labels == plain.labels == ["ppo-scratch", "random"]
    assert (on_cpu.acc == plain.acc).all() and on_cpu.summary()["device"] == "cpu"
    made = []
    real = arena.make_agent
    monkeypatch.setattr(arena, "make_agent", lambda spec, **kw: made.append(spec) or real("random"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # only the specs are checked
    arena.main(["--agents", "search:ppo-guiyang:k=2,rule", "--deals", "1", "--device", "cuda",
                "--no-progress"])  # fmt: skip
    assert sorted(made) == ["rule", "search:ppo-guiyang:cuda:k=2"]
    assert "search:ppo-guiyang:k=2" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        arena.main(["--agents", "random,rule", "--device", "tpu"])
    assert info.value.code == 2
    assert "--device: invalid choice: 'tpu'" in capsys.readouterr().err


def test_device_is_checked_and_recorded_only_where_it_was_applied(monkeypatch):
    """A CUDA device torch does not see is refused (as a ``:cuda`` spec is), an empty or unknown
    one too, and a device that moved no spec's network (agent objects stay where they are) is
    not written into the summary."""
    import torch

    from agents import make_agent

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    kw = dict(progress=False)
    with pytest.raises(ValueError, match="device 'cuda': torch sees no CUDA device"):
        run_arena(["rule", "random"], 1, device="cuda", **kw)
    for bad in ["", "gpu", 5]:
        with pytest.raises(ValueError, match=re.escape(f"device {bad!r}: must be None or one of")):
            run_arena(["rule", "random"], 1, device=bad, **kw)
    assert "device" not in run_arena(["rule", "random"], 1, device="cpu", **kw).summary()
    objects = [make_agent("ppo-scratch", seed=0), "random"]
    assert "device" not in run_arena(objects, 1, device="auto", **kw).summary()
    assert run_arena(["ppo-scratch", "random"], 1, device="auto", **kw).extra["device"] == "auto"


def test_numpy_integers_are_taken_and_stored_as_plain_ints():
    kw = dict(progress=False)
    plain = run_arena(["random", "greedy"], 2, seed=3, chunk_games=12, **kw)
    numpy = run_arena(
        ["random", "greedy"], np.int64(2), seed=np.int64(3), chunk_games=np.int32(12), **kw
    )
    assert (numpy.acc == plain.acc).all()
    summary = numpy.summary()
    assert type(summary["seed"]) is int and type(summary["chunk_games"]) is int
    assert json.loads(json_text(summary))["seed"] == 3


@pytest.mark.parametrize(
    "agents, labels, error, message",
    [
        ("random", None, TypeError, "agents must be a list or tuple of agent specs or agent "
         "objects, got the string 'random'; split comma-separated specs first: ['random']"),
        ([5, "random"], None, TypeError, "agents[0] is 5 (int), which has no act() or reseed()"),
        (["random", None], None, TypeError, "agents[1] is None (NoneType), which has no act()"),
        ({"random": 1}, None, TypeError, "agents must be a list or tuple of agent specs or agent "
         "objects, got dict"),
        (["random", "greedy"], ["x", "x"], ValueError, "labels ['x', 'x']: 'x' given more than "
         "once; each agent needs its own label"),
        (["random", "greedy"], [1, 2], TypeError, "labels[0] is 1: labels must be strings"),
        (["random", "greedy"], "ab", TypeError, "labels must be a list or tuple of strings, one "
         "per agent, got 'ab'"),
        (["random", "greedy"], ["a", ""], ValueError, "labels[1] is empty"),
        (["random", "greedy"], ["a"], ValueError, "1 labels for 2 agents"),
    ],
)  # fmt: skip
def test_run_arena_refuses_what_is_not_an_agent_or_a_label(agents, labels, error, message):
    with pytest.raises(error, match=re.escape(message)):
        run_arena(agents, 1, labels=labels, progress=False)


def run_python(
    code: str, tmp_path, timeout: float = 90, stdin: bool = False
) -> subprocess.CompletedProcess:
    """Run ``code`` with ``python -c`` (or, with ``stdin``, ``python -`` reading it: either way
    a ``__main__`` without a file) in ``tmp_path``, with the repository and ``tmp_path``
    importable; a run that hangs fails the test."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(tmp_path)])}
    code = textwrap.dedent(code)
    try:
        return subprocess.run(
            [sys.executable, "-"] if stdin else [sys.executable, "-c", code],
            input=code if stdin else None,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the run hung for {timeout} s")


@pytest.mark.parametrize("stdin", [False, True], ids=["python -c", "python - < script"])
def test_workers_refuse_an_agent_class_of_an_interactive_main_before_spawning(tmp_path, stdin):
    """A class defined in ``python -c``, a script on stdin (or a notebook) cannot be imported by
    a worker: each one died and was replaced for ever. It is refused before any worker
    starts."""
    done = run_python(
        """
        from agents.arena import run_arena
        from agents.simple import GreedyAgent

        class Mine(GreedyAgent):
            name = "mine"

        run_arena([Mine(seed=0), "random"], 4, progress=False, workers=2, chunk_games=6)
        """,
        tmp_path,
        stdin=stdin,
    )
    assert done.returncode == 1
    assert (
        "ValueError: workers > 1 sends the agents to fresh worker processes, which import each "
        "agent's class by its module, but Mine is defined in the __main__ of this interactive "
        "session (a notebook, python -c, a script on stdin), which they cannot import: define it "
        "in an importable "
        "module, or use workers=1" in done.stderr
    )
    assert "Can't get attribute" not in done.stderr  # no worker was started


def test_a_worker_that_dies_is_an_error_not_a_hang(tmp_path):
    (tmp_path / "unloadable.py").write_text(
        textwrap.dedent(
            """
            from agents.simple import GreedyAgent

            class Unloadable(GreedyAgent):
                name = "unloadable"

                def __setstate__(self, state):
                    raise RuntimeError("this agent cannot be loaded")
            """
        )
    )
    done = run_python(
        """
        from agents.arena import run_arena
        from unloadable import Unloadable

        if __name__ == "__main__":
            run_arena([Unloadable(seed=0), "random"], 4, progress=False, workers=2, chunk_games=6)
        """,
        tmp_path,
    )
    assert done.returncode == 1
    assert "RuntimeError: this agent cannot be loaded" in done.stderr  # the worker's own error
    assert "RuntimeError: a worker process of the arena died (" in done.stderr
    assert "its class not importable from its module" in done.stderr
    assert "a worker the system killed (out of memory" in done.stderr


def test_the_pool_has_at_most_one_worker_per_chunk(monkeypatch):
    sizes = []

    class Recorded(arena.ProcessPoolExecutor):
        def __init__(self, max_workers, **kw):
            sizes.append(max_workers)
            super().__init__(max_workers, **kw)

    monkeypatch.setattr(arena, "ProcessPoolExecutor", Recorded)
    kw = dict(seed=1, chunk_games=6, progress=False)  # one deal (6 seatings) per chunk
    many = run_arena(["random", "greedy"], 2, workers=8, **kw)
    assert sizes == [2]
    assert (many.acc == run_arena(["random", "greedy"], 2, **kw).acc).all()


def test_help_of_the_stable_wall_says_what_was_measured(capsys):
    """``--wall stable`` was meant to lower the variance of paired margins; docs/ladder.md
    measured it widening the intervals instead, and ``--help`` says so, not the intent."""
    with pytest.raises(SystemExit) as stop:
        arena.main(["--help"])
    assert stop.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "lower-variance" not in shown and "lower variance" not in shown
    assert "it widens the intervals by 6-9% rather than narrowing them" in shown
    ladder = Path(__file__).resolve().parent.parent / "docs" / "ladder.md"
    assert "the stable wall's intervals are 6-9% wider" in " ".join(ladder.read_text().split())
