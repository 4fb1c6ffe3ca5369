"""Analysis tables and charts (agents.analysis)."""

import json
import re
from collections import Counter
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from agents.analysis import (  # noqa: E402
    agreement,
    behaviour,
    block_ablation,
    calibration,
    claims,
    discard_choice,
    item_sources,
    ledger_table,
    play_traced,
    plot_calibration,
    plot_item_sources,
    plot_obs_blocks,
    plot_scores,
    win_values,
)
from agents.arena import clustered_mean_ci, json_text, run_arena  # noqa: E402
from agents.base import Agent  # noqa: E402
from zhuoji_env.engine import actions as A  # noqa: E402
from zhuoji_env.engine.records import load, replay  # noqa: E402
from zhuoji_env.observation import OBS_SIZE, SLICES, block  # noqa: E402

RECORDS = Path(__file__).parent / "data" / "records"


class FirstLegal(Agent):
    """Takes the legal action of lowest index (deterministic)."""

    name = "first"

    def _act(self, obs, mask):
        return mask.argmax(-1)


class LastLegal(Agent):
    name = "last"

    def _act(self, obs, mask):
        return A.NUM_ACTIONS - 1 - mask[:, ::-1].argmax(-1)


class HandPolicy(Agent):
    """A policy that reads only the hand block: weight 1 + (copies held of the kind) on each
    legal discard, 1 on other legal actions; it takes the most likely action; value 0.5."""

    name = "hand"

    def policy(self, obs, mask):
        w = np.ones(mask.shape)
        w[:, : A.ANGANG] += block(obs, "hand")
        w = w * mask
        return w / w.sum(-1, keepdims=True), np.full(len(obs), 0.5)

    def _act(self, obs, mask):
        return self.policy(obs, mask)[0].argmax(-1)


@pytest.fixture(scope="module")
def play():
    return play_traced(["random", "greedy", "rule"], 1, seed=1)  # 36 seatings (permute)


def test_ledger_table_of_the_sample_records():
    recs = [load(p) for p in sorted(RECORDS.glob("guiyang-*.json"))]
    df = ledger_table(recs)
    assert list(df.columns) == ["game", "payer", "payee", "item", "label", "amount"]
    for g, rec in enumerate(recs):
        got = Counter()
        for row in df[df.game == g].itertuples():
            got[(row.payer, row.payee, row.item)] += row.amount
        want = Counter()
        for p, q, amt, item in rec["result"]["ledger"]:
            want[(p, q, item)] += amt
        assert got == want
    assert set(df.label[df.item == "chajiao"]) == {"cha jiao: unready pays ready at a draw (7.5)"}
    with pytest.raises(ValueError, match="record 0 has no result"):
        ledger_table([{"actions": []}])


def test_traced_play_is_the_arena_s_play(play):
    """With the arena's default seating (permute: 3 compositions x 12 arrangements of 3 agents
    at 4 seats), and with rotate where it is asked for (3 compositions x 4 rotations)."""
    agents = ["random", "greedy", "rule"]
    rotated = play_traced(agents, 2, seed=1, seating="rotate")
    for traced, deals, seating, games in ((play, 1, None, 36), (rotated, 2, "rotate", 12)):
        arena = run_arena(
            agents,
            deals,
            seed=1,
            progress=False,
            keep_games=True,
            **({"seating": seating} if seating else {}),
        )
        scores = np.asarray(arena.games["scores"])  # [games, seats]
        h = traced.hands.sort_values(["game", "seat"])
        assert (h.score.to_numpy().reshape(scores.shape) == scores).all()
        assert len(traced.records) == deals * games == len(h) // 4
        assert (h.groupby("game").score.sum() == 0).all()
        assert (h.groupby("deal").rotation.nunique() == games).all()


