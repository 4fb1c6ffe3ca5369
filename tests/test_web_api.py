"""The web app's HTTP API (agents.web.app) through Starlette's test client: every refusal of a
bad request leaves the table as it was, agents' faults and time limits end only their table,
and no message to a player holds what its seat may not see (checked against the engine's
hidden state at each published view)."""

import json
import re
import threading
import time

import numpy as np
import pytest
from starlette.testclient import TestClient

from agents.base import Agent
from agents.registry import AGENT_FACTORIES, register_agent
from agents.web.app import MAX_BODY, Settings, check_agents, create_app
from agents.web.table import WebTable
from zhuoji_env import replay
from zhuoji_env.engine.state import AN_KONG, OVER, RESPONSE, ROB
from zhuoji_env.tiles import CODES
from zhuoji_env.view import iter_states, replay_steps, seat_view


class Exploding(Agent):
    """Raises at its first decision: an agent with a bug."""

    name = "explode"

    def _act(self, obs, mask):
        raise RuntimeError("the agent's own bug")


class Sleepy(Agent):
    """Takes far longer than the tests' think limit."""

    name = "sleepy"

    def _act(self, obs, mask):
        time.sleep(5.0)
        return mask.argmax(-1)


@pytest.fixture(scope="module", autouse=True)
def test_agents():
    for name, cls in (("explode", Exploding), ("sleepy", Sleepy)):
        if name not in AGENT_FACTORIES:
            register_agent(name, lambda arg, seed=None, rules=None, cls=cls: cls(seed=seed))


def client(agents=("random", "rule"), **kw):
    settings = Settings(list(agents), policies=check_agents(list(agents)), **kw)
    return TestClient(create_app(settings))


