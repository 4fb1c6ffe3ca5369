"""A replay viewer in the browser: ``python -m zhuoji_env.view RECORD.json [--out hand.html]``.

Writes one self-contained HTML page (inline CSS, script and data; nothing fetched at view time)
that steps through a recorded hand (RULES.md 10) with every hand open: buttons and keys
(Left/Right one decision, PageUp/PageDown ten, Home/End, or type a decision number) move
through the decisions; each step shows the table, the seat to act, its legal alternatives and
the one it chose; the last step shows the settlement ledger item by item with the names of
RULES.md 7. Only ASCII is drawn (tiles as ``5m``, ``9p``, ``1s``), so a browser without CJK
fonts shows everything.

A record may carry two optional per-decision fields, aligned with ``actions``, that the analysis
tools write (``agents.analysis``): ``probs``, each ``null`` or an object from the text of
the decision's legal actions (``"discard 5m"``, ``"pong"``) to the deciding agent's
probabilities, numbers in [0, 1] that sum to about 1, and ``values``, each
``null`` or the agent's value estimate. The page shows them beside the alternatives; replay
ignores them. ``agents`` (optional) labels the seats with strings. A value is null or a finite
number: the page's JSON reader has no ``NaN`` or ``Infinity``, and one would blank it.

The page shows the replayed result. A record whose stored ``result`` differs from its replay
(as ``python -m zhuoji_env.replay`` reports it) is refused, with the differences, exit status 1;
with ``--allow-mismatch`` the page is written with the differences at its top (and on stderr).

The page never replaces the record it shows, nor (without ``--force``) any existing file, and
is written whole or not at all (:mod:`zhuoji_env.fileio`).
"""

from __future__ import annotations

import argparse
import base64
import html
import itertools
import json
import math
import os
import re
import reprlib
import sys
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from zhuoji_env.commands import prog
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.game import check_flag
from zhuoji_env.engine.records import RecordError, compare, load, parse, replay
from zhuoji_env.engine.state import (
    AN_KONG,
    OVER,
    RESPONSE,
    ROB,
    TURN,
    YAOJI_IN_RIVER,
    State,
)
from zhuoji_env.fileio import write_text_atomic
from zhuoji_env.limits import exits_2_when_out_of_memory
from zhuoji_env.picture import (
    ITEM_LABELS,
    MELD_LABELS,
    Table,
    chicken_kinds,
    ledger_rows,
    result_summary,
    status_lines,
)
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import CODES, NUM_KINDS

PHASE_NAMES = {TURN: "turn", RESPONSE: "response", ROB: "rob", OVER: "over"}

STATIC = resources.files("zhuoji_env") / "static"
"""The drawing of tiles, seats and ledgers shared by this viewer (inlined in its page) and the
web app (``agents.web``, which serves the files): ``table.js`` and ``table.css``."""


def static_text(name: str) -> str:
    """The text of a shared static file (:data:`STATIC`)."""
    return (STATIC / name).read_text(encoding="utf-8")


def _optional_list(rec: Mapping[str, Any], key: str, n: int) -> list:
    raw = rec.get(key)
    if raw is None:
        return [None] * n
    if not isinstance(raw, list) or len(raw) != n:
        raise RecordError(
            f"{key!r} must be a list with one entry per action ({n}), got "
            f"{len(raw) if isinstance(raw, list) else type(raw).__name__}"
        )
    return raw


PROBS_SUM_TOLERANCE = 0.01
"""How far from 1 a decision's probabilities may sum (``agents.analysis`` rounds each to 4
decimals, over up to 86 legal actions)."""


def _check_probs(probs: list) -> None:
    """Each entry null or an object from action text to a finite number in [0, 1] (not a
    bool), summing to about 1 (:data:`PROBS_SUM_TOLERANCE`); the keys are checked against the
    legal actions as the hand is replayed (:func:`_check_probs_keys`)."""
    for j, p in enumerate(probs):
        if p is None:
            continue
        if not isinstance(p, Mapping) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and _finite(v) and 0 <= v <= 1
            for v in p.values()
        ):
            raise RecordError(
                f"probs[{j}]: expected null or an object from action text to a probability "
                f"in [0, 1], got {reprlib.repr(p)}"
            )
        total = math.fsum(p.values())
        if abs(total - 1) > PROBS_SUM_TOLERANCE:
            raise RecordError(
                f"probs[{j}]: the probabilities sum to {total:g}, not 1 (a distribution over "
                f"the legal actions), in {reprlib.repr(p)}"
            )


