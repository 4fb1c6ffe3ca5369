"""Joining a published ladder: its refit gives its published numbers, a new agent is placed
beside it without moving an entry, the trial route (--quick) and a full refit (--refit)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from agents import ladder
from agents.ladder import PairResult, fit_ladder

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = {p: ROOT / "docs" / f"ladder-{p}.json" for p in ("guiyang", "app", "classic")}
TOL = ladder.HOLD_TOLERANCE

PLUGIN = """
from agents import register_agent
from agents.simple import GreedyAgent


class Newcomer(GreedyAgent):
    name = "{name}"


register_agent("{name}", lambda arg, seed=None, rules=None: Newcomer(seed=seed), replace=True)
"""


@pytest.fixture
def plugin_file(tmp_path, monkeypatch):
    """``plugin_file(name)``: a Python file registering agent ``name`` (a greedy player),
    given to ``--plugin`` by its path; its module and folder are dropped afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    made = []

    def make(name: str) -> str:
        path = tmp_path / f"join_plugin_{name}.py"
        path.write_text(PLUGIN.format(name=name))
        made.append(path.stem)
        return str(path)

    yield make
    for module in made:
        sys.modules.pop(module, None)


@pytest.mark.parametrize("preset", ["guiyang", "app", "classic"])
def test_a_refit_of_each_published_ladder_gives_its_published_numbers(preset):
    """The fit is deterministic (bootstrap seed 0): refitting the published pairs must give
    the published ratings, intervals, predictions, residuals and chi-square, to within
    HOLD_TOLERANCE (the order of the agents moves the least squares by about 1e-14)."""
    data = json.loads(PUBLISHED[preset].read_text())
    labels = [a["label"] for a in data["agents"]]
    pairs = [PairResult.from_json(row) for row in data["pairs"]]
    fit = fit_ladder(
        labels, [a["spec"] for a in data["agents"]], pairs, data["anchor"]["agent"],
        data["fit"]["bootstrap"],
    )  # fmt: skip
    np.testing.assert_allclose(fit.ratings, [a["rating"] for a in data["agents"]], 0, TOL)
    np.testing.assert_allclose(fit.ci95, [a["ci95"] for a in data["agents"]], 0, TOL)
    predicted = [fit.predicted(p.a, p.b) for p in pairs]
    np.testing.assert_allclose(predicted, [row["predicted"] for row in data["pairs"]], 0, TOL)
    np.testing.assert_allclose(fit.residuals(), [row["residual"] for row in data["pairs"]], 0, TOL)
    chi2, dof = fit.chi2()
    assert chi2 == pytest.approx(data["fit"]["chi2"], abs=1e-6) and dof == data["fit"]["dof"]
    assert [fit.labels[i] for i in fit.order()] == labels  # the published ranks


def test_joining_the_published_guiyang_ladder_keeps_every_entry_and_rating(
    tmp_path, plugin_file, capsys
):
    """The documented route, as a trial: every published agent (ppo-scratch and the three
    search agents included) keeps its published rating and interval to the last bit, every
    published pair its per-deal sums; only the newcomer's pairs are played."""
    out = tmp_path / "mine-{preset}.json"
    argv = ["--protocol", "zhuoji-bench-v1", "--preset", "guiyang", "--reuse",
            str(PUBLISHED["guiyang"]), "--plugin", plugin_file("mine"), "--agents", "mine",
            "--versus", "random,greedy", "--quick", "4", "--no-progress"]  # fmt: skip
    assert ladder.main([*argv, "--json", str(out)]) == 0
    captured = capsys.readouterr()
    table = captured.out
    data = json.loads((tmp_path / "mine-guiyang.json").read_text())
    published = json.loads(PUBLISHED["guiyang"].read_text())
    rows = {a["label"]: a for a in data["agents"]}
    assert set(rows) == {a["label"] for a in published["agents"]} | {"mine"}
    for a in published["agents"]:
        assert (rows[a["label"]]["rating"], rows[a["label"]]["ci95"]) == (a["rating"], a["ci95"])
        assert rows[a["label"]]["stage"] == 0
        assert f"| `{a['label']}` | {a['rating']:+.2f} |" in table
    assert rows["mine"]["stage"] == 1 and rows["mine"]["rating"] > 0
    pairs = {frozenset((p["a"], p["b"])): p for p in data["pairs"]}
    for p in published["pairs"]:
        mine = pairs[frozenset((p["a"], p["b"]))]
        sums = ("score_a", "hands_a") if mine["a"] == p["a"] else ("score_b", "hands_b")
        assert (mine[sums[0]], mine[sums[1]]) == (p["score_a"], p["hands_a"])
    assert len(pairs) == len(published["pairs"]) + 2
    reuse = data["reuse"]
    assert reuse["held"] and len(reuse["reused"]) == len(published["pairs"])
    assert sorted(map(sorted, reuse["played"])) == [["greedy", "mine"], ["mine", "random"]]
    assert {x for pair in reuse["not_played"] for x in pair} == set(rows) - {"random", "greedy"}
    assert all(pairs[frozenset(x)]["deals"] == 4 for x in reuse["played"])
    assert data["trial"] == {"deals": 4} and data["deals"] == 2000
    assert "A trial, not comparable with the published ratings" in table
    assert "| placed here, 4-deal trial |" in table and "| published |" in table
    assert "12 pairs not played: a reused ladder rated both agents" in captured.err
    with pytest.raises(SystemExit) as exc:  # a trial cannot be reused
        ladder.main([*argv[:4], "--reuse", str(tmp_path / "mine-guiyang.json")])
    assert exc.value.code == 2
    assert "a trial ladder (--quick): its joining agents played 4 deals" in capsys.readouterr().err


