"""Duplicate-style evaluation of agents: ``python -m agents.arena --agents random,greedy,rule``.

Every **deal** (a wall and a first dealer) is played once for each **seating** of the agents
over the seats, so each agent meets the same tiles from every seat and the luck of the deal
cancels out of the comparisons.

Seating. With ``A`` agents at an ``n``-seat table every agent must hold the same share of the
seats, whatever the order of ``--agents``. Where ``A < n`` does not divide evenly, each
seating's **composition** gives every agent ``n // A`` or ``n // A + 1`` seats, and every such
composition is played (2 agents at 3 seats: ``a0 a0 a1`` and ``a0 a1 a1``; 3 agents at 4
seats: ``a0`` doubled, ``a1`` doubled, ``a2`` doubled); with ``A > n`` the compositions are
the ``n``-agent subsets, and each agent sits out some seatings. The agents are put in the
order of their labels before anything is played (their random streams included) and the
results are reported in the order given, so swapping the order of ``--agents`` changes no
mean and no margin.

- ``--seating rotate``: per composition, ``base`` deals the agents round-robin (``a0 a1 a2
  a0`` for ``a0`` doubled at 4 seats) and rotation ``r`` seats ``base[(seat + r) % n]`` at each
  seat (with ``A > n``, ``base`` is all ``A`` agents and ``r = 0..A-1``). Every agent sits in
  every seat equally often, but the order around the table never changes: with ``random,
  greedy, rule`` greedy always sits after (is the 下家 of) random and rule after greedy. That
  order matters: in a ``random,greedy,greedy`` test the two identical greedy agents differed
  by +0.48 points per hand, 95% CI [+0.15, +0.82], because random's pongs skip the seats
  between the discarder and the ponger, which are more often the second one's.
- ``--seating permute`` (default): every distinct arrangement of every composition over the
  seats (6 for 3 agents at 3 seats, 24 for 4 agents at 4, 6 for 2 agents at 3, 36 for 3
  agents at 4). Every agent sits in every seat, and next to every other agent in both orders,
  equally often; the same test gave -0.06 [-0.27, +0.14].
- ``--seating alone``: two agents, the first given alone at the table and the second in every
  other seat (1 vs 3 at four seats), the first in each seat in turn on the same deals (``n``
  seatings a deal). What a best response is measured in (``training.best_response``): how much
  one player who knows the others' policy takes from them. Unlike the fair modes this one
  depends on the order given: swapping the two agents measures the other one alone.

Seatings that coincide are played once.

Deal ``d`` draws its wall and first dealer from ``numpy.random.default_rng([seed, d])``
exactly as game ``d`` of ``BatchGame(rules, seed=seed)`` does. Each game is one hand
(dealer streak 0). All (deal, seating) games of a chunk are dealt as one batch with
``core.deal`` and stepped together; at every step the games are grouped by the agent to act and
each agent is called once, batched, on its games' observations (games whose actor has exactly
one legal action take it without asking).

Statistics. An agent's **score** in a deal is its mean score per hand over its seats in all
seatings of the deal; the reported mean and its 95% confidence interval are over deals
(Student t, ``scipy.stats``). A **pairwise margin** ``a - b`` is the mean of the
per-deal differences of the two agents' deal scores with its t-interval: the paired comparison
that decides whether one agent beats another. Pairs are reported as a later agent of the list
minus an earlier one (``--agents random,greedy,rule`` gives ``greedy - random``,
``rule - random``, ``rule - greedy``). Rates are per seat-hand: ``win_rate``,
``self_draw_rate``, ``deal_in_rate`` (its discard was won on, or its added kong robbed),
``draw_rate`` (the hand ended in 黄庄), ``baoting_rate``; ``win_value`` is its ``hu`` ledger
receipts per win; ``kongs_per_hand`` counts kongs it made (late ones included, robbed ones not);
``chickens_per_hand`` and ``dou_per_hand`` are its chicken receipts (items chicken, chongfeng,
zeren) and kong receipts per hand.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import math
import multiprocessing as mp
import os
import pickle
import platform
import sys
import time
import types
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import (
    DEVICES,
    Agent,
    add_note,
    agent_label,
    check_device_name,
    decide,
    missing_methods,
)
from agents.registry import make_agent, on_devices, split_specs
from zhuoji_env.bench import check_counts
from zhuoji_env.commands import prog
from zhuoji_env.engine import core
from zhuoji_env.engine.game import batch_memory, first_deals, is_integer, is_real
from zhuoji_env.engine.records import deltas as ledger_deltas
from zhuoji_env.engine.records import record_of
from zhuoji_env.engine.state import (
    AN_KONG,
    END_DRAW,
    END_QIANGGANG,
    END_RON,
    END_ZIMO,
    I_CHICKEN,
    I_CHONGFENG,
    I_DOU_AN,
    I_DOU_BU,
    I_DOU_MING,
    I_HU,
    I_ZEREN,
    OVER,
    State,
)
from zhuoji_env.fileio import write_text_atomic
from zhuoji_env.limits import TORCH_PROCESS_BYTES, check_memory, exits_2_when_out_of_memory
from zhuoji_env.machine import (
    code_version,
    describe,
    is_portable,
    machine_line,
    portable_settings,
    run_portably,
)
from zhuoji_env.observation import OBS_SIZE, encode
from zhuoji_env.record import RECORD_BYTES
from zhuoji_env.rules import Rules, parse_switches
from zhuoji_env.tiles import NUM_TILES
from zhuoji_env.versions import stamp

SEATING_MODES = ("permute", "rotate", "alone")
# per (deal, agent) accumulators, in this order
FIELDS = (
    "hands",
    "score",
    "wins",
    "self_draws",
    "deal_ins",
    "draws",
    "hu_value",
    "kongs",
    "chickens",
    "dou",
    "baoting",
)
FIELD_INDEX = {name: i for i, name in enumerate(FIELDS)}
"""The column of each statistic in the arena's per (deal, agent) sums."""


