"""Write records of random play.

``python -m zhuoji_env.record --preset P --seed S --n N --out DIR``

Plays N games with uniformly random legal decisions on the batched engine and writes one record
file (RULES.md 10) per hand: ``DIR/<rules>-<seed>-<i>.json`` for game i, where ``<rules>`` is
the preset followed by every switch that differs from it (``guiyang``,
``guiyang+num_players=3+baoting=true``; a tag too long for a file name becomes
``guiyang+rules-<hash>``). With ``--set hands_per_game=H`` (H > 1) each game is a match of H
hands (RULES.md 8.2), the dealer and streak carried from hand to hand, and hand h of game i goes
to ``DIR/<rules>-<seed>-<i>-<h>.json``; each record's rules say ``hands_per_game``. Game i's
walls, first dealer and decisions are all drawn from streams keyed by (seed, i), so its records
do not depend on N.

Existing records are never replaced unless ``--force`` is given: the run stops before playing
if any of its file names is taken. Each file is written whole or not at all.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

from zhuoji_env.commands import prog
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.game import BatchGame, batch_memory
from zhuoji_env.fileio import write_text_atomic
from zhuoji_env.limits import SizeError, check_memory, exits_2_when_out_of_memory
from zhuoji_env.rules import PRESET_NAMES, Rules, parse_switches

MAX_TAG = 120
"""Longest rules tag spelled out in a file name (names stay well under 255 bytes)."""
RECORD_BYTES = 16 << 10
"""Memory planned per kept record: a hand of 68 decisions (the mean of random play) was
measured at 7.4 KB of Python objects; longer hands take more."""


def decision_rng(seed: int, i: int) -> np.random.Generator:
    """The generator of game i's decisions: a child of the (seed, i) stream that deals its walls,
    so the two never share draws."""
    return np.random.default_rng(np.random.SeedSequence([seed, i], spawn_key=(1,)))


def play_records(rules: Rules, seed: int, n: int) -> list[list[dict]]:
    """The records of N games of random play, ``hands_per_game`` per game, in hand order.

    Game i is keyed by (seed, i) alone: its walls come from ``BatchGame``'s (seed, i) stream and
    its decisions from :func:`decision_rng`, so game i plays the same whatever N is.
    """
    game = BatchGame(rules, n, seed=seed, auto_reset=False, keep_records=True)
    rngs = [decision_rng(seed, i) for i in range(n)]
    out: list[list[dict]] = [[] for _ in range(n)]
    done = np.zeros(n, dtype=bool)
    while not done.all():
        actions = np.full(n, -1, dtype=np.int64)
        for i in np.flatnonzero(~done):
            actions[i] = A.random_legal(rngs[i], game.mask[i])
        step = game.step(actions)
        for i, rec in step.records:
            out[i].append(rec)
        done |= step.match_over
    return out


def _value_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def rules_tag(rules: Rules) -> str:
    """The rules part of a record's file name: the preset, then ``+switch=value`` for every
    switch that differs from it, so runs of different rules never share a name."""
    tag = rules.preset + "".join(f"+{k}={_value_text(v)}" for k, v in rules.overrides.items())
    if len(tag) <= MAX_TAG:
        return tag
    digest = hashlib.sha256(json.dumps(rules.to_record(), sort_keys=True).encode()).hexdigest()
    return f"{rules.preset}+rules-{digest[:12]}"


def record_names(rules: Rules, seed: int, n: int) -> list[list[str]]:
    """The file name of every hand of N games, per game in hand order."""
    tag = rules_tag(rules)
    hands = rules.hands_per_game
    return [
        [f"{tag}-{seed}-{i}" + (f"-{h}" if hands > 1 else "") + ".json" for h in range(hands)]
        for i in range(n)
    ]


def _count(least: int):
    """An argparse type: an integer >= ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {least}, got {text!r}"
            ) from None
        if value < least:
            raise argparse.ArgumentTypeError(f"expected an integer >= {least}, got {value}")
        return value

    return parse


def _out_problem(out: Path) -> str | None:
    """Why records cannot be written into the folder ``out`` (created if missing), or None."""
    if out.exists():
        if not out.is_dir():
            return f"{out} is a file, not a folder"
        if not os.access(out, os.W_OK | os.X_OK):
            return f"folder {out} is not writable"
        return None
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"{out} lies under {parent}, which is a file, not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create {out}: folder {parent} is not writable"
    return None


@exits_2_when_out_of_memory("python -m zhuoji_env.record")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("zhuoji_env.record"), description=__doc__)
    parser.add_argument("--preset", default="guiyang", choices=PRESET_NAMES)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SWITCH=JSON",
        help="override a switch, e.g. --set num_players=3 --set baoting=true",
    )
    parser.add_argument("--seed", type=_count(0), default=0, help="random seed, an integer >= 0")
    parser.add_argument("--n", type=_count(1), default=10, help="number of games (matches)")
    parser.add_argument(
        "--out", type=Path, required=True, help="output folder (created when missing)"
    )
    parser.add_argument(
        "--force", action="store_true", help="replace records of the same names in --out"
    )
    args = parser.parse_args(argv)
    try:
        rules = Rules.make(args.preset, **parse_switches(args.set))
    except ValueError as err:
        parser.error(f"--set: {err}")
    problem = _out_problem(args.out)
    if problem:
        parser.error(f"--out: {problem}")
    per_game = batch_memory(1, rules.num_players) + rules.hands_per_game * RECORD_BYTES
    try:
        check_memory(f"--n {args.n}", args.n * per_game)
    except SizeError as err:
        parser.error(str(err))
    names = record_names(rules, args.seed, args.n)
    if not args.force and args.out.is_dir():
        present = set(os.listdir(args.out))
        taken = [x for game in names for x in game if x in present]
        if taken:
            parser.error(
                f"--out: {len(taken)} of this run's records exist already in {args.out} "
                f"({taken[0]}{', ...' if len(taken) > 1 else ''}): give another folder, or "
                "--force to replace them"
            )
    records = play_records(rules, args.seed, args.n)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        parser.error(f"--out: cannot create {args.out}: {err.strerror}")
    count = 0
    for game, game_names in zip(records, names, strict=True):
        for rec, name in zip(game, game_names, strict=True):
            path = args.out / name
            try:
                write_text_atomic(path, json.dumps(rec) + "\n")
            except OSError as err:
                parser.error(f"--out: cannot write {path}: {err.strerror}")
            count += 1
    print(f"wrote {count} records of {args.n} games to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
