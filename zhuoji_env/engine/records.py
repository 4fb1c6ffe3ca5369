"""Game records (RULES.md 10): writing them from the engine, reading and replaying them.

A record is JSON: format, rules, dealer, dealer_streak, wall, the decisions in protocol order,
and the result. Replaying is dealing the wall and stepping the engine once per decision: the one
code path used for play.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.state import END_NAMES, ITEMS, OVER, State
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import NUM_TILES, code, format_tiles, kind_counts, parse_tiles

FORMAT = "zhuoji-record-1"


class RecordError(ValueError):
    """A record that is malformed, or whose decisions break the rules."""


def deltas(ledger: np.ndarray) -> np.ndarray:
    """Each seat's score from a ledger ``[..., n, n, items]``: received minus paid."""
    paid = ledger.sum(-1)
    return paid.sum(-2) - paid.sum(-1)


def result_of(st: State, i: int) -> dict[str, Any]:
    """The ``result`` object of game ``i``'s ended hand."""
    if st.phase[i] != OVER:
        raise ValueError(f"game {i}: the hand is not over")
    lines = []
    led = st.ledger[i]
    for payer, payee, item in zip(*np.nonzero(led), strict=True):
        lines.append([int(payer), int(payee), int(led[payer, payee, item]), ITEMS[item]])
    return {
        "end": END_NAMES[st.end[i]],
        "winners": [int(w) for w in np.flatnonzero(st.winners[i])],
        "flip": code(int(st.flip[i])) if st.flip[i] >= 0 else None,
        "next_dealer": int(st.next_dealer[i]),
        "next_streak": int(st.next_streak[i]),
        "deltas": [int(d) for d in deltas(led)],
        "ledger": lines,
    }


def record_of(rules: Rules, st: State, i: int) -> dict[str, Any]:
    """The record of game ``i`` as played so far (with its result once the hand is over)."""
    acts = []
    end = st.rec_len[i]
    for seat, a in zip(st.rec_seat[i, :end], st.rec_action[i, :end], strict=True):
        name, tile = A.decode(a)
        acts.append([int(seat), name] + ([tile] if tile else []))
    rec = {
        "format": FORMAT,
        "rules": rules.to_record(),
        "dealer": int(st.dealer[i]),
        "dealer_streak": int(st.streak[i]),
        "wall": format_tiles(st.wall[i]),
        "actions": acts,
    }
    if st.phase[i] == OVER:
        rec["result"] = result_of(st, i)
    return rec


# --------------------------------------------------------------------------- reading
def _field(rec: Mapping, name: str):
    if name not in rec:
        raise RecordError(f"record has no {name!r}")
    return rec[name]


def parse(rec: Mapping[str, Any]) -> tuple[Rules, np.ndarray, int, int, list[tuple[int, int]]]:
    """Validate a record: ``(rules, wall, dealer, streak, [(seat, action index), ...])``."""
    if not isinstance(rec, Mapping):
        raise RecordError(f"a record is a JSON object, got {type(rec).__name__}")
    fmt = rec.get("format", FORMAT)
    if fmt != FORMAT:
        raise RecordError(f"unknown record format {fmt!r}: expected {FORMAT!r}")
    try:
        rules = Rules.make(rec.get("rules", "guiyang"))
    except ValueError as err:
        raise RecordError(f"bad rules: {err}") from None
    n = rules.num_players
    raw_wall = _field(rec, "wall")
    try:
        wall = np.asarray(parse_tiles(raw_wall), dtype=np.int8)
    except (ValueError, TypeError) as err:
        raise RecordError(f"bad wall: {err}") from None
    counts = kind_counts(wall)
    if wall.size != NUM_TILES or (counts != 4).any():
        short = [code(k) for k in np.flatnonzero(counts != 4)]
        raise RecordError(
            f"bad wall: {wall.size} tiles, expected 108 with four of each kind"
            + (f" (wrong counts for {', '.join(short)})" if short else "")
        )
    dealer = _field(rec, "dealer")
    if isinstance(dealer, bool) or not isinstance(dealer, int) or not 0 <= dealer < n:
        raise RecordError(f"bad dealer {dealer!r}: expected a seat 0-{n - 1}")
    streak = rec.get("dealer_streak", 0)
    if isinstance(streak, bool) or not isinstance(streak, int) or streak < 0:
        raise RecordError(f"bad dealer_streak {streak!r}: expected an integer >= 0")
    raw_actions = _field(rec, "actions")
    if not isinstance(raw_actions, list):
        raise RecordError("'actions' must be a list")
    decisions = []
    for idx, entry in enumerate(raw_actions):
        if not isinstance(entry, list) or len(entry) not in (2, 3):
            raise RecordError(
                f"action {idx}: expected [seat, action] or [seat, action, tile], got {entry!r}"
            )
        seat = entry[0]
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < n:
            raise RecordError(f"action {idx}: bad seat {seat!r}, expected 0-{n - 1}")
        try:
            a = A.encode(entry[1], entry[2] if len(entry) == 3 else None)
        except (ValueError, TypeError) as err:
            raise RecordError(f"action {idx} (seat {seat}): {err}") from None
        decisions.append((seat, a))
    return rules, wall, dealer, streak, decisions


