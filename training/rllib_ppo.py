"""Self-play PPO on Ray RLlib: ``python -m training.rllib_ppo [--flags]`` (the ``rllib`` extra).

One shared masked policy plays every seat of ``zhuoji_env.env()`` games (optionally some seats
are played by a league of frozen snapshots of it, ``--league-size``), through RLlib's
``PettingZooEnv`` wrapper on RLlib's new API stack (``RLModule``, ``Learner``, ``EnvRunner``).
Each env runner plays its games as one engine batch with one forward pass a step
(:class:`training.rllib_batched.BatchedEnvRunner`, ``--runner batched``, the default), handing
RLlib the episodes its own runner builds a decision at a time (``--runner aec``); with it the
learner builds PPO's train batch by array (:class:`training.rllib_batched.BatchedTrainBatch`).
Both runners train with :class:`training.rllib_batched.LeanPPOLearner`, RLlib's PPO learner
with its update unchanged and three per-step costs cut. A failure of an env runner ends the run
with exit status 1 and a line naming the runner and its error.
By default the run is local: an embedded ``ray.init()`` on this machine. ``--address auto`` or
``--address HOST:PORT`` joins an existing Ray cluster (``ray start --head`` on one node,
``ray start --address HOST:PORT`` on the others); the env runners then sample on any node and
the learner trains in this process (or on ``--num-learners`` remote learners).

The policy, :class:`agents.rllib.MaskedPolicyModule`, is the PPO scripts' MLP as an RLlib
``TorchRLModule`` with the ``ValueFunctionAPI``: illegal actions get logit -1e9 before any
softmax, so it never samples one, whatever the environment does with illegal actions. RLlib's
environment checker steps unmasked random actions, so it is switched off.

Each iteration logs every seat's mean episode return (the mean over all seats is 0 in a
zero-sum game, so RLlib's ``episode_return_mean`` says nothing) and decisions per second (one
environment step is one seat's decision). The algorithm checkpoint is written to
``OUT_DIR/checkpoint`` (``--resume DIR`` continues from it); ``rllib:OUT_DIR`` plays it as an
agent, e.g. ``python -m agents.arena --agents rllib:runs/rllib,rule``. Metrics go to
``OUT_DIR/metrics.jsonl``; at the end the policy plays the arena against ``--eval-opponents``.
Every file is written whole or not at all (the checkpoint folder is written beside the old one
and swapped in: :func:`zhuoji_env.fileio.write_dir_atomic`), and no run is overwritten: an
``OUT_DIR`` holding a run is refused unless ``--resume`` continues that very run or ``--force``
deletes it first (:func:`replaced_files`). A run resumed in its own folder first drops the
rows of ``metrics.jsonl`` that its checkpoint never reached (:func:`drop_metrics_after`).
"""

from __future__ import annotations

import dataclasses
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

import zhuoji_env
from agents import make_agent
from agents.registry import RLLIB_MISSING
from training.cli import (
    FlagError,
    agent_specs,
    check_arena_deals,
    check_fields,
    check_flag_memory,
    check_out_dir,
    command_line,
    drop_rows_after,
    file_names,
    interrupted,
    json_text,
    lock_out_dir,
    parse_args,
    remove_paths,
    rules_from_flag,
    start_again,
)
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.engine.records import is_plain_int
from zhuoji_env.fileio import (
    append_text_atomic,
    recover_dir,
    unused_path,
    write_dir_atomic,
    write_text_atomic,
)
from zhuoji_env.limits import TORCH_PROCESS_BYTES, exits_2_when_out_of_memory
from zhuoji_env.observation import OBS_SIZE

try:
    from agents.rllib import CHECKPOINT, POLICY_ID, MaskedPolicyModule, RLlibAgent, checkpoint_dir
    from training.rllib_batched import (
        BatchedEnvRunner,
        BatchedTrainBatch,
        LeanPPOLearner,
        RunnerFailure,
        ZhuojiMultiAgentEnv,
    )

    RAY_MISSING = ""
except ImportError as exc:  # imported: a clear ImportError; as a script: --help, then exit 2
    if __name__ != "__main__":
        raise ImportError(f"training.rllib_ppo needs Ray RLlib, {RLLIB_MISSING}: {exc}") from exc
    RAY_MISSING = f"{RLLIB_MISSING} ({exc})"

LOCAL_IP = "127.0.0.2"
"""The address of a local Ray: Ray rewrites 127.0.0.1 to the machine's outward address and
keeps any other loopback address, so a local run's traffic stays on the loopback interface."""


