"""Training scripts: smoke runs that write, reload and play checkpoints; masking; reward credit."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from scenario_helpers import CREDIT_PLAN, CREDIT_WALL

from agents import RandomAgent, make_agent
from agents.arena import run_arena
from agents.ppo import HINT_START, PolicyNet, load_checkpoint
from training import ppo_selfplay, sb3_maskable
from training.cli import FlagError, bf16_from_flag, field_docs, parse_args, plain
from training.learner import fast_bf16
from zhuoji_env.envs.vector import SelfPlayVecEnv
from zhuoji_env.observation import OBS_SIZE
from zhuoji_env.rules import Rules
from zhuoji_env.versions import stamp

ROOT = Path(__file__).resolve().parents[1]


def test_ppo_selfplay_smoke_writes_checkpoint_that_plays_in_the_arena(tmp_path):
    args = ppo_selfplay.Args(
        total_decisions=2 * 16 * 32,
        num_envs=16,
        num_steps=32,
        num_minibatches=2,
        update_epochs=1,
        eval_every=1,
        eval_deals=3,
        out_dir=str(tmp_path),
        progress=False,
        pool_size=1,
        pool_every=1,
        pool_prob=0.5,
        hidden=32,
    )
    out = ppo_selfplay.train(args)
    # evaluated before the first update (the curve's start) and after each, sampling and argmax
    assert [h["update"] for h in out["history"]] == [0, 1, 2]
    assert set(out["history"][0]["eval"]) == {"rule", "random"}
    for h in out["history"]:
        for ev in h["eval"].values():
            assert {"margin", "margin_ci95", "argmax_margin", "argmax_margin_ci95"} <= set(ev)
    assert (tmp_path / "latest.pt").exists() and (tmp_path / "update_2.pt").exists()
    _assert_logged_per_update(tmp_path / "metrics.jsonl", [1, 2])
    assert [row["update"] for row in out["updates"]] == [1, 2]
    agent = make_agent(f"ppo:{tmp_path / 'latest.pt'}", seed=0)
    res = run_arena([agent, "random"], 3, seed=5, progress=False)
    assert res.summary()["agents"]["ppo"]["hands"] == 3 * 6 * 2
    # resumed without repeating --hidden: the checkpoint's width holds, pool snapshots included
    resumed = ppo_selfplay.train(
        ppo_selfplay.Args(
            **{
                **vars(args),
                "total_decisions": 3 * 16 * 32,
                "resume": str(tmp_path / "latest.pt"),
                "eval_every": 0,
                "hidden": ppo_selfplay.Args.hidden,
            }
        )
    )
    assert resumed["decisions"] == 3 * 16 * 32
    _, ckpt = load_checkpoint(tmp_path / "latest.pt")
    assert ckpt["update"] == 3
    # provenance: one stage per run, each with the command that reruns it
    first, second = ckpt["stages"]
    assert (first["decisions"], second["decisions"]) == (2 * 16 * 32, 16 * 32)
    assert "resumed_from" not in first and second["resumed_from"]["decisions"] == 2 * 16 * 32
    assert first["rules"] == {"preset": "guiyang", "overrides": {}}
    assert "--resume" not in first["command"] and "--resume" in second["command"]
    assert first["preset"] == "guiyang" and first["seconds"] > 0
    assert first["bf16"] is fast_bf16(torch.device("cpu"))  # --bf16 auto, resolved
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", first["commit"])  # the tests run in a checkout
    words = shlex.split(first["command"])
    assert words[:3] == ["python", "-m", "training.ppo_selfplay"]
    assert parse_args(ppo_selfplay.Args, words[3:]) == args
    _assert_logged_per_update(tmp_path / "metrics.jsonl", [1, 2, 3])
    # a fresh run (no --resume) into the same folder is refused; with --force it replaces it
    fresh = ppo_selfplay.Args(**{**vars(args), "total_decisions": 16 * 32, "eval_every": 0})
    with pytest.raises(FlagError, match="holds a run .* or pass --force"):
        ppo_selfplay.train(fresh)
    ppo_selfplay.train(dataclasses.replace(fresh, force=True))
    _assert_logged_per_update(tmp_path / "metrics.jsonl", [1])
    assert not (tmp_path / "update_3.pt").exists()


@pytest.mark.parametrize("bf16", ["on", "off"])
def test_ppo_selfplay_trains_in_bfloat16_and_float32_whatever_the_cpu(tmp_path, bf16):
    """``--bf16 auto`` follows the machine; pinned, each path runs (and learns) everywhere,
    with the clone term (``--bc-coef``) in a fresh run and in a resumed one."""
    args = ppo_selfplay.Args(
        total_decisions=2 * 16 * 32, num_envs=16, num_steps=32, num_minibatches=2,
        update_epochs=2, eval_every=0, eval_opponents="", hidden=32, progress=False,
        out_dir=str(tmp_path), features=True, bf16=bf16, bc_agent="greedy", bc_decisions=512,
        bc_epochs=1, bc_coef=0.5,
    )  # fmt: skip
    out = ppo_selfplay.train(args)
    assert out["decisions"] == 2 * 16 * 32
    assert all(row["train"]["loss/clone"] > 0 for row in out["updates"])  # the clone term ran
    _assert_logged_per_update(tmp_path / "metrics.jsonl", [1, 2])
    net, ckpt = load_checkpoint(tmp_path / "latest.pt")
    assert ckpt["stages"][0]["bf16"] is (bf16 == "on")
    assert f"--bf16 {bf16}" in ckpt["stages"][0]["command"]
    for name, value in net.state_dict().items():
        assert value.dtype == torch.float32, name  # autocast never changes the stored weights
    assert all(row["train"]["loss/approx_kl"] != 0 for row in out["updates"])  # the policy moved
    resumed = ppo_selfplay.Args(
        **{**vars(args), "total_decisions": 3 * 16 * 32, "resume": str(tmp_path / "latest.pt")}
    )  # demonstrations collected again for the clone term, the network not refitted
    assert "loss/clone" in ppo_selfplay.train(resumed)["updates"][0]["train"]
    assert "bc_held_out_accuracy" not in load_checkpoint(tmp_path / "latest.pt")[1]["stages"][-1]


def _assert_logged_per_update(path, updates):
    """One metrics line per update, with finite per-update means of the losses and entropy."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [row["update"] for row in rows] == updates
    for row in rows:
        train = row["train"]
        for key in (
            "loss/policy",
            "loss/value",
            "loss/entropy",
            "loss/approx_kl",
            "loss/clipfrac",
            "loss/explained_variance",
        ):
            assert np.isfinite(train[key]), (row["update"], key)
        assert 0 < train["loss/entropy"] < np.log(86) and 0 <= train["loss/clipfrac"] <= 1
        assert train["train/trained_decisions"] > 0


def test_sb3_maskable_smoke_both_envs(tmp_path):
    for env in ("vec", "single"):
        args = sb3_maskable.Args(
            env=env,
            total_timesteps=256,
            n_envs=4,
            n_steps=64,
            batch_size=64,
            eval_deals=2,
            eval_opponents="random",
            opponent="greedy",
            out_dir=str(tmp_path / env),
        )
        out = sb3_maskable.train(args)
        agent = make_agent(f"sb3:{out['model']}", seed=0)
        res = run_arena([agent, "random"], 2, seed=1, progress=False)
        assert res.summary()["agents"]["sb3"]["hands"] > 0


