"""Decisions trained per second: RLlib (both env runners) against ``training.ppo_selfplay``.

    python -m training.bench_rllib [--runs ppo:1,ppo:2,aec:1,aec:2,batched:1,batched:2]
                                   [--rounds 1] [--iterations 4] [--games 64]
                                   [--train-batch 8192] [--minibatch 1024] [--epochs 4]
                                   [--hidden 256] [--bf16 off] [--json]

Every run trains the same network (hidden width, v1 observation, float32 unless ``--bf16``)
on the same decisions per update (``--train-batch``), in ``--epochs`` passes of
``--minibatch``-decision minibatches, from ``--games`` games in all (split among the processes
or env runners), without reward shaping, evaluation or checkpoints but the last. ``ppo:P`` is
``training.ppo_selfplay --processes P``; ``aec:R`` and ``batched:R`` are ``training.rllib_ppo
--runner aec|batched --num-env-runners R`` (R remote env runners; the learner in the driver).
Each run is a fresh process, run one after the other in ``--rounds`` rounds (interleaved, so a
machine whose speed drifts treats them alike). Decisions per second are over the training loop:
start-up (Ray, the actors, the first deals) is left out.

Per phase, in seconds per update: ``ppo`` splits its loop into env, inference, update and other
(the first process's wall time, as ``training.bench_learner``); RLlib into ``sample`` (the
driver waiting for the env runners' episodes, their transfer included) and ``learn``
(``learner_group.update``: the learner connectors, GAE and the SGD passes), of which
``connect`` is the learner connector pipeline (episodes to a train batch, GAE's value pass
included); for the batched runner also the runners' own seconds (summed over runners):
``runner`` in ``sample()`` in all, of it ``env`` (engine and encoding), ``inference`` (forward
passes and sampling) and ``episodes`` (bookkeeping and episode objects).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from training.cli import json_text, plain
from zhuoji_env.bench import check_counts
from zhuoji_env.limits import exits_2_when_out_of_memory
from zhuoji_env.machine import describe


def run_ppo(a, processes: int) -> dict:
    from training.ppo_selfplay import Args, train

    steps = a.train_batch // a.games
    with tempfile.TemporaryDirectory() as tmp:
        out = train(
            Args(
                total_decisions=a.iterations * a.games * steps,
                num_envs=a.games,
                num_steps=steps,
                update_epochs=a.epochs,
                num_minibatches=a.train_batch // a.minibatch,
                hidden=a.hidden,
                shaping=0.0,
                bf16=a.bf16,
                processes=processes,
                eval_opponents="",
                eval_every=0,
                save_every=0,
                progress=False,
                out_dir=tmp,
                seed=1,
            )
        )
    phases = {k: v["wall"] for k, v in out["phases"].items()}
    wall = sum(phases.values())
    updates = len(out["updates"])
    return {
        "decisions": out["decisions"],
        "seconds": wall,
        "per_update": {k: v / updates for k, v in phases.items()},
    }


def run_rllib(a, runner: str, runners: int) -> dict:
    import ray
    import torch

    from training import rllib_ppo

    torch.set_num_threads(1)
    games = a.games // max(runners, 1)
    args = rllib_ppo.parse_args(
        rllib_ppo.Args,
        [
            f"--runner={runner}",
            f"--num-env-runners={runners}",
            f"--envs-per-runner={games}",
            f"--train-batch={a.train_batch}",
            f"--minibatch={a.minibatch}",
            f"--epochs={a.epochs}",
            f"--hidden={a.hidden}",
            "--eval-deals=0",
        ],
    )
    rllib_ppo.init_ray(args)
    algo = rllib_ppo.build_config(args).build_algo()
    learn = []
    update = algo.learner_group.update

    def timed_update(*args, **kwargs):
        t = time.perf_counter()
        out = update(*args, **kwargs)
        learn.append(time.perf_counter() - t)
        return out

    algo.learner_group.update = timed_update
    connect = []
    learner = algo.learner_group._learner  # the local learner (--num-learners 0)
    pipeline = learner._learner_connector

    def timed_pipeline(*args, **kwargs):
        t = time.perf_counter()
        out = pipeline(*args, **kwargs)
        connect.append(time.perf_counter() - t)
        return out

    learner._learner_connector = timed_pipeline
    rows = []
    try:
        for _ in range(a.iterations):
            t = time.perf_counter()
            result = algo.train()
            seconds = time.perf_counter() - t
            er = result["env_runners"]
            rows.append(
                {
                    "decisions": int(er["num_env_steps_sampled"]),
                    "seconds": seconds,
                    "learn": learn[-1],
                    "connect": connect[-1],
                    **{
                        k.removeprefix("batched_").removesuffix("_s"): float(er[k])
                        for k in (
                            "batched_env_s",
                            "batched_inference_s",
                            "batched_episodes_s",
                            "batched_runner_s",
                        )
                        if k in er
                    },
                }
            )
    finally:
        algo.stop()
        ray.shutdown()
    n = len(rows)
    per_update = {"sample": sum(r["seconds"] - r["learn"] for r in rows) / n}
    for k in ("learn", "connect", "env", "inference", "episodes", "runner"):
        if k in rows[0]:
            per_update[k] = sum(r[k] for r in rows) / n
    return {
        "decisions": sum(r["decisions"] for r in rows),
        "seconds": sum(r["seconds"] for r in rows),
        "per_update": per_update,
    }


def run_one(a, spec: str) -> dict:
    kind, _, count = spec.partition(":")
    count = int(count or 1)
    if kind == "ppo":
        out = run_ppo(a, count)
    elif kind in ("aec", "batched"):
        out = run_rllib(a, kind, count)
    else:
        raise ValueError(f"unknown run {spec!r}: ppo:P, aec:R or batched:R")
    out["run"] = spec
    out["per_second"] = out["decisions"] / out["seconds"]
    return out


@exits_2_when_out_of_memory("python -m training.bench_rllib")
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m training.bench_rllib", description=plain(__doc__.split("\n\n")[0])
    )
    p.add_argument("--runs", default="ppo:1,ppo:2,aec:1,aec:2,batched:1,batched:2")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--iterations", type=int, default=4, help="updates (iterations) per run")
    p.add_argument("--games", type=int, default=64, help="games in all, split among processes")
    p.add_argument("--train-batch", type=int, default=8192)
    p.add_argument("--minibatch", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--bf16", default="off", help="ppo_selfplay's --bf16 (RLlib trains float32)")
    p.add_argument("--one", default="", help=argparse.SUPPRESS)  # a run in this process
    p.add_argument("--json", action="store_true", help="print one JSON line only")
    a = p.parse_args(argv)
    # --iterations 0 gave ppo_selfplay total_decisions 0: its 2,000,000 default
    check_counts(
        p, a, "rounds", "iterations", "games", "train_batch", "minibatch", "epochs", "hidden"
    )
    if a.train_batch % a.games or a.train_batch % a.minibatch:
        p.error("--games and --minibatch must divide --train-batch")
    runs = [r for r in a.runs.split(",") if r]
    for spec in [a.one] if a.one else runs:
        kind, _, count = spec.partition(":")
        if kind not in ("ppo", "aec", "batched") or not (count or "1").isdecimal():
            p.error(f"--runs: unknown run {spec!r}: ppo:P, aec:R or batched:R")
    if a.one:
        print("BENCH " + json.dumps(run_one(a, a.one)), flush=True)
        return 0
    passed = [x for x in (argv if argv is not None else sys.argv[1:]) if not x.startswith("--json")]
    results = []
    for rnd in range(a.rounds):
        for spec in runs:
            cmd = [sys.executable, "-m", "training.bench_rllib", *passed, "--one", spec]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
            line = next((x for x in proc.stdout.splitlines() if x.startswith("BENCH ")), None)
            if proc.returncode or line is None:
                print(proc.stdout[-2000:], proc.stderr[-4000:], file=sys.stderr)
                raise SystemExit(f"run {spec} failed (exit status {proc.returncode})")
            res = json.loads(line[6:])
            res["round"] = rnd + 1
            results.append(res)
            if not a.json:
                phases = ", ".join(f"{k} {v:.2f}" for k, v in res["per_update"].items())
                print(
                    f"round {rnd + 1} {spec:<10} {res['decisions']:>7,} decisions "
                    f"{res['seconds']:7.1f} s {res['per_second']:8,.0f}/s  per update: {phases}",
                    flush=True,
                )
    if a.json:
        print(json_text({"settings": vars(a), "machine": describe(), "results": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
