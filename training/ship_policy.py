"""Ship a trained policy in the package: ``python -m training.ship_policy --checkpoint CKPT
--name ppo-guiyang``.

Writes ``agents/policies/NAME.pt`` (the network alone, without the optimizer: a few MB) and
``NAME.json``, its provenance: how it was trained (the checkpoint's ``stages``: per run, the
command that reruns it, the git commit, the decisions trained and the wall seconds), the file's
sha256, and its arena tables under its own preset against ``rule``, ``greedy`` and ``random``
(duplicate deals, every seating; played by sampling, and by argmax against ``rule``), with the
command that reproduces them. The checkpoint's preset must be the name's
(:data:`agents.registry.SHIPPED_POLICIES`). A checkpoint written before ``stages`` were recorded
takes them from ``--stages FILE`` (a JSON list of such dicts).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from agents.arena import against_each
from agents.ppo import POLICY_DIR, load_checkpoint, save_checkpoint
from agents.registry import SHIPPED_POLICIES
from zhuoji_env.rules import Rules

STAGE_KEYS = ("command", "commit", "preset", "decisions", "seconds")
"""What every stage of a provenance says."""

OPPONENTS = ("rule", "greedy", "random")
PLAYS = [(opp, "") for opp in OPPONENTS] + [("rule", ":greedy")]
"""The arena tables of a provenance: sampling against each opponent, argmax against rule."""


def read_stages(ckpt: dict, stages_file: str | None) -> list[dict]:
    """The training stages of a checkpoint, or of ``--stages FILE``; each must say
    :data:`STAGE_KEYS`, and their decisions must add up to the checkpoint's."""
    if stages_file:
        stages = json.loads(Path(stages_file).read_text(encoding="utf-8"))
        if not isinstance(stages, list) or not all(isinstance(x, dict) for x in stages):
            raise ValueError(f"--stages {stages_file}: must hold a JSON list of objects")
    else:
        stages = ckpt.get("stages")
    if not stages:
        raise ValueError(
            "the checkpoint records no training stages (written before they were recorded): "
            "give them with --stages FILE, a JSON list of {" + ", ".join(STAGE_KEYS) + "}"
        )
    for i, stage in enumerate(stages):
        missing = [k for k in STAGE_KEYS if k not in stage]
        if missing:
            raise ValueError(f"stage {i} lacks {missing}: each stage says {list(STAGE_KEYS)}")
    total = sum(int(s["decisions"]) for s in stages)
    if total != ckpt.get("decisions"):
        raise ValueError(
            f"the stages add up to {total:,} decisions, the checkpoint says "
            f"{ckpt.get('decisions')!r}"
        )
    return stages


def arena_tables(path: Path, rules: Rules, deals: int, seed: int, workers: int) -> dict:
    """The shipped file's arena results against each opponent (sampling; argmax vs rule)."""
    out = {}
    for opp, option in PLAYS:
        res = against_each(f"ppo:{path}{option}", "ppo", opp, deals, seed, rules, workers)[opp]
        margin, ci = res.margin("ppo", opp)
        play = "argmax" if option else "sampling"
        summary = res.summary()
        summary["agents"]["ppo"]["spec"] = f"{path.stem}{option}"  # the name it ships under
        out.setdefault(opp, {})[play] = {
            "margin": round(margin, 4),
            "margin_ci95": [round(x, 4) for x in ci],
            "summary": summary,
        }
        print(f"{play:>8} vs {opp:<6}: margin {margin:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}]")
        print(res.table(), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.ship_policy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--checkpoint", required=True, help="a training.ppo_selfplay checkpoint")
    parser.add_argument("--name", required=True, choices=list(SHIPPED_POLICIES))
    parser.add_argument("--stages", help="JSON list of the training stages (older checkpoints)")
    parser.add_argument("--deals", type=int, default=2000, help="arena deals per opponent")
    parser.add_argument("--seed", type=int, default=2028, help="arena seed (not tuned on)")
    parser.add_argument("--workers", type=int, default=2, help="arena processes")
    parser.add_argument("--out-dir", default=str(POLICY_DIR), help="where NAME.pt/.json go")
    a = parser.parse_args(argv)
    if a.deals < 1 or a.workers < 1:
        parser.error(f"--deals and --workers must be >= 1, got {a.deals} and {a.workers}")
    try:
        net, ckpt = load_checkpoint(a.checkpoint)
        stages = read_stages(ckpt, a.stages)
    except (OSError, ValueError) as exc:  # JSONDecodeError is a ValueError
        parser.error(str(exc))
    rules = Rules.make(ckpt["rules"])
    if rules.preset != SHIPPED_POLICIES[a.name] or rules.overrides:
        parser.error(
            f"{a.checkpoint} was trained under {rules.to_record()}; {a.name} is the plain "
            f"{SHIPPED_POLICIES[a.name]!r} preset's policy"
        )
    out_dir = Path(a.out_dir)
    path = out_dir / f"{a.name}.pt"
    save_checkpoint(
        path, net, rules=ckpt["rules"], decisions=ckpt["decisions"], stages=stages, name=a.name
    )
    arena = arena_tables(path, rules, a.deals, a.seed, a.workers)
    record = {
        "name": a.name,
        "preset": rules.preset,
        "file": path.name,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "decisions": ckpt["decisions"],
        "seconds": round(sum(float(s["seconds"]) for s in stages), 1),
        "stages": stages,
        "arena": {
            "commands": [
                f"python -m agents.arena --agents {a.name}{option},{opp} --preset {rules.preset} "
                f"--deals {a.deals} --seed {a.seed}"
                for opp, option in PLAYS
            ],
            "deals": a.deals,
            "seed": a.seed,
            "against": arena,
        },
    }
    (out_dir / f"{a.name}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB) and {a.name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
