"""Data-parallel launch: place a run's processes on one or several machines, meet, join a gloo
group and run each process's share, stopping every process within seconds of a failure.

A program hands in its flags (``args``: a dataclass whose fields include :data:`LAUNCH_FLAGS`)
and a :class:`Job`, its module-level functions that check the flags and run one process's share;
this module knows nothing of what they train. The program asks :func:`launch` where this process
stands (a :class:`Place`) and, when the run has several processes, runs :func:`data_parallel`.

Launch modes (:func:`launch`):

- One machine: ``--processes P``. The first process holds the store where the processes meet (a
  ``TCPStore`` on a free port of 127.0.0.1) and spawns the other ``P - 1`` (``_other_process``,
  a module-level function, so that a spawned process finds it by name).
- Several machines: the same command on each, with ``--nnodes N --node-rank R --master-addr HOST
  [--master-port PORT]``. The run has ``N x P`` processes, numbered node by node; node 0's first
  process holds the store at ``HOST:PORT`` and each node's first process spawns its node's
  others. The address is checked to be one gloo can be reached at (:func:`check_gloo_address`).
- torchrun (or another launcher setting torch's env:// variables ``RANK``, ``WORLD_SIZE``,
  ``MASTER_ADDR``, ``MASTER_PORT``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``): the launcher starts
  every process and places it, and the flags that place processes are refused; the store is
  torchrun's agent's (else process 0's).

Every launch flag and variable is checked before any work; a bad one raises
:class:`~training.cli.FlagError` naming it (exit status 2 under :func:`training.cli.run_main`).

Each process checks its flags (``Job.check``) before it meets the others, so a refused flag
costs no wait; a process that does not hold the store records the refusal there, when the store
opens within 10 seconds (``_tell``). It then announces its :func:`launch_record` (its flags
but those each node sets itself, and the sha256 of the files that ``Job.files`` name), joins
the gloo group (``_join``) and runs its share (``Job.run``).

Process 0 (node 0's first) holds the store (unless torchrun's agent does), compares every
process's record with its own before anyone runs (the first that differs is the run's failure),
checks the flags as the one that writes (``Job.check`` with ``lead`` true), watches every
process's heartbeat, returns the results of ``Job.run`` (the others return ``{}``), and, holding
the store, keeps it open until the others' last calls have reached it.

Failures (:class:`Watch`): every process sends a heartbeat to the store each :data:`BEAT`
second and checks there for a recorded failure. A process that raises records
``process R (node N) raised ...`` with its exit code (:func:`own_failure`); a node's first
process records the exit code of a process it started; process 0 records a process silent for
:data:`SILENT` seconds (the others process 0's); after a failed collective call, the processes
whose heartbeat stopped (:meth:`Watch.gone`). Every other process then raises ``RuntimeError:
data-parallel training stopped: ...`` naming that first failure or, blocked in a collective
call for :data:`GRACE` seconds, prints it and exits with status 1. docs/distributed.md has the
commands, the network requirements and a table of the failures.
"""

from __future__ import annotations

import _thread
import contextlib
import dataclasses
import datetime
import hashlib
import importlib
import ipaddress
import json
import multiprocessing as mp
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.cli import (
    INT_NON_NEGATIVE,
    INT_POSITIVE,
    FlagError,
    check_fields,
    command_line,
    flag,
)
from zhuoji_env.engine.records import is_plain_int
from zhuoji_env.machine import usable_cores


def rank_seed(seed: int, rank: int) -> int:
    """The seed of data-parallel process ``rank``'s deals and sampling (``seed`` for the first)."""
    return seed + rank * 2**32


@dataclass(frozen=True)
class Place:
    """Where a process stands in a data-parallel run: ``rank`` of the run's ``size`` processes,
    the ``local``-th of the ``per_node`` of its node. They meet at the store on ``host:port``
    (port 0: a free one, which the first process picks and passes on), held by the first
    process when ``holds_store``, else by torchrun's agent. ``torchrun``: torchrun (or another
    launcher setting torch's env:// variables) started the process; ``given`` is what set the
    number of processes, as messages name it."""

    rank: int = 0
    size: int = 1
    local: int = 0
    per_node: int = 1
    host: str = "127.0.0.1"
    port: int = 0
    holds_store: bool = True
    torchrun: bool = False
    given: str = "--processes 1"

    @property
    def node(self) -> int:
        return self.rank // self.per_node

    @property
    def nodes(self) -> int:
        return self.size // self.per_node

    def who(self, rank: int | None = None) -> str:
        """``process R (node N)``: this process, or the run's process ``rank``."""
        rank = self.rank if rank is None else rank
        return f"process {rank} (node {rank // self.per_node})"


