"""Write records of random play.

``python -m zhuoji_env.record --preset P --seed S --n N --out DIR``

Plays N hands with uniformly random legal decisions on the batched engine and writes one record
file (RULES.md 10) per hand, ``DIR/<preset>-<seed>-<i>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from zhuoji_env.engine.game import BatchGame
from zhuoji_env.rules import PRESET_NAMES, Rules, parse_switches


def play_records(rules: Rules, seed: int, n: int) -> list[dict]:
    """N records of hands of random play, game i keyed by (seed, i)."""
    game = BatchGame(
        rules.replace(hands_per_game=1), n, seed=seed, auto_reset=False, keep_records=True
    )
    rng = np.random.default_rng(seed)
    out: dict[int, dict] = {}
    while len(out) < n:
        step = game.step(game.random_actions(rng))
        out.update(step.records)
    return [out[i] for i in range(n)]


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
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=10, help="number of hands")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be >= 1")
    try:
        rules = Rules.make(args.preset, **parse_switches(args.set))
    except ValueError as err:
        parser.error(str(err))
    args.out.mkdir(parents=True, exist_ok=True)
    for i, rec in enumerate(play_records(rules, args.seed, args.n)):
        path = args.out / f"{args.preset}-{args.seed}-{i}.json"
        path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    print(f"wrote {args.n} records to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