def _check_probs_keys(j: int, p: Mapping | None, legal: list[str]) -> None:
    """The keys of decision ``j``'s probabilities are the text of its legal actions."""
    if p is None:
        return
    bad = [k for k in p if k not in legal]
    if bad:
        raise RecordError(
            f"probs[{j}]: {reprlib.repr(bad[0])} is not a legal action of decision {j}; the keys "
            f"are the legal actions' text: {', '.join(legal)}"
        )


def _finite(v: int | float) -> bool:
    """Not NaN or infinite, as the page's browser reads it: an int beyond the largest float
    (``math.isfinite`` cannot take one) parses there as ``Infinity``."""
    if isinstance(v, int):
        return abs(v) <= sys.float_info.max
    return math.isfinite(v)


def _check_values(values: list) -> None:
    for j, v in enumerate(values):
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v):
            raise RecordError(
                f"values[{j}]: expected null or a finite number (the agent's value estimate), "
                f"got {reprlib.repr(v)}"
            )


def _check_agents(labels: Any, n: int) -> None:
    if labels is None:
        return
    if (
        not isinstance(labels, list)
        or len(labels) != n
        or not all(isinstance(x, str) for x in labels)
    ):
        raise RecordError(
            f"'agents' must list one label (a string) per seat ({n}), got {reprlib.repr(labels)}"
        )


def seat_view(rules: Rules, st: State, viewer: int | None = None) -> dict[str, Any]:
    """Every seat's hand, melds, river and 报听 state in game 0, and the chicken tiles known so
    far, as the shared drawing script (``zhuoji_env/static/table.js``) draws them.

    ``viewer`` None shows every hand open (the replay viewer). A seat number shows what that seat
    may see (:mod:`zhuoji_env.belief` lists it): its own concealed tiles and drawn tile; of every
    other seat only how many concealed tiles it holds (``hidden``) and its concealed kongs
    without their kind (``tile`` null). ``-1`` is a spectator who sees no concealed tile. The
    wall never appears, and the flip tile's chickens only once it is turned up."""
    n = st.num_players
    chick = chicken_kinds(rules, int(st.flip[0]))
    turn = int(st.phase[0]) == TURN
    seats = []
    for s in range(n):
        open_seat = viewer is None or viewer == s
        counts = st.hand[0, s].astype(np.int64).copy()
        drawn = int(st.drawn[0]) if turn and s == int(st.turn_seat[0]) else -1
        if drawn >= 0 and counts[drawn] > 0:
            counts[drawn] -= 1
        melds = []
        for k in np.flatnonzero(st.meld[0, s]):
            mtype = int(st.meld[0, s, k])
            src = int(st.meld_from[0, s, k])
            melds.append(
                {
                    "type": MELD_LABELS[mtype],
                    "tile": CODES[k] if open_seat or mtype != AN_KONG else None,
                    "size": 3 if mtype == 1 else 4,
                    "from": src if mtype != AN_KONG and src >= 0 else None,
                    "late": bool(st.meld_late[0, s, k]),
                }
            )
        if not open_seat:  # a concealed kong's kind is hidden, so is the order of its melds
            melds.sort(key=lambda m: m["tile"] is None)
        cf = int(st.yaoji_seat[0]) == s and int(st.yaoji_fate[0]) == YAOJI_IN_RIVER
        rl = int(st.river_len[0, s])
        current = int(st.phase[0]) == RESPONSE and s == int(st.turn_seat[0])
        river = [
            {
                "t": CODES[int(st.river[0, s, j])],
                "taken": bool(st.river_taken[0, s, j]),
                "cf": cf and j == int(st.yaoji_pos[0]),
                "current": current and j == rl - 1,
            }
            for j in range(rl)
        ]
        shown = np.repeat(np.arange(NUM_KINDS), counts) if open_seat else []
        seats.append(
            {
                "hand": [CODES[k] for k in shown],
                "hidden": 0 if open_seat else int(st.hand[0, s].sum()),
                "drawn": CODES[drawn] if drawn >= 0 and open_seat else None,
                "melds": melds,
                "river": river,
                "baoting": ["", "hard", "soft"][int(st.baoting[0, s])],
                "winner": bool(st.winners[0, s]),
            }
        )
    return {"seats": seats, "chickens": [CODES[k] for k in np.flatnonzero(chick)]}