# --------------------------------------------------------------------------- seating and deals
def compositions(num_agents: int, num_players: int) -> list[tuple[int, ...]]:
    """The seat counts per agent of a fair table, in sorted order: every way of giving each
    agent ``n // A`` or ``n // A + 1`` seats (``0`` or ``1`` when ``A > n``) that fills the
    ``n`` seats, so that no agent is favoured by its place in the list."""
    low, extra = divmod(num_players, num_agents)
    return sorted(
        tuple(low + (a in more) for a in range(num_agents))
        for more in itertools.combinations(range(num_agents), extra)
    )


def seatings(num_agents: int, num_players: int, mode: str = "permute") -> np.ndarray:
    """int ``[R, n]``: the agent index at each seat in each seating (module docstring).

    ``mode="rotate"``: the rotations of each composition's round-robin ``base``;
    ``mode="permute"``: every distinct arrangement of each composition over the seats (in
    sorted order); ``mode="alone"``: two agents only, agent 0 alone in seat ``r`` of row ``r``
    and agent 1 in every other seat (agent 0 is the first given: :func:`played_seatings`).
    """
    if num_agents < 1:
        raise ValueError("the arena needs at least one agent")
    if mode not in SEATING_MODES:
        raise ValueError(f"unknown seating mode {mode!r}: allowed {list(SEATING_MODES)}")
    n = num_players
    if mode == "alone":
        if num_agents != 2:
            raise ValueError(
                f"seating 'alone' seats the first agent alone against the second in every other "
                f"seat: it takes exactly 2 agents, got {num_agents}"
            )
        return (np.arange(n)[:, None] != np.arange(n)[None, :]).astype(np.int64)
    cands: list[tuple[int, ...]] = []
    if mode == "rotate" and num_agents > n:
        cands = [tuple((s + r) % num_agents for s in range(n)) for r in range(num_agents)]
    for counts in compositions(num_agents, n) if not cands else []:
        seats = [a for a in range(num_agents) for _ in range(counts[a])]
        if mode == "rotate":
            left, base = list(counts), []
            while len(base) < n:
                for a in range(num_agents):
                    if left[a]:
                        base.append(a)
                        left[a] -= 1
            cands += [tuple(base[(s + r) % n] for s in range(n)) for r in range(n)]
        else:
            cands += sorted(set(itertools.permutations(seats)))
    rows: list[tuple[int, ...]] = []
    for row in cands:
        if row not in rows:
            rows.append(row)
    return np.array(rows, dtype=np.int64)


def played_seatings(order: Sequence[int], num_players: int, mode: str) -> np.ndarray:
    """:func:`seatings` in the indices of the agents as played, ``order`` (:func:`label_order`:
    played agent ``p`` is given agent ``order[p]``). The fair modes are the same whatever the
    order; ``alone``'s rows name the agents as given (the first alone), so they are
    renumbered."""
    rows = seatings(len(order), num_players, mode)
    return np.argsort(order)[rows] if mode == "alone" else rows


def label_order(labels: Sequence[str], specs: Sequence[str]) -> list[int]:
    """The positions of the agents sorted by label (then spec): the order the arena plays them
    in, so that the order they were named in changes nothing."""
    return sorted(range(len(labels)), key=lambda i: (labels[i], specs[i], i))


def labels_of(specs: Sequence[str]) -> list[str]:
    """Distinct labels: a spec used more than once becomes ``spec#1``, ``spec#2``, ..."""
    out, seen = [], {}
    for s in specs:
        if specs.count(s) > 1:
            seen[s] = seen.get(s, 0) + 1
            out.append(f"{s}#{seen[s]}")
        else:
            out.append(s)
    return out


def integer_at_least(name: str, value, low: int) -> int:
    """``value`` as a plain ``int`` if it is an integer (numpy's too: :func:`is_integer`) of at
    least ``low``, else ``ValueError`` naming ``name``; plain, so that summaries stay JSON."""
    if not is_integer(value) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_agent(agent, name: str) -> None:
    """Refuse (``TypeError``, naming ``name``) what is neither a spec (a string) nor an agent
    object with ``act`` and ``reseed`` (the arena reseeds every agent per chunk)."""
    if isinstance(agent, str):
        return
    missing = missing_methods(agent)
    if missing:
        raise TypeError(
            f"{name} is {agent_label(agent)} ({type(agent).__name__}), which has no "
            f"{' or '.join(m + '()' for m in missing)}: an agent is a spec (a string such as "
            "'random') or an object with act(obs, mask) and reseed(seed) (subclass "
            "agents.base.Agent)"
        )


def check_agents(agents, name: str = "agents") -> list:
    """``agents`` as a list: a list or tuple of specs and agent objects (:func:`check_agent`);
    a string is refused, not read as one spec per character."""
    if isinstance(agents, str):
        try:
            hint = f"; split comma-separated specs first: {split_specs(agents, name)!r}"
        except ValueError:
            hint = ""
        raise TypeError(
            f"{name} must be a list or tuple of agent specs or agent objects, got the string "
            f"{agents!r}{hint}"
        )
    if not isinstance(agents, (list, tuple)):
        raise TypeError(
            f"{name} must be a list or tuple of agent specs or agent objects, got "
            f"{type(agents).__name__}"
        )
    for i, agent in enumerate(agents):
        check_agent(agent, f"{name}[{i}]")
    return list(agents)


def check_labels(labels, count: int | None) -> list[str]:
    """``labels`` as a list: a list or tuple of ``count`` (None: any number of) distinct
    non-empty strings (they key the agents and pairs of a summary, so a repeated one would
    merge two agents)."""
    if isinstance(labels, str) or not isinstance(labels, (list, tuple)):
        raise TypeError(f"labels must be a list or tuple of strings, one per agent, got {labels!r}")
    if count is not None and len(labels) != count:
        raise ValueError(f"{len(labels)} labels for {count} agents")
    for i, label in enumerate(labels):
        if not isinstance(label, str):
            raise TypeError(f"labels[{i}] is {label!r}: labels must be strings")
        if not label:
            raise ValueError(f"labels[{i}] is empty: labels must be non-empty strings")
    repeated = sorted({x for x in labels if labels.count(x) > 1})
    if repeated:
        raise ValueError(
            f"labels {list(labels)}: {', '.join(map(repr, repeated))} given more than once; "
            "each agent needs its own label"
        )
    return list(labels)


