"""Play turned into tables (pandas) and charts (matplotlib), for notebooks.

:func:`play_traced` plays ``deals`` deals with every seating of the agents (the arena's duplicate
scheme and its default seating, ``permute``, :mod:`agents.arena`) and keeps everything a
researcher asks about:

- ``decisions``: one row per decision: the game, seat and agent, the situation (phase, shanten,
  tiles left, which claims were offered, the legal actions; ``waits``/``n_waits`` are the
  observation's waits block: the kinds that complete a hand of 3k+1 tiles, or whose discard
  leaves a hand of 3k+2 tiles ready), the chosen action (``least_shanten``: a discard that keeps
  the least shanten), the agent's probability of it, its top choices and value estimate when it
  has a policy (below), and the hand's outcome for that seat (score, win, how the hand ended);
- ``hands``: one row per (game, seat): the deal and seating, the agent, its score and the
  arena's statistics;
- ``ledger``: one row per settlement line (payer, payee, item, amount), with both agents;
- ``records``: every hand as a record (RULES.md 10) carrying the optional per-decision fields
  ``probs``, ``values`` and ``agents`` that the replay viewer shows (:mod:`zhuoji_env.view`).

An agent **has a policy** when it offers ``policy(obs, mask) -> (probs [k, 86], value [k])``
(the PPO agents do, whatever observation version their network reads), the probabilities of
each row's legal actions summing to 1 (the viewer shows them); its value estimate
is in the units it was trained on (the PPO scripts' ``reward_scale`` x score; a PPO agent's
``reward_scale`` attribute), NaN where the agent has none (a ``ppo`` policy whose value head was
never trained, ``value_trained`` False: its probabilities are kept all the same).
Observations and masks of every decision are kept (``obs``, ``masks``) for the ablation of
observation blocks (:func:`block_ablation`) and for asking another agent what it would have done
(:func:`agreement`).

The mean scores of :func:`behaviour`, :func:`claims` and :func:`calibration` carry 95%
intervals clustered by deal (:func:`agents.arena.clustered_mean_ci`): the seatings of one deal
share its tiles, and the decisions of one seat-hand its final score, so the deals are the
independent samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agents.arena import (
    check_agent,
    clustered_mean_ci,
    deal_walls,
    game_stats,
    integer_at_least,
    label_order,
    named_agents,
    played_seatings,
)
from agents.base import Agent, decide, policy_outputs
from agents.registry import make_agent
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.game import is_integer, is_real
from zhuoji_env.engine.records import deltas, record_of
from zhuoji_env.engine.state import END_NAMES, ITEMS, OVER
from zhuoji_env.observation import LAYOUT, OBS_SIZE, SLICES, block, encode
from zhuoji_env.picture import ITEM_LABELS
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import CODES

PHASES = ("turn", "response", "rob", "baoting_discard")
"""Decision types, by the engine's phase codes."""


def action_kind(a: int) -> str:
    """``discard``, ``angang``, ``bugang``, ``pong``, ``kong``, ``hu``, ``pass`` or ``baoting``."""
    return A.decode(a)[0]


@dataclass
class Play:
    """What :func:`play_traced` kept (module doc)."""

    decisions: pd.DataFrame
    hands: pd.DataFrame
    ledger: pd.DataFrame
    records: list[dict[str, Any]]
    obs: np.ndarray  # float32 [D, OBS_SIZE]: the observation of each decision row
    masks: np.ndarray  # bool [D, 86]
    labels: list[str]
    rules: Rules
    agents: list[Agent] = field(repr=False, default_factory=list)

    def agent(self, label: str) -> Agent:
        """The agent object behind a label; ``ValueError`` listing the labels for another
        (the check every per-agent table makes first)."""
        if not isinstance(label, str) or label not in self.labels:
            raise ValueError(f"no agent {label!r} in this play: its labels are {self.labels}")
        return self.agents[self.labels.index(label)]


