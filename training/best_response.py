"""A learned best response to a frozen agent: ``python -m training.best_response --target SPEC``.

How exploitable is an agent? Where exploitability cannot be computed, a learned best response
bounds it from below (Timbers et al., "Approximate exploitability: learning a best response",
IJCAI 2022): a new policy, the exploiter, trains against the agent, frozen, and what it wins
is measured. ``--target`` is any agent spec (``rule``, ``ppo-guiyang``, ``ppo:PATH``,
``search:...``); it plays every seat but one of each hand, and the exploiter learns in that
one seat, drawn at random per hand, with the self-play trainer's loop and flags
(:mod:`training.ppo_selfplay`: rollouts, PPO, ``--processes``, ``--time-limit``, checkpoints,
``--resume`` and its rules against overwriting a run, ``metrics.jsonl``); only the exploiter's
decisions are trained on. A target that is a policy network (``ppo:PATH``, a shipped policy)
plays all its seats of all games in one forward pass a step, and is never trained: the
exploiter is always a network of its own.

``--init`` says where the exploiter starts: ``scratch`` (a new network of ``--hidden``),
``clone`` (behaviour cloning of the target's self-play, as ``--bc-agent TARGET``, sized by
``--bc-decisions`` and ``--bc-epochs``) or ``target`` (a copy of the target's own network,
for a ``ppo:`` or shipped target only; its width, input and reward scale come with it).

The measurement is the 1-vs-3 duplicate format (:func:`measure`, the arena's ``alone``
seating): each deal is played once with the exploiter in each seat in turn and the target in
every other seat; the **margin** is the exploiter's mean score per hand minus the target's
mean per seat-hand (4/3 of the exploiter's mean where hands are zero-sum), with a 95%
interval clustered by deal. The exploiter is measured before the first update and every
``--eval-every`` updates on ``--eval-deals`` deals (the learning curve), by sampling and by
argmax, and at the end on ``--final-deals`` fresh deals (seed ``--seed`` + 2000), which gives

    best-response margin after M minutes: +X [lo, hi] points per hand (N deals)

by sampling or by argmax, whichever scored more at the curve's last point (other deals, so the
choice does not favour the final margin; the other is printed beside it): a lower bound on the
target's exploitability at that budget. ``M`` counts minutes of training as ``--time-limit``
does (from the first update, evaluations included, cloning not), over the run and the runs it
resumes. Beside the checkpoints the run writes ``best_response.json`` (the final measurement)
and ``curve.json`` and ``curve.png`` (the margins against training minutes), each whole or not
at all; a fresh run refuses a folder that holds them, as it refuses one that holds a run,
unless ``--force``. Every flag is checked before any work (exit status 2 naming a bad one).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch

from agents import make_agent
from agents.arena import interval_text, run_arena
from agents.ppo import PolicyNet, PPOAgent
from training import ppo_selfplay
from training.cli import (
    INT_POSITIVE,
    FlagError,
    agent_specs,
    check_agent_specs,
    check_arena_deals,
    check_fields,
    check_flag_memory,
    file_names,
    flag,
    json_text,
    parse_args,
    remove_paths,
    run_main,
)
from training.distributed import Job, data_parallel, launch
from training.learner import ProcessGroup
from zhuoji_env.commands import prog
from zhuoji_env.fileio import unused_path, write_atomic, write_text_atomic
from zhuoji_env.limits import exits_2_when_out_of_memory
from zhuoji_env.rules import Rules
from zhuoji_env.versions import stamp

INITS = ("scratch", "clone", "target")
"""Where the exploiter starts (``--init``)."""
OUTPUTS = ("best_response.json", "curve.json", "curve.png")
"""What a best-response run writes in ``--out-dir`` beside the trainer's files."""
LABEL = "exploiter"
"""The exploiter's label in the arenas (the target's is its spec)."""
FINAL_SEED = 2000
"""The final measurement deals from ``--seed`` plus this (the curve's from ``--seed`` + 1000)."""
POOL_FLAGS = ("pool_size", "pool_every", "pool_prob", "pool_agents")


@dataclass
class Args(ppo_selfplay.Args):
    """Arguments of a best-response run: the self-play trainer's, and the target's."""

    target: str = ""
    """agent spec of the frozen target, played in every seat but the exploiter's (required)"""
    init: str = "scratch"
    """where the exploiter starts: 'scratch' (a new network), 'clone' (behaviour cloning of the
    target's self-play, as --bc-agent TARGET) or 'target' (a copy of the target's own network:
    a ppo: checkpoint or a shipped policy)"""
    final_deals: int = 1000
    """duplicate deals of the final 1-vs-3 measurement, fresh ones (seed --seed + 2000)"""
    eval_opponents: str = ""
    """must stay '': a best-response run measures the exploiter against --target, 1 vs 3 (play
    its checkpoint against others with python -m agents.arena)"""
    out_dir: str = "runs/best-response"
    """folder of the checkpoints, metrics.jsonl, best_response.json and the curve: a fresh run
    needs one without a run in it (or --force); --resume continues in its checkpoint's folder
    or starts in a folder without a run"""


