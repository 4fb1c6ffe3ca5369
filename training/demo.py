"""The main job: a short self-play PPO run whose learning curve rises, then an arena of the
shipped policy, the fresh one and the baselines.

``python -m training.demo`` trains a policy from scratch by self-play PPO for ``--decisions``
with the trainer's recipe ``demo`` (:mod:`training.recipes`: about four minutes on two cores;
small rollouts of 64 games and a high learning rate, so that the curve rises within them;
``--bc-agent rule`` clones ``rule`` first), evaluating
it against ``random`` and ``greedy`` before the first update and along the way (by sampling and
by argmax). Then the shipped guiyang policy (``ppo-guiyang``: rule cloning and 140 minutes of
PPO, 36.8M decisions; :mod:`agents.ppo`) and the fresh one each play ``rule``, ``greedy`` and
``random`` on the same ``--deals`` duplicate deals (two agents, every seating). It prints the
margins per hand with 95% intervals and saves ``OUT_DIR/demo.png`` (the learning curve beside
the margins) and ``OUT_DIR/arena.json``, each whole or not at all. ``--long`` trains fifty
times longer. Training runs whole updates of ``--num-envs`` games x 128 steps: ``--decisions``
is rounded down to them, and refused below one.

Nothing of an earlier demo is overwritten: when ``runs/demo`` (the default ``OUT_DIR``) holds
one, a rerun goes to the first free ``runs/demo-2``, ``runs/demo-3``, ... and says so; an
``--out-dir`` given that holds a run is refused, with a free name to use instead.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from agents import make_agent
from agents.arena import against_each, interval_text
from agents.ppo import INPUT_SIZES, PPOAgent
from training.cli import FlagError, check_arena_deals, file_names, interrupted, json_text, plain
from training.ppo_selfplay import (
    Args,
    input_version,
    memory_needed,
    run_files,
    saved_message,
    train,
)
from training.recipes import RECIPES, recipe_values
from zhuoji_env.bench import check_counts
from zhuoji_env.commands import prog
from zhuoji_env.fileio import unused_path, write_atomic, write_text_atomic
from zhuoji_env.limits import check_memory, exits_2_when_out_of_memory
from zhuoji_env.rules import Rules

SHIPPED = "ppo-guiyang"
BASELINES = ["rule", "greedy", "random"]
DEFAULT_OUT = "runs/demo"
"""The default ``--out-dir``; a rerun goes to ``runs/demo-2``, ``runs/demo-3``, ..."""
OUTPUTS = ("demo.png", "arena.json")
"""What the demo writes in ``--out-dir`` beside the training run's files."""


def earlier_files(out_dir: Path) -> list[Path]:
    """The files of an earlier demo or training run in ``out_dir`` (none: it can take this one)."""
    return run_files(out_dir) + [out_dir / n for n in OUTPUTS if (out_dir / n).exists()]


def out_folder(given: str | None) -> Path:
    """Where this demo writes: ``--out-dir`` as ``given`` (``ValueError`` if it holds a run),
    else :data:`DEFAULT_OUT`, or the first free ``runs/demo-K`` when that holds one."""
    if given is None:
        out = Path(DEFAULT_OUT)
        if earlier_files(out):
            out = unused_path(out)
            print(f"{DEFAULT_OUT} holds an earlier demo, left as it is; this one goes to {out}")
        return out
    found = earlier_files(Path(given))
    if found:
        raise ValueError(
            f"--out-dir {given!r} holds an earlier run ({file_names(found)}), which this demo "
            f"would overwrite: pass another --out-dir ({str(unused_path(given))!r} is free), "
            f"or none (the demo then picks a free runs/demo-K)"
        )
    return Path(given)


def arenas(agents: dict, deals: int, seed: int) -> dict:
    """Each agent against each baseline on the same duplicate deals (two agents, every
    seating): ``{agent: {baseline: {margin, margin_ci95, summary}}}``."""
    out = {}
    for label, agent in agents.items():
        results = against_each(agent, label, ",".join(BASELINES), deals, seed, "guiyang")
        out[label] = {}
        for opp, res in results.items():
            margin, ci = res.margin(label, opp)
            out[label][opp] = {"margin": margin, "margin_ci95": ci, "summary": res.summary()}
    return out


def python_command() -> str:
    """This interpreter as the user can type it: relative to the working folder where it lies
    below it (``.venv/bin/python`` under ``make demo``), else its full path."""
    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(Path.cwd()))
    except ValueError:
        return str(exe)


def margin_table(arena: dict) -> str:
    """The arena's margins per hand, one row per agent, one column per baseline."""
    lines = [f"{'margin per hand':<16}" + "".join(f"{'minus ' + b:>26}" for b in BASELINES)]
    for label, row in arena.items():
        cells = "".join(
            f"{row[b]['margin']:>+10.2f} {interval_text(row[b]['margin_ci95'], 2):<15}"
            for b in BASELINES
        )
        lines.append(f"{label:<16}{cells}")
    return "\n".join(lines)


def plot(history: list[dict], arena: dict, path: Path) -> None:
    """Left: the fresh policy's margin per hand against each opponent during training (95%
    intervals). Right: each policy's margin per hand over each baseline (95% intervals)."""
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
    left.set_title("Self-play PPO: arena margin while training")
    left.legend()
    height = 0.8 / len(arena)
    for k, (label, row) in enumerate(arena.items()):
        ys = [i + k * height for i in range(len(BASELINES))]
        ms = [row[b]["margin"] for b in BASELINES]
        lo = [m - row[b]["margin_ci95"][0] for b, m in zip(BASELINES, ms, strict=True)]
        hi = [row[b]["margin_ci95"][1] - m for b, m in zip(BASELINES, ms, strict=True)]
        errs = [lo, hi]
        right.barh(ys, ms, height=height, xerr=errs, label=label, alpha=0.8)
    right.set_yticks([i + 0.4 - height / 2 for i in range(len(BASELINES))], BASELINES)
    right.axvline(0, color="grey", lw=0.8)
    right.invert_yaxis()
    right.set_xlabel("margin per hand over the baseline (95% CI)")
    right.set_title("Arena: duplicate deals, every seating")
    right.legend()
    fig.tight_layout()
    write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)


