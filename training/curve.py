"""A run's learning curve after the fact: ``python -m training.curve RUN_DIR [RUN_DIR ...]
--opponent rule --deals 300 --out curve.png``.

Plays every saved checkpoint (``update_<k>.pt``) of the run folders, in the order of their
decisions trained (a run and its ``--resume`` continuations line up), against ``--opponent`` on
the same duplicate deals (seed ``--seed``, every seating), by sampling and by argmax, and
plots the margin per hand (policy minus opponent, 95% intervals) against decisions trained.
The rules are each checkpoint's own. Writes the picture and, beside it, the numbers as JSON
(``--out x.png``: ``x.json``; each whole or not at all, and replaced only with ``--force``).
Every flag, every checkpoint (its ``decisions`` and its rules) and
the opponent under each checkpoint's rules are checked before any game is played; a bad one
exits with status 2 and a message naming it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

from agents import make_agent
from agents.arena import against_each
from agents.ppo import load_checkpoint
from agents.registry import split_specs
from training.cli import interrupted, json_text, plain
from zhuoji_env.bench import check_counts
from zhuoji_env.commands import prog
from zhuoji_env.fileio import write_atomic, write_text_atomic
from zhuoji_env.limits import SizeError, exits_2_when_out_of_memory
from zhuoji_env.rules import Rules
from zhuoji_env.versions import stamp


def checkpoints(
    run_dirs: str | os.PathLike | list[str | os.PathLike],
) -> list[tuple[int, Path, dict]]:
    """``(decisions, path, rules record)`` of every ``update_<k>.pt`` in the folders (one folder,
    or a list of them), sorted by decisions; no folder, one given twice (its checkpoints would
    be played twice), a folder without a checkpoint, or a checkpoint without a count of
    ``decisions`` or with rules this package cannot make, raises ``ValueError`` naming it."""
    if isinstance(run_dirs, (str, os.PathLike)):
        run_dirs = [run_dirs]
    if not isinstance(run_dirs, (list, tuple)):
        raise ValueError(f"run folders {run_dirs!r}: must be a path or a list of paths")
    if not run_dirs:
        raise ValueError("no run folder given: pass a run's --out-dir, or a list of them")
    seen: dict[Path, str] = {}
    for d in run_dirs:
        if not isinstance(d, (str, os.PathLike)):
            raise ValueError(f"run folder {d!r}: must be a path (a str or pathlib.Path)")
        key = Path(d).resolve()
        if key in seen:
            raise ValueError(
                f"run folder {str(d)!r} is given twice ({seen[key]!r} and {str(d)!r}): give "
                "each once, or its checkpoints are played twice"
            )
        seen[key] = str(d)
    out = []
    for d in run_dirs:
        if not Path(d).is_dir():
            raise ValueError(f"{d!r}: not a folder (a run's --out-dir)")
        found = [p for p in Path(d).glob("update_*.pt") if re.fullmatch(r"update_\d+\.pt", p.name)]
        if not found:
            raise ValueError(f"{d!r}: no update_<k>.pt checkpoints in it")
        for p in found:
            _, ckpt = load_checkpoint(p)  # its fields checked
            decisions = ckpt.get("decisions")
            if decisions is None:
                raise ValueError(
                    f"{p}: its 'decisions' is None, not a count of decisions trained (not a "
                    "training.ppo_selfplay checkpoint?)"
                )
            if "rules" not in ckpt:
                raise ValueError(f"{p}: records no rules (not a training.ppo_selfplay checkpoint?)")
            out.append((decisions, p, Rules.make(ckpt["rules"]).to_record()))
    return sorted(out, key=lambda x: x[0])


def picture_format(out: Path) -> str:
    """The picture format of ``--out``'s suffix, one that matplotlib writes; else ``ValueError``."""
    from matplotlib.figure import Figure

    formats = sorted(Figure().canvas.get_supported_filetypes())
    kind = out.suffix[1:].lower()
    if kind not in formats:
        raise ValueError(
            f"--out {str(out)!r}: the suffix names the picture's format, one of "
            f"{', '.join('.' + f for f in formats)}"
        )
    return kind