def test_records_replay_and_carry_aligned_fields(play):
    for rec in play.records:
        assert replay(rec) == rec["result"]
        assert len(rec["probs"]) == len(rec["values"]) == len(rec["actions"])
        assert rec["probs"] == [None] * len(rec["actions"])  # no agent here has a policy
        assert sorted(set(rec["agents"])) == ["greedy", "random", "rule"]


def test_decision_rows(play):
    d = play.decisions
    assert len(d) == len(play.obs) == len(play.masks)
    assert (d.n_legal > 1).all()
    assert (d.n_legal.to_numpy() == play.masks.sum(-1)).all()
    assert (play.masks[np.arange(len(d)), d.action.to_numpy()]).all()
    assert set(d.phase) <= {"turn", "response", "rob", "baoting_discard"}
    assert d.prob.isna().all() and d.value.isna().all() and d.top.isna().all()
    for row in d.sample(20, random_state=0).itertuples():
        rec = play.records[row.game]
        seat, *act = rec["actions"][row.step]
        assert seat == row.seat and " ".join(map(str, act)) == row.action_name
        assert rec["result"]["deltas"][row.seat] == row.final_score
        assert rec["agents"][row.seat] == row.agent
        assert (row.seat in rec["result"]["winners"]) == row.won
    # every decision of every hand is in the trace with forced=True
    full = play_traced(["random", "greedy", "rule"], 1, seed=1, forced=True)
    assert len(full.decisions) == sum(len(r["actions"]) for r in full.records)
    pd.testing.assert_frame_equal(
        full.decisions[full.decisions.n_legal > 1].reset_index(drop=True), d
    )


def test_item_sources_add_up_to_mean_scores(play):
    src = item_sources(play)
    beh = behaviour(play)
    assert list(src.index) == list(beh.index) == ["random", "greedy", "rule"]
    assert np.allclose(src["total"], beh["mean_score"])
    assert list(beh.hands) == [48, 48, 48]  # each agent doubled in a third of the games
    h = play.hands
    assert beh.loc["rule", "win_rate"] == h[h.agent == "rule"].wins.mean()


def test_win_values_count_each_win_by_its_hu_receipts_in_the_records():
    play = play_traced(["random", "greedy", "rule"], 2, seed=3)  # 72 games (permute)
    table = win_values(play)
    assert list(table.index) == ["random", "greedy", "rule"]
    led = ledger_table(play.records)
    hu = led[led["item"] == "hu"].groupby(["game", "payee"])["amount"].sum()
    payers = led[led["item"] == "hu"].groupby(["game", "payee"])["payer"].nunique()
    agent_of = {(r.game, r.seat): r.agent for r in play.hands.itertuples()}
    expected = Counter()
    for (g, seat), amount in hu.items():
        own = play.records[g]["agents"][seat]
        assert own == agent_of[(g, seat)]
        # every other seat pays a self-draw; one pays a discard or a rob (four seats here)
        way = "self-draw" if payers[(g, seat)] == len(play.records[g]["agents"]) - 1 else "discard"
        expected[(own, way, amount)] += 1
    hands = play.hands.groupby("agent").size()
    got = {
        (agent, way, value): round(share * hands[agent] / 100)
        for agent, row in table.iterrows()
        for (way, value), share in row.items()
        if share
    }
    assert got == dict(expected) and {way for _, way, _ in expected} == {"discard", "self-draw"}


def test_agreement_by_decision_type():
    play = play_traced([FirstLegal(), "random"], 2, seed=4, labels=["first", "random"])
    same = agreement(play, "first", FirstLegal())
    assert (same.agreement == 1.0).all()
    n_first = int((play.decisions.agent == "first").sum())
    assert same.loc["all", "decisions"] == n_first
    assert same.decisions.drop("all").sum() == n_first
    assert (agreement(play, "first", LastLegal()).agreement == 0.0).all()
    with pytest.raises(ValueError, match=re.escape("no agent 'ppo' in this play: its labels are")):
        agreement(play, "ppo", "rule")