class Checked(NamedTuple):
    """What :func:`check_args` hands the training: the flags as the trainer runs them
    (``--init clone`` as ``--bc-agent TARGET``), the rules, the resumed checkpoint, the
    device, and the network a fresh ``--init target`` run starts from."""

    args: Args
    rules: Rules
    resumed: tuple[PolicyNet, dict] | None
    device: torch.device
    initial: PolicyNet | None


def trainer_args(args: Args) -> Args:
    """``args`` as the trainer runs them: ``--init clone`` clones the target (``--bc-agent``)."""
    if args.init == "clone" and not args.bc_agent:
        return dataclasses.replace(args, bc_agent=args.target)
    return args


def check_args(args: Args, lead: bool = True) -> Checked:
    """Check every flag before any work: this module's (``--target``, ``--init``,
    ``--final-deals``, and the trainer's flags that a best response does not take), then the
    trainer's (:func:`training.ppo_selfplay.check_args`), then the target under the run's rules,
    the network ``--init target`` copies, and (in the ``lead`` process) that ``--out-dir``
    holds no earlier measurement this run would overwrite. Raises :class:`FlagError`."""
    check_fields(args, {"final_deals": INT_POSITIVE})
    if args.init not in INITS:
        raise FlagError(f"--init {args.init!r}: must be one of {', '.join(INITS)}")
    specs = agent_specs(args.target)
    if len(specs) != 1:
        raise FlagError(
            f"--target {args.target!r}: needs exactly one agent spec (e.g. rule, ppo-guiyang, "
            "ppo:PATH, search:rule), the agent whose best response is learned"
        )
    if args.eval_opponents:
        raise FlagError(
            f"--eval-opponents {args.eval_opponents!r}: a best-response run measures the "
            "exploiter against --target, 1 vs 3; play its checkpoint against other agents "
            "with python -m agents.arena"
        )
    changed = [f for f in POOL_FLAGS if getattr(args, f) != getattr(Args, f)]
    if changed:
        raise FlagError(
            f"{flag(changed[0])} {getattr(args, changed[0])!r}: a best response plays --target "
            "in every seat but the exploiter's, so the pool flags do not apply"
        )
    if args.init == "clone" and args.bc_agent not in ("", args.target):
        raise FlagError(
            f"--bc-agent {args.bc_agent!r}: --init clone clones --target {args.target!r}; drop "
            "--bc-agent, or use --init scratch to clone another agent first"
        )
    if args.init == "target" and not args.resume:
        given = [f for f in ("hidden", "features", "rule_hint", "bc_agent") if _given(args, f)]
        if given:
            raise FlagError(
                f"{flag(given[0])} {getattr(args, given[0])!r}: --init target starts from a "
                "copy of the target's own network (its width and input), with nothing cloned; "
                "drop it, or use --init scratch or clone"
            )
    run_args = trainer_args(args)
    rules, resumed, device = ppo_selfplay.check_args(run_args, lead)
    check_agent_specs(args.target, "target", rules)
    initial = None
    if resumed:
        check_resumed_target(args, resumed[1])
    elif args.init == "target":
        initial = target_network(args, rules)
        check_flag_memory(
            f"--num-envs {args.num_envs} x --num-steps {args.num_steps} with --init target's "
            f"network of width {initial.hidden}",
            ppo_selfplay.memory_needed(run_args, initial.in_size, initial.hidden),
        )
    check_arena_deals(args.eval_deals, rules)
    check_arena_deals(args.final_deals, rules, "final_deals")
    if lead:
        earlier_outputs(args)
    return Checked(run_args, rules, resumed, device, initial)


def _given(args: Args, name: str) -> bool:
    return getattr(args, name) != getattr(Args, name)


