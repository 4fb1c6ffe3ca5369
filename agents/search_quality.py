"""How good are a search's choices? Their gain over BASE's favourite, judged by fresh rollouts.

    python -m agents.search_quality --base ppo-guiyang --settings "leaf=0:k=16;leaf=2:k=32:z=0" \\
        --truth 256 --tables 16 --steps 70 --seed 13

BASE plays every seat of --tables games (BatchGame, --seed) for --steps steps. At each decision
the search would take up (more than one legal action, BASE's favourite below --unsure), a judge
scores each of BASE's --c most likely actions on --truth fresh deals played to the end of the
hand: its mean settlement less the favourite's. Every setting (search:BASE options, see
agents.search; settings separated by ';') picks among the same candidates, each on its own
deals: among the first c of them where it sets c= (at most --c), and only where BASE's
favourite is below its own unsure= (at most --unsure), else it keeps the favourite (a setting
without c= or unsure= takes the run's, not the agent's defaults). A setting's gain is the
judged difference at the candidate it picked (0 where it kept the favourite), averaged over all
the run's decisions (so settings that search different decisions compare per decision of the
game), with a 95% interval over them, clustered by table (a table's decisions are of the same
games; the intervals of docs/search.md before 2026-12-06 treated every decision as
independent); the judge's deals are independent of the settings', so a
pick that won on its own noisy deals (the winner's curse) is not credited for it. The gain is
measured under a model (the uniform belief, for every BASE, and BASE in every seat), not
against real opponents: an arena (agents.arena) measures that. With --judge real the judge
plays each candidate from copies of the real game instead (the others' real hands and the real
wall, only BASE's own choices random): what a candidate is worth in the game being played, with
BASE in every seat, which judges a belief (improve=) by the hands the others really hold. ms is
each setting's time per decision it searched. --json FILE (never over a file, unless --force)
writes the table, the judge (belief or real), and every decision's candidates (action indices,
BASE's favourite first), judged differences, BASE's probability of its favourite (1 for a
BASE without probabilities) and the table it was made at; an undefined number (an interval
from decisions at one table) is null.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from agents.arena import clustered_mean_ci, json_text, output_refusal
from agents.registry import make_agent
from agents.search import (
    _LIMITS,
    DEFAULTS,
    VALUE_DEFAULTS,
    SearchAgent,
    parse_spec,
    ranking_probs,
    rollout_groups,
)
from zhuoji_env import belief
from zhuoji_env.engine import BatchGame
from zhuoji_env.fileio import write_text_atomic
from zhuoji_env.limits import check_memory, exits_2_when_out_of_memory
from zhuoji_env.observation import encode


def settings(text: str, base: str, c: int, unsure: float) -> list[tuple[str, dict]]:
    """``"k=16;leaf=2:z=0"`` -> ``[(label, options)]``, each checked by ``parse_spec``; ``""`` is
    one setting of the defaults. A setting's ``c`` and ``unsure`` narrow the run's (``c``,
    ``unsure``): they may not exceed them, as the judge scores only the run's candidates at the
    run's decisions. An empty setting among others, and a setting given twice, are refused."""
    parts = [part.strip() for part in text.split(";")]
    out: list[tuple[str, dict]] = []
    for i, part in enumerate(parts, 1):
        if not part and len(parts) > 1:
            raise ValueError(
                f"--settings {text!r}: setting {i} is empty; give OPTION=VALUE[:OPTION=VALUE]... "
                "between the ';', or --settings '' for one setting of the defaults"
            )
        got, opts = parse_spec(f"{base}:{part}") if part else (base, {})
        if got != base:
            raise ValueError(
                f"--settings: setting {part!r}: {got.rpartition(':')[2]!r} is not OPTION=VALUE"
            )
        for name, most in (("c", c), ("unsure", unsure)):
            if opts.get(name, most) > most:
                raise ValueError(
                    f"setting {part!r}: {name}={opts[name]:g} is above the run's --{name} "
                    f"{most:g}, and the judge scores only the run's candidates and decisions"
                )
        full = {"c": c, "unsure": unsure, **opts}
        same = [label for label, other in out if other == full]
        if same:
            what = (
                "given twice"
                if same[0] == part
                else f"the same as {same[0]!r} (a setting without c= or unsure= takes the run's)"
            )
            raise ValueError(f"--settings: setting {part!r} is {what}; give each setting once")
        out.append((part or "defaults", full))
    return out


