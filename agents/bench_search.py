"""Milliseconds per searched decision, by how many tables are searched together.

    python -m agents.bench_search [--agent search:ppo-guiyang] [--tables 1,16,64] [--json]

Each size deals that many tables (``BatchGame``, ``--seed``), lets BASE play ``--warmup``
decisions at every table, then asks the search agent ``--decisions`` times at every table at
once (each answer is played), timing only its calls. A searched decision is one with more than
one legal action (and, with ``unsure``, where BASE is unsure; those are counted by asking BASE).
The rollouts of all tables asked at once run as one engine batch, so the cost per decision
falls with the number of tables: the ratio to one table at a time is the last column.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from agents.base import decide
from agents.registry import make_agent
from agents.search import SearchAgent
from zhuoji_env.engine import BatchGame
from zhuoji_env.limits import exits_2_when_out_of_memory
from zhuoji_env.machine import describe
from zhuoji_env.observation import encode


def measure(spec: str, tables: int, warmup: int, decisions: int, seed: int, preset: str) -> dict:
    game = BatchGame(preset, batch_size=tables, seed=seed)
    agent = make_agent(spec, seed=seed, rules=game.rules)
    if not isinstance(agent, SearchAgent):
        raise ValueError(f"--agent must be a search:BASE spec, got {spec!r}")
    g = np.arange(tables)
    for _ in range(warmup):
        st = game.state
        game.step(agent.base.act(encode(st, g, st.actor), st.mask))
    count, seconds = 0, 0.0
    for _ in range(decisions):
        st = game.state
        obs = encode(st, g, st.actor)
        count += int(agent.to_search(obs, st.mask)[0].sum())
        start = time.perf_counter()
        acts = decide(agent, obs, st.mask, st, g)
        seconds += time.perf_counter() - start
        game.step(acts)
    return {"tables": tables, "searched": count, "seconds": seconds}


@exits_2_when_out_of_memory("python -m agents.bench_search")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.bench_search", description=__doc__)
    parser.add_argument("--agent", default="search:ppo-guiyang", help="a search:BASE spec")
    parser.add_argument("--tables", default="1,16,64", help="comma-separated batch sizes")
    parser.add_argument("--warmup", type=int, default=8, help="decisions BASE plays first")
    parser.add_argument("--decisions", type=int, default=4, help="decisions timed per table")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preset", default="guiyang")
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    args = parser.parse_args(argv)
    try:
        sizes = [int(x) if x.strip().isdecimal() else 0 for x in args.tables.split(",")]
        if any(s < 1 for s in sizes) or args.warmup < 0 or args.decisions < 1:
            raise ValueError("--tables must be integers >= 1, --warmup >= 0, --decisions >= 1")
        if args.seed < 0:
            raise ValueError(f"--seed must be a non-negative integer, got {args.seed}")
        rows = [
            measure(args.agent, s, args.warmup, args.decisions, args.seed, args.preset)
            for s in sizes
        ]
    except ValueError as exc:
        parser.exit(2, f"error: {exc}\n")
    single = None
    print(f"{args.agent}, preset {args.preset}, seed {args.seed}")
    print(f"{'tables':>7} {'searched':>9} {'seconds':>9} {'ms/decision':>12} {'vs 1 table':>11}")
    for row in rows:  # no decision searched: no cost per searched decision, no ratio
        ms = 1000 * row["seconds"] / row["searched"] if row["searched"] else None
        row["ms_per_decision"] = ms
        single = ms if single is None and row["tables"] == 1 else single
        ratio = f"{ms / single:.2f}x" if single and ms is not None else "-"
        shown = "-" if ms is None else f"{ms:.1f}"
        print(
            f"{row['tables']:>7} {row['searched']:>9} {row['seconds']:>9.2f} {shown:>12} "
            f"{ratio:>11}"
        )
    if args.json:
        settings = {"seed": args.seed, "warmup": args.warmup, "decisions": args.decisions}
        out = {"agent": args.agent, "preset": args.preset, **settings, "rows": rows}
        out["machine"] = describe()
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