def target_network(args: Args, rules: Rules) -> PolicyNet:
    """A copy of the target's own network for ``--init target`` (the target keeps its own):
    the target must be a policy network, ``ppo:PATH`` or a shipped policy, trained at
    ``--reward-scale`` (its value head predicts returns at that scale)."""
    agent = make_agent(args.target, seed=0, rules=rules)
    if not isinstance(agent, PPOAgent):
        raise FlagError(
            f"--init target: --target {args.target!r} is not a policy network (a ppo:PATH "
            "checkpoint or a shipped policy such as ppo-guiyang), so there is no network of "
            "its own to start from; use --init scratch or --init clone"
        )
    if args.reward_scale != agent.reward_scale:
        raise FlagError(
            f"--reward-scale {args.reward_scale:g}: --target {args.target!r} was trained at "
            f"{agent.reward_scale:g}, and --init target starts from its value head, which "
            f"predicts returns at that scale; pass --reward-scale {agent.reward_scale:g}"
        )
    return copy.deepcopy(agent.net).cpu().train()


def check_resumed_target(args: Args, ckpt: dict) -> None:
    """A best-response checkpoint resumed in its own folder continues against its own target
    (the folder's ``metrics.jsonl`` and curve are against it); into a new folder it may train
    against another."""
    trained = ckpt.get("args", {}).get("target") if isinstance(ckpt.get("args"), dict) else None
    if isinstance(trained, str) and trained != args.target and continues_folder(args):
        raise FlagError(
            f"--target {args.target!r}: --resume {args.resume!r} was trained against "
            f"{trained!r}, and its folder's metrics and curve are against that target; resume "
            f"against {trained!r}, or continue into a new --out-dir "
            f"({str(unused_path(args.out_dir))!r} is free)"
        )


def continues_folder(args: Args) -> bool:
    """Whether the run continues the run of its ``--out-dir`` (``--resume`` of a checkpoint
    there)."""
    return bool(args.resume) and Path(args.resume).resolve().parent == Path(args.out_dir).resolve()


def earlier_outputs(args: Args) -> list[Path]:
    """The files of :data:`OUTPUTS` in ``--out-dir`` that ``--force`` deletes before the run;
    without ``--force`` they are refused, unless the run continues its own folder
    (``--resume`` of a checkpoint there), which rewrites them."""
    out = Path(args.out_dir)
    found = [out / name for name in OUTPUTS if (out / name).exists()]
    if not found or continues_folder(args):
        return []
    if args.force:
        return found
    raise FlagError(
        f"--out-dir {args.out_dir!r} holds the measurement of an earlier run "
        f"({file_names(found)}) that this one would overwrite: start in a new --out-dir "
        f"({str(unused_path(out))!r} is free), or pass --force to delete those files first"
    )


# --------------------------------------------------------------------------- measurement
def measure(exploiter, target, rules, deals: int, seed: int) -> dict:
    """``exploiter`` (an agent or spec) against ``target`` (a spec) in the 1-vs-3 duplicate
    format, on ``deals`` deals from ``seed``: each deal once with the exploiter in each seat
    and the target in the others (:func:`agents.arena.run_arena`, seating ``alone``). Returns
    the exploiter's ``mean`` score per hand and its ``margin`` over the target (its mean per
    hand minus the target's mean per seat-hand), each with its 95% interval. Both are paired by
    deal (:meth:`~agents.arena.ArenaResult.margin`): the t-interval of the per-deal values,
    which is :func:`agents.arena.clustered_mean_ci` of the per-game values clustered by deal,
    each deal holding the same number of games."""
    res = run_arena(
        [exploiter, target],
        deals,
        seed=seed,
        rules=rules,
        progress=False,
        labels=[LABEL, target],
        seating="alone",
    )
    agents = res.summary()["agents"]
    margin, ci = res.margin(LABEL, target)
    return {
        "mean": agents[LABEL]["mean"],
        "ci95": agents[LABEL]["ci95"],
        "margin": margin,
        "margin_ci95": ci,
        "deals": deals,
        "seed": seed,
    }


def evaluate(net: PolicyNet, target: str, rules: Rules, seed: int, deals: int) -> dict:
    """The exploiter ``net`` against ``target`` (:func:`measure`), by sampling (``mean``,
    ``margin``) and by argmax (``argmax_mean``, ``argmax_margin``) on the same deals, as
    ``{target: {...}}``: the self-play trainer's evaluation format."""
    out = {}
    for play, greedy in (("", False), ("argmax_", True)):
        agent = PPOAgent(net, seed=seed, greedy=greedy, rules=rules)
        m = measure(agent, target, rules, deals, seed)
        out.update({f"{play}{k}": m[k] for k in ("mean", "ci95", "margin", "margin_ci95")})
    out["deals"] = deals
    return {target: out}


