"""Behaviour of the tools around the engine that no other test pinned: a mutation test
(2026-12-06) planted 43 small bugs in the file, record, replay, machine, bench,
viewer, picture, analysis, PPO, baseline, registry and SB3 modules; 20 survived the rest of the
suite, and these tests kill 19 of them (the 20th, ``policy_kwargs`` an SB3 model may hold, is a
case of test_safe_loading's refusals): a folder's dotted name kept whole by ``unused_path``; every
hand of a match guarded by ``record`` without ``--force``; a rules tag of exactly
``MAX_TAG`` characters spelled out; ``replay``'s exit status 2 kept after a later mismatch; an
empty ``model name`` skipped; the bench's headline row and its 0.01 s floor; the analysis
tables' win value, overall agreement, own kongs, total-variation distance, seat check and
shanten; the viewer's probability range, seat labels and script-safe data; the drawn tile
shown only to its holder; the ledger's payee-then-payer order; and the SB3 agent's reseed."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from test_bench import FakeClock

RECORDS = Path(__file__).parent / "data" / "records"


def _sample(name: str) -> dict:
    return json.loads((RECORDS / name).read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- fileio
def test_unused_path_keeps_a_dotted_folder_name_whole(tmp_path):
    """unused_path: 'a folder has no suffix': runs/v1.5 -> runs/v1.5-2; a file keeps its last
    suffix (STEM-2.SUFFIX): lr0.5.json -> lr0.5-2.json (all its suffixes were kept before,
    giving lr0-2.5.json)."""
    from zhuoji_env.fileio import unused_path

    (tmp_path / "v1.5").mkdir()
    assert unused_path(tmp_path / "v1.5") == tmp_path / "v1.5-2"
    (tmp_path / "v1.5-2").mkdir()
    assert unused_path(tmp_path / "v1.5") == tmp_path / "v1.5-3"
    (tmp_path / "lr0.5.json").write_bytes(b"x")
    assert unused_path(tmp_path / "lr0.5.json") == tmp_path / "lr0.5-2.json"


# --------------------------------------------------------------------------- record
def test_record_refuses_a_taken_name_of_any_hand_of_a_match(tmp_path, capsys):
    """Module doc: 'the run stops before playing if any of its file names is taken'; hand h of
    game i goes to <rules>-<seed>-<i>-<h>.json."""
    from zhuoji_env.record import main

    out = tmp_path / "recs"
    out.mkdir()
    second = out / "guiyang+hands_per_game=2-0-0-1.json"  # game 0, hand 1
    second.write_text("keep\n")
    argv = ["--n", "1", "--seed", "0", "--set", "hands_per_game=2", "--out", str(out)]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "1 of this run's records exist already" in capsys.readouterr().err
    assert second.read_text() == "keep\n"
    assert sorted(p.name for p in out.iterdir()) == [second.name]


def test_a_rules_tag_of_exactly_max_tag_characters_is_spelled_out():
    """MAX_TAG is the 'longest rules tag spelled out in a file name': only a longer one is
    replaced by the hash."""
    from zhuoji_env.record import MAX_TAG, rules_tag
    from zhuoji_env.rules import Rules

    want = (
        "guiyang+num_players=3+units=fan+rerpao=plus_one_burn+qianggang=plus_nine_burn"
        "+chicken_scope=yaoji_river+zeren=reversible"
    )
    assert len(want) == MAX_TAG == 120
    rules = Rules.make(
        "guiyang",
        num_players=3,
        units="fan",
        rerpao="plus_one_burn",
        qianggang="plus_nine_burn",
        chicken_scope="yaoji_river",
        zeren="reversible",
    )
    assert rules_tag(rules) == want


# --------------------------------------------------------------------------- replay
def test_replay_exit_status_stays_2_after_an_error_then_a_mismatch(tmp_path, capsys):
    """Module doc: a malformed record gives exit status 2 (the run goes on); a difference gives
    1. A run with both exits 2, whatever the order of the files."""
    from zhuoji_env.replay import main

    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    rec = _sample("guiyang-3-draw-chajiao.json")
    rec["result"]["ledger"][0][2] += 1
    differs = tmp_path / "differs.json"
    differs.write_text(json.dumps(rec), encoding="utf-8")
    assert main([str(differs)]) == 1
    assert main([str(bad)]) == 2
    assert main([str(bad), str(differs)]) == 2
    assert main([str(differs), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: error:" in err and f"{differs}: differs:" in err


# --------------------------------------------------------------------------- machine
def test_cpu_model_skips_an_empty_model_name(tmp_path, monkeypatch):
    """cpu_model: the CPU's model name from cpuinfo, else what platform says: an empty
    ``model name`` line names nothing."""
    import platform

    from zhuoji_env import machine

    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: \nprocessor\t: 1\nmodel name\t: Real CPU\n")
    assert machine.cpu_model(str(info)) == "Real CPU"
    info.write_text("processor\t: 0\nmodel name\t:\n")
    assert machine.cpu_model(str(info)) == "riscv64"


# --------------------------------------------------------------------------- bench
def test_bench_sweep_headline_is_the_largest_batch(monkeypatch, capsys):
    """Without --batch the bench sweeps 1, 16, 256 and 4,096 and compares the last (4,096)
    with RLCard: the JSON's top-level figures are that last measurement's."""
    from zhuoji_env import bench

    monkeypatch.setattr(bench, "time", FakeClock())
    monkeypatch.setattr(bench, "bench_rlcard", lambda seconds: None)
    assert bench.main(["--seconds", "0.01", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [r["batch"] for r in out["results"]] == [1, 16, 256, 4096]
    assert out["batch"] == 4096
    assert out["decisions_per_s"] == out["results"][-1]["decisions_per_s"]
    assert out["hands_per_s"] == out["results"][-1]["hands_per_s"]
    # the keys the module docstring documents, without RLCard's
    assert set(out) == {"preset", "results", "batch", "decisions_per_s", "hands_per_s", "machine"}


def test_bench_json_with_rlcard_gives_its_figures_and_the_ratio(monkeypatch, capsys):
    from zhuoji_env import bench

    monkeypatch.setattr(bench, "time", FakeClock())
    rl = {"decisions_per_s": 64.0, "hands_per_s": 0.5}
    monkeypatch.setattr(bench, "bench_rlcard", lambda seconds: rl)
    assert bench.main(["--seconds", "0.01", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["rlcard"] == rl
    assert out["ratio_vs_rlcard"] == out["results"][-1]["decisions_per_s"] / 64.0


def test_bench_accepts_the_least_seconds(monkeypatch, capsys):
    """check_seconds: 'finite and at least 0.01': 0.01 itself is accepted."""
    from zhuoji_env import bench

    monkeypatch.setattr(bench, "time", FakeClock())
    assert bench.main(["--batch", "1", "--seconds", "0.01", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["batch"] == 1


# --------------------------------------------------------------------------- analysis
def _kong_first_agent():
    from agents.base import Agent
    from zhuoji_env.engine import actions as A

    class KongFirst(Agent):
        """Takes any kong it is offered (claimed, concealed or added), else the legal action
        of lowest index."""

        name = "kong"

        def _act(self, obs, mask):
            own = mask[:, A.ANGANG : A.PONG]
            kong = np.where(mask[:, A.KONG], A.KONG, A.ANGANG + own.argmax(-1))
            return np.where(mask[:, A.KONG] | own.any(-1), kong, mask.argmax(-1))

    return KongFirst()


@pytest.fixture(scope="module")
def kong_play():
    from agents.analysis import play_traced

    return play_traced([_kong_first_agent(), "greedy"], 4, seed=0, labels=["kong", "greedy"])


def test_claims_count_own_concealed_and_added_kongs_as_taken(kong_play):
    """claims: 'kong: a claimed kong, or its own concealed or added kong in its turn'; an agent
    that takes every kong offered has taken_rate 1."""
    from agents.analysis import claims

    d = kong_play.decisions
    mine = d[d.agent == "kong"]
    assert {"angang", "bugang"} & set(mine.kind)  # own kongs were offered and taken
    table = claims(kong_play, "kong")
    assert table.loc["kong", "offered"] == mine.can_kong.sum()
    assert table.loc["kong", "taken_rate"] == 1.0
    assert np.isnan(table.loc["kong", "score_when_declined"])


def test_win_value_is_hu_receipts_per_win(kong_play):
    """behaviour's win_value: 'the average value of its wins (hu receipts per win)', from the
    ledger's hu lines of each agent's seats over its wins."""
    from agents.analysis import behaviour

    beh = behaviour(kong_play)
    led, h = kong_play.ledger, kong_play.hands
    for agent in ("kong", "greedy"):
        receipts = led[(led.item == "hu") & (led.payee_agent == agent)].amount.sum()
        wins = h[h.agent == agent].wins.sum()
        assert wins > 0
        assert beh.loc[agent, "win_value"] == pytest.approx(receipts / wins)


def test_decision_shanten_is_the_hands_shanten(kong_play):
    """The decision row's shanten is the observer's (-1 for a complete hand, RULES.md 5)."""
    from zhuoji_env import hands
    from zhuoji_env.observation import block

    d = kong_play.decisions
    want = np.minimum(hands.shanten(block(kong_play.obs, "hand").round().astype(np.int64)), 6)
    assert (d.shanten.to_numpy() == want).all()
    turn = d[d.phase == "turn"]
    assert d.shanten.min() == -1 and (turn[turn.can_hu].shanten == -1).all()


def test_agreement_overall_weighs_every_decision_alike():
    """agreement's 'all' row: the share of all the agent's decisions equal to the reference's,
    not the mean of the per-phase shares."""
    from agents.analysis import agreement, play_traced
    from agents.base import Agent
    from zhuoji_env.engine import actions as A

    class PassFirst(Agent):
        name = "pass"

        def _act(self, obs, mask):
            return np.where(mask[:, A.PASS], A.PASS, mask.argmax(-1))

    play = play_traced([_kong_first_agent(), "random"], 2, seed=4, labels=["kong", "random"])
    by = agreement(play, "kong", PassFirst())
    phases = by.drop("all")
    assert len(phases) >= 2 and phases.agreement.nunique() >= 2
    overall = (phases.decisions * phases.agreement).sum() / phases.decisions.sum()
    assert by.loc["all", "decisions"] == phases.decisions.sum()
    assert by.loc["all", "agreement"] == pytest.approx(overall)
    assert by.loc["all", "agreement"] != pytest.approx(phases.agreement.mean())


def test_block_ablation_reports_total_variation_distance():
    """tv_distance is the total-variation distance of two policies, half their L1 distance:
    in [0, 1]; zeroing the hand block of the hand-reading policy moves it by exactly that."""
    from agents.analysis import block_ablation, play_traced, policy_outputs
    from agents.base import Agent
    from zhuoji_env.engine import actions as A
    from zhuoji_env.observation import SLICES, block

    class HandPolicy(Agent):
        name = "hand"

        def policy(self, obs, mask):
            w = np.ones(mask.shape)
            w[:, : A.ANGANG] += 10 * block(obs, "hand")
            w = w * mask
            return w / w.sum(-1, keepdims=True), np.zeros(len(obs))

        def _act(self, obs, mask):
            return self.policy(obs, mask)[0].argmax(-1)

    play = play_traced([HandPolicy(), "greedy"], 1, seed=2, labels=["hand", "greedy"])
    abl = block_ablation(play, "hand", ["hand", "river"])
    assert ((abl.tv_distance >= 0) & (abl.tv_distance <= 1)).all()
    sel = np.flatnonzero(play.decisions.agent.to_numpy() == "hand")
    obs, mask = play.obs[sel], play.masks[sel]
    zeroed = obs.copy()
    zeroed[:, SLICES["hand"]] = 0
    p0 = policy_outputs(play.agent("hand"), obs, mask)[0]
    p1 = policy_outputs(play.agent("hand"), zeroed, mask)[0]
    want = np.mean([0.5 * np.abs(a - b).sum() for a, b in zip(p0, p1, strict=True)])
    assert abl.set_index("block").loc["hand", "tv_distance"] == pytest.approx(want)
    assert abl.set_index("block").loc["river", "tv_distance"] == 0


def test_ledger_table_refuses_a_seat_just_past_the_agents_list():
    """A record's seats are 0 .. len(agents) - 1: seat len(agents) is refused as not a seat."""
    from agents.analysis import ledger_table

    rec = {"result": {"ledger": [[0, 4, 2, "hu"]]}, "agents": ["a", "b", "c", "d"]}
    with pytest.raises(ValueError, match=re.escape("payee 4 is not a seat of the record's")):
        ledger_table([rec])
    rec = {"result": {"ledger": [[4, 0, 2, "hu"]]}, "agents": ["a", "b", "c", "d"]}
    with pytest.raises(ValueError, match=re.escape("payer 4 is not a seat of the record's")):
        ledger_table([rec])