def test_policy_fields_ablation_and_calibration():
    play = play_traced([HandPolicy(), "greedy"], 2, seed=2, labels=["hand", "greedy"])
    d = play.decisions
    mine = d[d.agent == "hand"]
    assert (mine.value == 0.5).all() and d[d.agent == "greedy"].value.isna().all()
    # a discard weighs 1 + the copies held, any other action 1
    row = mine.iloc[0]
    legal = row.legal.split(", ")
    hand = block(play.obs[mine.index[0]], "hand")
    weights = [1 + hand[A.encode(*x.split())] if x.startswith("discard") else 1 for x in legal]
    assert row.prob == pytest.approx(max(weights) / sum(weights))
    assert row.top.startswith(f"{row.action_name} {max(weights) / sum(weights):.2f}")
    probs = play.records[int(row.game)]["probs"][int(row.step)]
    assert list(probs) == legal and sum(probs.values()) == pytest.approx(1, abs=1e-3)
    assert probs[row.action_name] == pytest.approx(row.prob, abs=1e-4)
    abl = block_ablation(play, "hand")
    assert list(abl.block[:1]) == ["hand"] and abl.tv_distance[0] > 0
    assert (abl.tv_distance[1:] == 0).all() and len(abl) == len(SLICES)
    with pytest.raises(ValueError, match="unknown input block 'hands' of 'hand'"):
        block_ablation(play, "hand", ["hands"])
    with pytest.raises(ValueError, match="agent 'greedy' has no policy"):
        block_ablation(play, "greedy")
    cal = calibration(mine, scale=0.1)
    assert len(cal) == 1 and cal.estimate[0] == pytest.approx(5.0)
    assert cal.score[0] == pytest.approx(mine.final_score.mean())
    with pytest.raises(ValueError, match="no decisions with a value estimate"):
        calibration(d[d.agent == "greedy"])


def test_charts(play):
    arena = run_arena(["random", "rule"], 4, seed=0, seating="rotate", progress=False)
    ax = plot_scores(arena.summary())
    assert len(ax.patches) == 2
    ax = plot_item_sources(item_sources(play))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["random", "greedy", "rule"]
    cal = pd.DataFrame({"estimate": [-1.0, 2.0], "score": [-2.0, 3.0]})
    assert len(plot_calibration(cal).lines) == 2
    fig = plot_obs_blocks(play.obs[0], ["hand", "river", "shanten"], cols=2)
    assert [a.get_title() for a in fig.axes[:3]] == ["hand (27,)", "river (4, 27)", "shanten (8,)"]
    with pytest.raises(ValueError, match="expected one observation"):
        plot_obs_blocks(play.obs[:2])


def test_discard_choice_and_claims():
    play = play_traced(["greedy", FirstLegal()], 3, seed=3, labels=["greedy", "first"])
    greedy = discard_choice(play, "greedy")
    assert (greedy.least_shanten == 1.0).all()  # greedy discards to the least shanten
    assert greedy.least_shanten.dtype == np.float64  # a share, which .round() rounds
    d = play.decisions
    mine = d[(d.agent == "greedy") & (d.kind == "discard")]
    assert greedy.discards.sum() == len(mine)
    assert list(greedy.index) == sorted(set(mine.shanten))
    first = claims(play, "first")
    fd = d[d.agent == "first"]
    assert list(first.offered) == [fd.can_hu.sum(), fd.can_pong.sum(), fd.can_kong.sum()]
    assert first.loc["pong", "taken_rate"] == 1.0  # pong (81) is its lowest-index claim
    taken = fd[fd.kind == "pong"]
    assert first.loc["pong", "score_when_taken"] == pytest.approx(taken.final_score.mean())
    # its interval is clustered by deal: the decisions of one deal share its tiles
    want = clustered_mean_ci(taken.final_score, taken.deal)
    got = first.loc["pong", ["score_when_taken", "taken_low", "taken_high"]]
    assert got.tolist() == pytest.approx(list(want))
    assert np.isnan(first.loc["pong", ["score_when_declined", "declined_low"]].astype(float)).all()
    with pytest.raises(ValueError, match="no agent 'rule' in this play"):
        discard_choice(play, "rule")


