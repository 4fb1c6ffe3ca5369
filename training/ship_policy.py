"""Ship a trained policy in the package: ``python -m training.ship_policy --checkpoint CKPT
--name ppo-guiyang``.

Writes ``agents/policies/NAME.pt`` (the network alone, without the optimizer: a few MB) and
``NAME.json``, its provenance: how it was trained (the checkpoint's ``stages``: per run, the
command that reruns it, the git commit, the decisions trained and the wall seconds), the file's
sha256, and its arena tables under its own preset against ``rule``, ``greedy`` and ``random``
(duplicate deals, every seating; played by sampling, and by argmax against ``rule``), with the
command that reproduces them. The checkpoint's preset must be the name's
(:data:`agents.registry.SHIPPED_POLICIES`). A checkpoint written before ``stages`` were recorded
takes them from ``--stages FILE`` (a JSON list of such dicts). Both files state the versions the
policy was made under (the checkpoint's ``versions``, :func:`zhuoji_env.versions.stamp`); a
checkpoint written before versions were stated takes them from ``--versions JSON``
(``'{"zhuoji_env": "0.1.0", "environment": "zhuoji_v1"}'``).

Everything is checked before anything is written: the checkpoint, each stage's fields and their
types, the preset, ``--out-dir``, and whether ``NAME.pt`` or ``NAME.json`` is there already
(replacing a shipped policy needs ``--force``). The arena plays a staged copy of the new
``NAME.pt``; only then do the two files land, together (:func:`land`; a ship killed between
their two renames is finished by the next one, :func:`finish_interrupted`). The ship holds the
lock of ``--out-dir`` (:func:`zhuoji_env.fileio.lock_dir`) from that check to the landing: a
second ship into the same folder is refused at once, naming the one that holds it. Exit status
2 and a message on every bad input.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path

from agents.arena import against_each
from agents.checkpoint_fields import check_stages
from agents.ppo import POLICY_DIR, load_checkpoint, reward_scale_of, save_checkpoint
from agents.registry import SHIPPED_POLICIES
from training.cli import check_out_dir, interrupted, json_text, plain
from zhuoji_env.bench import check_counts
from zhuoji_env.commands import prog
from zhuoji_env.fileio import FolderBusy, lock_dir, write_text_atomic
from zhuoji_env.limits import SizeError, exits_2_when_out_of_memory
from zhuoji_env.rules import Rules
from zhuoji_env.versions import ENVIRONMENT, check_stamp

STAGE_KEYS = ("command", "commit", "preset", "decisions", "seconds")
"""What every stage of a provenance says."""

OPPONENTS = ("rule", "greedy", "random")
PLAYS = [(opp, "") for opp in OPPONENTS] + [("rule", ":greedy")]
"""The arena tables of a provenance: sampling against each opponent, argmax against rule."""


def read_stages(ckpt: dict, stages_file: str | None, name: str) -> list[dict]:
    """The training stages of the checkpoint file ``name`` (``ckpt``, its fields checked as it
    was loaded), or of ``--stages FILE`` (checked here the same way:
    :func:`agents.checkpoint_fields.check_stages`); each must say :data:`STAGE_KEYS`, and their
    decisions must add up to the checkpoint's."""
    if stages_file:
        where = f"--stages {stages_file}"
        try:
            stages = json.loads(Path(stages_file).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc})") from None
        except RecursionError:  # as zhuoji_env.engine.records.load: a file of 100,000 "["s
            raise ValueError(
                f"{where}: arrays or objects nested too deeply to read (a list of stages nests a "
                "few levels)"
            ) from None
        check_stages(stages, where)
    else:
        where, stages = name, ckpt.get("stages")
    if not stages:
        raise ValueError(
            f"{name} records no training stages (written before they were recorded): give them "
            "with --stages FILE, a JSON list of {" + ", ".join(STAGE_KEYS) + "}"
        )
    for i, stage in enumerate(stages):
        missing = [k for k in STAGE_KEYS if k not in stage]
        if missing:
            raise ValueError(
                f"{where}: stages[{i}] lacks {missing}: each stage says {list(STAGE_KEYS)}"
            )
    if "decisions" not in ckpt:
        raise ValueError(f"{name} records no 'decisions', which the shipped policy states")
    total = sum(s["decisions"] for s in stages)
    if total != ckpt["decisions"]:
        raise ValueError(
            f"{where}: the stages add up to {total:,} decisions, {name} says {ckpt['decisions']:,}"
        )
    return stages


