"""Serve the web app: ``python -m agents.web [--host H] [--port P] [--agents SPECS] ...``.

Binds 127.0.0.1 by default and prints the URL to open. Browsers may seat only the agents named
by ``--agents`` (default: the baselines and the shipped policies); each is made once at start,
so a spec that does not load is refused here (exit status 2), not at a table.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import socket
import sys
from collections.abc import Sequence

from agents.registry import SHIPPED_POLICIES, split_specs
from zhuoji_env.commands import prog
from zhuoji_env.limits import exits_2_when_out_of_memory

DEFAULT_AGENTS = ["random", "greedy", "rule", *SHIPPED_POLICIES]


def _positive(kind, what: str):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what}, got {text!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"{what}, got {text!r}")
        return value

    return parse


def is_loopback(host: str) -> bool:
    """``host`` names this machine only (localhost, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@exits_2_when_out_of_memory("python -m agents.web")
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("agents.web.__main__"), description=__doc__)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free)")
    parser.add_argument(
        "--agents",
        default=",".join(DEFAULT_AGENTS),
        help="the agent specs a browser may seat, comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--max-tables",
        type=_positive(int, "--max-tables must be a positive integer"),
        default=16,
        help="tables at once (default 16); a table nobody asks about for --idle-minutes ends",
    )
    parser.add_argument(
        "--think-limit",
        type=_positive(float, "--think-limit must be a positive number of seconds"),
        default=30.0,
        help="seconds an agent may take for one decision; past it the table ends with an error "
        "(default 30)",
    )
    parser.add_argument(
        "--idle-minutes",
        type=_positive(float, "--idle-minutes must be a positive number of minutes"),
        default=30.0,
        help="a table with no request for this long ends (default 30)",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0-65535, got {args.port}")
    try:
        specs = split_specs(args.agents, "--agents")
    except ValueError as exc:
        parser.error(str(exc))
    if len(set(specs)) != len(specs):
        parser.error(f"--agents {args.agents!r} names an agent twice: name each once")
    try:
        from agents.web.app import BackgroundServer, Settings, check_agents, create_app  # noqa: F401
    except ImportError as exc:
        parser.error(f'the web extra is not installed (pip install -e ".[web]"): {exc}')
    try:
        policies = check_agents(specs)
    except ValueError as exc:
        parser.error(f"--agents: {exc}")
    try:
        sock = socket.create_server(
            (args.host, args.port), family=socket.AF_INET6 if ":" in args.host else socket.AF_INET
        )
    except OSError as exc:
        parser.error(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    # connections inherit it: uvicorn serving a given socket leaves Nagle's algorithm on, and
    # each answer then waits for the client's delayed ACK (about 45 ms a request, measured)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    import uvicorn

    settings = Settings(specs, args.max_tables, args.think_limit, args.idle_minutes, policies)
    app = create_app(settings)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if not is_loopback(args.host):
        print(
            f"warning: serving on {args.host}, not this machine alone: anyone who can reach "
            "this address can open tables and play",
            file=sys.stderr,
        )
    print(f"Zhuoji web app: open http://{shown}:{port}/  (Ctrl-C stops it)", flush=True)
    print(f"agents offered: {', '.join(specs)}; hints from: {', '.join(policies) or 'none'}")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