def named_agents(agents, labels) -> tuple[list, list[str], list[str]]:
    """The agents (:func:`check_agents`), their specs (an object's ``name``) and their labels:
    ``labels`` checked (:func:`check_labels`), or when None the specs made distinct
    (:func:`labels_of`)."""
    agents = check_agents(agents)
    specs = [a if isinstance(a, str) else getattr(a, "name", type(a).__name__) for a in agents]
    labels = labels_of(specs) if labels is None else check_labels(labels, len(agents))
    return agents, specs, labels


def check_device(device) -> str | None:
    """``device`` if it is None or one of :data:`DEVICES`, else ``ValueError``; ``cuda`` only
    where torch sees a CUDA device (as a ``:cuda`` spec option), so that no run claims a device
    it could not use."""
    if check_device_name(device, allow_none=True) == "cuda":
        try:
            from agents.ppo import resolve_device
        except ImportError as exc:
            raise ValueError(
                f"device 'cuda': torch cannot be imported ({exc}); use 'cpu' or 'auto'"
            ) from None
        resolve_device(device)
    return device


def deal_walls(seed: int, deal_ids: np.ndarray, num_players: int):
    """Walls ``[D,108]`` and first dealers ``[D]`` of deals ``deal_ids``: game ``d`` of a
    ``BatchGame`` seeded with ``seed`` deals the same."""
    return first_deals([np.random.default_rng([seed, int(d)]) for d in deal_ids], num_players)


# --------------------------------------------------------------------------- playing
class StableWall:
    """The stable draw wall (``--wall stable``): each seat draws the tiles it would have drawn
    had no claim or kong changed the order of turns, so a pong in one seating does not hand
    every later tile to a different seat than in another seating.

    Seat ``s``'s ``k``-th live draw takes the tile dealt at wall position ``start + k * n +
    (s - first) % n`` (``first`` the seat after the dealer, who draws first), if that tile is
    still in the live wall (a replacement draw from the back may have taken it; then the draw
    takes the front tile as usual). Before each step the wanted tile is swapped with the one at
    the front of the live wall, where the next live draw (always by the seat after the turn
    seat) takes it. Only undrawn tiles move, so the final ``st.wall`` replays the hand exactly
    under RULES.md, and which undrawn position is revealed depends on positions alone, never on
    tiles, so every draw is still uniform over the unseen tiles: the games are distributed as
    the shared wall's (the expected scores are the same; only their pairing across seatings
    changes). It was meant to lower the variance of paired margins; measured on 1,000 deals
    (docs/ladder.md) it raises it slightly, the intervals 6-9% wider, so the default and the
    benchmark protocol keep the shared wall."""

    def __init__(self, st: State, num_players: int):
        b = st.batch_size
        self.n = num_players
        self.where = np.tile(np.arange(NUM_TILES), (b, 1))  # dealt position at each wall index
        self.index = self.where.copy()  # wall index of each dealt position
        self.count = np.zeros((b, num_players), dtype=np.int64)  # live draws per seat
        self.front = st.front.astype(np.int64)  # the front before the last step
        self.start = st.front.astype(np.int64)  # the first live draw's position
        self.first = (st.dealer.astype(np.int64) + 1) % num_players

    def before_step(self, st: State, live: np.ndarray) -> None:
        """Count the live draws of the last step, then put the next drawer's tile in front."""
        front = st.front[live].astype(np.int64)
        drew = front > self.front[live]
        self.count[live[drew], st.turn_seat[live[drew]]] += 1
        self.front[live] = front
        seat = (st.turn_seat[live].astype(np.int64) + 1) % self.n
        pos = (
            self.start[live] + self.count[live, seat] * self.n + (seat - self.first[live]) % self.n
        )
        ok = pos < NUM_TILES
        g, pos, front = live[ok], pos[ok], front[ok]
        cur = self.index[g, pos]
        move = (cur > front) & (cur <= st.back[g])
        g, cur, front = g[move], cur[move], front[move]
        st.wall[g, front], st.wall[g, cur] = st.wall[g, cur], st.wall[g, front]
        was = self.where[g, front]
        self.where[g, front], self.where[g, cur] = self.where[g, cur], was
        self.index[g, self.where[g, front]] = front
        self.index[g, was] = cur


WALLS = ("shared", "stable")
"""The arena's wall modes: ``shared`` (RULES.md's one wall) or ``stable`` (:class:`StableWall`)."""


def play_games(
    rules: Rules,
    agents: Sequence[Agent],
    walls: np.ndarray,
    dealers: np.ndarray,
    seat_agent: np.ndarray,
    on_hands: Callable[[int], None] | None = None,
    wall: str = "shared",
) -> State:
    """Play one hand in each game (``seat_agent[g, seat]`` = index into ``agents``) to its
    end; returns the final batched state (with ``wall="stable"``, its ``wall`` the order the
    tiles were drawn in: :class:`StableWall`)."""
    if wall not in WALLS:
        raise ValueError(f"unknown wall mode {wall!r}: allowed {list(WALLS)}")
    st = core.deal(rules, np.array(walls), dealers, 0)
    stable = StableWall(st, rules.num_players) if wall == "stable" else None
    actions = np.full(len(walls), -1, dtype=np.int64)
    while True:
        live = np.flatnonzero(st.phase != OVER)
        if not live.size:
            return st
        if stable is not None:
            stable.before_step(st, live)
        actions[:] = -1
        mask = st.mask[live]
        actor = st.actor[live].astype(np.int64)
        forced = mask.sum(-1) == 1
        acts = np.where(forced, mask.argmax(-1), -1)
        ask = np.flatnonzero(~forced)
        if ask.size:
            g = live[ask]
            obs = encode(st, g, actor[ask])
            who = seat_agent[g, actor[ask]]
            for a in np.unique(who):
                sel = np.flatnonzero(who == a)
                acts[ask[sel]] = decide(agents[a], obs[sel], mask[ask[sel]], st, g[sel])
        actions[live] = acts
        ended = core.step(rules, st, actions)
        if on_hands is not None:
            on_hands(int(ended.sum()))


