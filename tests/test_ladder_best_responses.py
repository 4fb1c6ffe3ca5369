"""The ladder's best-response column: ``--best-responses`` reads the ``best_response.json`` of
``training.best_response`` runs, shows each measured agent's exploiter margin and budget beside
its rating (``not measured`` for the others), writes them to the ladder JSON, keeps them when
the ladder is reused, and refuses a file of other rules, of an agent not rated, or with a field
missing, naming the file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agents import ladder
from training import best_response as br
from zhuoji_env.versions import ENVIRONMENT, stamp

LADDER = ["--agents", "random,greedy", "--deals", "3", "--bootstrap", "20", "--no-progress"]


@pytest.fixture(scope="module")
def against_greedy(tmp_path_factory) -> Path:
    """A best response to ``greedy``, smoke-sized: its ``best_response.json``."""
    out = tmp_path_factory.mktemp("br-greedy")
    args = br.Args(
        target="greedy", total_decisions=256, num_envs=16, num_steps=16, num_minibatches=2,
        update_epochs=1, hidden=16, eval_every=0, eval_deals=2, final_deals=3, progress=False,
        out_dir=str(out),
    )  # fmt: skip
    br.train(args)
    return out / "best_response.json"


def test_the_column_shows_the_measured_agents_margin_and_budget(against_greedy, tmp_path):
    made = json.loads(against_greedy.read_text())
    measured = made["final"][made["play"]]
    out, md = tmp_path / "l.json", tmp_path / "l.md"
    argv = [*LADDER, "--best-responses", str(against_greedy), "--json", str(out)]
    assert ladder.main([*argv, "--markdown", str(md)]) == 0
    table = md.read_text()
    assert "| best-response margin (budget) |" in table
    lo, hi = measured["margin_ci95"]
    budget = f"after {made['decisions'] / 1e6:.1f}M decisions ({made['minutes']:.0f} min)"
    cell = f" {measured['margin']:+.2f} [{lo:+.2f}, {hi:+.2f}] {budget} |"
    greedy = next(line for line in table.splitlines() if line.startswith("| 1 | `greedy` |"))
    assert greedy.endswith(cell)
    random = next(line for line in table.splitlines() if "| `random` |" in line)
    assert random.endswith(" not measured |")
    row = json.loads(out.read_text())["best_responses"]["greedy"]
    assert row["margin"] == measured["margin"] and row["decisions"] == made["decisions"]
    assert row["play"] == made["play"] and row["deals"] == 3

    again = tmp_path / "again.md"  # reused (no pair played again): the column is kept
    assert ladder.main([*LADDER, "--reuse", str(out), "--markdown", str(again)]) == 0
    assert next(x for x in again.read_text().splitlines() if "| `greedy` |" in x).endswith(cell)


def test_a_column_added_to_a_reused_ladder_keeps_the_versions_its_pairs_were_played_under(
    against_greedy, tmp_path
):
    """Adding a column plays nothing: the table still states the versions of its pairs (a
    published table's, played by an earlier release); a table that plays a pair states this
    package's."""
    published = tmp_path / "published.json"
    assert ladder.main([*LADDER, "--json", str(published)]) == 0
    earlier = {"zhuoji_env": "0.1.0", "environment": ENVIRONMENT}
    published.write_text(json.dumps(dict(json.loads(published.read_text()), versions=earlier)))
    column = tmp_path / "column.json"
    argv = [*LADDER, "--reuse", str(published), "--best-responses", str(against_greedy)]
    assert ladder.main([*argv, "--json", str(column)]) == 0
    assert json.loads(column.read_text())["versions"] == earlier
    joined = tmp_path / "joined.json"
    argv = [*LADDER, "--agents", "random,greedy,rule", "--reuse", str(published)]
    assert ladder.main([*argv, "--json", str(joined)]) == 0
    assert json.loads(joined.read_text())["versions"] == stamp()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.update(target="rule"), "its target 'rule' is not rated here"),
        (lambda d: d.update(rules={"preset": "app", "overrides": {}}), "its rules are"),
        (lambda d: d.pop("decisions"), r"missing or not a finite number \(decisions\)"),
        (lambda d: d.update(play="mean"), "needs 'play' \\(sampling or argmax\\)"),
        (lambda d: d.update(versions={"zhuoji_env": "9.0.0", "environment": "zhuoji_v9"}),
         "made under environment zhuoji_v9"),
    ],
)  # fmt: skip
def test_a_bad_best_response_file_is_refused_naming_it(
    against_greedy, tmp_path, capsys, change, message
):
    data = json.loads(against_greedy.read_text())
    change(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(SystemExit) as exc:
        ladder.main([*LADDER, "--best-responses", str(bad)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"--best-responses {str(bad)!r}" in err
    assert re.search(message, err), err
