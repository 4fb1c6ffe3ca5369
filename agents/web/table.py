"""One table of the web app: a match in a ``BatchGame`` of one, each seat a person or an agent.

The table is the only authority over its game: it checks every action against the mask and
decides what each viewer may see. Nothing here does I/O or waits; :mod:`agents.web.app` runs it
(agents off the event loop, long polls, timeouts).

What is sent (:meth:`WebTable.snapshot`) is built from the state as the person's seat sees it
(:func:`zhuoji_env.view.seat_view`): their own hand, every seat's melds, rivers, 报听 and
concealed-kong counts, the tiles left, and the chickens known so far. A claim window in which the
person is not asked is never published: whether anybody could claim a discard is hidden, as are
the claims and passes of the seats asked before the person (RULES.md 3.2; the moves are told
by :class:`agents.play.Narrator`). Once a hand is over its record (RULES.md 10, every hand and
the wall) is public, as when the hands are laid down at a table.
"""

from __future__ import annotations

import collections
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.play import Narrator
from agents.registry import make_agent
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.game import BatchGame
from zhuoji_env.engine.settlement import chicken_units
from zhuoji_env.engine.state import BAOTING_DISCARD, OVER, RESPONSE, ROB, TURN
from zhuoji_env.observation import encode
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import CODES
from zhuoji_env.view import PHASE_NAMES, iter_states, ledger_items, seat_view

WINDOWS = (RESPONSE, ROB)
SHORTCUTS = {"hu": "h", "pong": "p", "kong": "k", "pass": "x", "baoting": "b"}
"""Keyboard shortcut of each claim action's button; concealed and added kongs take digits."""


