"""A rated ladder: ``python -m agents.ladder --agents random,greedy,rule,ppo-guiyang``.

Every pair of agents plays a duplicate arena (:func:`agents.arena.run_arena`: the same deals
for every pair, every seating of the two over the four seats), and one **rating** per agent is
fitted to the pairs' paired margins: ``margin(a - b) ≈ rating[a] - rating[b]`` by least squares,
each pair weighted by the inverse variance of its mean margin, with ``random`` anchored at 0.
A rating is therefore in the preset's own unit (points per hand; 番 per hand for ``classic``)
above ``random``; a difference of two ratings is the margin the fit predicts for those two
agents, which their own pair's margin may miss by more than its interval where the chi-square
is far above its degrees of freedom (as in the published ladders): quote a pair's own margin
for a head-to-head claim. The 95% intervals come from a bootstrap over deals: the deals are
resampled together for every pair (they are the same deals, so the pairs' errors correlate),
and the fit is redone on each resample.

Why this fit rather than Elo or TrueSkill: the arena measures margins in points, which are
additive and nearly Gaussian over many deals; Elo and TrueSkill reduce each game to a win or a
loss, discard how much was won, and depend on the order the games are fed in. The least-squares
fit of paired margins is the maximum-likelihood rating under Gaussian noise (the Thurstone
model for continuous outcomes; with two agents it is just their margin). How well one number
per agent explains the pairs is reported too: each pair's residual (observed minus predicted
margin) and a chi-square of them, large when the agents are not transitive.

A **protocol** fixes everything but the agents, so two papers' numbers compare:
``--protocol zhuoji-bench-v1`` (:data:`PROTOCOLS`) is 4 players, 2,000 deals per pair of seed
4001, every seating (``permute``), bootstrap of 2,000 resamples, ``random`` at 0, with random,
greedy, rule and the preset's shipped policy always in the field, played under the portable
numeric mode (:func:`zhuoji_env.machine.portable_settings`: the same games on every x86-64 CPU
with AVX2; ``--portable`` asks for it without a protocol).

**Joining a published ladder.** A new agent joins with ``--plugin MODULE|FILE.py --agents mine
--reuse LADDER.json`` (the plugin registers ``mine`` with :func:`agents.register_agent`).
Every agent of the reused ladder is rated again, none left out; its pairs are reused where
they were played under the same protocol by the same agents (the network each plays, a
shipped policy's, a checkpoint's or a search agent's BASE's, must have the same sha256:
:func:`fingerprint`), pairs it did not play are not played, and its ratings and intervals are
**held** as it publishes them: the fit is done in stages (:func:`fit_ladder`), the reused
agents' from their own pairs, which reproduces the published numbers (checked, then taken as
written), and the new agents' from their pairs with the published ratings held. A full refit of
all pairs together is shown beside them, and ``--refit`` makes it the table's ratings instead,
saying how far the published ones moved. ``--quick DEALS`` is the trial route: the joining
agents play DEALS deals a pair, and the table and JSON say the result is not comparable with
the published ratings (such a JSON is refused by ``--reuse``). ``--versus A,B`` plays only the
pairs with A or B in them (the reused pairs are fitted all the same): an expensive agent can
be rated from some of its pairs, as long as they connect it to the rated ones.
``--device cuda`` runs the policy networks on a GPU (:func:`agents.registry.on_device`),
under the same labels.

Output: the table in Markdown on stdout, ``--json FILE`` (format ``zhuoji-ladder-1``, with the
versions it was played under, :func:`zhuoji_env.versions.stamp`, every pair's per-deal score sums
so that a later run can reuse them, each agent's fit stage, and, after ``--reuse``, what was held,
reused, played and left out; ``--reuse`` refuses a file of another environment version, and takes
one without ``versions`` as one of this version) and ``--markdown FILE``; neither is written over
an existing file without ``--force``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import itertools
import json
import math
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.arena import (
    FIELD_INDEX,
    check_agents,
    check_device,
    check_labels,
    import_plugins,
    integer_at_least,
    mean_ci,
    portable_or_restart,
    run_arena,
    standard_json,
    unwritable,
)
from agents.base import DEVICES
from agents.registry import SHIPPED_POLICIES, make_agent, on_devices, split_specs
from zhuoji_env.commands import prog
from zhuoji_env.engine.game import is_integer, is_real
from zhuoji_env.fileio import write_text_atomic
from zhuoji_env.limits import check_memory, exits_2_when_out_of_memory
from zhuoji_env.machine import is_portable
from zhuoji_env.rules import Rules, parse_switches
from zhuoji_env.versions import ENVIRONMENT, check_stamp, stamp

FORMAT = "zhuoji-ladder-1"
ANCHOR = "random"


@dataclass(frozen=True)
class Protocol:
    """Everything a ladder fixes except the agents it rates."""

    presets: tuple[str, ...]  # the presets the protocol is played under, one ladder each
    deals: int  # deals per pair
    seed: int  # the arena seed: every pair plays deals 0..deals-1 of it
    seating: str  # the arena's seating mode
    num_players: int  # seats at the table
    field: tuple[str, ...]  # agents always rated; "{preset}" names the preset
    bootstrap: int  # bootstrap resamples of the deals for the intervals


PROTOCOLS = {
    "zhuoji-bench-v1": Protocol(
        presets=("guiyang", "app", "classic"),
        deals=2000,
        seed=4001,
        seating="permute",
        num_players=4,
        field=("random", "greedy", "rule", "ppo-{preset}"),
        bootstrap=2000,
    )
}
"""Named protocols (module docstring). A protocol is never changed once published: a new one
gets a new name."""


# --------------------------------------------------------------------------- the fit
def design(pairs: Sequence[tuple[int, int]], num_agents: int) -> np.ndarray:
    """float ``[P, A]``: row ``p`` is +1 at the pair's first agent and -1 at its second, so
    ``design @ ratings`` is each pair's predicted margin (first minus second)."""
    x = np.zeros((len(pairs), num_agents))
    for p, (a, b) in enumerate(pairs):
        x[p, a] += 1.0
        x[p, b] -= 1.0
    return x


def fit_ratings(
    pairs: Sequence[tuple[int, int]],
    margins: np.ndarray,
    variances: np.ndarray,
    num_agents: int,
    anchor: int,
    known: dict[int, float] | None = None,
) -> np.ndarray:
    """Ratings ``[A]`` with ``ratings[anchor] == 0`` and ``ratings[k] == known[k]`` (held),
    the others minimising ``sum_p (margins[p] - (r[a_p] - r[b_p]))**2 / variances[p]``.

    The pairs must connect every other agent to the anchor or to a held agent (else the
    ratings are not determined)."""
    x = design(pairs, num_agents)
    fixed = {anchor: 0.0, **(known or {})}
    free = [a for a in range(num_agents) if a not in fixed]
    w = 1.0 / np.sqrt(np.maximum(np.asarray(variances, dtype=np.float64), 1e-12))
    target = np.asarray(margins, dtype=np.float64)
    if known:  # the held agents' part of each margin is known
        target = target - x[:, list(fixed)] @ np.array(list(fixed.values()))
    sol, _, rank, _ = np.linalg.lstsq(x[:, free] * w[:, None], target * w, rcond=None)
    if rank < len(free):
        raise ValueError(
            "the pairs do not connect every agent to the anchor (or to an agent whose rating "
            "is held)"
        )
    out = np.zeros(num_agents)
    out[free] = sol
    for k, rating in fixed.items():
        out[k] = rating
    return out


