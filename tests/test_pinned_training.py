"""Behaviour of the training scripts that no other test pinned: a mutation test planted 44 small
bugs in training/ (ppo_selfplay, cli, distill_search, demo, sb3_maskable, bench_learner,
distributed); 16 survived the rest of the suite (one of them equivalent: sb3_maskable's snapshot
minutes are sorted) and one more was caught only by a multi-node test hanging for minutes. Each
test below fails under one of them: a resume at a lower reward scale, the argmax half of an
evaluation, the pool's snapshot times, the rollout's largest minibatch in the memory estimate,
the demo's evaluations along the way and its refusal to reuse any earlier run's folder, the
decisions a distilled checkpoint carries, an --out-dir that cannot be written in, file names in
natural order, the second look for an earlier model once sb3_maskable holds its folder,
bench_learner's minibatch check and its trained decisions over every update, each data-parallel
process's seed, the flags each node sets for itself, the bound on --node-rank and the exit
status a spawned process reports for a flag error. The expected values come from the
docstrings and docs/training.md, as the comments say."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from test_run_safety import TINY  # a run of 32 decisions an update, saving every update

from agents.arena import run_arena
from agents.ppo import PolicyNet, PPOAgent, load_checkpoint, save_checkpoint
from training import bench_learner, demo, distill_search, distributed, ppo_selfplay, sb3_maskable
from training.cli import FlagError, file_names
from zhuoji_env.rules import Rules


# -------------------------------------------------------------------------------- ppo_selfplay
def test_a_resume_at_a_lower_reward_scale_is_refused(tmp_path, capsys):
    """Args.reward_scale: with --resume the scale is the checkpoint's, as its value head
    predicts returns at that scale; a smaller one given is refused just as a larger one is."""
    run = tmp_path / "run"
    argv = [*TINY, "--out-dir", str(run)]
    assert ppo_selfplay.main([*argv, "--reward-scale", "0.2", "--total-decisions", "32"]) == 0
    resume = [*argv, "--resume", str(run / "latest.pt"), "--total-decisions", "64"]
    capsys.readouterr()
    assert ppo_selfplay.main([*resume, "--reward-scale", "0.1"]) == 2
    err = capsys.readouterr().err
    assert "--reward-scale 0.1: --resume" in err and "pass --reward-scale 0.2" in err
    assert load_checkpoint(run / "latest.pt")[1]["update"] == 1  # nothing trained


def test_the_argmax_evaluation_is_the_policy_playing_its_most_likely_action():
    """evaluate(): ``argmax_margin`` is the margin of the policy taking the argmax, on the same
    deals as the sampled play. Against ``rule`` (deterministic) the argmax player's arena does
    not depend on the agent's own seed, so it is the arena of a greedy PPOAgent of any seed."""
    torch.manual_seed(3)
    net = PolicyNet(8).eval()
    rules = Rules.make("guiyang")
    args = ppo_selfplay.Args(eval_opponents="rule", eval_deals=2)
    ev = ppo_selfplay.evaluate(net, args, rules, seed=11)["rule"]

    def margin(greedy: bool, agent_seed: int) -> float:
        agent = PPOAgent(net, seed=agent_seed, greedy=greedy, rules=rules)
        res = run_arena(
            [agent, "rule"], 2, seed=11, rules=rules, progress=False, labels=["ppo", "rule"]
        )
        return res.margin("ppo", "rule")[0]

    assert ev["argmax_margin"] == pytest.approx(margin(True, 12345))
    assert ev["margin"] == pytest.approx(margin(False, 11))  # sampled: the arena's seed
    assert ev["argmax_margin"] != pytest.approx(ev["margin"])  # an untrained net: they differ


def test_the_demo_evaluates_along_the_way_not_only_at_the_ends(tmp_path, monkeypatch):
    """training.demo: the fresh policy is evaluated before the first update and along the way,
    so its curve has points between the start and the last update (a run of 12 updates here;
    the trainer is replaced by one that only keeps the Args it is handed)."""

    handed = []

    class Stop(Exception):
        pass

    def keep(args):
        handed.append(args)
        raise Stop  # no training

    monkeypatch.setattr(demo, "train", keep)
    argv = ["--decisions", str(12 * 128), "--num-envs", "1", "--deals", "1"]
    with pytest.raises(Stop):
        demo.main([*argv, "--out-dir", str(tmp_path / "demo")])
    (args,) = handed
    updates = ppo_selfplay.planned_updates(args)
    assert updates == 12 and args.eval_opponents
    along = [k for k in range(1, updates) if args.eval_every and k % args.eval_every == 0]
    assert along, f"--eval-every {args.eval_every}: no evaluation between update 0 and {updates}"