@dataclass
class Args:
    """Arguments of the RLlib PPO run (every field is a command-line flag)."""

    rules: str = "guiyang"
    """preset name, or a JSON rules object {"preset": ..., "overrides": {...}}"""
    address: str = ""
    """Ray cluster to join: 'auto', HOST:PORT, or '' for a local Ray on this machine"""
    ship_code: bool = False
    """upload this checkout's zhuoji_env, agents and training packages to the cluster (Ray
    runtime_env py_modules) instead of installing zhuoji-env on every node"""
    num_env_runners: int = 1
    """remote env runner actors (0: sample in this process)"""
    envs_per_runner: int = 32
    """games each env runner plays side by side (the model is batched over them)"""
    runner: str = "batched"
    """'batched': each env runner steps its games as one engine batch with one forward pass
    per step (training.rllib_batched); 'aec': RLlib's own MultiAgentEnvRunner over one
    PettingZoo AEC env per game, a decision at a time (the same episodes, several times
    slower)"""
    runner_resource: str = ""
    """a custom Ray resource every env runner needs (places the runners on nodes that have it)"""
    num_learners: int = 0
    """remote learner actors (0: the learner runs in this process)"""
    train_batch: int = 8192
    """decisions per training iteration (per learner)"""
    minibatch: int = 1024
    epochs: int = 4
    lr: float = 3e-4
    gamma: float = 1.0
    gae_lambda: float = 0.95
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    """gradient norm clip (0: none)"""
    reward_scale: float = 0.1
    """rewards are hand scores times this"""
    hidden: int = 256
    league_size: int = 0
    """frozen snapshots of the policy kept as opponents (0: pure self-play)"""
    league_every: int = 10
    """iterations between snapshots (each replaces the oldest)"""
    league_prob: float = 0.25
    """chance that a seat of a new game is played by a frozen snapshot (drawn uniformly)"""
    seed: int = 1
    torch_threads: int = 1
    iterations: int = 100
    """training iterations of this run"""
    time_limit: float = 0.0
    """stop after this many minutes (0: no limit), then save and evaluate"""
    save_every: int = 10
    """iterations between checkpoints (one is always written at the end)"""
    eval_deals: int = 100
    """arena deals against each of --eval-opponents at the end (0: no evaluation)"""
    eval_opponents: str = "rule,random"
    out_dir: str = "runs/rllib"
    """folder of the run: a fresh run needs one without a run in it (or --force)"""
    resume: str = ""
    """a run's --out-dir (or its checkpoint folder) to continue from"""
    force: bool = False
    """delete the run that --out-dir holds (checkpoint/, metrics.jsonl, args.json,
    cluster.json) before starting; without it such a folder is refused, unless --resume
    continues that run"""


_AT_LEAST = {
    "iterations": 1,
    "envs_per_runner": 1,
    "train_batch": 1,
    "minibatch": 1,
    "epochs": 1,
    "hidden": 1,
    "league_size": 0,
    "league_every": 1,
    "torch_threads": 1,
    "num_env_runners": 0,
    "num_learners": 0,
    "save_every": 0,
    "eval_deals": 0,
}