@dataclass
class PairResult:
    """One pair's arena, as the ladder keeps it: per deal, each agent's score sum and hands."""

    a: str  # label of the first agent
    b: str  # label of the second agent
    score_a: np.ndarray  # int64 [D]: a's total score in the deal (all its seats and seatings)
    score_b: np.ndarray  # int64 [D]
    hands_a: np.ndarray  # int64 [D]: a's seat-hands in the deal
    hands_b: np.ndarray  # int64 [D]
    seconds: float = 0.0  # wall time of its arena (a reused pair keeps the time it was played in)
    reused: bool = False
    chunk_games: int | None = None  # the arena's games per batch (None: not recorded)
    machine: dict[str, Any] | None = None  # zhuoji_env.machine.describe() where it was played

    def played_with(self) -> dict[str, Any]:
        """Where and how it was played, where recorded (pairs played by older versions lack it)."""
        out: dict[str, Any] = {}
        if self.chunk_games is not None:
            out["chunk_games"] = self.chunk_games
        if self.machine is not None:
            out["machine"] = self.machine
        return out

    def check(self) -> None:
        """Refuse (``ValueError`` naming the pair) what no arena plays: labels that are not
        two different non-empty strings, per-deal sums that are not equally long 1-D integer
        arrays of at least one deal, a deal without hands (its margin would divide by 0), hands
        that differ between the agents or the deals, or a deal whose scores are not zero-sum."""
        for key in ("a", "b"):
            label = getattr(self, key)
            if not isinstance(label, str) or not label:
                raise ValueError(
                    f"pair {self.a} - {self.b}: {key} is {label!r}, not a label (a non-empty "
                    "string)"
                )
        if self.a == self.b:
            raise ValueError(f"pair {self.a} - {self.b}: an agent is not paired with itself")
        arrays = [getattr(self, k) for k in SUMS]
        if not all(isinstance(v, np.ndarray) and v.dtype.kind in "iu" for v in arrays):
            raise ValueError(
                f"pair {self.a} - {self.b}: {', '.join(SUMS)} must be numpy integer arrays"
            )
        if len({v.shape for v in arrays}) != 1 or arrays[0].ndim != 1:
            raise ValueError(f"pair {self.a} - {self.b}: per-deal lists differ")
        if not arrays[0].size:
            raise ValueError(f"pair {self.a} - {self.b}: no deals")
        if (self.hands_a < 1).any() or (self.hands_b < 1).any():
            raise ValueError(f"pair {self.a} - {self.b}: a deal without hands")
        if (self.hands_a != self.hands_b).any() or (self.hands_a != self.hands_a[0]).any():
            raise ValueError(
                f"pair {self.a} - {self.b}: hands_a and hands_b must be one number for every "
                "deal (each deal is played in the same seatings, fair to both agents)"
            )
        unpaid = np.flatnonzero(self.score_a + self.score_b)
        if unpaid.size:
            raise ValueError(
                f"pair {self.a} - {self.b}: deal {int(unpaid[0])}'s scores do not sum to 0 (every "
                "seat is one of the two agents', and a hand is zero-sum)"
            )

    def per_deal(self) -> np.ndarray:
        """float ``[D]``: the paired margin ``a - b`` of each deal (points per hand)."""
        return self.score_a / self.hands_a - self.score_b / self.hands_b

    def to_json(self) -> dict[str, Any]:
        m, lo, hi = mean_ci(self.per_deal())
        return {
            "a": self.a,
            "b": self.b,
            "deals": int(self.score_a.size),
            "margin": m,
            "ci95": [lo, hi],
            "sd_per_deal": float(self.per_deal().std(ddof=1)),
            "seconds": round(self.seconds, 1),
            "score_a": self.score_a.tolist(),
            "score_b": self.score_b.tolist(),
            "hands_a": self.hands_a.tolist(),
            "hands_b": self.hands_b.tolist(),
            **self.played_with(),
        }

    def swapped(self) -> PairResult:
        """The same games seen from ``b``'s side."""
        return dataclasses.replace(
            self,
            a=self.b,
            b=self.a,
            score_a=self.score_b,
            score_b=self.score_a,
            hands_a=self.hands_b,
            hands_b=self.hands_a,
        )

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> PairResult:
        """A pair as :meth:`to_json` wrote it (a reused pair); malformed fields are refused
        (``ValueError`` naming the pair and the field), never rounded or converted."""
        if not isinstance(row, dict):
            raise ValueError(f"a pair must be a JSON object, got {type(row).__name__}")
        missing = [k for k in ("a", "b", *SUMS) if k not in row]
        if missing:
            raise ValueError(
                f"pair {row.get('a')} - {row.get('b')}: no {', '.join(map(repr, missing))}"
            )
        arrays = {k: _per_deal_sums(row, k) for k in SUMS}
        seconds = row.get("seconds", 0.0)
        if (
            not isinstance(seconds, (int, float))
            or isinstance(seconds, bool)
            or not math.isfinite(seconds)
            or seconds < 0
        ):
            raise ValueError(f"pair {row.get('a')} - {row.get('b')}: seconds {seconds!r}")
        chunk = row.get("chunk_games")
        if chunk is not None and (type(chunk) is not int or chunk < 1):
            raise ValueError(f"pair {row.get('a')} - {row.get('b')}: chunk_games {chunk!r}")
        machine = row.get("machine")
        if machine is not None and not isinstance(machine, dict):
            raise ValueError(f"pair {row.get('a')} - {row.get('b')}: machine {machine!r}")
        pair = cls(
            row["a"],
            row["b"],
            seconds=float(seconds),
            reused=True,
            chunk_games=chunk,
            machine=machine,
            **arrays,
        )
        pair.check()
        return pair


SUMS = ("score_a", "score_b", "hands_a", "hands_b")
INT64 = np.iinfo(np.int64)


def _per_deal_sums(row: dict[str, Any], key: str) -> np.ndarray:
    """int64 ``[D]`` of a pair's list ``row[key]``: every entry an integer in int64's range
    (a float such as 1.9 or a string is refused, not truncated or parsed)."""
    values = row[key]
    if not isinstance(values, list):
        raise ValueError(
            f"pair {row.get('a')} - {row.get('b')}: {key} must be a list of integers, one per "
            f"deal, got {type(values).__name__}"
        )
    for d, x in enumerate(values):
        if not is_integer(x) or not INT64.min <= x <= INT64.max:
            raise ValueError(
                f"pair {row.get('a')} - {row.get('b')}: {key}[{d}] is {x!r}: the per-deal "
                "sums must be integers (64-bit)"
            )
    return np.array(values, dtype=np.int64)