def test_masked_policy_never_samples_an_illegal_action():
    torch.manual_seed(0)
    net = PolicyNet(32)
    rng = np.random.default_rng(0)
    obs = torch.from_numpy(rng.random((4096, OBS_SIZE), dtype=np.float32) * 4)
    mask = torch.from_numpy(rng.random((4096, 86)) < 0.05)
    mask[np.arange(4096), rng.integers(86, size=4096)] = True
    logits, _ = net(obs, mask)
    for _ in range(20):
        a = torch.distributions.Categorical(logits=logits).sample()
        assert mask[torch.arange(4096), a].all()
    assert torch.softmax(logits, -1)[~mask].max() == 0


def test_reward_credit_reaches_the_discarder_and_the_winner():
    """The trainer's path (vector-env transitions -> its Rollout buffers -> its advantages)
    credits the hand to the discard that dealt in and to the winning decision."""
    env = SelfPlayVecEnv(1, seed=0)
    _, _, seats = env.reset(options={"walls": [CREDIT_WALL], "dealers": [0]})
    T = len(CREDIT_PLAN)
    r = ppo_selfplay.Rollout(T, 1, first_id=env.step_id)
    r.learner[:] = True
    for t, (seat, a) in enumerate(CREDIT_PLAN):
        assert seats[0] == seat
        r.seats[t] = seats
        _, _, seats, rewards, _, infos = env.step(np.array([a]))
        r.fill(infos["transitions"])
    score = rewards[0]
    args = ppo_selfplay.Args(gamma=1.0, gae_lambda=1.0, shaping=0.0)
    adv, ret, valid = ppo_selfplay.rollout_advantages(r, args)
    assert valid.all()
    assert r.rewards[4, 0] == score[0] < 0 and r.rewards[5, 0] == score[1] > 0
    assert adv[0, 0] == pytest.approx(score[0]) and adv[1, 0] == pytest.approx(score[1])
    assert ret[4, 0] == pytest.approx(score[0]) and ret[5, 0] == pytest.approx(score[1])


def test_cli_flags_and_bad_values(capsys):
    args = parse_args(ppo_selfplay.Args, ["--num-envs", "8", "--no-anneal-lr"])
    assert args.num_envs == 8 and args.anneal_lr is False
    with pytest.raises(SystemExit) as info:
        parse_args(ppo_selfplay.Args, ["--num-envs", "many"])
    assert info.value.code == 2
    assert "argument --num-envs: invalid int value: 'many'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="needs a checkpoint"):
        make_agent("ppo")
    with pytest.raises(ValueError, match="no checkpoint file"):
        make_agent("ppo:/nonexistent.pt")


def _help(script, capsys) -> str:
    """``--help`` of a training script, whitespace collapsed."""
    with pytest.raises(SystemExit) as info:
        script.main(["--help"])
    assert info.value.code == 0
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("script", [ppo_selfplay, sb3_maskable])
def test_help_shows_each_flags_docstring_default_and_the_command(script, capsys):
    out = _help(script, capsys)
    assert out.startswith(f"usage: python -m {script.__name__} [-h] [--")
    assert (
        "--eval-opponents EVAL_OPPONENTS comma-separated agent specs to evaluate against "
        "('' for no evaluation) (default 'rule,random')"
    ) in out
    assert "--device DEVICE 'auto' (CUDA when torch sees it, else CPU), 'cpu' or 'cuda'" in out
    docs = field_docs(script.Args)
    for f in dataclasses.fields(script.Args):  # every flag has its docstring, not only a default
        flag = "--" + f.name.replace("_", "-")
        if f.type == "bool":
            shown = f"{flag}, --no-{flag[2:]} {docs[f.name]} (default --"
        else:
            shown = f"{flag} {f.name.upper()} {docs[f.name]} (default {f.default!r})"
        assert shown in out, f.name


HELPED = ["ppo_selfplay", "sb3_maskable", "demo", "curve", "ship_policy", "bench_learner"]
HELPED += ["distill_search", "rllib_two_nodes", "bench_rllib", "rllib_ppo", "best_response"]


@pytest.mark.parametrize("name", HELPED)
def test_help_shows_no_restructuredtext_markup(name, capsys):
    """The descriptions come from the module docstrings, whose ``code`` and :func:`roles` used
    to show as they are written."""
    if name in ("rllib_ppo", "rllib_two_nodes"):
        pytest.importorskip("ray.rllib", reason="Ray RLlib is not installed (make rllib)")
    script = importlib.import_module(f"training.{name}")
    with pytest.raises(SystemExit) as info:
        script.main(["--help"])
    out = capsys.readouterr().out
    assert info.value.code == 0 and len(out) > 300
    assert not re.search(r"``|:\w+:`", out), re.search(r".*(``|:\w+:`).*", out)[0]


def test_plain_drops_the_markup_and_keeps_the_words():
    doc = "``--resume CKPT`` (:class:`~training.learner.ProcessGroup`, :mod:`agents.ppo`)"
    assert plain(doc) == "--resume CKPT (ProcessGroup, agents.ppo)"


def test_help_of_a_switch_names_its_default(capsys):
    out = _help(ppo_selfplay, capsys)
    assert "critic when it has one) (default --no-oracle-critic)" in out
    assert "(its decisions or --time-limit) (default --anneal-lr)" in out
    assert "--progress, --no-progress a progress bar of the updates (default --progress)" in out


class _UnpicklableAgent(RandomAgent):
    """A random agent holding a lambda, which pickle refuses."""

    def __init__(self):
        super().__init__(seed=0)
        self.hook = lambda x: x


def test_arena_workers_with_a_torch_agent():
    """Worker processes are spawned, not forked, so a torch agent plays in them (a forked
    process hangs once torch has started threads), with the results of one process."""
    from agents.ppo import PPOAgent

    agent = PPOAgent(PolicyNet(8), seed=0)
    kw = dict(chunk_games=24, progress=False)
    two = run_arena([agent, "random"], 12, workers=2, **kw)
    one = run_arena([agent, "random"], 12, workers=1, **kw)
    assert (one.acc == two.acc).all()
    with pytest.raises(ValueError, match="cannot be pickled"):
        run_arena([agent, _UnpicklableAgent()], 12, workers=2, **kw)


class _CountingAgent(RandomAgent):
    """Random play that counts the decisions it is asked for."""

    calls = 0

    def act(self, obs, mask):
        _CountingAgent.calls += len(mask)
        return super().act(obs, mask)


def test_pool_agents_play_part_of_the_seats_and_are_not_trained_on(tmp_path):
    from agents import AGENT_FACTORIES, register_agent

    register_agent("counting", lambda arg, seed=None, **_: _CountingAgent(seed), replace=True)
    try:
        _pool_agents_run(tmp_path)
    finally:
        AGENT_FACTORIES.pop("counting")