def game_stats(st: State) -> dict[str, np.ndarray]:
    """Per game and seat ``[G, n]`` statistics of finished hands."""
    n = st.num_players
    seats = np.arange(n)[None, :]
    end = st.end[:, None]
    recv = st.ledger.sum(1).astype(np.int64)  # [G, n(payee), items]
    return {
        "hands": np.ones(st.winners.shape, dtype=np.int64),
        "score": ledger_deltas(st.ledger).astype(np.int64),
        "wins": st.winners.astype(np.int64),
        "self_draws": (st.winners & (end == END_ZIMO)).astype(np.int64),
        "deal_ins": (
            ((end == END_RON) | (end == END_QIANGGANG)) & (st.turn_seat[:, None] == seats)
        ).astype(np.int64),
        "draws": np.broadcast_to(end == END_DRAW, st.winners.shape).astype(np.int64),
        "hu_value": recv[..., I_HU],
        "kongs": (st.meld >= AN_KONG).sum(-1).astype(np.int64),
        "chickens": recv[..., I_CHICKEN] + recv[..., I_CHONGFENG] + recv[..., I_ZEREN],
        "dou": recv[..., I_DOU_AN] + recv[..., I_DOU_BU] + recv[..., I_DOU_MING],
        "baoting": (st.baoting > 0).astype(np.int64),
    }


@dataclass
class Chunk:
    """The games of one chunk: deals ``deal_ids`` x every seating."""

    index: int
    deal_ids: np.ndarray


def _chunk_games(chunk: Chunk, rotations: np.ndarray, seed: int, n: int):
    walls, dealers = deal_walls(seed, chunk.deal_ids, n)
    r = len(rotations)
    deal = np.repeat(chunk.deal_ids, r)
    rot = np.tile(np.arange(r), len(chunk.deal_ids))
    return np.repeat(walls, r, 0), np.repeat(dealers, r), deal, rot


def run_chunk(
    rules: Rules,
    agents: Sequence[Agent],
    rotations: np.ndarray,
    seed: int,
    chunk: Chunk,
    on_hands=None,
    keep: bool = False,
    wall: str = "shared",
) -> dict[str, Any]:
    """Play a chunk; returns per (deal, agent) sums ``acc [D, A, FIELDS]`` (rows in
    ``chunk.deal_ids`` order) and, with ``keep``, the games themselves."""
    n = rules.num_players
    for i, agent in enumerate(agents):
        agent.reseed([seed, i, chunk.index])
    walls, dealers, deal, rot = _chunk_games(chunk, rotations, seed, n)
    seat_agent = rotations[rot]
    st = play_games(rules, agents, walls, dealers, seat_agent, on_hands, wall)
    stats = game_stats(st)
    d_local = np.repeat(np.arange(len(chunk.deal_ids)), len(rotations))
    acc = np.zeros((len(chunk.deal_ids), len(agents), len(FIELDS)), dtype=np.int64)
    rows = np.broadcast_to(d_local[:, None], seat_agent.shape).ravel()
    cols = seat_agent.ravel()
    for name, value in stats.items():
        np.add.at(acc[..., FIELD_INDEX[name]], (rows, cols), value.ravel())
    out: dict[str, Any] = {"deal_ids": chunk.deal_ids, "acc": acc}
    if keep:
        out["games"] = {
            "deal": deal,
            "rotation": rot,
            "wall": st.wall.copy(),
            "dealer": st.dealer.astype(np.int64),
            "seat_agent": seat_agent,
            "scores": stats["score"],
            "records": [record_of(rules, st, i) for i in range(st.batch_size)],
        }
    return out


# --------------------------------------------------------------------------- statistics
def interval_text(ci, digits: int = 3) -> str:
    """An interval as tables print it, ``[-0.123, +0.456]``; ``n/a (one deal)`` where it is
    undefined (NaN: a mean over a single deal has no interval)."""
    lo, hi = ci
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return "n/a (one deal)"
    return f"[{lo:+.{digits}f}, {hi:+.{digits}f}]"


def _check_level(level) -> None:
    if not is_real(level) or not 0 < level < 1:
        raise ValueError(
            f"level must be a number strictly between 0 and 1 (e.g. 0.95), got {level!r}"
        )


def _t_quantile(level: float, dof: int) -> float:
    """Student's t quantile of a two-sided interval at ``level`` with ``dof`` degrees of
    freedom (``scipy.stats.t``, imported here: a second to load, and rarely needed)."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(0.5 + level / 2, dof))


def mean_ci(x, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval of independent samples ``x``, at confidence
    ``level`` (strictly between 0 and 1).

    Student's t quantile (``scipy.stats.t``, a dependency: the normal quantile in its place
    made 3 deals' interval 2.2 times too narrow). Fewer than two samples give a NaN interval.
    """
    _check_level(level)
    x = np.asarray(x, dtype=np.float64)
    m = float(x.mean()) if x.size else math.nan
    if x.size < 2:
        return m, math.nan, math.nan
    se = float(x.std(ddof=1)) / math.sqrt(x.size)
    q = _t_quantile(level, x.size - 1)
    return m, m - q * se, m + q * se