@dataclass
class Ladder:
    """Ratings fitted to the pairs (module docstring)."""

    labels: list[str]
    specs: list[str]
    pairs: list[PairResult]
    anchor: str
    ratings: np.ndarray  # float [A]
    ci95: np.ndarray  # float [A, 2]: bootstrap percentiles
    bootstrap: int
    stages: list[int]  # per agent: the stage it was fitted in (fit_ladder)

    def predicted(self, a: str, b: str) -> float:
        return float(self.ratings[self.labels.index(a)] - self.ratings[self.labels.index(b)])

    def residuals(self) -> list[float]:
        return [float(p.per_deal().mean()) - self.predicted(p.a, p.b) for p in self.pairs]

    def chi2(self) -> tuple[float, int]:
        """Sum of squared standardised residuals, and its degrees of freedom (pairs - agents
        + 1): about dof when one rating per agent explains every pair."""
        z = [
            r / (p.per_deal().std(ddof=1) / math.sqrt(p.per_deal().size))
            for r, p in zip(self.residuals(), self.pairs, strict=True)
        ]
        return float(np.sum(np.square(z))), len(self.pairs) - len(self.labels) + 1

    def order(self) -> list[int]:
        return sorted(range(len(self.labels)), key=lambda i: -self.ratings[i])

    def markdown(
        self,
        title: str = "",
        unit: str = "points per hand",
        rated: Sequence[str] | None = None,
        compare: tuple[str, dict[str, float]] | None = None,
        notes: Sequence[str] = (),
        best_responses: dict[str, dict[str, Any]] | None = None,
    ) -> str:
        """The ratings, then every pair's own margin (row minus column): one number per agent
        can be a poor summary (the chi-square says how poor), so the pairs are shown too.
        ``rated``: per agent, where its rating comes from (a column); ``compare``: a column's
        heading and other ratings by label (a reused ladder's as published, or a full refit);
        ``notes``: paragraphs after the ratings; ``best_responses``: by agent spec, what a learned
        best response wins from it (:func:`read_best_response`), a column when given."""
        lines = [f"#### {title}", ""] if title else []
        head = f"| rank | agent | rating ({unit}, {self.anchor} = 0) | 95% interval |"
        rule = "|---:|---|---:|---|"
        if rated is not None:
            head, rule = head + " rated |", rule + "---|"
        if compare is not None:
            head, rule = head + f" {compare[0]} |", rule + "---:|"
        if best_responses:
            head, rule = head + " best-response margin (budget) |", rule + "---|"
        lines += [head, rule]
        for rank, i in enumerate(self.order(), 1):
            lo, hi = self.ci95[i]
            ci = f"[{lo:+.2f}, {hi:+.2f}]" if self.bootstrap else "n/a (no bootstrap)"
            row = f"| {rank} | `{self.labels[i]}` | {self.ratings[i]:+.2f} | {ci} |"
            if rated is not None:
                row += f" {rated[i]} |"
            if compare is not None:
                other = compare[1].get(self.labels[i])
                row += f" {other:+.2f} |" if other is not None else " |"
            if best_responses:
                found = best_responses.get(self.specs[i])
                row += f" {best_response_text(found) if found else 'not measured'} |"
            lines.append(row)
        chi2, dof = self.chi2()
        worst = max(zip(self.residuals(), self.pairs, strict=True), key=lambda t: abs(t[0]))
        sizes = sorted({p.score_a.size for p in self.pairs}, reverse=True)
        lines += [
            "",
            f"{len(self.pairs)} pairs x {' or '.join(map(str, sizes))} deals; fit chi-square "
            f"{chi2:.1f} on {dof} degrees of freedom; largest residual {worst[0]:+.2f} "
            f"(`{worst[1].a}` - `{worst[1].b}`).",
            "",
        ]
        for note in notes:
            lines += [note, ""]
        margin = {}
        for p in self.pairs:
            m, lo, hi = mean_ci(p.per_deal())
            margin[p.a, p.b] = f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]"
            margin[p.b, p.a] = f"{-m:+.2f} [{-hi:+.2f}, {-lo:+.2f}]"
        names = [self.labels[i] for i in self.order()]
        lines += [
            "| row - column | " + " | ".join(f"`{b}`" for b in names) + " |",
            "|---|" + "---|" * len(names),
        ]
        for a in names:
            cells = [margin.get((a, b), "" if a == b else "not played") for b in names]
            lines.append(f"| `{a}` | " + " | ".join(cells) + " |")
        return "\n".join(lines)


def check_bootstrap(bootstrap: int, num_labels: int, what: str) -> None:
    """:func:`~zhuoji_env.limits.check_memory` of ``bootstrap`` resamples of ``num_labels``
    ratings (float64, with the copies their percentiles take); ``what`` names them."""
    check_memory(f"{what} of {num_labels} ratings", 3 * 8 * bootstrap * num_labels)


def fit_ladder(
    labels: Sequence[str],
    specs: Sequence[str],
    pairs: Sequence[PairResult],
    anchor: str = ANCHOR,
    bootstrap: int = 2000,
    seed: int = 0,
    stages: Sequence[int] | None = None,
) -> Ladder:
    """Fit the ratings and their bootstrap intervals (module docstring).

    ``stages`` (one integer >= 0 per label; None: all 0) fits in turns: the agents of the
    lowest stage from the pairs among them, then each later stage's agents from their pairs
    with agents of their own or earlier stages, the earlier ratings held. An agent that joins a
    published ladder is so placed beside it without moving it (``--reuse``); every resample of
    the bootstrap fits the stages in turn too, so a joining agent's interval carries the
    published ratings' uncertainty.

    The resamples draw the deals of every pair of the same number of deals together (they are
    the same deals); the pairs of the number of deals that comes first draw from
    ``default_rng(seed)``, others each from their own stream, so that adding pairs of another
    number (``--quick``) leaves the first ones' resamples as they were.

    ``labels``: distinct non-empty strings; ``specs``: one string per label; every pair
    (:meth:`PairResult.check`) between two of the labels; ``bootstrap`` and ``seed``
    integers >= 0."""
    labels = check_labels(labels, None)
    if (
        isinstance(specs, str)
        or not isinstance(specs, (list, tuple))
        or not all(isinstance(s, str) for s in specs)
    ):
        raise TypeError(f"specs must be a list or tuple of strings, one per label, got {specs!r}")
    if len(specs) != len(labels):
        raise ValueError(f"{len(specs)} specs for {len(labels)} labels: give one spec per label")
    bootstrap = integer_at_least("bootstrap", bootstrap, 0)
    seed = integer_at_least("seed", seed, 0)
    check_bootstrap(bootstrap, len(labels), f"bootstrap={bootstrap} resamples")
    if anchor not in labels:
        raise ValueError(f"the anchor {anchor!r} is not among the agents {labels}")
    if not pairs:
        raise ValueError("a ladder needs at least one pair")
    for p in pairs:
        if not isinstance(p, PairResult):
            raise TypeError(f"pairs must be PairResult objects, got {type(p).__name__}")
        p.check()
        unknown = [x for x in (p.a, p.b) if x not in labels]
        if unknown:
            raise ValueError(f"pair {p.a} - {p.b}: {unknown[0]!r} is not among the agents {labels}")
    stage = check_stages(stages, labels, anchor)
    idx = [(labels.index(p.a), labels.index(p.b)) for p in pairs]
    per_deal = [p.per_deal() for p in pairs]
    if any(d.size < 2 for d in per_deal):
        raise ValueError("every pair needs at least 2 deals (the fit weighs pairs by variance)")
    turns = []  # per stage: its pairs, the agents fitted, and the pairs' agents renumbered
    for level in sorted(set(stage)):
        rows = [k for k, (a, b) in enumerate(idx) if max(stage[a], stage[b]) == level]
        agents = [a for a in range(len(labels)) if stage[a] <= level]
        local = [(agents.index(a), agents.index(b)) for a, b in (idx[k] for k in rows)]
        if not rows:
            raise ValueError(f"no pair rates the agents of stage {level}")
        turns.append((level, rows, agents, local))
    # pairs grouped by their number of deals, in the order each number first comes
    groups = {d.size: [] for d in per_deal}
    for k, d in enumerate(per_deal):
        groups[d.size].append(k)
    blocks = {n: np.stack([per_deal[k] for k in rows]) for n, rows in groups.items()}

    def fit(means: np.ndarray, var: np.ndarray) -> np.ndarray:
        out = np.zeros(len(labels))
        for level, rows, agents, local in turns:
            held = {i: out[a] for i, a in enumerate(agents) if stage[a] < level}
            sol = fit_ratings(
                local, means[rows], var[rows], len(agents), agents.index(labels.index(anchor)),
                held,
            )  # fmt: skip
            out[agents] = sol
        return out

    def moments(draws: dict[int, np.ndarray | None]) -> tuple[np.ndarray, np.ndarray]:
        means, var = np.empty(len(pairs)), np.empty(len(pairs))
        for n, rows in groups.items():
            # take: C order, so each row is summed pairwise as one pair's deals alone would be
            x = blocks[n] if draws[n] is None else np.take(blocks[n], draws[n], axis=1)
            means[rows] = x.mean(axis=1)
            var[rows] = x.var(axis=1, ddof=1) / n
        return means, var

    ratings = fit(*moments(dict.fromkeys(groups)))
    streams = {
        n: np.random.default_rng(seed if k == 0 else [seed, n]) for k, n in enumerate(groups)
    }
    boots = np.empty((bootstrap, len(labels)))
    for k in range(bootstrap):
        boots[k] = fit(*moments({n: rng.integers(0, n, n) for n, rng in streams.items()}))
    ci = (
        np.percentile(boots, [2.5, 97.5], axis=0).T
        if bootstrap
        else np.full((len(labels), 2), np.nan)
    )
    return Ladder(labels, list(specs), list(pairs), anchor, ratings, ci, bootstrap, stage)


