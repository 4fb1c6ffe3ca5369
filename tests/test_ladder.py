"""The rated ladder: the fit recovers known ratings, the protocol command, reuse, bad input."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from agents import ladder
from agents.ladder import PairResult, fit_ladder, fit_ratings

TRUE = {"random": 0.0, "greedy": 4.0, "rule": 7.5, "mine": 6.0}


def synthetic_pairs(deals=2000, sd=3.5, seed=0, true=TRUE) -> list[PairResult]:
    """Per-deal score sums whose paired margins are ``true[a] - true[b]`` plus noise shared by
    deal (a deal's luck moves every pair's margin together, as the same walls do)."""
    rng = np.random.default_rng(seed)
    names = list(true)
    luck = rng.normal(0, sd, (deals, len(names)))
    hands = np.full(deals, 12)
    out = []
    for i, j in itertools.combinations(range(len(names)), 2):
        margin = true[names[i]] - true[names[j]] + luck[:, i] - luck[:, j]
        score_a = np.round(margin * 6).astype(np.int64)  # a scores +m/2, b -m/2, 12 hands each
        out.append(PairResult(names[i], names[j], score_a, -score_a, hands, hands))
    return out


def recovery_error(pairs, true=TRUE) -> float:
    fit = fit_ladder(list(true), list(true), pairs, "random", bootstrap=200)
    for k, name in enumerate(true):
        lo, hi = fit.ci95[k]
        assert lo - 0.05 <= true[name] <= hi + 0.05, (name, true[name], lo, hi)
    return float(np.abs(fit.ratings - np.array(list(true.values()))).max())


def test_the_fit_recovers_known_ratings_on_synthetic_results():
    assert recovery_error(synthetic_pairs()) < 0.15
    # only a chain of pairs (each agent meets one other): still determined
    chain = [p for p in synthetic_pairs(seed=1) if (p.a, p.b) in {("random", "greedy"),
             ("greedy", "rule"), ("rule", "mine")}]  # fmt: skip
    assert recovery_error(chain) < 0.3


def test_the_recovery_test_catches_a_planted_sign_error(monkeypatch):
    real = ladder.design
    monkeypatch.setattr(ladder, "design", lambda pairs, n: -real(pairs, n))
    with pytest.raises(AssertionError):
        recovery_error(synthetic_pairs())


def test_the_fit_of_exact_margins_is_exact_and_weighs_by_variance():
    # three agents, transitive margins: exact; an intransitive triangle splits by weight
    pairs = [(0, 1), (0, 2), (1, 2)]
    r = fit_ratings(pairs, np.array([-2.0, -5.0, -3.0]), np.ones(3), 3, anchor=0)
    assert r == pytest.approx([0.0, 2.0, 5.0])
    r = fit_ratings(pairs, np.array([-2.0, -5.0, 0.0]), np.array([1e-6, 1e-6, 1.0]), 3, 0)
    assert r == pytest.approx([0.0, 2.0, 5.0], abs=1e-4)  # the noisy pair yields
    with pytest.raises(ValueError, match="do not connect every agent to the anchor"):
        fit_ratings([(0, 1)], np.array([1.0]), np.ones(1), 3, anchor=0)


def test_pair_margins_residuals_and_chi_square_from_hand_built_sums():
    # deal margins: (6/12 - -6/12) = 1.0 and (-6/12 - 6/12) = -1.0
    p = PairResult("a", "b", np.array([6, -6]), np.array([-6, 6]), np.full(2, 12), np.full(2, 12))
    assert p.per_deal().tolist() == [1.0, -1.0]
    q = p.swapped()
    assert (q.a, q.b) == ("b", "a") and q.per_deal().tolist() == [-1.0, 1.0]
    fit = fit_ladder(["a", "b"], ["a", "b"], [p], anchor="a", bootstrap=0)
    assert fit.ratings.tolist() == [0.0, 0.0] and fit.residuals() == [0.0]
    assert fit.chi2() == (0.0, 0)
    table = fit.markdown("t", unit="番 per hand")
    assert "rating (番 per hand, a = 0)" in table
    # mean 0, sd sqrt(2), t(0.975, 1) = 12.706: each head-to-head cell, row minus column
    assert "| `a` |  | +0.00 [-12.71, +12.71] |" in table.splitlines()
    assert "| `b` | -0.00 [-12.71, +12.71] |  |" in table.splitlines()
    # no bootstrap, no rating intervals: n/a, not nan
    assert "| 1 | `a` | +0.00 | n/a (no bootstrap) |" in table.splitlines()
    assert "nan" not in table
    written = ladder.ladder_json(fit, ladder.Rules.make("guiyang"), 2, 0, "permute", {})
    assert written["agents"][0]["ci95"] == [None, None]
    with pytest.raises(ValueError, match="anchor 'random' is not among"):
        fit_ladder(["a", "b"], ["a", "b"], [p])
    with pytest.raises(ValueError, match="at least 2 deals"):
        one = PairResult("a", "b", np.ones(1, int), -np.ones(1, int), *(np.ones(1, int),) * 2)
        fit_ladder(["a", "b"], ["a", "b"], [one], anchor="a")


@pytest.fixture
def small_protocol(monkeypatch):
    """zhuoji-bench-v1 at smoke-test sizes (the real one is 2,000 deals a pair, 3 presets)."""
    small = dataclasses.replace(
        ladder.PROTOCOLS["zhuoji-bench-v1"],
        presets=("guiyang",),
        deals=3,
        bootstrap=20,
        field=("random", "greedy", "rule"),
    )
    monkeypatch.setitem(ladder.PROTOCOLS, "zhuoji-bench-v1", small)
    return small


PLUGIN = """
from agents import register_agent
from agents.simple import GreedyAgent
register_agent("mine", lambda arg, seed=None, rules=None: GreedyAgent(seed=seed), replace=True)
"""


def test_the_protocol_command_with_a_plugin_and_reuse(small_protocol, tmp_path, monkeypatch,
                                                      capsys):  # fmt: skip
    (tmp_path / "ladder_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "bench-{preset}.json"
    md = tmp_path / "bench-{preset}.md"
    base = ["--protocol", "zhuoji-bench-v1", "--no-progress"]
    assert ladder.main([*base, "--json", str(out), "--markdown", str(md)]) == 0
    first = json.loads((tmp_path / "bench-guiyang.json").read_text())
    assert first["format"] == "zhuoji-ladder-1" and first["protocol"] == "zhuoji-bench-v1"
    assert first["deals"] == 3 and first["seed"] == small_protocol.seed
    assert [a["label"] for a in first["agents"]][-1] == "random"  # weakest, at 0
    assert len(first["pairs"]) == 3
    assert "| 1 | `rule` |" in (tmp_path / "bench-guiyang.md").read_text()
    capsys.readouterr()
    again = tmp_path / "again-{preset}.json"
    argv = [*base, "--plugin", "ladder_plugin", "--agents", "mine", "--json", str(again)]
    assert ladder.main([*argv, "--reuse", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("reused") == 3 and "mine" in err
    second = json.loads((tmp_path / "again-guiyang.json").read_text())
    assert len(second["pairs"]) == 6
    old = {(p["a"], p["b"]): p for p in first["pairs"]}
    for p in second["pairs"]:
        if (p["a"], p["b"]) in old:
            assert p["score_a"] == old[p["a"], p["b"]]["score_a"]
            assert p["seconds"] == old[p["a"], p["b"]]["seconds"] > 0  # when it was played
    # the reused ladder's ratings are held; mine is placed beside them
    assert {a["label"]: a["rating"] for a in second["agents"] if a["label"] != "mine"} == {
        a["label"]: a["rating"] for a in first["agents"]
    }
    assert {a["label"]: a["stage"] for a in second["agents"]}["mine"] == 1
    # the reused pairs equal playing them again: the full refit is a ladder of all four
    replay = tmp_path / "replay-{preset}.json"
    assert ladder.main([*argv, "--json", str(replay)]) == 0
    third = json.loads((tmp_path / "replay-guiyang.json").read_text())
    refit = second["compare"]["agents"]  # agents in another order: equal to the last bits
    assert {a["label"]: a["rating"] for a in third["agents"]} == pytest.approx(refit, abs=1e-12)
    sys.modules.pop("ladder_plugin", None)


def test_bad_ladder_commands_say_what_is_wrong(small_protocol, tmp_path, capsys):
    def error(argv):
        with pytest.raises(SystemExit) as exc:
            ladder.main(argv)
        assert exc.value.code == 2
        return capsys.readouterr().err

    assert "fixes --deals" in error(["--protocol", "zhuoji-bench-v1", "--deals", "5"])
    assert "must include 'random'" in error(["--agents", "greedy,rule", "--deals", "3"])
    assert "at least two specs" in error(["--agents", "rule"])
    assert "cannot import" in error(["--agents", "random,rule", "--plugin", "no_such_mod_x"])
    taken = tmp_path / "x.json"
    taken.write_text("{}")
    msg = error(["--agents", "random,rule", "--deals", "3", "--json", str(taken)])
    assert "exists" in msg and "--force" in msg
    assert "not a zhuoji-ladder-1 file" in error(
        ["--agents", "random,rule", "--deals", "3", "--reuse", str(taken)]
    )
    good = tmp_path / "good.json"
    assert ladder.main(["--agents", "random,rule", "--deals", "3", "--json", str(good)]) == 0
    capsys.readouterr()
    assert "its seed is 0, this ladder's is 5" in error(
        ["--agents", "random,rule", "--deals", "3", "--seed", "5", "--reuse", str(good)]
    )
    assert "plays ['guiyang']" in error(["--protocol", "zhuoji-bench-v1", "--preset", "app"])


def test_versus_plays_only_its_pairs_and_device_and_chunk_reach_the_arena(
    tmp_path, monkeypatch, capsys
):
    played = []
    real = ladder.run_arena

    def spy(agents, deals, **kw):
        played.append((tuple(agents), kw["device"], kw["chunk_games"]))
        return real(agents, deals, **kw)

    monkeypatch.setattr(ladder, "run_arena", spy)
    base = tmp_path / "base.json"
    argv = ["--deals", "3", "--bootstrap", "20", "--no-progress"]
    assert ladder.main(["--agents", "random,greedy", *argv, "--json", str(base)]) == 0
    plain = tmp_path / "plain.json"  # no network to move: the device is not recorded
    assert ladder.main(["--agents", "random,greedy", *argv, "--device", "cpu", "--json",
                        str(plain)]) == 0  # fmt: skip
    assert "device" not in json.loads(plain.read_text())
    played.pop()
    out = tmp_path / "out.json"
    assert ladder.main(["--agents", "random,greedy,rule,ppo-scratch", "--versus", "greedy",
                        "--reuse", str(base), "--device", "cpu", "--chunk", "6",
                        *argv, "--json", str(out)]) == 0  # fmt: skip
    assert played[1:] == [(("greedy", "rule"), "cpu", 6), (("greedy", "ppo-scratch"), "cpu", 6)]
    data = json.loads(out.read_text())
    assert sorted(tuple(sorted((p["a"], p["b"]))) for p in data["pairs"]) == [
        ("greedy", "ppo-scratch"), ("greedy", "random"), ("greedy", "rule")
    ]  # fmt: skip
    assert data["device"] == "cpu" and len(data["agents"]) == 4
    table = capsys.readouterr().out
    assert "| `rule` |" in table and "not played" in table

    def error(extra):
        with pytest.raises(SystemExit) as exc:
            ladder.main(["--agents", "random,greedy,rule", *argv, *extra])
        assert exc.value.code == 2
        return capsys.readouterr().err

    assert "--versus 'ppo-app': name agents among the rated ones" in error(["--versus", "ppo-app"])
    assert "--versus ',': no agent spec given" in error(["--versus", ","])
    assert "--versus 'greedy,,rule': item 2 is empty" in error(["--versus", "greedy,,rule"])
    assert "--chunk must be >= 1, got 0" in error(["--chunk", "0"])


def test_pairs_record_their_chunk_and_machine_and_reuse_keeps_them(tmp_path):
    """A pair's chunk size and machine are written where it is played, kept where it is
    reused (not replaced by the reusing machine's), and absent from files written before."""
    first = tmp_path / "first.json"
    argv = ["--deals", "3", "--bootstrap", "20", "--no-progress"]
    assert ladder.main(["--agents", "random,greedy", *argv, "--chunk", "12",
                        "--json", str(first)]) == 0  # fmt: skip
    row = json.loads(first.read_text())["pairs"][0]
    assert row["chunk_games"] == 12
    assert row["machine"]["numpy"] == np.__version__ and row["machine"]["cores"] >= 1
    data = json.loads(first.read_text())
    data["pairs"][0]["machine"]["cpu"] = "the machine it was played on"
    first.write_text(json.dumps(data))
    again = tmp_path / "again.json"
    assert ladder.main(["--agents", "random,greedy,rule", *argv, "--reuse", str(first),
                        "--json", str(again)]) == 0  # fmt: skip
    pairs = {frozenset((p["a"], p["b"])): p for p in json.loads(again.read_text())["pairs"]}
    reused, played = pairs[frozenset(("random", "greedy"))], pairs[frozenset(("random", "rule"))]
    assert reused["machine"]["cpu"] == "the machine it was played on"
    assert reused["chunk_games"] == 12
    assert played["chunk_games"] == 4096
    assert played["machine"]["cpu"] != "the machine it was played on"
    old = {k: v for k, v in row.items() if k not in ("chunk_games", "machine")}
    pair = PairResult.from_json(old)
    assert pair.chunk_games is None and pair.machine is None
    assert "chunk_games" not in pair.to_json() and "machine" not in pair.to_json()
    back = PairResult.from_json(row)
    assert back.swapped().machine == row["machine"] and back.swapped().chunk_games == 12


@pytest.mark.parametrize(
    "sums, message",
    [
        (([3, -3], [-3, 2], [6, 6], [6, 6]), "deal 1's scores do not sum to 0"),
        (([3, -3], [-3, 3], [6, 6], [6, 12]), "must be one number for every deal"),
        (([3, -3], [-3, 3], [6, 12], [6, 12]), "must be one number for every deal"),
    ],
)
def test_per_deal_sums_no_arena_plays_are_refused(sums, message):
    """A ladder file's pair was read with any hands and scores: 1 hand in a deal of 12, or a
    deal that paid more than it took."""
    with pytest.raises(ValueError, match=re.escape("pair a - b: ") + ".*" + re.escape(message)):
        PairResult("a", "b", *(np.array(x) for x in sums)).check()


@pytest.mark.parametrize(
    "key, value", [("chunk_games", 0), ("chunk_games", "12"), ("chunk_games", True),
                   ("machine", "AMD EPYC"), ("machine", [1])],
)  # fmt: skip
def test_a_malformed_chunk_or_machine_is_refused(key, value):
    hands = np.full(2, 6)
    row = PairResult("a", "b", np.array([3, -3]), np.array([-3, 3]), hands, hands).to_json()
    row[key] = value
    with pytest.raises(ValueError, match=re.escape(f"pair a - b: {key} {value!r}")):
        PairResult.from_json(row)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--agents", "random,greedy,random"],
         "--agents 'random,greedy,random': 'random' given more than once; a ladder rates each "
         "agent once"),
        (["--agents", "rule,,random"], "--agents 'rule,,random': item 2 is empty"),
        (["--agents", ""], "--agents '': no agent spec given"),
        (["--agents", "random,rule", "--deals", "1"],
         "--deals must be >= 2 (the fit weighs each pair by its variance over deals), got 1"),
        (["--agents", "random,rule", "--seed", "-1"], "--seed must be >= 0, got -1"),
        (["--agents", "random,rule", "--bootstrap", "-2"],
         "--bootstrap must be >= 0 (0: no intervals), got -2"),
        (["--agents", "random,rule", "--workers", "0"], "--workers must be >= 1, got 0"),
        (["--agents", "random,rule", "--set", "baoting=true", "--set", "baoting=false"],
         "switch 'baoting' is set twice ('baoting=true', then 'baoting=false')"),
        # the last agent's spec used to be built only when its first pair came up
        (["--agents", "random,greedy,ppo:/nonexist.pt"], "no checkpoint file at '/nonexist.pt'"),
        (["--agents", "random,greedy,search:rule:kk=3"], "unknown option 'kk'"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_before_any_pair_is_played(monkeypatch, capsys, argv, message):
    def no_run(*a, **k):
        raise AssertionError("a pair was played before the input was checked")

    monkeypatch.setattr(ladder, "run_arena", no_run)
    with pytest.raises(SystemExit) as exc:
        ladder.main([*argv, "--no-progress"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def hand_pair(a="random", b="rule", deals=3, hands=6) -> PairResult:
    score = np.arange(deals, dtype=np.int64) - 1
    return PairResult(a, b, score, -score, np.full(deals, hands), np.full(deals, hands))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"hands_a": [1.9, 1, 1]}, "pair a - b: hands_a[0] is 1.9: the per-deal sums must be "
         "integers (64-bit)"),
        ({"score_a": ["1", 1, 1]}, "pair a - b: score_a[0] is '1'"),
        ({"score_b": [2**70, 1, 1]}, f"pair a - b: score_b[0] is {2**70}"),
        ({"score_a": 5}, "pair a - b: score_a must be a list of integers, one per deal, got int"),
        ({k: [] for k in ("score_a", "score_b", "hands_a", "hands_b")}, "pair a - b: no deals"),
        ({"hands_b": [1, 0, 1]}, "pair a - b: a deal without hands"),
        ({"seconds": float("nan")}, "pair a - b: seconds nan"),
        ({"seconds": -1.0}, "pair a - b: seconds -1.0"),
        ({"a": None}, "pair None - b: a is None, not a label (a non-empty string)"),
        ({"b": "a"}, "pair a - a: an agent is not paired with itself"),
    ],
)  # fmt: skip
def test_a_malformed_pair_is_refused_not_converted(change, message):
    row = {**hand_pair("a", "b").to_json(), **change}
    with pytest.raises(ValueError, match=re.escape(message)):
        PairResult.from_json(row)


