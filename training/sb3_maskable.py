"""sb3-contrib MaskablePPO on Zhuoji: ``python -m training.sb3_maskable [--flags]``.

The path Stable-Baselines3 users know. ``--env single`` trains on ``n_envs`` copies of
:class:`~zhuoji_env.SingleAgentEnv` (a ``DummyVecEnv``); ``--env vec`` trains on the batched
:class:`~zhuoji_env.envs.sb3.SB3VecEnv` (no subprocesses). In both the learner holds one seat
(drawn per hand) and the other seats are played by ``--opponent`` (an agent spec: ``rule``,
``greedy``, ``random``, or a checkpoint such as ``ppo:runs/ppo/latest.pt``). The model is saved
to ``OUT_DIR/model.zip`` (whole or not at all: a temporary name, then a rename), loads as the
agent ``sb3:OUT_DIR/model.zip`` (:mod:`agents.sb3`), and is evaluated at the end in the arena
against ``--eval-opponents`` on duplicate deals. Every flag is checked before any work starts
(:func:`check_args`), an ``OUT_DIR`` that already holds a ``model.zip`` included (``--force``
replaces it), and so is the memory the sizes need; a bad one exits with status 2 and a message
naming it.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from agents import make_agent
from agents.arena import against_each
from agents.sb3 import SB3Agent
from training.cli import (
    INT_POSITIVE,
    NON_NEGATIVE,
    POSITIVE,
    SEED,
    TORCH_THREADS,
    UNIT,
    FlagError,
    agent_specs,
    check_agent_specs,
    check_arena_deals,
    check_fields,
    check_flag_memory,
    check_out_dir,
    device_from_flag,
    json_text,
    lock_out_dir,
    parse_args,
    rules_from_flag,
    run_main,
    start_again,
)
from training.ppo_selfplay import GAME_BYTES
from zhuoji_env.commands import prog
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.fileio import unused_path, write_atomic
from zhuoji_env.limits import exits_2_when_out_of_memory
from zhuoji_env.observation import OBS_SIZE
from zhuoji_env.rules import Rules


@dataclass
class Args:
    """Arguments of the MaskablePPO run (every field is a command-line flag)."""

    env: str = "vec"
    """'vec' (batched SB3VecEnv) or 'single' (DummyVecEnv of SingleAgentEnv)"""
    rules: str = "guiyang"
    """preset name, or a JSON rules object {"preset": ..., "overrides": {...}}"""
    opponent: str = "rule"
    """agent spec playing the other seats (rule, greedy, random, ppo:PATH, ...)"""
    total_timesteps: int = 50_000
    """decisions of the learner to train on, rounded down to whole rollouts of --n-envs x
    --n-steps (at least one; the most: --time-limit may stop it earlier)"""
    time_limit: float = 0.0
    """minutes of training after which learning stops at the end of a rollout (0: none)"""
    snapshot_minutes: str = ""
    """comma-separated minutes of training at which a copy of the model is saved as
    OUT_DIR/model-{M}min.zip (at the first rollout that starts past each; '' for none)"""
    net_arch: str = "64,64"
    """widths of the hidden layers of the policy and of the value network (SB3's default)"""
    norm_reward: bool = False
    """divide rewards by a running standard deviation of the returns (SB3's VecNormalize)"""
    n_envs: int = 512
    """games played in parallel (512 steps the rule opponents twice as fast per decision as 64;
    docs/results.md)"""
    n_steps: int = 16
    """steps of every game per rollout"""
    batch_size: int = 1024
    """minibatch size of the update; must divide the rollout of --n-envs x --n-steps"""
    lr: float = 3e-4
    """Adam learning rate"""
    ent_coef: float = 0.01
    """weight of the entropy bonus"""
    gamma: float = 1.0
    """discount per decision"""
    seed: int = 1
    """seed of the deals, the opponents and the model"""
    torch_threads: int = 1
    """CPU threads of torch"""
    eval_deals: int = 200
    """duplicate deals per opponent in the final evaluation"""
    eval_opponents: str = "rule,random"
    """comma-separated agent specs to evaluate against ('' for no evaluation)"""
    out_dir: str = "runs/sb3"
    """folder of model.zip and the snapshots (one that holds any of them already needs --force)"""
    force: bool = False
    """replace the model.zip and snapshots that --out-dir holds (each when saved, in one step)"""
    verbose: int = 0
    """SB3's verbosity (0: quiet, 1: training stats)"""
    device: str = "auto"
    """'auto' (CUDA when torch sees it, else CPU), 'cpu' or 'cuda'"""


MODEL = "model.zip"
"""The model's file name in ``--out-dir``."""


def check_args(args: Args) -> tuple[Rules, torch.device]:
    """Check every flag before any work, the memory of the sizes (:func:`memory_needed`) and
    of the final arenas (``--eval-deals``) included; returns the rules and the device. Raises
    :class:`~training.cli.FlagError` naming the flag, its value and what is allowed."""
    if args.env not in ("vec", "single"):
        raise FlagError(f"--env {args.env!r}: must be 'vec' or 'single'")
    check_fields(
        args,
        {
            "total_timesteps": INT_POSITIVE,
            "time_limit": NON_NEGATIVE,
            "n_envs": INT_POSITIVE,
            "n_steps": INT_POSITIVE,
            "batch_size": (lambda v: INT_POSITIVE[0](v) and v >= 2, "an integer >= 2"),
            "lr": POSITIVE,
            "ent_coef": NON_NEGATIVE,
            "gamma": UNIT,
            "seed": SEED,
            "torch_threads": TORCH_THREADS,
            "eval_deals": INT_POSITIVE,
            "verbose": (lambda v: v in (0, 1, 2), "0, 1 or 2"),
        },
    )
    layers(args.net_arch)
    rollout = args.n_envs * args.n_steps
    if rollout < 2:
        raise FlagError(
            f"--n-envs {args.n_envs} x --n-steps {args.n_steps}: a rollout needs at least 2 steps"
        )
    check_flag_memory(f"--n-envs {args.n_envs} x --n-steps {args.n_steps}", memory_needed(args))
    of_rollout = (
        f"the rollout of --n-envs {args.n_envs} x --n-steps {args.n_steps} = {rollout:,} decisions"
    )
    if args.total_timesteps < rollout:
        raise FlagError(
            f"--total-timesteps {args.total_timesteps}: below one rollout ({of_rollout}; "
            f"training runs whole rollouts): pass at least {rollout}"
        )
    if args.batch_size > rollout:
        raise FlagError(
            f"--batch-size {args.batch_size}: must be at most {of_rollout} (each update splits "
            "the rollout into minibatches of this size)"
        )
    if rollout % args.batch_size:
        near = [d for d in divisors(rollout) if d >= 2]
        below = max((d for d in near if d < args.batch_size), default=None)
        above = min(d for d in near if d > args.batch_size)
        nearest = " or ".join(str(d) for d in (below, above) if d is not None)
        raise FlagError(
            f"--batch-size {args.batch_size}: must divide {of_rollout}, e.g. {nearest} "
            f"(MaskablePPO would train on a last minibatch of {rollout % args.batch_size} in "
            "every pass, without a warning, and one of a single decision makes its "
            "advantages NaN)"
        )
    rules = rules_from_flag(args.rules)
    check_agent_specs(args.opponent, "opponent", rules)
    check_agent_specs(args.eval_opponents, "eval_opponents", rules, allow_empty=True)
    if agent_specs(args.eval_opponents):
        check_arena_deals(args.eval_deals, rules)
    check_out_dir(args.out_dir)
    check_earlier_run(args)
    return rules, device_from_flag(args.device)


def check_earlier_run(args: Args) -> None:
    """``FlagError`` where ``--out-dir`` holds the model or a snapshot this run would write,
    unless ``--force``."""
    taken = [
        snapshot_path(args.out_dir, m) for m in snapshots(args.snapshot_minutes, args.time_limit)
    ]
    earlier = [p.name for p in [Path(args.out_dir) / MODEL, *taken] if p.exists()]
    if earlier and not args.force:
        raise FlagError(
            f"--out-dir {args.out_dir!r} holds {', '.join(earlier)} of an earlier run, which "
            "this one would overwrite: train into a new --out-dir "
            f"({str(unused_path(args.out_dir))!r} is free), or pass --force to replace it"
        )


ROW_BYTES = 4 * OBS_SIZE + 4 * NUM_ACTIONS + 8 + 6 * 4
"""Bytes of one decision in MaskablePPO's rollout buffer: the float32 observation and action
mask, the int64 action, and six float32 columns (reward, return, episode start, value,
log-probability, advantage)."""


def memory_needed(args: Args) -> int:
    """A lower bound on the bytes the run allocates: ``--n-envs`` games
    (:data:`training.ppo_selfplay.GAME_BYTES` each) and the rollout buffer of ``--n-envs x
    --n-steps`` decisions, twice (SB3 flattens a copy of it for the update)."""
    return args.n_envs * (GAME_BYTES + 2 * args.n_steps * ROW_BYTES)


def make_env(args: Args, rules: Rules):
    """The training VecEnv of ``args.env``."""
    opponent = make_agent(args.opponent, seed=args.seed, rules=rules)
    if args.env == "vec":
        from zhuoji_env.envs.sb3 import SB3VecEnv

        return SB3VecEnv(args.n_envs, rules, learner_seat=None, opponent=opponent, seed=args.seed)
    if args.env == "single":
        from stable_baselines3.common.vec_env import DummyVecEnv

        from zhuoji_env.envs.single import SingleAgentEnv

        def one(i):
            def build():
                env = SingleAgentEnv(
                    rules,
                    learner_seat=None,
                    opponents=make_agent(args.opponent, seed=[args.seed, i], rules=rules),
                )
                env.reset(seed=args.seed + i)
                return env

            return build

        return DummyVecEnv([one(i) for i in range(args.n_envs)])
    raise ValueError(f"--env must be 'vec' or 'single', got {args.env!r}")


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` >= 1, increasing."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


def layers(net_arch: str) -> list[int]:
    """The widths ``--net-arch`` names; a FlagError if it is not 1-4 widths in 1..4096."""
    try:
        widths = [int(w) for w in net_arch.split(",")]
    except ValueError:
        widths = []
    if not 1 <= len(widths) <= 4 or not all(1 <= w <= 4096 for w in widths):
        raise FlagError(
            f"--net-arch {net_arch!r}: must be 1 to 4 comma-separated widths in 1..4096, "
            "e.g. 64,64 or 256,256"
        )
    return widths


def snapshots(text: str, time_limit: float) -> list[float]:
    """The minutes ``--snapshot-minutes`` names, increasing; a FlagError unless each is a
    number > 0 and, under a ``--time-limit``, below it."""
    try:
        minutes = [float(m) for m in text.split(",")] if text else []
    except ValueError:
        minutes = [-1.0]
    if not all(POSITIVE[0](m) for m in minutes) or (
        time_limit and any(m >= time_limit for m in minutes)
    ):
        below = f", each below --time-limit {time_limit:g}" if time_limit else ""
        raise FlagError(
            f"--snapshot-minutes {text!r}: must be comma-separated minutes > 0{below}, e.g. 30"
        )
    return sorted(set(minutes))


def snapshot_path(out_dir: str, minutes: float) -> Path:
    """Where the snapshot after ``minutes`` of training is saved."""
    return Path(out_dir) / f"model-{minutes:g}min.zip"


def save_model(model, path: Path) -> None:
    """Save whole or not at all (a temporary name, then a rename)."""

    def save(tmp: Path) -> None:
        with open(tmp, "wb") as f:  # a file object: SB3 would add ".zip" to a temporary name
            model.save(f)

    write_atomic(path, save)


def clock(time_limit: float, snapshot_minutes: list[float], out_dir: str, taken: list):
    """An SB3 callback that, at the start of each rollout, saves the snapshots whose minutes
    have passed (appending ``(minutes, decisions, path)`` to ``taken``) and ends ``learn``
    once ``time_limit`` minutes have (0: never)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Clock(BaseCallback):
        def _on_training_start(self) -> None:
            self.start = time.monotonic()
            self.stop = False

        def _on_rollout_start(self) -> None:
            elapsed = (time.monotonic() - self.start) / 60
            for minutes in snapshot_minutes[len(taken) :]:
                if elapsed < minutes:
                    break
                path = snapshot_path(out_dir, minutes)
                save_model(self.model, path)
                taken.append((minutes, int(self.model.num_timesteps), str(path)))
                print(f"snapshot after {minutes:g} min: {self.model.num_timesteps:,} decisions")
            self.stop = bool(time_limit) and elapsed >= time_limit

        def _on_step(self) -> bool:
            return not self.stop

    return Clock()


def plan(args: Args) -> str:
    """The run's length, printed as it starts: the learner's decisions it trains, in whole
    rollouts (the decisions asked for rounded down)."""
    rollout = args.n_envs * args.n_steps
    count = args.total_timesteps // rollout
    text = (
        f"training {count * rollout:,} decisions of the learner: {count} "
        f"rollout{'s' * (count > 1)} of {args.n_envs} games x {args.n_steps} steps "
        f"({rollout:,} decisions each)"
    )
    if args.total_timesteps % rollout:
        asked = f"{args.total_timesteps:,} decisions asked for"
        text += f"; the {asked}, rounded down to whole rollouts"
    if args.time_limit:
        text += f"; fewer if --time-limit {args.time_limit:g} minutes end it first"
    return text


def train(args: Args) -> dict:
    """Train, save and evaluate; every flag is checked first (:func:`check_args`), and
    ``--out-dir`` is locked for the run (:func:`zhuoji_env.fileio.lock_dir`: a second run into
    it is refused while this one lasts)."""
    rules, device = check_args(args)
    with lock_out_dir(args.out_dir):
        check_earlier_run(args)  # again: a run may have ended there since the check
        return _train(args, rules, device)


def _train(args: Args, rules: Rules, device) -> dict:
    """:func:`train` once the flags are checked and ``--out-dir`` is locked."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import HumanOutputFormat, Logger

    torch.set_num_threads(args.torch_threads)
    env = make_env(args, rules)
    if args.norm_reward:
        from stable_baselines3.common.vec_env import VecNormalize

        env = VecNormalize(env, norm_obs=False, norm_reward=True, gamma=args.gamma)
    width = layers(args.net_arch)
    model = MaskablePPO(
        "MlpPolicy",
        env,
        # SB3's own default (64, 64) is left unsaid, so a default model is the plain MlpPolicy
        policy_kwargs={"net_arch": {"pi": width, "vf": width}} if width != [64, 64] else None,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        ent_coef=args.ent_coef,
        gamma=args.gamma,
        seed=args.seed,
        verbose=args.verbose,
        device=device,
    )
    # SB3's default logger makes a folder /tmp/SB3-<time> at each learn(), even to log nothing
    model.set_logger(Logger(None, [HumanOutputFormat(sys.stdout)] if args.verbose else []))
    rollout = args.n_envs * args.n_steps
    print(plan(args), flush=True)
    start = time.monotonic()
    taken: list = []
    callback = clock(args.time_limit, snapshots(args.snapshot_minutes, 0), args.out_dir, taken)
    model.learn(total_timesteps=args.total_timesteps // rollout * rollout, callback=callback)
    seconds = time.monotonic() - start
    print(f"trained {model.num_timesteps:,} decisions in {seconds:.0f} s")
    out = Path(args.out_dir)
    save_model(model, out / MODEL)
    agent = SB3Agent(model, seed=args.seed)
    results = {}
    arenas = against_each(
        agent, "sb3", args.eval_opponents, args.eval_deals, args.seed + 1000, rules
    )
    for opp, res in arenas.items():
        print(res.table())
        margin, ci = res.margin("sb3", opp)
        results[opp] = {"margin": margin, "ci95": ci}
    print(f"saved {out / MODEL}; margins {json_text(results)}")
    return {
        "model": str(out / MODEL),
        "decisions": int(model.num_timesteps),
        "seconds": seconds,
        "snapshots": [{"minutes": m, "decisions": n, "model": p} for m, n, p in taken],
        "eval": results,
    }


PROG = "python -m training.sb3_maskable"
"""The command in usage and error lines."""


def saved_message(args: Args) -> str:
    """What a run stopped by Ctrl-C left: ``model.zip`` is saved at the end only, so nothing
    of its training but the ``--snapshot-minutes`` snapshots there; SB3's runs do not resume,
    so the command that starts it again (:func:`training.cli.start_again`)."""
    taken = sorted(p for p in Path(args.out_dir).glob("model-*min.zip") if p.is_file())
    left = [p for p in [Path(args.out_dir) / MODEL, *taken] if p.exists()]
    held = (
        f"{args.out_dir} holds {', '.join(p.name for p in taken)} (each plays as sb3:PATH); "
        if taken
        else ""
    )
    return f"{held}model.zip is saved when training ends and a run does not resume: " + start_again(
        PROG, args, left
    )


@exits_2_when_out_of_memory("python -m training.sb3_maskable")
def main(argv: list[str] | None = None) -> int:
    return run_main(
        train,
        parse_args(Args, argv, __doc__, prog("training.sb3_maskable")),
        PROG,
        saved_message,
    )


if __name__ == "__main__":
    raise SystemExit(main())