def wait_for(c, tid, test, since=0, limit=30.0):
    """The table's view once ``test(view)`` holds, following its versions."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        view = c.get(f"/api/tables/{tid}?since={since}").json()
        if test(view):
            return view
        since = view["version"]
    raise AssertionError(f"the table never reached the state waited for: {view}")


def new_table(c, seats=(None, "rule", "rule", "rule"), **body):
    r = c.post("/api/tables", json={"seats": list(seats), "pace_ms": 0, **body})
    assert r.status_code == 201, r.text
    return r.json()


def my_move(c, tid):
    return wait_for(c, tid, lambda v: v["legal"] or v["status"] != "play")


# --------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    "spec, message",
    [
        ("ppo:/some/path.pt", r"agent \"ppo:/some/path.pt\" is not offered by this server"),
        ("sb3+trusted:/tmp/m.zip", r"agent \"sb3\+trusted:/tmp/m.zip\" is not offered"),
        ("nosuch", r"agent \"nosuch\" is not offered by this server; offered: random, rule"),
        ("ppo-guiyang", r"not offered"),  # a real agent, but not one this server offers
        (5, r"seat 1: agent 5 is not offered"),
    ],
)
def test_an_agent_the_server_does_not_offer_is_refused(spec, message):
    with client() as c:
        r = c.post("/api/tables", json={"seats": [None, spec, "rule", "rule"]})
        assert r.status_code == 400
        assert re.search(message, r.json()["error"]), r.json()
        assert c.get("/api/tables").json() == []


@pytest.mark.parametrize(
    "body, status, message",
    [
        (b"{not json", 400, "the request body is not JSON"),
        (b"[1, 2]", 400, "must be a JSON object, got list"),
        (b'{"seats": [null, "rule", "rule", "rule"], "seed": NaN}', 400, "NaN is not a JSON"),
        (b'{"seats": [null, "rule", "rule", "rule"], "colour": 1}', 400, "unknown field 'colour'"),
        (b'{"seed": 1}', 400, "missing field 'seats'"),
        (b'{"seats": [null, "rule", "rule"]}', 400, "'seats' must list 4 entries"),
        (b'{"seats": [null, null, "rule", "rule"]}', 400, "one null (your seat), not several"),
        (b'{"seats": [null, "rule", "rule", "rule"], "seed": -1}', 400, "'seed' must be null"),
        (b'{"seats": [null, "rule", "rule", "rule"], "seed": 1.5}', 400, "'seed' must be null"),
        (b'{"seats": [null, "rule", "rule", "rule"], "open": true}', 400, "only a watched"),
        (b'{"seats": [null, "rule", "rule", "rule"], "rules": {"preset": "x"}}', 400, "preset"),
        (b'{"seats": [null, "rule", "rule", "rule"], "pace_ms": 99999}', 400, "'pace_ms'"),
        (b'{"seats": ["rule", "rule", "rule", "rule"], "hint": "rule"}', 400, "hint agent"),
        (b" " * (MAX_BODY + 1), 413, f"over {MAX_BODY} bytes"),
    ],
)
def test_malformed_requests_to_make_a_table_are_refused(body, status, message):
    with client() as c:
        r = c.post("/api/tables", content=body, headers={"content-type": "application/json"})
        assert r.status_code == status, r.text
        assert message in r.json()["error"]
        assert c.get("/api/tables").json() == []


def test_an_oversized_body_without_a_length_is_refused():
    with client() as c:
        tid = new_table(c)["id"]

        def chunks():
            for _ in range(MAX_BODY // 1000 + 2):
                yield b" " * 1000

        r = c.post(f"/api/tables/{tid}/action", content=chunks())
        assert r.status_code == 413 and "over" in r.json()["error"]


def test_bad_actions_leave_the_table_unchanged():
    with client() as c:
        tid = new_table(c, seed=3)["id"]
        view = my_move(c, tid)
        v, legal = view["version"], [x["text"] for x in view["legal"]]
        illegal = next(f"discard {t}" for t in CODES if f"discard {t}" not in legal)
        for body, status, message in [
            ({"version": v, "action": illegal}, 400, f"{illegal} is not legal now; legal now:"),
            ({"version": v, "action": 86}, 400, "no action number 86"),
            ({"version": v, "action": "fly away"}, 400, "'fly away' is not an action"),
            ({"version": v, "action": [1]}, 400, "'action' must be an action's text or index"),
            ({"version": v, "action": True}, 400, "'action' must be"),
            ({"version": v - 1, "action": legal[0]}, 409, "stale action: it answers view"),
            ({"version": "1", "action": legal[0]}, 400, "'version' must be the integer"),
            ({"version": v}, 400, "missing field 'action'"),
            ({"version": v, "action": legal[0], "x": 1}, 400, "unknown field 'x'"),
        ]:
            r = c.post(f"/api/tables/{tid}/action", json=body)
            assert r.status_code == status, (body, r.text)
            assert message in r.json()["error"], (body, r.json())
            assert c.get(f"/api/tables/{tid}").json() == view
        r = c.post(f"/api/tables/{tid}/action", json={"version": v, "action": legal[-1]})
        assert r.status_code == 200 and r.json()["version"] > v
        # the same click again is stale (or out of turn), and refused
        r = c.post(f"/api/tables/{tid}/action", json={"version": v, "action": legal[-1]})
        assert r.status_code == 409, r.text


def test_unknown_tables_commands_and_records_are_refused():
    with client() as c:
        for method, path in [
            ("GET", "/api/tables/nosuch"),
            ("POST", "/api/tables/nosuch/action"),
            ("DELETE", "/api/tables/nosuch"),
            ("GET", "/api/tables/nosuch/records/0"),
        ]:
            r = c.request(method, path, json={"version": 1, "action": 0})
            assert r.status_code == 404 and "no table 'nosuch'" in r.json()["error"]
        tid = new_table(c)["id"]
        r = c.get(f"/api/tables/{tid}/records/0")
        assert r.status_code == 404 and "no finished hand '0'" in r.json()["error"]
        r = c.get(f"/api/tables/{tid}?since=x")
        assert r.status_code == 400 and "'since'" in r.json()["error"]
        for body, message in [
            ({"command": "fly"}, 'unknown command "fly"'),
            ({"command": "next"}, "the hand is still being played"),
            ({"command": "pace", "pace_ms": -1}, "'pace_ms' must be an integer 0-5000"),
            ({"command": "hint", "agent": "ppo:/x.pt"}, 'hint agent "ppo:/x.pt" is not offered'),
            ({"command": "hint"}, "missing field 'agent'"),
        ]:
            r = c.post(f"/api/tables/{tid}/control", json=body)
            assert r.status_code in (400, 409) and message in r.json()["error"], r.json()
        assert c.get("/api/nosuch").status_code == 404
        assert c.delete(f"/api/tables/{tid}").json() == {"ended": tid}
        assert c.get(f"/api/tables/{tid}").status_code == 404


def test_too_many_tables_and_idle_tables_expire():
    with client(max_tables=2, idle_minutes=1) as c:
        first = new_table(c)["id"]
        new_table(c)
        r = c.post("/api/tables", json={"seats": [None, "rule", "rule", "rule"]})
        assert r.status_code == 429 and "--max-tables" in r.json()["error"]
        assert len(c.get("/api/tables").json()) == 2
        server = c.app.state.server
        server.runners[first].table.last_seen -= 61  # nobody asked for a minute
        assert new_table(c)["id"] != first
        assert c.get(f"/api/tables/{first}").status_code == 404


def test_an_agent_fault_ends_its_table_only():
    with client(agents=("rule", "explode")) as c:
        bad = new_table(c, seats=("explode", None, "rule", "rule"), seed=0)["id"]
        good = new_table(c, seats=("rule", None, "rule", "rule"), seed=0)["id"]
        view = wait_for(c, bad, lambda v: v["status"] == "error")
        assert (
            view["error"] == "agent 'explode' at seat P0 failed: RuntimeError: the agent's own bug"
        )
        assert my_move(c, good)["legal"]
        r = c.post(f"/api/tables/{bad}/action", json={"version": view["version"], "action": 0})
        assert r.status_code == 409 and "not your move" in r.json()["error"]


def test_a_decision_past_the_think_limit_ends_the_table():
    with client(agents=("rule", "sleepy"), think_limit=0.5) as c:
        slow = new_table(c, seats=("sleepy",) * 3 + (None,), seed=0)["id"]
        start = time.monotonic()
        view = wait_for(c, slow, lambda v: v["status"] == "error" or v["thinking"] is not None)
        assert view["thinking"] is not None or "think limit" in view["error"]
        other = new_table(c, seed=1)["id"]  # the event loop is free meanwhile
        assert my_move(c, other)["legal"]
        view = wait_for(c, slow, lambda v: v["status"] == "error")
        assert "took longer than the think limit (0.5 s) for one decision" in view["error"]
        assert time.monotonic() - start < 4.5  # ended at the limit, not when the agent woke


# --------------------------------------------------------------------------- hidden information
class Recorder:
    """The engine's state behind each published view, kept as WebTable.publish bumps the
    version."""

    def __init__(self, monkeypatch):
        self.hidden: dict[tuple[str, int], dict] = {}
        self.lock = threading.Lock()
        original = WebTable.publish

        def publish(table):
            changed = original(table)
            key = table.id, table.version
            with self.lock:
                if changed and table.playing and not table.public_moment():
                    # the person answered in a window: the view before, without the actions
                    self.hidden[key] = self.hidden[table.id, table.version - 1]
                elif changed:
                    state = table.game.state.take([0])
                    self.hidden[key] = {"state": state, "settled": not table.playing}
            return changed

        monkeypatch.setattr(WebTable, "publish", publish)


def keys_in(obj) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | set().union(*(keys_in(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(keys_in(v) for v in obj)) if obj else set()
    return set()


def check_message(view, hidden, seat):
    """No tile of another seat's hand, its concealed kongs' kinds, the wall or the flip tile in a
    message sent while the hand is played; the seat's own tiles as the engine holds them."""
    st = hidden["state"]
    if hidden["settled"]:  # the hand is over: its record is public
        assert view["table"] is None and view["settlement"] is not None
        return
    assert "wall" not in keys_in(view)
    assert view["seed"] is None  # the seed of a random deal would give every wall
    phase = int(st.phase[0])
    assert phase != OVER
    if phase in (RESPONSE, ROB):
        assert int(st.actor[0]) == seat  # a window the seat is not asked in is never sent
    assert view["flip"] is None and view["table"]["chickens"] == ["1s"]
    seats = view["table"]["seats"]
    for s, shown in enumerate(seats):
        held = st.hand[0, s]
        kongs = [CODES[k] for k in np.flatnonzero(st.meld[0, s] == AN_KONG)]
        if s == seat:
            mine = sorted(shown["hand"] + ([shown["drawn"]] if shown["drawn"] else []))
            assert mine == sorted(CODES[k] for k in np.repeat(np.arange(27), held))
            assert shown["hidden"] == 0
            continue
        assert shown["hand"] == [] and shown["drawn"] is None
        assert shown["hidden"] == int(held.sum())
        assert [m["tile"] for m in shown["melds"] if m["type"] == "c.kong"] == [None] * len(kongs)
        open_melds = sorted(m["tile"] for m in shown["melds"] if m["tile"] is not None)
        assert open_melds == sorted(
            CODES[k] for k in np.flatnonzero((st.meld[0, s] > 0) & (st.meld[0, s] != AN_KONG))
        )
    # every tile named anywhere in the message is one the seat sees: its hand, a river, an
    # exposed meld, the tile being decided on, or the 1s (always a chicken)
    seen = {c for c in (CODES[k] for k in np.flatnonzero(st.hand[0, seat]))}
    seen |= {r["t"] for x in seats for r in x["river"]}
    seen |= {m["tile"] for x in seats for m in x["melds"] if m["tile"]}
    seen |= {"1s"} | ({view["tile"]} if view["tile"] else set())
    text = json.dumps({k: v for k, v in view.items() if k != "rules"})
    named = {c for c in CODES if f'"{c}"' in text or f" {c}" in text}
    assert named <= seen, named - seen


