"""A two-node Ray cluster on this machine, trained on: ``python -m training.rllib_two_nodes``.

The scale-out of ``training.rllib_ppo`` simulated on one machine: a head node (``ray start
--head``) and a worker node (``ray start --address``) run as separate processes, each with its
own raylet, on a loopback address. Only the worker node has the custom resource
``zhuoji_runner``, so every env runner is placed there. The driver, ``python -m
training.rllib_ppo --address HOST:PORT``, is a third process, as on a real cluster; its learner
trains in it, on the head node. The script checks (from the run's ``cluster.json`` and
``metrics.jsonl``) that every env runner ran on the worker node, that the learner trained on
what they sampled, and that the checkpoint plays as the ``rllib:`` agent; it exits non-zero if
any check fails. Both nodes are stopped, by their process ids, at the end. The run goes to
``OUT_DIR/run``; an earlier one there is replaced only with ``--force``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from training.cli import FlagError, json_text, plain
from zhuoji_env.fileio import open_for_writing, unused_path
from zhuoji_env.limits import TORCH_PROCESS_BYTES, check_memory, exits_2_when_out_of_memory

try:
    from training.rllib_ppo import LOCAL_IP as LOOPBACK
except ImportError as exc:  # Ray missing, as a script: a usage error (exit 2), as rllib_ppo's
    if __name__ != "__main__" or importlib.util.find_spec("ray") is not None:
        raise
    print(f"python -m training.rllib_two_nodes: error: {exc}", file=sys.stderr)
    raise SystemExit(2) from None

RUNNER_RESOURCE = "zhuoji_runner"
"""The custom resource only the worker node has."""


def _ray_executable() -> str:
    local = Path(sys.executable).with_name("ray")
    found = str(local) if local.is_file() else shutil.which("ray")
    if not found:
        raise RuntimeError("the `ray` command is not installed (pip install -e '.[rllib]')")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the head node exited with status {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex((LOOPBACK, port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"the head node did not listen on port {port} within {timeout:.0f} s")


def _children(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (read from /proc)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out += kids
        todo += kids
    return out


def _stop(proc: subprocess.Popen) -> None:
    """Stop a ``ray start --block`` process and every process it started, by their ids."""
    family = _children(proc.pid)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 10
    for pid in family:
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if Path(f"/proc/{pid}").exists():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _auth_token() -> None:
    """Make sure Ray's token file (``~/.ray/auth_token``) exists: the nodes and the driver all
    run with token authentication (``RAY_AUTH_MODE=token``), as a local ``ray.init()`` does."""
    if not (Path.home() / ".ray" / "auth_token").is_file():
        subprocess.run(
            [_ray_executable(), "get-auth-token", "--generate"], check=True, capture_output=True
        )


def start_node(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    """``ray start --block ARGS`` as a separate process (output to ``log``)."""
    cmd = [
        _ray_executable(),
        "start",
        "--block",
        f"--node-ip-address={LOOPBACK}",
        "--disable-usage-stats",
        *args,
    ]
    with open_for_writing(log) as out:
        return subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def simulate(
    out_dir: str | Path,
    iterations: int = 1,
    runners: int = 2,
    timeout: float = 300.0,
    ship_code: bool = False,
    force: bool = False,
) -> dict:
    """Start the two nodes, run ``training.rllib_ppo --address`` on them as a third process
    (the driver, with ``--ship-code`` if ``ship_code``), stop the nodes; returns ``layout``
    (the run's ``cluster.json``), ``history`` (its ``metrics.jsonl`` rows) and ``checks``
    (name -> passed). The run goes to ``OUT_DIR/run``: one there already raises
    :class:`~training.cli.FlagError` before anything starts, unless ``force``, which has the
    driver delete it (``training.rllib_ppo --force``)."""
    from agents import make_agent

    out_dir = Path(out_dir)
    run_dir = out_dir / "run"
    if run_dir.exists() and not force:
        raise FlagError(
            f"--out-dir {str(out_dir)!r} holds an earlier simulation's run ({str(run_dir)!r}), "
            f"which this one would replace: pick a new --out-dir "
            f"({str(unused_path(out_dir))!r} is free), or pass --force to replace it"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    # short: Ray's socket paths (at most 107 bytes) live in it; under RAY_TMPDIR, as Ray's own
    temp_dir = tempfile.mkdtemp(prefix="zr", dir=os.environ.get("RAY_TMPDIR") or None)
    port = _free_port()
    address = f"{LOOPBACK}:{port}"
    _auth_token()
    env = {**os.environ, "RAY_AUTH_MODE": "token"}
    procs = []
    try:
        procs.append(
            start_node(
                [
                    "--head",
                    f"--port={port}",
                    "--num-cpus=1",
                    '--resources={"head_node": 1}',
                    "--include-dashboard=false",
                    f"--temp-dir={temp_dir}",
                ],
                out_dir / "head.log",
                env,
            )
        )
        _wait_port(port, procs[0], timeout)
        procs.append(
            start_node(
                [
                    f"--address={address}",
                    f"--num-cpus={runners}",
                    f'--resources={{"{RUNNER_RESOURCE}": {runners}}}',
                ],
                out_dir / "worker.log",
                env,
            )
        )
        driver = [
            sys.executable,
            "-m",
            "training.rllib_ppo",
            f"--address={address}",
            f"--runner-resource={RUNNER_RESOURCE}",
            f"--num-env-runners={runners}",
            "--envs-per-runner=8",
            "--train-batch=1024",
            "--minibatch=512",
            "--epochs=1",
            f"--iterations={iterations}",
            "--eval-deals=0",
            f"--out-dir={run_dir}",
            "--ship-code" if ship_code else "--no-ship-code",
            "--force" if force else "--no-force",
        ]
        with open_for_writing(out_dir / "driver.log") as log:
            done = subprocess.run(
                driver, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout
            )
        if done.returncode:
            raise RuntimeError(
                f"the driver failed with status {done.returncode} (see {out_dir / 'driver.log'})"
            )
    finally:
        for proc in reversed(procs):
            _stop(proc)
        shutil.rmtree(temp_dir, ignore_errors=True)
    layout = json.loads((run_dir / "cluster.json").read_text())
    history = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    nodes = layout["nodes"]
    head = [n for n, res in nodes.items() if "head_node" in res]
    worker = [n for n, res in nodes.items() if RUNNER_RESOURCE in res]
    agent = make_agent(f"rllib:{run_dir}", seed=0)
    checks = {
        "two nodes, one head and one worker": len(nodes) == 2 and len(head) == len(worker) == 1,
        "learner on the head node": [layout["driver_node"]] == head,
        f"{runners} env runners, all on the worker node": (
            len(layout["runner_nodes"]) == runners
            and all([n] == worker for n in layout["runner_nodes"])
        ),
        "env runners sampled a training batch": history[-1]["decisions"] >= 1024,
        "learner trained": history[-1]["module_steps_trained"] > 0,
        "checkpoint plays as the rllib: agent": type(agent).__name__ == "RLlibAgent",
    }
    return {"layout": layout, "history": history, "checks": checks}


@exits_2_when_out_of_memory("python -m training.rllib_two_nodes")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.rllib_two_nodes",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out-dir", default="runs/rllib_two_nodes")
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument("--runners", type=int, default=2, help="env runners on the worker node")
    parser.add_argument(
        "--ship-code",
        action="store_true",
        help="the driver uploads the project's packages (runtime_env py_modules)",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace the run that OUT_DIR/run holds"
    )
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.runners < 1:
        parser.error("--iterations and --runners must be at least 1")
    try:  # the two nodes, the driver and a process per env runner, on this machine
        check_memory(f"--runners {args.runners}", (3 + args.runners) * TORCH_PROCESS_BYTES)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        out = simulate(
            args.out_dir,
            iterations=args.iterations,
            runners=args.runners,
            ship_code=args.ship_code,
            force=args.force,
        )
    except FlagError as exc:
        parser.error(str(exc))
    print(json_text({"layout": out["layout"], "checks": out["checks"]}, indent=1))
    failed = [name for name, ok in out["checks"].items() if not ok]
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    print("two-node run OK: env runners sampled on the worker node, the learner trained")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