def check_args(args: Args) -> None:
    """Raise ``ValueError`` naming the first flag whose value is not allowed (``--eval-deals``
    too many for this machine's memory included: :func:`training.cli.check_arena_deals`). A
    checkpoint folder of ``--out-dir`` or ``--resume`` left parked by a kill in the middle of
    its replacement is put back first (:func:`zhuoji_env.fileio.recover_dir`). Every field
    must be of its annotated type first (:func:`training.cli.check_fields`: ``force="no"``
    would otherwise count as true and replace a run)."""
    check_fields(args, {})
    for name, low in _AT_LEAST.items():
        value = getattr(args, name)
        if not is_plain_int(value) or value < low:
            raise ValueError(f"--{name.replace('_', '-')} {value!r}: must be an integer >= {low}")
    if args.runner not in RUNNERS:
        raise ValueError(f"--runner {args.runner!r}: must be one of {', '.join(RUNNERS)}")
    if args.minibatch > args.train_batch:
        raise ValueError(
            f"--minibatch {args.minibatch}: must be at most --train-batch {args.train_batch}"
        )
    for name in ("lr", "reward_scale"):
        if not getattr(args, name) > 0:
            raise ValueError(f"--{name.replace('_', '-')} {getattr(args, name)!r}: must be > 0")
    for name in ("gamma", "gae_lambda", "league_prob"):
        if not 0 <= getattr(args, name) <= 1:
            raise ValueError(
                f"--{name.replace('_', '-')} {getattr(args, name)!r}: must be in [0, 1]"
            )
    for name in ("time_limit", "clip_coef", "ent_coef", "vf_coef", "max_grad_norm"):
        if not getattr(args, name) >= 0:
            raise ValueError(f"--{name.replace('_', '-')} {getattr(args, name)!r}: must be >= 0")
    rules = rules_from_flag(args.rules)
    check_flag_memory(
        f"--num-env-runners {args.num_env_runners} x --envs-per-runner {args.envs_per_runner} "
        f"with --num-learners {args.num_learners}, --train-batch {args.train_batch} and "
        f"--hidden {args.hidden}",
        planned_memory(args),
    )
    if args.eval_deals and agent_specs(args.eval_opponents):
        for spec in agent_specs(args.eval_opponents):
            make_agent(spec, seed=0, rules=rules)
        check_arena_deals(args.eval_deals, rules)
    for folder in {args.out_dir, args.resume} - {""}:  # a swap killed between its renames
        recover_dir(Path(folder) / CHECKPOINT)
    if args.resume:
        checkpoint_dir(args.resume)
    check_out_dir(args.out_dir)
    replaced_files(args)


GAME_BYTES = 20_000
"""Bytes of a game an env runner plays (the engine's state, observation and mask; as
:data:`training.ppo_selfplay.GAME_BYTES` measures them)."""
ROW_BYTES = 4 * OBS_SIZE + NUM_ACTIONS + 64
"""Bytes of a decision in a training batch (its observation, mask and the numbers beside)."""


def planned_memory(args: Args) -> int:
    """A lower bound on the bytes a run takes on this machine: a process per env runner and
    per learner (:data:`~zhuoji_env.limits.TORCH_PROCESS_BYTES`, a process importing torch;
    Ray's take more), the games the runners play, each learner's training batch (twice: as
    sampled and as trained on) and networks (the weights, their gradients and Adam's two
    moments)."""
    runners, learners = max(1, args.num_env_runners), max(1, args.num_learners)
    h = args.hidden
    weights = (OBS_SIZE + 1) * h + (h + 1) * h + (h + 1) * (NUM_ACTIONS + 1)
    return (
        (args.num_env_runners + args.num_learners) * TORCH_PROCESS_BYTES
        + runners * args.envs_per_runner * GAME_BYTES
        + learners * (2 * args.train_batch * ROW_BYTES + 4 * 4 * weights)
    )


RUN_FILES = ("metrics.jsonl", "args.json", "cluster.json")
"""What a run writes in its ``--out-dir`` beside its checkpoint folder (``CHECKPOINT``)."""


def replaced_files(args: Args) -> list[Path]:
    """The files of an earlier run in ``--out-dir`` that ``--force`` deletes before this run
    starts: none when the folder holds no run, or when ``--resume`` continues the very run it
    holds. Any other folder holding a run raises :class:`FlagError` naming its files and the
    way out, unless ``--force``."""
    out = Path(args.out_dir)
    found = [out / name for name in (CHECKPOINT, *RUN_FILES) if (out / name).exists()]
    if not found:
        return []
    if args.resume and checkpoint_dir(args.resume).resolve() == (out / CHECKPOINT).resolve():
        return []
    if args.force:
        return found
    free = str(unused_path(out))
    way_out = (
        f"continue into a new --out-dir ({free!r} is free)"
        if args.resume
        else f"continue it with --resume {args.out_dir!r}, start in a new --out-dir ({free!r} is "
        "free)"
    )
    raise FlagError(
        f"--out-dir {args.out_dir!r} holds a run ({file_names(found)}) that this one would "
        f"overwrite: {way_out}, or pass --force to delete those files first"
    )


def drop_metrics_after(metrics: Path, iteration: int) -> None:
    """Drop the rows of a run's ``metrics.jsonl`` past ``iteration``, the checkpoint's that the
    run resumes from in its own folder (:func:`training.cli.drop_rows_after`): a run stopped
    between two checkpoints logged iterations that the resumed run logs again."""
    dropped = drop_rows_after(metrics, "iteration", iteration)
    if dropped:
        print(
            f"metrics.jsonl: dropped {dropped} row(s) past iteration {iteration}, which the "
            "checkpoint never reached (the run was stopped before saving them); the resumed "
            "run logs those iterations again",
            flush=True,
        )