PORT = (lambda v: is_plain_int(v) and 1 <= v <= 65535, "1 to 65535")
LAUNCH_FLAGS = ("processes", "nnodes", "node_rank", "master_addr", "master_port")
"""The flags that place the processes, which torchrun's own flags replace."""


def launch(args: Any) -> Place:
    """This process's place in the run (:class:`Place`), from ``args``, a dataclass whose fields
    include :data:`LAUNCH_FLAGS` (a flag that differs from its field's default counts as given).
    Under torchrun (or another launcher:
    ``RANK`` and ``WORLD_SIZE`` set) from torch's env:// variables, ``RANK``, ``WORLD_SIZE``,
    ``MASTER_ADDR``, ``MASTER_PORT`` and ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE`` (the flags that
    place processes are refused there); else from ``--processes`` on ``--nnodes`` machines,
    this one being ``--node-rank``, where the run's first process holds the store at
    ``--master-addr:--master-port``. A run over several machines is checked to be reachable
    there (:func:`check_gloo_address`).

    Raises :class:`FlagError` naming the flag or variable, its value and what is allowed."""
    check_fields(
        args,
        {
            "processes": INT_POSITIVE,
            "nnodes": INT_POSITIVE,
            "node_rank": INT_NON_NEGATIVE,
            "master_port": PORT,
        },
    )
    given = [f for f in LAUNCH_FLAGS if getattr(args, f) != getattr(type(args), f)]
    if "RANK" in os.environ or "WORLD_SIZE" in os.environ:
        if given:
            raise FlagError(
                f"{flag(given[0])} {getattr(args, given[0])!r}: RANK and WORLD_SIZE are set, so "
                "torchrun (or another launcher) started this process and places it; give the "
                "nodes and processes per node to torchrun (--nnodes, --nproc-per-node, "
                f"--node-rank, --master-addr, --master-port) and leave out "
                f"{', '.join(flag(f) for f in given)}"
            )
        size = _env_int("WORLD_SIZE", 1, None)
        rank = _env_int("RANK", 0, size - 1)
        per_node = _env_int("LOCAL_WORLD_SIZE", 1, size, 1)
        host = os.environ.get("MASTER_ADDR", "")
        if not host:
            raise FlagError(
                "environment variable MASTER_ADDR is not set: under torchrun (RANK and "
                "WORLD_SIZE set) it is node 0's address, where the processes meet"
            )
        place = Place(
            rank=rank,
            size=size,
            local=_env_int("LOCAL_RANK", 0, per_node - 1, 0),
            per_node=per_node,
            host=host,
            port=_env_int("MASTER_PORT", 1, 65535),
            holds_store=rank == 0 and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True",
            torchrun=True,
            given=f"torchrun's WORLD_SIZE {size}",
        )
        if size > per_node:
            check_gloo_address(host, "environment variable MASTER_ADDR")
        return place
    if args.nnodes == 1:
        several = [f for f in given if f != "processes"]
        if several:
            raise FlagError(
                f"{flag(several[0])} {getattr(args, several[0])!r}: places this machine in a run "
                "over several machines, so it needs --nnodes > 1 (on one machine, leave it out)"
            )
        return Place(size=args.processes, per_node=args.processes, given=given_processes(args))
    if args.node_rank >= args.nnodes:
        raise FlagError(
            f"--node-rank {args.node_rank}: must be below --nnodes {args.nnodes} (the nodes are "
            f"numbered 0 to {args.nnodes - 1})"
        )
    if not args.master_addr:
        raise FlagError(
            f"--nnodes {args.nnodes}: the nodes meet at node 0, so it needs --master-addr, node "
            "0's host name or address as every node reaches it (and --master-port, default "
            f"{type(args).master_port}, open there)"
        )
    check_gloo_address(args.master_addr, "--master-addr")
    return Place(
        rank=args.node_rank * args.processes,
        size=args.nnodes * args.processes,
        per_node=args.processes,
        host=args.master_addr,
        port=args.master_port,
        holds_store=args.node_rank == 0,
        given=given_processes(args),
    )


