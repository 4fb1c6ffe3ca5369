"""Throughput of the environments: ``python -m zhuoji_env.envs.bench [--seconds S] [--json]``.

Every measurement plays uniformly random legal actions, with observations encoded as an agent
would see them:

- ``aec``: turns per second of the wrapped PettingZoo environment (``zhuoji_env.env()``) in the
  loop of ``pettingzoo.test.performance_benchmark`` (``agent_iter``, ``last()`` with the
  observation, a random legal action, ``step``; a new match when all agents are done);
- ``single``: learner steps per second of ``SingleAgentEnv`` (random opponents, which are not
  encoded), and the decisions per second this includes;
- ``selfplay``: decisions per second of ``SelfPlayVecEnv`` at batch ``--batch`` (default 1024),
  every decision's observation encoded, with the time split into engine step, observation
  encoding and the rest (credit bookkeeping, masks);
- ``sb3``: learner steps per second of ``SB3VecEnv`` (``--sb3-batch`` games, random opponents),
  when stable-baselines3 is installed.

With ``--json`` the last line is a JSON object of all results. The targets printed are the
project's: 5,000 AEC turns/s and 100,000 self-play decisions/s at batch 1,024.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

import numpy as np

from zhuoji_env.bench import check_counts, check_seconds
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.game import BatchGame, batch_memory
from zhuoji_env.envs.aec import env as make_aec
from zhuoji_env.envs.single import SingleAgentEnv
from zhuoji_env.envs.vector import SelfPlayVecEnv
from zhuoji_env.limits import check_memory, exits_2_when_out_of_memory
from zhuoji_env.machine import describe
from zhuoji_env.observation import OBS_SIZE, encode
from zhuoji_env.rules import PRESET_NAMES, Rules

AEC_TARGET = 5_000
SELFPLAY_TARGET = 100_000


def selfplay_memory(batch: int, num_players: int) -> int:
    """Bytes :func:`bench_selfplay` plans on: the vector env's games and the bare
    ``BatchGame`` of its time split (:func:`~zhuoji_env.engine.game.batch_memory` each), and
    four batches of float32 observations (the env's, the split's encoding and their masks)."""
    return 2 * batch_memory(batch, num_players) + 4 * batch * 4 * OBS_SIZE


def sb3_memory(batch: int, num_players: int) -> int:
    """Bytes :func:`bench_sb3` plans on: its games and two batches of float32 observations."""
    return batch_memory(batch, num_players) + 2 * batch * 4 * OBS_SIZE


def bench_aec(preset: str, seconds: float, seed: int = 0) -> dict:
    """Turns per second in PettingZoo's performance-benchmark loop."""
    e = make_aec(rules=preset)
    random.seed(seed)
    e.reset(seed=seed)
    turns = matches = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for agent in e.agent_iter(e.num_agents):
            obs, _, term, trunc, _ = e.last()
            if term or trunc:
                action = None
            else:
                action = random.choice(np.flatnonzero(obs["action_mask"]).tolist())
            e.step(action)
            turns += 1
            if all(e.terminations.values()) or all(e.truncations.values()):
                e.reset()
                matches += 1
            del agent
    return {"turns_per_s": turns / elapsed, "matches_per_s": matches / elapsed}


def bench_single(preset: str, seconds: float, seed: int = 0) -> dict:
    """Learner steps (and all decisions) per second of ``SingleAgentEnv``."""
    e = SingleAgentEnv(preset)
    rng = np.random.default_rng(seed)
    e.reset(seed=seed)
    steps = episodes = 0
    decisions = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        mask = e.action_masks()
        a = int(A.random_legal(rng, mask))
        _, _, term, _, _ = e.step(a)
        steps += 1
        if term:
            decisions += sum(len(r["actions"]) for r in e.records)
            episodes += 1
            e.reset()
    return {
        "steps_per_s": steps / elapsed,
        "decisions_per_s": decisions / elapsed,
        "episodes_per_s": episodes / elapsed,
    }