def _pool_agents_run(tmp_path):
    _CountingAgent.calls = 0
    common = dict(
        total_decisions=3 * 16 * 32, num_envs=16, num_steps=32, num_minibatches=2,
        update_epochs=1, eval_every=0, eval_opponents="", hidden=16, progress=False,
    )  # fmt: skip
    alone = ppo_selfplay.train(ppo_selfplay.Args(**common, out_dir=str(tmp_path / "a")))
    mixed = ppo_selfplay.train(
        ppo_selfplay.Args(
            **common, out_dir=str(tmp_path / "b"), pool_agents="counting", pool_prob=0.5
        )
    )

    def trained(out):
        return sum(u["train"]["train/trained_decisions"] for u in out["updates"])

    assert _CountingAgent.calls > 0
    # the counted decisions are the ones missing from training (up to the carried-over rows)
    assert trained(mixed) < trained(alone) - _CountingAgent.calls // 2


def test_rule_seat_under_rule_hint_plays_the_advice_in_the_input():
    """fixed_actions: a ``rule`` pool seat reads its action from the network input's
    ``rule_choice`` block; it must be what ``RuleAgent.act`` plays, at every decision of real
    games (4 and 3 players), and another agent, or ``rule`` under other rules, acts itself."""
    from agents.ppo import VERSION_RULE, NetInput
    from agents.rule import RuleAgent
    from zhuoji_env.rules import Rules

    for rules in (Rules.make("guiyang"), Rules.make("guiyang", num_players=3)):
        read = NetInput(VERSION_RULE, rules)
        rule = RuleAgent(rules=read.rules)
        env = SelfPlayVecEnv(num_envs=32, rules=rules, seed=5)
        obs, masks, *_ = env.reset()
        rng = np.random.default_rng(0)
        for _ in range(300):
            x = torch.from_numpy(read(obs, masks))
            got = ppo_selfplay.fixed_actions(rule, read, x, obs, masks).numpy()
            np.testing.assert_array_equal(got, rule.act(obs, masks))
            legal = [np.flatnonzero(m) for m in masks]
            acts = np.array([a[rng.integers(a.size)] for a in legal])
            obs, masks, *_ = env.step(acts)
    other = RuleAgent(rules="classic")
    x = torch.from_numpy(read(obs, masks))
    x[:, HINT_START : HINT_START + 86] = 0  # would give action 0 if read from the input
    np.testing.assert_array_equal(
        ppo_selfplay.fixed_actions(other, read, x, obs, masks).numpy(), other.act(obs, masks)
    )


def test_demo_smoke(tmp_path, one_torch_thread, capsys, monkeypatch):
    """``make demo``'s job with tiny settings: it trains, evaluates, plots and writes the arena.
    Run a second time (``runs/demo`` holds the first run), it writes to ``runs/demo-2`` and
    says so, leaving the first run as it was (it used to stop with an error that suggested
    flags the demo does not have). It says at the start what it trains (the decisions asked for
    rounded down to whole updates) and where, labels the margins' units, and ends naming the run
    folder's files and the command that plays the fresh policy again."""
    from training import demo

    monkeypatch.chdir(tmp_path)
    first = tmp_path / "runs" / "demo"
    first.mkdir(parents=True)
    earlier = {"metrics.jsonl": b'{"update": 1}\n', "latest.pt": b"x", "demo.png": b"y"}
    for name, data in earlier.items():
        (first / name).write_bytes(data)
    argv = ["--decisions", "2500", "--num-envs", "8", "--deals", "2"]
    assert demo.main(argv) == 0
    assert {p.name: p.read_bytes() for p in first.iterdir()} == earlier
    out = tmp_path / "runs" / "demo-2"
    assert (out / "demo.png").read_bytes().startswith(b"\x89PNG")
    arena = json.loads((out / "arena.json").read_text())
    assert list(arena) == ["ppo-guiyang", "fresh ppo"]
    for label, row in arena.items():
        assert list(row) == ["rule", "greedy", "random"]
        for cell in row.values():  # 2 deals x 6 seatings, each agent in 2 seats
            assert cell["summary"]["agents"][label]["hands"] == 2 * 12
            lo, hi = cell["margin_ci95"]
            assert lo <= cell["margin"] <= hi
    printed = capsys.readouterr().out
    assert "runs/demo holds an earlier demo, left as it is; this one goes to runs/demo-2" in printed
    assert "demo: self-play PPO from scratch, run folder runs/demo-2; then ppo-guiyang" in printed
    assert (
        "training 2,048 decisions: 2 updates of 8 games x 128 steps (1,024 decisions each); the "
        "2,500 decisions asked for, rounded down to whole updates"
    ) in printed
    assert "in points per hand [95% interval]; 2 duplicate deals" in printed
    assert "minus rule" in printed
    assert "runs/demo-2: checkpoints (latest.pt, update_<k>.pt), metrics.jsonl" in printed
    assert "demo.png (learning curve and arena), arena.json" in printed
    replay = printed.rstrip().splitlines()[-1]
    assert replay.startswith("play the fresh policy again: ")
    python, command = replay.removeprefix("play the fresh policy again: ").split(" ", 1)
    assert Path(python).resolve() == Path(sys.executable).resolve()  # this interpreter, typable
    # the demo's arena seed (its --seed 1, + 7), so that the command replays the table's games
    assert command == "-m agents.arena --agents ppo:runs/demo-2/latest.pt,rule --deals 2 --seed 8"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary left