def play_traced(
    agents: Sequence[str | Agent],
    deals: int,
    seed: int = 0,
    rules: str | dict | Rules | None = "guiyang",
    seating: str = "permute",
    labels: Sequence[str] | None = None,
    forced: bool = False,
) -> Play:
    """Play ``deals`` deals x every seating and trace every decision where the actor had a
    choice (``forced=True`` keeps the single-option ones too).

    The games are the arena's (``run_arena(agents, deals, seed, rules, seating=seating)`` plays
    the same hands when its deals fit one chunk), with its default seating, ``permute``: every
    distinct arrangement of each composition of the agents over the seats (24 games a deal for
    four agents at four seats, 6 for two). ``"rotate"`` plays only rotations (4 and 2), in which
    the order around the table never changes, a bias :mod:`agents.arena` measures. Deal ``d`` is
    game ``d`` of a ``BatchGame(rules, seed=seed)``, and the agents are reseeded as in the
    arena's first chunk.
    ``agents`` and ``labels`` are checked as the arena's (:func:`agents.arena.named_agents`).
    """
    deals = integer_at_least("deals", deals, 1)
    seed = integer_at_least("seed", seed, 0)
    agents, specs, labels = named_agents(agents, labels)
    rules = Rules.make(rules)
    order = label_order(labels, specs)  # as the arena plays them: the order given is moot
    objs = [
        make_agent(agents[k], seed=[seed, i], rules=rules)
        if isinstance(agents[k], str)
        else agents[k]
        for i, k in enumerate(order)
    ]
    for i, agent in enumerate(objs):  # as the arena's first chunk: the same games result
        agent.reseed([seed, i, 0])
    n = rules.num_players
    rotations = np.asarray(order)[played_seatings(order, n, seating)]
    objs = [objs[i] for i in np.argsort(order)]
    r = len(rotations)
    walls, dealers = deal_walls(seed, np.arange(deals), n)
    walls, dealers = np.repeat(walls, r, 0), np.repeat(dealers, r)
    deal_of = np.repeat(np.arange(deals), r)
    rot_of = np.tile(np.arange(r), deals)
    seat_agent = rotations[rot_of]
    st = core.deal(rules, walls, dealers, 0)
    g_count = len(walls)
    rows: list[dict[str, Any]] = []
    obs_rows, mask_rows = [], []
    probs_rec: list[list] = [[] for _ in range(g_count)]
    values_rec: list[list] = [[] for _ in range(g_count)]
    actions = np.full(g_count, -1, dtype=np.int64)
    while True:
        live = np.flatnonzero(st.phase != OVER)
        if not live.size:
            break
        mask = st.mask[live]
        actor = st.actor[live].astype(np.int64)
        obs = encode(st, live, actor)
        acts = np.where(mask.sum(-1) == 1, mask.argmax(-1), -1)
        probs = np.full((live.size, A.NUM_ACTIONS), np.nan)
        value = np.full(live.size, np.nan)
        ask = np.flatnonzero(acts < 0)
        who = seat_agent[live, actor]
        for a in np.unique(who[ask]):
            sel = ask[who[ask] == a]
            acts[sel] = decide(objs[a], obs[sel], mask[sel], st, live[sel])
            out = policy_outputs(objs[a], obs[sel], mask[sel])
            if out is not None:
                probs[sel], value[sel] = out
        for j, g in enumerate(live):
            has_p = not np.isnan(probs[j]).all()  # its value may be NaN (module doc)
            legal = np.flatnonzero(mask[j])
            probs_rec[g].append(
                {A.describe(x): round(float(probs[j, x]), 4) for x in legal} if has_p else None
            )
            values_rec[g].append(None if np.isnan(value[j]) else round(float(value[j]), 4))
            if len(legal) == 1 and not forced:
                continue
            rows.append(_decision_row(st, int(g), obs[j], legal, int(acts[j]), probs[j], value[j]))
            rows[-1].update(deal=int(deal_of[g]), rotation=int(rot_of[g]), agent=labels[who[j]])
            obs_rows.append(obs[j])
            mask_rows.append(mask[j])
        actions[:] = -1
        actions[live] = acts
        core.step(rules, st, actions)
    decisions = pd.DataFrame(rows)
    score = deltas(st.ledger)
    end = [END_NAMES[e] for e in st.end]
    if len(decisions):
        g, s = decisions["game"].to_numpy(), decisions["seat"].to_numpy()
        decisions["final_score"] = score[g, s]
        decisions["won"] = st.winners[g, s]
        decisions["hand_end"] = [end[x] for x in g]
    records = []
    for g in range(g_count):
        rec = record_of(rules, st, g)
        rec.update(
            probs=probs_rec[g],
            values=values_rec[g],
            agents=[labels[a] for a in seat_agent[g]],
        )
        records.append(rec)
    return Play(
        decisions=decisions,
        hands=_hands_table(st, seat_agent, labels, deal_of, rot_of),
        ledger=ledger_table(records),
        records=records,
        obs=np.array(obs_rows, dtype=np.float32).reshape(-1, OBS_SIZE),
        masks=np.array(mask_rows, dtype=bool).reshape(-1, A.NUM_ACTIONS),
        labels=labels,
        rules=rules,
        agents=objs,
    )