def clustered_mean_ci(x, clusters, level: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``x`` and its Student-t interval where samples of one cluster (``clusters``,
    the same length: e.g. the table each decision was made at) may be correlated and clusters
    are independent: the cluster-robust standard error (sums of deviations per cluster, scaled
    by C/(C-1)) with C-1 degrees of freedom. With every sample its own cluster this is
    :func:`mean_ci`; fewer than two clusters give a NaN interval."""
    _check_level(level)
    x = np.asarray(x, dtype=np.float64)
    ids, cl = np.unique(np.asarray(clusters), return_inverse=True)
    if cl.shape != x.shape or x.ndim != 1:
        raise ValueError(
            f"clusters must name one cluster per sample, got {cl.shape} for samples {x.shape}"
        )
    m = float(x.mean()) if x.size else math.nan
    if ids.size < 2:
        return m, math.nan, math.nan
    sums = np.bincount(cl, weights=x - m, minlength=ids.size)
    se = math.sqrt(ids.size / (ids.size - 1) * float((sums**2).sum())) / x.size
    q = _t_quantile(level, ids.size - 1)
    return m, m - q * se, m + q * se


@dataclass
class ArenaResult:
    """Per deal and agent sums of the statistics, with summaries."""

    labels: list[str]
    specs: list[str]
    rules: Rules
    seed: int
    rotations: np.ndarray
    acc: np.ndarray  # int64 [D, A, FIELDS]
    seconds: float = 0.0
    games: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def deals(self) -> int:
        return self.acc.shape[0]

    def deal_scores(self) -> np.ndarray:
        """float ``[D, A]``: each agent's mean score per hand in each deal."""
        a = self.acc
        return a[..., FIELD_INDEX["score"]] / np.maximum(a[..., FIELD_INDEX["hands"]], 1)

    def margin(self, a: str, b: str) -> tuple[float, list[float]]:
        """Mean score per hand of agent ``a`` minus agent ``b``, paired by deal, and its 95%
        interval (the pairwise margin of :meth:`summary`, in either order)."""
        unknown = [x for x in (a, b) if x not in self.labels]
        if unknown:
            raise ValueError(f"no agent {unknown[0]!r} in this arena: its labels are {self.labels}")
        i, j = self.labels.index(a), self.labels.index(b)
        per_deal = self.deal_scores()
        m, lo, hi = mean_ci(per_deal[:, i] - per_deal[:, j])
        return m, [lo, hi]

    def summary(self) -> dict[str, Any]:
        per_deal = self.deal_scores()
        tot = self.acc.sum(0).astype(np.float64)  # [A, FIELDS]
        agents = {}
        for i, label in enumerate(self.labels):
            t = tot[i]
            hands = max(t[FIELD_INDEX["hands"]], 1.0)
            m, lo, hi = mean_ci(per_deal[:, i])
            agents[label] = {
                "spec": self.specs[i],
                "mean": m,
                "ci95": [lo, hi],
                "hands": int(t[FIELD_INDEX["hands"]]),
                "win_rate": t[FIELD_INDEX["wins"]] / hands,
                "self_draw_rate": t[FIELD_INDEX["self_draws"]] / hands,
                "deal_in_rate": t[FIELD_INDEX["deal_ins"]] / hands,
                "win_value": t[FIELD_INDEX["hu_value"]] / max(t[FIELD_INDEX["wins"]], 1.0),
                "kongs_per_hand": t[FIELD_INDEX["kongs"]] / hands,
                "chickens_per_hand": t[FIELD_INDEX["chickens"]] / hands,
                "dou_per_hand": t[FIELD_INDEX["dou"]] / hands,
                "baoting_rate": t[FIELD_INDEX["baoting"]] / hands,
                "draw_rate": t[FIELD_INDEX["draws"]] / hands,
            }
        pairs = {}
        for j in range(len(self.labels)):
            for i in range(j):
                m, lo, hi = mean_ci(per_deal[:, j] - per_deal[:, i])
                pairs[f"{self.labels[j]} - {self.labels[i]}"] = {
                    "a": self.labels[j],
                    "b": self.labels[i],
                    "mean": m,
                    "ci95": [lo, hi],
                    "significant": bool(lo > 0 or hi < 0),
                }
        games = len(self.rotations) * self.deals
        all_hands = tot[:, FIELD_INDEX["hands"]].sum()
        return {
            "agents": agents,
            "pairs": pairs,
            "deals": self.deals,
            "games": int(games),
            "preset": self.rules.preset,
            "rules": self.rules.to_record(),
            "num_players": self.rules.num_players,
            "seed": int(self.seed),
            "specs": list(self.specs),
            "seating": [[self.labels[a] for a in row] for row in self.rotations],
            "draw_rate": float(tot[:, FIELD_INDEX["draws"]].sum() / max(all_hands, 1.0)),
            "seconds": self.seconds,
            **self.extra,
        }

    def table(self) -> str:
        s = self.summary()
        w = max(8, *(len(x) for x in self.labels))
        head = (
            f"{'agent':<{w}} {'hands':>7} {'mean':>8} {'95% CI':>19} {'win%':>6} {'zimo%':>6} "
            f"{'dealin%':>7} {'win val':>7} {'kong/h':>6} {'chick/h':>7} {'dou/h':>6} {'draw%':>6}"
        )
        lines = [head, "-" * len(head)]
        for label, a in s["agents"].items():
            lines.append(
                f"{label:<{w}} {a['hands']:>7} {a['mean']:>+8.3f} {interval_text(a['ci95']):>19} "
                f"{100 * a['win_rate']:>6.1f} {100 * a['self_draw_rate']:>6.1f} "
                f"{100 * a['deal_in_rate']:>7.1f} {a['win_value']:>7.2f} "
                f"{a['kongs_per_hand']:>6.3f} {a['chickens_per_hand']:>7.3f} "
                f"{a['dou_per_hand']:>6.3f} {100 * a['draw_rate']:>6.1f}"
            )
        if s["pairs"]:
            lines.append("")
            lines.append("pairwise margins (mean score per hand, paired by deal):")
            pw = max(len(k) for k in s["pairs"])
            for key, p in s["pairs"].items():
                verdict = "significant" if p["significant"] else "not significant"
                lines.append(
                    f"  {key:<{pw}} {p['mean']:>+8.3f}  95% CI {interval_text(p['ci95'])}"
                    + (f"  {verdict}" if self.deals > 1 else "")
                )
        lines.append("")
        if "machine" in s:  # before the last line, which ends with the wall time
            lines.append(f"played on {machine_line(s['machine'])}, with --chunk {s['chunk_games']}")
        lines.append(
            f"{s['deals']} deals x {len(s['seating'])} seatings = {s['games']} hands, "
            f"preset {s['preset']}, seed {s['seed']}, draw rate {100 * s['draw_rate']:.1f}%, "
            f"{s['seconds']:.1f} s"
        )
        return "\n".join(lines)


# --------------------------------------------------------------------------- running
_WORKER: dict[str, Any] = {}


def _worker_init(rules, pickled_agents, rotations, seed, wall):
    agents = pickle.loads(pickled_agents)
    if any(getattr(a, "uses_torch", False) for a in agents):
        import torch

        torch.set_num_threads(1)  # one process per core already
    _WORKER.update(rules=rules, agents=agents, rotations=rotations, seed=seed, wall=wall)


def _worker_run(chunk: Chunk):
    w = _WORKER
    return run_chunk(w["rules"], w["agents"], w["rotations"], w["seed"], chunk, wall=w["wall"])


class _MainNoting(pickle.Pickler):
    """A pickler that notes the classes and functions it saves by a reference to ``__main__``."""

    def __init__(self, file):
        super().__init__(file)
        self.in_main: set[str] = set()

    def reducer_override(self, obj):
        if isinstance(obj, (type, types.FunctionType)) and obj.__module__ == "__main__":
            self.in_main.add(obj.__qualname__)
        return NotImplemented


def _main_in_workers() -> bool:
    """Whether a spawned worker imports this process's ``__main__`` (``multiprocessing``
    does from its module name or file; a notebook, ``python -c`` or a script read from stdin,
    whose ``__file__`` is ``'<stdin>'``, has neither)."""
    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None) is not None:
        return True
    path = getattr(main, "__file__", None)
    return path is not None and os.path.isfile(path)