PPO_BAD_FLAGS = [
    (["--time-limit", "-1"], "--time-limit -1.0: must be a finite number >= 0"),
    (["--num-envs", "0"], "--num-envs 0: must be an integer >= 1"),
    (["--num-steps", "0"], "--num-steps 0: must be an integer >= 1"),
    (["--num-minibatches", "0"], "--num-minibatches 0: must be an integer >= 1"),
    (["--num-envs", "2", "--num-steps", "2", "--num-minibatches", "5"], "at most --num-envs"),
    (["--torch-threads", "0"], "--torch-threads 0: must be an integer 1-256"),
    (["--gamma", "1.5"], "--gamma 1.5: must be a number in \\[0, 1\\]"),
    (["--lr", "nan"], "--lr nan: must be a finite number > 0"),
    (["--seed", "-3"], "--seed -3: must be an integer 0 to 2"),
    (["--rules", "nosuch"], "--rules 'nosuch': unknown preset 'nosuch'"),
    (["--rules", '{"preset": "guiyang",'], "--rules .*not valid JSON"),
    (["--rules", '{"preset": "guiyang", "overrides": {"nosuch": 1}}'], "unknown switch"),
    (["--eval-opponents", "rule,randon"], "--eval-opponents 'rule,randon': unknown agent spec"),
    (["--eval-opponents", "rule,,greedy"], "--eval-opponents 'rule,,greedy': item 2 is empty"),
    (["--pool-agents", ",rule"], "--pool-agents ',rule': item 1 is empty"),
    (["--eval-opponents", ","], "--eval-opponents ',': no agent spec given"),
    (["--bc-agent", "greedyy"], "--bc-agent 'greedyy': unknown agent spec"),
    (["--bc-coef", "0.5"], "--bc-coef 0.5: keeps cloning .*so it needs --bc-agent"),
    (["--bc-agent", "rule", "--bc-coef", "-1"], "--bc-coef -1.0: must be a finite number >= 0"),
    (["--bc-smoothing", "0.1"], "--bc-smoothing 0.1: smooths the warm-start cloning .*--bc-agent"),
    (["--bc-sees-hint"], "--bc-sees-hint: shows rule's advice .*needs --bc-agent and --rule-hint"),
    (["--bc-agent", "rule", "--bc-sees-hint"], "--bc-sees-hint: .*needs --bc-agent and --rule"),
    (["--bc-agent", "rule", "--bc-smoothing", "0.1", "--resume", "x.pt"], "a fresh run"),
    (
        ["--bc-agent", "rule", "--rule-hint", "--bc-coef", "0.1"],
        "--bc-coef 0.1: with --rule-hint the clone term .*add --bc-sees-hint",
    ),
    (["--bc-agent", "rule", "--bc-smoothing", "1.5"], "--bc-smoothing 1.5: must be a number in"),
    (["--pool-agents", "rule,rul"], "--pool-agents 'rule,rul': unknown agent spec"),
    (["--bc-agent", "greedy", "--num-envs", "1"], "--num-envs 1: --bc-agent holds out"),
    (["--bc-decisions", "1000"], "--bc-decisions 1000: sizes the cloning of --bc-agent, so it"),
    (["--bc-epochs", "5"], "--bc-epochs 5: sizes the cloning of --bc-agent, so it needs --bc"),
    (
        ["--total-decisions", "100", "--num-envs", "8", "--num-steps", "16"],
        "--total-decisions 100: below one update of --num-envs 8 x --num-steps 16 = 128 decisions",
    ),
    (
        ["--resume", "GARBAGE"],
        "--resume .*garbage.pt.*not a PPO checkpoint, not written by torch.save",
    ),
    (["--resume", "MISSING"], "--resume .*no checkpoint file"),
    (["--total-decisions", "-1"], "--total-decisions -1: must be an integer >= 0"),
    (["--device", "gpu"], "--device 'gpu': device 'gpu': must be one of auto, cpu, cuda"),
    (["--bf16", "yes"], "--bf16 'yes': must be one of auto, on, off"),
    (["--oracle-draws", "4"], "--oracle-draws 4: shows the wall's order .*needs --oracle-critic"),
    (["--oracle-critic", "--oracle-draws", "-1"], "--oracle-draws -1: must be an integer >= 0"),
    # a traceback deep in numpy or torch, or (100,000 threads) a segfault
    (["--seed", str(2**70)], "--seed 1180591620717411303424: must be an integer 0 to 2"),
    (["--seed", str(2**32)], "--seed 4294967296: must be an integer 0 to 2\\*\\*32 - 1"),
    (["--torch-threads", "100000"], "--torch-threads 100000: must be an integer 1-256"),
]
NO_CUDA = [(["--device", "cuda"], "--device 'cuda': device 'cuda': torch sees no CUDA device")]
if not torch.cuda.is_available():
    PPO_BAD_FLAGS += NO_CUDA