def made_with(ckpt: dict, name: str, given: str | None) -> dict[str, str]:
    """The versions a shipped policy states: the checkpoint's, or for a checkpoint that states
    none (written before they were), ``--versions``' JSON object; ``ValueError`` when neither
    or both say, or what is given is not a stamp (:func:`zhuoji_env.versions.check_stamp`)."""
    if given is None:
        if "versions" not in ckpt:
            raise ValueError(
                f"{name} states no versions (written before they were stated): give the ones "
                "it was trained under with --versions, e.g. "
                f"'{json.dumps({'zhuoji_env': '0.1.0', 'environment': ENVIRONMENT})}'"
            )
        return check_stamp(ckpt["versions"], name)
    if "versions" in ckpt:
        raise ValueError(
            f"{name} states its versions {ckpt['versions']!r}: --versions is for checkpoints "
            "that state none"
        )
    try:
        value = json.loads(given)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--versions {given!r}: not valid JSON ({exc})") from None
    return check_stamp(value, "--versions")


def staged(out_dir: Path, name: str) -> tuple[Path, Path]:
    """The hidden names the new ``NAME.pt`` and ``NAME.json`` are written to before they land."""
    return out_dir / f".{name}.pt.new", out_dir / f".{name}.json.new"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def land(out_dir: Path, name: str) -> None:
    """Rename the staged ``.NAME.pt.new`` and ``.NAME.json.new`` (both complete on disk) over
    ``NAME.pt`` and ``NAME.json``, the ``.json`` last: a kill between the two renames leaves the
    new ``NAME.pt`` beside the old ``NAME.json`` and the staged ``.NAME.json.new``, whose
    sha256 is the new ``NAME.pt``'s, so :func:`finish_interrupted` can tell and finish."""
    pt_new, json_new = staged(out_dir, name)
    os.replace(pt_new, out_dir / f"{name}.pt")
    os.replace(json_new, out_dir / f"{name}.json")