def test_a_pair_without_its_sums_names_them():
    with pytest.raises(ValueError, match=re.escape("pair x - y: no 'score_a', 'score_b', 'hands")):
        PairResult.from_json({"a": "x", "b": "y"})


def ladder_file(tmp_path, name, body) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(body if isinstance(body, str) else json.dumps(body))
    return str(path)


GOOD_AGENTS = [{"label": "a", "spec": "random"}, {"label": "b", "spec": "rule"}]


@pytest.mark.parametrize(
    "body, message",
    [
        ({"agents": [1, 2], "pairs": []}, "agents[0] must be an object with a 'label' and a "
         "'spec' (non-empty strings) and a 'sha256' (a string or null), got 1"),
        ({"agents": {"a": 1}, "pairs": []}, "its agents must be a list, got dict"),
        ({"agents": [], "pairs": [1]}, "pairs[0] must be an object, got int"),
        ({"agents": [{"label": "a"}], "pairs": []}, "agents[0] must be an object with a 'label'"),
        ({"agents": [{"label": "a", "spec": 5}], "pairs": []}, "agents[0] must be an object"),
        ({"agents": GOOD_AGENTS * 2, "pairs": []}, "agent 'a' is listed twice"),
        ({"agents": GOOD_AGENTS, "pairs": [{"a": "a", "b": "b"}]},
         "pair a - b: no 'score_a', 'score_b', 'hands_a', 'hands_b'"),
        ({"agents": GOOD_AGENTS, "pairs": [hand_pair("a", "b", deals=2).to_json()]},
         "pair a - b has 2 per-deal sums, but the file says deals: 5"),
        ("[" * 100000, "cannot read it as JSON (maximum recursion depth exceeded"),
    ],
)  # fmt: skip
def test_a_malformed_reuse_file_is_a_value_error_naming_it(tmp_path, body, message):
    if isinstance(body, dict):
        body = {"format": ladder.FORMAT, "rules": {"preset": "guiyang", "overrides": {}},
                "deals": 5, "seed": 0, "seating": "permute", **body}  # fmt: skip
    path = ladder_file(tmp_path, "bad", body)
    rules = ladder.Rules.make("guiyang")
    with pytest.raises(ValueError, match=re.escape(f"--reuse {path!r}: {message}")):
        ladder.reusable(path, rules, 5, 0, "permute")


