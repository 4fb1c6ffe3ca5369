"""Throughput of the batched engine: ``python -m zhuoji_env.bench [--batch B] [--json]``.

Plays uniformly random legal actions (the mask is computed every step, as for an agent) and
prints decisions per second and hands per second. Without ``--batch`` it sweeps 1, 16, 256 and
4,096, and runs RLCard's mahjong environment with random agents in the same run when ``rlcard``
is installed, printing the ratio. With ``--json`` the last line is a JSON object:

- ``preset``: the rules preset played;
- ``results``: one object per batch size, in the order run: ``batch``, ``decisions_per_s``
  (one seat's decision is one decision; a step of B games is B), ``hands_per_s``;
- ``batch``, ``decisions_per_s``, ``hands_per_s``: the last (largest) batch's, copied to the top
  so that one figure is at hand;
- ``machine``: the machine it ran on (:func:`zhuoji_env.machine.describe`);
- ``rlcard`` (``decisions_per_s``, ``hands_per_s``) and ``ratio_vs_rlcard`` (the largest
  batch's decisions per second over RLCard's), only where RLCard was run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from zhuoji_env.commands import prog
from zhuoji_env.engine.game import BatchGame, batch_memory
from zhuoji_env.limits import check_memory, exits_2_when_out_of_memory
from zhuoji_env.machine import describe
from zhuoji_env.rules import PRESET_NAMES, Rules


def check_counts(parser: argparse.ArgumentParser, args: argparse.Namespace, *names: str) -> None:
    """A command's count flags ``names`` (attributes of ``args``): each at least 1, or the
    parser's usage error naming the flag and the value given."""
    for name in names:
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")


def check_seconds(parser: argparse.ArgumentParser, seconds: float) -> None:
    """A benchmark's ``--seconds``: finite and at least 0.01 (NaN would measure nothing and
    report 0 a second, or divide by its 0 steps)."""
    if not 0.01 <= seconds < float("inf"):
        parser.error(
            f"--seconds must be a finite number >= 0.01 (time per measurement), got {seconds}"
        )


def bench_engine(preset: str, batch: int, seconds: float, seed: int = 0) -> dict:
    """Decisions and hands per second of random play at one batch size."""
    game = BatchGame(preset, batch, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(20):  # warm up
        game.step(game.random_actions(rng))
    decisions = hands = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        out = game.step(game.random_actions(rng))
        decisions += batch
        hands += int(out.hand_over.sum())
    return {
        "batch": batch,
        "decisions_per_s": decisions / elapsed,
        "hands_per_s": hands / elapsed,
    }


def bench_rlcard(seconds: float) -> dict | None:
    """RLCard's mahjong with its random agents, or None when rlcard is not installed."""
    try:
        import rlcard
        from rlcard.agents import RandomAgent
    except ImportError:
        return None
    env = rlcard.make("mahjong", config={"seed": 0})
    env.set_agents([RandomAgent(num_actions=env.num_actions) for _ in range(env.num_players)])
    decisions = hands = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        trajectories, _ = env.run(is_training=False)
        decisions += sum((len(t) - 1) // 2 for t in trajectories)
        hands += 1
    return {"decisions_per_s": decisions / elapsed, "hands_per_s": hands / elapsed}


@exits_2_when_out_of_memory("python -m zhuoji_env.bench")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("zhuoji_env.bench"), description=__doc__)
    parser.add_argument("--batch", type=int, help="one batch size (default: sweep)")
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--preset", default="guiyang", choices=PRESET_NAMES)
    parser.add_argument("--json", action="store_true", help="print a JSON object last")
    args = parser.parse_args(argv)
    if args.batch is not None:
        check_counts(parser, args, "batch")
    check_seconds(parser, args.seconds)
    sizes = [args.batch] if args.batch else [1, 16, 256, 4096]
    players = Rules.make(args.preset).num_players
    try:  # before any game: a batch of 10**12 would fill the machine's memory
        check_memory(f"--batch {max(sizes)}", batch_memory(max(sizes), players))
    except ValueError as exc:  # limits.SizeError, or a bad ZHUOJI_MEMORY_LIMIT
        parser.error(str(exc))
    rows = []
    print(f"{'batch':>6} {'decisions/s':>14} {'hands/s':>10}")
    for b in sizes:
        r = bench_engine(args.preset, b, args.seconds)
        rows.append(r)
        print(f"{b:>6} {r['decisions_per_s']:>14,.0f} {r['hands_per_s']:>10,.1f}")
    out: dict = {"preset": args.preset, "results": rows, **rows[-1], "machine": describe()}
    if args.batch is None:
        rl = bench_rlcard(args.seconds)
        if rl is None:
            print("rlcard not installed: no comparison (pip install rlcard)")
        else:
            ratio = rows[-1]["decisions_per_s"] / rl["decisions_per_s"]
            print(
                f"RLCard mahjong (random agents): {rl['decisions_per_s']:,.0f} decisions/s, "
                f"{rl['hands_per_s']:,.1f} hands/s; zhuoji-env at batch {sizes[-1]} is "
                f"{ratio:,.0f}x faster"
            )
            out["rlcard"] = rl
            out["ratio_vs_rlcard"] = ratio
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
