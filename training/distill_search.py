"""Expert iteration: distil ``search:BASE`` into BASE's network, then continue PPO from it.

    python -m training.distill_search --base ppo-guiyang --time-limit 40 --out-dir runs/distill
    python -m training.ppo_selfplay --resume runs/distill/distilled.pt --time-limit 20 ...

The search agent (:mod:`agents.search`: ``search:ppo:BASE`` with ``--k``, ``--c``,
``--unsure``, ``--z``, ``--leaf``, ``--mean``, ``--confirm``, ``--race`` and ``--improve``) plays
every seat of ``--tables`` games in lock-step (a :class:`~zhuoji_env.engine.BatchGame` dealt from
``--seed``), its rollouts of all tables one engine batch. At every decision it searched (by
default where BASE was unsure), the seat's observation, its legal actions, the action the
search chose and BASE's own most likely action are kept, until ``--searched`` such decisions or
``--time-limit`` minutes. BASE's network is then fitted to the search's choices
(cross-entropy, :func:`training.learner.behaviour_clone`; the decisions of the last tables, a
``--held-out`` share of all, are held out and measured before and after). The value head is
not fitted (it shares the trunk, so it drifts a little; PPO refits it). Written to ``--out-dir``:

- ``distilled.pt``: the fitted network, a checkpoint that ``ppo_selfplay --resume`` continues
  (with a fresh optimizer) and ``ship_policy`` ships; its ``stages`` are BASE's and one more for
  this run (0 decisions of PPO; what was distilled and how well, in ``distill``);
- ``searched.npz``: the decisions (``obs``, ``mask``, ``search``, ``favourite``, ``table``),
  plain arrays, ordered by table and then by time;
- ``distill.json``: the stage's numbers.

Every flag is checked before any work starts; a bad one exits with status 2 and a message naming
it. An ``--out-dir`` that holds any of the three files is refused unless ``--force``.
``--c 86`` searches every legal action (the spec's ``c=all``); ``--no-progress`` drops the
progress bar.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from agents.ppo import (
    NetInput,
    PPOAgent,
    load_checkpoint,
    reward_scale_of,
    save_checkpoint,
    shipped_policy,
    value_trained_of,
)
from agents.registry import SHIPPED_POLICIES
from agents.search import _LIMITS, DEFAULTS, NO_VALUE_DEFAULTS, VALUE_DEFAULTS, SearchAgent
from training.cli import (
    INT_NON_NEGATIVE,
    INT_POSITIVE,
    NON_NEGATIVE,
    POSITIVE,
    FlagError,
    check_fields,
    check_flag_memory,
    check_out_dir,
    command_line,
    json_text,
    parse_args,
    run_main,
    source_commit,
    start_again,
)
from training.learner import Demonstrations, behaviour_clone
from zhuoji_env.belief import IMPROVE_MAX, public_view, valid_improve
from zhuoji_env.engine import BatchGame
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.engine.game import batch_memory
from zhuoji_env.fileio import write_atomic, write_text_atomic
from zhuoji_env.limits import exits_2_when_out_of_memory
from zhuoji_env.observation import OBS_SIZE, encode
from zhuoji_env.rules import Rules

PROG = "python -m training.distill_search"
MODULE = "training.distill_search"
CHECKPOINT = "distilled.pt"
"""The fitted network's file name in ``--out-dir``."""


