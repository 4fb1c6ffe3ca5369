"""A run's learning curve after the fact: ``python -m training.curve RUN_DIR [RUN_DIR ...]
--opponent rule --deals 300 --out curve.png``.

Plays every saved checkpoint (``update_<k>.pt``) of the run folders, in the order of their
decisions trained (a run and its ``--resume`` continuations line up), against ``--opponent`` on
the same duplicate deals (seed ``--seed``, every seating), by sampling and by argmax, and
plots the margin per hand (policy minus opponent, 95% intervals) against decisions trained.
The rules are each checkpoint's own. Writes the picture and, beside it, the numbers as JSON.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from agents import make_agent
from agents.arena import against_each
from agents.ppo import load_checkpoint
from zhuoji_env.rules import Rules


def checkpoints(run_dirs: list[str]) -> list[tuple[int, Path, dict]]:
    """``(decisions, path, rules record)`` of every ``update_<k>.pt`` in the folders, sorted by
    decisions; a folder without one raises ``ValueError``."""
    out = []
    for d in run_dirs:
        found = [p for p in Path(d).glob("update_*.pt") if re.fullmatch(r"update_\d+\.pt", p.name)]
        if not found:
            raise ValueError(f"{d!r}: no update_<k>.pt checkpoints in it")
        for p in found:
            _, ckpt = load_checkpoint(p)
            out.append((int(ckpt["decisions"]), p, ckpt["rules"]))
    return sorted(out, key=lambda x: x[0])


def measure(points, opponent: str, deals: int, seed: int, workers: int) -> list[dict]:
    rows = []
    for decisions, path, rules in points:
        row = {"decisions": decisions, "checkpoint": str(path)}
        for play, option in (("sampling", ""), ("argmax", ":greedy")):
            spec = f"ppo:{path}{option}"
            res = against_each(spec, "ppo", opponent, deals, seed, Rules.make(rules), workers)[
                opponent
            ]
            margin, ci = res.margin("ppo", opponent)
            row[play] = {"margin": margin, "margin_ci95": ci}
        print(
            f"{decisions:>12,} {path}: sampling {row['sampling']['margin']:+.2f} "
            f"argmax {row['argmax']['margin']:+.2f}",
            flush=True,
        )
        rows.append(row)
    return rows


def plot(rows: list[dict], opponent: str, deals: int, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [r["decisions"] / 1e6 for r in rows]
    for play in ("sampling", "argmax"):
        ys = [r[play]["margin"] for r in rows]
        ax.plot(xs, ys, marker="o", label=play)
        lo = [r[play]["margin_ci95"][0] for r in rows]
        hi = [r[play]["margin_ci95"][1] for r in rows]
        ax.fill_between(xs, lo, hi, alpha=0.2)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("decisions trained (millions, all seats)")
    ax.set_ylabel(f"margin per hand over {opponent}")
    ax.set_title(title or f"{deals} duplicate deals per point, 95% intervals")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.curve",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dirs", nargs="+", help="run folders (--out-dir of ppo_selfplay)")
    parser.add_argument("--opponent", default="rule", help="agent spec to play against")
    parser.add_argument("--deals", type=int, default=300, help="duplicate deals per checkpoint")
    parser.add_argument("--seed", type=int, default=2029, help="arena seed")
    parser.add_argument("--workers", type=int, default=1, help="arena processes")
    parser.add_argument("--out", default="curve.png", help="the picture; the JSON goes beside it")
    parser.add_argument("--title", default="", help="the picture's title")
    a = parser.parse_args(argv)
    if a.deals < 1 or a.workers < 1:
        parser.error(f"--deals and --workers must be >= 1, got {a.deals} and {a.workers}")
    out = Path(a.out)
    if not out.parent.is_dir():
        parser.error(f"--out {a.out!r}: {str(out.parent)!r} is not a folder")
    try:
        points = checkpoints(a.run_dirs)
        make_agent(a.opponent)
    except ValueError as exc:
        parser.error(str(exc))
    rows = measure(points, a.opponent, a.deals, a.seed, a.workers)
    plot(rows, a.opponent, a.deals, out, a.title)
    out.with_suffix(".json").write_text(
        json.dumps({"opponent": a.opponent, "deals": a.deals, "seed": a.seed, "points": rows})
        + "\n"
    )
    print(f"wrote {out} and {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