def _decision_row(st, g, obs, legal, action, probs, value) -> dict[str, Any]:
    """The situation and choice of one decision (module doc)."""
    offered = {action_kind(x) for x in legal}
    waits = np.flatnonzero(block(obs, "waits") > 0.5)
    row = {
        "game": g,
        "step": int(st.rec_len[g]),
        "seat": int(st.actor[g]),
        "phase": PHASES[int(st.phase[g])],
        "shanten": int(block(obs, "shanten").argmax()) - 1,
        "n_waits": int(waits.size),
        "waits": " ".join(CODES[k] for k in waits),
        "tiles_left": int(round(float(block(obs, "wall")[0]) * 108)),
        "tile": CODES[int(st.tile[g])] if st.tile[g] >= 0 else None,
        "can_hu": "hu" in offered,
        "can_pong": "pong" in offered,
        "can_kong": bool(offered & {"kong", "angang", "bugang"}),
        "n_legal": int(legal.size),
        "legal": ", ".join(A.describe(x) for x in legal),
        "action": action,
        "action_name": A.describe(action),
        "kind": action_kind(action),
        "least_shanten": bool(block(obs, "best_discard")[action - A.DISCARD] > 0.5)
        if action_kind(action) == "discard"
        else None,
        "prob": float(probs[action]),
        "value": float(value),
    }
    if not np.isnan(probs).all():
        top = np.argsort(-probs[legal], kind="stable")[:3]
        row["top"] = ", ".join(f"{A.describe(legal[t])} {probs[legal[t]]:.2f}" for t in top)
    else:
        row["top"] = None
    return row


def _hands_table(st, seat_agent, labels, deal_of, rot_of) -> pd.DataFrame:
    stats = game_stats(st)
    g_count, n = seat_agent.shape
    g = np.repeat(np.arange(g_count), n)
    s = np.tile(np.arange(n), g_count)
    table = {
        "game": g,
        "deal": deal_of[g],
        "rotation": rot_of[g],
        "seat": s,
        "agent": [labels[a] for a in seat_agent[g, s]],
        "end": [END_NAMES[e] for e in st.end[g]],
    }
    for name, value in stats.items():
        if name != "hands":
            table[name] = value.reshape(-1)
    return pd.DataFrame(table)


def ledger_table(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per settlement line of each record's ``result``: ``game`` (its index in
    ``records``), ``payer``, ``payee``, ``item``, ``label`` (RULES.md 7 name), ``amount``, and
    with the records' ``agents`` field, ``payer_agent`` and ``payee_agent``."""
    rows = []
    for g, rec in enumerate(records):
        if "result" not in rec:
            raise ValueError(f"record {g} has no result: the hand is not over")
        agents = rec.get("agents")
        for k, (payer, payee, amount, item) in enumerate(rec["result"]["ledger"]):
            _check_ledger_line(f"record {g}, ledger line {k}", payer, payee, item, agents)
            row = {
                "game": g,
                "payer": int(payer),
                "payee": int(payee),
                "item": item,
                "label": ITEM_LABELS[item],
                "amount": int(amount),
            }
            if agents is not None:
                row.update(payer_agent=agents[payer], payee_agent=agents[payee])
            rows.append(row)
    cols = ["game", "payer", "payee", "item", "label", "amount", "payer_agent", "payee_agent"]
    df = pd.DataFrame(rows, columns=cols)
    return df if any(r.get("agents") for r in records) else df.drop(columns=cols[-2:])