# --------------------------------------------------------------------------- viewer
def _first_action_text(rec: dict) -> str:
    _, *act = rec["actions"][0]
    return " ".join(map(str, act))


def test_viewer_refuses_a_probability_above_one():
    """view module doc: probs are 'numbers in [0, 1] that sum to about 1': 1.005 alone sums to
    about 1 but is no probability."""
    from zhuoji_env.engine.records import RecordError
    from zhuoji_env.view import replay_steps

    rec = _sample("guiyang-2-ron.json")
    n = len(rec["actions"])
    rec["probs"] = [{_first_action_text(rec): 1.0}] + [None] * (n - 1)
    assert replay_steps(rec)["steps"][0]["probs"] == rec["probs"][0]
    rec["probs"][0] = {_first_action_text(rec): 1.005}
    with pytest.raises(RecordError, match=re.escape("probs[0]: expected null or an object")):
        replay_steps(rec)


def test_viewer_refuses_agents_that_do_not_label_every_seat():
    """'agents' labels the seats: one string per seat, no fewer, no more."""
    from zhuoji_env.engine.records import RecordError
    from zhuoji_env.view import replay_steps

    rec = _sample("guiyang-2-ron.json")
    for labels in (["a", "b", "c"], ["a", "b", "c", "d", "e"]):
        with pytest.raises(RecordError, match=re.escape("'agents' must list one label")):
            replay_steps({**rec, "agents": labels})
    assert replay_steps({**rec, "agents": ["a", "b", "c", "d"]})["agents"] == ["a", "b", "c", "d"]