def demo_args(
    num_envs: int, decisions: int, seed: int, bc_agent: str = "", bc_decisions: int = 100_000
) -> Args:
    """The trainer's ``Args`` of a demo: the recipe ``demo`` (:mod:`training.recipes`) with the
    demo's own flags in their place and about six evaluations along the run."""
    per_update = num_envs * RECIPES["demo"].values["num_steps"]
    return Args(
        **recipe_values(
            "demo",
            total_decisions=decisions,
            num_envs=num_envs,
            seed=seed,
            eval_every=max(1, decisions // (per_update * 6)),
            **(  # the cloning's sizes only with a clone: the trainer refuses them without
                {"bc_agent": bc_agent, "bc_decisions": bc_decisions, "bc_epochs": 4}
                if bc_agent
                else {}
            ),
        )
    )


@exits_2_when_out_of_memory("python -m training.demo")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("training.demo"),
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--decisions", type=int, default=700_000, help="decisions to train")
    parser.add_argument(
        "--bc-agent", default="", help="agent to clone before self-play ('': from scratch)"
    )
    parser.add_argument("--long", action="store_true", help="train 50x longer")
    parser.add_argument("--deals", type=int, default=300, help="final arena deals")
    parser.add_argument("--num-envs", type=int, default=64, help="games played in parallel")
    parser.add_argument(
        "--bc-decisions",
        type=int,
        default=100_000,
        help="decisions of the cloned agent's play (with --bc-agent)",
    )
    parser.add_argument(
        "--out-dir",
        help=f"folder of the run, demo.png and arena.json; one that holds a run is refused "
        f"(default {DEFAULT_OUT}, or the first free {DEFAULT_OUT}-2, -3, ... when it holds one)",
    )
    parser.add_argument("--seed", type=int, default=1)
    a = parser.parse_args(argv)
    check_counts(parser, a, "deals", "decisions", "num_envs")
    if a.bc_decisions != parser.get_default("bc_decisions") and not a.bc_agent:
        parser.error(
            f"--bc-decisions {a.bc_decisions}: sizes the cloning of --bc-agent, so it needs "
            "--bc-agent (e.g. --bc-agent rule)"
        )
    longer = 50 if a.long else 1
    decisions = a.decisions * longer
    args = demo_args(a.num_envs, decisions, a.seed, a.bc_agent, a.bc_decisions)
    num_steps = args.num_steps
    per_update = a.num_envs * num_steps
    try:
        shipped = make_agent(SHIPPED, seed=a.seed)  # before training: the package must have it
        # the sizes in the demo's own flags (the trainer would name --num-steps, not the demo's)
        check_memory(
            f"--num-envs {a.num_envs}"
            + (f" with --bc-decisions {a.bc_decisions}" if a.bc_agent else ""),
            memory_needed(args, INPUT_SIZES[input_version(args)]),
        )
        check_arena_deals(a.deals, Rules.make("guiyang"), "deals")
        if decisions < per_update:
            parser.error(
                f"--decisions {a.decisions}"
                + (f" with --long (x 50 = {decisions:,})" if a.long else "")
                + f": below one update of --num-envs {a.num_envs} games x {num_steps} steps = "
                f"{per_update:,} decisions (training runs whole updates): pass --decisions "
                f">= {-(-per_update // longer)}"
            )
        args.out_dir = str(out_folder(a.out_dir))
    except ValueError as exc:  # FlagError and limits.SizeError are ValueErrors
        parser.error(str(exc))
    start = f"after cloning {a.bc_agent}" if a.bc_agent else "from scratch"
    print(
        f"demo: self-play PPO {start}, run folder {args.out_dir}; then {SHIPPED} and the "
        f"fresh policy each play {', '.join(BASELINES)} on {a.deals} duplicate deals",
        flush=True,
    )
    try:
        out = train(args)
    except FlagError as exc:  # the flags passed on to the trainer, checked before any work
        parser.error(str(exc))
    except KeyboardInterrupt:  # the demo does not resume; the trainer's run does
        return interrupted(
            parser.prog, lambda: f"the demo's training: {saved_message(args)}, then its arena"
        )
    fresh = PPOAgent.load(out["checkpoint"], seed=a.seed)
    arena = arenas({SHIPPED: shipped, "fresh ppo": fresh}, a.deals, a.seed + 7)
    print(
        f"\nmargin of each policy over each baseline, in points per hand [95% interval]; "
        f"{a.deals} duplicate deals, every seating, guiyang:\n{margin_table(arena)}"
    )
    out_dir = Path(args.out_dir)
    plot(out["history"], arena, out_dir / "demo.png")
    write_text_atomic(out_dir / "arena.json", json_text(arena, indent=1))
    print(
        f"\n{out_dir}: checkpoints (latest.pt, update_<k>.pt), metrics.jsonl (a row per update), "
        "demo.png (learning curve and arena), arena.json (the margins)\n"
        f"play the fresh policy again: {shlex.quote(python_command())} -m agents.arena --agents "
        f"ppo:{shlex.quote(str(out_dir / 'latest.pt'))},rule --deals {a.deals} "
        f"--seed {a.seed + 7}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