def test_behaviour_and_calibration_intervals_are_clustered_by_deal(play):
    """The mean score of each agent and of each calibration bin carries its 95% interval over
    deals (the seatings of a deal share its tiles): wider than one that took every seat-hand
    for an independent sample; one deal gives no interval."""
    beh = behaviour(play)  # one deal
    assert beh[["score_low", "score_high"]].isna().all().all()
    three = play_traced(["random", "greedy", "rule"], 3, seed=1)
    beh = behaviour(three)
    h = three.hands[three.hands.agent == "rule"]
    assert beh.loc["rule", ["mean_score", "score_low", "score_high"]].tolist() == pytest.approx(
        list(clustered_mean_ci(h.score, h.deal))
    )
    naive = clustered_mean_ci(h.score, np.arange(len(h)))  # every seat-hand its own cluster
    assert beh.loc["rule", "score_high"] - beh.loc["rule", "score_low"] > naive[2] - naive[1]
    assert (beh.score_low < beh.mean_score).all() and (beh.mean_score < beh.score_high).all()
    hand = play_traced([HandPolicy(), "greedy"], 3, seed=2, labels=["hand", "greedy"])
    mine = hand.decisions[hand.decisions.agent == "hand"]
    cal = calibration(mine, scale=0.1)
    assert list(cal.columns) == ["estimate", "score", "score_low", "score_high", "decisions"]
    want = clustered_mean_ci(mine.final_score, mine.deal)
    assert cal.loc[0, ["score", "score_low", "score_high"]].tolist() == pytest.approx(list(want))
    assert len(plot_calibration(cal).collections) >= 1  # the intervals are drawn


def test_a_policy_without_values_keeps_its_probabilities():
    """A policy whose value head was never trained (values NaN, as ppo-scratch's): its
    probabilities and top choices are traced and shown by the viewer, its values are not, and
    calibration says there is nothing to calibrate."""
    from zhuoji_env.view import page

    class NoValue(HandPolicy):
        def policy(self, obs, mask):
            return super().policy(obs, mask)[0], np.full(len(obs), np.nan)

    play = play_traced([NoValue(), "greedy"], 1, seed=2, labels=["hand", "greedy"])
    mine = play.decisions[play.decisions.agent == "hand"]
    assert mine.value.isna().all() and mine.prob.notna().all() and mine.top.notna().all()
    rec = next(r for r in play.records if any(p is not None for p in r["probs"]))
    assert all(v is None for v in rec["values"])
    assert page(rec).startswith("<!DOCTYPE html>")
    with pytest.raises(ValueError, match="no decisions with a value estimate"):
        calibration(mine)


def test_bad_input():
    with pytest.raises(ValueError, match="deals must be an integer >= 1"):
        play_traced(["random"], 0)
    with pytest.raises(ValueError, match="2 labels for 1 agents"):
        play_traced(["random"], 1, labels=["a", "b"])


def test_play_traced_takes_numpy_integers_and_checks_agents_and_labels():
    plain = play_traced(["random", "greedy"], 1, seed=2)
    numpy = play_traced(["random", "greedy"], np.int64(1), seed=np.int64(2))
    pd.testing.assert_frame_equal(plain.hands, numpy.hands)
    for agents, labels, error, message in [
        ([5, "random"], None, TypeError, "agents[0] is 5 (int), which has no act() or reseed()"),
        ([None, "random"], None, TypeError, "agents[0] is None (NoneType)"),
        ("random", None, TypeError, "got the string 'random'"),
        (["random", "greedy"], ["x", "x"], ValueError, "'x' given more than once"),
        (["random", "greedy"], [0, 1], TypeError, "labels[0] is 0: labels must be strings"),
        (["random", "greedy"], "ab", TypeError, "labels must be a list or tuple of strings"),
    ]:
        with pytest.raises(error, match=re.escape(message)):
            play_traced(agents, 1, labels=labels)
    with pytest.raises(ValueError, match="seed must be an integer >= 0, got -1"):
        play_traced(["random", "greedy"], 1, seed=-1)


