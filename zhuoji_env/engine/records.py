"""Game records (RULES.md 10): writing them from the engine, reading and replaying them.

A record is JSON: format, rules, dealer, dealer_streak, wall, the decisions in protocol order,
and the result. Replaying is dealing the wall and stepping the engine once per decision: the one
code path used for play. Reading checks every field, the stored result included, and a bad one
raises :class:`RecordError` naming the field, what it holds and what is allowed.
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
from zhuoji_env.rules import MAX_STREAK, PRESET_NAMES, Rules
from zhuoji_env.tiles import NUM_TILES, code, format_tiles, kind, kind_counts, parse_tiles
from zhuoji_env.versions import ENVIRONMENT, check_stamp, stamp
from zhuoji_env.versions import RECORD_FORMAT as FORMAT

MAX_AMOUNT = 2**53 - 1
"""Largest amount or score a stored result may hold: no hand within the switch bounds of
:mod:`zhuoji_env.rules` comes near it, and every JSON reader holds it exactly."""
RESULT_KEYS = ("end", "winners", "flip", "next_dealer", "next_streak", "deltas", "ledger")
"""The keys of a record's ``result`` object (RULES.md 10)."""


class RecordError(ValueError):
    """A record that is malformed, or whose decisions break the rules."""


class ResultMismatch(RecordError):
    """A record replays, but not to the ``result`` it carries (:func:`compare`'s
    ``differences``, also the message)."""

    def __init__(self, differences: list[str]):
        self.differences = list(differences)
        super().__init__(
            "the replay differs from the record's result: " + "; ".join(self.differences)
        )


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
        "versions": stamp(),
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