@pytest.mark.parametrize(
    "rules, seats, hands",
    [
        ({"preset": "guiyang"}, (None, "rule", "rule", "rule"), 8),
        ({"preset": "app", "overrides": {"num_players": 3}}, ("rule", None, "rule"), 4),
        # two hands a match: the next hand is dealt within the match, then by a new one
        ({"preset": "classic", "overrides": {"hands_per_game": 2}}, ("rule",) * 3 + (None,), 4),
    ],
)
def test_no_message_holds_what_the_seat_may_not_see(monkeypatch, rules, seats, hands):
    rec = Recorder(monkeypatch)
    rng = np.random.default_rng(0)
    seat = seats.index(None)
    with client() as c:
        view = new_table(c, seats=seats, rules=rules)
        tid, messages, finished = view["id"], [view], 0
        while finished < hands:
            assert view["status"] != "error", view["error"]
            if view["settlement"]:
                record = c.get(f"/api/tables/{tid}/records/{finished}").json()
                result = replay(record)
                assert result == view["settlement"]["result"]
                *_, (rules_, final, _) = iter_states(record)
                assert view["settlement"]["table"] == seat_view(rules_, final)
                finished += 1
                view = c.post(f"/api/tables/{tid}/control", json={"command": "next"}).json()
                assert (view["dealer"], view["streak"]) == (  # RULES.md 8: carried on
                    result["next_dealer"],
                    result["next_streak"],
                )
            elif view["legal"]:
                pick = view["legal"][rng.integers(len(view["legal"]))]["action"]
                act = {"version": view["version"], "action": pick}
                r = c.post(f"/api/tables/{tid}/action", json=act)
                assert r.status_code == 200, r.text
                view = r.json()
            else:
                view = c.get(f"/api/tables/{tid}?since={view['version']}").json()
            messages.append(view)
    assert len(messages) > 20 * hands
    for m in messages:
        check_message(m, rec.hidden[tid, m["version"]], seat)


