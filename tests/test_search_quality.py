"""``agents.search_quality``: settings are judged at the same decisions and candidates by fresh
rollouts, a setting that never overrules gains exactly 0, ``--judge real`` plays copies of the
real game, and bad flags exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from json_helpers import strict_json

from agents import make_agent, search_quality
from agents.arena import clustered_mean_ci
from agents.search import SearchAgent


def test_gains_are_the_judged_differences_at_the_picks(tmp_path, capsys):
    out = tmp_path / "q.json"
    # the settings sample from the uniform belief (improve=0), on which z=10 never overrules
    # here: a standard error from two deals is itself noisy, and from improved deals one pick
    # gains 11 points on a standard error of 1, past even z=10
    settings = "k=2:z=0:improve=0;z=10:k=2:improve=0;k=2:z=0:confirm=3:improve=0"
    argv = ["--base", "rule", "--settings", settings]
    argv += ["--truth", "3", "--tables", "3", "--steps", "8", "--seed", "4", "--no-progress"]
    assert search_quality.main([*argv, "--json", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in printed[1:]] == settings.split(";")
    res = json.loads(out.read_text())
    judged = np.array(res["judged"])
    assert judged.shape[1] == 3 and (judged[:, 0] == 0).all()
    cand = np.array(res["candidates"])
    assert cand.shape == judged.shape and ((cand >= 0) & (cand < 86)).all()
    free, never, _ = res["rows"]
    for row in res["rows"]:
        picks = np.array(row["picks"])
        assert row["decisions"] == len(judged) == len(picks) > 0
        assert row["gain"] == pytest.approx(judged[np.arange(len(picks)), picks].mean())
    assert free["overruled"] > 0 and never["overruled"] == 0 and never["gain"] == 0
    tables = np.array(res["tables"])
    assert len(tables) == len(judged) and set(tables) <= {0, 1, 2}
    gain = judged[np.arange(len(tables)), np.array(free["picks"])]
    assert free["ci"] == pytest.approx(list(clustered_mean_ci(gain, tables)[1:]))


def test_a_setting_narrows_the_runs_candidates_and_decisions(tmp_path):
    out = tmp_path / "q.json"
    argv = ["--base", "ppo-guiyang", "--c", "3", "--unsure", "1", "--truth", "2", "--tables", "3"]
    argv += ["--steps", "12", "--seed", "5", "--no-progress", "--json", str(out)]
    settings = "leaf=1:k=2:z=0;leaf=1:k=2:z=0:c=2;leaf=1:k=2:z=0:unsure=0.8"
    assert search_quality.main([*argv, "--settings", settings]) == 0
    res = json.loads(out.read_text())
    p, judged = np.array(res["favourite"]), np.array(res["judged"])
    wide, two, sure = (np.array(r["picks"]) for r in res["rows"])
    assert len(p) == len(judged) == len(wide) > 0 and ((p > 0) & (p < 1)).all()
    assert res["rows"][0]["searched"] == len(p) and res["rows"][2]["searched"] == (p < 0.8).sum()
    assert 0 < (p < 0.8).sum() < len(p)
    assert (two <= 1).all() and (sure[p >= 0.8] == 0).all() and (wide == 2).any()
    for row, picks in zip(res["rows"], (wide, two, sure), strict=True):
        assert row["gain"] == pytest.approx(judged[np.arange(len(p)), picks].mean())


@pytest.mark.parametrize("judge", ["belief", "real"])
def test_the_real_judge_plays_the_real_deal(judge, monkeypatch, tmp_path):
    """With ``--judge real`` every judged deal is a copy of the real game: with ``rule``
    (deterministic) in every seat, all of a candidate's deals score the same; sampled deals
    do not."""
    seen = []
    score = SearchAgent.score

    def spy(self, deals, obs, cand, k):
        out = score(self, deals, obs, cand, k)
        seen.append(out)
        return out

    monkeypatch.setattr(SearchAgent, "score", spy)
    out = tmp_path / "q.json"
    argv = ["--base", "rule", "--settings", "k=2:z=0", "--truth", "6", "--tables", "4"]
    argv += ["--steps", "16", "--seed", "6", "--no-progress", "--judge", judge, "--json", str(out)]
    assert search_quality.main(argv) == 0
    assert json.loads(out.read_text())["judge"] == judge
    judged = np.concatenate([s for s in seen if s.shape[1] == 6])
    same = (judged == judged[:, :1]).all(axis=(1, 2))
    assert len(same) > 10
    assert same.all() if judge == "real" else not same.all()


def test_the_judge_plays_whole_hands_from_the_uniform_belief_for_every_base():
    for base in ("ppo-guiyang", "rule"):
        judge = search_quality.make_judge(make_agent(base), None, 64, 4, 0.95, 1)
        assert (judge.leaf, judge.k, judge.c, judge.unsure, judge.improve) == (0, 64, 4, 0.95, 0.0)
    assert make_agent("search:rule").improve == 1.0, "unlike search:rule's own default"


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--truth", "0"], "--truth must be at least 1"),
        (["--settings", "c=4"], "c=4 is above the run's --c 3"),
        (["--unsure", "0.8", "--settings", "unsure=0.9"], "unsure=0.9 is above the run's"),
        (["--settings", "k=2;foo=1"], "unknown option 'foo'"),
        (["--base", "rule", "--settings", "leaf=1"], "has none"),
        (["--json", "/no/such/folder/q.json"], "does not exist"),
        (["--c", "1"], "--c must be in 2-86, got 1"),
        (["--truth", "5000"], "--truth must be in 1-4096, got 5000"),
        (["--unsure", "0"], "--unsure must be in (0, 1], got 0"),
        (["--seed", "-1"], "--seed must be a non-negative integer, got -1"),
        (["--settings", "k=2;;k=3"], "'k=2;;k=3': setting 2 is empty"),
        (["--settings", "k=2;"], "'k=2;': setting 2 is empty"),
        (["--settings", "k=2;z=0;k=2"], "setting 'k=2' is given twice"),
        (["--settings", "z=0:c=3;z=0"], "setting 'z=0' is the same as 'z=0:c=3'"),
        (["--settings", "k"], "search option 'k' needs a value: k=N"),
        (["--settings", "k=2:greedy"], "setting 'k=2:greedy': 'greedy' is not OPTION=VALUE"),
    ],
)
def test_bad_flags_exit_2(argv, match, capsys):
    with pytest.raises(SystemExit) as exc:
        search_quality.main([*argv, "--tables", "1", "--steps", "1", "--no-progress"])
    assert exc.value.code == 2
    assert match in capsys.readouterr().err


def test_json_never_replaces_a_file_without_force_and_is_standard(tmp_path, capsys):
    """An existing --json FILE is refused before any play, and replaced with --force; one
    decision has no interval, written as null, not NaN."""
    out = tmp_path / "q.json"
    out.write_text("keep\n")
    argv = ["--base", "rule", "--settings", "k=2:z=0", "--truth", "2", "--tables", "1"]
    argv += ["--steps", "1", "--no-progress", "--json", str(out)]
    with pytest.raises(SystemExit) as exc:
        search_quality.main(argv)
    assert exc.value.code == 2 and out.read_text() == "keep\n"
    assert f"--json '{out}' exists: give another name, or --force" in capsys.readouterr().err
    assert search_quality.main([*argv, "--force"]) == 0
    (row,) = strict_json(out.read_text())["rows"]
    assert row["decisions"] == 1 and row["ci"] is None


def test_help_shows_defaults_without_markup(capsys):
    with pytest.raises(SystemExit):
        search_quality.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default 256)" in text and "(default 3)" in text and "(default 0.9)" in text
    assert "``" not in text and ":mod:" not in text