# ------------------------------------------------------------------------------ distill_search
def test_the_distilled_checkpoint_keeps_its_bases_decisions(tmp_path):
    """distill_search writes a checkpoint that ``ppo_selfplay --resume`` continues, and
    --total-decisions counts the checkpoint's decisions (docs/training.md: "a distilled network
    holds millions"): the distillation trains no PPO decision, so it keeps BASE's count."""
    base = tmp_path / "base.pt"
    torch.manual_seed(0)
    rules = Rules.make("guiyang").to_record()
    stage = {"command": "by hand", "commit": None, "preset": "guiyang", "decisions": 4096,
             "seconds": 0.0}  # fmt: skip
    save_checkpoint(base, PolicyNet(16), rules=rules, decisions=4096, update=8, stages=[stage])
    out = tmp_path / "d"
    argv = ["--base", str(base), "--out-dir", str(out), "--tables", "4", "--k", "2", "--c", "2",
            "--searched", "4", "--unsure", "1", "--epochs", "1", "--no-progress"]  # fmt: skip
    assert distill_search.main(argv) == 0
    _, ckpt = load_checkpoint(out / distill_search.CHECKPOINT)
    assert ckpt["decisions"] == 4096
    assert [s["decisions"] for s in ckpt["stages"]] == [4096, 0]


# -------------------------------------------------------------------------------------- cli
def test_an_out_dir_in_a_folder_it_cannot_write_in_is_refused(tmp_path, monkeypatch):
    """check_out_dir(): the nearest existing parent must be a writable folder. The tests run as
    root, who may write anywhere, so the permission is faked: readable, not writable."""
    from training import cli

    real_access = cli.os.access

    def read_only(path, mode, *args, **kwargs):
        if mode & cli.os.W_OK:
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(cli.os, "access", read_only)
    with pytest.raises(FlagError, match="cannot write in"):
        cli.check_out_dir(str(tmp_path / "new" / "run"))


# ------------------------------------------------------------------------------- sb3_maskable
def test_sb3_looks_again_for_an_earlier_model_once_it_holds_the_folder(tmp_path, monkeypatch):
    """train(): --out-dir is locked for the run and checked again under the lock, as a run may
    have ended there since check_args; a model.zip that appeared meanwhile is not overwritten
    without --force."""
    out = tmp_path / "sb3"
    real_check = sb3_maskable.check_args

    def check_then_another_run_ends(args):
        checked = real_check(args)
        out.mkdir(parents=True, exist_ok=True)
        (out / sb3_maskable.MODEL).write_bytes(b"another run's model")
        return checked

    monkeypatch.setattr(sb3_maskable, "check_args", check_then_another_run_ends)
    args = sb3_maskable.Args(
        n_envs=2, n_steps=2, batch_size=2, total_timesteps=4, eval_opponents="",
        out_dir=str(out), device="cpu",
    )  # fmt: skip
    with pytest.raises(FlagError, match="holds model.zip of an earlier run"):
        sb3_maskable.train(args)
    assert (out / sb3_maskable.MODEL).read_bytes() == b"another run's model"