def test_a_watched_open_table_records_the_policy_of_each_decision():
    """The record of a watched hand, every hand open, carries ppo-guiyang's probabilities and
    values at its decisions (null at rule's), which the replay viewer checks and shows."""
    with client(agents=("rule", "ppo-guiyang")) as c:
        seats = ("ppo-guiyang", "rule", "rule", "rule")
        tid = new_table(c, seats=seats, open=True, seed=2)["id"]
        wait_for(c, tid, lambda v: v["settlement"] is not None or v["status"] == "error")
        record = c.get(f"/api/tables/{tid}/records/0").json()
    steps = replay_steps(record)["steps"]
    seats_of = [a[0] for a in record["actions"]]
    assert [p is not None for p in record["probs"]] == [s == 0 for s in seats_of]
    assert any(v is not None for v in record["values"])
    for j, who in enumerate(seats_of):  # the action taken had a probability above 0
        if who == 0:
            assert record["probs"][j][steps[j]["chosen"]] > 0
    assert [s.get("probs") for s in steps[:-1]] == record["probs"]


def test_a_server_error_in_one_table_ends_that_table_only(monkeypatch):
    def broken(self, *args):
        raise KeyError("planted")

    monkeypatch.setattr(WebTable, "play_agent", broken)
    with client() as c:
        bad = new_table(c, seats=("rule", None, "rule", "rule"), seed=0)["id"]
        view = wait_for(c, bad, lambda v: v["status"] == "error")
        assert view["error"] == "the table stopped on a server error: KeyError: 'planted'"
        assert c.get("/api/config").status_code == 200
        assert c.get(f"/api/tables/{bad}").json()["status"] == "error"