def pickled_for_workers(agents: Sequence[Agent]) -> bytes:
    """The agents pickled for worker processes, or ``ValueError`` if a worker could not load
    them: they cannot be pickled, or a class is defined in an interactive ``__main__`` (a
    worker, a fresh interpreter, imports classes by their module)."""
    buf = io.BytesIO()
    pickler = _MainNoting(buf)
    try:  # plain pickle: torch's multiprocessing pickler would share tensors through /dev/shm
        pickler.dump(list(agents))
    except Exception as exc:
        raise ValueError(
            f"workers > 1 sends the agents to worker processes, but they cannot be pickled "
            f"({exc}); use workers=1"
        ) from exc
    if pickler.in_main and not _main_in_workers():
        names = ", ".join(sorted(pickler.in_main))
        raise ValueError(
            f"workers > 1 sends the agents to fresh worker processes, which import each "
            f"agent's class by its module, but {names} is defined in the __main__ of this "
            "interactive session (a notebook, python -c, a script on stdin), which they "
            "cannot import: define it in an importable module, or use workers=1"
        )
    return buf.getvalue()


def _play_in_workers(chunks, workers, on_result, rules, agents, rotations, seed, wall):
    """Play ``chunks`` in at most ``workers`` new processes, calling ``on_result`` with each
    chunk's result as it comes; a worker that dies raises ``RuntimeError`` (a pool that
    replaced it would wait for its chunk forever)."""
    pickled = pickled_for_workers(agents)
    # fresh interpreters (not forks): a forked process hangs once torch has started threads
    pool = ProcessPoolExecutor(
        min(workers, len(chunks)),
        mp_context=mp.get_context("spawn"),
        initializer=_worker_init,
        initargs=(rules, pickled, rotations, seed, wall),
    )
    done = False
    try:
        for future in as_completed([pool.submit(_worker_run, c) for c in chunks]):
            on_result(future.result())
        done = True
    except BrokenProcessPool as exc:
        raise RuntimeError(
            f"a worker process of the arena died ({str(exc).rstrip('.')}); its error, if it "
            "could print one, is above. workers > 1 loads the agents in fresh processes: an "
            "agent that cannot be loaded there (its class not importable from its module, or "
            "failing as it is unpickled) or a worker the system killed (out of memory: fewer "
            "workers or a smaller chunk_games) ends the run this way; workers=1 plays in this "
            "process"
        ) from None
    finally:  # after an error, the chunks still in play are not waited for
        pool.shutdown(wait=done, cancel_futures=not done)


CHUNK_BYTES = 256
"""Memory planned per chunk of deals (its ``Chunk`` and id slice) held until the end."""