def check_stages(stages, labels: Sequence[str], anchor: str) -> list[int]:
    """``stages`` as a list of one integer >= 0 per label (None: all 0), the anchor's the
    lowest."""
    if stages is None:
        return [0] * len(labels)
    if isinstance(stages, str) or not isinstance(stages, (list, tuple)):
        raise TypeError(
            f"stages must be a list or tuple of integers, one per label, got {stages!r}"
        )
    if len(stages) != len(labels):
        raise ValueError(f"{len(stages)} stages for {len(labels)} labels: give one per label")
    out = [integer_at_least(f"stages[{i}]", x, 0) for i, x in enumerate(stages)]
    if out[labels.index(anchor)] != min(out):
        raise ValueError(f"the anchor {anchor!r} must be of the first stage, {min(out)}")
    return out


# --------------------------------------------------------------------------- playing
def fingerprint(spec: str) -> str | None:
    """What must match for a published pair to be reused: the sha256 of the network a spec
    plays, a shipped policy's (``ppo-guiyang[:...]``), a checkpoint's (``ppo:PATH[:...]``,
    ``sb3:PATH``, the files of ``rllib:PATH``'s learner) or a search agent's BASE's
    (``search:BASE[:...]``); None for an agent of code alone, or a network that cannot be read
    (the spec then fails when it is made)."""
    name, _, arg = spec.partition(":")
    if name in SHIPPED_POLICIES:
        from agents.ppo import provenance

        return provenance(name)["sha256"]
    if not arg:
        return None
    try:
        if name == "search":
            from agents.search import parse_spec

            return fingerprint(parse_spec(arg)[0])
        if name == "ppo":
            from agents.ppo import OPTIONS, split_options

            return _digest(Path(split_options(arg, OPTIONS, exclusive=DEVICES)[0]))
        if name in ("sb3", "sb3+trusted"):
            return _digest(Path(arg))
        if name in ("rllib", "rllib+trusted"):
            from agents.ppo import split_options
            from agents.rllib import CHECKPOINT, COMPONENT_LEARNER_GROUP

            run = Path(split_options(arg, ("greedy",))[0])
            found = [p / COMPONENT_LEARNER_GROUP for p in (run / CHECKPOINT, run)]
            return next((_digest(p) for p in found if p.is_dir()), None)
    except (OSError, ValueError, ImportError):  # a name too long, a file not readable, a bad
        return None  # option, or rllib: without Ray (which could not play it either)
    return None


