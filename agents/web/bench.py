"""Load benchmark of the web app: ``python -m agents.web.bench [--tables 32] [--hands 2]``.

Starts ``python -m agents.web`` in its own process on a free loopback port, opens ``--tables``
tables at once (a person's seat and ``--opponent`` in the others, pace 0), and drives each
through ``--hands`` whole hands from one loopback client (httpx2, all tables concurrently),
the person playing a random legal action. Reports the latency of an action (the POST's round
trip) and of a turn (from an action to the view asking the person again, the other seats'
moves in between), at p50 and p95, and hands per minute over all tables, as a Markdown table.

It fails (exit status 1) on any error answer, a table that ends with an error, a view of
another table's id, or a downloaded record that does not replay to the result its table showed.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time

import httpx2
import numpy as np

from zhuoji_env import replay
from zhuoji_env.bench import check_counts
from zhuoji_env.limits import exits_2_when_out_of_memory
from zhuoji_env.machine import describe


class Failed(Exception):
    """The app answered wrongly under load."""


async def drive(client, url: str, seats: list, hands: int, seed: int, lat: dict) -> int:
    """Play ``hands`` hands at a new table; returns the decisions the person made."""
    r = await client.post(f"{url}/api/tables", json={"seats": seats, "pace_ms": 0})
    if r.status_code != 201:
        raise Failed(f"making a table: {r.status_code} {r.text}")
    view = r.json()
    tid = view["id"]
    rng = np.random.default_rng(seed)
    done = moves = 0
    turn_start = None
    while done < hands:
        if view["id"] != tid:
            raise Failed(f"table {tid} was sent a view of table {view['id']}")
        if view["status"] == "error":
            raise Failed(f"table {tid} ended: {view['error']}")
        if view["settlement"]:
            rec = await client.get(f"{url}/api/tables/{tid}/records/{done}")
            if replay(rec.json()) != view["settlement"]["result"]:
                raise Failed(f"table {tid}: hand {done}'s record replays to another result")
            done += 1
            r = await client.post(f"{url}/api/tables/{tid}/control", json={"command": "next"})
        elif view["legal"]:
            if turn_start is not None:
                lat["turn"].append(time.perf_counter() - turn_start)
            pick = view["legal"][rng.integers(len(view["legal"]))]["action"]
            t0 = time.perf_counter()
            r = await client.post(
                f"{url}/api/tables/{tid}/action", json={"version": view["version"], "action": pick}
            )
            turn_start = time.perf_counter()
            lat["action"].append(turn_start - t0)
            moves += 1
        else:
            r = await client.get(f"{url}/api/tables/{tid}?since={view['version']}")
        if r.status_code != 200:
            raise Failed(f"table {tid}: {r.status_code} {r.text}")
        view = r.json()
    await client.delete(f"{url}/api/tables/{tid}")
    return moves


async def run(url: str, tables: int, hands: int, opponent: str, players: int, seed: int):
    lat: dict[str, list[float]] = {"action": [], "turn": []}
    seats = [None] + [opponent] * (players - 1)
    limits = httpx2.Limits(max_connections=2 * tables)
    async with httpx2.AsyncClient(timeout=120, limits=limits) as client:
        start = time.perf_counter()
        moves = await asyncio.gather(
            *(drive(client, url, seats, hands, seed + i, lat) for i in range(tables))
        )
        wall = time.perf_counter() - start
    return lat, sum(moves), wall


def start_server(tables: int, opponent: str, think_limit: float) -> tuple[subprocess.Popen, str]:
    """``python -m agents.web`` on a free loopback port, and its URL."""
    cmd = [sys.executable, "-m", "agents.web", "--port", "0", "--agents", opponent]
    cmd += ["--max-tables", str(tables), "--think-limit", str(think_limit)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        raise Failed(f"the server did not start: {line!r}")
    return proc, line.split("open ")[1].split("/ ")[0]


@exits_2_when_out_of_memory("python -m agents.web.bench")
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.web.bench", description=__doc__)
    parser.add_argument("--tables", type=int, default=32, help="tables at once (default 32)")
    parser.add_argument("--hands", type=int, default=2, help="hands per table (default 2)")
    parser.add_argument("--opponent", default="rule", help="agent in the other seats")
    parser.add_argument("--players", type=int, choices=(3, 4), default=4)
    parser.add_argument("--seed", type=int, default=0, help="seed of the person's random play")
    parser.add_argument("--think-limit", type=float, default=30.0)
    args = parser.parse_args(argv)
    check_counts(parser, args, "tables", "hands")
    proc, url = start_server(args.tables, args.opponent, args.think_limit)
    try:
        lat, moves, wall = asyncio.run(
            run(url, args.tables, args.hands, args.opponent, args.players, args.seed)
        )
    except Failed as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    machine = describe()
    ms = {k: np.percentile(np.array(v) * 1000, [50, 95]) for k, v in lat.items()}
    hands = args.tables * args.hands
    print(
        f"{args.tables} tables x {args.hands} hands, {args.opponent} in the other seats, "
        f"{machine.get('cpu')} ({machine.get('cores')} cores)"
    )
    print(
        "| tables | hands | person's actions | action p50 / p95 (ms) | turn p50 / p95 (ms) "
        "| hands / min | errors |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {args.tables} | {hands} | {moves} | {ms['action'][0]:.0f} / {ms['action'][1]:.0f} | "
        f"{ms['turn'][0]:.0f} / {ms['turn'][1]:.0f} | {hands / wall * 60:.1f} | 0 |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
