"""Play a hand against the agents in the terminal: ``python -m agents.play``.

::

    python -m agents.play [--preset P] [--set SWITCH=VALUE] [--opponents rule] [--seat 0]
                          [--seed S] [--unicode]

You sit at ``--seat``; the other seats are played by ``--opponents`` (one spec for all, or a
comma-separated list of at most one spec per other seat, cycled over them). Before each of your
decisions the table is shown from your seat (the renderer of ``zhuoji_env.envs.render`` when
available: your hand sorted, every seat's melds and discards, tiles left, what is being decided)
with the numbered legal actions. Answer with

- a tile code (``5m``): discard that tile;
- an action name, with a tile where it takes one: ``pong``, ``kong``, ``hu``, ``pass``,
  ``baoting``, ``discard 5m``, ``angang 5m``, ``bugang 5m``;
- the action's index (the number shown next to it, 0-85);
- ``help`` to list the legal actions again, ``quit`` to stop.

Anything else, or an illegal action, is rejected with a message and asked again. The other
seats' moves are printed as they happen. At the end of a hand the settlement ledger is shown
and another hand is offered; the dealer and dealer streak carry over (RULES.md 8).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

import numpy as np

from agents.base import Agent, decide
from agents.registry import make_agent, split_specs
from zhuoji_env.commands import prog
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.records import result_of
from zhuoji_env.engine.state import OVER, RESPONSE, ROB, State
from zhuoji_env.envs.render import render_table
from zhuoji_env.limits import exits_2_when_out_of_memory
from zhuoji_env.observation import encode
from zhuoji_env.rules import Rules, parse_switches
from zhuoji_env.tiles import UNICODE, full_set, kind


class Quit(Exception):
    """The player asked to stop."""


def parse_command(text: str, legal: np.ndarray) -> tuple[int | None, str]:
    """``(action, "")`` for a legal command, else ``(None, message)``.

    ``legal`` is the bool ``[86]`` mask. See the module docstring for what is accepted.
    """
    words = text.strip().lower().split()
    if not words:
        return None, "enter an action (a tile code such as 5m, an action name, or its number)"
    legal_text = ", ".join(A.describe(a) for a in np.flatnonzero(legal))
    if words[0].isascii() and words[0].isdigit() and len(words) == 1:
        if len(words[0]) > 3 or not 0 <= int(words[0]) < A.NUM_ACTIONS:  # int() refuses 4,301
            shown = (
                words[0] if len(words[0]) <= 12 else f"{words[0][:12]}... ({len(words[0])} digits)"
            )
            return None, f"no action number {shown} (0-{A.NUM_ACTIONS - 1}); legal: {legal_text}"
        a = int(words[0])
        if not legal[a]:
            return None, f"{A.describe(a)} (number {a}) is not legal now; legal: {legal_text}"
        return a, ""
    name, tile = words[0], words[1] if len(words) > 1 else None
    if len(words) > 2:
        return None, f"too many words in {text.strip()!r}; legal: {legal_text}"
    if tile is None and len(name) == 2 and name[0].isdigit():
        name, tile = "discard", name  # a bare tile code means discard it
    try:
        if tile is not None:
            kind(tile)
        a = A.encode(name, tile)
    except ValueError as e:
        return None, f"{e}; legal: {legal_text}"
    if not legal[a]:
        return None, f"{A.describe(a)} is not legal now; legal: {legal_text}"
    return a, ""


def _render(rules, st, seat, scores, unicode_tiles, hand_no) -> str:
    return render_table(
        rules,
        st,
        0,
        scores=scores,
        hand_no=hand_no,
        viewer=seat,
        tile_style="unicode" if unicode_tiles else "code",
    )


def _legal_lines(mask: np.ndarray, unicode_tiles: bool) -> str:
    items = []
    for a in np.flatnonzero(mask):
        name, tile = A.decode(a)
        if tile is not None and unicode_tiles:
            tile = f"{tile} {UNICODE[kind(tile)]}"
        items.append(f"[{a}] {name}{' ' + tile if tile else ''}")
    return "Your options: " + "  ".join(items)


def _ledger_lines(result: dict, seat: int, scores: np.ndarray) -> list[str]:
    names = [f"player_{s}" + (" (you)" if s == seat else "") for s in range(len(scores))]
    lines = [
        f"Hand over: {result['end']}, winners: "
        + (", ".join(names[w] for w in result["winners"]) or "nobody")
        + (f", flip tile {result['flip']}" if result["flip"] else ", no flip")
    ]
    lines.append("Settlement (payer -> payee: amount item):")
    for payer, payee, amount, item in sorted(result["ledger"]):
        lines.append(f"  {names[payer]} -> {names[payee]}: {amount} {item}")
    if not result["ledger"]:
        lines.append("  (no payments)")
    lines.append(
        "This hand: " + ", ".join(f"{names[s]} {d:+d}" for s, d in enumerate(result["deltas"]))
    )
    lines.append("Totals:    " + ", ".join(f"{names[s]} {int(t):+d}" for s, t in enumerate(scores)))
    return lines


class Narrator:
    """The moves of a hand told as a player at the table sees them (RULES.md 3.2): a concealed
    kong without its kind, no pass, and a claim (pong, kong, hu) only once its window has closed,
    as a seat's choice is not shown to the seats asked after it: a pass, or a claim told before
    another seat's turn in the same window, would tell who held the tile. ``glyph`` writes a
    tile code."""

    def __init__(self, glyph: Callable[[str], str] = str):
        self.glyph = glyph
        self.claims: list[str] = []  # claims made in the open window

    def move(self, st: State, actor: int, a: int) -> list[str]:
        """What to tell now of ``actor``'s action ``a``, about to be applied to game 0 of
        ``st``."""
        name, tile = A.decode(a)
        if name == "angang":
            return [f"player_{actor}: concealed kong"]
        if st.phase[0] not in (RESPONSE, ROB):
            return [f"player_{actor}: {name}{' ' + self.glyph(tile) if tile else ''}"]
        if name != "pass":
            self.claims.append(f"player_{actor}: {name}")
        return []

    def settled(self, st: State) -> list[str]:
        """The window's claims, once game 0 of ``st`` (just stepped) has left the window."""
        if st.phase[0] in (RESPONSE, ROB):
            return []
        told, self.claims = self.claims, []
        return told