@dataclass
class Args:
    """Arguments of the distillation run (every field is a command-line flag)."""

    base: str = "ppo-guiyang"
    """the network to improve: a shipped policy's name or a checkpoint file (its rules are the
    games')"""
    k: int = VALUE_DEFAULTS["k"]
    """the search's deals sampled per decision"""
    c: int = DEFAULTS["c"]
    """the search's candidate actions, BASE's most likely first"""
    unsure: float = DEFAULTS["unsure"]
    """search where BASE's most likely action has probability below this (0 < P <= 1)"""
    z: float = VALUE_DEFAULTS["z"]
    """standard errors by which another candidate must beat BASE's favourite"""
    leaf: int = VALUE_DEFAULTS["leaf"]
    """score rollouts by BASE's value at the seat's N-th next decision (0: play to the end)"""
    mean: int = DEFAULTS["mean"]
    """score them by the mean of its values at the seat's last M decisions up to the N-th"""
    confirm: int = DEFAULTS["confirm"]
    """fresh deals on which a candidate that beat the favourite must beat it again (0: none)"""
    race: int = DEFAULTS["race"]
    """fresh deals on which a close call's two best are played again (0: none; needs z=0)"""
    improve: float = VALUE_DEFAULTS["improve"]
    """the others' draws per discard in the sampled deals (0: the uniform belief)"""
    tables: int = 256
    """games played in lock-step (their rollouts searched as one batch)"""
    searched: int = 20_000
    """searched decisions to collect (the step that reaches it is the last)"""
    time_limit: float = 0.0
    """minutes of play at most (0: until --searched)"""
    epochs: int = 4
    """passes of the fit over the collected decisions"""
    lr: float = 1e-4
    """Adam learning rate of the fit"""
    batch_size: int = 1024
    """decisions per step of the fit"""
    held_out: float = 0.1
    """share of the decisions (those of the last tables) held out of the fit and measured"""
    seed: int = 1
    """seed of the deals, the search and the fit"""
    out_dir: str = "runs/distill"
    """folder of distilled.pt, searched.npz and distill.json"""
    force: bool = False
    """replace the files of a distillation already in --out-dir"""
    progress: bool = True
    """a progress bar of the searched decisions collected"""


def base_path(name: str) -> Path:
    """The checkpoint of ``--base``: a shipped policy's file, or the path given."""
    return shipped_policy(name) if name in SHIPPED_POLICIES else Path(name)


def check_args(args: Args) -> tuple[torch.nn.Module, dict, Rules]:
    """Check every flag before any work; returns BASE's network, checkpoint and rules. Raises
    :class:`~training.cli.FlagError` naming the flag, its value and what is allowed."""
    limits = {
        name: (
            lambda v, lo=lo, hi=hi: INT_NON_NEGATIVE[0](v) and lo <= v <= hi,
            f"an integer in {lo}-{hi}",
        )
        for name, (lo, hi) in _LIMITS.items()
    }
    check_fields(
        args,
        {
            **limits,
            "unsure": (lambda v: POSITIVE[0](v) and v <= 1, "a number in (0, 1]"),
            "z": (lambda v: NON_NEGATIVE[0](v) and v <= 10, "a number in [0, 10]"),
            "improve": (valid_improve, f"a number in [0, {IMPROVE_MAX}]"),
            "tables": INT_POSITIVE,
            "searched": (lambda v: INT_POSITIVE[0](v) and v >= 2, "an integer >= 2"),
            "time_limit": NON_NEGATIVE,
            "epochs": INT_POSITIVE,
            "lr": POSITIVE,
            "batch_size": INT_POSITIVE,
            "held_out": (lambda v: POSITIVE[0](v) and v < 1, "a number in (0, 1)"),
            "seed": INT_NON_NEGATIVE,
        },
    )
    if args.mean > max(args.leaf, 1):
        raise FlagError(
            f"--mean {args.mean} averages BASE's values at the seat's last {args.mean} decisions "
            f"up to the leaf, which needs --leaf {args.mean} or more (got --leaf {args.leaf})"
        )
    if args.race and args.z:
        raise FlagError(
            f"--race {args.race} plays the better pooled mean of a close call, which needs "
            f"--z 0 (got --z {args.z:g})"
        )
    check_out_dir(args.out_dir)
    taken = [p for p in output_paths(args.out_dir) if p.exists()]
    if taken and not args.force:
        raise FlagError(
            f"--out-dir {args.out_dir!r} holds a distillation already "
            f"({', '.join(p.name for p in taken)}); choose another folder, or --force to replace it"
        )
    try:
        net, ckpt = load_checkpoint(base_path(args.base))
    except (ValueError, OSError) as exc:
        raise FlagError(
            f"--base {args.base!r}: {exc} (a shipped policy is one of "
            f"{', '.join(SHIPPED_POLICIES)}; anything else is a checkpoint file)"
        ) from None
    rules = Rules.make(ckpt.get("rules"))
    if args.leaf and not value_trained_of(ckpt):
        raise FlagError(
            f"--leaf {args.leaf} scores rollouts by BASE's value, and --base {args.base!r} was "
            "trained beside an oracle critic: its value head was never trained. Give --leaf 0 "
            f"(the defaults of a BASE without a value: --k {NO_VALUE_DEFAULTS['k']} --z "
            f"{NO_VALUE_DEFAULTS['z']:g} --improve {NO_VALUE_DEFAULTS['improve']:g})"
        )
    check_flag_memory(f"--tables {args.tables}", batch_memory(args.tables, rules.num_players))
    per_row = 4 * (OBS_SIZE + net.in_size) + NUM_ACTIONS + 24
    check_flag_memory(f"--searched {args.searched}", 2 * args.searched * per_row)
    return net, ckpt, rules