def test_per_agent_tables_refuse_an_unknown_label_or_reference(play):
    unknown = re.escape("no agent 'nobody' in this play: its labels are ['random', 'greedy', 'r")
    for table in (claims, block_ablation, discard_choice):
        with pytest.raises(ValueError, match=unknown):
            table(play, "nobody")
    with pytest.raises(ValueError, match=unknown):
        agreement(play, "nobody", "rule")
    with pytest.raises(TypeError, match=re.escape("reference is 5 (int), which has no act()")):
        agreement(play, "random", 5)


def test_ablation_of_a_network_reading_rules_advice_zeroes_each_input_block_alone():
    """The shipped ppo-guiyang reads v2 and rule's advice: every block of its input is
    ablated, the derived blocks and the advice among them, each zeroed in the input made once
    from the intact observations (zeroing the hand leaves the advice as it was read)."""
    from agents.ppo import INPUT_SIZES, VERSION_RULE

    play = play_traced(["ppo-guiyang", "rule"], 1, seed=3, labels=["ppo", "rule"])
    agent = play.agent("ppo")
    layout = agent.read.blocks
    assert agent.net.obs_version == VERSION_RULE
    assert list(layout)[-6:] == [
        "unseen", "passport", "wait_value", "live_waits", "rule_choice", "rule_gap"
    ]  # fmt: skip
    assert sum(s.stop - s.start for s in layout.values()) == INPUT_SIZES[VERSION_RULE]
    abl = block_ablation(play, "ppo")
    assert sorted(abl.block) == sorted(layout) and (abl.tv_distance >= 0).all()
    tv = dict(zip(abl.block, abl.tv_distance, strict=True))
    assert tv["rule_choice"] > 0.01  # it follows rule's advice
    sel = play.decisions.agent.to_numpy() == "ppo"
    obs, mask = play.obs[sel], play.masks[sel]
    x = agent.read(obs, mask)
    p0 = agent.input_policy(x, mask)
    zeroed = x.copy()
    zeroed[:, layout["hand"]] = 0
    expect = 0.5 * np.abs(agent.input_policy(zeroed, mask) - p0).sum(-1).mean()
    assert tv["hand"] == pytest.approx(expect)
    with pytest.raises(ValueError, match="unknown input block 'hints' of 'ppo': allowed"):
        block_ablation(play, "ppo", ["hints"])


def test_ablation_calibration_and_charts_refuse_bad_arguments(play):
    hand = play_traced([HandPolicy(), "greedy"], 1, seed=2, labels=["hand", "greedy"])
    with pytest.raises(ValueError, match="blocks is empty: name at least one of"):
        block_ablation(hand, "hand", blocks=[])
    with pytest.raises(TypeError, match="blocks must be a list of input block names"):
        block_ablation(hand, "hand", blocks="hand")
    mine = hand.decisions[hand.decisions.agent == "hand"]
    for scale in [0, -1.0, float("nan"), float("inf"), True, "1"]:
        with pytest.raises(ValueError, match="scale must be a finite number > 0"):
            calibration(mine, scale=scale)
    for bins in [0, -3, 1.5]:
        with pytest.raises(
            ValueError, match=re.escape(f"bins must be an integer >= 1, got {bins}")
        ):
            calibration(mine, bins=bins)
    with pytest.raises(ValueError, match="decisions has no column 'value', 'final_score'"):
        calibration(pd.DataFrame())
    with pytest.raises(ValueError, match="cols must be an integer >= 1, got 0"):
        plot_obs_blocks(play.obs[0], cols=0)
    sources = item_sources(play)
    with pytest.raises(ValueError, match="sources has no 'total' column"):
        plot_item_sources(sources.drop(columns="total"))
    with pytest.raises(
        ValueError, match=re.escape("sources has columns ['foo'] that are no ledger")
    ):
        plot_item_sources(sources.assign(foo=1.0))


