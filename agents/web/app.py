"""The web app's HTTP side: a Starlette application over the tables of :mod:`agents.web.table`.

Plain HTTP with JSON, a long poll for changes: every request is one checked step (an action, a
table made, a control) answered with its own status code, which is what the refusals of the
API need (400 malformed or illegal, 404 unknown table, 409 stale or out of turn, 413 too large,
429 too many tables), and a loopback client or ``curl`` can drive a table. A browser polls
``GET /api/tables/ID?since=V``, which answers as soon as the table's view passes version V.

Agents run off the event loop, in a thread pool, one decision at a time per table; a decision
that outlasts ``think_limit`` seconds ends that table with an error shown (its thread is left to
finish, its answer dropped), as does an agent that raises: other tables go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agents.base import agent_label, decide, policy_outputs
from agents.registry import make_agent
from agents.web.table import Decision, Refused, WebTable
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.game import is_integer
from zhuoji_env.rules import PRESET_NAMES, SWITCHES, Rules
from zhuoji_env.view import STATIC as SHARED_STATIC

STATIC = resources.files("agents.web") / "static"
MAX_BODY = 16_384
"""Largest request body, in bytes: a table's settings fit in far less."""
LONG_POLL_S = 20.0
"""Longest wait of one ``GET /api/tables/ID?since=V`` before it answers unchanged."""
THINKING_AFTER_S = 0.25
"""An agent still deciding after this long is shown as thinking."""
PACE_MS = (0, 5000)
"""Allowed pause between the others' moves, in milliseconds."""
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}
"""Sent with every answer: the page loads nothing from elsewhere (it works offline)."""


@dataclass
class Settings:
    """What the server was started with (``python -m agents.web``'s flags)."""

    agents: list[str]
    max_tables: int = 16
    think_limit: float = 30.0
    idle_minutes: float = 30.0
    policies: list[str] = field(default_factory=list)  # the agents that give hints


def check_agents(specs: list[str]) -> list[str]:
    """The offered agents that have a policy (probabilities, for hints); ``ValueError`` naming a
    spec that does not make an agent."""
    policies = []
    for spec in specs:
        agent = make_agent(spec, seed=0)
        if hasattr(agent, "policy"):
            policies.append(spec)
    return policies


class Runner:
    """A table with what drives it: its change notice, its wake-up and its driving task."""

    def __init__(self, table: WebTable):
        self.table = table
        self.changed = asyncio.Condition()
        self.poke = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.closed = False

    async def notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()
        self.poke.set()


def _think(d: Decision):
    """The agent's action for ``d``, with its probabilities and value where asked and known
    (runs in a worker thread)."""
    action = int(decide(d.agent, d.obs, d.mask, d.state, np.array([0]))[0])
    probs = value = None
    if d.with_policy:
        out = policy_outputs(d.agent, d.obs, d.mask)
        if out is not None:
            probs, value = out[0][0], float(out[1][0])
    return action, probs, value


def _hint(d: Decision) -> dict[str, Any]:
    """The hint agent's probabilities of the person's legal actions, and its value in points."""
    probs, value = policy_outputs(d.agent, d.obs, d.mask)
    legal = np.flatnonzero(d.mask[0])
    order = legal[np.argsort(-probs[0, legal], kind="stable")]
    scale = getattr(d.agent, "reward_scale", 1.0)
    v = float(value[0]) / scale
    return {
        "probs": [[A.describe(a), round(float(probs[0, a]), 4)] for a in order],
        "value": None if math.isnan(v) else round(v, 2),
    }