def _check_ledger_line(where: str, payer, payee, item, agents) -> None:
    """Refuse a ledger line whose item is not RULES.md 7's or whose seats are not seat indices
    (within the record's ``agents`` list where it has one)."""
    if not isinstance(item, str) or item not in ITEM_LABELS:
        raise ValueError(f"{where}: unknown item {item!r}: allowed {list(ITEM_LABELS)}")
    for role, seat in (("payer", payer), ("payee", payee)):
        if not is_integer(seat) or seat < 0:
            raise ValueError(f"{where}: {role} {seat!r} is not a seat (an integer >= 0)")
        if agents is not None and seat >= len(agents):
            raise ValueError(
                f"{where}: {role} {seat!r} is not a seat of the record's agents list, which "
                f"names {len(agents)} seats (0-{len(agents) - 1})"
            )


def item_sources(play: Play) -> pd.DataFrame:
    """Net points per hand of each agent by ledger item (received minus paid, over its
    seat-hands): where each agent's points come from. Rows: agents; columns: items (in
    RULES.md 7 order) and ``total``, which equals the agent's mean score per hand."""
    led = play.ledger
    hands = play.hands.groupby("agent").size()
    got = led.groupby(["payee_agent", "item"])["amount"].sum().rename_axis(["agent", "item"])
    paid = led.groupby(["payer_agent", "item"])["amount"].sum().rename_axis(["agent", "item"])
    net = got.sub(paid, fill_value=0).unstack(fill_value=0)
    net = net.reindex(index=play.labels, columns=[i for i in ITEMS if i in net.columns])
    net = net.fillna(0).div(hands.reindex(play.labels), axis=0)
    net["total"] = net.sum(axis=1)
    return net


def deal_ci(values, deals) -> tuple[float, float, float]:
    """Mean of ``values`` and its 95% interval clustered by deal (module doc): NaNs where there
    are no values, a NaN interval with fewer than two deals."""
    values = np.asarray(values, dtype=np.float64)
    if not values.size:
        return math.nan, math.nan, math.nan
    return clustered_mean_ci(values, np.asarray(deals))


def behaviour(play: Play) -> pd.DataFrame:
    """Per agent: hands, mean score with its 95% interval (``score_low``, ``score_high``,
    clustered by deal: module doc), win, self-draw and deal-in rates, kongs, chickens and 报听
    per hand, and the average value of its wins (``hu`` receipts per win)."""
    h = play.hands
    out = h.groupby("agent").agg(
        hands=("score", "size"),
        mean_score=("score", "mean"),
        win_rate=("wins", "mean"),
        self_draw_rate=("self_draws", "mean"),
        deal_in_rate=("deal_ins", "mean"),
        kongs_per_hand=("kongs", "mean"),
        chickens_per_hand=("chickens", "mean"),
        baoting_rate=("baoting", "mean"),
        hu_total=("hu_value", "sum"),
        wins=("wins", "sum"),
    )
    out["win_value"] = out["hu_total"] / out["wins"].clip(lower=1)
    ci = {a: deal_ci(g.score, g.deal)[1:] for a, g in h.groupby("agent")}
    out.insert(2, "score_low", [ci[a][0] for a in out.index])
    out.insert(3, "score_high", [ci[a][1] for a in out.index])
    return out.drop(columns=["hu_total", "wins"]).reindex(play.labels)


def win_values(play: Play) -> pd.DataFrame:
    """Per agent: wins per 100 of its hands by how the hand was won (``discard``, a rob
    included, or ``self-draw``, 自摸) and by its ``hu`` receipts (the hand value, pattern plus
    extras, RULES.md 7.2, summed over the seats that pay it): which hands each agent wins, and
    how big. Rows: agents; columns: (way, receipts), in increasing receipts."""
    h = play.hands
    won = h[h.wins > 0]
    way = np.where(won.self_draws > 0, "self-draw", "discard")
    table = pd.crosstab(won.agent, [pd.Series(way, index=won.index, name="way"), won.hu_value])
    per_100 = 100 / h.groupby("agent").size()
    return table.mul(per_100, axis=0).reindex(index=play.labels).fillna(0)