def frozen_id(slot: int) -> str:
    """The module id of league slot ``slot``."""
    return f"frozen_{slot}"


def league_mapping(size: int, prob: float):
    """The policy mapping: each seat of each game is played by the learner, or with chance
    ``prob`` by one of ``size`` frozen snapshots, drawn from the episode id and the seat (so a
    seat keeps its player for the whole game)."""

    def mapping(agent_id, episode, **kwargs):
        rng = random.Random(f"{episode.id_}/{agent_id}")
        if size and rng.random() < prob:
            return frozen_id(rng.randrange(size))
        return POLICY_ID

    return mapping


def snapshot(algo, slot: int) -> None:
    """Copy the learner's weights into league slot ``slot``, on the learners and on every env
    runner. The runners get them directly: RLlib's own weight sync skips a runner that already
    holds the learner's current weights version, which it does after every iteration."""
    weights = algo.learner_group.get_weights([POLICY_ID])[POLICY_ID]
    module_id = frozen_id(slot)
    algo.learner_group.set_weights({module_id: weights})
    algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.module[module_id].set_state(weights), local_env_runner=True
    )


RUNNERS = ("batched", "aec")
"""The values of ``--runner``."""


def runner_class(name: str):
    """The env runner class of ``--runner name`` (None: RLlib's default)."""
    return BatchedEnvRunner if name == "batched" else None


def learner_connector(args: Args) -> dict:
    """``--runner batched``: PPO's learner pipeline by array (:class:`BatchedTrainBatch`) in
    place of RLlib's default pieces; ``aec``: RLlib's defaults."""
    if args.runner != "batched":
        return {}
    gamma, lambda_ = args.gamma, args.gae_lambda

    def build(obs_space, act_space):
        return BatchedTrainBatch(
            obs_space, act_space, gamma=gamma, lambda_=lambda_, modules_to_train=[POLICY_ID]
        )

    return {"learner_connector": build, "add_default_connectors_to_learner_pipeline": False}