def iter_states(rec: Mapping[str, Any]) -> Iterator[tuple[Rules, State, int | None]]:
    """``(rules, state, action)`` before each decision of a record (``action`` is the one
    taken there), then the final state with ``None``. The state is one object stepped in
    place: copy it (``state.copy()``) to keep a step. A malformed record or an illegal
    decision raises :class:`RecordError` before anything is yielded."""
    replay(rec, check=False)
    rules, wall, dealer, streak, decisions = parse(rec)
    st = core.deal(rules, wall[None], dealer, streak)
    for _, a in decisions:
        yield rules, st, a
        core.step(rules, st, np.array([a]))
    yield rules, st, None


def ledger_items(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ledger lines of a hand's ``result`` as the shared drawing script shows them, in
    RULES.md 7 order, each with its item's label (:data:`~zhuoji_env.picture.ITEM_LABELS`)."""
    return [
        {"payer": p, "payee": q, "amount": amt, "item": it, "label": ITEM_LABELS[it]}
        for p, q, amt, it in ledger_rows(result)
    ]


def differences(rec: Mapping[str, Any], result: Mapping[str, Any]) -> list[str]:
    """How the stored ``result`` of ``rec`` differs from ``result``, its replay (``compare``, as
    ``python -m zhuoji_env.replay`` reports it); none without a stored result."""
    return compare(rec["result"], result) if "result" in rec else []


def replay_steps(rec: Mapping[str, Any]) -> dict[str, Any]:
    """The page's data: the table before every decision and after the last, with the decision
    taken, its legal alternatives, the optional probabilities and values, the ledger, and how
    the stored result differs from the replayed one (``mismatch``, :func:`differences`).

    A malformed record or an illegal decision raises :class:`RecordError` (as ``replay``)."""
    result = replay(rec, check=False)
    rules, _, dealer, streak, decisions = parse(rec)
    n_dec = len(decisions)
    probs = _optional_list(rec, "probs", n_dec)
    _check_probs(probs)
    values = _optional_list(rec, "values", n_dec)
    _check_values(values)
    labels = rec.get("agents")
    _check_agents(labels, rules.num_players)
    steps = []
    for j, (_, st, a) in enumerate(iter_states(rec)):
        over = int(st.phase[0]) == OVER
        step = {
            "phase": PHASE_NAMES.get(int(st.phase[0]), "baoting discard"),
            "actor": None if over else int(st.actor[0]),
            "tile": CODES[int(st.tile[0])] if int(st.tile[0]) >= 0 and not over else None,
            "wall_left": max(int(st.back[0]) - int(st.front[0]) + 1, 0),
            "status": status_lines(rules, st, 0, reveal=True)[1].split(" | legal:")[0],
            **seat_view(rules, st),
        }
        if a is not None:
            legal = core.legal_names(st, 0)
            _check_probs_keys(j, probs[j], legal)
            step.update(legal=legal, chosen=A.describe(a), probs=probs[j], value=values[j])
        steps.append(step)
    return {
        "preset": rules.preset,
        "num_players": rules.num_players,
        "dealer": dealer,
        "streak": streak,
        "agents": labels or [f"P{s}" for s in range(rules.num_players)],
        "steps": steps,
        "result": result,
        "ledger": ledger_items(result),
        "mismatch": differences(rec, result),
    }


def page(rec: Mapping[str, Any], title: str = "Zhuoji hand") -> str:
    """The viewer page of a record, as one HTML string."""
    if not isinstance(title, str):
        raise TypeError(f"title must be a string, got {reprlib.repr(title)}")
    return _html(replay_steps(rec), title)


def _html(steps: dict[str, Any], title: str) -> str:
    """The viewer page of :func:`replay_steps`' data; a stored result that differs from the
    replayed one is listed at the top."""
    data = json.dumps(steps, separators=(",", ":"), allow_nan=False)
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    mismatch = ""
    if steps["mismatch"]:
        items = "".join(f"<li>{html.escape(d)}</li>" for d in steps["mismatch"])
        mismatch = (
            '<div id="mismatch"><b>The record\'s stored result differs from its replay; this '
            f"page shows the replay.</b><ul>{items}</ul></div>"
        )
    title = title.encode("utf-8", "replace").decode("utf-8")  # a file name's lone surrogates
    parts = {
        "__TITLE__": html.escape(title),
        "__CSS__": static_text("table.css") + _CSS,
        "__SCRIPT__": static_text("table.js") + _SCRIPT,
        "__MISMATCH__": mismatch,
        "__DATA__": data,
    }  # filled in one pass: a title holding "__DATA__" stays that text
    return re.sub("|".join(parts), lambda m: parts[m.group()], _TEMPLATE)


def write_page(
    rec: Mapping[str, Any],
    out: str | Path,
    title: str | None = None,
    *,
    overwrite: bool = False,
    source: str | Path | None = None,
) -> Path:
    """Write the viewer page of ``rec`` to ``out`` whole or not at all; returns the path.

    An existing ``out`` is replaced only with ``overwrite=True`` (else ``FileExistsError``);
    ``source``, the record file ``rec`` was read from, never is (``ValueError``), and a folder
    is refused (``IsADirectoryError``)."""
    overwrite = check_flag(overwrite, "overwrite")
    out = Path(out)
    if out.is_dir():
        raise IsADirectoryError(f"{out} is a folder: give the page a file name, e.g. hand.html")
    if source is not None and _same_file(out, Path(source)):
        raise ValueError(
            f"{out} is the record this page shows: the viewer never replaces it; give the page "
            "another name, e.g. " + str(out.with_suffix(".html"))
        )
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists: pass overwrite=True to replace it")
    return write_text_atomic(out, page(rec, title or out.stem))


class Record:
    """A game record that notebooks display as its final table and its ledger, with how its
    stored result differs from the replay if it does (``_repr_html_``); ``table(k)`` is the
    table before decision ``k`` (a :class:`Table`), ``save(path)`` writes the viewer page.

    ``Record(rec)`` takes a record object or a path to a record file (which :meth:`save`
    never replaces)."""

    def __init__(self, rec: Mapping[str, Any] | str | os.PathLike):
        self.source = Path(rec) if isinstance(rec, (str, os.PathLike)) else None
        if self.source is not None:
            self.rec = load(self.source)
        elif isinstance(rec, Mapping):
            self.rec = dict(rec)
        else:
            raise TypeError(
                "Record takes a record object (a dict, RULES.md 10) or the path of a record "
                f"file (a str or pathlib.Path), got {type(rec).__name__}"
            )
        self.result = replay(self.rec, check=False)
        self.num_decisions = len(self.rec["actions"])

    def table(self, k: int | None = None, **options: Any) -> Table:
        """The table before decision ``k`` (``None``: the end), all hands open unless
        ``reveal=False`` and a ``viewer`` are given."""
        last = self.num_decisions
        k = last if k is None else k
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= last:
            raise ValueError(f"decision index must be 0-{last} (or None for the end), got {k!r}")
        options["reveal"] = check_flag(options.get("reveal", True), "reveal")
        rules, st, _ = next(itertools.islice(iter_states(self.rec), k, None))
        return Table(rules, st, 0, **options)

    def ledger_html(self) -> str:
        """The settlement ledger as an HTML table, item by item (RULES.md 7 names)."""
        rows = "".join(
            f"<tr><td>{html.escape(ITEM_LABELS[it])}</td><td>P{p}</td><td>P{q}</td>"
            f"<td>{amt}</td></tr>"
            for p, q, amt, it in ledger_rows(self.result)
        )
        return (
            "<table><tr><th>item</th><th>payer</th><th>payee</th><th>amount</th></tr>"
            f"{rows or '<tr><td>no payments</td></tr>'}</table>"
        )

    def _repr_html_(self) -> str:
        png = base64.b64encode(self.table()._repr_png_()).decode("ascii")
        mismatch = "".join(
            f"<br>the record's stored result differs: {html.escape(d)}"
            for d in differences(self.rec, self.result)
        )
        return (
            f"<div><b>{html.escape(result_summary(self.result))}</b> "
            f'({self.num_decisions} decisions){mismatch}<br><img src="data:image/png;base64,{png}" '
            f'width="640">{self.ledger_html()}</div>'
        )

    def page(self, title: str = "Zhuoji hand") -> str:
        """The viewer page (see :func:`page`)."""
        return page(self.rec, title)

    def save(self, path: str | Path, title: str | None = None, *, overwrite: bool = False) -> Path:
        """Write the viewer page to ``path`` (see :func:`write_page`), never over the record
        file it was read from."""
        return write_page(self.rec, path, title, overwrite=overwrite, source=self.source)


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title><style>__CSS__</style></head>
<body>
<header>
<h1>__TITLE__</h1>
<div id="controls">
<button id="first" title="Home">|&lt; first</button>
<button id="prev" title="Left arrow">&lt; prev</button>
<button id="next" title="Right arrow">next &gt;</button>
<button id="last" title="End">last &gt;|</button>
<label>decision <input id="jump" type="number" min="0" value="0"></label>
<input id="slider" type="range" min="0" value="0">
<span id="step-label"></span>
</div>
<div class="keys">keys: Left/Right one decision, PageUp/PageDown ten, Home/End</div>
</header>
__MISMATCH__
<main>
<section id="table"></section>
<aside>
<div id="info"></div>
<div id="decision"></div>
<table id="legal"></table>
<div id="ledger-box"></div>
</aside>
</main>
<script id="data" type="application/json">__DATA__</script>
<script>__SCRIPT__</script>
</body></html>
"""

_CSS = """
body{font-family:sans-serif;margin:0;background:#ece8dc;color:#1e1e1e}
header{padding:6px 12px;background:#d8d2c0}
h1{font-size:18px;margin:2px 0}
#controls button{font-size:14px;margin-right:4px}
#jump{width:4em}#slider{width:260px;vertical-align:middle}
#step-label{font-weight:bold;margin-left:10px}
.keys{font-size:12px;color:#555}
main{display:flex;gap:12px;padding:8px 12px}
#table{flex:3}aside{flex:2;min-width:320px}
#info,#decision{margin-bottom:6px;font-size:14px}
#legal{border-collapse:collapse;font-size:13px;margin-bottom:8px}
#legal td{padding:1px 6px;border-bottom:1px solid #ccc}
#legal tr.chosen{background:#c8f0c8;font-weight:bold}
#mismatch{background:#f4c2b8;padding:4px 12px;font-size:14px}
"""

_SCRIPT = r"""
const D = JSON.parse(document.getElementById('data').textContent);
const N = D.steps.length - 1;
let cur = 0;
const $ = (id) => document.getElementById(id);
const el = ZT.el;
const P = D.steps[0].seats.map((_, s) => 'P' + s);
function seatName(s) { return 'P' + s + (D.agents[s] !== 'P' + s ? ' (' + D.agents[s] + ')' : ''); }
function drawTable(st) {
  ZT.drawTable($('table'), st, {
    names: st.seats.map((_, s) => seatName(s)), dealer: D.dealer, actor: st.actor,
    deltas: st.phase === 'over' ? D.result.deltas : null,
  });
}
function pct(p) { return (100 * p).toFixed(1) + '%'; }
function show(i) {
  if (!Number.isFinite(i)) return;  // a decision box that holds no number
  cur = Math.max(0, Math.min(N, Math.round(i)));
  const st = D.steps[cur];
  $('step-label').textContent = cur < N ? 'Decision ' + (cur + 1) + ' / ' + N :
    'End of hand (' + N + ' decisions)';
  $('jump').value = cur; $('slider').value = cur;
  drawTable(st);
  $('info').textContent = cur < N ? st.status + ' | wall ' + st.wall_left + ' left' :
    'Wall ' + st.wall_left + ' left | chickens: ' + st.chickens.join(' ');
  const legal = $('legal');
  legal.replaceChildren();
  if (cur < N) {
    let text = seatName(st.actor) + ' chose: ' + st.chosen;
    if (st.value !== null && st.value !== undefined) text += ' | value estimate ' +
      Number(st.value).toFixed(2);
    $('decision').textContent = text;
    const head = el('tr');
    head.append(el('td', '', 'legal alternatives (' + st.legal.length + ')'));
    if (st.probs) head.append(el('td', '', 'agent probability'));
    legal.append(head);
    st.legal.forEach((a) => {
      const tr = el('tr', a === st.chosen ? 'chosen' : '');
      tr.dataset.action = a;
      tr.append(el('td', '', a + (a === st.chosen ? '  <- chosen' : '')));
      if (st.probs) {
        const p = st.probs[a] || 0;
        const td = el('td', '', pct(p) + ' ');
        const b = el('span', 'bar');
        b.style.width = Math.round(80 * p) + 'px';
        td.append(b);
        tr.append(td);
      }
      legal.append(tr);
    });
  } else {
    $('decision').textContent = 'Hand over: ' + D.result.end + ', winners ' +
      (D.result.winners.map((w) => 'P' + w).join(', ') || 'nobody') +
      (D.result.flip ? ', flip ' + D.result.flip : '') + ' | scores ' +
      D.result.deltas.map((d, s) => 'P' + s + ' ' + (d > 0 ? '+' : '') + d).join(', ');
  }
  const lb = $('ledger-box');
  lb.replaceChildren();
  if (cur === N) {
    ZT.drawLedger(lb, D.ledger, P);
  }
}
$('slider').max = N; $('jump').max = N;
$('first').onclick = () => show(0);
$('prev').onclick = () => show(cur - 1);
$('next').onclick = () => show(cur + 1);
$('last').onclick = () => show(N);
$('slider').oninput = (e) => show(Number(e.target.value));
$('jump').onchange = (e) => { show(Number(e.target.value)); e.target.blur(); };
document.addEventListener('keydown', (e) => {
  if (e.target.tagName === 'INPUT' && e.target.type === 'number') return;
  const move = {ArrowRight: 1, ArrowLeft: -1, PageDown: 10, PageUp: -10}[e.key];
  if (move !== undefined) { show(cur + move); e.preventDefault(); }
  else if (e.key === 'Home') { show(0); e.preventDefault(); }
  else if (e.key === 'End') { show(N); e.preventDefault(); }
});
show(0);
"""


PAGE_SUFFIXES = (".html", ".htm")


def _same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` name one existing file (through links too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def _out_problem(flag: str, out: Path, record: Path, force: bool) -> str | None:
    """Why the page may not be written to ``out``, or None. It must be an ``.html``/``.htm``
    name in an existing folder, never the record itself, and not an existing file unless
    ``force``."""
    name = f"{flag} {str(out)!r}"
    if out.is_dir():
        return f"{name} is a folder: give a file name, e.g. hand.html"
    if out.suffix.lower() not in PAGE_SUFFIXES:
        return f"{name} is not an .html name: the page is HTML, e.g. {out.stem}.html"
    if not out.parent.is_dir():
        return f"{name}: {str(out.parent)!r} is not an existing folder"
    if _same_file(out, record):
        return f"{name} is the record itself: give the page another name with --out"
    if out.exists() and not force:
        return f"{name} exists: give another name with --out, or --force to replace it"
    return None


@exits_2_when_out_of_memory("python -m zhuoji_env.view")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("zhuoji_env.view"), description=__doc__)
    parser.add_argument("record", type=Path, help="a record file (JSON, RULES.md 10)")
    parser.add_argument(
        "--out", type=Path, help="the page to write, NAME.html (default: RECORD.html)"
    )
    parser.add_argument(
        "--force", action="store_true", help="replace an existing page (never the record)"
    )
    parser.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="write the page of a record whose stored result differs from its replay, with the "
        "differences at its top",
    )
    args = parser.parse_args(argv)
    out = args.out or args.record.with_suffix(".html")
    flag = "--out" if args.out else "the page next to RECORD"
    problem = _out_problem(flag, out, args.record, args.force)
    if problem:
        parser.error(problem)
    try:
        steps = replay_steps(load(args.record))
    except (RecordError, OSError) as err:
        print(f"{args.record}: error: {err}", file=sys.stderr)
        return 2
    for d in steps["mismatch"]:
        print(f"{args.record}: differs: {d}", file=sys.stderr)
    if steps["mismatch"] and not args.allow_mismatch:
        print(
            f"{args.record}: not shown: its stored result differs from its replay; "
            "--allow-mismatch writes the page anyway, with the differences at its top",
            file=sys.stderr,
        )
        return 1
    html_page = _html(steps, args.record.stem)
    try:
        write_text_atomic(out, html_page)
    except OSError as err:
        parser.error(f"{flag} {str(out)!r}: cannot write the page ({err.strerror or err})")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