def margin_line(minutes: float, m: dict) -> str:
    """``best-response margin after M minutes: +X [lo, hi] points per hand (N deals)``."""
    return (
        f"best-response margin after {minutes:.1f} minutes: {m['margin']:+.2f} "
        f"{interval_text(m['margin_ci95'], 2)} points per hand ({m['deals']:,} deals)"
    )


def chosen_play(last: dict) -> str:
    """``sampling`` or ``argmax``: how the exploiter plays for the headline margin, the one of
    the two that scored more at the curve's ``last`` point. That point's deals (seed ``--seed``
    + 1000) are not the final measurement's, so the choice does not favour the final margin."""
    return "argmax" if last["argmax_margin"] > last["margin"] else "sampling"


# --------------------------------------------------------------------------- curve
def as_point(row: dict, target: str) -> dict:
    """A point of the learning curve from a row of the trainer's history or ``metrics.jsonl``:
    its update, decisions, training minutes and margins against ``target``."""
    ev = row["eval"][target]
    point = {
        "update": row["update"],
        "decisions": row["decisions"],
        "minutes": row["total_seconds"] / 60,
    }
    point.update(
        {k: ev[k] for k in ("margin", "margin_ci95", "argmax_margin", "argmax_margin_ci95")}
    )
    return point


def curve_points(out_dir: Path, target: str, start: dict | None) -> list[dict]:
    """The learning curve: ``start`` (the point before the first update, if any), then every
    row of ``metrics.jsonl`` with an evaluation against ``target`` (over the runs that wrote
    there), as points (:func:`as_point`)."""
    points = [start] if start else []
    metrics = out_dir / "metrics.jsonl"
    if metrics.is_file():
        for line in metrics.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if isinstance(row.get("eval"), dict) and target in row["eval"]:
                points.append(as_point(row, target))
    return points


def start_point(out: dict, out_dir: Path, target: str, continuing: bool) -> dict | None:
    """The point before the first update: this run's (a fresh run's history starts with it),
    or, for a run continuing its own folder, the one that folder's ``curve.json`` kept."""
    history = out.get("history") or []
    if history and history[0]["update"] == 0:
        return as_point(history[0], target)
    path = out_dir / "curve.json"
    if continuing and path.is_file():
        kept = json.loads(path.read_text(encoding="utf-8")).get("points", [])
        return next((p for p in kept if p.get("update") == 0), None)
    return None


def plot(points: list[dict], final: dict, minutes: float, title: str, path: Path) -> None:
    """The margin by sampling and by argmax against training minutes (95% intervals), and the
    final measurements (``final``: ``{"sampling": ..., "argmax": ...}``, :func:`measure`) on
    fresh deals, as a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def number(x) -> float:  # an interval of one deal is undefined: null in the JSON
        return math.nan if x is None else x

    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [p["minutes"] for p in points]
    for play, label, color in (("", "sampling", "C0"), ("argmax_", "argmax", "C1")):
        ys = [p[f"{play}margin"] for p in points]
        ax.plot(xs, ys, marker="o", label=label, color=color)
        lo = [number(p[f"{play}margin_ci95"][0]) for p in points]
        hi = [number(p[f"{play}margin_ci95"][1]) for p in points]
        ax.fill_between(xs, lo, hi, alpha=0.2, color=color)
        end = final["sampling" if play == "" else "argmax"]
        lo, hi = (number(x) for x in end["margin_ci95"])
        ax.errorbar(
            [minutes],
            [end["margin"]],
            yerr=[[end["margin"] - lo], [hi - end["margin"]]],
            fmt="s",
            color=color,
            mec="black",
            capsize=4,
            label=f"{label}, {end['deals']:,} fresh deals",
        )
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("training minutes")
    ax.set_ylabel("exploiter's margin per hand")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)


# --------------------------------------------------------------------------- running
def trainer(checked: Checked) -> ppo_selfplay.Trainer:
    """The self-play trainer's loop as a best response: the target in every seat but one."""
    args = checked.args
    return ppo_selfplay.Trainer(
        MODULE,
        (args.target,),
        lone_learner=True,
        evaluate=lambda net, rules, seed: evaluate(net, args.target, rules, seed, args.eval_deals),
        initial=checked.initial,
    )


def train_share(args: Args, checked: Checked, group) -> dict:
    """A process's share of the run (the data-parallel :data:`JOB`'s, or the only one with
    ``group`` None): the trainer's loop; then, in the first process, with ``--out-dir`` still
    locked, the final measurement and the curve (:func:`finish`)."""
    group = ProcessGroup(group) if group is not None else None
    run_args = checked.args
    if group is not None and group.rank:
        return ppo_selfplay.run(run_args, checked.rules, checked.resumed, checked.device, group,
                                trainer(checked))  # fmt: skip
    with ppo_selfplay.prepare_out_dir(run_args, checked.resumed):
        if args.force:
            remove_paths(earlier_outputs(args))
        if checked.resumed and args.init == "target":
            print("--init target: not copied again, the run continues its checkpoint's network")
        out = ppo_selfplay.run(
            run_args, checked.rules, checked.resumed, checked.device, group, trainer(checked)
        )
        return finish(run_args, checked, out)