def build_config(args: Args):
    """The ``PPOConfig`` of a run: one shared :class:`MaskedPolicyModule` for every seat, and
    ``--league-size`` frozen copies of it that are never trained."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    rules = rules_from_flag(args.rules)
    runner_resources = {args.runner_resource: 1} if args.runner_resource else {}
    frozen = [frozen_id(slot) for slot in range(args.league_size)]
    return (
        PPOConfig()
        .environment(
            ZhuojiMultiAgentEnv,
            env_config={"rules": rules.to_record(), "reward_scale": args.reward_scale},
            disable_env_checking=True,
        )
        .multi_agent(
            policies={POLICY_ID, *frozen},
            policy_mapping_fn=league_mapping(args.league_size, args.league_prob),
            policies_to_train=[POLICY_ID],
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    module_id: RLModuleSpec(
                        module_class=MaskedPolicyModule, model_config={"hidden": args.hidden}
                    )
                    for module_id in (POLICY_ID, *frozen)
                }
            )
        )
        .env_runners(
            env_runner_cls=runner_class(args.runner),
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.envs_per_runner,
            custom_resources_per_env_runner=runner_resources,
            episodes_to_numpy=False,
        )
        .fault_tolerance(restart_failed_env_runners=False)  # a failed runner ends the run
        .learners(
            num_learners=args.num_learners,
            learner_class=LeanPPOLearner,
            **learner_connector(args),
        )
        .training(
            train_batch_size_per_learner=args.train_batch,
            minibatch_size=args.minibatch,
            num_epochs=args.epochs,
            lr=args.lr,
            gamma=args.gamma,
            lambda_=args.gae_lambda,
            clip_param=args.clip_coef,
            use_kl_loss=False,  # the clipped objective alone, as ppo_selfplay's update
            entropy_coeff=args.ent_coef,
            vf_loss_coeff=args.vf_coef,
            grad_clip=args.max_grad_norm or None,
        )
        .debugging(seed=args.seed)
    )


def init_ray(args: Args) -> None:
    """Join ``--address``, or start a local Ray on a loopback address with at least one CPU per
    env runner and one for this process (so that more runners than cores share the cores
    instead of waiting)."""
    import ray

    runtime_env = {}
    if args.ship_code:
        import agents
        import training

        runtime_env["py_modules"] = [zhuoji_env, agents, training]
    if args.address:
        ray.init(address=args.address, runtime_env=runtime_env or None)
    else:
        cpus = max(os.cpu_count() or 1, args.num_env_runners + 1)
        ray.init(
            num_cpus=cpus,
            include_dashboard=False,
            runtime_env=runtime_env or None,
            _node_ip_address=LOCAL_IP,
        )


def summarize(
    result: dict, decisions: int, seconds: float, iteration: int, reward_scale: float
) -> dict:
    """The row of ``metrics.jsonl`` for one training result (seat returns in hand points)."""
    runners = result.get("env_runners", {})
    learner = result.get("learners", {}).get(POLICY_ID, {})
    seat_returns = {
        agent: float(value) / reward_scale
        for agent, value in sorted(runners.get("agent_episode_returns_mean", {}).items())
    }
    return {
        "iteration": iteration,
        "decisions": decisions,
        "seconds": seconds,
        "decisions_per_s": decisions / seconds if seconds else 0.0,
        "episodes": int(runners.get("num_episodes_lifetime", 0)),
        "seat_returns": seat_returns,
        "loss/policy": float(learner.get("policy_loss", float("nan"))),
        "loss/value": float(learner.get("vf_loss", float("nan"))),
        "loss/entropy": float(learner.get("entropy", float("nan"))),
        "module_steps_trained": int(learner.get("num_module_steps_trained_lifetime", 0)),
        "module_steps_sampled": {
            module: int(n)
            for module, n in sorted(runners.get("num_module_steps_sampled_lifetime", {}).items())
        },
    }


def evaluate(out_dir: Path, args: Args, seed: int) -> dict:
    """Arena margins of the saved policy against each of ``--eval-opponents``."""
    from agents.arena import against_each

    rules = rules_from_flag(args.rules)
    agent = RLlibAgent.load(out_dir, seed=seed)
    out = {}
    results = against_each(agent, "rllib", args.eval_opponents, args.eval_deals, seed, rules)
    for opp, res in results.items():
        margin, ci = res.margin("rllib", opp)
        out[opp] = {
            "rllib_mean": res.summary()["agents"]["rllib"]["mean"],
            "margin": margin,
            "margin_ci95": ci,
        }
    return out


def train(args: Args) -> dict:
    """Run the training; returns the metrics rows, the checkpoint and the evaluation. Every
    flag is checked first (:func:`check_args`), and ``--out-dir`` is locked for the run
    (:func:`training.cli.lock_out_dir`: a second run into it is refused while this one lasts;
    the earlier run is looked for again under the lock)."""
    check_args(args)
    with lock_out_dir(args.out_dir):
        found = replaced_files(args)
        if args.force:
            remove_paths(found)
        return _train(args)


def _train(args: Args) -> dict:
    """:func:`train` once the flags are checked and ``--out-dir`` is locked."""
    import ray

    torch.set_num_threads(args.torch_threads)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    resume = checkpoint_dir(args.resume) if args.resume else None
    started_ray = not ray.is_initialized()
    if started_ray:
        init_ray(args)
    algo = build_config(args).build_algo()
    try:
        if resume is not None:
            algo.restore_from_path(str(resume.resolve()))
            if resume.resolve() == (out_dir / CHECKPOINT).resolve():
                drop_metrics_after(out_dir / "metrics.jsonl", algo.iteration)
        else:
            for slot in range(args.league_size):  # the league starts as the initial policy
                snapshot(algo, slot)
        rows = []
        metrics = out_dir / "metrics.jsonl"  # none yet in a fresh run (replaced_files)
        t_start = time.perf_counter()
        first = algo.iteration
        decisions0 = None
        for _ in range(args.iterations):
            result = algo.train()
            lifetime = int(result["env_runners"].get("num_env_steps_sampled_lifetime", 0))
            if decisions0 is None:  # counts of a resumed run start at the checkpoint's
                decisions0 = lifetime - int(result["env_runners"].get("num_env_steps_sampled", 0))
            row = summarize(
                result,
                lifetime - decisions0,
                time.perf_counter() - t_start,
                algo.iteration,
                args.reward_scale,
            )
            rows.append(row)
            append_text_atomic(metrics, json_text(row) + "\n")
            seats = " ".join(f"{a[-1]}:{v:+.2f}" for a, v in row["seat_returns"].items())
            print(
                f"iteration {row['iteration']}: {row['decisions']:,} decisions "
                f"{row['decisions_per_s']:,.0f}/s, seat returns {seats or '-'}, "
                f"policy loss {row['loss/policy']:+.4f}",
                flush=True,
            )
            if args.league_size and algo.iteration % args.league_every == 0:
                snapshot(algo, (algo.iteration // args.league_every - 1) % args.league_size)
            out_of_time = args.time_limit and time.perf_counter() - t_start > 60 * args.time_limit
            done = algo.iteration - first >= args.iterations or out_of_time
            if done or (args.save_every and algo.iteration % args.save_every == 0):
                write_dir_atomic(
                    out_dir / CHECKPOINT, lambda tmp: algo.save_to_path(str(tmp.resolve()))
                )
            if done:
                break
        write_text_atomic(out_dir / "args.json", json_text(dataclasses.asdict(args), indent=1))
        layout = cluster_layout(algo)
        write_text_atomic(out_dir / "cluster.json", json_text(layout, indent=1))
    finally:
        algo.stop()
        if started_ray:
            ray.shutdown()
    ev = evaluate(out_dir, args, seed=args.seed + 1000) if args.eval_deals else {}
    for opp, v in ev.items():
        print(
            f"vs {opp}: {v['rllib_mean']:+.2f}/hand, margin {v['margin']:+.2f} "
            f"[{v['margin_ci95'][0]:+.2f}, {v['margin_ci95'][1]:+.2f}]"
        )
    return {"history": rows, "checkpoint": str(out_dir / CHECKPOINT), "eval": ev, "cluster": layout}


def cluster_layout(algo) -> dict:
    """Where the run lives: this process's Ray node (the learner's, with ``--num-learners 0``),
    every remote env runner's node, and the live nodes with their resources."""
    import ray

    runners = []
    if algo.env_runner_group.num_remote_env_runners():
        runners = algo.env_runner_group.foreach_env_runner(
            lambda runner: ray.get_runtime_context().get_node_id(), local_env_runner=False
        )
    nodes = {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}
    return {
        "driver_node": ray.get_runtime_context().get_node_id(),
        "runner_nodes": runners,
        "nodes": nodes,
    }