def output_paths(out_dir: str) -> list[Path]:
    out = Path(out_dir)
    return [out / CHECKPOINT, out / "searched.npz", out / "distill.json"]


def collect(args: Args, agent: SearchAgent, rules: Rules) -> dict[str, np.ndarray]:
    """The search agent in every seat of ``args.tables`` games until ``args.searched`` searched
    decisions (or the time limit): per searched decision the v1 observation, legal actions,
    the search's action, BASE's favourite and the table, ordered by table and then by time
    (so that the held-out share is whole tables but one)."""
    game = BatchGame(rules, batch_size=args.tables, seed=args.seed)
    g = np.arange(args.tables)
    kept: dict[str, list[np.ndarray]] = {
        "obs": [], "mask": [], "search": [], "favourite": [], "table": []
    }  # fmt: skip
    count, overruled, start = 0, 0, time.perf_counter()
    bar = tqdm(total=args.searched, desc="searched", unit="decision", disable=not args.progress)
    while count < args.searched:
        if args.time_limit and time.perf_counter() - start > 60 * args.time_limit:
            break
        st = game.state
        mask = st.mask
        obs = encode(st, g, st.actor, game.scores, game.hand_no, rules.hands_per_game)
        acts, rows, favourite = agent.act_view_searched(obs, mask, public_view(st, g))
        if rows.size:
            kept["obs"].append(obs[rows])
            kept["mask"].append(mask[rows])
            kept["search"].append(acts[rows])
            kept["favourite"].append(favourite)
            kept["table"].append(rows)
            count += rows.size
            overruled += int((kept["search"][-1] != kept["favourite"][-1]).sum())
            bar.update(rows.size)
            bar.set_postfix(overruled=overruled, refresh=False)
        game.step(acts)
    bar.close()
    if count < 2:
        raise FlagError(
            f"--time-limit {args.time_limit}: only {count} searched decision(s) were collected; "
            "the fit needs at least 2"
        )
    order = np.argsort(np.concatenate(kept["table"]), kind="stable")
    return {k: np.concatenate(v)[order] for k, v in kept.items()}


