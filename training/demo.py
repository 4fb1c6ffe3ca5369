"""The main job: a short self-play PPO run whose learning curve rises, then an arena of the
shipped policy, the fresh one and the baselines.

``python -m training.demo`` trains a policy from scratch by self-play PPO for ``--decisions``
(about two minutes on two cores; ``--bc-agent rule`` clones ``rule`` first instead), evaluating
it against ``random`` and ``greedy`` before the first update and along the way (by sampling and
by argmax). Then the shipped policy of the preset (``ppo-guiyang``, trained for about an hour
and a quarter, :mod:`agents.ppo`), the fresh policy, ``rule``, ``greedy`` and ``random`` play
``--deals`` duplicate deals (each rotation of the five over the four seats). It prints the
arena table and saves ``OUT_DIR/demo.png`` (the learning curve beside the arena's mean score
per hand with 95% intervals) and ``OUT_DIR/arena.json``. ``--long`` trains fifty times longer.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agents import make_agent
from agents.arena import run_arena
from agents.ppo import PPOAgent
from training.cli import FlagError
from training.ppo_selfplay import Args, train

SHIPPED = "ppo-guiyang"
BASELINES = ["rule", "greedy", "random"]


def plot(history: list[dict], summary: dict, path: Path) -> None:
    """Left: the fresh policy's margin per hand against each opponent during training (95%
    intervals). Right: every arena agent's mean score per hand (95% intervals)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), width_ratios=[3, 2])
    xs = [h["decisions"] for h in history]
    for opp in history[0]["eval"]:
        ys = [h["eval"][opp]["margin"] for h in history]
        lo = [h["eval"][opp]["margin_ci95"][0] for h in history]
        hi = [h["eval"][opp]["margin_ci95"][1] for h in history]
        left.plot(xs, ys, marker="o", label=f"minus {opp}")
        left.fill_between(xs, lo, hi, alpha=0.2)
    left.axhline(0, color="grey", lw=0.8)
    left.set_xlabel("decisions trained (all seats)")
    left.set_ylabel("fresh policy's margin per hand")
    left.set_title("Self-play PPO from scratch: arena margin while training")
    left.legend()
    agents = summary["agents"]
    names = list(agents)
    means = [agents[a]["mean"] for a in names]
    errs = [[m - agents[a]["ci95"][0] for a, m in zip(names, means, strict=True)],
            [agents[a]["ci95"][1] - m for a, m in zip(names, means, strict=True)]]  # fmt: skip
    right.barh(names, means, xerr=errs, color="tab:blue", alpha=0.7)
    right.axvline(0, color="grey", lw=0.8)
    right.invert_yaxis()
    right.set_xlabel("mean score per hand (95% CI)")
    right.set_title("Arena: duplicate deals, every rotation")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.demo", description=__doc__)
    parser.add_argument("--decisions", type=int, default=700_000, help="decisions to train")
    parser.add_argument(
        "--bc-agent", default="", help="agent to clone before self-play ('': from scratch)"
    )
    parser.add_argument("--long", action="store_true", help="train 50x longer")
    parser.add_argument("--deals", type=int, default=300, help="final arena deals")
    parser.add_argument("--num-envs", type=int, default=256, help="games played in parallel")
    parser.add_argument(
        "--bc-decisions", type=int, default=100_000, help="decisions of the cloned agent's play"
    )
    parser.add_argument("--out-dir", default="runs/demo")
    parser.add_argument("--seed", type=int, default=1)
    a = parser.parse_args(argv)
    for name in ("deals", "decisions", "num_envs"):
        if getattr(a, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(a, name)}")
    decisions = a.decisions * (50 if a.long else 1)
    num_steps = 128
    per_update = a.num_envs * num_steps
    args = Args(
        total_decisions=decisions,
        num_envs=a.num_envs,
        num_steps=num_steps,
        lr=3e-4,
        ent_coef=0.01,
        bc_agent=a.bc_agent,
        bc_decisions=a.bc_decisions,
        bc_epochs=4,
        eval_every=max(1, decisions // (per_update * 6)),
        eval_deals=100,
        eval_opponents="random,greedy",
        out_dir=a.out_dir,
        seed=a.seed,
    )
    try:
        shipped = make_agent(SHIPPED, seed=a.seed)  # before training: the package must have it
    except ValueError as exc:
        parser.error(str(exc))
    try:
        out = train(args)
    except FlagError as exc:  # the flags passed on to the trainer, checked before any work
        parser.error(str(exc))
    fresh = PPOAgent.load(out["checkpoint"], seed=a.seed)
    res = run_arena(
        [shipped, fresh, *BASELINES],
        a.deals,
        seed=a.seed + 7,
        labels=[SHIPPED, "fresh ppo", *BASELINES],
        seating="rotate",
    )
    print()
    print(res.table())
    out_dir = Path(a.out_dir)
    summary = res.summary()
    plot(out["history"], summary, out_dir / "demo.png")
    (out_dir / "arena.json").write_text(json.dumps(summary, indent=1))
    print(
        f"\nlearning curve and arena: {out_dir / 'demo.png'}; arena: {out_dir / 'arena.json'}; "
        f"environment share of training time: {out['env_seconds'] / out['seconds']:.0%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