PROG = "python -m training.rllib_ppo"
"""The command in usage and error lines."""


@exits_2_when_out_of_memory("python -m training.rllib_ppo")
def main(argv: list[str] | None = None) -> int:
    args = parse_args(Args, argv, __doc__, PROG)
    if RAY_MISSING:  # after the parse, so that --help shows the flags without Ray
        print(f"{PROG}: error: {RAY_MISSING}", file=sys.stderr)
        return 2
    try:
        check_args(args)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    try:
        train(args)
    except FlagError as exc:  # another run holds --out-dir, or one was made there meanwhile
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return interrupted(PROG, lambda: saved_message(args))
    except Exception as exc:
        message = failure_message(exc)
        if message is None:
            raise
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 1
    return 0


def saved_message(args: Args) -> str:
    """What a run stopped by Ctrl-C left in ``--out-dir`` (its checkpoint, saved every
    ``--save-every`` iterations) and the command that resumes it, or starts it again."""
    out = Path(args.out_dir)
    recover_dir(out / CHECKPOINT)
    if not (out / CHECKPOINT).is_dir():
        found = [out / name for name in RUN_FILES if (out / name).exists()]
        return start_again(PROG, args, found)
    again = command_line(PROG, dataclasses.replace(args, resume=str(out), force=False))
    return (
        f"{out / CHECKPOINT} holds the last checkpoint saved (every --save-every "
        f"{args.save_every} iterations) and metrics.jsonl its rows; resume with: {again}"
    )


def failure_message(exc: BaseException) -> str | None:
    """One line for a failure of the run's Ray actors (None for any other error, which keeps
    its traceback): a :class:`~training.rllib_batched.RunnerFailure` names the env runner and
    its error; an actor that died (RLlib ends an env runner whose remote call raised, and Ray
    reports only the death) is named with Ray's first line, the runner's own traceback being
    in the log Ray copies to this process's stderr above."""
    import ray.exceptions

    if isinstance(exc, RunnerFailure):
        cause = getattr(exc, "cause", None)  # a RayTaskError carries the runner's exception
        return str(cause if isinstance(cause, RunnerFailure) else exc).strip()
    if isinstance(exc, ray.exceptions.RayActorError):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (
            f"a Ray actor of the run (an env runner, or a learner with --num-learners) died: "
            f"{first} (its traceback, if it raised, is in the actor's log above)"
        )
    return None


if __name__ == "__main__":
    raise SystemExit(main())