def small_ladder(tmp_path, name="small.json", **change) -> Path:
    """A published ladder of random, greedy and rule on 3 deals of seed 0 (bootstrap 20),
    from hand-made per-deal sums, as ladder.main writes it; ``change`` edits its agents."""
    hands = np.full(3, 6)
    sums = {("random", "greedy"): [-30, -12, -24], ("random", "rule"): [-42, -36, -60],
            ("greedy", "rule"): [-6, -24, 12]}  # fmt: skip
    pairs = [
        PairResult(a, b, np.array(s), -np.array(s), hands, hands) for (a, b), s in sums.items()
    ]
    labels = ["random", "greedy", "rule"]
    fit = fit_ladder(labels, labels, pairs, "random", bootstrap=20)
    rules = ladder.Rules.make("guiyang")
    data = ladder.ladder_json(fit, rules, 3, 0, "permute", {"protocol": None})
    for row in data["agents"]:
        row.update(change.get(row["label"], {}))
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


SMALL = ["--deals", "3", "--bootstrap", "20", "--no-progress"]


def test_a_joined_ladder_can_be_joined_again_and_holds_both(tmp_path, plugin_file, capsys):
    base = small_ladder(tmp_path)
    published = {a["label"]: a for a in json.loads(base.read_text())["agents"]}
    first = tmp_path / "first.json"
    argv = [*SMALL, "--plugin", plugin_file("newcomer"), "--agents", "newcomer"]
    assert ladder.main([*argv, "--reuse", str(base), "--json", str(first)]) == 0
    table = capsys.readouterr().out
    assert "A full refit of all 6 pairs together (last column) would move" in table
    assert "| rated | full refit |" in table
    joined = {a["label"]: a for a in json.loads(first.read_text())["agents"]}
    for label, a in published.items():
        assert (joined[label]["rating"], joined[label]["ci95"]) == (a["rating"], a["ci95"])
    second = tmp_path / "second.json"
    argv = [*SMALL, "--plugin", plugin_file("later"), "--agents", "later", "--versus", "random"]
    assert ladder.main([*argv, "--reuse", str(first), "--json", str(second)]) == 0
    again = {a["label"]: a for a in json.loads(second.read_text())["agents"]}
    for label, a in joined.items():
        assert (again[label]["rating"], again[label]["ci95"], again[label]["stage"]) == (
            a["rating"], a["ci95"], a["stage"]
        )  # fmt: skip
    assert again["newcomer"]["stage"] == 1 and again["later"]["stage"] == 2
    assert "| held (joined at stage 1) |" in capsys.readouterr().out


def test_refit_fits_every_pair_and_says_how_far_the_published_ratings_moved(
    tmp_path, plugin_file, capsys
):
    base = small_ladder(tmp_path)
    published = {a["label"]: a["rating"] for a in json.loads(base.read_text())["agents"]}
    out = tmp_path / "refit.json"
    assert ladder.main([*SMALL, "--plugin", plugin_file("refitted"), "--agents", "refitted",
                        "--versus", "random,greedy", "--reuse", str(base), "--refit",
                        "--json", str(out)]) == 0  # fmt: skip
    table = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert not data["reuse"]["held"] and data["compare"]["ratings"] == "as published"
    assert data["compare"]["agents"] == published
    assert all(a["stage"] == 0 for a in data["agents"])
    moved = {a["label"]: a["rating"] - published[a["label"]] for a in data["agents"]
             if a["label"] in published}  # fmt: skip
    top = max(abs(x) for x in moved.values())
    assert top > 0 and f"move by up to {top:.2f}" in table
    assert "| refit |" in table and "| fitted here |" in table and "| as published |" in table