def test_viewer_page_data_survives_a_label_that_closes_its_script():
    """The page carries its data inline; a label holding '</script ' must not end the data
    script early: the page's JSON reads back whole, with the label as given."""
    from zhuoji_env.view import page

    labels = ["</script x>", "</SCRIPT\t", "a<b", "P3"]
    html = page({**_sample("guiyang-2-ron.json"), "agents": labels})
    start = html.index('<script id="data" type="application/json">') + len(
        '<script id="data" type="application/json">'
    )
    end = re.search(r"</script[\s/>]", html[start:], re.IGNORECASE).start()
    assert json.loads(html[start : start + end])["agents"] == labels


# --------------------------------------------------------------------------- picture
def test_status_line_shows_the_drawn_tile_only_to_its_holder():
    """Concealed tiles of seats other than the viewer are hidden unless ``reveal``: the drawn
    tile in the header too."""
    from zhuoji_env.engine.game import BatchGame
    from zhuoji_env.engine.state import TURN
    from zhuoji_env.picture import status_lines
    from zhuoji_env.tiles import CODES

    game = BatchGame("guiyang", 1, seed=0)
    st = game.state
    assert int(st.phase[0]) == TURN and int(st.drawn[0]) >= 0
    actor, drew = int(st.actor[0]), f"drew {CODES[int(st.drawn[0])]}"
    assert drew in status_lines(game.rules, st, 0)[1]
    assert drew in status_lines(game.rules, st, 0, viewer=actor)[1]
    for other in {0, 1, 2, 3} - {actor}:
        assert "drew" not in status_lines(game.rules, st, 0, viewer=other)[1]
        assert drew in status_lines(game.rules, st, 0, viewer=other, reveal=True)[1]