@pytest.mark.parametrize(
    "line, agents, message",
    [
        ([0, 1, 2, "nope"], None, "record 0, ledger line 0: unknown item 'nope': allowed ['hu',"),
        ([0, 3, 2, "hu"], ["a"], "record 0, ledger line 0: payee 3 is not a seat of the record's "
         "agents list, which names 1 seats"),
        ([-1, 1, 2, "hu"], ["a", "b", "c", "d"], "record 0, ledger line 0: payer -1 is not a seat"),
        ([0, 1.5, 2, "hu"], None, "payee 1.5 is not a seat (an integer >= 0)"),
    ],
)  # fmt: skip
def test_ledger_table_refuses_unknown_items_and_seats(line, agents, message):
    rec = {"result": {"ledger": [line]}, **({"agents": agents} if agents else {})}
    with pytest.raises(ValueError, match=re.escape(message)):
        ledger_table([rec])


def test_plot_scores_draws_no_interval_where_a_summary_has_none():
    """A one-deal summary read back from its JSON has null intervals: those agents get no
    error bar, the others theirs."""
    one = json.loads(json_text(run_arena(["random", "rule"], 1, progress=False).summary()))
    three = json.loads(json_text(run_arena(["random", "rule"], 3, progress=False).summary()))
    three["agents"]["random"]["ci95"] = [None, None]
    for summary, drawn in ((one, 0), (three, 1)):
        ax = plot_scores(summary)
        bars = [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"][0]
        segments = bars.lines[2][0].get_segments()
        assert len(ax.patches) == 2 and sum(len(s) > 0 for s in segments) == drawn


def test_a_policy_whose_legal_probabilities_do_not_sum_to_one_is_named():
    """Its trace would hold probs the viewer refuses: refused where it is read, naming it."""
    from agents.analysis import policy_outputs

    class Spread(Agent):
        def policy(self, obs, mask):
            return np.full(mask.shape, 1 / mask.shape[1]), np.zeros(len(mask))

    obs = np.zeros((2, OBS_SIZE), np.float32)
    mask = np.zeros((2, 86), bool)
    mask[:, [3, 5]] = True
    with pytest.raises(ValueError, match=r"policy\(\): the probabilities of row 0's legal"):
        policy_outputs(Spread(), obs, mask)


def test_an_sb3_agent_is_traced_and_searched_as_an_agent_without_a_policy():
    """SB3Agent kept SB3's torch module as ``policy``, which analysis and search took for the
    agents' ``policy(obs, mask) -> (probs, values)``: every trace of it failed inside SB3."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.sb3 import SB3Agent
    from agents.search import SearchAgent
    from zhuoji_env import belief
    from zhuoji_env.engine import BatchGame
    from zhuoji_env.envs.sb3 import SB3VecEnv
    from zhuoji_env.observation import encode

    model = MaskablePPO("MlpPolicy", SB3VecEnv(2, seed=0), n_steps=8, batch_size=8, seed=0)
    agent = SB3Agent(model, seed=0)
    play = play_traced([agent, "rule"], deals=1, seed=0, labels=["sb3", "rule"])
    assert {r.agent for r in play.decisions.itertuples()} == {"sb3", "rule"}
    game = BatchGame("guiyang", 8, seed=0)
    while game.mask.sum(1).min() < 2:  # every table at a decision with a choice
        game.step(game.random_actions(np.random.default_rng(0)))
    st = game.state
    obs = encode(st, np.arange(8), st.actor)
    acts = SearchAgent(agent, k=2, c=2, seed=0).act_view(obs, st.mask, belief.public_view(st))
    assert st.mask[np.arange(8), acts].all()