def agreement(play: Play, label: str, reference: str | Agent, seed: int = 0) -> pd.DataFrame:
    """How often agent ``label``'s decisions equal what ``reference`` (a spec or an agent)
    would choose in the same observations, by decision type (phase) and overall."""
    play.agent(label)
    check_agent(reference, "reference")
    ref = (
        make_agent(reference, seed=seed, rules=play.rules)
        if isinstance(reference, str)
        else reference
    )
    sel = np.flatnonzero(play.decisions["agent"].to_numpy() == label)
    if not sel.size:
        raise ValueError(f"no decisions of agent {label!r}: agents are {play.labels}")
    d = play.decisions.iloc[sel].copy()
    d["reference"] = ref.act(play.obs[sel], play.masks[sel])
    d["agree"] = d["reference"].to_numpy() == d["action"].to_numpy()
    by = d.groupby("phase")["agree"].agg(decisions="size", agreement="mean")
    by.loc["all"] = [len(d), d["agree"].mean()]
    return by


def discard_choice(play: Play, label: str) -> pd.DataFrame:
    """Agent ``label``'s discards by the shanten of its hand before discarding: how many, the
    share that keep the least shanten (the observation's ``best_discard`` block), and the mean
    number of kinds whose discard would leave the hand ready (its choices at shanten 0)."""
    play.agent(label)
    d = play.decisions
    d = d[(d.agent == label) & (d.kind == "discard")]
    if d.empty:
        raise ValueError(f"no discards of agent {label!r}: agents are {play.labels}")
    d = d.assign(least_shanten=d["least_shanten"].astype(np.float64))  # bool, None elsewhere
    return d.groupby("shanten").agg(
        discards=("kind", "size"),
        least_shanten=("least_shanten", "mean"),
        ready_discards=("n_waits", "mean"),
    )


def claims(play: Play, label: str) -> pd.DataFrame:
    """Agent ``label``'s answers to offered claims (``hu``, ``pong``, ``kong``: a claimed kong,
    or its own concealed or added kong in its turn): how often offered and taken, and the mean
    hand score of the seat when it took the claim and when it let it go, each with its 95%
    interval clustered by deal (``taken_low`` ... ``declined_high``; module doc). The scores
    describe the hands in which each choice was made, not what the choice earned: the hands
    offered a claim, and those in which it was taken, differ in more than the choice."""
    play.agent(label)
    d = play.decisions[play.decisions.agent == label]
    rows = []
    for offer, col, kinds in (
        ("hu", "can_hu", {"hu"}),
        ("pong", "can_pong", {"pong"}),
        ("kong", "can_kong", {"kong", "angang", "bugang"}),
    ):
        o = d[d[col]]
        took = o.kind.isin(kinds).to_numpy()
        row = {"claim": offer, "offered": len(o), "taken_rate": took.mean() if len(o) else np.nan}
        for name, sel in (("taken", took), ("declined", ~took)):
            m, lo, hi = deal_ci(o.final_score[sel], o.deal[sel])
            row.update({f"score_when_{name}": m, f"{name}_low": lo, f"{name}_high": hi})
        rows.append(row)
    return pd.DataFrame(rows).set_index("claim")