def given_processes(args: Any) -> str:
    """The flags that set the number of processes, as messages name them."""
    if args.nnodes == 1:
        return f"--processes {args.processes}"
    return f"--nnodes {args.nnodes} x --processes {args.processes} = {args.nnodes * args.processes}"


def _env_int(name: str, low: int, high: int | None, default: int | None = None) -> int:
    """The integer environment variable ``name`` (``default`` when unset, if not None),
    checked to be in ``[low, high]``."""
    text = os.environ.get(name, "")
    if not text and default is not None:
        return default
    allowed = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        raise FlagError(
            f"environment variable {name}={text!r}: must be {allowed} (torchrun, or the "
            "launcher that set RANK and WORLD_SIZE, sets it)"
        )
    return value


def check_gloo_address(host: str, name: str) -> None:
    """Refuse a run over several machines in which this one could not be reached: ``host``
    (the store's, given by ``name``) does not resolve, or this machine's host name resolves to a
    loopback address (a common ``/etc/hosts`` entry), where gloo would listen, while
    ``GLOO_SOCKET_IFNAME`` names no network interface for it. Nodes that meet at a loopback
    ``host`` are all on this machine (the loopback check of docs/distributed.md), and pass."""
    try:
        meet = ipaddress.ip_address(socket.gethostbyname(host))
    except OSError as exc:
        raise FlagError(f"{name} {host!r}: this machine cannot resolve it ({exc})") from None
    if meet.is_loopback or os.environ.get("GLOO_SOCKET_IFNAME"):
        return
    me = socket.gethostname()
    try:
        mine = socket.gethostbyname(me)
    except OSError:
        mine = ""
    if not mine or ipaddress.ip_address(mine).is_loopback:
        raise FlagError(
            f"{name} {host!r}: the nodes are on several machines, but this machine's host name "
            f"{me!r} resolves to {mine or 'no address'}, where gloo would listen and no other "
            "machine reaches it; set GLOO_SOCKET_IFNAME to the network interface the nodes "
            "share (e.g. GLOO_SOCKET_IFNAME=eth0)"
        )


JOIN = datetime.timedelta(minutes=5)
"""How long the processes of a run wait for each other to start and meet."""
COLLECTIVE = datetime.timedelta(hours=6)
"""How long a collective call waits (the others wait in one while the first process clones a
teacher or evaluates): a process that fails or dies is caught by :class:`Watch` instead."""
BEAT = 1.0
"""Seconds between a process's heartbeats, and between its checks for a failure elsewhere."""
SILENT = 30.0
"""Seconds without a heartbeat after which a process counts as gone (hung, or its machine or
network down: that closes no connection, and a collective call would wait for it)."""
GRACE = 5.0
"""Seconds a process stopped by another's failure has to end by itself (:meth:`Watch.stop`)."""
KEY = "zhuoji/"
"""Prefix of the run's keys in the store."""


@dataclass(frozen=True)
class Job:
    """What each process of a data-parallel run does with the run's ``args``, as module-level
    functions (a spawned process finds them by name):

    - ``check(args, lead)`` checks the flags before the process meets the others (``lead``: it
      is process 0, the one that writes), raising :class:`~training.cli.FlagError` naming a bad
      one, and returns what ``run`` needs;
    - ``run(args, checked, group)`` runs the process's share once every process has joined the
      run's gloo ``group`` (a torch.distributed group), with ``checked`` what ``check`` returned;
      it returns the results in process 0, ``{}`` in the others.

    ``prog`` is the command in error lines; ``files`` maps the flags that name a file each
    machine reads its own copy of, which every process must hold with the same contents, to
    what the file holds, as messages name it (e.g. ``{"resume": "checkpoint"}``)."""

    prog: str
    check: Callable[[Any, bool], Any]
    run: Callable[[Any, Any, Any], dict]
    files: dict[str, str] = field(default_factory=dict)


class _Stopped(Exception):
    """Another process's failure, recorded in the store, stops this one."""