def finish_interrupted(out_dir: Path, name: str) -> str | None:
    """Settle what a ship of ``name`` killed part-way left in ``out_dir``; returns what was done.

    Killed between the renames of :func:`land` (the staged ``.json`` alone is left, and its
    sha256 is ``NAME.pt``'s): its rename is done now, so the pair is the new one. Killed before
    them (during the checks, the writes or the arena): the staged files are deleted, and the
    old pair was never touched."""
    pt_new, json_new = staged(out_dir, name)
    pt = out_dir / f"{name}.pt"
    if json_new.is_file() and not pt_new.exists() and pt.is_file():
        try:
            record = json.loads(json_new.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            record = None
        if isinstance(record, dict) and record.get("sha256") == sha256(pt):
            os.replace(json_new, out_dir / f"{name}.json")
            return f"finished an interrupted ship: {name}.json now matches {name}.pt"
    leftovers = [p for p in (pt_new, json_new) if p.exists()]
    leftovers += [t for p in (pt_new, json_new) for t in out_dir.glob(f".{p.name}.*.tmp")]
    for p in leftovers:
        p.unlink()
    if leftovers:
        return f"deleted the staged files of an interrupted ship of {name} (the old pair stands)"
    return None


def arena_tables(path: Path, name: str, rules: Rules, deals: int, seed: int, workers: int) -> dict:
    """The arena results of the checkpoint file ``path``, shipped as ``name``, against each
    opponent (sampling; argmax vs rule), played under ``rules``."""
    out = {}
    for opp, option in PLAYS:
        res = against_each(f"ppo:{path}{option}", "ppo", opp, deals, seed, rules, workers)[opp]
        margin, ci = res.margin("ppo", opp)
        play = "argmax" if option else "sampling"
        summary = res.summary()
        summary["agents"]["ppo"]["spec"] = f"{name}{option}"  # the name it ships under
        summary["specs"][0] = f"{name}{option}"  # not the staged file's path
        out.setdefault(opp, {})[play] = {
            "margin": round(margin, 4),
            "margin_ci95": [round(x, 4) for x in ci],
            "summary": summary,
        }
        print(f"{play:>8} vs {opp:<6}: margin {margin:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}]")
        print(res.table(), flush=True)
    return out


@exits_2_when_out_of_memory("python -m training.ship_policy")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("training.ship_policy"),
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--checkpoint", required=True, help="a training.ppo_selfplay checkpoint")
    parser.add_argument("--name", required=True, choices=list(SHIPPED_POLICIES))
    parser.add_argument("--stages", help="JSON list of the training stages (older checkpoints)")
    parser.add_argument(
        "--versions",
        help="the versions it was made under, a JSON object (checkpoints that state none)",
    )
    parser.add_argument("--deals", type=int, default=2000, help="arena deals per opponent")
    parser.add_argument("--seed", type=int, default=2028, help="arena seed (not tuned on)")
    parser.add_argument("--workers", type=int, default=2, help="arena processes")
    parser.add_argument("--out-dir", default=str(POLICY_DIR), help="where NAME.pt/.json go")
    parser.add_argument(
        "--force", action="store_true", help="replace the NAME.pt/.json that --out-dir holds"
    )
    a = parser.parse_args(argv)
    check_counts(parser, a, "deals", "workers")
    if a.seed < 0:
        parser.error(f"--seed must be >= 0 (an arena seed), got {a.seed}")
    try:
        net, ckpt = load_checkpoint(a.checkpoint)
        stages = read_stages(ckpt, a.stages, a.checkpoint)
        shipped_scale = reward_scale_of({"stages": stages}, f"{a.name}'s stages")
        trained_scale = reward_scale_of(ckpt, a.checkpoint)
        rules = Rules.make(ckpt.get("rules"))
        versions = made_with(ckpt, a.checkpoint, a.versions)
        check_out_dir(a.out_dir)
    except (OSError, ValueError, TypeError) as exc:  # JSONDecodeError, FlagError: ValueErrors
        parser.error(str(exc))
    if "rules" not in ckpt:
        parser.error(f"{a.checkpoint} records no rules, so it cannot be shipped as {a.name}")
    if shipped_scale != trained_scale:
        parser.error(
            f"the shipped {a.name} keeps its stages, not its arguments, and their last command's "
            f"--reward-scale gives {shipped_scale}, but {a.checkpoint} was trained at "
            f"{trained_scale}: its values would be read at the wrong scale (fix --stages)"
        )
    if rules.preset != SHIPPED_POLICIES[a.name] or rules.overrides:
        parser.error(
            f"{a.checkpoint} was trained under {rules.to_record()}; {a.name} is the plain "
            f"{SHIPPED_POLICIES[a.name]!r} preset's policy"
        )
    out_dir = Path(a.out_dir)
    try:
        lock = lock_dir(out_dir)
    except FolderBusy as exc:
        parser.error(f"--out-dir {a.out_dir}: {exc}")
    with lock:
        try:
            return ship(a, parser, net, ckpt, stages, rules, versions, out_dir)
        except KeyboardInterrupt:  # the staged files are gone (ship); the pair there stands
            return interrupted(
                parser.prog,
                lambda: (
                    f"nothing was shipped, --out-dir {a.out_dir} holds what it held; ship "
                    "again with the same command"
                ),
            )


def ship(
    a, parser, net, ckpt: dict, stages: list[dict], rules: Rules, versions: dict, out_dir: Path
) -> int:
    """Write, measure and land the policy, under the lock of ``--out-dir`` (:func:`main`): a
    ship killed part-way is settled first (:func:`finish_interrupted`); a second ship of the
    same folder is refused while this one runs, instead of deleting its staged files as a
    killed ship's."""
    path = out_dir / f"{a.name}.pt"
    done = finish_interrupted(out_dir, a.name)
    if done:
        print(done)
    there = [p.name for p in (path, path.with_suffix(".json")) if p.exists()]
    if there and not a.force:
        parser.error(
            f"--out-dir {a.out_dir} holds {' and '.join(there)} (the shipped {a.name}): pass "
            "--force to replace them (both at once, when the new ones are complete), or ship "
            "into another --out-dir"
        )
    pt_new, json_new = staged(out_dir, a.name)
    try:
        extra = dict(
            rules=ckpt["rules"],
            decisions=ckpt["decisions"],
            stages=stages,
            name=a.name,
            versions=versions,
        )
        save_checkpoint(pt_new, net, **extra)
        try:
            arena = arena_tables(pt_new, a.name, rules, a.deals, a.seed, a.workers)
        except SizeError as exc:  # --deals too many for this machine: before the first game
            parser.error(f"--deals {a.deals}: {exc}")
        record = {
            "name": a.name,
            "preset": rules.preset,
            "file": path.name,
            "versions": versions,
            "sha256": sha256(pt_new),
            "decisions": ckpt["decisions"],
            "seconds": round(sum(float(s["seconds"]) for s in stages), 1),
            "stages": stages,
            "arena": {
                "commands": [
                    f"python -m agents.arena --agents {a.name}{option},{opp} --preset "
                    f"{rules.preset} --deals {a.deals} --seed {a.seed}"
                    for opp, option in PLAYS
                ],
                "deals": a.deals,
                "seed": a.seed,
                "against": arena,
            },
        }
        write_text_atomic(json_new, json_text(record, indent=1) + "\n")
    except BaseException:
        pt_new.unlink(missing_ok=True)
        json_new.unlink(missing_ok=True)
        raise
    land(out_dir, a.name)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB) and {a.name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