def replay(rec: Mapping[str, Any]) -> dict[str, Any]:
    """Re-run a record and return its ``result`` object (RULES.md 10).

    A decision by the wrong seat, an illegal decision, a record that ends before the hand does
    or goes on after it raises :class:`RecordError` naming the action's index and seat, what it
    tried and what was legal.
    """
    rules, wall, dealer, streak, decisions = parse(rec)
    st = core.deal(rules, wall[None], dealer, streak)
    for idx, (seat, a) in enumerate(decisions):
        if st.phase[0] == OVER:
            raise RecordError(
                f"action {idx} (seat {seat}, {A.describe(a)}): the hand is already over"
            )
        actor = int(st.actor[0])
        if seat != actor:
            raise RecordError(
                f"action {idx}: seat {seat} tried {A.describe(a)}, but seat {actor} is to act "
                f"(legal for it: {core.legal_names(st, 0)})"
            )
        if not st.mask[0, a]:
            raise RecordError(
                f"action {idx}: seat {seat} tried {A.describe(a)}, which is illegal here; "
                f"legal: {core.legal_names(st, 0)}"
            )
        core.step(rules, st, np.array([a]))
    if st.phase[0] != OVER:
        raise RecordError(
            f"action {len(decisions)}: the record ends here but the hand is not over: "
            f"seat {int(st.actor[0])} is to act (legal: {core.legal_names(st, 0)})"
        )
    return result_of(st, 0)


def _ledger_sums(ledger) -> dict[tuple[int, int, str], int]:
    out: dict[tuple[int, int, str], int] = defaultdict(int)
    for payer, payee, amount, item in ledger:
        out[(int(payer), int(payee), str(item))] += int(amount)
    return {k: v for k, v in out.items() if v}


def compare(expected: Mapping[str, Any], got: Mapping[str, Any]) -> list[str]:
    """Differences between two ``result`` objects; the ledger compared as sums per line key."""
    diffs = []
    for key in ("end", "winners", "flip", "next_dealer", "next_streak", "deltas"):
        if expected.get(key) != got.get(key):
            diffs.append(f"{key}: record has {expected.get(key)!r}, replay gives {got.get(key)!r}")
    want, have = _ledger_sums(expected.get("ledger", [])), _ledger_sums(got.get("ledger", []))
    for key in sorted(set(want) | set(have)):
        if want.get(key, 0) != have.get(key, 0):
            payer, payee, item = key
            diffs.append(
                f"ledger {payer}->{payee} {item}: record has {want.get(key, 0)}, "
                f"replay gives {have.get(key, 0)}"
            )
    return diffs


def load(path: str | Path) -> dict[str, Any]:
    """Read a record file."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as err:
        raise RecordError(f"{path}: not valid JSON ({err})") from None