@pytest.mark.parametrize(
    "argv, message", PPO_BAD_FLAGS, ids=[" ".join(a) for a, _ in PPO_BAD_FLAGS]
)
def test_ppo_selfplay_checks_every_flag_before_any_work(tmp_path, capsys, argv, message):
    (tmp_path / "garbage.pt").write_bytes(b"not a checkpoint")
    paths = {"GARBAGE": str(tmp_path / "garbage.pt"), "MISSING": str(tmp_path / "missing.pt")}
    argv = [paths.get(a, a) for a in argv]
    out = tmp_path / "run"
    assert ppo_selfplay.main([*argv, "--out-dir", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m training.ppo_selfplay: error: --")
    assert re.search(message, err), err
    assert not out.exists()  # nothing written
    with pytest.raises(FlagError, match=message):
        ppo_selfplay.train(parse_args(ppo_selfplay.Args, [*argv, "--out-dir", str(out)]))


def test_training_refuses_an_out_dir_under_a_file(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert ppo_selfplay.main(["--out-dir", str(tmp_path / "file")]) == 2
    assert "exists and is not a folder" in capsys.readouterr().err
    assert sb3_maskable.main(["--out-dir", str(tmp_path / "file" / "sub")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


SB3_BAD_FLAGS = [
    (["--env", "gym"], "--env 'gym': must be 'vec' or 'single'"),
    (["--n-envs", "0"], "--n-envs 0: must be an integer >= 1"),
    (["--batch-size", "1"], "--batch-size 1: must be an integer >= 2"),
    (["--total-timesteps", "-5"], "--total-timesteps -5: must be an integer >= 1"),
    (["--torch-threads", "0"], "--torch-threads 0: must be an integer 1-256"),
    (["--opponent", "nosuch"], "--opponent 'nosuch': unknown agent spec"),
    (["--rules", "{"], "--rules '{': not valid JSON"),
    (["--eval-opponents", "rule,x"], "--eval-opponents 'rule,x': unknown agent spec 'x'"),
    (["--device", "tpu"], "--device 'tpu': device 'tpu': must be one of auto, cpu, cuda"),
    (
        ["--batch-size", "7", "--n-envs", "2", "--n-steps", "3"],
        "--batch-size 7: must be at most the rollout of --n-envs 2 x --n-steps 3 = 6 decisions",
    ),
    (
        ["--batch-size", "4", "--n-envs", "2", "--n-steps", "3"],
        "--batch-size 4: must divide the rollout of --n-envs 2 x --n-steps 3 = 6 decisions, e.g. "
        "3 or 6 .*a single decision makes its advantages NaN",
    ),
    (
        ["--total-timesteps", "5", "--n-envs", "2", "--n-steps", "3", "--batch-size", "2"],
        "--total-timesteps 5: below one rollout \\(the rollout of --n-envs 2 x --n-steps 3 = 6",
    ),
    (["--seed", str(2**32)], "--seed 4294967296: must be an integer 0 to 2"),  # numpy's traceback
]
if not torch.cuda.is_available():
    SB3_BAD_FLAGS += NO_CUDA


@pytest.mark.parametrize(
    "argv, message", SB3_BAD_FLAGS, ids=[" ".join(a) for a, _ in SB3_BAD_FLAGS]
)
def test_sb3_maskable_checks_every_flag_before_any_work(tmp_path, capsys, argv, message):
    out = tmp_path / "run"
    assert sb3_maskable.main([*argv, "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m training.sb3_maskable: error: --")
    assert re.search(message, err), err
    assert not out.exists()


def test_demo_checks_its_flags_before_any_work(tmp_path, capsys):
    """Every error names the demo's own flags, never the trainer's that it lacks (--resume,
    --force, --num-steps, ...)."""
    from training import demo

    with pytest.raises(SystemExit):
        demo.main(["--help"])
    own = set(re.findall(r"--[a-z][a-z-]*", capsys.readouterr().out))
    out = tmp_path / "demo"
    held = tmp_path / "held"
    held.mkdir()
    (held / "metrics.jsonl").write_text('{"update": 1}\n')
    (held / "update_1.pt").write_bytes(b"x")
    for argv, message in [
        (["--bc-agent", "nosuch"], "--bc-agent 'nosuch': unknown agent spec"),
        (["--num-envs", "0"], "--num-envs must be >= 1, got 0"),
        (["--deals", "0"], "--deals must be >= 1, got 0"),
        (["--num-envs", "100000000"], "--num-envs 100000000 needs about"),
        (["--deals", str(10**12)], "--deals 1000000000000 needs about"),
        (["--bc-decisions", "1000"], "--bc-decisions 1000: sizes the cloning of --bc-agent"),
        (
            ["--long", "--decisions", "100"],
            "--decisions 100 with --long (x 50 = 5,000): below one update of --num-envs 64 games "
            "x 128 steps = 8,192 decisions (training runs whole updates): pass --decisions >= 164",
        ),
        (["--decisions", "1000", "--num-envs", "8"], "pass --decisions >= 1024"),
        (
            ["--out-dir", str(held)],
            f"--out-dir '{held}' holds an earlier run (metrics.jsonl, update_1.pt), which this "
            f"demo would overwrite: pass another --out-dir ('{tmp_path / 'held-2'}' is free)",
        ),
    ]:
        with pytest.raises(SystemExit) as info:
            demo.main(["--out-dir", str(out), *argv])
        err = capsys.readouterr().err
        assert info.value.code == 2 and message in err, err
        assert set(re.findall(r"--[a-z][a-z-]*", err)) <= own, err
        assert not out.exists()
    assert sorted(p.name for p in held.iterdir()) == ["metrics.jsonl", "update_1.pt"]


def test_demo_describes_the_shipped_policy_as_its_record_does(capsys):
    """The demo's help said 75 minutes of PPO; the record says the stages' time limits and
    decisions."""
    from training import demo

    record = json.loads((ROOT / "agents" / "policies" / "ppo-guiyang.json").read_text())
    minutes = sum(
        float(re.search(r"--time-limit (\S+)", s["command"])[1]) for s in record["stages"]
    )
    with pytest.raises(SystemExit):
        demo.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    said = (
        f"rule cloning and {minutes:.0f} minutes of PPO, {record['decisions'] / 1e6:.1f}M decisions"
    )
    assert said in out, said


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only fallback")
def test_device_auto_is_the_cpu_without_cuda_for_trainers_and_checkpoint_agents(tmp_path):
    from agents.ppo import PolicyNet, resolve_device, save_checkpoint

    assert resolve_device("auto") == torch.device("cpu") == resolve_device("cpu")
    rules, _, device = ppo_selfplay.check_args(ppo_selfplay.Args(out_dir=str(tmp_path / "r")))
    assert device == torch.device("cpu")
    assert sb3_maskable.check_args(sb3_maskable.Args(out_dir=str(tmp_path / "s")))[1].type == "cpu"
    save_checkpoint(tmp_path / "c.pt", PolicyNet(8))
    for spec in ("", ":auto", ":greedy:cpu", ":auto:greedy"):
        agent = make_agent(f"ppo:{tmp_path / 'c.pt'}{spec}", seed=0)
        assert agent.device == torch.device("cpu")
        assert agent.greedy == ("greedy" in spec)
    with pytest.raises(ValueError, match="device 'cuda': torch sees no CUDA device"):
        make_agent(f"ppo:{tmp_path / 'c.pt'}:greedy:cuda", seed=0)


def test_time_limit_alone_runs_past_the_default_decisions_and_decays_the_lr(tmp_path):
    """With --time-limit and no --total-decisions nothing but the clock stops the run, and the
    learning rate falls with the share of the time budget spent."""
    args = ppo_selfplay.Args(
        time_limit=0.02,  # 1.2 s
        num_envs=4,
        num_steps=8,
        num_minibatches=1,
        update_epochs=1,
        hidden=16,
        eval_opponents="",
        save_every=0,
        out_dir=str(tmp_path),
        progress=True,  # a bar without a total (tqdm's bool() raises on one)
    )
    assert ppo_selfplay.planned_updates(args) is None
    out = ppo_selfplay.train(args)
    rows = out["updates"]
    assert out["seconds"] >= 1.2 and len(rows) >= 3
    assert rows[-2]["seconds"] <= 1.2 < rows[-1]["seconds"]  # the first update past the limit
    lrs = [row["train"]["train/lr"] for row in rows]
    assert lrs[0] == pytest.approx(args.lr, rel=0.05)
    assert all(a > b for a, b in zip(lrs, lrs[1:], strict=False)) and 0 <= lrs[-1] < args.lr / 2
    # each update's rate is lr x (1 - elapsed share) at its start, i.e. before its row's time
    for prev, row in zip(rows, rows[1:], strict=False):
        assert row["train"]["train/lr"] <= args.lr * (1 - prev["seconds"] / 1.2) + 1e-12


def test_bench_learner_reports_decisions_per_second_by_phase(capsys, one_torch_thread):
    from training import bench_learner

    assert (
        bench_learner.main(["--updates", "2", "--num-envs", "4", "--num-steps", "8", "--json"]) == 0
    )
    out = capsys.readouterr()
    res = json.loads(out.out)  # the JSON alone: the trainer's lines went to stderr
    assert "training 64 decisions" in out.err
    assert res["decisions"] == 2 * 4 * 8 and 0 < res["trained_decisions"] <= 64
    assert set(res["phases"]) == {"env", "inference", "update", "other"}
    wall = sum(p["wall"] for p in res["phases"].values())
    assert res["wall_s"] == pytest.approx(wall)
    assert res["per_second"]["wall"] == pytest.approx(64 / wall)
    for p in res["phases"].values():
        assert p["per_second_wall"] == pytest.approx(64 / p["wall"])
    argv = ["--updates", "1", "--num-envs", "4", "--num-steps", "8", "--features", "--json"]
    assert bench_learner.main(argv) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["settings"]["features"] is True and res["decisions"] == 32
    argv = ["--updates", "1", "--num-envs", "4", "--num-steps", "8", "--rule-hint", "--json"]
    assert bench_learner.main(argv) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["settings"]["rule_hint"] is True and res["decisions"] == 32


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is not None, reason="the rllib extra is installed here"
)
def test_rllib_ppo_without_the_extra_shows_its_help_and_exits_2_naming_the_install():
    def run(*flags):
        return subprocess.run(
            [sys.executable, "-m", "training.rllib_ppo", *flags],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=120,
        )

    shown = run("--help")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: python -m training.rllib_ppo")
    assert "--num-env-runners" in shown.stdout and "--league-size" in shown.stdout
    proc = run("--iterations", "1")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("python -m training.rllib_ppo: error: the rllib extra is not")
    assert 'pip install -e ".[rllib]", or make rllib' in proc.stderr
    assert "Traceback" not in proc.stderr


def test_oracle_critic_run_saves_its_critic_resumes_it_and_plays_without_it(tmp_path, capsys):
    common = dict(
        num_envs=16, num_steps=32, num_minibatches=2, update_epochs=1, eval_every=0,
        eval_opponents="", hidden=16, progress=False, out_dir=str(tmp_path), oracle_critic=True,
    )  # fmt: skip
    out = ppo_selfplay.train(ppo_selfplay.Args(**common, total_decisions=2 * 16 * 32))
    assert np.isfinite(out["updates"][-1]["train"]["loss/value"])
    printed = capsys.readouterr().out
    assert "trained 1,024 decisions in " in printed and "resumed" not in printed
    assert (out["decisions"], out["resumed_decisions"]) == (1024, 0)
    _, ckpt = load_checkpoint(tmp_path / "latest.pt")
    assert set(ckpt["critic"]) >= {"body.0.weight", "v.weight"}
    assert ckpt["critic"]["body.0.weight"].shape[1] > OBS_SIZE  # it sees more than the policy
    resume = dict(common, total_decisions=3 * 16 * 32, resume=str(tmp_path / "latest.pt"))
    out = ppo_selfplay.train(ppo_selfplay.Args(**resume))
    assert (out["decisions"], out["resumed_decisions"]) == (1536, 1024)
    printed = capsys.readouterr().out
    assert "optimizer state not resumed" not in printed
    assert "trained 512 decisions in " in printed  # this run's, not the checkpoint's total
    assert "(1,536 with the 1,024 resumed)" in printed
    # without the critic the network's untrained value head would take over: refused
    no_critic = {**resume, "total_decisions": 4 * 16 * 32, "oracle_critic": False}
    with pytest.raises(FlagError, match="resume it with --oracle-critic"):
        ppo_selfplay.train(ppo_selfplay.Args(**no_critic))
    # a critic of another width is refused before any work
    with pytest.raises(FlagError, match="not an OracleCritic of width 16"):
        bad = torch.load(tmp_path / "latest.pt", weights_only=True)
        bad["critic"]["body.0.weight"] = bad["critic"]["body.0.weight"][:, :10]
        torch.save(bad, tmp_path / "bad.pt")
        ppo_selfplay.check_args(ppo_selfplay.Args(**{**resume, "resume": str(tmp_path / "bad.pt")}))
    # a run without a critic resumed with one: a fresh critic, the optimizer state not resumed
    plain = tmp_path / "plain"
    ppo_selfplay.train(
        ppo_selfplay.Args(**{**common, "oracle_critic": False, "out_dir": str(plain)},
                          total_decisions=16 * 32)
    )  # fmt: skip
    capsys.readouterr()  # into the folder of the critic run: --force replaces that run
    ppo_selfplay.train(
        ppo_selfplay.Args(**{**resume, "resume": str(plain / "latest.pt"), "force": True})
    )
    assert "optimizer state not resumed" in capsys.readouterr().out
    agent = make_agent(f"ppo:{tmp_path / 'latest.pt'}", seed=0)
    res = run_arena([agent, "random"], 2, seed=5, progress=False)
    assert res.summary()["agents"]["ppo"]["hands"] == 2 * 12
    # its own value head was never trained: no values for analysis, no value leaves for search
    obs, mask = np.zeros((3, OBS_SIZE), np.float32), np.ones((3, 86), bool)
    assert not agent.value_trained and np.isnan(agent.policy(obs, mask)[1]).all()
    assert make_agent(f"ppo:{plain / 'latest.pt'}").value_trained
    assert make_agent(f"search:ppo:{tmp_path / 'latest.pt'}").leaf == 0
    with pytest.raises(ValueError, match="a value head that was never trained"):
        make_agent(f"search:ppo:{tmp_path / 'latest.pt'}:leaf=2")


def test_curve_plays_every_checkpoint_of_a_run_and_its_continuation(tmp_path, capsys):
    from training import curve

    common = dict(
        num_envs=16, num_steps=32, num_minibatches=2, update_epochs=1, eval_every=0,
        eval_opponents="", hidden=16, progress=False, save_every=1,
    )  # fmt: skip
    first, second = tmp_path / "a", tmp_path / "b"
    ppo_selfplay.train(ppo_selfplay.Args(**common, total_decisions=2 * 512, out_dir=str(first)))
    ppo_selfplay.train(
        ppo_selfplay.Args(
            **common, total_decisions=3 * 512, out_dir=str(second),
            resume=str(first / "latest.pt"),
        )
    )  # fmt: skip
    out = tmp_path / "curve.png"
    argv = [str(second), str(first), "--opponent", "random", "--deals", "2", "--out", str(out)]
    assert curve.main(argv) == 0
    data = json.loads(out.with_suffix(".json").read_text())
    assert [p["decisions"] for p in data["points"]] == [512, 1024, 1536]  # in training order
    assert data["versions"] == stamp()  # the versions the curve was measured under
    assert out.stat().st_size > 0 and "argmax" in data["points"][0]
    for bad, message in [
        ([str(tmp_path)], "no update_<k>.pt checkpoints"),
        ([str(first), "--opponent", "nosuch"], "unknown agent spec"),
        ([str(first), "--out", str(tmp_path / "missing" / "c.png")], "is not a folder"),
    ]:
        with pytest.raises(SystemExit):
            curve.main(bad)
        assert message in capsys.readouterr().err


def test_features_run_trains_a_v2_network_that_derives_its_input(tmp_path):
    """--features: cloning, the oracle critic and the pool all take v2 inputs; the checkpoint
    says v2; the agent made from it computes the derived blocks itself (its moves change when
    they are zeroed), and a resume keeps v2 while --features on a v1 checkpoint is refused."""
    from agents.ppo import PPOAgent
    from zhuoji_env import observation

    common = dict(
        num_envs=16, num_steps=32, num_minibatches=2, update_epochs=1, eval_every=0,
        eval_opponents="", hidden=16, progress=False, out_dir=str(tmp_path), features=True,
        oracle_critic=True, bc_agent="rule", bc_decisions=512, bc_epochs=1, pool_size=2,
        pool_every=1, pool_agents="rule", pool_prob=0.5,
    )  # fmt: skip
    ppo_selfplay.train(ppo_selfplay.Args(**common, total_decisions=2 * 16 * 32))
    net, ckpt = load_checkpoint(tmp_path / "latest.pt")
    assert ckpt["obs_version"] == observation.VERSION_V2 == net.obs_version
    assert ckpt["obs_size"] == OBS_SIZE + observation.FEATURES_SIZE
    assert ckpt["critic"]["body.0.weight"].shape[1] == ckpt["obs_size"] + observation.HIDDEN_SIZE
    no_clone = {k: v for k, v in common.items() if not k.startswith("bc_")}  # they need bc_agent
    resume = dict(no_clone, total_decisions=3 * 16 * 32, resume=str(tmp_path / "latest.pt"))
    ppo_selfplay.train(ppo_selfplay.Args(**{**resume, "features": False}))
    assert load_checkpoint(tmp_path / "latest.pt")[0].obs_version == observation.VERSION_V2

    env = SelfPlayVecEnv(64, "guiyang", seed=2)
    obs, masks, _ = env.reset(seed=2)
    for _ in range(30):
        obs, masks, *_ = env.step(env.random_actions(np.random.default_rng(1)))
    agent = PPOAgent.load(tmp_path / "latest.pt", greedy=True)
    with torch.no_grad():
        for p in agent.net.body[0].parameters():  # let the derived blocks dominate
            p[..., OBS_SIZE:] *= 1000 if p.ndim == 2 else 1
    moves = agent.act(obs, masks)
    zeros = np.zeros((64, observation.FEATURES_SIZE), np.float32)
    with torch.no_grad():  # the same network fed v1 and zeros instead of the derived blocks
        x = torch.from_numpy(np.concatenate([obs, zeros], -1))
        plain = agent.net(x, torch.from_numpy(masks))[0].argmax(-1).numpy()
    assert (moves != plain).any()
    from agents.analysis import policy_outputs  # the notebooks' view of a v2 policy

    probs, value = policy_outputs(agent, obs, masks)
    assert probs.shape == (64, masks.shape[1]) and value.shape == (64,)
    assert np.allclose(probs.sum(1), 1) and (probs[~masks] == 0).all()
    assert (probs.argmax(1) == moves).all()
    res = run_arena([agent, "random"], 2, seed=5, progress=False)
    assert res.summary()["agents"]["ppo"]["hands"] == 2 * 12

    v1 = tmp_path / "v1"
    ppo_selfplay.train(
        ppo_selfplay.Args(
            **{**no_clone, "features": False, "out_dir": str(v1)},
            total_decisions=16 * 32,
        )
    )
    with pytest.raises(FlagError, match="keeps its observation version; drop --features"):
        ppo_selfplay.check_args(ppo_selfplay.Args(**{**resume, "resume": str(v1 / "latest.pt")}))


def test_oracle_draws_widen_the_critic_and_a_resume_must_match_them(tmp_path):
    """--oracle-draws D: the critic reads the observation, the hidden state and the order of the
    wall (draws_size(D) more inputs); a resume with another D is refused, naming it."""
    from zhuoji_env import observation

    common = dict(
        num_envs=16, num_steps=32, num_minibatches=2, update_epochs=1, eval_every=0,
        eval_opponents="", hidden=16, progress=False, out_dir=str(tmp_path), oracle_critic=True,
        oracle_draws=3,
    )  # fmt: skip
    ppo_selfplay.train(ppo_selfplay.Args(**common, total_decisions=2 * 16 * 32))
    _, ckpt = load_checkpoint(tmp_path / "latest.pt")
    wanted = ckpt["obs_size"] + observation.HIDDEN_SIZE + observation.draws_size(3)
    assert ckpt["critic"]["body.0.weight"].shape[1] == wanted
    resume = dict(common, total_decisions=3 * 16 * 32, resume=str(tmp_path / "latest.pt"))
    ppo_selfplay.train(ppo_selfplay.Args(**resume))
    assert load_checkpoint(tmp_path / "latest.pt")[1]["decisions"] == 3 * 16 * 32
    for draws in (0, 4):
        with pytest.raises(
            FlagError, match=f"OracleCritic of width 16 with --oracle-draws {draws}"
        ):
            ppo_selfplay.check_args(ppo_selfplay.Args(**{**resume, "oracle_draws": draws}))


def test_rule_hint_run_trains_a_v2_rule_network_and_resumes_only_as_one(tmp_path, capsys):
    """--rule-hint: cloning, the oracle critic and the pool take v2+rule inputs, the checkpoint
    says so and its agent plays; a resume keeps it; a v2 checkpoint with --rule-hint, or this one
    with --features alone, is refused."""
    from agents.ppo import INPUT_SIZES, VERSION_RULE, PPOAgent
    from zhuoji_env import observation

    common = dict(
        num_envs=16, num_steps=32, num_minibatches=2, update_epochs=1, eval_every=1,
        eval_opponents="rule", eval_deals=1, hidden=16, progress=False, out_dir=str(tmp_path),
        rule_hint=True, oracle_critic=True, bc_agent="rule", bc_decisions=512, bc_epochs=1,
        pool_size=2, pool_every=1, pool_agents="rule", pool_prob=0.5,
    )  # fmt: skip
    ppo_selfplay.train(ppo_selfplay.Args(**common, total_decisions=2 * 16 * 32))
    net, ckpt = load_checkpoint(tmp_path / "latest.pt")
    assert ckpt["obs_version"] == VERSION_RULE == net.obs_version
    assert ckpt["obs_size"] == INPUT_SIZES[VERSION_RULE]
    assert ckpt["critic"]["body.0.weight"].shape[1] == ckpt["obs_size"] + observation.HIDDEN_SIZE
    assert "--rule-hint" in ckpt["stages"][-1]["command"]
    no_clone = {k: v for k, v in common.items() if not k.startswith("bc_")}  # they need bc_agent
    resume = dict(no_clone, total_decisions=3 * 16 * 32, resume=str(tmp_path / "latest.pt"))
    capsys.readouterr()
    same_flags = {**resume, "rule_hint": False, "bc_agent": "rule", "bc_decisions": 512}
    ppo_selfplay.train(ppo_selfplay.Args(**same_flags))  # the first run's flags, and --resume
    assert "--bc-agent rule: not cloned again, the run is resumed" in capsys.readouterr().out
    assert load_checkpoint(tmp_path / "latest.pt")[0].obs_version == VERSION_RULE
    res = run_arena([PPOAgent.load(tmp_path / "latest.pt"), "rule"], 2, seed=5, progress=False)
    assert res.summary()["agents"]["ppo"]["hands"] == 2 * 12
    with pytest.raises(FlagError, match="keeps its observation version; drop --features"):
        ppo_selfplay.check_args(
            ppo_selfplay.Args(**{**resume, "rule_hint": False, "features": True})
        )
    clone_term = {**resume, "rule_hint": False, "bc_agent": "rule", "bc_coef": 0.1}
    with pytest.raises(FlagError, match="reads rule's advice; pass --rule-hint"):
        ppo_selfplay.check_args(ppo_selfplay.Args(**clone_term))

    v2 = tmp_path / "v2"
    ppo_selfplay.train(
        ppo_selfplay.Args(
            **{**no_clone, "rule_hint": False, "features": True, "out_dir": str(v2)},
            total_decisions=16 * 32,
        )
    )
    with pytest.raises(FlagError, match="keeps its observation version; drop --rule-hint"):
        ppo_selfplay.check_args(ppo_selfplay.Args(**{**resume, "resume": str(v2 / "latest.pt")}))


@pytest.mark.parametrize("sees", [False, True])
def test_the_clone_of_a_rule_hint_network_sees_the_advice_only_when_asked(sees, one_torch_thread):
    """By default the advice is blanked in the demonstrations and its first-layer weights are
    zero after cloning (PPO starts from the plain clone); --bc-sees-hint fits it in view."""
    from agents.ppo import HINT_START, VERSION_RULE, PolicyNet
    from zhuoji_env.rules import Rules

    args = ppo_selfplay.Args(
        rule_hint=True, bc_agent="rule", bc_decisions=512, bc_epochs=1, num_envs=16,
        bc_sees_hint=sees,
    )  # fmt: skip
    torch.manual_seed(0)
    net = PolicyNet(16, VERSION_RULE)
    demos = ppo_selfplay.demonstrations(net, args, Rules.make("guiyang"))
    hint = demos.obs[..., HINT_START:]
    n = demos.act.size
    if sees:  # rule_choice is one-hot at the demonstrated action
        assert np.array_equal(hint[..., :86].argmax(-1), demos.act) and hint.sum() > n
    else:
        assert not hint.any()
    before = net.body[0].weight[:, HINT_START:].clone()
    ppo_selfplay.clone_agent(net, args, demos)
    w = net.body[0].weight[:, HINT_START:]
    if sees:  # fitted with the advice in view: its weights moved
        assert (w != before).float().mean() > 0.5
    else:
        assert not w.any()
    assert (net.body[0].weight[:, :HINT_START] != 0).any()


def test_bf16_flag_is_on_off_or_auto_where_bfloat16_is_fast(monkeypatch):
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert bf16_from_flag("on", cpu) is True and bf16_from_flag("off", cpu) is False
    assert bf16_from_flag(True, cpu) is True and bf16_from_flag(False, cpu) is False
    with pytest.raises(FlagError, match="--bf16 'True': must be one of auto, on, off"):
        bf16_from_flag("True", cpu)
    for amx in (False, True):  # AVX512-BF16 alone does not count (unmeasured)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda v=amx: v, raising=False)
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True, raising=False)
        assert fast_bf16(cpu) is amx and bf16_from_flag("auto", cpu) is amx
    for capability, fast in [((7, 5), False), ((8, 0), True), ((9, 0), True)]:
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d, c=capability: c)
        assert fast_bf16(cuda) is fast and bf16_from_flag("auto", cuda) is fast


ARGS_OF_THE_WRONG_TYPE = [
    ({"force": "no"}, "--force 'no': must be True or False, not str"),
    ({"features": "no"}, "--features 'no': must be True or False"),
    ({"rule_hint": 1}, "--rule-hint 1: must be True or False, not int"),
    ({"anneal_lr": "no"}, "--anneal-lr 'no': must be True or False"),
    ({"rules": {"preset": "guiyang"}}, "--rules {'preset': 'guiyang'}: must be a string, not dict"),
    ({"rules": Rules.make("app")}, "--rules Rules(.*): must be a string, not Rules"),
    ({"eval_opponents": None}, "--eval-opponents None: must be a string, not NoneType"),
    ({"pool_agents": ["rule"]}, r"--pool-agents \['rule'\]: must be a string, not list"),
    ({"out_dir": None}, "--out-dir None: must be a string"),
    ({"resume": 5}, "--resume 5: must be a string, not int"),
    ({"bf16": 1}, "--bf16 1: must be a string or True or False, not int"),
    ({"out_dir": ""}, r"--out-dir '': an empty path; name a folder \('.' for this one\)"),
]


@pytest.mark.parametrize(
    "change, message", ARGS_OF_THE_WRONG_TYPE, ids=[str(c) for c, _ in ARGS_OF_THE_WRONG_TYPE]
)
def test_ppo_selfplay_args_must_have_their_fields_types(tmp_path, change, message):
    """A Python ``Args`` is checked by its fields' types: ``"no"`` is no bool, a rules object
    no ``--rules`` text, and an empty ``--out-dir`` no folder (it would be the current one)."""
    args = ppo_selfplay.Args(**{"out_dir": str(tmp_path / "run"), "eval_opponents": "", **change})
    with pytest.raises(FlagError, match=message):
        ppo_selfplay.check_args(args)


def test_force_as_a_string_deletes_no_run(tmp_path):
    """``force="no"`` is refused before anything is deleted (a truthy string was taken as
    ``--force``, and the earlier run's checkpoints and metrics went)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "update_1.pt").write_bytes(b"precious")
    (run / "metrics.jsonl").write_text("{}\n")
    args = ppo_selfplay.Args(out_dir=str(run), eval_opponents="", force="no")
    with pytest.raises(FlagError, match="--force 'no': must be True or False"):
        ppo_selfplay.prepare_out_dir(args, ppo_selfplay.check_args(args)[1])
    assert sorted(p.name for p in run.iterdir()) == ["metrics.jsonl", "update_1.pt"]


def test_args_of_their_types_pass_as_before(tmp_path):
    """The older ``bf16=True`` form (``str | bool``), numpy floats and the sb3 trainer's
    shared check: only wrong types are refused."""
    out = str(tmp_path / "run")
    for change in ({"bf16": True}, {"bf16": "off"}, {"lr": np.float64(1e-3)}, {"lr": 1}):
        ppo_selfplay.check_args(
            ppo_selfplay.Args(**{"out_dir": out, "eval_opponents": "", **change})
        )
    with pytest.raises(FlagError, match="--force 'no': must be True or False"):
        sb3_maskable.check_args(sb3_maskable.Args(out_dir=out, force="no"))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"seed": True}, "--seed True: must be an integer 0 to 2"),
        ({"seed": np.int64(1)}, re.escape(f"--seed {np.int64(1)!r}: must be an integer 0 to 2")),
        ({"lr": float("inf")}, "--lr inf: must be a finite number > 0"),
        ({"lr": True}, "--lr True: must be a finite number > 0"),
    ],
)
def test_bools_numpy_integers_and_infinities_are_refused_in_args(tmp_path, change, message):
    """Bools and numpy integers are no integers in ``Args``, which are written to JSON."""
    args = ppo_selfplay.Args(out_dir=str(tmp_path / "run"), eval_opponents="", **change)
    with pytest.raises(FlagError, match=message):
        ppo_selfplay.check_args(args)


def _curve_run(folder: Path, *decisions: int) -> Path:
    from agents.ppo import save_checkpoint

    folder.mkdir()
    for k, d in enumerate(decisions, 1):
        save_checkpoint(folder / f"update_{k}.pt", PolicyNet(8), rules="guiyang", decisions=d)
    return folder


def test_curve_takes_one_folder_or_a_list_and_refuses_repeats_and_none(tmp_path):
    from training import curve

    run = _curve_run(tmp_path / "run", 100, 200)
    assert [d for d, _, _ in curve.checkpoints(str(run))] == [100, 200]
    assert curve.checkpoints(run) == curve.checkpoints([str(run)])
    with pytest.raises(ValueError, match="no run folder given"):
        curve.checkpoints([])
    with pytest.raises(ValueError, match="is given twice .*its checkpoints are played twice"):
        curve.checkpoints([str(run), str(run) + "/"])
    with pytest.raises(ValueError, match="run folder None: must be a path"):
        curve.checkpoints([None])
    points = curve.checkpoints(run)
    for opponent in ("", "random,greedy", " , ", None):
        with pytest.raises(ValueError, match="must be one agent spec"):
            curve.measure(points, opponent, 1, 0, 1)


def test_curve_plots_to_a_str_path(tmp_path):
    from training import curve

    ci = {"margin": 1.0, "margin_ci95": [0.5, 1.5]}
    rows = [{"decisions": d, "sampling": ci, "argmax": ci} for d in (100, 200)]
    out = tmp_path / "c.png"
    curve.plot(rows, "rule", 10, str(out), "")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(importlib.util.find_spec("ray") is not None, reason="Ray is installed here")
def test_rllib_two_nodes_without_ray_is_a_usage_error():
    """Without the rllib extra it exits 2 with one line naming it, as training.rllib_ppo does
    (above), not with rllib_ppo's ImportError traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "training.rllib_two_nodes", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "python -m training.rllib_two_nodes: error:" in done.stderr
    assert "the rllib extra is not installed" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--iterations", "0"], "--iterations must be >= 1, got 0"),  # ran 2,000,000 decisions
        (["--games", "0"], "--games must be >= 1, got 0"),  # ZeroDivisionError
        (["--minibatch", "0"], "--minibatch must be >= 1, got 0"),
        (["--runs", "foo:1"], "--runs: unknown run 'foo:1': ppo:P, aec:R or batched:R"),
    ],
)
def test_bench_rllib_checks_its_flags_before_any_run(argv, said, capsys):
    from training import bench_rllib

    with pytest.raises(SystemExit) as exc:
        bench_rllib.main(argv)
    assert exc.value.code == 2 and said in capsys.readouterr().err