# ------------------------------------------------------------------------------ bench_learner
def test_bench_learner_refuses_one_decision_short_of_the_minibatches_in_its_own_flags(capsys):
    """bench_learner checks its own sizes: 7 games x 1 step is 7 decisions a process, fewer
    than the trainer's 8 minibatches, and the refusal names the bench's flags, not the
    trainer's --num-minibatches (which the bench does not have)."""
    from training import bench_learner

    with pytest.raises(SystemExit) as exit_:
        bench_learner.main(["--num-envs", "7", "--num-steps", "1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "--num-envs 7 x --num-steps 1 / --processes 1 is 7 decisions a process" in err, err
    assert "--num-minibatches" not in err


# -------------------------------------------------------------------------------- distributed
def test_each_process_deals_from_the_seed_plus_its_rank_times_two_to_the_32():
    """docs/training.md: process k > 0 deals from seed + k * 2**32 (so its games are none of
    another seed's process 0), the first from the seed itself."""
    assert distributed.rank_seed(7, 0) == 7
    assert distributed.rank_seed(7, 1) == 7 + 2**32
    assert distributed.rank_seed(7, 3) == 7 + 3 * 2**32


def test_nodes_agree_whatever_their_node_rank_and_master_addr(tmp_path):
    """launch_record(): what every process must agree on is its flags but --node-rank and
    --master-addr (each node's own: node 0 may reach itself by another name than the others
    reach it); any other flag that differs is named."""
    args = ppo_selfplay.Args(nnodes=2, master_addr="node0.example", out_dir=str(tmp_path))
    files = ppo_selfplay.JOB.files
    first = distributed.launch_record(args, files)
    other = dataclasses.replace(args, node_rank=1, master_addr="10.0.0.5")
    assert (
        distributed.record_differences(first, distributed.launch_record(other, files), files) == ""
    )
    seeded = dataclasses.replace(other, seed=2)
    said = distributed.record_differences(first, distributed.launch_record(seeded, files), files)
    assert said == "--seed 2 (process 0: 1)"


def test_a_node_rank_past_the_last_node_is_refused_at_once(monkeypatch):
    """The nodes are numbered 0 to --nnodes - 1: --node-rank 2 of 2 is a flag error before any
    process starts (with the check off by one, the launch waited minutes for a node that never
    joins, and the multi-node test caught it only by hanging)."""
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    args = ppo_selfplay.Args(nnodes=2, node_rank=2, master_addr="127.0.0.1")
    with pytest.raises(FlagError, match=r"^--node-rank 2: must be below --nnodes 2 \(the nodes"):
        distributed.launch(args)
    assert distributed.launch(dataclasses.replace(args, node_rank=1)).size == 2


def test_the_pool_takes_a_snapshot_after_every_pool_every_th_update(tmp_path, monkeypatch):
    """--pool-every K: 'updates between snapshots into the pool': over three updates with K = 2
    the pool takes one snapshot, the network as it stands after update 2 (saved as
    update_2.pt), not one of the untrained network before the first update."""
    snapshots = []
    deepcopy = ppo_selfplay.copy.deepcopy

    def recorded(obj, *rest):
        out = deepcopy(obj, *rest)
        if isinstance(obj, PolicyNet):
            snapshots.append({k: v.clone() for k, v in obj.state_dict().items()})
        return out

    monkeypatch.setattr(ppo_selfplay.copy, "deepcopy", recorded)
    run = tmp_path / "run"
    argv = [*TINY, "--pool-size", "2", "--pool-every", "2", "--total-decisions", "96"]
    assert ppo_selfplay.main([*argv, "--out-dir", str(run)]) == 0
    assert len(snapshots) == 1
    saved = load_checkpoint(run / "update_2.pt")[0].state_dict()
    assert all(torch.equal(saved[k], v) for k, v in snapshots[0].items())


def test_network_memory_counts_a_minibatch_of_a_rollout_at_its_largest():
    """network_memory: the policy's float32 weights four times (weights, gradients, Adam's two
    moments) plus a minibatch's activations, 8 floats per hidden unit and row; a rollout holds
    at most 2 x --num-steps rows of --num-envs decisions (memory_needed), so a minibatch at most
    ceil(2 x 4 x 8 / 3) = 22 rows. Input 10, width 8: weights (10+1)x8 + (8+1)x8 + (8+1)x87 = 943
    floats (86 actions and the value)."""
    args = ppo_selfplay.Args(num_envs=4, num_steps=8, num_minibatches=3)
    assert ppo_selfplay.network_memory(args, 10, 8) == 4 * 943 * 4 + 22 * 8 * 8 * 4


# ---------------------------------------------------------------------------------- cli, demo
def test_file_names_are_listed_in_their_natural_order():
    """file_names: 'in a natural order (update_2.pt before update_10.pt)'."""
    names = ["update_10.pt", "update_9.pt", "latest.pt", "update_2.pt"]
    got = file_names([Path(n) for n in names])
    assert got == "latest.pt, update_2.pt, update_9.pt, update_10.pt"


@pytest.mark.parametrize("earlier", ["metrics.jsonl", "demo.png", "arena.json"])
def test_the_demo_leaves_any_earlier_run_file_alone(tmp_path, monkeypatch, capsys, earlier):
    """out_folder: runs/demo holding any file of an earlier demo or run, not only latest.pt,
    sends this demo to the first free runs/demo-K."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "demo").mkdir(parents=True)
    (tmp_path / "runs" / "demo" / earlier).write_text("earlier\n")
    assert demo.out_folder(None) == Path("runs/demo-2")
    assert "runs/demo holds an earlier demo, left as it is" in capsys.readouterr().out


def test_bench_learner_counts_the_decisions_trained_in_every_update(monkeypatch):
    """measure(): ``trained_decisions`` is what the run trained on over all its updates (each
    update's ``train/trained_decisions`` summed), not the last update's alone."""
    runs = []

    def kept(args):
        runs.append(ppo_selfplay.train(dataclasses.replace(args, hidden=8, num_minibatches=1)))
        return runs[-1]

    monkeypatch.setattr(bench_learner, "train", kept)
    got = bench_learner.measure(3, num_envs=4, num_steps=8, bf16="off", device="cpu", seed=0)
    each = [u["train"]["train/trained_decisions"] for u in runs[0]["updates"]]
    assert len(each) == 3 and min(each) > 0
    assert got["trained_decisions"] == sum(each) and got["decisions"] == 96


def test_a_flag_error_is_exit_2_only_in_a_process_a_launcher_started():
    """own_failure: the exit status is training.cli.run_main's (2 for a flag error) in a
    process the user or torchrun started; a process spawned by --processes ends with 1
    whatever it raised."""
    spawned = distributed.Place(rank=1, size=2, local=1, per_node=2)
    first = dataclasses.replace(spawned, rank=0, local=0)
    by_torchrun = dataclasses.replace(spawned, torchrun=True)
    error = FlagError("--lr 2: too large")
    assert distributed.own_failure(first, error).endswith("(exit code 2)")
    assert distributed.own_failure(by_torchrun, error).endswith("(exit code 2)")
    assert distributed.own_failure(spawned, error).endswith("(exit code 1)")
    assert distributed.own_failure(first, ValueError("bad")).endswith("(exit code 1)")