class Refused(Exception):
    """A request the table refuses, with the HTTP status that says why (4xx) and a message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class Decision:
    """What an agent is asked to decide: everything is a copy, so a thread may read it while
    the table goes on."""

    seat: int
    agent: Any
    obs: np.ndarray
    mask: np.ndarray
    state: Any
    with_policy: bool  # also compute the agent's probabilities (open watch tables)


def parse_action(action: Any, mask: np.ndarray) -> int:
    """The action index of ``action`` (an index 0-85 or its text, ``"discard 5m"``, ``"pong"``)
    if it is legal under ``mask``; :class:`Refused` (400) naming the legal actions otherwise."""
    legal = [A.describe(a) for a in np.flatnonzero(mask)]
    if isinstance(action, bool) or not isinstance(action, (int, str)):
        raise Refused(
            400,
            f"'action' must be an action's text or index, got {json.dumps(action)[:60]}; "
            f"legal now: {', '.join(legal)}",
        )
    if isinstance(action, int):
        if not 0 <= action < A.NUM_ACTIONS:
            raise Refused(400, f"no action number {action}; legal now: {', '.join(legal)}")
        a = action
    else:
        words = action.split()
        try:
            a = A.encode(words[0], words[1] if len(words) == 2 else None) if words else -1
        except ValueError:
            a = -1
        if a < 0 or len(words) > 2:
            raise Refused(400, f"{action[:60]!r} is not an action; legal now: {', '.join(legal)}")
    if not mask[a]:
        raise Refused(400, f"{A.describe(a)} is not legal now; legal now: {', '.join(legal)}")
    return a


class WebTable:
    """A match at one table (module doc). ``specs`` holds one agent spec per seat, ``None`` for
    the person's seat (at most one); with no person ``open_hands`` shows every hand."""

    def __init__(
        self,
        rules: Rules,
        specs: list[str | None],
        seed: int | None,
        open_hands: bool = False,
        hint: str | None = None,
        pace_ms: int = 600,
    ):
        self.id = secrets.token_urlsafe(12)
        self.rules = rules
        people = [s for s, spec in enumerate(specs) if spec is None]
        self.seat = people[0] if people else None
        self.open_hands = open_hands and self.seat is None
        self.game = BatchGame(rules, 1, seed=seed, auto_reset=False, keep_records=True)
        self.seed = self.game.seed  # never sent: it keys every wall of the match
        self.chosen_seed = seed  # the seed the person chose (null: a random deal)
        self.agents = {
            s: make_agent(spec, seed=[self.seed, s], rules=rules)
            for s, spec in enumerate(specs)
            if spec is not None
        }
        self.hint_spec: str | None = None
        self.hint_agent = None
        self.hint: dict[str, Any] | None = None
        self.use_hint(hint, publish=False)
        self.names = ["you" if spec is None else f"P{s} {spec}" for s, spec in enumerate(specs)]
        self.pace_ms = pace_ms
        self.paused = False
        self.steps_left: int | None = None  # decisions before pausing again ("step")
        self.records: list[dict[str, Any]] = []
        self.totals = np.zeros(rules.num_players, dtype=np.int64)  # every hand at this table
        self.settlement: dict[str, Any] | None = None  # the last hand's, until "next"
        self.error: str | None = None
        self.thinking: int | None = None
        self.last_decision: dict[str, Any] | None = None
        self.events: list[str] = []
        self.annotations: list[tuple] = []  # (probs, value) of each decision of the hand
        self.narrator = Narrator()
        self.version = 0
        self.published: dict[str, Any] = {}
        self.last_seen = time.monotonic()
        self.publish()

    # ------------------------------------------------------------------ whose move
    @property
    def viewer(self) -> int | None:
        """Whose view is sent: the person's seat, ``None`` (every hand open) or -1 (no hand)."""
        if self.seat is not None:
            return self.seat
        return None if self.open_hands else -1

    @property
    def playing(self) -> bool:
        return self.error is None and self.settlement is None

    @property
    def actor(self) -> int:
        return int(self.game.actor[0])

    def agent_to_move(self) -> bool:
        """An agent is asked now, and the table is not paused."""
        if not self.playing or self.actor == self.seat:
            return False
        return not self.paused or bool(self.steps_left)

    def person_to_move(self) -> bool:
        return self.playing and self.actor == self.seat

    def decision(self) -> Decision:
        """The agent's decision to take now (copies of what it reads)."""
        s = self.actor
        return Decision(s, self.agents[s], *self._inputs(s), self.open_hands)

    def hint_decision(self) -> Decision:
        """The hint agent's view of the person's decision."""
        return Decision(self.seat, self.hint_agent, *self._inputs(self.seat), True)

    def _inputs(self, seat: int):
        g = self.game
        obs = encode(g.state, [0], [seat], g.scores, g.hand_no, self.rules.hands_per_game)
        return obs, g.mask.copy(), g.state.take([0])

    # ------------------------------------------------------------------ moving
    def play_agent(self, d: Decision, action: int, probs, value) -> None:
        """Apply the agent's ``action`` (checked by ``decide``) for the decision ``d``."""
        shown = {"seat": d.seat, "chosen": A.describe(action), "probs": None, "value": None}
        if probs is not None:
            legal = np.flatnonzero(d.mask[0])
            shown["probs"] = {A.describe(a): round(float(probs[a]), 4) for a in legal}
            shown["value"] = None if np.isnan(value) else round(float(value), 4)
        if self.open_hands:
            self.last_decision = shown
        before = self.version
        self._step(action, shown["probs"], shown["value"])
        if self.steps_left and self.version != before:  # a step shows one move
            self.steps_left -= 1

    def play_person(self, version: Any, action: Any) -> None:
        """The person's ``action`` at the view ``version`` they saw; :class:`Refused` for a stale
        version, a move out of turn or an illegal action, and the table is unchanged."""
        if isinstance(version, bool) or not isinstance(version, int):
            raise Refused(400, "'version' must be the integer version of the view you act on")
        if self.seat is None:
            raise Refused(409, "this table has no seat for a person: it is watched, not played")
        if not self.person_to_move():
            raise Refused(409, "it is not your move now")
        if version != self.version:
            raise Refused(
                409,
                f"stale action: it answers view {version}, but the table has moved on to view "
                f"{self.version}; act on the current view",
            )
        self._step(parse_action(action, self.game.mask[0]))

    def _step(self, action: int, probs: dict | None = None, value: float | None = None) -> None:
        """Apply ``action``; ``probs`` and ``value`` are the deciding agent's (a watched table
        with every hand open), which the hand's record keeps for the replay viewer."""
        st = self.game.state
        self.events += self.narrator.move(st, self.actor, action)
        self.hint = None
        self.annotations.append((probs, value))
        out = self.game.step(np.array([action]))
        self.events += self.narrator.settled(self.game.state)
        for _, record in out.records:
            record["agents"] = list(self.names)
            if any(p is not None for p, _ in self.annotations):
                record["probs"] = [p for p, _ in self.annotations]
                record["values"] = [v for _, v in self.annotations]
            self.annotations = []
            self.records.append(record)
            if out.match_over[0]:  # no next hand dealt: the ended one is still the game's
                final = self.game.state
            else:
                _, final, _ = collections.deque(iter_states(record), maxlen=1)[0]
            self.settlement = {
                "hand": len(self.records) - 1,
                "table": seat_view(self.rules, final),
                "result": record["result"],
                "ledger": ledger_items(record["result"]),
                "match_over": bool(out.match_over[0]),
            }
            self.totals += out.rewards[0]
        self.publish()

    def next_hand(self) -> None:
        """Leave the settlement for the next hand, dealt by the next dealer with the streak
        carried (RULES.md 8): within a match the game has dealt it already; after the last hand
        of a match (every hand, at ``hands_per_game`` 1) a new match starts with them."""
        if self.error is not None:
            raise Refused(409, f"this table has ended: {self.error}")
        if self.settlement is None:
            raise Refused(409, "the hand is still being played: 'next' follows a settlement")
        if self.settlement["match_over"]:
            self.game.carry_on([0])
        self.settlement = None
        self.events = []
        self.last_decision = None
        self.publish()

    def fail(self, message: str) -> None:
        """End the table with ``message`` shown (an agent's fault or its time limit)."""
        self.error = message
        self.thinking = None
        self.publish()

    # ------------------------------------------------------------------ what is sent
    def public_moment(self) -> bool:
        """The state may be published to this table's viewer: not a claim window in which the
        viewer is not asked (module doc)."""
        st = self.game.state
        if self.viewer is None or int(st.phase[0]) not in WINDOWS:
            return True
        return self.actor == self.viewer

    def publish(self) -> bool:
        """Rebuild the snapshot sent to the viewer; a new version when it changed. Returns
        whether it did. Nothing is published during a hidden claim window."""
        if self.playing and not self.public_moment():
            if not self.published.get("legal"):
                return False
            # the person has answered in the window; the others' answers stay hidden
            view = {**self.published, "legal": [], "hint": None, "actor": None}
        else:
            view = self._view()
        if view == self.published:
            return False
        self.published = view
        self.version += 1
        return True

    def snapshot(self) -> dict[str, Any]:
        return {"id": self.id, "version": self.version, **self.published}

    def _view(self) -> dict[str, Any]:
        g, st, rules = self.game, self.game.state, self.rules
        phase = int(st.phase[0])
        viewer = self.viewer
        you_act = self.person_to_move()
        public_actor = viewer is None or phase in (TURN, BAOTING_DISCARD) or you_act
        flip = int(st.flip[0])
        view: dict[str, Any] = {
            "status": "error" if self.error else "settlement" if self.settlement else "play",
            "error": self.error,
            "rules": rules.to_record(),
            "num_players": rules.num_players,
            "seat": self.seat,
            "open": self.open_hands,
            "names": self.names,
            "seed": self.chosen_seed,
            "hands": len(self.records),
            "totals": [int(x) for x in self.totals],
            "dealer": int(st.dealer[0]),
            "streak": int(st.streak[0]),
            "phase": PHASE_NAMES.get(phase, "baoting discard"),
            "turn_seat": int(st.turn_seat[0]),
            "actor": self.actor if public_actor and phase != OVER else None,
            "tile": CODES[int(st.tile[0])] if phase in WINDOWS else None,
            "wall_left": max(int(st.back[0]) - int(st.front[0]) + 1, 0),
            "flip": CODES[flip] if flip >= 0 else None,
            "golden": bool(chicken_units(rules, np.array([flip]))[1][0]),
            "table": None if self.settlement else seat_view(rules, st, viewer),
            "thinking": self.thinking,
            "paused": self.paused,
            "pace_ms": self.pace_ms,
            "events": list(self.events),
            "records": len(self.records),
            "settlement": self.settlement,
            "last_decision": self.last_decision,
            "hint_agent": self.hint_spec,
            "hint": self.hint,
            "legal": [],
        }
        if you_act:
            keys = iter("123456789")
            for a in np.flatnonzero(g.mask[0]):
                name, tile = A.decode(a)
                key = None if name == "discard" else SHORTCUTS.get(name) or next(keys, None)
                view["legal"].append({"action": int(a), "text": A.describe(a), "key": key})
        return view

    def use_hint(self, spec: str | None, publish: bool = True) -> None:
        """Show the hints of the agent ``spec`` (None: no hints) for the person's decisions."""
        if spec != self.hint_spec:
            self.hint_spec = spec
            n = self.rules.num_players
            self.hint_agent = (
                make_agent(spec, seed=[self.seed, n], rules=self.rules) if spec else None
            )
            self.hint = None
        if publish:
            self.publish()

    def set_hint(self, hint: dict[str, Any] | None) -> None:
        self.hint = hint
        self.publish()