def block_ablation(play: Play, label: str, blocks: Sequence[str] | None = None) -> pd.DataFrame:
    """Which blocks of its input matter to a policy: each block zeroed in turn over agent
    ``label``'s decisions, the share of decisions whose most likely action changes and the mean
    total-variation distance between the policies, sorted by that distance. ``blocks``: a list
    of block names (default: every block).

    The blocks are the observation's, or, for a ``ppo`` network that reads more
    (:class:`agents.ppo.NetInput`: ``--features``, ``--rule-hint``), those of its input: the
    observation's, the derived ones (``unseen``, ``passport``, ``wait_value``, ``live_waits``)
    and ``rule``'s advice (``rule_choice``, ``rule_gap``). That input is made once from the
    intact observations and each block is zeroed in it alone, so zeroing the ``hand`` leaves
    the advice worked out from the hand as the network read it, and the advice is a block of
    its own: how much the policy follows ``rule``."""
    agent = play.agent(label)
    reader = getattr(agent, "read", None)
    by_input = hasattr(reader, "blocks") and hasattr(agent, "input_policy")
    layout = reader.blocks if by_input else SLICES
    if blocks is not None:
        if isinstance(blocks, str) or not isinstance(blocks, (list, tuple)):
            raise TypeError(
                f"blocks must be a list of input block names (or None for all), got {blocks!r}"
            )
        if not blocks:
            raise ValueError(
                f"blocks is empty: name at least one of {list(layout)}, or None for all"
            )
    names = list(layout) if blocks is None else list(blocks)
    for name in names:
        if name not in layout:
            raise ValueError(f"unknown input block {name!r} of {label!r}: allowed {list(layout)}")
    sel = np.flatnonzero(play.decisions["agent"].to_numpy() == label)
    obs, mask = play.obs[sel], play.masks[sel]
    if by_input:
        x = reader(obs, mask)

        def probs(zeroed: str | None) -> np.ndarray:
            xi = x.copy()
            if zeroed is not None:
                xi[:, layout[zeroed]] = 0
            return agent.input_policy(xi, mask)

    else:
        if policy_outputs(agent, obs[:1], mask[:1]) is None:
            raise ValueError(f"agent {label!r} has no policy to ablate (module doc)")

        def probs(zeroed: str | None) -> np.ndarray:
            o = obs.copy()
            if zeroed is not None:
                o[:, layout[zeroed]] = 0
            return policy_outputs(agent, o, mask)[0]

    p0 = probs(None)
    rows = []
    for name in names:
        p = probs(name)
        rows.append(
            {
                "block": name,
                "argmax_changed": float((p.argmax(-1) != p0.argmax(-1)).mean()),
                "tv_distance": float(0.5 * np.abs(p - p0).sum(-1).mean()),
            }
        )
    return pd.DataFrame(rows).sort_values("tv_distance", ascending=False, ignore_index=True)


