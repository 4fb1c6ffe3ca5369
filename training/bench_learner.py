"""Decisions trained per second by ``training.ppo_selfplay``, split by phase.

    python -m training.bench_learner [--updates 3] [--num-envs 256] [--num-steps 128]
                                     [--bf16 auto|on|off] [--features] [--rule-hint]
                                     [--processes 1]
                                     [--device cpu] [--json]

Runs the self-play trainer for ``--updates`` updates (no evaluation, no checkpoints but the last)
at the learning settings of docs/benchmarks.md (4 epochs of :data:`MINIBATCHES` minibatches,
hidden 256, one torch thread) and prints, for the whole run and for each phase, the decisions
per second of wall time and of CPU time: ``env`` (the vector environment's steps),
``inference`` (the rollout's forward passes, sampling and buffer writes), ``update``
(advantages and the PPO update), ``other`` (the rest of the loop: logging and a rollout's new
buffers). CPU time is the steadier figure on a machine shared with other work. ``--features``
measures a network on ``zhuoji-obs-v2`` (its derived blocks are computed in ``inference``),
``--rule-hint`` one on ``zhuoji-obs-v2+rule``
(``rule``'s advice too is computed there).
``--processes P`` trains data-parallel in P processes (one per core): the wall seconds are the
first process's (each process spends them on its own share of the games; waiting for the
others' gradients counts as ``update``), the CPU seconds are summed over the processes.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile

from training.cli import BF16_MODES, FlagError, bf16_from_flag, device_from_flag, json_text, plain
from training.ppo_selfplay import Args, train
from zhuoji_env.bench import check_counts
from zhuoji_env.limits import exits_2_when_out_of_memory
from zhuoji_env.machine import describe

MINIBATCHES = 8
"""Minibatches per pass of the update measured (the trainer's default when docs/benchmarks.md's
figures were taken), so that the figures stay comparable."""


def measure(
    updates: int,
    num_envs: int,
    num_steps: int,
    bf16: str,
    device: str,
    seed: int,
    features: bool = False,
    processes: int = 1,
    rule_hint: bool = False,
) -> dict:
    """Train ``updates`` updates and return the decisions and the seconds of each phase."""
    with tempfile.TemporaryDirectory() as tmp:
        out = train(
            Args(
                total_decisions=updates * num_envs * num_steps,
                num_envs=num_envs,
                num_steps=num_steps,
                num_minibatches=MINIBATCHES,
                eval_opponents="",
                eval_every=0,
                save_every=0,
                progress=False,
                out_dir=tmp,
                seed=seed,
                bf16=bf16,
                device=device,
                features=features,
                rule_hint=rule_hint,
                processes=processes,
            )
        )
    phases = out["phases"]
    wall = sum(p["wall"] for p in phases.values())
    cpu = sum(p["cpu"] for p in phases.values())
    d = out["decisions"]
    return {
        "decisions": d,
        "bf16": bf16_from_flag(bf16, device_from_flag(device)),
        "trained_decisions": sum(u["train"]["train/trained_decisions"] for u in out["updates"]),
        "wall_s": wall,
        "cpu_s": cpu,
        "per_second": {"wall": d / wall, "cpu": d / cpu},
        "phases": {
            k: {**v, "per_second_wall": d / v["wall"], "per_second_cpu": d / v["cpu"]}
            for k, v in phases.items()
        },
    }


@exits_2_when_out_of_memory("python -m training.bench_learner")
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m training.bench_learner", description=plain(__doc__.split("\n\n")[0])
    )
    p.add_argument("--updates", type=int, default=3)
    p.add_argument("--num-envs", type=int, default=256)
    p.add_argument("--num-steps", type=int, default=128)
    p.add_argument(
        "--bf16",
        choices=BF16_MODES,
        default=Args.bf16,
        help="bfloat16 autocast of the update (auto: where it is fast)",
    )
    p.add_argument("--features", action="store_true", help="a network on zhuoji-obs-v2")
    p.add_argument(
        "--rule-hint", action="store_true", help="a network on zhuoji-obs-v2+rule (rule's advice)"
    )
    p.add_argument("--processes", type=int, default=1, help="data-parallel processes")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print one JSON line only")
    a = p.parse_args(argv)
    check_counts(p, a, "updates", "num_envs", "num_steps", "processes")
    if a.num_envs % a.processes:
        p.error(f"--processes {a.processes} must divide --num-envs {a.num_envs}")
    share = a.num_envs // a.processes * a.num_steps
    if share < MINIBATCHES:
        p.error(
            f"--num-envs {a.num_envs} x --num-steps {a.num_steps} / --processes {a.processes} "
            f"is {share} decisions a process, fewer than the {MINIBATCHES} minibatches of the "
            "update it measures"
        )
    try:  # with --json the trainer's own lines go to stderr: stdout holds the JSON alone
        with contextlib.redirect_stdout(sys.stderr if a.json else sys.stdout):
            res = measure(
                a.updates,
                a.num_envs,
                a.num_steps,
                a.bf16,
                a.device,
                a.seed,
                a.features,
                a.processes,
                a.rule_hint,
            )
    except FlagError as exc:  # checked by the trainer before any work: sizes, device, seed
        p.error(str(exc))
    res["settings"] = {
        "updates": a.updates,
        "num_envs": a.num_envs,
        "num_steps": a.num_steps,
        "bf16": res["bf16"],
        "features": a.features,
        "rule_hint": a.rule_hint,
        "processes": a.processes,
        "device": a.device,
    }
    res["machine"] = describe()
    if a.json:
        print(json_text(res))
        return 0
    print(
        f"learner, {a.updates} updates of {a.num_envs} games x {a.num_steps} steps, "
        f"bf16={res['bf16']}, features={a.features}, rule_hint={a.rule_hint}, "
        f"processes={a.processes}, device={a.device}: "
        f"{res['decisions']:,} decisions "
        f"({res['trained_decisions']:,} trained)"
    )
    print(f"{'phase':<10} {'wall s':>8} {'cpu s':>8} {'dec/s wall':>11} {'dec/s cpu':>10}")
    for k, v in res["phases"].items():
        print(
            f"{k:<10} {v['wall']:8.2f} {v['cpu']:8.2f} "
            f"{v['per_second_wall']:11,.0f} {v['per_second_cpu']:10,.0f}"
        )
    print(
        f"{'total':<10} {res['wall_s']:8.2f} {res['cpu_s']:8.2f} "
        f"{res['per_second']['wall']:11,.0f} {res['per_second']['cpu']:10,.0f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