def play_hand(
    rules: Rules,
    st: State,
    seat: int,
    opponents: dict[int, Agent],
    ask: Callable[[str], str],
    say: Callable[[str], None],
    scores: np.ndarray,
    unicode_tiles: bool = False,
    hand_no: int = 0,
) -> dict:
    """Play one dealt hand to its end; returns its result (RULES.md 10). The others' moves are
    told as a player at the table sees them (:class:`Narrator`)."""
    narrator = Narrator((lambda t: UNICODE[kind(t)]) if unicode_tiles else str)
    while st.phase[0] != OVER:
        actor = int(st.actor[0])
        mask = st.mask[0]
        if actor == seat:
            say("")
            say(_render(rules, st, seat, scores, unicode_tiles, hand_no))
            say(_legal_lines(mask, unicode_tiles))
            while True:
                text = ask("Your action> ")
                word = text.strip().lower()
                if word in ("quit", "exit", "q"):
                    raise Quit
                if word in ("help", "?", "h"):
                    say(_legal_lines(mask, unicode_tiles))
                    continue
                a, msg = parse_command(text, mask)
                if a is not None:
                    break
                say(f"Rejected: {msg}")
        else:
            obs = encode(st, np.array([0]), np.array([actor]), scores[None, :])
            a = int(decide(opponents[actor], obs, mask[None], st, np.array([0]))[0])
            for line in narrator.move(st, actor, a):
                say(line)
        core.step(rules, st, np.array([a]))
        for line in narrator.settled(st):
            say(line)
    return result_of(st, 0)


@exits_2_when_out_of_memory("python -m agents.play")
def main(
    argv: Sequence[str] | None = None,
    ask: Callable[[str], str] | None = None,
    say: Callable[[str], None] | None = None,
) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("agents.play"), description="Play Zhuoji mahjong against the agents."
    )
    parser.add_argument("--preset", default="guiyang", help="rules preset (guiyang, classic, app)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SWITCH=VALUE",
        help="override a rules switch (JSON value); repeatable",
    )
    parser.add_argument(
        "--opponents",
        default="rule",
        help="agent spec for the other seats, or a comma list (at most one per other seat) "
        "cycled over them",
    )
    parser.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the walls and agents")
    parser.add_argument("--unicode", action="store_true", help="show tiles as mahjong glyphs")
    args = parser.parse_args(argv)
    if args.seed is not None and args.seed < 0:
        parser.error(f"--seed must be a non-negative integer, got {args.seed}")
    ask = ask or input
    say = say or print
    try:
        rules = Rules.make(args.preset, **parse_switches(args.set))
        n = rules.num_players
        if not 0 <= args.seat < n:
            raise ValueError(f"--seat must be 0-{n - 1}")
        specs = split_specs(args.opponents, "--opponents")
        others = [s for s in range(n) if s != args.seat]
        if len(specs) > len(others):
            raise ValueError(
                f"--opponents {args.opponents!r}: {len(specs)} specs for the {len(others)} other "
                f"seats; give at most {len(others)} (a shorter list is cycled over the seats)"
            )
        opponents = {
            s: make_agent(specs[j % len(specs)], seed=[args.seed or 0, s], rules=rules)
            for j, s in enumerate(others)
        }
    except ValueError as e:
        parser.error(str(e))
    rng = np.random.default_rng(args.seed)
    scores = np.zeros(n, dtype=np.int64)
    dealer, streak, hand_no = int(rng.integers(n)), 0, 0
    say(
        f"You are player_{args.seat}; opponents: "
        + ", ".join(f"player_{s} {a.name}" for s, a in opponents.items())
    )
    while True:
        st = core.deal(rules, rng.permutation(full_set())[None], dealer, streak)
        try:
            result = play_hand(
                rules, st, args.seat, opponents, ask, say, scores, args.unicode, hand_no
            )
        except (Quit, EOFError):
            say("Bye.")
            return 0
        except KeyboardInterrupt:  # Ctrl-C at the prompt
            say("\nBye.")
            return 130
        scores += np.array(result["deltas"])
        say("")
        say(_render(rules, st, args.seat, scores, args.unicode, hand_no))
        for line in _ledger_lines(result, args.seat, scores):
            say(line)
        hand_no += 1
        dealer, streak = result["next_dealer"], result["next_streak"]
        try:
            again = ask("Another hand? [y/N] ").strip().lower()
        except EOFError:
            again = ""
        if again not in ("y", "yes"):
            say("Bye.")
            return 0


if __name__ == "__main__":
    sys.exit(main())