def free_out(out: Path) -> Path:
    """The first of ``out``, ``STEM-2.SUFFIX``, ``STEM-3.SUFFIX``, ... where neither the
    picture nor its JSON exists."""
    free, n = out, 2
    while free.exists() or free.with_suffix(".json").exists():
        free, n = out.with_name(f"{out.stem}-{n}{out.suffix}"), n + 1
    return free


def measure(points, opponent: str, deals: int, seed: int, workers: int) -> list[dict]:
    """Each point of :func:`checkpoints` against ``opponent``, one agent spec, by sampling and by
    argmax: a row per point of its margins per hand and their 95% intervals."""
    try:
        specs = split_specs(opponent, "opponent") if isinstance(opponent, str) else []
    except ValueError:  # none given, or an empty item
        specs = []
    if len(specs) != 1:
        raise ValueError(
            f"opponent {opponent!r}: must be one agent spec (the curve's one opponent), e.g. rule"
        )
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


def plot(rows: list[dict], opponent: str, deals: int, path: str | Path, title: str) -> None:
    """The curve of ``rows`` as a picture at ``path`` (a str or Path; its format from the
    suffix)."""
    path = Path(path)
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
    kind = picture_format(path)
    write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=110, format=kind))
    plt.close(fig)


@exits_2_when_out_of_memory("python -m training.curve")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("training.curve"),
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dirs", nargs="+", help="run folders (--out-dir of ppo_selfplay)")
    parser.add_argument("--opponent", default="rule", help="agent spec to play against")
    parser.add_argument("--deals", type=int, default=300, help="duplicate deals per checkpoint")
    parser.add_argument("--seed", type=int, default=2029, help="arena seed")
    parser.add_argument("--workers", type=int, default=1, help="arena processes")
    parser.add_argument("--out", default="curve.png", help="the picture; the JSON goes beside it")
    parser.add_argument("--title", default="", help="the picture's title")
    parser.add_argument(
        "--force", action="store_true", help="replace the picture and JSON if they exist"
    )
    a = parser.parse_args(argv)
    check_counts(parser, a, "deals", "workers")
    if a.seed < 0:
        parser.error(f"--seed must be >= 0 (an arena seed), got {a.seed}")
    out = Path(a.out)
    if not out.parent.is_dir():
        parser.error(f"--out {a.out!r}: {str(out.parent)!r} is not a folder")
    for path in (out, out.with_suffix(".json")):
        if path.is_dir():
            parser.error(f"--out {a.out!r}: {str(path)!r} is a folder")
    there = [repr(str(p)) for p in (out, out.with_suffix(".json")) if p.exists()]
    if there and not a.force:
        parser.error(
            f"--out {a.out!r} would replace {' and '.join(there)}, already there: pass "
            f"another --out ({str(free_out(out))!r} is free), or --force to replace "
            + ("them" if len(there) > 1 else "it")
        )
    try:
        picture_format(out)
        points = checkpoints(a.run_dirs)
        for rules in {json.dumps(r, sort_keys=True): r for _, _, r in points}.values():
            make_agent(a.opponent, seed=0, rules=rules)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        rows = measure(points, a.opponent, a.deals, a.seed, a.workers)
    except SizeError as exc:  # --deals too many for this machine: raised before the first game
        parser.error(f"--deals {a.deals}: {exc}")
    except KeyboardInterrupt:
        return interrupted(
            parser.prog,
            lambda: (
                f"nothing was written ({a.out} and its JSON are written once every "
                "checkpoint is measured); run the same command again"
            ),
        )
    plot(rows, a.opponent, a.deals, out, a.title)
    write_text_atomic(
        out.with_suffix(".json"),
        json_text(
            {
                "versions": stamp(),
                "opponent": a.opponent,
                "deals": a.deals,
                "seed": a.seed,
                "points": rows,
            }
        )
        + "\n",
    )
    print(f"wrote {out} and {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