def is_plain_int(value: Any) -> bool:
    """A Python ``int``, not a bool nor a numpy integer: an integer as JSON holds it (where
    :func:`zhuoji_env.engine.game.is_integer` takes numpy's too)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _seat(value: Any, n: int) -> bool:
    return is_plain_int(value) and 0 <= value < n


def _record_rules(value: Any) -> Mapping[str, Any]:
    """A record's ``rules`` as RULES.md 10 writes it: ``{"preset": NAME, "overrides": {...}}``
    (``overrides`` may be left out). Anything else is refused, not guessed at: ``Rules.make``
    alone would read a null, or overrides of ``0`` or ``[]``, as the plain preset."""
    shape = "an object {'preset': NAME, 'overrides': {SWITCH: VALUE, ...}} (RULES.md 10)"
    if not isinstance(value, Mapping):
        raise ValueError(f"expected {shape}, got {value!r}")
    if "preset" not in value:
        raise ValueError(
            f"no 'preset' in {value!r}: expected {shape}, 'preset' one of {list(PRESET_NAMES)}"
        )
    if "overrides" in value and not isinstance(value["overrides"], Mapping):
        raise ValueError(
            f"'overrides' {value['overrides']!r} is not an object: expected {shape}, "
            "with {} for no overrides"
        )
    return value


RECORD_KEYS = ("format", "rules", "dealer", "dealer_streak", "wall", "actions", "result")
"""The keys of a record (RULES.md 10); ``result`` is optional, as are ``format`` (this
format), ``rules`` (guiyang) and ``dealer_streak`` (0)."""
ANNOTATION_KEYS = ("probs", "values", "agents")
"""Optional per-decision annotations a replay ignores and the viewer shows (``zhuoji_env.view``,
written by ``agents.analysis``)."""
VERSIONS_KEY = "versions"
"""Optional: the package and environment versions the record was made under
(:func:`zhuoji_env.versions.stamp`), which this package writes beside RULES.md 10's keys. A
record without it replays as one of the current environment version; one made under another
environment version is refused (:func:`check_versions`)."""


def check_versions(value: Any) -> None:
    """Refuse (``RecordError``) a record's ``versions`` that is not a stamp, or that names
    another environment version than this package's: its rules, actions or settlement may
    differ, so its replay would not be the game it records."""
    try:
        check_stamp(value, "record")
    except ValueError as err:
        raise RecordError(str(err)) from None
    if value["environment"] != ENVIRONMENT:
        raise RecordError(
            f"record made under environment {value['environment']} (zhuoji-env "
            f"{value['zhuoji_env']}); this package replays environment {ENVIRONMENT}: its rules, "
            "actions or settlement may differ. Replay it with a zhuoji-env of its version (or "
            "remove its 'versions' to replay it as a record of this version)"
        )


def parse(rec: Mapping[str, Any]) -> tuple[Rules, np.ndarray, int, int, list[tuple[int, int]]]:
    """Validate a record: ``(rules, wall, dealer, streak, [(seat, action index), ...])``.

    A key outside :data:`RECORD_KEYS`, :data:`ANNOTATION_KEYS` and :data:`VERSIONS_KEY` is
    refused, and so are ``versions`` of another environment (:func:`check_versions`). A stored
    ``result`` is validated too (:func:`parse_result`).
    """
    if not isinstance(rec, Mapping):
        raise RecordError(f"a record is a JSON object, got {type(rec).__name__}")
    unknown = sorted(set(rec) - set(RECORD_KEYS) - set(ANNOTATION_KEYS) - {VERSIONS_KEY})
    if unknown:  # a misspelt "rules" would otherwise replay under the default preset
        raise RecordError(
            f"unknown key {unknown[0]!r}: a record holds {list(RECORD_KEYS)} (RULES.md 10), "
            f"optionally with {VERSIONS_KEY!r} and the annotations {list(ANNOTATION_KEYS)}"
        )
    if VERSIONS_KEY in rec:
        check_versions(rec[VERSIONS_KEY])
    fmt = rec.get("format", FORMAT)
    if fmt != FORMAT:
        raise RecordError(f"unknown record format {fmt!r}: expected {FORMAT!r}")
    try:
        rules = Rules.make(_record_rules(rec.get("rules", {"preset": "guiyang"})))
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
    if not _seat(dealer, n):
        raise RecordError(f"bad dealer {dealer!r}: expected a seat 0-{n - 1}")
    streak = rec.get("dealer_streak", 0)
    if not is_plain_int(streak) or not 0 <= streak <= MAX_STREAK:
        raise RecordError(f"bad dealer_streak {streak!r}: expected an integer 0-{MAX_STREAK}")
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
        if not _seat(seat, n):
            raise RecordError(f"action {idx}: bad seat {seat!r}, expected 0-{n - 1}")
        name, tile = entry[1], entry[2] if len(entry) == 3 else None
        if not isinstance(name, str):
            raise RecordError(
                f"action {idx} (seat {seat}): bad action {name!r}, expected a name, one of "
                f"{list(A.ACTION_NAMES)}"
            )
        if len(entry) == 3 and not isinstance(tile, str):
            raise RecordError(
                f"action {idx} (seat {seat}): bad tile {tile!r}, expected a code such as '5m'"
            )
        try:
            a = A.encode(name, tile)
        except ValueError as err:
            raise RecordError(f"action {idx} (seat {seat}): {err}") from None
        decisions.append((seat, a))
    if "result" in rec:
        parse_result(rec["result"], n)
    return rules, wall, dealer, streak, decisions


def parse_result(result: Any, n: int) -> dict[str, Any]:
    """Validate a stored ``result`` object of a hand of ``n`` seats (RULES.md 10) and return it.

    Each of :data:`RESULT_KEYS` must be there with a value of its kind; ledger lines are
    ``[payer, payee, amount, item]`` with two different seats, a known item and an amount
    1-``MAX_AMOUNT``, one line per (payer, payee, item).
    """
    if not isinstance(result, Mapping):
        raise RecordError(f"bad result: expected an object, got {type(result).__name__}")
    unknown = sorted(set(result) - set(RESULT_KEYS))
    if unknown:
        raise RecordError(f"bad result: unknown key {unknown[0]!r}, allowed {list(RESULT_KEYS)}")
    missing = [k for k in RESULT_KEYS if k not in result]
    if missing:
        raise RecordError(f"bad result: no {missing[0]!r} (a result has {list(RESULT_KEYS)})")
    end = result["end"]
    if end not in END_NAMES[1:] or not isinstance(end, str):
        raise RecordError(f"bad result 'end' {end!r}: expected one of {list(END_NAMES[1:])}")
    winners = result["winners"]
    if (
        not isinstance(winners, list)
        or not all(_seat(w, n) for w in winners)
        or winners != sorted(set(winners))
    ):
        raise RecordError(
            f"bad result 'winners' {winners!r}: expected a list of distinct seats 0-{n - 1} "
            "in ascending order"
        )
    flip = result["flip"]
    if flip is not None:
        try:
            kind(flip)
        except ValueError as err:
            raise RecordError(f"bad result 'flip': {err}, or null") from None
    if not _seat(result["next_dealer"], n):
        raise RecordError(
            f"bad result 'next_dealer' {result['next_dealer']!r}: expected a seat 0-{n - 1}"
        )
    nxt = result["next_streak"]
    if not is_plain_int(nxt) or not 0 <= nxt <= MAX_STREAK + 1:
        raise RecordError(
            f"bad result 'next_streak' {nxt!r}: expected an integer 0-{MAX_STREAK + 1}"
        )
    d = result["deltas"]
    if (
        not isinstance(d, list)
        or len(d) != n
        or not all(is_plain_int(v) and abs(v) <= MAX_AMOUNT for v in d)
    ):
        raise RecordError(
            f"bad result 'deltas' {d!r}: expected a list of {n} integers, each at most "
            f"{MAX_AMOUNT} in size"
        )
    ledger = result["ledger"]
    if not isinstance(ledger, list):
        raise RecordError(f"bad result 'ledger' {ledger!r}: expected a list of lines")
    seen = set()
    for idx, line in enumerate(ledger):
        where = f"bad result ledger line {idx} {line!r}"
        if not isinstance(line, list) or len(line) != 4:
            raise RecordError(f"{where}: expected [payer, payee, amount, item]")
        payer, payee, amount, item = line
        if not _seat(payer, n) or not _seat(payee, n) or payer == payee:
            raise RecordError(f"{where}: payer and payee must be two different seats 0-{n - 1}")
        if not is_plain_int(amount) or not 1 <= amount <= MAX_AMOUNT:
            raise RecordError(f"{where}: the amount must be an integer 1-{MAX_AMOUNT}")
        if item not in ITEMS or not isinstance(item, str):
            raise RecordError(f"{where}: unknown item {item!r}, allowed {list(ITEMS)}")
        if (payer, payee, item) in seen:
            raise RecordError(f"{where}: a second line for {payer}->{payee} {item}")
        seen.add((payer, payee, item))
    return dict(result)


def replay(rec: Mapping[str, Any], check: bool = True) -> dict[str, Any]:
    """Re-run a record and return its ``result`` object (RULES.md 10).

    A decision by the wrong seat, an illegal decision, a record that ends before the hand does
    or goes on after it raises :class:`RecordError` naming the action's index and seat, what it
    tried and what was legal. A record whose stored ``result`` differs from its replay raises
    :class:`ResultMismatch` listing the differences (RULES.md 10: a replay reports any); with
    ``check=False`` the replayed result is returned all the same, for :func:`compare`.
    """
    if not isinstance(check, bool):
        raise TypeError(f"check must be True or False, got {check!r}")
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
    result = result_of(st, 0)
    if check and "result" in rec:
        diffs = compare(rec["result"], result)
        if diffs:
            raise ResultMismatch(diffs)
    return result


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


def _no_constant(name: str) -> None:
    """``json``'s hook for ``NaN``, ``Infinity`` and ``-Infinity``: standard JSON has none."""
    raise RecordError(f"not valid JSON: {name} is not a JSON number (a record is standard JSON)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json``'s hook for an object: a key given twice is refused, as readers differ on which
    of the two counts (Python's ``json`` keeps the last, others the first)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise RecordError(f"not a record: key {key!r} appears twice in one object")
        out[key] = value
    return out


def load(path: str | Path) -> dict[str, Any]:
    """Read a record file: standard JSON in UTF-8 (a leading byte-order mark is skipped, as RFC
    8259 allows), else ``RecordError`` (``OSError`` when unreadable). ``NaN``/``Infinity``
    (which Python's ``json`` would accept but a browser's does not), a key given twice in one
    object, brackets nested deeper than Python's recursion limit and integers longer than
    Python converts are refused as ``RecordError`` too."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            return json.load(f, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except UnicodeDecodeError as err:
        raise RecordError(
            f"not UTF-8 text (byte {err.object[err.start]:#04x} at offset {err.start}); "
            "a record is JSON in UTF-8"
        ) from None
    except json.JSONDecodeError as err:
        raise RecordError(f"not valid JSON ({err})") from None
    except RecursionError:
        raise RecordError(
            "arrays or objects nested too deeply to read (a record nests a few levels)"
        ) from None
    except RecordError:
        raise
    except ValueError as err:  # an integer of more digits than int() converts
        raise RecordError(f"not a record: {err}") from None