class Watch:
    """Ends the run within seconds of any process's failure, wherever it runs: a thread that
    sends this process's heartbeat to the store every :data:`BEAT` seconds and checks there for
    a recorded failure (then it stops the process: :meth:`stop`). The node's first process also
    records the exit of each process it started, with its exit code; process 0 records a
    process whose heartbeat stops for :data:`SILENT` seconds (its whole process frozen, or its
    machine or network down: a process stuck in its own code still beats), and the others
    process 0's. The watch has its own connection to the store, as the main thread's waits
    hold theirs.

    ``handling`` is set by the main thread once it handles a failure (:func:`data_parallel`);
    then the watch leaves the process to it. ``prog`` is the command in the line it prints when
    it ends the process."""

    def __init__(self, place: Place, children: list, prog: str):
        import torch.distributed as dist

        self.place, self.children, self.prog = place, children, prog
        self.store = dist.TCPStore(
            place.host, place.port, place.size, is_master=False, timeout=JOIN
        )
        self.store.set_timeout(datetime.timedelta(seconds=10))
        self.store.add(f"{KEY}joined", 1)
        self.handling = threading.Event()
        self.seen: str | None = None  # the failure that stopped this process, once read
        self._done = threading.Event()
        self._heard: dict[int, tuple[int, float]] = {}
        self._thread = threading.Thread(target=self._loop, name="zhuoji-watch", daemon=True)
        self._thread.start()

    def finished(self) -> None:
        """Record that this process's share ended well: its heartbeat stops now, and process 0,
        which may work on alone (a final evaluation, measurement or plot), must not take that
        silence for a frozen process."""
        self.store.add(f"{KEY}finished/{self.place.rank}", 1)

    def close(self) -> None:
        """Stop watching (the thread ends within a heartbeat)."""
        self._done.set()
        self._thread.join()

    def failure(self) -> str | None:
        """The run's first recorded failure, or None."""
        key = f"{KEY}failed"
        return self.store.get(key).decode() if self.store.check([key]) else None

    def record(self, failure: str) -> str:
        """Record ``failure``, unless one is recorded already; returns the one recorded."""
        return self.store.compare_set(f"{KEY}failed", "", failure).decode()

    def lost(self, exc: Exception) -> str:
        """The failure of a store that stopped answering (raising ``exc``)."""
        holder = "process 0 (node 0)" if not self.place.torchrun else "torchrun's agent on node 0"
        return (
            f"the run's store at {self.place.host}:{self.place.port} stopped answering "
            f"({str(exc).splitlines()[0]}): {holder}, which holds it, has exited, or its machine "
            "is unreachable"
        )

    def beats(self, ranks) -> dict[int, int]:
        """The heartbeats counted so far of each of the processes ``ranks`` that has sent one."""
        keys = {k: f"{KEY}beat/{k}" for k in ranks}
        return {k: self.store.add(key, 0) for k, key in keys.items() if self.store.check([key])}

    def gone(self) -> str | None:
        """After a collective call failed here: the failure that another process records
        within three heartbeats, else (recorded here) the processes whose heartbeat stopped
        meanwhile, as a process killed, or one whose machine went down, records nothing; None
        when every other process still beats."""
        others = [k for k in range(self.place.size) if k != self.place.rank]
        try:
            before = self.beats(others)
            deadline = time.monotonic() + 3 * BEAT
            while time.monotonic() < deadline:
                if failure := self.failure():
                    return failure
                time.sleep(BEAT / 4)
            after = self.beats(others)
        except RuntimeError as exc:
            return self.lost(exc)
        silent = [k for k, count in before.items() if after.get(k) == count]
        if not silent:
            return None
        return self.record(
            f"{', '.join(self.place.who(k) for k in silent)} stopped without recording an exit "
            "code: killed (by a signal, or for want of memory), or its machine or network went "
            "down"
        )

    def stop(self, failure: str) -> None:
        """Stop this process for ``failure``: interrupt its main thread (its handler raises,
        naming the failure), and end the process, with the processes it started, when the
        main thread has not taken the failure over within :data:`GRACE` seconds (a collective
        call's wait is not interrupted)."""
        if not self.handling.is_set():
            _thread.interrupt_main(signal.SIGUSR1)
        if self.handling.wait(GRACE):
            return
        print(
            f"{self.prog}: error: data-parallel training stopped: {failure} "
            f"({self.place.who()} was blocked waiting for the others, and is ended)",
            file=sys.stderr,
            flush=True,
        )
        for child in self.children:
            child.terminate()
        with contextlib.suppress(RuntimeError):
            self.store.add(f"{KEY}stopped", 1)
        os._exit(1)

    def _loop(self) -> None:
        while not self._done.wait(BEAT):
            try:
                failure = self._check()
            except RuntimeError as exc:
                if self._done.is_set():
                    return
                failure = self.lost(exc)
            if failure:
                self.seen = failure
                self.stop(failure)
                return

    def _check(self) -> str | None:
        """One heartbeat: send it, record the exit of a process started here and the silence
        of a watched one, and return the run's recorded failure, if any."""
        p = self.place
        self.store.add(f"{KEY}beat/{p.rank}", 1)
        for local, child in enumerate(self.children, 1):
            if child.exitcode:
                rank = p.rank + local
                joined = self.store.check([f"{KEY}ready/{rank}"])
                self.record(
                    f"{p.who(rank)} exited with code {exit_text(child.exitcode)}"
                    + ("" if joined else " before joining the run")
                )
        now = time.monotonic()
        watched = range(1, p.size) if p.rank == 0 else [0]  # process 0 watches all, all it
        for k, count in self.beats(watched).items():
            if self.store.check([f"{KEY}finished/{k}"]):
                continue
            heard = self._heard.get(k)
            if heard is None or heard[0] != count:
                self._heard[k] = (count, now)
            elif now - heard[1] > SILENT:
                self.record(
                    f"{p.who(k)} has sent no heartbeat for {SILENT:.0f} s: its process is "
                    "frozen, or its machine or network is down"
                )
        return self.failure()