class Server:
    """The tables and the agents' thread pool of one app."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.runners: dict[str, Runner] = {}
        self.opening = 0  # tables whose agents are being made
        self.pool = ThreadPoolExecutor(thread_name_prefix="zhuoji-agent")

    # ------------------------------------------------------------------ tables
    def runner(self, table_id: str) -> Runner:
        r = self.runners.get(table_id)
        if r is None:
            raise Refused(404, f"no table {table_id[:40]!r}: it ended, expired or never existed")
        r.table.last_seen = time.monotonic()
        return r

    def reap(self) -> None:
        """Close the tables nobody has asked about for ``idle_minutes``."""
        limit = self.settings.idle_minutes * 60
        now = time.monotonic()
        for tid, r in list(self.runners.items()):
            if now - r.table.last_seen > limit:
                self.close(tid)

    def close(self, table_id: str) -> None:
        r = self.runners.pop(table_id, None)
        if r is not None:
            r.closed = True
            if r.task is not None:
                r.task.cancel()

    async def new_table(self, body: dict[str, Any]) -> WebTable:
        """A table from the lobby's settings (:func:`table_settings`), started; its agents are
        made in the pool (loading a policy takes a while)."""
        self.reap()
        if len(self.runners) + self.opening >= self.settings.max_tables:
            raise Refused(
                429,
                f"this server already runs {len(self.runners)} tables, its --max-tables: end "
                "one (or wait until an idle one expires) and try again",
            )
        kwargs = table_settings(body, self.settings)
        self.opening += 1
        try:
            loop = asyncio.get_running_loop()
            table = await loop.run_in_executor(self.pool, lambda: WebTable(**kwargs))
        finally:
            self.opening -= 1
        r = Runner(table)
        self.runners[table.id] = r
        r.task = asyncio.get_running_loop().create_task(self._drive(r))
        return table

    # ------------------------------------------------------------------ driving
    async def _drive(self, r: Runner) -> None:
        """Play the agents' moves of one table, at its pace, until it is closed; an unexpected
        error ends that table, shown there, and no other."""
        try:
            await self._drive_loop(r)
        except Exception as exc:
            r.table.fail(f"the table stopped on a server error: {type(exc).__name__}: {exc}")
            await r.notify()

    async def _drive_loop(self, r: Runner) -> None:
        t = r.table
        while not r.closed:
            if t.agent_to_move():
                before = t.version
                await self._agent_move(r)
                await r.notify()
                if t.version != before and t.pace_ms and t.agent_to_move():
                    r.poke.clear()
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(r.poke.wait(), t.pace_ms / 1000)
            elif t.person_to_move() and t.hint_agent is not None and t.hint is None:
                await self._hint_move(r)
                await r.notify()
            else:
                r.poke.clear()
                await r.poke.wait()

    async def _run(self, r: Runner, fn, d: Decision, seat_shown: bool):
        """``fn(d)`` in the pool within the think limit; TimeoutError past it."""
        t = r.table
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self.pool, fn, d)
        start = time.monotonic()
        done, _ = await asyncio.wait({fut}, timeout=THINKING_AFTER_S)
        if not done and seat_shown:
            t.thinking = d.seat
            if t.publish():
                await r.notify()
        left = self.settings.think_limit - (time.monotonic() - start)
        try:
            return await asyncio.wait_for(asyncio.shield(fut), max(left, 0))
        finally:
            t.thinking = None

    async def _agent_move(self, r: Runner) -> None:
        t = r.table
        d = t.decision()
        name = f"agent {agent_label(d.agent)} at seat P{d.seat}"
        try:
            action, probs, value = await self._run(r, _think, d, True)
        except asyncio.TimeoutError:
            limit = self.settings.think_limit
            t.fail(f"{name} took longer than the think limit ({limit:g} s) for one decision")
            return
        except Exception as exc:  # the table ends with the agent's fault shown, not the server
            t.fail(f"{name} failed: {type(exc).__name__}: {exc}")
            return
        if not r.closed:
            t.play_agent(d, action, probs, value)

    async def _hint_move(self, r: Runner) -> None:
        t = r.table
        d, version = t.hint_decision(), t.version
        try:
            hint = await self._run(r, _hint, d, False)
        except asyncio.TimeoutError:
            hint = {"error": f"no hint within the think limit ({self.settings.think_limit:g} s)"}
        except Exception as exc:
            hint = {"error": f"{type(exc).__name__}: {exc}"}
        if t.version == version and not r.closed:
            t.set_hint({"agent": t.hint_spec, **hint})


# --------------------------------------------------------------------------- request checks
async def read_body(request: Request) -> dict[str, Any]:
    """The request's JSON object; 413 past :data:`MAX_BODY` bytes, 400 for anything but one
    JSON object (``NaN`` and ``Infinity`` included)."""
    size = request.headers.get("content-length")
    if size is not None and (not size.isdigit() or int(size) > MAX_BODY):
        raise Refused(413, f"the request body is over {MAX_BODY} bytes")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise Refused(413, f"the request body is over {MAX_BODY} bytes")

    def no_constant(name):
        raise ValueError(f"{name} is not a JSON number")

    try:
        data = json.loads(body.decode("utf-8"), parse_constant=no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Refused(400, f"the request body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise Refused(400, f"the request body must be a JSON object, got {type(data).__name__}")
    return data


def only_keys(body: dict[str, Any], allowed: tuple[str, ...], required: tuple[str, ...] = ()):
    extra = [k for k in body if k not in allowed]
    if extra:
        raise Refused(400, f"unknown field {extra[0][:40]!r}: allowed {', '.join(allowed)}")
    missing = [k for k in required if k not in body]
    if missing:
        raise Refused(400, f"missing field {missing[0]!r}: required {', '.join(required)}")


TABLE_FIELDS = ("rules", "seats", "seed", "open", "hint", "pace_ms")


def table_settings(body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """The :class:`WebTable` arguments of a request to make a table, each checked: the rules (a
    record's ``{"preset", "overrides"}``), one seat per player (an offered agent, or null for
    the person, at most one), the seed (null: a random deal), ``open`` (every hand shown, only
    with no person), ``hint`` (an offered agent with a policy) and ``pace_ms``."""
    only_keys(body, TABLE_FIELDS, ("seats",))
    try:
        rules = Rules.make(body.get("rules", "guiyang"))
    except (ValueError, TypeError) as exc:
        raise Refused(400, f"rules: {exc}") from None
    seats = body["seats"]
    n = rules.num_players
    if not isinstance(seats, list) or len(seats) != n:
        raise Refused(
            400, f"'seats' must list {n} entries (an agent, or null for you), one per seat"
        )
    offered = settings.agents
    for s, spec in enumerate(seats):
        if spec is not None and (not isinstance(spec, str) or spec not in offered):
            raise Refused(
                400,
                f"seat {s}: agent {json.dumps(spec)[:60]} is not offered by this server; "
                f"offered: {', '.join(offered)} (the server's --agents)",
            )
    if seats.count(None) > 1:
        raise Refused(400, "'seats' may hold one null (your seat), not several")
    seed = body.get("seed")
    if seed is not None and (not is_integer(seed) or not 0 <= seed < 2**63):
        raise Refused(400, "'seed' must be null (a random deal) or an integer 0 to 2**63-1")
    open_hands = body.get("open", False)
    if not isinstance(open_hands, bool):
        raise Refused(400, "'open' must be true or false")
    if open_hands and None in seats:
        raise Refused(400, "'open' shows every hand: only a watched table (no null seat) has it")
    hint = check_hint(body.get("hint"), settings, None in seats)
    pace = body.get("pace_ms", 600)
    if not is_integer(pace) or not PACE_MS[0] <= pace <= PACE_MS[1]:
        raise Refused(400, f"'pace_ms' must be an integer {PACE_MS[0]}-{PACE_MS[1]}")
    return {
        "rules": rules,
        "specs": seats,
        "seed": seed,
        "open_hands": open_hands,
        "hint": hint,
        "pace_ms": int(pace),
    }


def check_hint(hint: Any, settings: Settings, person: bool) -> str | None:
    """The hint agent asked for: null (no hints) or an offered agent with a policy, at a table
    with a person (a watched table shows each agent's own probabilities)."""
    if hint is not None and (not isinstance(hint, str) or hint not in settings.policies):
        raise Refused(
            400,
            f"hint agent {json.dumps(hint)[:60]} is not offered: hints come from "
            f"{', '.join(settings.policies) or 'no agent of this server'} (agents with a policy)",
        )
    if hint is not None and not person:
        raise Refused(400, "hints are for your own decisions: a watched table shows each agent's")
    return hint


# --------------------------------------------------------------------------- the app
def create_app(settings: Settings) -> Starlette:
    """The Starlette application of a server with ``settings``."""
    server = Server(settings)

    def refused(request: Request, exc: Refused) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code)

    async def index(request: Request) -> Response:
        return FileResponse(str(STATIC / "index.html"))

    async def config(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "agents": settings.agents,
                "policies": settings.policies,
                "presets": list(PRESET_NAMES),
                "switches": list(SWITCHES),
                "max_tables": settings.max_tables,
                "think_limit": settings.think_limit,
                "pace_ms": list(PACE_MS),
            }
        )

    async def list_tables(request: Request) -> JSONResponse:
        server.reap()
        return JSONResponse(
            [
                {
                    "id": tid,
                    "names": r.table.names,
                    "status": r.table.published["status"],
                    "hands": r.table.published["hands"],
                    "preset": r.table.rules.preset,
                }
                for tid, r in server.runners.items()
            ]
        )

    async def make_table(request: Request) -> JSONResponse:
        table = await server.new_table(await read_body(request))
        return JSONResponse(table.snapshot(), status_code=201)

    async def get_table(request: Request) -> JSONResponse:
        r = server.runner(request.path_params["table"])
        since = request.query_params.get("since")
        if since is not None:
            if not since.isdigit():
                raise Refused(400, "'since' must be a view version (a non-negative integer)")
            async with r.changed:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(
                        r.changed.wait_for(lambda: r.closed or r.table.version > int(since)),
                        LONG_POLL_S,
                    )
            if r.closed:
                raise Refused(404, "the table was ended")
        return JSONResponse(r.table.snapshot())

    async def act(request: Request) -> JSONResponse:
        r = server.runner(request.path_params["table"])
        body = await read_body(request)
        only_keys(body, ("version", "action"), ("version", "action"))
        r.table.play_person(body["version"], body["action"])
        await r.notify()
        return JSONResponse(r.table.snapshot())

    async def control(request: Request) -> JSONResponse:
        r = server.runner(request.path_params["table"])
        body = await read_body(request)
        only_keys(body, ("command", "pace_ms", "agent"), ("command",))
        t, command = r.table, body["command"]
        if command == "next":
            t.next_hand()
        elif command in ("pause", "play", "step"):
            t.paused = command != "play"
            t.steps_left = 1 if command == "step" else None
            t.publish()
        elif command == "pace":
            pace = body.get("pace_ms")
            if not is_integer(pace) or not PACE_MS[0] <= pace <= PACE_MS[1]:
                raise Refused(400, f"'pace_ms' must be an integer {PACE_MS[0]}-{PACE_MS[1]}")
            t.pace_ms = int(pace)
            t.publish()
        elif command == "hint":
            if "agent" not in body:
                raise Refused(400, "missing field 'agent': the hint agent, or null for none")
            t.use_hint(check_hint(body["agent"], settings, t.seat is not None))
        else:
            raise Refused(
                400,
                f"unknown command {json.dumps(command)[:40]}: allowed next, pause, play, step, "
                "pace, hint",
            )
        await r.notify()
        return JSONResponse(t.snapshot())

    async def record(request: Request) -> Response:
        r = server.runner(request.path_params["table"])
        k = request.path_params["hand"]
        records = r.table.records
        if not k.isdigit() or int(k) >= len(records):
            raise Refused(
                404, f"no finished hand {k[:20]!r} at this table: it has {len(records)} (0-based)"
            )
        t = r.table
        seed = "random" if t.chosen_seed is None else f"seed{t.chosen_seed}"
        name = f"zhuoji-{t.rules.preset}-{seed}-hand{int(k)}.json"
        return Response(
            json.dumps(records[int(k)], indent=1),
            media_type="application/json",
            headers={"content-disposition": f'attachment; filename="{name}"'},
        )

    async def end_table(request: Request) -> JSONResponse:
        tid = request.path_params["table"]
        r = server.runner(tid)
        server.close(tid)
        await r.notify()
        return JSONResponse({"ended": tid})

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async def reaper():
            while True:
                await asyncio.sleep(30)
                server.reap()

        task = asyncio.get_running_loop().create_task(reaper())
        try:
            yield
        finally:
            task.cancel()
            for tid in list(server.runners):
                server.close(tid)
            server.pool.shutdown(wait=False, cancel_futures=True)

    routes = [
        Route("/", index),
        Route("/api/config", config),
        Route("/api/tables", list_tables, methods=["GET"]),
        Route("/api/tables", make_table, methods=["POST"]),
        Route("/api/tables/{table}", get_table, methods=["GET"]),
        Route("/api/tables/{table}", end_table, methods=["DELETE"]),
        Route("/api/tables/{table}/action", act, methods=["POST"]),
        Route("/api/tables/{table}/control", control, methods=["POST"]),
        Route("/api/tables/{table}/records/{hand}", record, methods=["GET"]),
        Mount("/static", StaticFiles(packages=[("agents.web", "static")]), name="static"),
        Mount("/shared", StaticFiles(directory=str(SHARED_STATIC)), name="shared"),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={Refused: refused, HTTPException: http_error},
        middleware=[Middleware(SecurityHeaders)],
        lifespan=lifespan,
    )
    app.state.server = server
    return app


class SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` to every answer."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class BackgroundServer:
    """A uvicorn server of ``app`` in a thread on 127.0.0.1 (port 0: a free one), for tests and
    the load benchmark: ``with BackgroundServer(app) as url: ...``."""

    def __init__(self, app, port: int = 0):
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the web app's server did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
