"""Hands evaluated per second: zhuoji_env.hands (batched tables) vs the ``mahjong`` package.

    python benchmarks/bench_hands.py [--sizes 1,64,4096,65536] [--min-time 0.5] [--json]

``is_win`` is timed on 14-tile hands, ``waits`` on 13-tile hands, ``shanten`` on 13-tile hands
(standard shape only, as the reference), ``discards`` (``shanten_neighbours(change=-1)``: the
shanten after each possible discard) on 14-tile hands. Half the hands are uniform draws from
the 108 tiles, half are near a win (wins, wins with a tile replaced, wins less a tile), so
neither side sees only junk.
Each batch size is called repeatedly until ``--min-time`` seconds have passed.

The reference is the PyPI ``mahjong`` package, one Python call per hand: ``Agari.is_agari``,
``Shanten.calculate_shanten(use_chiitoitsu=False, use_kokushi=False)``, and for waits 27
``is_agari`` calls per hand (what a caller of that package would do). Its inputs are converted
to 34-count lists before timing.

Single core: the process pins itself to one CPU (``os.sched_setaffinity``) and caps the BLAS /
OpenMP thread pools at one before numpy is imported. Our operations are table gathers, integer
arithmetic and reductions, which numpy runs on one thread anyway; the pinning just makes the
comparison with the single-threaded reference explicit.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def pin_to_one_core() -> str:
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity)"
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[0]})
    return f"pinned to cpu {cpus[0]} (of {len(cpus)} available)"


def random_hands(rng, n: int, size: int) -> np.ndarray:
    keys = rng.random((n, 108))
    picks = np.argpartition(keys, size - 1, axis=1)[:, :size] // 4
    out = np.zeros((n, 27), dtype=np.int8)
    np.add.at(out, (np.repeat(np.arange(n), size), picks.ravel()), 1)
    return out


def winning_hands(rng, n: int) -> np.ndarray:
    """n 14-tile standard winning hands (four sets and a pair, counts <= 4)."""
    out, have = [], 0
    while have < n:
        m = 2 * (n - have) + 16
        c = np.zeros((m, 27), dtype=np.int16)
        rows = np.arange(m)
        for _ in range(4):
            trip = rng.random(m) < 0.35
            k = rng.integers(0, 27, m)
            start = rng.integers(0, 3, m) * 9 + rng.integers(0, 7, m)
            np.add.at(c, (rows[trip], k[trip]), 3)
            for d in range(3):
                np.add.at(c, (rows[~trip], start[~trip] + d), 1)
        np.add.at(c, (rows, rng.integers(0, 27, m)), 2)
        ok = c.max(1) <= 4
        out.append(c[ok].astype(np.int8))
        have += int(ok.sum())
    return np.concatenate(out)[:n]


def remove_one(rng, c: np.ndarray) -> np.ndarray:
    c = c.copy()
    r = (rng.random(len(c)) * c.sum(1)).astype(np.int64)
    k = (np.cumsum(c, 1) <= r[:, None]).sum(1)
    c[np.arange(len(c)), k] -= 1
    return c


def add_one(rng, c: np.ndarray) -> np.ndarray:
    c = c.copy()
    rows = np.arange(len(c))
    k = rng.integers(0, 27, len(c))
    while (bad := c[rows, k] >= 4).any():
        k[bad] = rng.integers(0, 27, int(bad.sum()))
    c[rows, k] += 1
    return c


def make_hands(rng, n: int, size: int) -> np.ndarray:
    """n hands of 13 or 14 tiles, half random, half near a win, shuffled.

    Near a win: for 14 tiles, wins and wins with one tile replaced (alternately); for 13, wins
    less one tile.
    """
    half = n // 2
    near = winning_hands(rng, n - half)
    if size == 14:
        near[1::2] = add_one(rng, remove_one(rng, near[1::2]))
    else:
        near = remove_one(rng, near)
    hands = np.concatenate([random_hands(rng, half, size), near])
    return hands[rng.permutation(n)]


def rate(fn, n_items: int, min_time: float) -> float:
    """Items per second of fn(), repeating it until min_time seconds have passed."""
    fn()  # warm up
    reps, elapsed = 0, 0.0
    start = time.perf_counter()
    while elapsed < min_time:
        fn()
        reps += 1
        elapsed = time.perf_counter() - start
    return n_items * reps / elapsed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,64,4096,65536", help="batch sizes, comma separated")
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds per measurement")
    ap.add_argument("--ref-hands", type=int, default=3000, help="hands for the mahjong package")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-pin", action="store_true", help="do not pin to one core")
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args(argv)
    sizes = [int(s) if s.strip().isdecimal() else 0 for s in args.sizes.split(",") if s]
    if not sizes or min(sizes) < 1:
        ap.error(f"--sizes {args.sizes!r}: batch sizes must be integers >= 1, comma separated")
    if not 0 < args.min_time < float("inf"):  # NaN fails too
        ap.error(f"--min-time must be a finite number > 0, got {args.min_time}")
    if args.ref_hands < 1:
        ap.error(f"--ref-hands must be >= 1, got {args.ref_hands}")

    pinned = "not pinned (--no-pin)" if args.no_pin else pin_to_one_core()

    from mahjong.agari import Agari
    from mahjong.shanten import Shanten

    from zhuoji_env import hands as H

    rng = np.random.default_rng(args.seed)
    n_max = max(sizes + [args.ref_hands])
    h14 = make_hands(rng, n_max, 14)
    h13 = make_hands(rng, n_max, 13)

    ops = {
        "is_win": (h14, lambda c: H.is_win(c, 0)),
        "waits": (h13, lambda c: H.waits(c, 0)),
        "shanten": (h13, lambda c: H.shanten(c, seven_pairs=False)),
        "discards": (h14, lambda c: H.shanten_neighbours(c, -1, seven_pairs=False)),
    }
    results: dict = {"ours": {}, "mahjong": {}}
    for op, (hands, fn) in ops.items():
        results["ours"][op] = {}
        for b in sizes:
            batch = hands[0] if b == 1 else hands[:b]  # b == 1: a single [27] vector
            results["ours"][op][b] = rate(lambda fn=fn, batch=batch: fn(batch), b, args.min_time)

    # the reference, one Python call per hand, on the same hands
    n_ref = args.ref_hands
    l14 = [[int(x) for x in h] + [0] * 7 for h in h14[:n_ref]]
    l13 = [[int(x) for x in h] + [0] * 7 for h in h13[:n_ref]]
    sh = Shanten()

    def ref_is_win():
        for t in l14:
            Agari.is_agari(t)

    def ref_waits():
        for t in l13:
            for k in range(27):
                if t[k] < 4:
                    t[k] += 1
                    Agari.is_agari(t)
                    t[k] -= 1

    def ref_shanten():
        for t in l13:
            sh.calculate_shanten(t, use_chiitoitsu=False, use_kokushi=False)

    def ref_discards():
        for t in l14:
            for k in range(27):
                if t[k]:
                    t[k] -= 1
                    sh.calculate_shanten(t, use_chiitoitsu=False, use_kokushi=False)
                    t[k] += 1

    results["mahjong"] = {
        "is_win": rate(ref_is_win, n_ref, args.min_time),
        "waits": rate(ref_waits, n_ref, args.min_time),
        "shanten": rate(ref_shanten, n_ref, args.min_time),
        "discards": rate(ref_discards, n_ref, args.min_time),
    }

    # sanity: both sides agree on these hands
    ours_sh = H.shanten(h13[:n_ref], seven_pairs=False)
    ref_sh = [sh.calculate_shanten(t, use_chiitoitsu=False, use_kokushi=False) for t in l13]
    agree = bool((ours_sh == np.array(ref_sh)).all())

    info = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
        "pinning": pinned,
        "min_time_s": args.min_time,
        "ref_hands": n_ref,
        "shanten_agrees_with_mahjong": agree,
        "ready_fraction_13": float((ours_sh == 0).mean()),
        "win_fraction_14": float(H.is_win(h14[:n_ref]).mean()),
    }

    print(f"# {pinned}; numpy {np.__version__}; python {platform.python_version()}")
    print(
        f"# hands: half random, half near a win; ready fraction (13 tiles) "
        f"{info['ready_fraction_13']:.2f}, win fraction (14 tiles) {info['win_fraction_14']:.2f}; "
        f"shanten agrees with mahjong: {agree}"
    )
    head = f"{'op':<9}" + "".join(f"{'batch ' + str(b):>14}" for b in sizes)
    head += f"{'mahjong pkg':>14}{'speedup':>10}"
    print(head)
    print("-" * len(head))
    for op in ops:
        ours = results["ours"][op]
        ref = results["mahjong"][op]
        row = f"{op:<9}" + "".join(f"{ours[b]:>14,.0f}" for b in sizes)
        row += f"{ref:>14,.0f}{ours[max(sizes)] / ref:>9,.0f}x"
        print(row)
    print("(hands per second; speedup = largest batch vs the mahjong package)")
    print(
        "(mahjong 'waits' = 27 is_agari calls per hand, 'discards' = one calculate_shanten per "
        "kind held (14 tiles); its shanten excludes seven pairs and 13 orphans, like ours with "
        "seven_pairs=False)"
    )

    if args.json:
        out = {
            "hands_per_s": {
                op: {str(b): round(v, 1) for b, v in d.items()} for op, d in results["ours"].items()
            },
            "mahjong_hands_per_s": {op: round(v, 1) for op, v in results["mahjong"].items()},
            **info,
        }
        print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