def planned_memory(
    deals: int,
    num_agents: int,
    num_seatings: int,
    per_chunk: int,
    num_players: int,
    keep: bool,
    processes: int = 0,
) -> int:
    """Bytes an arena plans on: each deal's id and per-agent sums (twice: per chunk, then
    joined), each chunk's bookkeeping, with ``keep`` every game's record and wall, and one
    chunk of games in play (the engine's batch and its observations, float32) in this process
    and in each of ``processes`` workers, each a process that may load a network
    (:data:`~zhuoji_env.limits.TORCH_PROCESS_BYTES`)."""
    per_deal = 8 + 2 * num_agents * len(FIELDS) * 8
    if keep:
        per_deal += num_seatings * (RECORD_BYTES + NUM_TILES + 64)
    chunks = -(-deals // per_chunk)
    in_play = min(per_chunk, deals) * num_seatings
    per_game = batch_memory(1, num_players) + 2 * 4 * OBS_SIZE
    playing = (1 + processes) * in_play * per_game + processes * TORCH_PROCESS_BYTES
    return deals * per_deal + chunks * CHUNK_BYTES + playing


def worker_processes(workers: int, chunks: int, keep_games: bool) -> int:
    """The worker processes an arena of ``chunks`` chunks starts for ``workers`` (0: it plays
    in this process): at most one per chunk, none when it keeps its games."""
    return min(workers, chunks) if workers > 1 and chunks > 1 and not keep_games else 0


def run_arena(
    agents: Sequence[str | Agent],
    deals: int,
    seed: int = 0,
    rules: str | dict | Rules | None = "guiyang",
    chunk_games: int = 4096,
    workers: int = 1,
    progress: bool = True,
    keep_games: bool = False,
    labels: Sequence[str] | None = None,
    seating: str = "permute",
    wall: str = "shared",
    device: str | None = None,
) -> ArenaResult:
    """Play ``deals`` deals x every seating; ``agents`` is a list or tuple of specs and
    :class:`Agent` objects (anything with ``act`` and ``reseed``); ``labels``, if given, one
    distinct non-empty string per agent (default: the specs, ``spec#1``, ``spec#2`` where one
    repeats).

    ``device`` (``cpu``, ``cuda`` or ``auto``) runs the policy networks that specs name there
    (:func:`agents.registry.on_device`; a spec that names its own device keeps it), under the
    specs' own labels; agent objects stay where they are. ``cuda`` is refused where torch sees
    no CUDA device, and the summary records the device only where it changed a spec.

    ``workers > 1`` plays chunks in that many new (spawned) processes (at most one per chunk),
    which receive pickled agents, so an agent object's class must be importable from a module
    (not defined in a notebook); results do not depend on the number of workers (agents are
    reseeded per chunk).
    ``keep_games`` also returns every game's deal, seating index (``rotation``), wall, dealer,
    seats (``seat_agent``), scores and record (small runs only; it plays in this process).
    A number of deals whose memory (:func:`planned_memory`) exceeds this machine's raises
    :class:`~zhuoji_env.limits.SizeError` before any agent is loaded or game played.
    """
    deals = integer_at_least("deals", deals, 1)
    seed = integer_at_least("seed", seed, 0)
    chunk_games = integer_at_least("chunk_games", chunk_games, 1)
    workers = integer_at_least("workers", workers, 1)
    if wall not in WALLS:
        raise ValueError(f"unknown wall mode {wall!r}: allowed {list(WALLS)}")
    agents, specs, labels = named_agents(agents, labels)
    device = check_device(device)
    rules = Rules.make(rules)
    n = rules.num_players
    order = label_order(labels, specs)  # played in label order, reported in the given one
    rotations = played_seatings(order, n, seating)
    per_chunk = max(1, chunk_games // len(rotations))
    processes = worker_processes(workers, -(-deals // per_chunk), keep_games)
    check_memory(
        f"{deals} deals x {len(rotations)} seatings"
        + (f" in {processes} worker processes (workers={workers})" if processes else ""),
        planned_memory(deals, len(agents), len(rotations), per_chunk, n, keep_games, processes),
    )
    if device is not None:
        agents, applied = on_devices(agents, device)
        device = device if applied else None
    objs = [
        make_agent(agents[k], seed=[seed, i], rules=rules)
        if isinstance(agents[k], str)
        else agents[k]
        for i, k in enumerate(order)
    ]
    ids = np.arange(deals)
    chunks = [Chunk(i, ids[s : s + per_chunk]) for i, s in enumerate(range(0, deals, per_chunk))]
    total = deals * len(rotations)
    code_version()  # the code as the games start (describe() at the end reads it again)
    bar = _progress(total, progress)
    start = time.perf_counter()
    results = []
    if processes:

        def collect(res):
            results.append(res)
            bar.update(len(res["deal_ids"]) * len(rotations))

        _play_in_workers(chunks, workers, collect, rules, objs, rotations, seed, wall)
    else:
        for c in chunks:
            results.append(run_chunk(rules, objs, rotations, seed, c, bar.update, keep_games, wall))
    bar.close()
    results.sort(key=lambda r: int(r["deal_ids"][0]))
    given = np.argsort(order)  # agent i of the given order was played as agent given[i]
    acc = np.concatenate([r["acc"] for r in results])[:, given]
    games = None
    if keep_games:
        g = [r["games"] for r in results]
        games = {
            k: (sum((x[k] for x in g), []) if k == "records" else np.concatenate([x[k] for x in g]))
            for k in g[0]
        }
        games["seat_agent"] = np.asarray(order)[games["seat_agent"]]
    return ArenaResult(
        labels,
        specs,
        rules,
        seed,
        np.asarray(order)[rotations],
        acc,
        time.perf_counter() - start,
        games,
        {
            "wall": wall,
            **({"device": device} if device is not None else {}),
            "chunk_games": chunk_games,
            "machine": describe(),
            "versions": stamp(),
        },
    )


def against_each(
    agent: Agent | str,
    label: str,
    opponents: str,
    deals: int,
    seed: int,
    rules,
    workers: int = 1,
) -> dict[str, ArenaResult]:
    """An arena of ``agent`` (an agent or a spec, named ``label``) against each of the
    comma-separated opponent specs, one after the other: ``{spec: result}`` (the trainers'
    evaluations, learning curves and shipped policies' tables)."""
    return {
        opp: run_arena(
            [agent, opp],
            deals,
            seed=seed,
            rules=rules,
            workers=workers,
            progress=False,
            labels=[label, opp],
        )
        for opp in [o for o in opponents.split(",") if o]
    }


class _NoBar:
    def update(self, k=1):
        pass

    def close(self):
        pass


def _progress(total: int, on: bool):
    if not on:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return _NoBar()
    return tqdm(total=total, unit="hand", desc="arena", smoothing=0.05)


# --------------------------------------------------------------------------- CLI
def unwritable(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (checked before a long run), or None."""
    p = Path(path)
    if p.is_dir():
        return "is a folder, not a file"
    if not p.parent.is_dir():
        return f"its folder {str(p.parent)!r} does not exist"
    if not os.access(p.parent, os.W_OK | os.X_OK):
        # the summary goes to a temporary name in this folder, then is renamed over ``path``
        return f"its folder {str(p.parent)!r} is not writable"
    if p.exists() and not os.access(p, os.W_OK):
        return "not writable"
    return None


def standard_json(obj):
    """``obj`` with every NaN or infinite float as None (an interval of one deal is undefined),
    so the summary is standard JSON that any reader parses."""
    if isinstance(obj, dict):
        return {k: standard_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [standard_json(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def json_text(obj, **kwargs) -> str:
    """``json.dumps`` of ``obj`` as standard JSON: a NaN or infinite float (the interval of a
    single deal) is written as null (:func:`standard_json`)."""
    return json.dumps(standard_json(obj), allow_nan=False, **kwargs)


def output_refusal(flag: str, path: str, force: bool) -> str | None:
    """Why a command should not start with ``path`` as its output file ``flag``: it cannot be
    written (:func:`unwritable`), or it exists and ``force`` is not given; None if it may."""
    problem = unwritable(path)
    if problem:
        return f"{flag} {path!r}: {problem}"
    if os.path.lexists(path) and not force:
        return f"{flag} {path!r} exists: give another name, or --force to replace it"
    return None


def import_plugins(parser: argparse.ArgumentParser, plugins: Sequence[str]) -> None:
    """Import each ``--plugin`` (it may register agents): a module name, or the path of a
    Python file (one ending in ``.py`` or naming a folder), imported by its file name after its
    folder is put at the end of ``sys.path``, so that worker processes (fresh interpreters) find
    the classes it defines too; a name that another module already takes is refused rather than
    shadowed. One that cannot be imported is a usage error naming it, and any other exception its
    import raises carries a note naming it."""
    import importlib

    for plugin in plugins:
        module = plugin_module(parser, plugin) if is_plugin_path(plugin) else plugin
        try:
            importlib.import_module(module)
        except ImportError as exc:
            parser.error(f"--plugin {plugin!r}: cannot import it ({exc})")
        except Exception as exc:
            add_note(exc, f"raised while importing --plugin {plugin!r}")
            raise


def is_plugin_path(plugin: str) -> bool:
    """Whether a ``--plugin`` names a file rather than a module."""
    return plugin.endswith(".py") or any(s and s in plugin for s in (os.sep, os.altsep))


def plugin_module(parser: argparse.ArgumentParser, plugin: str) -> str:
    """The module name of the plugin file ``plugin``, its folder added to ``sys.path``."""
    import importlib.util

    path = Path(plugin).resolve()
    if path.suffix != ".py" or not path.is_file():
        parser.error(f"--plugin {plugin!r}: no such Python file (a path ending in .py)")
    name = path.stem
    if not name.isidentifier():
        parser.error(
            f"--plugin {plugin!r}: {name!r} is not a module name (letters, digits and _, not "
            "starting with a digit); rename the file"
        )
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        found = None
    if found is not None and (found.origin is None or Path(found.origin).resolve() != path):
        parser.error(
            f"--plugin {plugin!r}: the module name {name!r} is taken by {found.origin or name!r}; "
            "rename the file"
        )
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    return name


def portable_or_restart(
    parser: argparse.ArgumentParser, flag: str, module: str, argv: Sequence[str] | None
) -> None:
    """Make sure the command runs under the portable numeric mode, which ``flag`` asked for
    (:func:`zhuoji_env.machine.portable_settings`): a command line (``argv`` None) not yet under
    it starts again under it (``python -m module`` with the same arguments); a call from Python
    with its own ``argv``, which cannot switch its numpy and torch, says on stderr that it runs
    without it. On a CPU that is not x86-64, where the mode does not exist, ``--portable`` is a
    usage error and any other flag a note."""
    if is_portable():
        return
    if portable_settings() is None:
        why = f"is for x86-64 CPUs, not this {platform.machine()!r}"
        if flag == "--portable":
            parser.error(f"--portable: the portable numeric mode {why}")
        print(f"note: {flag} runs without the portable numeric mode: it {why}", file=sys.stderr)
        return
    if argv is None:
        run_portably(module, sys.argv[1:])
    print(
        f"note: {flag} runs without the portable numeric mode here: numpy and torch were loaded "
        f"before it was asked for; run `python -m {module}` as a command for it",
        file=sys.stderr,
    )


@exits_2_when_out_of_memory("python -m agents.arena")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("agents.arena"),
        description="Duplicate-style arena: every deal is played in every seating of the "
        "agents over the seats.",
    )
    parser.add_argument("--agents", required=True, help="comma-separated specs, e.g. random,rule")
    parser.add_argument("--deals", type=int, default=1000, help="number of deals (default 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preset", default="guiyang", help="rules preset (guiyang, classic, app)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SWITCH=VALUE",
        help="override a rules switch (JSON value), e.g. --set num_players=3; repeatable",
    )
    parser.add_argument(
        "--seating",
        default="permute",
        choices=SEATING_MODES,
        help="permute: every distinct arrangement of the agents over the seats (default); "
        "rotate: only the cyclic rotations; alone: two agents, the first alone in each seat in "
        "turn, the second in every other seat (1 vs 3)",
    )
    parser.add_argument(
        "--wall",
        default="shared",
        choices=WALLS,
        help="shared: RULES.md's one wall (default); stable: each seat draws the tiles it would "
        "have drawn without claims (StableWall), for studying the wall: measured, it widens the "
        "intervals by 6-9%% rather than narrowing them (docs/ladder.md)",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="write the summary as JSON (never over a file, unless --force)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing --json FILE")
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    parser.add_argument(
        "--device",
        choices=DEVICES,
        help="run the policy networks the specs name on this device (auto: CUDA when torch "
        "sees it); a spec's own device option wins; labels stay the specs",
    )
    parser.add_argument("--chunk", type=int, default=4096, help="games per batch (default 4096)")
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE|FILE.py",
        help="import MODULE, or the Python file FILE.py, first (it may call "
        "agents.register_agent); repeatable",
    )
    parser.add_argument(
        "--portable",
        action="store_true",
        help="run under the portable numeric mode: the same games on every x86-64 CPU with AVX2 "
        "(zhuoji_env.machine.portable_settings)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.portable:
        portable_or_restart(parser, "--portable", "agents.arena", argv)
    check_counts(parser, args, "deals", "workers", "chunk")
    if args.seed < 0:
        parser.error(f"--seed must be a non-negative integer, got {args.seed}")
    refusal = args.json and output_refusal("--json", args.json, args.force)
    if refusal:
        parser.error(refusal)
    import_plugins(parser, args.plugin)
    try:
        specs = split_specs(args.agents, "--agents")
        rules = Rules.make(args.preset, **parse_switches(args.set))
        result = run_arena(
            specs,
            args.deals,
            args.seed,
            rules,
            args.chunk,
            args.workers,
            progress=not args.no_progress,
            seating=args.seating,
            wall=args.wall,
            device=args.device,
        )
    except ValueError as e:
        parser.error(str(e))
    print(result.table())
    if args.json:
        try:  # whole or not at all: a temporary name beside FILE, then a rename
            write_text_atomic(args.json, json_text(result.summary(), indent=2) + "\n")
        except OSError as err:
            parser.error(f"--json {args.json!r}: cannot write it ({err.strerror or err})")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