def _digest(path: Path) -> str | None:
    """The sha256 of a file, or of a folder's files (their relative names and contents, in
    name order); None where there is none. Kept per file, size and time of change: a ladder
    reads the same checkpoint for each of its pairs."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    if not files or not all(p.is_file() for p in files):
        return None
    stamps = tuple((str(p), *((st := p.stat()).st_ino, st.st_size, st.st_mtime_ns)) for p in files)
    return _hashed(str(path), stamps)


@functools.lru_cache(maxsize=64)
def _hashed(root: str, stamps: tuple) -> str:
    digest = hashlib.sha256()
    for name, *_ in stamps:
        if len(stamps) > 1:
            digest.update(str(Path(name).relative_to(root)).encode() + b"\0")
        digest.update(Path(name).read_bytes())
    return digest.hexdigest()


def check_versus(versus: Sequence[str], specs: Sequence[str], flag_text: str | None = None) -> None:
    """``ValueError`` unless every agent of ``versus`` is among the rated ``specs``; the message
    names the others, or, given ``flag_text``, the ``--versus`` flag and its text."""
    unknown = [v for v in versus if v not in specs]
    if unknown:
        lead = f"versus {unknown}" if flag_text is None else f"--versus {flag_text!r}"
        raise ValueError(f"{lead}: name agents among the rated ones {specs}")


def play_pairs(
    specs: Sequence[str],
    labels: Sequence[str],
    rules: Rules,
    deals: int,
    seed: int,
    seating: str,
    workers: int = 1,
    reuse: dict[tuple[str, str], PairResult] | None = None,
    progress: bool = False,
    log=print,
    versus: Sequence[str] | None = None,
    device: str | None = None,
    chunk_games: int = 4096,
    unpaired: set[frozenset[str]] = frozenset(),
) -> list[PairResult]:
    """Every pair's arena (or its reused result), in the order of the agents; with ``versus``
    (a list of specs among ``specs``), a pair that is not reused is played only if one of its
    agents is among them, and a pair in ``unpaired`` (sets of two specs: those a reused ladder
    rated without pairing them) is not played. ``specs``: strings; ``labels``: one distinct
    string per spec. Every agent of a pair to be played is built before the first is played,
    so that a bad spec is an error before any game, not after the pairs that came before its
    own."""
    specs = check_agents(specs, "specs")
    for i, spec in enumerate(specs):
        if not isinstance(spec, str):
            raise TypeError(f"specs[{i}] is {spec!r}: the ladder plays agent specs (strings)")
    labels = check_labels(labels, len(specs))
    if versus is not None:
        check_versus(check_agents(versus, "versus"), specs)
    pairs = list(itertools.combinations(range(len(specs)), 2))
    reused = {(i, j): (reuse or {}).get((specs[i], specs[j])) for i, j in pairs}
    left_out = {
        (i, j) for i, j in pairs if versus is not None and not {specs[i], specs[j]} & set(versus)
    }
    alone = {(i, j) for i, j in pairs if frozenset((specs[i], specs[j])) in unpaired}
    alone -= {k for k, v in reused.items() if v is not None}
    played = [
        (i, j)
        for i, j in pairs
        if reused[i, j] is None and (i, j) not in left_out and (i, j) not in alone
    ]
    for k in sorted({k for pair in played for k in pair}):  # a bad spec fails before any game
        make_agent(specs[k], seed=0, rules=rules)
    if alone:
        log(
            f"{len(alone)} pairs not played: a reused ladder rated both agents without pairing them"
        )
    out = []
    for i, j in pairs:
        if reused[i, j] is not None:
            out.append(dataclasses.replace(reused[i, j], a=labels[i], b=labels[j], reused=True))
            log(f"{labels[i]} - {labels[j]}: reused")
            continue
        if (i, j) in alone:
            continue
        if (i, j) in left_out:
            log(f"{labels[i]} - {labels[j]}: not played (neither is in --versus)")
            continue
        res = run_arena(
            [specs[i], specs[j]],
            deals,
            seed=seed,
            rules=rules,
            workers=workers,
            progress=progress,
            labels=[labels[i], labels[j]],
            seating=seating,
            device=device,
            chunk_games=chunk_games,
        )
        sums = res.acc[..., FIELD_INDEX["score"]], res.acc[..., FIELD_INDEX["hands"]]
        pair = PairResult(
            labels[i],
            labels[j],
            sums[0][:, 0],
            sums[0][:, 1],
            sums[1][:, 0],
            sums[1][:, 1],
            res.seconds,
            chunk_games=res.extra["chunk_games"],
            machine=res.extra["machine"],
        )
        m, lo, hi = mean_ci(pair.per_deal())
        log(f"{labels[i]} - {labels[j]}: {m:+.3f} [{lo:+.3f}, {hi:+.3f}] ({res.seconds:.0f} s)")
        out.append(pair)
    return out


HOLD_TOLERANCE = 1e-9
"""How far the refit of a reused ladder's pairs may fall from the ratings and interval ends it
records for them to be held (the same fit differs by about 1e-14 between machines' BLAS)."""


@dataclass
class LadderFile:
    """A ladder JSON as ``--reuse`` reads it (:func:`read_ladder`)."""

    path: str
    sha256: str  # of the file's bytes
    agents: list[dict[str, Any]]  # its agents' objects, as it lists them
    pairs: dict[tuple[str, str], PairResult]  # by the specs of its two agents, both orders
    played: set[frozenset[str]]  # the specs of every pair it holds (reusable or not)
    stale: list[tuple[str, str | None, str | None]]  # (label, sha256 recorded, now): changed
    bootstrap: Any  # its fit's resamples, as written
    best_responses: dict[str, dict[str, Any]]  # by target spec: the column (read_best_response)
    versions: dict[str, str] | None  # what its pairs were played under (None: not stated)

    @property
    def specs(self) -> list[str]:
        return [row["spec"] for row in self.agents]

    def unpaired(self) -> set[frozenset[str]]:
        """The pairs of its agents it holds no result for: it rated them without pairing them."""
        return {frozenset(x) for x in itertools.combinations(self.specs, 2)} - self.played

    def stage(self, spec: str) -> int:
        """The stage of its agent ``spec`` (0 where it records none: a ladder fitted at once)."""
        row = self.agents[self.specs.index(spec)]
        stage = row.get("stage", 0)
        if type(stage) is not int or stage < 0:
            raise ValueError(
                f"--reuse {self.path!r}: agent {row['label']!r} has stage {stage!r}, not an "
                "integer >= 0"
            )
        return stage

    def recorded(self, spec: str) -> tuple[float, list[float]]:
        """The rating and 95% interval it records for its agent ``spec`` (an interval of
        nulls, a fit without bootstrap, is NaN)."""
        row = self.agents[self.specs.index(spec)]
        rating, ci = row.get("rating"), row.get("ci95")
        if not is_real(rating) or not math.isfinite(rating):
            raise ValueError(
                f"--reuse {self.path!r}: agent {row['label']!r} has rating {rating!r}, not a number"
            )
        if (
            not isinstance(ci, list)
            or len(ci) != 2
            or not all(x is None or (is_real(x) and math.isfinite(x)) for x in ci)
        ):
            raise ValueError(
                f"--reuse {self.path!r}: agent {row['label']!r} has ci95 {ci!r}, not two "
                "numbers (or nulls)"
            )
        return float(rating), [math.nan if x is None else float(x) for x in ci]


def read_ladder(path: str, rules: Rules, deals: int, seed: int, seating: str) -> LadderFile:
    """A ladder JSON played under the same rules, deals, seed and seating; malformed files,
    another setting and trial ladders (``--quick``) are refused, naming the file. A pair is
    reusable while the network each of its agents plays has the sha256 the file records
    (:func:`fingerprint`); the others are listed in ``stale``."""
    try:  # a file nested too deep for the parser is not a ladder either
        raw = Path(path).read_bytes()
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ValueError(f"--reuse {path!r}: cannot read it as JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"--reuse {path!r}: not a {FORMAT} file")
    made = None  # a file without versions was written before they were stated
    if "versions" in data:
        made = check_stamp(data["versions"], f"--reuse {path!r}")
        if made["environment"] != ENVIRONMENT:
            raise ValueError(
                f"--reuse {path!r}: its pairs were played under environment "
                f"{made['environment']} (zhuoji-env {made['zhuoji_env']}), this ladder plays "
                f"{ENVIRONMENT}: the games differ, so its margins cannot be reused"
            )
    if data.get("trial") is not None:
        raise ValueError(
            f"--reuse {path!r}: a trial ladder (--quick): its joining agents played "
            f"{data['trial'].get('deals') if isinstance(data['trial'], dict) else '?'} deals a "
            "pair, not the ladder's; play them without --quick to reuse their pairs"
        )
    same = {
        "rules": {"preset": rules.preset, "overrides": rules.overrides},
        "deals": deals,
        "seed": seed,
        "seating": seating,
    }
    for key, want in same.items():
        if data.get(key) != want:
            raise ValueError(
                f"--reuse {path!r}: its {key} is {data.get(key)!r}, this ladder's is {want!r}"
            )
    agents = _file_agents(path, data.get("agents", []))
    rows = data.get("pairs", [])
    if not isinstance(rows, list):
        raise ValueError(f"--reuse {path!r}: its pairs must be a list, got {type(rows).__name__}")
    stale = [
        (row["label"], row.get("sha256"), now)
        for row in agents.values()
        if (now := fingerprint(row["spec"])) != row.get("sha256")
    ]
    changed = {label for label, *_ in stale}
    out, played = {}, set()
    for k, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(
                f"--reuse {path!r}: pairs[{k}] must be an object, got {type(row).__name__}"
            )
        a, b = (agents.get(x) if isinstance(x, str) else None for x in (row.get("a"), row.get("b")))
        if a is None or b is None:
            raise ValueError(f"--reuse {path!r}: pair {row.get('a')} - {row.get('b')} unknown")
        try:
            pair = PairResult.from_json(row)
        except ValueError as exc:
            raise ValueError(f"--reuse {path!r}: {exc}") from None
        if pair.score_a.size != deals:
            raise ValueError(
                f"--reuse {path!r}: pair {pair.a} - {pair.b} has {pair.score_a.size} per-deal "
                f"sums, but the file says deals: {deals}"
            )
        played.add(frozenset((a["spec"], b["spec"])))
        if {a["label"], b["label"]} & changed:
            continue  # a shipped policy changed since: the pair is not of the agent played now
        out[(a["spec"], b["spec"])] = pair
        out[(b["spec"], a["spec"])] = pair.swapped()
    fit = data.get("fit")
    known = data.get("best_responses", {})
    if not isinstance(known, dict) or not all(
        spec in agents and _best_response_row(row) for spec, row in known.items()
    ):
        raise ValueError(
            f"--reuse {path!r}: best_responses must map agents of the file to best-response "
            f"summaries ({', '.join(BEST_RESPONSE_KEYS)})"
        )
    return LadderFile(
        path,
        hashlib.sha256(raw).hexdigest(),
        list(agents.values()),
        out,
        played,
        stale,
        fit.get("bootstrap") if isinstance(fit, dict) else None,
        {spec: dict(row) for spec, row in known.items() if agents[spec]["spec"] == spec},
        made,
    )


BEST_RESPONSE_KEYS = ("margin", "ci95", "play", "deals", "decisions", "minutes", "file")
"""What a ladder holds of a best response to one of its agents (:func:`read_best_response`)."""


def _best_response_row(row: Any) -> bool:
    """Whether ``row`` is a best-response summary as :func:`read_best_response` writes it."""
    numbers = ("margin", "decisions", "minutes", "deals")
    return (
        isinstance(row, dict)
        and set(row) == set(BEST_RESPONSE_KEYS)
        and all(is_real(row[k]) and math.isfinite(row[k]) for k in numbers)
        and isinstance(row["ci95"], list)
        and len(row["ci95"]) == 2
        and all(is_real(x) and math.isfinite(x) for x in row["ci95"])
        and row["play"] in ("sampling", "argmax")
        and isinstance(row["file"], str)
    )


def read_best_response(path: str, rules: Rules) -> tuple[str, dict[str, Any]]:
    """``(target spec, summary)`` of a ``training.best_response`` run's ``best_response.json``:
    the exploiter's 1-vs-3 margin over its target on the run's fresh deals (by the play the run
    chose, sampling or argmax), its interval, and the budget (decisions trained, all seats, and
    minutes). A file of other rules or another environment version, or one that lacks a field,
    is refused naming the file and the field."""
    where = f"--best-responses {path!r}"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ValueError(f"{where}: cannot read it as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: not a best_response.json (an object)")
    if "versions" in data:
        made = check_stamp(data["versions"], where)
        if made["environment"] != ENVIRONMENT:
            raise ValueError(
                f"{where}: made under environment {made['environment']}, this ladder plays "
                f"{ENVIRONMENT}"
            )
    want = {"preset": rules.preset, "overrides": rules.overrides}
    if data.get("rules") != want:
        raise ValueError(f"{where}: its rules are {data.get('rules')!r}, this ladder's {want!r}")
    target, play, final = data.get("target"), data.get("play"), data.get("final")
    if not isinstance(target, str) or not target:
        raise ValueError(f"{where}: 'target' must be the target's agent spec")
    if play not in ("sampling", "argmax") or not isinstance(final, dict):
        raise ValueError(f"{where}: needs 'play' (sampling or argmax) and 'final' measurements")
    measured = final.get(play)
    row = {
        "margin": measured.get("margin") if isinstance(measured, dict) else None,
        "ci95": measured.get("margin_ci95") if isinstance(measured, dict) else None,
        "play": play,
        "deals": measured.get("deals") if isinstance(measured, dict) else None,
        "decisions": data.get("decisions"),
        "minutes": data.get("minutes"),
        "file": Path(path).as_posix(),
    }
    if isinstance(row["ci95"], tuple):
        row["ci95"] = list(row["ci95"])
    if not _best_response_row(row):
        bad = [k for k in ("margin", "ci95", "deals", "decisions", "minutes") if row[k] is None]
        raise ValueError(
            f"{where}: a field is missing or not a finite number"
            + (f" ({', '.join(bad)})" if bad else "")
        )
    return target, row


def best_response_files(text: str | None) -> list[str]:
    """The comma-separated paths of ``--best-responses`` (none when not given); an empty item
    raises ``ValueError``."""
    if text is None:
        return []
    paths = [p.strip() for p in text.split(",")]
    if "" in paths:
        raise ValueError(f"--best-responses {text!r}: an empty path; give comma-separated files")
    return paths


def best_response_text(row: dict[str, Any]) -> str:
    """A best-response summary as the ladder's column shows it: margin, interval, budget."""
    lo, hi = row["ci95"]
    return (
        f"{row['margin']:+.2f} [{lo:+.2f}, {hi:+.2f}] after {row['decisions'] / 1e6:.1f}M "
        f"decisions ({row['minutes']:.0f} min)"
    )


def reusable(path: str, rules: Rules, deals: int, seed: int, seating: str):
    """The pairs of a ladder JSON played under the same rules, deals, seed and seating, by
    agents whose fingerprints still match: ``{(spec_a, spec_b): PairResult}``
    (:func:`read_ladder`)."""
    return read_ladder(path, rules, deals, seed, seating).pairs


def _file_agents(path: str, rows) -> dict[str, dict[str, Any]]:
    """A ladder file's agents by label: each an object with a non-empty ``label`` and
    ``spec`` and a ``sha256`` string or null, no label or spec twice."""
    if not isinstance(rows, list):
        raise ValueError(f"--reuse {path!r}: its agents must be a list, got {type(rows).__name__}")
    agents: dict[str, dict[str, Any]] = {}
    for k, row in enumerate(rows):
        fields = (row.get("label"), row.get("spec")) if isinstance(row, dict) else (None, None)
        if not all(isinstance(x, str) and x for x in fields) or not isinstance(
            row.get("sha256"), (str, type(None))
        ):
            raise ValueError(
                f"--reuse {path!r}: agents[{k}] must be an object with a 'label' and a 'spec' "
                f"(non-empty strings) and a 'sha256' (a string or null), got {row!r}"
            )
        if row["label"] in agents:
            raise ValueError(f"--reuse {path!r}: agent {row['label']!r} is listed twice")
        if any(row["spec"] == other["spec"] for other in agents.values()):
            raise ValueError(f"--reuse {path!r}: spec {row['spec']!r} is listed twice")
        agents[row["label"]] = row
    return agents


def ladder_agents(files: Sequence[LadderFile], specs: Sequence[str]) -> tuple[list, list]:
    """The labels and specs a ladder rates: every agent of the reused ladders first, as they
    list them (none is left out), then the other ``specs`` (labelled by their specs)."""
    labels: list[str] = []
    out: list[str] = []
    for table in files:
        for row in table.agents:
            if row["spec"] in out:
                if labels[out.index(row["spec"])] != row["label"]:
                    raise ValueError(
                        f"--reuse {table.path!r}: it labels {row['spec']!r} {row['label']!r}, "
                        f"another --reuse file {labels[out.index(row['spec'])]!r}"
                    )
                continue
            if row["label"] in labels:
                raise ValueError(
                    f"--reuse {table.path!r}: its label {row['label']!r} names "
                    f"{row['spec']!r}, in another --reuse file {out[labels.index(row['label'])]!r}"
                )
            labels.append(row["label"])
            out.append(row["spec"])
    for spec in specs:
        if spec not in out:
            if spec in labels:
                raise ValueError(
                    f"{spec!r} is the label of {out[labels.index(spec)]!r} in a --reuse file"
                )
            labels.append(spec)
            out.append(spec)
    return labels, out


def check_joinable(table: LadderFile, files: int, bootstrap: int) -> None:
    """``ValueError`` unless the ratings of ``table`` can be held as it publishes them: it is
    the only ladder reused, every network it rated is the one played now, and its intervals
    come from as many resamples as this ladder's."""
    if files != 1:
        raise ValueError(
            f"--reuse: {files} files; a ladder joins one published ladder at a time, holding "
            "its ratings (--refit fits the pairs of several together instead)"
        )
    if table.stale:
        label, was, now = table.stale[0]
        raise ValueError(
            f"--reuse {table.path!r}: the network {label!r} plays has changed since it was "
            f"rated (sha256 {was} there, {now} here): its published pairs and rating are not of "
            "the agent played now (--refit plays its pairs again and refits every pair)"
        )
    if table.bootstrap != bootstrap:
        raise ValueError(
            f"--reuse {table.path!r}: its intervals come from {table.bootstrap!r} bootstrap "
            f"resamples, this ladder's from {bootstrap}; give --bootstrap {table.bootstrap} to "
            "hold them as published"
        )


def hold_published(ladder: Ladder, table: LadderFile) -> None:
    """Give the agents of ``table`` the ratings and intervals it records, to the last bit,
    after checking that this fit gives them (within :data:`HOLD_TOLERANCE`): a file whose
    numbers the fit does not reproduce (edited, or fitted otherwise) is refused, not held."""
    for row in table.agents:
        i = ladder.labels.index(row["label"])
        rating, ci = table.recorded(row["spec"])
        got = [float(ladder.ratings[i]), *map(float, ladder.ci95[i])]
        for what, g, w in zip(("rating", "95% low", "95% high"), got, [rating, *ci], strict=True):
            same = abs(g - w) <= HOLD_TOLERANCE or (math.isnan(g) and math.isnan(w))
            if not same:
                raise ValueError(
                    f"--reuse {table.path!r}: refitting its pairs gives {row['label']!r} a {what} "
                    f"of {g:+.6f}, where it records {w:+.6f}: its ratings cannot be held as "
                    "published (--refit fits every pair anew instead)"
                )
        ladder.ratings[i] = rating
        ladder.ci95[i] = ci


def file_fit(table: LadderFile, bootstrap: int) -> Ladder:
    """The fit of a reused ladder's own pairs, stage by stage as it records them."""
    labels = [row["label"] for row in table.agents]
    pairs = [table.pairs[k] for k in itertools.combinations(table.specs, 2) if k in table.pairs]
    stages = [table.stage(spec) for spec in table.specs]
    return fit_ladder(labels, table.specs, pairs, ANCHOR, bootstrap, stages=stages)


def pair_list(pairs: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"`{a}` - `{b}`" for a, b in pairs) or "none"


def reuse_report(
    ladder: Ladder,
    files: Sequence[LadderFile],
    held: bool,
    other: dict[str, float],
    new: Sequence[str],
    trial: int | None,
    seed: int,
) -> tuple[list[str], tuple[str, dict[str, float]], list[str], dict[str, Any]]:
    """What a ladder that reused ``files`` says beside its ratings: per agent where its rating
    comes from, a comparison column (``other``: the full refit where the reused ratings are
    ``held``, else the ratings as published), the paragraphs that say what was held, moved,
    reused, played and left out, and the same for its JSON. ``new``: the specs of the agents
    no reused ladder rated; ``trial``: the deals a pair of ``--quick``."""
    labels = ladder.labels
    rating = dict(zip(labels, map(float, ladder.ratings), strict=True))
    kept = [x for x in labels if any(x == row["label"] for t in files for row in t.agents)]
    joining = [labels[ladder.specs.index(s)] for s in new]
    reused = [(p.a, p.b) for p in ladder.pairs if p.reused]
    played = [(p.a, p.b) for p in ladder.pairs if not p.reused]
    done = {frozenset(x) for x in reused + played}
    missing = [
        (a, b)
        for a, b in itertools.combinations(labels, 2)
        if frozenset((a, b)) not in done and {a, b} & set(joining)
    ]
    names = ", ".join(f"`{t.path}`" for t in files)
    who = ", ".join(f"`{x}`" for x in joining)
    moves = sorted((x for x in kept if x in other), key=lambda x: -abs(other[x] - rating[x]))

    def changes(before: dict[str, float], after: dict[str, float]) -> str:
        top = max((abs(after[x] - before[x]) for x in moves), default=0.0)
        listed = ", ".join(f"`{x}` {before[x]:+.2f} -> {after[x]:+.2f}" for x in moves[:3])
        return f"by up to {top:.2f} ({listed})"

    if held:
        rated = [
            "placed here" + (f", {trial:,}-deal trial" if trial else "")
            if x in joining
            else "published"
            if ladder.stages[i] == 0
            else f"held (joined at stage {ladder.stages[i]})"
            for i, x in enumerate(labels)
        ]
        column = ("full refit", other)
        notes = [
            f"The {len(kept)} agents of {names} keep the ratings and intervals it publishes "
            f"(refit here from its pairs to within {HOLD_TOLERANCE:g}, then taken as written)"
            + (
                f"; {who} placed beside them by {'its' if len(joining) == 1 else 'their'} own "
                "pairs, the published ratings held, so that none of them moves."
                if joining
                else "; no agent joins them."
            )
        ]
        if moves:
            notes.append(
                f"A full refit of all {len(ladder.pairs)} pairs together (last column) would move "
                f"the published ratings {changes(rating, other)}; it is shown for comparison, "
                "not as this table's ratings."
            )
    else:
        rated = ["refit" if x in kept else "fitted here" for x in labels]
        column = ("as published", other)
        notes = [
            f"All {len(ladder.pairs)} pairs fitted together: the ratings {names} publishes "
            f"(last column) move {changes(other, rating)}."
        ]
    each = " or ".join(
        f"{n:,}" for n in sorted({p.score_a.size for p in ladder.pairs if not p.reused})
    )
    notes.append(
        f"Reused from {names}: {len(reused)} pairs. Played here: {pair_list(played)}"
        + (f" ({each} deals a pair)" if played else "")
        + f". Not played: {pair_list(missing)}."
    )
    if trial:
        notes.insert(
            0,
            f"**A trial, not comparable with the published ratings**: {who} played {trial:,} "
            f"deals a pair (deals 0 to {trial - 1:,} of seed {seed}), the published pairs "
            f"{max(p.score_a.size for p in ladder.pairs):,}: a quick estimate of where "
            f"{'it' if len(joining) == 1 else 'they'} would stand, with a wider interval; its "
            "JSON cannot be reused.",
        )
    record = {
        "reuse": {
            "files": [{"path": t.path, "sha256": t.sha256} for t in files],
            "held": held,
            "reused": [list(x) for x in reused],
            "played": [list(x) for x in played],
            "not_played": [list(x) for x in missing],
        },
        "compare": {
            "ratings": "full refit of every pair" if held else "as published",
            "agents": {x: other[x] for x in labels if x in other},
        },
        **({"trial": {"deals": trial}} if trial else {}),
    }
    return rated, column, notes, record


def played_under(ladder: Ladder, files: Sequence[LadderFile]) -> dict[str, str]:
    """The versions a ladder's pairs were played under, as its JSON states them: those of the
    file it reused where it played no pair itself and its files state the same ones (a column
    added to a published table keeps the table's versions), else this package's."""
    stated = [t.versions for t in files]
    if stated and all(p.reused for p in ladder.pairs) and all(v == stated[0] for v in stated):
        return stated[0] or stamp()
    return stamp()


def ladder_json(
    ladder: Ladder,
    rules: Rules,
    deals: int,
    seed: int,
    seating: str,
    extra,
    best_responses=None,
    versions: dict[str, str] | None = None,
):
    """The ladder JSON (format ``zhuoji-ladder-1``); ``versions`` defaults to this package's
    (:func:`played_under` gives a reused ladder's)."""
    pairs = []
    for p, fitted in zip(ladder.pairs, ladder.residuals(), strict=True):
        row = p.to_json()
        row["predicted"] = ladder.predicted(p.a, p.b)
        row["residual"] = fitted
        pairs.append(row)
    chi2, dof = ladder.chi2()
    return standard_json(
        {
            "format": FORMAT,
            "versions": versions or stamp(),
            **extra,
            "rules": {"preset": rules.preset, "overrides": rules.overrides},
            "deals": deals,
            "seed": seed,
            "seating": seating,
            "anchor": {"agent": ladder.anchor, "rating": 0.0},
            "fit": {
                "method": "weighted least squares of paired margins; bootstrap over deals"
                + ("; stage by stage, earlier stages held" if max(ladder.stages) else ""),
                "bootstrap": ladder.bootstrap,
                "chi2": chi2,
                "dof": dof,
            },
            "agents": [
                {
                    "label": ladder.labels[i],
                    "spec": ladder.specs[i],
                    "sha256": fingerprint(ladder.specs[i]),
                    "rank": rank,
                    "rating": float(ladder.ratings[i]),
                    "ci95": [float(x) for x in ladder.ci95[i]],
                    "stage": ladder.stages[i],
                }
                for rank, i in enumerate(ladder.order(), 1)
            ],
            "pairs": pairs,
            **({"best_responses": best_responses} if best_responses else {}),
        }
    )


def compact_lists(text: str) -> str:
    """Indented JSON with every list of integers on one line (the per-deal sums)."""
    return re.sub(
        r"\[\s*(-?\d+(?:,\s*-?\d+)*)\s*\]", lambda m: "[" + re.sub(r"\s+", "", m[1]) + "]", text
    )


# --------------------------------------------------------------------------- command line
@exits_2_when_out_of_memory("python -m agents.ladder")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("agents.ladder"),
        description="Rate agents by one number each, fitted to duplicate arenas of every pair.",
    )
    parser.add_argument("--agents", help="comma-separated specs to rate, each once")
    parser.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        help="fix the presets, deals, seed, seating and field (module docstring)",
    )
    parser.add_argument("--preset", help="one preset (default guiyang; a protocol plays all)")
    parser.add_argument("--set", action="append", default=[], metavar="SWITCH=VALUE")
    parser.add_argument("--deals", type=int, help="deals per pair (default 1000)")
    parser.add_argument("--seed", type=int, help="the arena seed (default 0)")
    parser.add_argument("--seating", choices=("permute", "rotate"), help="default permute")
    parser.add_argument("--bootstrap", type=int, help="bootstrap resamples (default 2000)")
    parser.add_argument(
        "--reuse",
        action="append",
        default=[],
        metavar="LADDER.json",
        help="join this ladder: its pairs are reused and its ratings held as published, the "
        "other agents placed beside them ({preset} in it names the preset)",
    )
    parser.add_argument(
        "--refit",
        action="store_true",
        help="with --reuse: fit every pair together (the reused ratings move, and the table "
        "says by how much) instead of holding them",
    )
    parser.add_argument(
        "--quick",
        type=int,
        metavar="DEALS",
        help="a trial: the agents joining a --reuse ladder play DEALS deals a pair, and the "
        "result is marked as not comparable with the ladder's ratings",
    )
    parser.add_argument(
        "--portable",
        action="store_true",
        help="run under the portable numeric mode (always, with --protocol): the same games on "
        "every x86-64 CPU with AVX2 (zhuoji_env.machine.portable_settings)",
    )
    parser.add_argument("--json", metavar="FILE", help="{preset} in FILE names the preset")
    parser.add_argument("--markdown", metavar="FILE", help="{preset} in FILE names the preset")
    parser.add_argument("--force", action="store_true", help="replace existing output files")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--chunk",
        type=int,
        default=4096,
        help="games per batch (default 4096); smaller ones spread a pair over more --workers",
    )
    parser.add_argument(
        "--versus",
        metavar="SPECS",
        help="play only the pairs with one of these agents in them (reused pairs still count)",
    )
    parser.add_argument(
        "--device",
        choices=DEVICES,
        help="run the policy networks on this device (auto: CUDA when torch sees it); the "
        "labels stay the specs",
    )
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE|FILE.py",
        help="import MODULE, or the Python file FILE.py, first (it may register agents)",
    )
    parser.add_argument(
        "--best-responses",
        metavar="FILES",
        help="comma-separated best_response.json files of training.best_response runs against "
        "agents of the ladder ({preset} names the preset): a column of what each exploiter wins "
        "(a reused ladder's column is kept)",
    )
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    proto = PROTOCOLS.get(args.protocol) if args.protocol else None
    if proto is not None:
        fixed = {"--deals": args.deals, "--seed": args.seed, "--seating": args.seating}
        fixed |= {"--bootstrap": args.bootstrap, "--set": args.set or None}
        given = [k for k, v in fixed.items() if v is not None]
        if given:
            parser.error(
                f"--protocol {args.protocol} fixes {', '.join(given)}; drop them (or drop "
                "--protocol and say every setting yourself)"
            )
        if args.preset is not None and args.preset not in proto.presets:
            parser.error(
                f"--preset {args.preset!r}: --protocol {args.protocol} plays {list(proto.presets)}"
            )
    presets = [args.preset] if args.preset else list(proto.presets) if proto else ["guiyang"]
    deals = proto.deals if proto else args.deals if args.deals is not None else 1000
    seed = proto.seed if proto else args.seed if args.seed is not None else 0
    seating = proto.seating if proto else args.seating or "permute"
    boot = proto.bootstrap if proto else args.bootstrap if args.bootstrap is not None else 2000
    for flag, value, low, why in (
        ("--deals", deals, 2, " (the fit weighs each pair by its variance over deals)"),
        ("--seed", seed, 0, ""),
        ("--bootstrap", boot, 0, " (0: no intervals)"),
        ("--workers", args.workers, 1, ""),
        ("--chunk", args.chunk, 1, ""),
    ):
        if value < low:
            parser.error(f"{flag} must be >= {low}{why}, got {value}")
    if args.refit and not args.reuse:
        parser.error("--refit refits the pairs of a --reuse ladder with the new ones: give one")
    if args.quick is not None:
        if not args.reuse or args.refit:
            parser.error(
                "--quick tries agents against a published ladder: give it with --reuse FILE "
                "(and without --refit)"
            )
        if not 2 <= args.quick < deals:
            parser.error(
                f"--quick must be >= 2 and below the ladder's {deals} deals a pair, got "
                f"{args.quick} (for {deals} deals, leave --quick out)"
            )
    for flag, value in (("--json", args.json), ("--markdown", args.markdown)):
        if value and len(presets) > 1 and "{preset}" not in value:
            parser.error(f"{flag} {value!r}: put {{preset}} in it, one file per preset")
        for preset in presets if value else []:
            path = Path(value.replace("{preset}", preset))
            problem = unwritable(str(path))
            if problem:
                parser.error(f"{flag} {str(path)!r}: {problem}")
            if path.exists() and not args.force:
                parser.error(f"{flag} {str(path)!r} exists: another name, or --force")
    if args.portable or proto:
        flag = "--portable" if args.portable else f"--protocol {args.protocol}"
        portable_or_restart(parser, flag, "agents.ladder", argv)
    import_plugins(parser, args.plugin)
    try:
        check_device(args.device)
        given_specs = split_specs(args.agents, "--agents") if args.agents is not None else []
        versus = split_specs(args.versus, "--versus") if args.versus is not None else None
    except ValueError as exc:
        parser.error(str(exc))
    repeated = sorted({s for s in given_specs if given_specs.count(s) > 1})
    if repeated:
        parser.error(
            f"--agents {args.agents!r}: {', '.join(map(repr, repeated))} given more than once; a "
            "ladder rates each agent once (the arena plays a repeated spec as spec#1, spec#2)"
        )
    if not proto and not args.reuse and len(given_specs) < 2:
        parser.error("--agents needs at least two specs (or a --protocol, whose field is rated)")
    for preset in presets:
        field = [f.format(preset=preset) for f in proto.field] if proto else []
        try:
            rules = Rules.make(preset, **parse_switches(args.set))
            if proto and rules.num_players != proto.num_players:
                raise ValueError(f"the protocol seats {proto.num_players} players")
            files = [
                read_ladder(path.replace("{preset}", preset), rules, deals, seed, seating)
                for path in args.reuse
            ]
            labels, specs = ladder_agents(files, field + given_specs)
            if ANCHOR not in specs:
                raise ValueError(
                    f"--agents must include {ANCHOR!r}: the ladder's anchor at rating 0"
                )
            check_bootstrap(boot, len(specs), f"--bootstrap {boot} resamples")
            check_versus(versus or [], specs, args.versus)
            held = bool(files) and not args.refit
            if held:  # before any game: a ladder whose ratings cannot be held is refused
                check_joinable(files[0], len(files), boot)
                hold_published(file_fit(files[0], boot), files[0])
            new = [s for s in specs if not any(s in t.specs for t in files)]
            start = time.perf_counter()
            pairs = play_pairs(
                specs, labels, rules, args.quick or deals, seed, seating, args.workers,
                {k: v for t in files for k, v in t.pairs.items()},
                progress=not args.no_progress, log=lambda m: print(m, file=sys.stderr),
                versus=versus, device=args.device, chunk_games=args.chunk,
                unpaired=set().union(*(t.unpaired() for t in files)),
            )  # fmt: skip
            top = max((files[0].stage(s) for s in files[0].specs), default=0) if held else 0
            stages = [files[0].stage(s) if s not in new else top + 1 for s in specs]
            ladder = fit_ladder(labels, specs, pairs, ANCHOR, boot, stages=stages if held else None)
            report = None
            if held:
                hold_published(ladder, files[0])
                refit = fit_ladder(labels, specs, pairs, ANCHOR, boot)
                other = dict(zip(labels, map(float, refit.ratings), strict=True))
                report = reuse_report(ladder, files, True, other, new, args.quick, seed)
            elif files:
                other = {}
                for t in files:
                    for row in t.agents:
                        other.setdefault(row["label"], t.recorded(row["spec"])[0])
                report = reuse_report(ladder, files, False, other, new, None, seed)
            column = {spec: row for t in files for spec, row in t.best_responses.items()}
            for path in best_response_files(args.best_responses):
                target, row = read_best_response(path.replace("{preset}", preset), rules)
                if target not in specs:
                    raise ValueError(
                        f"--best-responses {path!r}: its target {target!r} is not rated here "
                        f"(the agents: {', '.join(specs)})"
                    )
                column[target] = row
        except ValueError as exc:
            parser.error(str(exc))
        title = f"{args.protocol or 'ladder'}, {preset}"
        if files and new:
            verb = "tried against" if args.quick else "joining" if held else "refit with"
            title += f": {', '.join(f'`{x}`' for x in new)} {verb} {files[0].path}"
        unit = "番 per hand" if preset == "classic" else "points per hand"
        rated, compared, notes, record = report or (None, None, (), {})
        table = ladder.markdown(title, unit, rated, compared, notes, column)
        print(table)
        extra = {"protocol": args.protocol, "run_seconds": round(time.perf_counter() - start, 1)}
        moved = args.device and on_devices(specs, args.device)[1]
        extra |= {"device": args.device} if moved else {}
        extra |= {"portable": is_portable(), **record}
        if args.json:
            body = compact_lists(
                json.dumps(
                    ladder_json(
                        ladder,
                        rules,
                        deals,
                        seed,
                        seating,
                        extra,
                        column,
                        played_under(ladder, files),
                    ),
                    indent=1,
                )
            )
            write_text_atomic(args.json.replace("{preset}", preset), body + "\n")
        if args.markdown:
            write_text_atomic(args.markdown.replace("{preset}", preset), table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