def test_the_cli_reports_a_malformed_reuse_file(tmp_path, capsys):
    path = ladder_file(tmp_path, "bad", "[" * 100000)
    with pytest.raises(SystemExit) as exc:
        ladder.main(["--agents", "random,rule", "--deals", "3", "--reuse", path, "--no-progress"])
    assert exc.value.code == 2
    assert f"--reuse {path!r}: cannot read it as JSON" in capsys.readouterr().err


@pytest.mark.parametrize(
    "labels, specs, pairs, kw, error, message",
    [
        (["random", "rule"], ["random", "rule"], [hand_pair("random", "nobody")], {}, ValueError,
         "pair random - nobody: 'nobody' is not among the agents ['random', 'rule']"),
        (["random", "rule"], ["random", "rule"], [hand_pair(), hand_pair("rule", "rule")], {},
         ValueError, "pair rule - rule: an agent is not paired with itself"),
        (["random", "random", "rule"], ["random", "greedy", "rule"], [hand_pair()], {},
         ValueError, "'random' given more than once; each agent needs its own label"),
        (["random", "rule"], ["random"], [hand_pair()], {}, ValueError,
         "1 specs for 2 labels: give one spec per label"),
        (["random", "rule"], ["random", "rule"], [hand_pair(hands=0)], {}, ValueError,
         "pair random - rule: a deal without hands"),
        (["random", "rule"], ["random", "rule"], [hand_pair()], {"bootstrap": -1}, ValueError,
         "bootstrap must be an integer >= 0, got -1"),
        (["random", "rule"], ["random", "rule"], [hand_pair()], {"bootstrap": 2.5}, ValueError,
         "bootstrap must be an integer >= 0, got 2.5"),
        (["random", "rule"], ["random", "rule"], [hand_pair()], {"bootstrap": True}, ValueError,
         "bootstrap must be an integer >= 0, got True"),
        (["random", "rule"], ["random", "rule"], [hand_pair()], {"seed": -1}, ValueError,
         "seed must be an integer >= 0, got -1"),
        (["random", "rule"], ["random", "rule"], [("random", "rule")], {}, TypeError,
         "pairs must be PairResult objects, got tuple"),
    ],
)  # fmt: skip
def test_fit_ladder_refuses_inconsistent_input(labels, specs, pairs, kw, error, message):
    with pytest.raises(error, match=re.escape(message)):
        fit_ladder(labels, specs, pairs, **kw)