def test_ledger_rows_sort_by_item_then_payee_then_payer():
    from zhuoji_env.picture import ledger_rows

    result = {"ledger": [[3, 0, 1, "hu"], [0, 1, 2, "hu"], [2, 0, 1, "hu"], [1, 2, 1, "chicken"]]}
    assert ledger_rows(result) == [
        (2, 0, 1, "hu"),
        (3, 0, 1, "hu"),
        (0, 1, 2, "hu"),
        (1, 2, 1, "chicken"),
    ]


# --------------------------------------------------------------------------- sb3
def _sb3_policy():
    import torch
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from zhuoji_env.engine.actions import NUM_ACTIONS
    from zhuoji_env.observation import OBS_SIZE

    torch.manual_seed(0)
    return MaskableActorCriticPolicy(
        spaces.Box(-np.inf, np.inf, (OBS_SIZE,), np.float32),
        spaces.Discrete(NUM_ACTIONS),
        lr_schedule=lambda _: 0.0,
        net_arch={"pi": [8], "vf": [8]},
    )


def test_sb3_agent_reseed_replays_its_samples():
    """Agent.reseed replaces the random generator: after reseed(s) an SB3 agent samples as a
    new agent seeded s does."""
    from agents.sb3 import SB3Agent
    from zhuoji_env.engine.game import BatchGame
    from zhuoji_env.observation import encode

    game = BatchGame("guiyang", 64, seed=1)
    obs = encode(game.state, np.arange(64), game.state.actor)
    mask = game.mask
    policy = _sb3_policy()
    fresh = SB3Agent(policy, seed=5).act(obs, mask)
    agent = SB3Agent(policy, seed=0)
    agent.act(obs, mask)
    agent.reseed(5)
    again = agent.act(obs, mask)
    assert (again == fresh).all()
    agent.reseed(5)
    assert (agent.act(obs, mask) == fresh).all()