def calibration(decisions: pd.DataFrame, scale: float = 1.0, bins: int = 8) -> pd.DataFrame:
    """Value estimate (divided by ``scale``, e.g. the agent's ``reward_scale``) against the
    realised hand score, in quantile bins of the estimate: mean estimate, mean score with its
    95% interval (``score_low``, ``score_high``: clustered by deal, module doc), count.
    ``decisions``: rows of :attr:`Play.decisions`; ``scale`` a finite number > 0; ``bins`` an
    integer >= 1."""
    if not isinstance(decisions, pd.DataFrame):
        raise TypeError(f"decisions must be a DataFrame (Play.decisions), got {type(decisions)}")
    missing = [c for c in ("value", "final_score", "deal") if c not in decisions.columns]
    if missing:
        raise ValueError(
            f"decisions has no column {', '.join(map(repr, missing))}: pass Play.decisions of "
            "play_traced, or rows of it"
        )
    if not is_real(scale) or not (math.isfinite(scale) and scale > 0):
        raise ValueError(
            f"scale must be a finite number > 0 (e.g. the training reward_scale), got {scale!r}"
        )
    bins = integer_at_least("bins", bins, 1)
    d = decisions.dropna(subset=["value"])
    if d.empty:
        raise ValueError("no decisions with a value estimate (an agent with a policy is needed)")
    est = d["value"] / scale
    q = pd.qcut(est, q=min(bins, est.nunique()), duplicates="drop")
    rows = []
    for _, b in pd.DataFrame(
        {"estimate": est, "score": d["final_score"], "deal": d["deal"], "bin": q}
    ).groupby("bin", observed=True):
        score, low, high = deal_ci(b["score"], b["deal"])
        rows.append(
            {
                "estimate": b["estimate"].mean(),
                "score": score,
                "score_low": low,
                "score_high": high,
                "decisions": len(b),
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- charts
def _axes(ax, size=(6, 3.5)):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size)[1]


def plot_scores(summary: dict[str, Any], ax=None, title: str | None = None):
    """Mean score per hand of each agent with its 95% interval, from an arena summary
    (``ArenaResult.summary()``, or one read back from its JSON); an agent without an interval
    (one deal: NaN, or null in the JSON) gets no error bar."""
    ax = _axes(ax)
    agents = summary["agents"]
    names = list(agents)
    means = np.array([agents[a]["mean"] for a in names], dtype=np.float64)
    ci = np.array(
        [[np.nan if x is None else x for x in agents[a]["ci95"]] for a in names], dtype=np.float64
    ).reshape(len(names), 2)
    ax.bar(names, means, yerr=[means - ci[:, 0], ci[:, 1] - means], capsize=5, color="#4a7fc0")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_ylabel("mean score per hand")
    ax.set_title(title or f"{summary['preset']}: {summary['deals']} deals, 95% intervals")
    return ax


def plot_item_sources(sources: pd.DataFrame, ax=None, title: str = "points per hand by item"):
    """Horizontal stacked bars of :func:`item_sources`: gains right of zero, losses left."""
    import matplotlib

    if not isinstance(sources, pd.DataFrame):
        raise TypeError(f"sources must be the DataFrame of item_sources(play), got {type(sources)}")
    if "total" not in sources.columns:
        raise ValueError("sources has no 'total' column: pass the table of item_sources(play)")
    unknown = [c for c in sources.columns if c != "total" and c not in ITEMS]
    if unknown:
        raise ValueError(
            f"sources has columns {unknown} that are no ledger items: allowed {list(ITEMS)} "
            "and 'total' (the table of item_sources(play))"
        )
    ax = _axes(ax, (7, 0.6 + 0.5 * len(sources)))
    items = [c for c in sources.columns if c != "total"]
    colours = dict(zip(ITEMS, matplotlib.colormaps["tab20"].colors, strict=False))
    pos = np.zeros(len(sources))
    neg = np.zeros(len(sources))
    y = np.arange(len(sources))
    for item in items:
        v = sources[item].to_numpy()
        left = np.where(v >= 0, pos, neg)
        ax.barh(y, v, left=left, color=colours[item], label=item)
        pos += np.clip(v, 0, None)
        neg += np.clip(v, None, 0)
    ax.scatter(sources["total"], y, color="black", zorder=3, label="total")
    ax.set_yticks(y, sources.index)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel("net points per hand")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return ax


def plot_calibration(table: pd.DataFrame, ax=None):
    """Mean realised score against mean value estimate per bin (:func:`calibration`), with its
    95% interval where the table has one (``score_low``, ``score_high``)."""
    ax = _axes(ax, (4.5, 4))
    ax.plot(table["estimate"], table["score"], "o-", label="policy")
    if {"score_low", "score_high"} <= set(table.columns):
        ax.errorbar(
            table["estimate"],
            table["score"],
            yerr=[table["score"] - table["score_low"], table["score_high"] - table["score"]],
            fmt="none",
            ecolor="C0",
            capsize=3,
        )
    lim = [
        min(table["estimate"].min(), table["score"].min()),
        max(table["estimate"].max(), table["score"].max()),
    ]
    ax.plot(lim, lim, "--", color="grey", label="perfect")
    ax.set_xlabel("value estimate (score units)")
    ax.set_ylabel("realised hand score")
    ax.legend()
    return ax


def plot_obs_blocks(obs: np.ndarray, names: Sequence[str] | None = None, cols: int = 4):
    """One observation's blocks drawn as labelled images (tile axes labelled 1m..9s where a
    block has 27 columns); returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    cols = integer_at_least("cols", cols, 1)
    obs = np.asarray(obs, dtype=np.float32)
    if obs.shape != (OBS_SIZE,):
        raise ValueError(f"expected one observation of shape ({OBS_SIZE},), got {obs.shape}")
    names = [name for name, _ in LAYOUT] if names is None else list(names)
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 1.3 * rows + 0.5), squeeze=False)
    for ax, name in zip(axes.ravel(), names, strict=False):
        b = block(obs, name)
        img = b.reshape(-1, b.shape[-1]) if b.ndim > 1 else b[None]
        ax.imshow(img, aspect="auto", cmap="viridis", vmin=0, vmax=max(1.0, float(img.max())))
        ax.set_title(f"{name} {tuple(b.shape)}", fontsize=8)
        ax.set_yticks([])
        if img.shape[1] == 27:
            ax.set_xticks(range(0, 27, 3), [CODES[k] for k in range(0, 27, 3)], fontsize=6)
        else:
            ax.set_xticks([])
    for ax in axes.ravel()[len(names) :]:
        ax.axis("off")
    fig.tight_layout()
    return fig