def test_fit_ladder_takes_numpy_integers():
    pairs = [hand_pair()]
    plain = fit_ladder(["random", "rule"], ["random", "rule"], pairs, bootstrap=5, seed=1)
    numpy = fit_ladder(
        ["random", "rule"], ["random", "rule"], pairs, bootstrap=np.int64(5), seed=np.int64(1)
    )
    assert (plain.ci95 == numpy.ci95).all() and numpy.bootstrap == 5


@pytest.mark.parametrize(
    "labels, versus, error, message",
    [
        (["r"], None, ValueError, "1 labels for 2 agents"),
        (["random", "greedy"], ["nobody"], ValueError,
         "versus ['nobody']: name agents among the rated ones ['random', 'greedy']"),
        (["random", "greedy"], "random", TypeError,
         "versus must be a list or tuple of agent specs or agent objects, got the string "
         "'random'; split comma-separated specs first: ['random']"),
    ],
)  # fmt: skip
def test_play_pairs_checks_labels_and_versus_before_playing(
    monkeypatch, labels, versus, error, message
):
    def no_run(*a, **k):
        raise AssertionError("a pair was played before the input was checked")

    monkeypatch.setattr(ladder, "run_arena", no_run)
    rules = ladder.Rules.make("guiyang")
    with pytest.raises(error, match=re.escape(message)):
        ladder.play_pairs(["random", "greedy"], labels, rules, 2, 0, "permute", versus=versus)