def fit(net, args: Args, rules: Rules, data: dict[str, np.ndarray]) -> dict:
    """Fit ``net`` to the search's choices; the fit's numbers and, on the held-out decisions,
    how often the fitted network's most likely action is the search's choice where the search
    overruled BASE's favourite and where it played it."""
    read = NetInput(net.obs_version, rules)
    seen = np.concatenate(
        [
            read(data["obs"][i : i + 4096], data["mask"][i : i + 4096])
            for i in range(0, len(data["obs"]), 4096)
        ]
    )
    n = len(seen)
    demos = Demonstrations(
        obs=seen[None],
        mask=data["mask"][None],
        act=data["search"].astype(np.int64)[None],
        ret=np.zeros((1, n), np.float32),
        valid=np.zeros((1, n), bool),
    )
    net.train()
    stats = behaviour_clone(
        net,
        demos,
        epochs=args.epochs,
        vf_coef=0.0,
        seed=args.seed,
        held_out_share=args.held_out,
        batch_size=args.batch_size,
        lr=args.lr,
    )
    net.eval()
    cut = n - stats["held_out_decisions"]
    with torch.no_grad():
        logits, _ = net(torch.from_numpy(seen[cut:]), torch.from_numpy(data["mask"][cut:]))
    now = logits.argmax(-1).numpy()
    label, fav = data["search"][cut:], data["favourite"][cut:]
    over = label != fav
    return {
        **stats,
        "overruled": int((data["search"] != data["favourite"]).sum()),
        "held_out_overruled": int(over.sum()),
        "held_out_overruled_learned": float((now[over] == label[over]).mean())
        if over.any()
        else None,
        "held_out_kept": float((now[~over] == label[~over]).mean()) if (~over).any() else None,
    }


def save_arrays(path: Path, data: dict[str, np.ndarray]) -> None:
    """``np.savez_compressed`` into exactly ``path`` (given a name, numpy would add ``.npz``)."""
    with open(path, "wb") as f:
        np.savez_compressed(f, **data)


def train(args: Args) -> dict:
    net, ckpt, rules = check_args(args)
    wall = time.perf_counter()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    torch.manual_seed(args.seed)
    seeds = np.random.SeedSequence(args.seed).spawn(2)
    base = PPOAgent(
        net,
        seed=int(seeds[0].generate_state(1)[0]),
        rules=rules,
        reward_scale=reward_scale_of(ckpt),
        value_trained=value_trained_of(ckpt),
    )
    agent = SearchAgent(
        base,
        rules=rules,
        k=args.k,
        c=args.c,
        unsure=args.unsure,
        z=args.z,
        leaf=args.leaf,
        mean=args.mean,
        confirm=args.confirm,
        race=args.race,
        improve=args.improve,
        seed=int(seeds[1].generate_state(1)[0]),
    )
    data = collect(args, agent, rules)
    played = time.perf_counter() - wall
    print(
        f"collected {len(data['search']):,} searched decisions in {played:.0f} s; the search "
        f"overruled the network's favourite at {(data['search'] != data['favourite']).sum():,}",
        flush=True,
    )
    stats = fit(net, args, rules, data)
    seconds = time.perf_counter() - wall
    stage = {
        "command": command_line(PROG, args),
        "commit": source_commit(),
        "preset": rules.preset,
        "rules": rules.to_record(),
        "decisions": 0,
        "seconds": round(seconds, 1),
        "started": started,
        "distill": {"searched": len(data["search"]), "play_seconds": round(played, 1), **stats},
    }
    print(json_text(stage["distill"], indent=1), flush=True)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    extra = {k: ckpt[k] for k in ("rules", "decisions") if k in ckpt}
    extra["stages"] = [*ckpt.get("stages", []), stage]
    write_atomic(out / "searched.npz", lambda tmp: save_arrays(tmp, data))
    write_text_atomic(out / "distill.json", json_text({"args": asdict(args), **stage}, indent=1))
    save_checkpoint(out / CHECKPOINT, net, **extra)
    return stage


def saved_message(args: Args) -> str:
    """What a run stopped by Ctrl-C saved: nothing, as its files are written once the search
    has played and the network is fitted; the command that starts it again."""
    out = Path(args.out_dir)
    left = [
        out / name for name in ("searched.npz", "distill.json", CHECKPOINT) if (out / name).exists()
    ]
    return "the searched decisions and the network are written at the end: " + start_again(
        PROG, args, left
    )


@exits_2_when_out_of_memory("python -m training.distill_search")
def main(argv: list[str] | None = None) -> int:
    return run_main(train, parse_args(Args, argv, __doc__, PROG), PROG, saved_message)


if __name__ == "__main__":
    raise SystemExit(main())