def make_judge(player, rules, truth: int, c: int, unsure: float, seed: int) -> SearchAgent:
    """The judge: the run's decisions (``unsure``) and candidates (``c``), each scored on
    ``truth`` deals played to the end of the hand (``leaf=0``, whatever BASE's default: a value
    leaf would judge the settings by the model they search with), drawn from the uniform belief
    (``improve=0``, whatever BASE's default), so that the judge is the same for every BASE."""
    return SearchAgent(
        player, rules=rules, k=truth, c=c, unsure=unsure, leaf=0, improve=0.0, seed=seed
    )


def run(
    base: str,
    specs: list[tuple[str, dict]],
    truth: int,
    tables: int,
    steps: int,
    seed: int,
    c: int,
    unsure: float,
    preset: str,
    progress: bool = False,
    real: bool = False,
) -> dict:
    """Play and judge (module docstring); returns the table and the judged differences."""
    per_step = 2 * (16 * c + 16 + 8 * len(specs))  # judged, candidates, picks; joined at the end
    check_memory(f"--steps {steps} at {tables} tables", steps * tables * per_step)
    game = BatchGame(preset, batch_size=tables, seed=seed)
    seeds = np.random.SeedSequence(seed).spawn(len(specs) + 2)
    own = lambda i: int(seeds[i].generate_state(1)[0])  # noqa: E731
    player = make_agent(base, seed=own(0), rules=game.rules)
    judge = make_judge(player, game.rules, truth, c, unsure, own(1))
    agents = [
        SearchAgent(player, rules=game.rules, seed=own(i + 2), **opts)
        for i, (_, opts) in enumerate(specs)
    ]
    picks: list[list[np.ndarray]] = [[] for _ in specs]
    seconds, searched = np.zeros(len(specs)), np.zeros(len(specs), dtype=np.int64)
    judged, favourite, cands, where, g = [], [], [], [], np.arange(tables)
    for _ in tqdm(range(steps), disable=not progress, desc="steps"):
        st = game.state
        obs, mask = encode(st, g, st.actor), st.mask.astype(bool)
        ask, probs = judge.to_search(obs, mask)
        rows = np.flatnonzero(ask)
        if rows.size:
            has_probs = probs is not None
            probs = ranking_probs(player, obs, mask) if probs is None else probs
            cand = judge.candidates(obs[rows], mask[rows], probs[rows])
            top = probs[rows].max(1) if has_probs else np.ones(rows.size)
            favourite.append(top)
            cands.append(cand)
            where.append(rows)
            full = belief.public_view(st)
            for part in rollout_groups(cand, truth):
                r = rows[part]
                if real:
                    scores = judge.score(st.take(np.repeat(r, truth)), obs[r], cand[part], truth)
                else:
                    scores = judge.evaluate(full.take(r), obs[r], cand[part])
                mean = scores.mean(1)
                judged.append(mean - mean[:, :1])
            for i, agent in enumerate(agents):
                mine = np.flatnonzero(top < agent.unsure) if has_probs else np.arange(rows.size)
                pick = np.zeros(rows.size, dtype=np.int64)
                start = time.perf_counter()
                if mine.size:
                    pick[mine] = agent.pick(full, obs, rows[mine], cand[mine, : agent.c])
                seconds[i] += time.perf_counter() - start
                searched[i] += mine.size
                picks[i].append(pick)
        game.step(player.act(obs, mask))
    diff = np.concatenate(judged) if judged else np.zeros((0, c))
    table = np.concatenate(where) if where else np.zeros(0, dtype=np.int64)
    rows_out = []
    for (label, _), pick, secs, n in zip(specs, picks, seconds, searched, strict=True):
        p = np.concatenate(pick) if pick else np.zeros(0, dtype=np.int64)
        gain = diff[np.arange(len(p)), p]
        _, lo, hi = clustered_mean_ci(gain, table)
        ci = None if np.isnan(lo) else [lo, hi]
        rows_out.append(
            {
                "setting": label,
                "decisions": len(p),
                "searched": int(n),
                "overruled": float(np.mean(p > 0)) if len(p) else float("nan"),
                "gain": float(gain.mean()) if len(p) else float("nan"),
                "ci": ci,
                "ms": 1000 * secs / max(n, 1),
                "picks": p.tolist(),
            }
        )
    top = np.concatenate(favourite) if favourite else np.zeros(0)
    return {
        "base": base,
        "judge": "real" if real else "belief",
        "truth": truth,
        "rows": rows_out,
        "judged": diff.tolist(),
        "candidates": (np.concatenate(cands) if cands else np.zeros((0, c), int)).tolist(),
        "favourite": top.tolist(),
        "tables": table.tolist(),
    }