def exit_text(code: int) -> str:
    """A process's exit code, with the signal's name when a signal ended it."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"{code} ({signal.Signals(-code).name})"
    return str(code)


def launch_record(args: Any, files: dict[str, str]) -> dict:
    """What every process of a run must agree on: its flags but ``--node-rank`` and
    ``--master-addr`` (each node's own), and the contents (sha256) of the files that the flags
    ``files`` name (:attr:`Job.files`: each machine reads its own copy)."""
    flags = dataclasses.asdict(args)
    del flags["node_rank"], flags["master_addr"]
    sha256 = {
        k: hashlib.sha256(Path(flags[k]).read_bytes()).hexdigest() if flags[k] else ""
        for k in files
    }
    return {"flags": flags, "sha256": sha256}


def record_differences(first: dict, other: dict, files: dict[str, str]) -> str:
    """How the :func:`launch_record` of a process differs from the first process's, or ''."""
    theirs = other["flags"]
    diffs = [
        f"{flag(k)} {theirs.get(k)!r} (process 0: {v!r})"
        for k, v in first["flags"].items()
        if theirs.get(k) != v
    ]
    if not diffs:
        diffs = [
            f"its {flag(k)} {first['flags'][k]!r} holds another {what} (sha256 "
            f"{other['sha256'][k][:12]}..., process 0's {first['sha256'][k][:12]}...)"
            for k, what in files.items()
            if other["sha256"][k] != first["sha256"][k]
        ]
    return "; ".join(diffs)


def _meet(place: Place):
    """This process's connection to the store where the run's processes meet: a new store
    (on ``place.port``, or a free port when that is 0) where the process holds it, else a
    connection to it, waiting up to :data:`JOIN` for it to open."""
    import torch.distributed as dist

    try:
        return dist.TCPStore(
            place.host,
            place.port,
            place.size,
            is_master=place.holds_store,
            timeout=JOIN,
            wait_for_workers=False,
        )
    except RuntimeError as exc:  # torch's DistNetworkError, DistStoreError
        reason = str(exc).splitlines()[0]
        if place.holds_store:
            raise FlagError(
                f"--master-port {place.port}: node 0 cannot listen there ({reason}); pick a "
                "free port"
            ) from None
        raise RuntimeError(
            f"{place.who()} could not reach the run's store at {place.host}:{place.port} "
            f"within {JOIN.seconds // 60} minutes ({reason}): start node 0's command, and check "
            "that every node reaches node 0 at that address and port"
        ) from None


def _join(place: Place, store, args: Any, files: dict[str, str]):
    """Announce this process's :func:`launch_record` in the store and join the run's gloo
    group (returned), whose collective calls wait up to :data:`COLLECTIVE`. Process 0 first
    waits, up to :data:`JOIN`, until every process has announced a record equal to its own (the
    first that differs is the run's failure), and stops at once on a failure recorded
    meanwhile."""
    import torch.distributed as dist

    mine = launch_record(args, files)
    store.set(f"{KEY}ready/{place.rank}", json.dumps(mine))
    deadline = time.monotonic() + JOIN.total_seconds()
    waiting = list(range(1, place.size)) if place.rank == 0 else []
    while waiting:
        if store.check([f"{KEY}failed"]):
            raise _Stopped
        for k in [k for k in waiting if store.check([f"{KEY}ready/{k}"])]:
            theirs = json.loads(store.get(f"{KEY}ready/{k}"))
            differs = record_differences(mine, theirs, files)
            if differs:
                store.compare_set(
                    f"{KEY}failed",
                    "",
                    f"{place.who(k)} was started with other flags than process 0: {differs}; "
                    "every node runs the same command but for --node-rank (and --master-addr)",
                )
                raise _Stopped
            waiting.remove(k)
        if waiting and time.monotonic() > deadline:
            raise TimeoutError(
                f"{', '.join(place.who(k) for k in waiting)} did not join within "
                f"{JOIN.seconds // 60} minutes: start every node's command (nodes 0 to "
                f"{place.nodes - 1}), with the same --nnodes and --processes"
            )
        time.sleep(0.05)
    dist.init_process_group(
        "gloo",
        store=dist.PrefixStore(f"{KEY}gloo", store),
        rank=place.rank,
        world_size=place.size,
        timeout=JOIN,
    )
    return dist.new_group(timeout=COLLECTIVE)


def data_parallel(args: Any, place: Place, job: Job) -> dict:
    """Run ``job`` as ``place``'s process of a data-parallel run. It checks its flags
    (``job.check``), meets the others at the store (``_meet``), starts the other
    processes of its node when it is the node's first (unless torchrun started them), joins
    the group (``_join``) and runs its share (``job.run``), watched (:class:`Watch`).
    Returns what ``job.run`` returns: the results in process 0, ``{}`` in the others.

    A failure anywhere stops every process within seconds: the one that fails records it in
    the store (``process R (node N) raised ...``, with its exit code; a refused flag too, when
    the store opens within seconds), or the node's first process records the exit code of a
    process it started, or the heartbeats name a process that vanished; each other process
    raises ``RuntimeError`` naming that failure (or prints it and exits with status 1, when
    blocked in a collective call)."""
    import torch.distributed as dist

    try:
        checked = job.check(args, place.rank == 0)
    except FlagError as exc:
        if not place.holds_store:
            _tell(place, own_failure(place, exc))
        raise
    if place.local == 0 and not place.torchrun:
        announce(place, job.prog)
    store = _meet(place)
    place = dataclasses.replace(place, port=place.port or store.port)
    children: list = []
    watch = Watch(place, children, job.prog)

    def stopped(signum, frame):
        if not watch.handling.is_set():
            raise _Stopped

    # A stop interrupts the main thread wherever it is. torch imports its compiler stack (and
    # sympy) lazily, when the first optimizer is made; an import stopped halfway leaves a broken
    # module behind in this process, so it is done before the watch can interrupt anything.
    importlib.import_module("torch._dynamo")
    previous = signal.signal(signal.SIGUSR1, stopped)
    try:
        if place.local == 0 and not place.torchrun:
            spawn = mp.get_context("spawn")
            for local in range(1, place.per_node):
                other = dataclasses.replace(
                    place, rank=place.rank + local, local=local, holds_store=False
                )
                child = spawn.Process(target=_other_process, args=(args, other, job), daemon=True)
                child.start()
                children.append(child)
        group = _join(place, store, args, job.files)
        out = job.run(args, checked, group)
        watch.finished()
        watch.close()
    except BaseException as exc:
        watch.handling.set()
        cause = _cause(watch, place, exc)
        with contextlib.suppress(RuntimeError):
            store.add(f"{KEY}stopped", 1)
            if place.holds_store:  # until the others' watches have read the failure here
                _wait_count(store, "stopped", store.add(f"{KEY}joined", 0), 2 * BEAT + 0.5)
        if cause is None:
            raise
        stopped_here = None if isinstance(exc, _Stopped) else exc  # the stop signal says nothing
        raise RuntimeError(f"data-parallel training stopped: {cause}") from stopped_here
    finally:
        watch.close()
        signal.signal(signal.SIGUSR1, previous)
        if dist.is_initialized():
            dist.destroy_process_group()
        for child in children:
            child.join(timeout=60)
            if child.is_alive():
                child.terminate()
                child.join()
    store.add(f"{KEY}done", 1)
    if place.holds_store:  # the others' last calls reach the store
        _wait_count(store, "done", place.size, 60)
    return out


def announce(place: Place, prog: str) -> None:
    """Warn on stderr, as a node's first process starts its node's processes, when they
    outnumber the usable cores (one process per core: more only share them); the run's first
    node also says on stdout how many it starts (they take a while to start and meet; the
    other nodes print nothing there, as in training)."""
    cores = usable_cores()
    if cores is not None and place.per_node > cores:
        print(
            f"{prog}: warning: --processes {place.per_node} exceeds the {cores} usable CPU "
            f"core{'s' * (cores > 1)} of this machine; the processes will share them (one per "
            "core is best)",
            file=sys.stderr,
            flush=True,
        )
    if place.rank == 0:
        print(
            f"starting {place.per_node} process{'es' * (place.per_node > 1)} on this machine "
            f"({place.given}); they meet and join before training starts",
            flush=True,
        )


def _cause(watch: Watch, place: Place, exc: BaseException) -> str | None:
    """The failure that ``exc`` in this process comes from when it is not this process's own:
    the one recorded, or (after a failed collective call) the process that vanished
    (:meth:`Watch.gone`). None when ``exc`` is this process's own failure: it is recorded, for
    the others to name."""
    try:
        failure = watch.seen or watch.failure()
        if failure is None and isinstance(exc, RuntimeError):
            failure = watch.gone()
        if failure is None:
            own = own_failure(place, exc)
            failure = watch.record(own)
            if failure == own:
                return None
    except RuntimeError as lost:
        return watch.lost(lost)
    return failure


def own_failure(place: Place, exc: BaseException) -> str:
    """The failure ``exc`` of this process, as the others name it: with the exit status it
    ends with (:func:`training.cli.run_main`'s; a spawned process's is 1)."""
    failure = f"{place.who()} raised {type(exc).__name__}" + (f": {exc}" if str(exc) else "")
    if isinstance(exc, Exception):
        launched = place.local == 0 or place.torchrun
        failure += f" (exit code {2 if isinstance(exc, FlagError) and launched else 1})"
    return failure


def _tell(place: Place, failure: str) -> None:
    """Record ``failure`` in the run's store, if that opens within 10 seconds (then the others
    stop at once; else process 0 names this process when it gives up waiting for it)."""
    import torch.distributed as dist

    with contextlib.suppress(RuntimeError):
        wait = datetime.timedelta(seconds=10)
        store = dist.TCPStore(place.host, place.port, place.size, is_master=False, timeout=wait)
        store.compare_set(f"{KEY}failed", "", failure)


def _wait_count(store, name: str, count: int, seconds: float) -> None:
    """Wait, up to ``seconds``, until the store's counter ``name`` reaches ``count``."""
    deadline = time.monotonic() + seconds
    while store.add(f"{KEY}{name}", 0) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def launch_command(args: Any, module: str) -> str:
    """The command that reruns ``args`` of ``python -m module``: node 0's, under torchrun
    torchrun's."""
    place = launch(args)
    prog = f"python -m {module}"
    if place.torchrun:
        prog = (
            f"torchrun --nnodes {place.nodes} --nproc-per-node {place.per_node} --node-rank 0 "
            f"--master-addr {place.host} --master-port {place.port} -m {module}"
        )
    return command_line(prog, args)


def _other_process(args: Any, place: Place, job: Job) -> None:
    """A process that its node's first one started: its share of the run. Ctrl-C reaches the
    whole process group; the first process alone answers it (with one line saying what was
    saved: :func:`training.cli.interrupted`), and this one stops with it, silently."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        data_parallel(args, place, job)
    except RuntimeError as exc:
        if "raised KeyboardInterrupt" not in str(exc):
            raise
        sys.exit(1)
