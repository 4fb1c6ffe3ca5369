"""Learned best responses (``training.best_response``): the 1-vs-3 seating and its margin, a
target exploitable by construction beaten within a short run, its weights left alone, its seats
played in one call a step, resume and the rules against overwriting a run, and the flags."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from agents import AGENT_FACTORIES, make_agent, register_agent
from agents.arena import ArenaResult, clustered_mean_ci, run_arena, seatings
from agents.base import Agent
from agents.exploitable import DiscardDrawnAgent
from agents.ppo import load_checkpoint
from training import best_response as br
from training import ppo_selfplay
from training.cli import FlagError, parse_args
from training.learner import collect_demonstrations
from zhuoji_env.envs.vector import SelfPlayVecEnv
from zhuoji_env.rules import Rules

TINY = dict(
    num_envs=16, num_steps=16, num_minibatches=2, update_epochs=1, hidden=16, eval_deals=2,
    final_deals=2, progress=False,
)  # fmt: skip


# --------------------------------------------------------------------------- seating, margin
def test_alone_seats_the_first_agent_in_each_seat_in_turn_and_the_second_elsewhere():
    assert seatings(2, 4, "alone").tolist() == [
        [0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0],
    ]  # fmt: skip
    assert seatings(2, 3, "alone").tolist() == [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    with pytest.raises(ValueError, match="exactly 2 agents, got 3"):
        seatings(3, 4, "alone")
    # every deal: the first agent given once in each seat, the second in the other three, and
    # whatever the labels' order (the arena plays agents in label order)
    for pair in (["greedy", "random"], ["random", "greedy"]):
        res = run_arena(pair, 3, seed=2, progress=False, keep_games=True, seating="alone")
        g = res.games
        for d in range(3):
            rows = np.flatnonzero(g["deal"] == d)
            seats = g["seat_agent"][rows]  # agent index (as given) at each seat, per game
            assert sorted((seats == 0).argmax(1).tolist()) == [0, 1, 2, 3]
            assert ((seats == 0).sum(1) == 1).all() and ((seats == 1).sum(1) == 3).all()
        hands = res.summary()["agents"]
        assert hands[pair[0]]["hands"] == 3 * 4 and hands[pair[1]]["hands"] == 3 * 12


def test_the_one_vs_three_margin_and_its_interval_by_hand():
    """Three deals, four seatings each: the exploiter's scores per hand and the target's per
    seat-hand give per-deal margins 16/3, 8/3 and 0; their mean 8/3, standard deviation 8/3,
    standard error 8/3/sqrt(3) = 1.5396, t(0.975, 2) = 4.3027: 8/3 +- 6.6244."""
    acc = np.zeros((3, 2, 11), dtype=np.int64)
    acc[:, 0, 0], acc[:, 1, 0] = 4, 12  # hands: the exploiter 4 a deal, the target 12
    acc[:, 0, 1] = [16, 8, 0]  # the exploiter's score sums: 4, 2, 0 a hand
    acc[:, 1, 1] = [-16, -8, 0]  # the target's: -4/3, -2/3, 0 a seat-hand
    res = ArenaResult(
        ["x", "t"], ["x", "t"], Rules.make("guiyang"), 0, seatings(2, 4, "alone"), acc
    )
    margin, (lo, hi) = res.margin("x", "t")
    assert margin == pytest.approx(8 / 3)
    assert (lo, hi) == pytest.approx((8 / 3 - 6.62437, 8 / 3 + 6.62437), abs=1e-4)
    # the exploiter's own mean: 2 a hand, zero-sum hands make the margin 4/3 of it
    assert res.summary()["agents"]["x"]["mean"] == pytest.approx(2.0)


def test_measure_is_the_interval_of_per_game_margins_clustered_by_deal():
    rules = Rules.make("guiyang")
    m = br.measure("greedy", "random", rules, 5, seed=4)
    res = run_arena(["greedy", "random"], 5, seed=4, progress=False, keep_games=True,
                    seating="alone", labels=[br.LABEL, "random"])  # fmt: skip
    g = res.games
    alone = g["seat_agent"] == 0
    per_game = g["scores"][alone] - np.where(alone, 0, g["scores"]).sum(1) / 3
    mean, lo, hi = clustered_mean_ci(per_game, g["deal"])
    assert m["margin"] == pytest.approx(mean)
    assert m["margin_ci95"] == pytest.approx([lo, hi])
    assert m["mean"] == pytest.approx(g["scores"][alone].mean())


# --------------------------------------------------------------------------- the loop
def test_lone_seats_put_exactly_one_learner_in_each_game_in_every_seat():
    rng = np.random.default_rng(0)
    drawn = ppo_selfplay.lone_seats(rng, 4000, 4, 1)
    assert ((drawn == -1).sum(1) == 1).all() and set(np.unique(drawn)) == {-1, 0}
    share = np.bincount((drawn == -1).argmax(1), minlength=4) / 4000
    assert np.allclose(share, 0.25, atol=0.03)  # the learner's seat varies over the games
    assert set(np.unique(ppo_selfplay.lone_seats(rng, 500, 3, 2))) == {-1, 0, 1}


class _ViewOnly(Agent):
    """Acts only through ``act_view`` (as ``search:`` does): its first legal action."""

    needs_view = True
    name = "view-only"

    def _act(self, obs, mask):
        raise ValueError("needs the public view")

    def act_view(self, obs, mask, view):
        assert len(view.seat) == len(mask)
        return mask.argmax(-1)


def test_agents_that_need_the_public_view_get_it_in_training_and_cloning():
    env = SelfPlayVecEnv(8, seed=3)
    obs, masks, _ = env.reset()
    read = ppo_selfplay.NetInput("zhuoji-obs-v1")
    rows = np.arange(8)
    got = ppo_selfplay.fixed_actions(_ViewOnly(), read, None, obs, masks, env.game.state, rows)
    np.testing.assert_array_equal(got.numpy(), masks.argmax(-1))
    demos = collect_demonstrations(_ViewOnly(), env, steps=4, seed=3)
    assert demos.act.shape == (4, 8)


class _Counting(DiscardDrawnAgent):
    """Counts its calls and rows until the arena first reseeds it (the training's calls)."""

    calls: list[int] = []
    training = True

    def reseed(self, seed):
        _Counting.training = False
        super().reseed(seed)

    def act(self, obs, mask):
        if _Counting.training:
            _Counting.calls.append(len(mask))
        return super().act(obs, mask)


def test_the_target_plays_all_its_seats_in_one_call_a_step_and_is_not_trained_on(tmp_path):
    _Counting.calls, _Counting.training = [], True
    register_agent("counting", lambda arg, seed=None, **_: _Counting(seed), replace=True)
    try:
        out = br.train(br.Args(target="counting", total_decisions=3 * 16 * 16, eval_every=0,
                               out_dir=str(tmp_path), **TINY))  # fmt: skip
    finally:
        AGENT_FACTORIES.pop("counting")
    steps = 3 * 16
    assert 0 < len(_Counting.calls) <= steps  # one call a step, for every game it acts in
    target_rows = sum(_Counting.calls)
    assert 0.6 < target_rows / out["decisions"] < 0.9  # about 3 of 4 seats
    trained = sum(u["train"]["train/trained_decisions"] for u in out["updates"])
    assert trained <= out["decisions"] - target_rows  # only the learner's decisions


def test_the_headline_plays_as_the_curves_last_point_did_better(tmp_path):
    args = br.Args(
        target="random", total_decisions=256, eval_every=0, out_dir=str(tmp_path), **TINY
    )
    out = br.train(args)
    last = out["curve"][-1]
    play = "argmax" if last["argmax_margin"] > last["margin"] else "sampling"
    assert out["play"] == play
    record = json.loads((tmp_path / "best_response.json").read_text())
    assert f"{record['final'][play]['margin']:+.2f}" in record["line"]
    assert br.chosen_play({"margin": 0.5, "argmax_margin": 0.7}) == "argmax"
    assert br.chosen_play({"margin": 0.5, "argmax_margin": 0.5}) == "sampling"


# --------------------------------------------------------------------------- resume, overwrite
def test_a_run_resumes_in_its_folder_and_never_overwrites_another(tmp_path, capsys):
    run = tmp_path / "run"
    args = br.Args(target="discard-drawn", total_decisions=2 * 16 * 16, eval_every=1,
                   out_dir=str(run), **TINY)  # fmt: skip
    first = br.train(args)
    assert [p["update"] for p in first["curve"]] == [0, 1, 2]
    _, ckpt = load_checkpoint(run / "latest.pt")
    assert ckpt["args"]["target"] == "discard-drawn"
    words = ckpt["stages"][0]["command"].split()
    assert words[:3] == ["python", "-m", "training.best_response"]
    assert parse_args(br.Args, words[3:]) == args
    # continued in its folder: its metrics go on, its curve keeps the start and adds the rest
    resumed = dataclasses.replace(args, total_decisions=3 * 16 * 16, resume=str(run / "latest.pt"))
    again = br.train(resumed)
    assert [p["update"] for p in again["curve"]] == [0, 1, 2, 3]
    minutes = [p["minutes"] for p in again["curve"]]
    assert minutes == sorted(minutes) and minutes[0] == 0  # training time over both runs
    kept = json.loads((run / "curve.json").read_text())["points"]
    assert [p["update"] for p in kept] == [0, 1, 2, 3]
    # a fresh run into it is refused, also where only the measurement is left
    with pytest.raises(FlagError, match="holds a run"):
        br.check_args(args)
    measured = tmp_path / "measured"
    measured.mkdir()
    (measured / "curve.png").write_bytes(b"earlier")
    with pytest.raises(FlagError, match=r"holds the measurement of an earlier run \(curve.png\)"):
        br.check_args(dataclasses.replace(args, out_dir=str(measured)))
    # --force deletes the earlier run and its measurement first
    forced = br.train(dataclasses.replace(args, out_dir=str(measured), force=True,
                                          total_decisions=16 * 16))  # fmt: skip
    assert [p["update"] for p in forced["curve"]] == [0, 1]
    assert (measured / "curve.png").read_bytes()[:4] == b"\x89PNG"
    # against another target: only into a new folder
    with pytest.raises(FlagError, match="was trained against 'discard-drawn'"):
        br.check_args(dataclasses.replace(resumed, target="random", total_decisions=4 * 256))
    other = dataclasses.replace(resumed, target="random", total_decisions=4 * 256,
                                out_dir=str(tmp_path / "transfer"))  # fmt: skip
    assert br.train(other)["final"]["sampling"]["deals"] == 2


# --------------------------------------------------------------------------- flags
@pytest.mark.parametrize(
    "change, message",
    [
        ({"target": ""}, "--target '': needs exactly one agent spec"),
        ({"target": "rule,random"}, "needs exactly one agent spec"),
        ({"target": "nosuch"}, "unknown agent spec 'nosuch'"),
        ({"init": "copy"}, "--init 'copy': must be one of scratch, clone, target"),
        ({"init": "target"}, "--target 'rule' is not a policy network"),
        ({"init": "target", "target": "ppo-scratch", "hidden": 64}, "--hidden 64: --init target"),
        ({"init": "target", "target": "ppo-scratch", "reward_scale": 0.2},
         "--reward-scale 0.2: --target 'ppo-scratch' was trained at 0.1"),
        ({"init": "clone", "bc_agent": "greedy"}, "--init clone clones --target 'rule'"),
        ({"eval_opponents": "random"}, "--eval-opponents 'random': a best-response run"),
        ({"pool_size": 2}, "--pool-size 2: a best response plays --target"),
        ({"pool_agents": "greedy"}, "--pool-agents 'greedy'"),
        ({"final_deals": 0}, "--final-deals 0: must be an integer >= 1"),
    ],
)  # fmt: skip
def test_every_flag_is_checked_before_any_work(tmp_path, change, message):
    args = br.Args(**{"target": "rule", "out_dir": str(tmp_path / "run"), **change})
    with pytest.raises(FlagError, match=message.replace("(", r"\(").replace(")", r"\)")):
        br.check_args(args)
    assert not (tmp_path / "run").exists()


def test_init_clone_clones_the_target_and_the_command_reruns_it(tmp_path):
    args = br.Args(target="greedy", init="clone", out_dir=str(tmp_path))
    checked = br.check_args(args)
    assert checked.args.bc_agent == "greedy" and checked.initial is None
    same = dataclasses.replace(args, bc_agent="greedy")  # the recorded command has both
    assert br.check_args(same).args == checked.args
    init = br.check_args(dataclasses.replace(args, init="target", target="ppo-scratch"))
    assert isinstance(init.initial, torch.nn.Module)
    assert init.initial is not make_agent("ppo-scratch").net


def test_main_exits_2_naming_a_bad_flag(tmp_path, capsys):
    code = br.main(["--target", "rule", "--init", "target", "--out-dir", str(tmp_path / "r")])
    assert code == 2
    assert "is not a policy network" in capsys.readouterr().err


def test_help_lists_the_trainers_flags_with_their_docstrings(capsys):
    with pytest.raises(SystemExit):
        br.main(["--help"])
    text = capsys.readouterr().out
    for words in ("--target", "--init", "--final-deals", "--num-envs", "games played in"):
        assert words in text