def finish(args: Args, checked: Checked, out: dict) -> dict:
    """Measure the last checkpoint against the target on ``--final-deals`` fresh deals, by
    sampling and by argmax; print the best-response margin (of the play :func:`chosen_play`
    picks) and the training speed; write ``best_response.json``, ``curve.json`` and
    ``curve.png``."""
    out_dir = Path(args.out_dir)
    rules = checked.rules
    seed = args.seed + FINAL_SEED
    final = {}
    for play, greedy in (("sampling", False), ("argmax", True)):
        agent = PPOAgent.load(out["checkpoint"], seed=seed, greedy=greedy)
        final[play] = measure(agent, args.target, rules, args.final_deals, seed)
    last = out["updates"][-1]
    minutes = last["total_seconds"] / 60
    trained = sum(u["train"].get("train/trained_decisions", 0) for u in out["updates"])
    played = out["decisions"] - out["resumed_decisions"]
    loop = sum(out["phases"][k]["wall"] for k in ("env", "inference", "update"))
    speed = {
        "training_seconds": loop,
        "decisions_per_second": played / loop,
        "exploiter_decisions_per_second": trained / loop,
    }
    print(
        f"{played:,} decisions in {loop:.0f} s of training (evaluations and saving left out), "
        f"all seats: {speed['decisions_per_second']:,.0f} a second; the exploiter's, trained "
        f"on: {trained:,} ({speed['exploiter_decisions_per_second']:,.0f} a second)"
    )
    start = start_point(out, out_dir, args.target, continues_folder(args))
    points = curve_points(out_dir, args.target, start)
    play = chosen_play(points[-1])
    other = "argmax" if play == "sampling" else "sampling"
    print(f"{margin_line(minutes, final[play])}, by {play}, against {args.target}")
    print(
        f"  by {other}: {final[other]['margin']:+.2f} "
        f"{interval_text(final[other]['margin_ci95'], 2)}; the exploiter's own mean "
        f"{final[play]['mean']:+.2f} a hand ({play})"
    )
    record = {
        "target": args.target,
        "init": args.init,
        "minutes": minutes,
        "decisions": out["decisions"],
        "checkpoint": out["checkpoint"],
        "rules": rules.to_record(),
        "final": final,
        "play": play,
        "speed": speed,
        "line": margin_line(minutes, final[play]),
        "versions": stamp(),
    }
    write_text_atomic(out_dir / "best_response.json", json_text(record, indent=1) + "\n")
    write_text_atomic(
        out_dir / "curve.json",
        json_text(
            {
                "target": args.target,
                "deals": args.eval_deals,
                "points": points,
                "versions": stamp(),
            },
            indent=1,
        )
        + "\n",
    )
    alone = f"1 vs {rules.num_players - 1}"
    title = f"Best response to {args.target}, {alone} (95% intervals)"
    plot(points, final, minutes, title, out_dir / "curve.png")
    print(f"wrote {out_dir / 'best_response.json'}, curve.json and curve.png")
    extra = {"final": final, "play": play, "minutes": minutes, "curve": points, "speed": speed}
    return {**out, **extra}


def train(args: Args) -> dict:
    """Run the best response; returns the trainer's results with the final measurement
    (``final``: by sampling and by argmax), the ``play`` of the headline, ``minutes``,
    ``curve`` and ``speed`` (``{}`` in the
    processes of a data-parallel run but the first). Every flag is checked first
    (:func:`check_args`): nothing is written on a bad one."""
    place = launch(args)
    if place.size > 1:
        return data_parallel(args, place, JOB)
    return train_share(args, check_args(args), None)


MODULE = "training.best_response"
"""The module the commands run (``python -m``)."""
PROG = f"python -m {MODULE}"
JOB = Job(PROG, check_args, train_share, files={"resume": "checkpoint"})
"""What each process of a data-parallel run does: checks its flags, then trains its share."""


@exits_2_when_out_of_memory(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parse_args(Args, argv, __doc__, prog(MODULE))
    return run_main(train, args, PROG, lambda a: ppo_selfplay.saved_message(a, PROG))


if __name__ == "__main__":
    raise SystemExit(main())
