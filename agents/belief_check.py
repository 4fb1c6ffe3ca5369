"""How true is the belief? The other seats' readiness and the danger of discards in real play,
against the sampled deals'.

    python -m agents.belief_check --base ppo-guiyang --improve 0,1,1.5 --tables 64 --steps 160

BASE plays every seat of --tables games (BatchGame, --seed) for --steps steps. At every
--every-th step the public view of each game's acting seat is sampled --k times for each value
of --improve (zhuoji_env.belief.sample; 0 is the uniform belief). Every other seat that holds
3k+1 concealed tiles is graded by the shanten of its hand, the real one and each sampled one:
ready (听, shanten 0) or one tile from it (shanten 1). The table gives the shares by the number
of discards in that seat's river, the real hands first: a belief that is true to the others'
play matches them.

The second table is about what search needs to know: at the same steps, wherever the acting
seat is to discard, each kind it may discard is dangerous if another seat may win (胡) on it, as
the engine offers that win (zhuoji_env.engine.core.claim_options). A belief predicts that
danger by the share of its deals in which it is so. For each improve the table gives the mean
prediction beside the real share, the Brier score (mean squared error) beside that of always
predicting the real share, and the AUC: the chance that a dangerous tile is predicted more
dangerous than a safe one (ties count half; 0.5 is no better than chance; n/a, with the reason,
where no tile was dangerous or none was safe).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy import stats
from tqdm import tqdm

from agents.base import Agent
from agents.registry import make_agent
from zhuoji_env import belief, hands
from zhuoji_env.engine import BatchGame, core
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.state import OPT_HU, TURN, State
from zhuoji_env.limits import SizeError, check_memory, exits_2_when_out_of_memory
from zhuoji_env.observation import encode
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import NUM_KINDS

BUCKETS = [0, 2, 5, 8, 12, 10_000]
"""Edges of the river-length buckets: 0-1, 2-4, 5-7, 8-11 and 12 or more discards."""


HELD_KINDS = 14
"""The most kinds a seat to discard holds: the danger rows a table adds per sample and source."""
ROW_BYTES = 64
"""Bytes a row of the readiness or danger table takes as it is gathered and then joined (its
numbers, its source's label, the concatenated copy)."""


def grades(
    tables: int,
    steps: int,
    every: int,
    k: int,
    improve: list[float],
    player: Agent,
    rules: Rules,
    seed: int,
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``player`` in every seat. Readiness: one row per (other seat graded, hand), its river
    length, the hand's source (``real`` or ``improve=A``) and its shanten. Danger: one row per
    (acting seat to discard, kind it holds, source), whether it is really dangerous and the
    source's prediction (the real hands' is the fact itself)."""
    n = rules.num_players
    kept = HELD_KINDS * (1 + len(improve)) + (n - 1) * (1 + k * len(improve))
    check_memory(
        f"--steps {steps} sampled every {every} at {tables} tables with k={k}",
        -(-steps // every) * tables * kept * ROW_BYTES,
    )
    game = BatchGame(rules, batch_size=tables, seed=seed)
    rng = np.random.default_rng(seed)
    g = np.arange(tables)
    parts, danger = [], []
    for step in tqdm(range(steps), disable=not progress, desc="steps"):
        st = game.state
        obs = encode(st, g, st.actor)
        if step % every == 0:
            view = belief.public_view(st)
            drawn = {a: belief.sample(game.rules, view, k, rng, improve=a) for a in improve}
            games, kinds = held_discards(st)
            real = dangerous(game.rules, st, games, kinds)
            danger.append(("real", real, real.astype(float)))
            for a, s in drawn.items():
                deals = games[:, None] * k + np.arange(k)  # the k samples of each game
                sampled = dangerous(game.rules, s, deals, kinds[:, None])
                danger.append((f"improve={a:g}", real, sampled.mean(1)))
            for q in range(n):
                rows = np.flatnonzero((st.actor != q) & (st.hand[:, q].sum(-1) % 3 == 1))
                river = st.river_len[rows, q]
                parts.append(("real", river, hands.shanten(st.hand[rows, q])))
                for a, s in drawn.items():
                    hand = s.hand.reshape(tables, k, n, -1)[rows, :, q]
                    parts.append(
                        (f"improve={a:g}", np.repeat(river, k), hands.shanten(hand).ravel())
                    )
        game.step(player.act(obs, st.mask))
    readiness = pd.DataFrame(
        {
            "river": np.concatenate([p[1] for p in parts]),
            "hands": np.concatenate([np.full(len(p[1]), p[0]) for p in parts]),
            "shanten": np.concatenate([p[2] for p in parts]),
        }
    )
    danger_df = pd.DataFrame(
        {
            "hands": np.concatenate([np.full(len(d[1]), d[0]) for d in danger]),
            "real": np.concatenate([d[1] for d in danger]),
            "predicted": np.concatenate([d[2] for d in danger]),
        }
    )
    return readiness, danger_df


def held_discards(st: State) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, kinds)``, int ``[P]`` each: the games whose acting seat is to discard (its
    turn, a discard legal) and each kind it may discard there."""
    turn = (st.phase == TURN)[:, None]
    return np.nonzero(turn & st.mask[:, A.DISCARD : A.DISCARD + NUM_KINDS])


def dangerous(rules: Rules, st: State, rows: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """bool, ``rows``' shape: whether another seat of game ``rows`` may win on its acting
    seat's discard of ``kinds`` (broadcast against ``rows``), as the engine offers that win."""
    rows, kinds = np.broadcast_arrays(rows, kinds)
    g, t = rows.ravel(), kinds.ravel().astype(np.int64)
    _, opts = core.claim_options(rules, st, g, st.actor[g].astype(np.int64), t, rob=False)
    return ((opts & OPT_HU) > 0).any(1).reshape(rows.shape)


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Shares ready / one from ready (percent) by river bucket (rows) and source (columns), and
    the real hands counted in each bucket."""
    labels = [
        f"{lo}-{hi - 1}" if hi < BUCKETS[-1] else f"{lo}+"
        for lo, hi in zip(BUCKETS, BUCKETS[1:], strict=False)
    ]
    df = df.assign(discards=pd.cut(df.river, BUCKETS, right=False, labels=labels))
    grouped = df.groupby(["discards", "hands"], observed=True).shanten
    cell = grouped.agg(lambda s: f"{100 * (s <= 0).mean():.1f}% / {100 * (s == 1).mean():.0f}%")
    out = cell.unstack("hands")
    order = ["real"] + [c for c in out.columns if c != "real"]
    out = out[order]
    out.insert(0, "real hands", df[df.hands == "real"].groupby("discards", observed=True).size())
    return out


def danger_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per belief (rows): its mean predicted danger and the real share (percent), its Brier
    score and that of always predicting the real share, and its AUC (n/a, with the reason,
    where no tile was dangerous or none was safe)."""
    real = df[df.hands == "real"].real.to_numpy()
    rate = real.mean() if real.size else float("nan")
    out = {}
    for source, part in df[df.hands != "real"].groupby("hands", sort=False):
        y, p = part.real.to_numpy(), part.predicted.to_numpy()
        if not y.any():
            auc = "n/a (no tile was dangerous)"
        elif y.all():
            auc = "n/a (no tile was safe)"
        else:
            auc = f"{stats.mannwhitneyu(p[y], p[~y]).statistic / (y.sum() * (~y).sum()):.3f}"
        out[source] = {
            "predicted": f"{100 * p.mean():.1f}%",
            "real": f"{100 * rate:.1f}%",
            "Brier": f"{np.mean((p - y) ** 2):.4f}",
            "Brier of the real share": f"{rate * (1 - rate):.4f}",
            "AUC": auc,
        }
    table_ = pd.DataFrame(out).T
    table_.index.name = "belief"
    return table_


def improve_values(text: str) -> list[float]:
    """An argparse type: comma-separated ``improve`` values (:func:`belief.valid_improve`),
    each once."""
    try:
        values = [float(a) for a in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(belief.valid_improve(a) for a in values):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give comma-separated numbers in [0, {belief.IMPROVE_MAX}], e.g. 0,1"
        )
    twice = sorted({a for a in values if values.count(a) > 1})
    if twice:
        raise argparse.ArgumentTypeError(
            f"{text!r}: improve={twice[0]:g} is given twice; give each value once, e.g. 0,1"
        )
    return values


@exits_2_when_out_of_memory("python -m agents.belief_check")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agents.belief_check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--base", default="ppo-guiyang", help="the players, any agent spec (default ppo-guiyang)"
    )
    parser.add_argument(
        "--improve",
        type=improve_values,
        default="0,1",
        help="comma-separated improve values, each once (default 0,1)",
    )
    parser.add_argument("--tables", type=int, default=64, help="games played (default 64)")
    parser.add_argument(
        "--steps", type=int, default=160, help="steps BASE plays at every table (default 160)"
    )
    parser.add_argument(
        "--every", type=int, default=4, help="sample at every N-th step (default 4)"
    )
    parser.add_argument("--k", type=int, default=8, help="samples per view (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="the deals' seed (default 0)")
    parser.add_argument("--preset", default="guiyang", help="rules preset (default guiyang)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    for name in ("tables", "steps", "every", "k"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.seed < 0:
        parser.error(f"--seed must be a non-negative integer, got {args.seed}")
    try:
        rules = Rules.make(args.preset)
        player = make_agent(args.base, seed=args.seed, rules=rules)
    except ValueError as exc:
        parser.error(str(exc))
    try:  # only a batch too large for this machine is the caller's; other errors are bugs
        readiness, danger = grades(
            args.tables,
            args.steps,
            args.every,
            args.k,
            args.improve,
            player,
            rules,
            args.seed,
            progress=not args.no_progress,
        )
    except SizeError as exc:
        parser.error(str(exc))
    print("ready / one from ready, by discards in the other seat's river")
    print(table(readiness).to_string())
    judged = int((danger.hands == "real").sum())
    print(f"\ndanger of the tiles the acting seat may discard ({judged})")
    print(danger_table(danger).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
