"""Write records of random play.

``python -m zhuoji_env.record --preset P --seed S --n N --out DIR``

Plays N games with uniformly random legal decisions on the batched engine and writes one record
file (RULES.md 10) per hand: ``DIR/<preset>-<seed>-<i>.json`` for game i. With
``--set hands_per_game=H`` (H > 1) each game is a match of H hands (RULES.md 8.2), the dealer and
streak carried from hand to hand, and hand h of game i goes to ``DIR/<preset>-<seed>-<i>-<h>.json``;
each record's rules say ``hands_per_game``. Game i's walls, first dealer and decisions are all
drawn from streams keyed by (seed, i), so its records do not depend on N.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from zhuoji_env.engine import actions as A
from zhuoji_env.engine.game import BatchGame
from zhuoji_env.rules import PRESET_NAMES, Rules, parse_switches


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zhuoji_env.record", description=__doc__)
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
    args = parser.parse_args(argv)
    try:
        rules = Rules.make(args.preset, **parse_switches(args.set))
    except ValueError as err:
        parser.error(f"--set: {err}")
    problem = _out_problem(args.out)
    if problem:
        parser.error(f"--out: {problem}")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        parser.error(f"--out: cannot create {args.out}: {err.strerror}")
    count = 0
    for i, records in enumerate(play_records(rules, args.seed, args.n)):
        for h, rec in enumerate(records):
            tail = f"-{h}" if rules.hands_per_game > 1 else ""
            path = args.out / f"{args.preset}-{args.seed}-{i}{tail}.json"
            try:
                path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
            except OSError as err:
                parser.error(f"--out: cannot write {path}: {err.strerror}")
            count += 1
    print(f"wrote {count} records of {args.n} games to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