@pytest.mark.parametrize(
    "extra, change, message",
    [
        (["--reuse", "{base}", "--reuse", "{base}"], {},
         "--reuse: 2 files; a ladder joins one published ladder at a time"),
        (["--reuse", "{base}", "--bootstrap", "30"], {},
         "its intervals come from 20 bootstrap resamples, this ladder's from 30; give "
         "--bootstrap 20"),
        (["--reuse", "{base}"], {"rule": {"rating": 9.5}},
         "refitting its pairs gives 'rule' a rating of"),
        (["--reuse", "{base}"], {"greedy": {"sha256": "an older greedy"}},
         "the network 'greedy' plays has changed since it was rated (sha256 an older greedy "
         "there, None here)"),
        (["--reuse", "{base}"], {"greedy": {"stage": -1}},
         "agent 'greedy' has stage -1, not an integer >= 0"),
        (["--reuse", "{base}"], {"rule": {"rating": "high"}},
         "agent 'rule' has rating 'high', not a number"),
        (["--quick", "2"], {}, "--quick tries agents against a published ladder: give it with "
         "--reuse FILE"),
        (["--reuse", "{base}", "--quick", "2", "--refit"], {}, "(and without --refit)"),
        (["--reuse", "{base}", "--quick", "3"], {},
         "--quick must be >= 2 and below the ladder's 3 deals a pair, got 3"),
        (["--refit"], {}, "--refit refits the pairs of a --reuse ladder with the new ones"),
    ],
)  # fmt: skip
def test_a_join_that_would_change_the_published_ladder_is_refused_before_any_game(
    tmp_path, monkeypatch, capsys, extra, change, message
):
    def no_run(*a, **k):
        raise AssertionError("a pair was played before the input was checked")

    monkeypatch.setattr(ladder, "run_arena", no_run)
    base = small_ladder(tmp_path, **change)
    argv = [*SMALL, "--agents", "random,greedy", *(x.format(base=base) for x in extra)]
    if "--bootstrap" in extra:
        argv = [*argv[:2], *argv[4:]]  # its own --bootstrap in place of SMALL's
    with pytest.raises(SystemExit) as exc:
        ladder.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_a_staged_fit_holds_the_first_stage_as_its_own_fit_gives_it():
    """Stage 0 alone gives the same ratings and intervals, to the bit, as a fit of its own
    pairs (the same draws), with a pair of another number of deals added too; an agent placed
    by one pair is its margin above its opponent."""
    rng = np.random.default_rng(5)
    hands = np.full(40, 6)

    def pair(a, b, shift, deals=40):
        s = rng.integers(-20, 20, deals) + shift
        return PairResult(a, b, s, -s, hands[:deals], hands[:deals])

    base = [pair("greedy", "random", 30), pair("rule", "random", 50), pair("rule", "greedy", 20)]
    alone = fit_ladder(
        ["random", "greedy", "rule"], ["random", "greedy", "rule"], base, bootstrap=50
    )
    joined = base + [pair("mine", "rule", 6, deals=9)]
    labels = ["random", "greedy", "rule", "mine"]
    fit = fit_ladder(labels, labels, joined, bootstrap=50, stages=[0, 0, 0, 1])
    assert fit.ratings[:3].tolist() == alone.ratings.tolist()
    assert fit.ci95[:3].tolist() == alone.ci95.tolist()
    assert fit.ratings[3] == pytest.approx(fit.ratings[2] + joined[3].per_deal().mean(), abs=1e-12)
    assert fit.ci95[3, 1] - fit.ci95[3, 0] > alone.ci95[2, 1] - alone.ci95[2, 0]
    with pytest.raises(ValueError, match="the anchor 'random' must be of the first stage, 0"):
        fit_ladder(labels, labels, joined, bootstrap=0, stages=[1, 0, 0, 1])
    with pytest.raises(ValueError, match="no pair rates the agents of stage 2"):
        fit_ladder(
            labels + ["idle"], labels + ["idle"], joined, bootstrap=0, stages=[0, 0, 0, 1, 2]
        )
    with pytest.raises(ValueError, match="3 stages for 4 labels"):
        fit_ladder(labels, labels, joined, bootstrap=0, stages=[0, 0, 1])