def bench_selfplay(preset: str, batch: int, seconds: float, seed: int = 0) -> dict:
    """Decisions per second of ``SelfPlayVecEnv`` with encoded observations, and a time split."""
    env = SelfPlayVecEnv(batch, preset, seed=seed)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    for _ in range(20):  # warm up
        env.step(env.random_actions(rng))
    steps = hands = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        _, _, _, _, dones, _ = env.step(env.random_actions(rng))
        steps += 1
        hands += int(dones.sum())
    total = elapsed
    # the split: the same loop on a bare BatchGame, with and without encoding
    game = BatchGame(preset, batch, seed=seed)
    rows = np.arange(batch)
    t_step = t_enc = 0.0
    k = max(steps // 4, 10)
    for _ in range(k):
        a = game.random_actions(rng)
        t0 = time.perf_counter()
        game.step(a)
        t1 = time.perf_counter()
        encode(game.state, rows, game.actor, game.scores, game.hand_no, 1)
        t2 = time.perf_counter()
        t_step += t1 - t0
        t_enc += t2 - t1
    per_step = total / steps
    return {
        "batch": batch,
        "decisions_per_s": steps * batch / total,
        "hands_per_s": hands / total,
        "ms_per_step": per_step * 1e3,
        "ms_engine_step": t_step / k * 1e3,
        "ms_encode": t_enc / k * 1e3,
        "ms_other": max(per_step - (t_step + t_enc) / k, 0.0) * 1e3,
    }


def bench_sb3(preset: str, batch: int, seconds: float, seed: int = 0) -> dict | None:
    """Learner steps per second of ``SB3VecEnv``, or None without stable-baselines3."""
    try:
        from zhuoji_env.envs.sb3 import SB3VecEnv
    except ImportError:
        return None
    env = SB3VecEnv(batch, preset, seed=seed)
    rng = np.random.default_rng(seed)
    env.reset()
    steps = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        mask = env.action_masks()
        env.step(A.random_legal(rng, mask))
        steps += 1
    return {"batch": batch, "learner_steps_per_s": steps * batch / elapsed}


@exits_2_when_out_of_memory("python -m zhuoji_env.envs.bench")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zhuoji_env.envs.bench", description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0, help="time per measurement")
    parser.add_argument("--preset", default="guiyang", choices=PRESET_NAMES)
    parser.add_argument("--batch", type=int, default=1024, help="SelfPlayVecEnv batch")
    parser.add_argument("--sb3-batch", type=int, default=64, help="SB3VecEnv batch")
    parser.add_argument(
        "--only", choices=("aec", "single", "selfplay", "sb3"), help="run one measurement"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object last")
    args = parser.parse_args(argv)
    check_seconds(parser, args.seconds)
    check_counts(parser, args, "batch", "sb3_batch")
    players = Rules.make(args.preset).num_players
    try:  # before any measurement: a batch of 10**12 would fill the machine's memory
        if args.only in (None, "selfplay"):
            check_memory(f"--batch {args.batch}", selfplay_memory(args.batch, players))
        if args.only in (None, "sb3"):
            check_memory(f"--sb3-batch {args.sb3_batch}", sb3_memory(args.sb3_batch, players))
    except ValueError as exc:  # limits.SizeError, or a bad ZHUOJI_MEMORY_LIMIT
        parser.error(str(exc))
    out: dict = {"preset": args.preset, "seconds": args.seconds}
    if args.only in (None, "aec"):
        r = out["aec"] = bench_aec(args.preset, args.seconds)
        print(
            f"AEC env (zhuoji_v1, wrapped): {r['turns_per_s']:,.0f} turns/s "
            f"({r['matches_per_s']:,.1f} matches/s; target >= {AEC_TARGET:,})"
        )
    if args.only in (None, "single"):
        r = out["single"] = bench_single(args.preset, args.seconds)
        print(
            f"SingleAgentEnv: {r['steps_per_s']:,.0f} learner steps/s, "
            f"{r['decisions_per_s']:,.0f} decisions/s, {r['episodes_per_s']:,.1f} episodes/s"
        )
    if args.only in (None, "selfplay"):
        r = out["selfplay"] = bench_selfplay(args.preset, args.batch, args.seconds)
        print(
            f"SelfPlayVecEnv batch {r['batch']}: {r['decisions_per_s']:,.0f} decisions/s "
            f"(observations encoded), {r['hands_per_s']:,.0f} hands/s; per step "
            f"{r['ms_per_step']:.2f} ms = engine {r['ms_engine_step']:.2f} + encode "
            f"{r['ms_encode']:.2f} + other {r['ms_other']:.2f}"
            + (f" (target >= {SELFPLAY_TARGET:,})" if args.batch == 1024 else "")
        )
    if args.only in (None, "sb3"):
        r = bench_sb3(args.preset, args.sb3_batch, args.seconds)
        if r is None:
            print("SB3VecEnv: stable-baselines3 not installed")
        else:
            out["sb3"] = r
            print(
                f"SB3VecEnv batch {r['batch']}: {r['learner_steps_per_s']:,.0f} learner "
                "steps/s (random opponents)"
            )
    if args.json:
        print(json.dumps({**out, "machine": describe()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