@exits_2_when_out_of_memory("python -m agents.search_quality")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agents.search_quality",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--base", default="ppo-guiyang", help="BASE, any agent spec (default ppo-guiyang)"
    )
    parser.add_argument(
        "--settings",
        default="",
        help="search options per setting, ';'-separated (default: one setting, the defaults)",
    )
    parser.add_argument(
        "--truth", type=int, default=256, help="the judge's deals per decision (default 256)"
    )
    parser.add_argument("--tables", type=int, default=16, help="games played (default 16)")
    parser.add_argument(
        "--steps", type=int, default=70, help="steps BASE plays at every table (default 70)"
    )
    parser.add_argument(
        "--c",
        type=int,
        default=DEFAULTS["c"],
        help=f"candidates per decision (default {DEFAULTS['c']})",
    )
    parser.add_argument(
        "--unsure",
        type=float,
        default=VALUE_DEFAULTS["unsure"],
        help="decisions where BASE's favourite's probability is below this are judged "
        f"(default {VALUE_DEFAULTS['unsure']})",
    )
    parser.add_argument("--seed", type=int, default=0, help="the deals' seed (default 0)")
    parser.add_argument("--preset", default="guiyang", help="rules preset (default guiyang)")
    parser.add_argument(
        "--judge",
        choices=("belief", "real"),
        default="belief",
        help="the judge's deals: sampled from the seat's view (belief, the default) or the real "
        "game (real)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help="write the results to this file (never over a file, unless --force)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing --json FILE")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        for name in ("truth", "tables", "steps"):
            if getattr(args, name) < 1:
                raise ValueError(f"--{name} must be at least 1, got {getattr(args, name)}")
        for name, option in (("truth", "k"), ("c", "c")):
            low, high = _LIMITS[option]
            if not low <= getattr(args, name) <= high:
                raise ValueError(f"--{name} must be in {low}-{high}, got {getattr(args, name)}")
        if not 0 < args.unsure <= 1:
            raise ValueError(f"--unsure must be in (0, 1], got {args.unsure:g}")
        if args.seed < 0:
            raise ValueError(f"--seed must be a non-negative integer, got {args.seed}")
        refusal = args.json and output_refusal("--json", str(args.json), args.force)
        if refusal:
            raise ValueError(refusal)
        specs = settings(args.settings, args.base, args.c, args.unsure)
        out = run(
            args.base,
            specs,
            args.truth,
            args.tables,
            args.steps,
            args.seed,
            args.c,
            args.unsure,
            args.preset,
            progress=not args.no_progress,
            real=args.judge == "real",
        )
    except ValueError as exc:
        parser.error(str(exc))
    head = ("setting", "decisions", "searched", "overruled", "gain", "95% CI", "ms")
    print("{:28s} {:>9s} {:>8s} {:>9s} {:>8s} {:>18s} {:>7s}".format(*head))
    for r in out["rows"]:
        ci = f"[{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}]" if r["ci"] else "-"
        print(
            f"{r['setting']:28s} {r['decisions']:9d} {r['searched']:8d} {r['overruled']:9.3f} "
            f"{r['gain']:+8.3f} {ci:>18s} {r['ms']:7.1f}"
        )
    if args.json:
        write_text_atomic(args.json, json_text(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
