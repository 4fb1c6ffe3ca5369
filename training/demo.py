"""The main job: train a self-play PPO agent briefly, then evaluate it in the arena.

``python -m training.demo`` clones the ``greedy`` agent's play (``--bc-agent``; ``''`` learns
from scratch), then trains by self-play PPO for ``--decisions`` (a few minutes on two cores),
evaluating against ``random`` and ``greedy`` along the way, then plays the final policy against
``random``, ``greedy`` and ``rule`` on duplicate deals, prints the arena table and saves the
learning curve (mean score per hand against decisions trained) to ``OUT_DIR/learning_curve.png``.
``--long`` trains fifty times longer.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agents.arena import run_arena
from agents.ppo import PPOAgent
from training.cli import FlagError
from training.ppo_selfplay import Args, train


def plot_curve(history: list[dict], path: Path) -> None:
    """Mean score per hand of the policy against each opponent, with 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [h["decisions"] for h in history]
    for opp in history[0]["eval"]:
        ys = [h["eval"][opp]["ppo_mean"] for h in history]
        lo = [h["eval"][opp]["ppo_ci95"][0] for h in history]
        hi = [h["eval"][opp]["ppo_ci95"][1] for h in history]
        ax.plot(xs, ys, marker="o", label=f"vs {opp}")
        ax.fill_between(xs, lo, hi, alpha=0.2)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("decisions trained (all seats)")
    ax.set_ylabel("PPO mean score per hand")
    ax.set_title("Self-play PPO on guiyang: arena score during training")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.demo", description=__doc__)
    parser.add_argument("--decisions", type=int, default=600_000)
    parser.add_argument(
        "--bc-agent",
        default="greedy",
        help="agent to clone before self-play ('' to learn from scratch)",
    )
    parser.add_argument("--long", action="store_true", help="train 50x longer")
    parser.add_argument("--deals", type=int, default=200, help="final arena deals")
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
        lr=1e-4,
        ent_coef=0.003,
        bc_agent=a.bc_agent,
        bc_decisions=a.bc_decisions,
        bc_epochs=4,
        eval_every=max(1, decisions // (per_update * 6)),
        eval_deals=100,
        eval_opponents="greedy,random",
        out_dir=a.out_dir,
        seed=a.seed,
    )
    try:
        out = train(args)
    except FlagError as exc:  # the flags passed on to the trainer, checked before any work
        parser.error(str(exc))
    agent = PPOAgent.load(out["checkpoint"], seed=a.seed)
    res = run_arena(
        [agent, "random", "greedy", "rule"],
        a.deals,
        seed=a.seed + 7,
        labels=["ppo", "random", "greedy", "rule"],
    )
    print()
    print(res.table())
    out_dir = Path(a.out_dir)
    plot_curve(out["history"], out_dir / "learning_curve.png")
    (out_dir / "arena.json").write_text(json.dumps(res.summary(), indent=1))
    print(
        f"\nlearning curve: {out_dir / 'learning_curve.png'}; arena: {out_dir / 'arena.json'}; "
        f"environment share of training time: {out['env_seconds'] / out['seconds']:.0%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