def test_device_cuda_is_refused_where_torch_sees_none(capsys):
    """As in the arena: a ladder must not record a device it could not use."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(SystemExit) as info:
        ladder.main(["--agents", "random,greedy", "--deals", "2", "--device", "cuda"])
    assert info.value.code == 2
    assert "device 'cuda': torch sees no CUDA device" in capsys.readouterr().err


def test_a_pair_is_reused_only_while_every_network_it_played_is_the_same(tmp_path, monkeypatch):
    """The fingerprint read only shipped names: a search over ppo-guiyang, or ppo:PATH
    retrained into the same file, had none, and its stale pairs were reused after a re-ship."""
    from agents.ppo import provenance

    shipped = provenance("ppo-guiyang")["sha256"]
    assert ladder.fingerprint("search:ppo-guiyang:leaf=0") == shipped
    assert ladder.fingerprint("search:ppo-guiyang:greedy:k=8") == shipped
    ckpt = tmp_path / "run" / "latest.pt"
    ckpt.parent.mkdir()
    ckpt.write_bytes(b"weights, version 1")
    first = ladder.fingerprint(f"ppo:{ckpt}:greedy")
    assert first == ladder.fingerprint(f"search:ppo:{ckpt}:k=4")
    ckpt.write_bytes(b"weights, version 2, retrained")
    assert ladder.fingerprint(f"ppo:{ckpt}") not in (None, first)
    assert ladder.fingerprint("rule") is None and ladder.fingerprint("search:rule") is None
    assert ladder.fingerprint("ppo:" + "a" * 300) is None  # a name too long: no OSError
    rules = ladder.Rules.make("guiyang")
    published = str(Path(__file__).resolve().parents[1] / "docs" / "ladder-guiyang.json")
    pairs = ladder.reusable(published, rules, 2000, 4001, "permute")
    searched = [k for k in pairs if k[0].startswith("search:ppo-guiyang")]
    assert searched  # the published pairs of the search agents are reusable as they stand
    monkeypatch.setattr(
        "agents.ppo.provenance", lambda name: {**provenance(name), "sha256": "re-shipped"}
    )
    again = ladder.reusable(published, rules, 2000, 4001, "permute")
    assert not [k for k in again if "ppo-guiyang" in k[0] or "ppo-guiyang" in k[1]]
    assert ("rule", "greedy") in again
