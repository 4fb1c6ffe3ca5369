"""Self-play PPO over the batched engine: ``python -m training.ppo_selfplay [--flags]``.

One network plays every seat of ``num_envs`` games of :class:`~zhuoji_env.envs.SelfPlayVecEnv`.
Illegal actions are masked out of the logits before the softmax, so none is ever sampled. Each
seat's decisions form their own trajectory: a hand's settlement is credited to the seat's own
last decision of the hand (the vector env's transitions), and GAE runs along each (game, seat)
trajectory (:func:`training.learner.seat_gae`; the maths is in :mod:`training.learner`). A
decision still open when a rollout stops is carried into the next one and trained on there,
once its outcome is known (:meth:`Rollout.next`). Optionally a share of the seats is played
by frozen past checkpoints (``--pool-size``) or by fixed agents (``--pool-agents rule``, or
``ppo:PATH`` checkpoints: a league); their decisions are not trained on. With ``--magnet-coef``
every minibatch's loss also pulls the policy toward an anchor policy, the reverse KL of
Magnetic Mirror Descent (:class:`~training.learner.Magnet`; ``--magnet clone``, ``lagged`` or a
checkpoint). With ``--oracle-critic`` the values come from a separate critic
that also sees what the seat cannot (:class:`~training.learner.OracleCritic`, fed by
:meth:`SelfPlayVecEnv.hidden`; with ``--oracle-draws`` also the order of the wall), while the
policy still sees only its observation. With
``--features`` the network reads ``zhuoji-obs-v2``, the observation and the blocks derived from
it (:func:`~zhuoji_env.observation.with_features`); with ``--rule-hint`` it reads
``zhuoji-obs-v2+rule``, v2 followed by the ``rule`` agent's advice (the action it would take and
how far below its best it scores each other one, :class:`~agents.ppo.NetInput`), so that the
policy learns where to depart from ``rule``; the pool's fixed agents still get v1 (a ``rule``
seat then plays the advice already worked out for the network's input).
Every flag is checked before any work starts or any folder is made (:func:`check_args`); a bad
one exits with status 2 and a message naming it.

Before the first update (of a fresh run) and every ``--eval-every`` updates the policy plays the
arena (duplicate deals, every seating) against ``--eval-opponents`` (by default ``rule`` and
``random``), once sampling its actions and once taking the argmax, on the same deals; each
match-up's margin per hand (policy minus opponent) is logged, with its 95% interval, to the
console, to TensorBoard (``--tensorboard``) and (after updates) to ``metrics.jsonl`` in the run
directory, beside the checkpoints (``latest.pt``, ``update_<k>.pt``). Every file is written whole
or not at all (a temporary name, then a rename: :mod:`zhuoji_env.fileio`), and no run is
overwritten: a fresh run refuses an ``--out-dir`` that holds one unless ``--force`` (which deletes
its files first), and ``--resume`` continues the run of its checkpoint's own folder, or starts in
a folder without a run (:func:`replaced_files`). Each checkpoint records
its provenance in ``stages``: per run that led to it (the first, then each ``--resume``), the
command that reruns it, the git commit, the preset, the decisions trained and the wall seconds
(cloning included). ``metrics.jsonl``
has one line per update: its ``seconds`` since this run's first update and ``total_seconds``
over it and the runs it resumes (where their checkpoints logged theirs), and its ``train``
entry, the means over the update's minibatches of the policy and value losses, entropy,
approximate KL and clip fraction, and the explained variance of the values (as CleanRL logs
them). ``--resume CKPT`` continues a run. The script
prints the share of wall time spent inside the environment.

Run length: ``--time-limit M`` alone trains for M minutes (no decision cap); ``--total-decisions``
caps the run too; with neither, 2M decisions. A run trains whole updates (the decisions rounded
down; fewer than one update is refused) and says at its start how many. The learning rate decays
linearly to 0 over the run's progress, the larger of the share of the decisions trained and of the
time budget spent (:func:`progress`), so it ends where the run ends. ``--device auto|cpu|cuda``
picks where the network runs; ``--bf16 auto`` autocasts the update to bfloat16 where that is fast (a
GPU, or a CPU with AMX; CPUs without bf16 units emulate it, far slower), and each
checkpoint's stage records whether it did. ``--processes P`` trains data-parallel on P CPU
cores: each process plays ``num_envs / P`` of the games, and every minibatch is the union of
the processes' minibatches, with its advantages normalised over the union and the gradient of
its mean loss summed across them (:class:`~training.learner.ProcessGroup`, torch.distributed's
gloo backend). An update is the one-process update with its minibatches drawn share by share,
split across cores; the first process evaluates, logs and saves, and the processes' parameters
are checked equal at every save. The processes may run on several machines: ``--nnodes N
--node-rank R --master-addr HOST`` on each (``--processes`` of them per machine), or under
torchrun (:mod:`training.distributed`, which launches the processes: :func:`train` hands it
:data:`JOB`; docs/distributed.md); a process that fails or vanishes stops all within seconds,
named with its exit code where it has one (:class:`~training.distributed.Watch`).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import hashlib
import math
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from agents import make_agent
from agents.arena import against_each, interval_text
from agents.base import decide
from agents.ppo import (
    HINT_START,
    INPUT_SIZES,
    VERSION_RULE,
    NetInput,
    PolicyNet,
    PPOAgent,
    load_checkpoint,
    load_weights_only,
    reward_scale_of,
    save_checkpoint,
)
from agents.rule import RuleAgent
from training.cli import (
    INT_NON_NEGATIVE,
    INT_POSITIVE,
    NON_NEGATIVE,
    POSITIVE,
    SEED,
    TORCH_THREADS,
    UNIT,
    FlagError,
    agent_specs,
    bf16_from_flag,
    check_agent_specs,
    check_arena_deals,
    check_fields,
    check_flag_memory,
    check_out_dir,
    command_line,
    device_from_flag,
    drop_rows_after,
    file_names,
    flag,
    json_text,
    lock_out_dir,
    logged,
    parse_args,
    remove_paths,
    rules_from_flag,
    run_main,
    source_commit,
    start_again,
)
from training.distributed import Job, data_parallel, launch, launch_command, rank_seed
from training.learner import (
    Batch,
    CloneLoss,
    Demonstrations,
    Magnet,
    OracleCritic,
    ProcessGroup,
    behaviour_clone,
    collect_demonstrations,
    potential,
    ppo_update,
    seat_gae,
    shaped_rewards,
)
from training.recipes import RECIPES
from zhuoji_env.commands import prog
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.engine.game import is_real
from zhuoji_env.engine.records import is_plain_int
from zhuoji_env.engine.state import State
from zhuoji_env.envs.vector import SelfPlayVecEnv
from zhuoji_env.fileio import FolderLock, append_text_atomic, copy_atomic, unused_path
from zhuoji_env.limits import TORCH_PROCESS_BYTES, exits_2_when_out_of_memory
from zhuoji_env.observation import HIDDEN_SIZE, OBS_SIZE, VERSION, VERSION_V2, draws_size
from zhuoji_env.rules import Rules


@dataclass
class Args:
    """Arguments of the self-play PPO run (every field is a command-line flag)."""

    rules: str = ""
    """preset name, or a JSON rules object {"preset": ..., "overrides": {...}} (empty: guiyang,
    or with --resume the checkpoint's)"""
    total_decisions: int = 0
    """decisions to train on, all seats together (with --resume, the checkpoint's among them),
    rounded down to whole updates of --num-envs x --num-steps (at least one) (0: 2,000,000
    without --time-limit, no cap with one)"""
    num_envs: int = 64
    """games played in lock-step (the default, with --lr 1e-3 and --num-minibatches 4, is the
    short run that learned fastest: small rollouts, many updates; docs/training.md)"""
    num_steps: int = 128
    """steps of every game per rollout"""
    lr: float = 1e-3
    """Adam learning rate (the start of the decay with --anneal-lr)"""
    anneal_lr: bool = True
    """decay the learning rate linearly to 0 over the run (its decisions or --time-limit)"""
    gamma: float = 1.0
    """discount per decision of a seat"""
    gae_lambda: float = 0.95
    """GAE lambda of the advantages"""
    update_epochs: int = 4
    """passes over each rollout"""
    num_minibatches: int = 4
    """minibatches per pass"""
    clip_coef: float = 0.2
    """PPO clip range of the probability ratio"""
    ent_coef: float = 0.01
    """weight of the entropy bonus"""
    vf_coef: float = 0.5
    """weight of the value loss"""
    max_grad_norm: float = 0.5
    """gradient norm clip"""
    reward_scale: float = 0.1
    """rewards are hand scores times this (with --resume, the checkpoint's: its value head
    predicts returns at its scale)"""
    shaping: float = 0.05
    """potential-based shaping: potential -shaping x shanten of the seat's hand (0: off)"""
    kong_shaping: float = 0.0
    """potential-based shaping: potential +kong_shaping per kong the seat has made (0: off)"""
    oracle_critic: bool = False
    """values from a critic that also sees the hidden state (every hand, the wall), while the
    policy sees only the observation (--resume loads the checkpoint's critic when it has one)"""
    oracle_draws: int = 0
    """with --oracle-critic: the critic also sees the order of the wall, each seat's next
    ORACLE_DRAWS draws and the next two replacement draws (observation.encode_draws; 0: only
    the wall's counts)"""
    hidden: int = 256
    """width of the policy MLP (a resumed run keeps its checkpoint's)"""
    features: bool = False
    """the network reads zhuoji-obs-v2: the observation and the blocks derived from it (unseen
    tiles per kind, passports, the value and live count of each wait; observation.features);
    a resumed run keeps its checkpoint's observation version"""
    rule_hint: bool = False
    """the network reads zhuoji-obs-v2+rule: v2 and the advice of the rule agent (its action,
    and how far below its best it scores each other action; agents.ppo.NetInput), so the policy
    learns where to depart from rule; costs about 40 to 60 us a decision"""
    seed: int = 1
    """seed of the deals, the network and the sampling"""
    torch_threads: int = 1
    """CPU threads of torch (per process)"""
    processes: int = 1
    """data-parallel processes per node, one per core: each of the run's P processes (all
    nodes together) plays --num-envs / P of the games and computes its share of every
    minibatch, and their gradients are summed, so an update is the one process's update
    (minibatches drawn share by share) split across cores (training.learner.ProcessGroup);
    process k > 0 deals from seed + k * 2**32 (under torchrun: leave at 1, torchrun's
    --nproc-per-node sets it)"""
    nnodes: int = 1
    """machines of the run, each running the same command but for --node-rank and starting
    its --processes processes; they meet at node 0 (docs/distributed.md)"""
    node_rank: int = 0
    """this machine's number among --nnodes, 0 to nnodes - 1 (node 0 holds the processes'
    meeting point, and its first process evaluates, logs and saves)"""
    master_addr: str = ""
    """with --nnodes > 1: node 0's host name or address, as every node reaches it"""
    master_port: int = 29500
    """with --nnodes > 1: the port on node 0 where the processes meet (a TCP store)"""
    pool_size: int = 0
    """past checkpoints kept as opponents (0: pure self-play)"""
    pool_every: int = 10
    """updates between snapshots into the pool"""
    pool_prob: float = 0.25
    """chance that a seat of a new hand is played by a pool member"""
    pool_agents: str = ""
    """comma-separated agent specs (e.g. 'rule') that join the pool of opponents for good"""
    time_limit: float = 0.0
    """minutes of training (0: no limit): the first update that ends past it is the last, then
    the run saves and evaluates; the learning rate decays over this time"""
    bc_agent: str = ""
    """agent spec to imitate before PPO (behaviour cloning warm start; '' for none)"""
    bc_decisions: int = 200_000
    """decisions of the imitated agent's self-play to clone (with --bc-agent)"""
    bc_epochs: int = 3
    """passes over the cloned decisions (with --bc-agent)"""
    bc_sees_hint: bool = False
    """with --rule-hint: the clone is fitted to the demonstrations with rule's advice in view
    (it then copies it exactly); by default the advice is blanked while cloning and its
    first-layer weights start at zero, so PPO starts from the plain v2 clone and learns what the
    advice is worth"""
    bc_smoothing: float = 0.0
    """label smoothing of the warm-start cloning (not of the --bc-coef term): the target is this
    share spread evenly over the legal actions, the rest on the demonstrated one, so the clone
    keeps exploring (0: off)"""
    bc_coef: float = 0.0
    """keep cloning during PPO: this weight x the cross entropy toward the --bc-agent's
    demonstrations, on a quarter-minibatch of them drawn at every step (0: off)"""
    magnet_coef: float = 0.0
    """weight of the magnet term (Magnetic Mirror Descent): this x the reverse KL(pi || anchor)
    over the legal actions in every minibatch's loss, a pull toward --magnet's anchor (0: off)"""
    magnet: str = ""
    """the anchor of --magnet-coef: 'clone' (the network that cloning --bc-agent gave, before
    PPO), 'lagged' (a copy of the learner, refreshed every --magnet-every updates) or a
    checkpoint's path (a network reading the same input)"""
    magnet_every: int = 10
    """with --magnet lagged: updates between refreshes of the anchor by the learner"""
    eval_every: int = 20
    """updates between arena evaluations (0: only at the end)"""
    eval_deals: int = 200
    """duplicate deals per opponent in each evaluation"""
    eval_opponents: str = "rule,random"
    """comma-separated agent specs to evaluate against ('' for no evaluation)"""
    out_dir: str = "runs/ppo"
    """folder of the checkpoints and metrics.jsonl: a fresh run needs one without a run in it
    (or --force); --resume continues in its checkpoint's folder (appending to metrics.jsonl,
    from which the rows past the checkpoint's update are dropped first) or starts in a folder
    without a run"""
    save_every: int = 20
    """updates between checkpoints, update_<k>.pt copied to latest.pt (0: only the last)"""
    resume: str = ""
    """checkpoint to continue from"""
    force: bool = False
    """delete the files of the run that --out-dir holds (update_<k>.pt, latest.pt,
    metrics.jsonl, tb/) before starting; without it such a folder is refused, unless --resume
    continues that run from its newest checkpoint"""
    tensorboard: bool = False
    """also log to TensorBoard in OUT_DIR/tb"""
    progress: bool = True
    """a progress bar of the updates"""
    device: str = "auto"
    """'auto' (CUDA when torch sees it, else CPU), 'cpu' or 'cuda'"""
    bf16: str | bool = "auto"
    """bfloat16 autocast of the update's forward/backward (log-softmax, ratios and losses stay
    float32): 'on', 'off', or 'auto': on where bfloat16 is fast (a CUDA GPU of compute
    capability 8.0+, a CPU with AMX; emulated elsewhere, and far slower there)"""


DEFAULT_DECISIONS = 2_000_000


def check_args(
    args: Args, lead: bool = True
) -> tuple[Rules, tuple[PolicyNet, dict] | None, torch.device]:
    """Check every flag before any work: the launch (:func:`training.distributed.launch`) and
    the share of the games of each of its processes, the rules, the device, the ``--resume``
    checkpoint if any, the memory the sizes need (:func:`memory_needed`) and that the
    evaluations' arenas need (``--eval-deals``: :func:`training.cli.check_arena_deals`) and, in
    the ``lead`` process (the one that writes), that ``--out-dir`` can be a folder and holds no
    run this one would overwrite (:func:`replaced_files`).

    Raises :class:`~training.cli.FlagError` naming the flag, its value and what is allowed."""
    check_fields(
        args,
        {
            "total_decisions": INT_NON_NEGATIVE,
            "num_envs": INT_POSITIVE,
            "num_steps": INT_POSITIVE,
            "lr": POSITIVE,
            "gamma": UNIT,
            "gae_lambda": UNIT,
            "update_epochs": INT_POSITIVE,
            "num_minibatches": INT_POSITIVE,
            "clip_coef": POSITIVE,
            "ent_coef": NON_NEGATIVE,
            "vf_coef": NON_NEGATIVE,
            "max_grad_norm": POSITIVE,
            "reward_scale": POSITIVE,
            "shaping": NON_NEGATIVE,
            "kong_shaping": NON_NEGATIVE,
            "hidden": INT_POSITIVE,
            "oracle_draws": INT_NON_NEGATIVE,
            "seed": SEED,
            "torch_threads": TORCH_THREADS,
            "pool_size": INT_NON_NEGATIVE,
            "pool_every": INT_POSITIVE,
            "pool_prob": UNIT,
            "time_limit": NON_NEGATIVE,
            "bc_decisions": INT_POSITIVE,
            "bc_epochs": INT_POSITIVE,
            "bc_coef": NON_NEGATIVE,
            "bc_smoothing": UNIT,
            "magnet_coef": NON_NEGATIVE,
            "magnet_every": INT_POSITIVE,
            "eval_every": INT_NON_NEGATIVE,
            "eval_deals": INT_POSITIVE,
            "save_every": INT_NON_NEGATIVE,
        },
    )
    per_update = args.num_envs * args.num_steps
    if 0 < args.total_decisions < per_update:
        raise FlagError(
            f"--total-decisions {args.total_decisions}: below one update of --num-envs "
            f"{args.num_envs} x --num-steps {args.num_steps} = {per_update:,} decisions (the "
            f"run trains whole updates): pass at least {per_update}, or 0"
        )
    place = launch(args)
    one_node = not place.torchrun and args.nnodes == 1  # the messages as --processes alone
    if args.num_envs % place.size:
        raise FlagError(
            (
                f"--processes {args.processes}: must divide --num-envs {args.num_envs}"
                if one_node
                else f"--num-envs {args.num_envs}: must be a multiple of the run's processes "
                f"({place.given})"
            )
            + " (each process plays an equal share of the games)"
        )
    share = args.num_envs // place.size * args.num_steps
    if args.num_minibatches > share:
        per = "--processes" if one_node else f"processes ({place.given})"
        raise FlagError(
            f"--num-minibatches {args.num_minibatches}: must be at most --num-envs x "
            f"--num-steps / {per} = {share} (the decisions of a rollout, per process)"
        )
    if args.oracle_draws and not args.oracle_critic:
        raise FlagError(
            f"--oracle-draws {args.oracle_draws}: shows the wall's order to the oracle critic, "
            "so it needs --oracle-critic"
        )
    given_rules = rules_from_flag(args.rules) if args.rules else None
    device = device_from_flag(args.device)
    if place.size > 1 and device.type != "cpu":
        raise FlagError(
            f"{place.given}: data-parallel processes share the CPU's cores "
            f"(torch.distributed's gloo); --device {args.device} resolved to {device.type}, use "
            "--device cpu (or one process)"
        )
    bf16_from_flag(args.bf16, device)
    if args.bc_agent and args.num_envs < 2:
        raise FlagError(
            f"--num-envs {args.num_envs}: --bc-agent holds out whole games to measure the "
            "cloning, so it needs --num-envs >= 2"
        )
    unused = [n for n in ("bc_decisions", "bc_epochs") if getattr(args, n) != getattr(Args, n)]
    if unused and not args.bc_agent:
        raise FlagError(
            f"{flag(unused[0])} {getattr(args, unused[0])}: sizes the cloning of --bc-agent, "
            "so it needs --bc-agent"
        )
    if args.bc_sees_hint and not (args.bc_agent and args.rule_hint):
        raise FlagError(
            "--bc-sees-hint: shows rule's advice to the clone, so it needs --bc-agent and "
            "--rule-hint"
        )
    if args.bc_smoothing and (not args.bc_agent or args.resume):
        raise FlagError(
            f"--bc-smoothing {args.bc_smoothing}: smooths the warm-start cloning of "
            "--bc-agent, so it needs --bc-agent and a fresh run (a resumed run does not clone)"
        )
    if args.bc_coef and not args.bc_agent:
        raise FlagError(
            f"--bc-coef {args.bc_coef}: keeps cloning the --bc-agent's demonstrations during "
            "PPO, so it needs --bc-agent"
        )
    if args.bc_coef and args.rule_hint and not args.bc_sees_hint:
        raise FlagError(
            f"--bc-coef {args.bc_coef}: with --rule-hint the clone term would fit demonstrations "
            "with rule's advice blanked while the policy plays with it; add --bc-sees-hint"
        )
    check_magnet_flags(args)
    resumed = None
    if args.resume:
        try:
            resumed = load_checkpoint(args.resume)
        except ValueError as exc:
            raise FlagError(f"--resume {args.resume!r}: {exc}") from None
    rules = given_rules or (resumed_rules(args, resumed[1]) if resumed else Rules.make("guiyang"))
    if args.bc_agent:
        check_agent_specs(args.bc_agent, "bc_agent", rules)
    check_agent_specs(args.pool_agents, "pool_agents", rules, allow_empty=True)
    check_agent_specs(
        args.eval_opponents, "eval_opponents", rules, allow_empty=args.eval_opponents == ""
    )
    if lead:  # the other processes write nothing there, and may run on other machines
        check_out_dir(args.out_dir)
    if resumed:
        net, ckpt = resumed
        check_optimizer_state(ckpt.get("optimizer"), net, args.resume)
        trained_scale = reward_scale_of(ckpt, args.resume)
        if args.reward_scale != trained_scale:
            raise FlagError(
                f"--reward-scale {args.reward_scale:g}: --resume {args.resume!r} was trained at "
                f"{trained_scale:g}, and its value head predicts returns at that scale; pass "
                f"--reward-scale {trained_scale:g}"
            )
        if args.bc_coef and net.obs_version == VERSION_RULE and not args.rule_hint:
            raise FlagError(
                f"--bc-coef {args.bc_coef}: --resume {args.resume!r} reads rule's advice; pass "
                "--rule-hint (and --bc-sees-hint) so that the clone term sees it as the policy does"
            )
        wanted = input_version(args)
        if wanted != VERSION and net.obs_version != wanted:
            given = "--rule-hint" if args.rule_hint else "--features"
            raise FlagError(
                f"{given}: --resume {args.resume!r} was trained on {net.obs_version}, and "
                f"a resumed run keeps its observation version; drop {given}"
            )
        if args.oracle_critic and "critic" in ckpt:
            try:
                oracle_critic(net, args.oracle_draws).load_state_dict(ckpt["critic"])
            except (RuntimeError, TypeError) as exc:
                raise FlagError(
                    f"--resume {args.resume!r}: its 'critic' is not an OracleCritic of width "
                    f"{net.hidden} with --oracle-draws {args.oracle_draws} "
                    f"({str(exc).splitlines()[0]})"
                ) from None
        if not args.oracle_critic and "critic" in ckpt:
            raise FlagError(
                f"--resume {args.resume!r}: trained with --oracle-critic, whose network's own "
                "value head was never trained; resume it with --oracle-critic"
            )
        done, trained = ckpt.get("update", 0), ckpt.get("decisions", 0)
        num_updates = planned_updates(args, done, trained)
        if num_updates is not None and done >= num_updates:
            raise FlagError(
                f"--total-decisions {args.total_decisions}"
                + ("" if args.total_decisions else f" (no --time-limit: {DEFAULT_DECISIONS:,})")
                + f": the decisions of the whole run, and --resume {args.resume!r} has trained "
                f"{trained:,} already"
                + (f" (update {done})" if done else "")
                + f"; pass at least {trained + per_update} to train one more update of "
                f"--num-envs x --num-steps = {per_update:,} decisions, or give --time-limit"
            )
    version = resumed[0].obs_version if resumed else input_version(args)
    if args.magnet_coef:
        check_magnet_anchor(args, resumed, version)
    in_size = resumed[0].in_size if resumed else INPUT_SIZES[input_version(args)]
    hidden = resumed[0].hidden if resumed else args.hidden
    width = f"a network of width {hidden}" + (" (--resume's)" if resumed else "")
    if not resumed and args.hidden != Args.hidden:  # the flag was given: name it
        width = f"--hidden {hidden}"
    others = args.processes - 1  # this machine's other processes, each with its networks
    check_flag_memory(
        f"--num-envs {args.num_envs} x --num-steps {args.num_steps} with {width}"
        + (f" and --bc-decisions {args.bc_decisions}" if args.bc_agent else "")
        + (f" in --processes {args.processes}" if others else ""),
        memory_needed(args, in_size, hidden)
        + others * (TORCH_PROCESS_BYTES + network_memory(args, in_size, hidden)),
    )
    if agent_specs(args.eval_opponents):
        check_arena_deals(args.eval_deals, rules)
    if lead:
        replaced_files(args, resumed[1] if resumed else {})
    return rules, resumed, device


GAME_BYTES = 20_000
"""Bytes of one game of :class:`SelfPlayVecEnv` (its state, observations and masks; measured
at 14-20 KB a game over the first steps of 256 and 4,096 games)."""


def memory_needed(args: Args, in_size: int, hidden: int | None = None) -> int:
    """A lower bound on the bytes the run allocates: its games, one rollout's buffers (``2 x
    --num-steps`` rows of ``--num-envs`` decisions at most, the decisions carried over from the
    previous rollout included; :class:`Rollout`), with ``--bc-agent`` the demonstrations
    (each observation twice: as recorded and as the network reads it), and the networks
    (:func:`network_memory`). The network's input is ``in_size`` floats, its width ``hidden``
    (default ``--hidden``; a resumed run's is its checkpoint's)."""
    seen = oracle_hidden_size(args.oracle_draws) if args.oracle_critic else 0
    # obs and hidden (float32), mask, act, logp, values, seats, phi, learner, rewards, 3 flags
    row = 4 * (in_size + seen) + NUM_ACTIONS + 8 + 4 + 4 + 8 + 4 + 1 + 4 + 3
    need = args.num_envs * (GAME_BYTES + 2 * args.num_steps * row)
    if args.bc_agent:
        need += args.bc_decisions * (4 * (OBS_SIZE + in_size) + NUM_ACTIONS + 16)
    return need + network_memory(args, in_size, args.hidden if hidden is None else hidden)


def network_memory(args: Args, in_size: int, hidden: int) -> int:
    """Bytes of the networks of a run: the policy's float32 weights four times (the weights,
    their gradients and Adam's two moments) and once more per ``--pool-size`` snapshot and for
    the ``--magnet-coef`` anchor; the
    ``--oracle-critic``'s four times; and a minibatch's activations (each of the two hidden
    layers' outputs before and after the ReLU, and their gradients) in each network."""
    policy = (in_size + 1) * hidden + (hidden + 1) * hidden + (hidden + 1) * (NUM_ACTIONS + 1)
    need = 4 * policy * (4 + args.pool_size + bool(args.magnet_coef))
    networks = 1
    if args.oracle_critic:
        seen = in_size + oracle_hidden_size(args.oracle_draws)
        need += 4 * 4 * ((seen + 1) * hidden + (hidden + 1) * hidden + hidden + 1)
        networks = 2
    rows = -(-2 * args.num_envs * args.num_steps // args.num_minibatches)
    return need + networks * rows * 8 * hidden * 4


RUN_FILES = ("latest.pt", "metrics.jsonl", "tb")
"""What a run writes in its ``--out-dir`` beside its ``update_<k>.pt`` checkpoints."""


def checkpoint_update(path: Path) -> int | None:
    """The ``k`` of an ``update_<k>.pt`` checkpoint's name, else None."""
    m = re.fullmatch(r"update_(\d+)\.pt", path.name)
    return int(m[1]) if m else None


def run_files(out_dir: Path) -> list[Path]:
    """The files of a run that ``out_dir`` holds (:data:`RUN_FILES` and the checkpoints)."""
    if not out_dir.is_dir():
        return []
    found = [out_dir / name for name in RUN_FILES if (out_dir / name).exists()]
    return found + [p for p in out_dir.glob("update_*.pt") if checkpoint_update(p) is not None]


def replaced_files(args: Args, ckpt: dict) -> list[Path]:
    """The files of an earlier run in ``--out-dir`` that ``--force`` deletes before this run
    starts (``ckpt``: the ``--resume`` checkpoint's dict, or ``{}``).

    A folder without a run needs nothing deleted; so does the folder of the ``--resume``
    checkpoint when that checkpoint is its newest (the run continues there, appending to its
    metrics). Any other folder holding a run is refused with a :class:`FlagError` that names
    its files and the way out, unless ``--force``. A resume from an older checkpoint of the
    folder's own run is refused even with ``--force``, which would have to delete that run's
    later checkpoints: a branch goes into a new folder."""
    out = Path(args.out_dir)
    found = run_files(out)
    if not found:
        return []
    free = unused_path(out)
    if args.resume and Path(args.resume).resolve().parent == out.resolve():
        update = int(ckpt.get("update", 0))
        later = [p for p in found if (checkpoint_update(p) or 0) > update]
        if not later:
            return []
        newest = max(later, key=checkpoint_update)
        raise FlagError(
            f"--resume {args.resume!r} is update {update} of the run in --out-dir "
            f"{args.out_dir!r}, which holds its later checkpoints ({file_names(later)}): the "
            "resumed run would overwrite some of them and leave the others beside its own; "
            f"resume from {str(newest)!r}, or branch into a new --out-dir ({str(free)!r} is "
            "free)"
        )
    if args.force:
        return found
    if args.resume:
        way_out = f"continue into a new --out-dir ({str(free)!r} is free)"
    else:
        latest = out / "latest.pt"
        way_out = (
            f"continue it with --resume {str(latest)!r}, " if latest.exists() else ""
        ) + f"start in a new --out-dir ({str(free)!r} is free)"
    raise FlagError(
        f"--out-dir {args.out_dir!r} holds a run ({file_names(found)}) that this one would "
        f"overwrite and mix with: {way_out}, or pass --force to delete those files first"
    )


def oracle_hidden_size(draws: int) -> int:
    """Length of :meth:`SelfPlayVecEnv.hidden` with ``draws`` draws ahead (0: none)."""
    return HIDDEN_SIZE + (draws_size(draws) if draws else 0)


def oracle_critic(net: PolicyNet, draws: int) -> OracleCritic:
    """The oracle critic of ``net`` (its width and input), seeing ``draws`` draws ahead."""
    return OracleCritic(net.hidden, net.in_size, oracle_hidden_size(draws))


MAGNET_ANCHORS = ("clone", "lagged")
"""The anchors of ``--magnet`` that are not a checkpoint's path."""


def check_magnet_flags(args: Args) -> None:
    """``--magnet-coef``, ``--magnet`` and ``--magnet-every`` go together: a coefficient needs
    an anchor and an anchor a coefficient, the refresh a lagged anchor, the clone a cloning."""
    if args.magnet_coef and not args.magnet:
        raise FlagError(
            f"--magnet-coef {args.magnet_coef:g}: pulls the policy toward an anchor; give "
            "--magnet clone, lagged or a checkpoint's path"
        )
    if args.magnet and not args.magnet_coef:
        raise FlagError(
            f"--magnet {args.magnet!r}: the anchor of the magnet term, which --magnet-coef 0 "
            "leaves off; give --magnet-coef above 0"
        )
    if args.magnet_every != Args.magnet_every and args.magnet != "lagged":
        raise FlagError(
            f"--magnet-every {args.magnet_every}: refreshes a lagged anchor, so it needs "
            "--magnet lagged"
        )
    if args.magnet == "clone" and not args.bc_agent:
        raise FlagError(
            "--magnet clone: the anchor is the network as the cloning of --bc-agent leaves it, "
            "so it needs --bc-agent (e.g. rule)"
        )


def check_magnet_anchor(args: Args, resumed, version: str) -> None:
    """The anchor ``--magnet`` names can be had: a resumed ``clone`` run's checkpoint holds it
    (a resumed run does not clone again), a saved anchor fits the network, and a checkpoint's
    path is a network reading the learner's input ``version``."""
    ckpt = resumed[1] if resumed else {}
    if args.magnet in MAGNET_ANCHORS:
        if args.magnet == "clone" and resumed and "magnet" not in ckpt:
            raise FlagError(
                f"--magnet clone: --resume {args.resume!r} holds no anchor (it was trained "
                "without --magnet clone), and a resumed run does not clone again; use --magnet "
                "lagged or a checkpoint's path"
            )
        if "magnet" in ckpt:
            try:
                copy.deepcopy(resumed[0]).load_state_dict(ckpt["magnet"])
            except (RuntimeError, TypeError, AttributeError) as exc:
                raise FlagError(
                    f"--resume {args.resume!r}: its 'magnet' is not an anchor of its network "
                    f"({str(exc).splitlines()[0]})"
                ) from None
        return
    try:
        anchor, _ = load_checkpoint(args.magnet)
    except ValueError as exc:
        raise FlagError(
            f"--magnet {args.magnet!r}: {exc} (the anchor is clone, lagged or a checkpoint's path)"
        ) from None
    if anchor.obs_version != version:
        raise FlagError(
            f"--magnet {args.magnet!r}: reads {anchor.obs_version}, the network trained reads "
            f"{version}; the anchor must read the same input"
        )


def magnet_anchor(args: Args, net: PolicyNet, ckpt: dict) -> PolicyNet:
    """The anchor of the magnet term: for ``clone`` and ``lagged`` a copy of the network as it
    is now (after any cloning), or the anchor a resumed checkpoint saved; else the network of
    the checkpoint ``--magnet`` names."""
    if args.magnet not in MAGNET_ANCHORS:
        return load_checkpoint(args.magnet)[0]
    anchor = copy.deepcopy(net)
    if "magnet" in ckpt:
        anchor.load_state_dict(ckpt["magnet"])
    return anchor


def resumed_training_seconds(ckpt: dict) -> float:
    """The training seconds a checkpoint's run had logged (its row's ``total_seconds``: over
    that run and the runs it continued), where a resumed run's own count starts; 0 for a
    checkpoint that logged none (a shipped policy, or one saved before the count)."""
    row = ckpt.get("row")
    total = row.get("total_seconds") if isinstance(row, dict) else None
    return float(total) if is_real(total) and math.isfinite(total) and total >= 0 else 0.0


def resumed_from(path: str, ckpt: dict) -> dict:
    """Which checkpoint a resumed run started from: its update, decisions and sha256 (the
    file itself may be overwritten by the run)."""
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return {
        "update": ckpt.get("update", 0),
        "decisions": ckpt.get("decisions", 0),
        "sha256": digest,
    }


def check_optimizer_state(state, net: PolicyNet, path: str) -> None:
    """``FlagError`` unless a checkpoint's ``optimizer`` (if any) is Adam's state of ``net``
    (its first group: the network's parameters, each moment of a parameter's shape): torch
    would take any and fail at the first update, after ``--force`` had deleted the old run."""
    if state is None:
        return
    params = list(net.parameters())
    try:
        first = state["param_groups"][0]["params"]
        moments = [state["state"].get(i, {}) for i in first]
        shapes = [[tuple(m[k].shape) for k in ("exp_avg", "exp_avg_sq") if k in m] for m in moments]
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise FlagError(
            f"--resume {path!r}: its 'optimizer' is not Adam's state ({exc!r})"
        ) from None
    if len(first) != len(params):
        raise FlagError(
            f"--resume {path!r}: its 'optimizer' holds the state of {len(first)} parameters, "
            f"the network has {len(params)}"
        )
    for i, (pair, p) in enumerate(zip(shapes, params, strict=True)):
        if any(shape != tuple(p.shape) for shape in pair):
            raise FlagError(
                f"--resume {path!r}: its 'optimizer' is the state of another network (parameter "
                f"{i}: shape {pair[0]} there, {tuple(p.shape)} in the network)"
            )


def resumed_rules(args: Args, ckpt: dict) -> Rules:
    """The rules of a run resumed without ``--rules``: the checkpoint's (guiyang for one that
    holds none, as it was trained)."""
    try:
        return Rules.make(ckpt.get("rules"))
    except (ValueError, TypeError) as exc:
        raise FlagError(
            f"--resume {args.resume!r}: its 'rules' {ckpt.get('rules')!r} are refused ({exc}); "
            "give --rules"
        ) from None


def planned_updates(args: Args, start_update: int = 0, start_decisions: int = 0) -> int | None:
    """The update at which ``--total-decisions`` ends the run, or None (no cap: ``--time-limit``
    ends it). Without either flag the run trains ``DEFAULT_DECISIONS`` decisions. A fresh run
    trains at least one update; a run resumed at ``start_update`` with ``start_decisions``
    trained counts the whole run's decisions, in updates of its own size (which may differ
    from the checkpoint's)."""
    total = args.total_decisions or (0 if args.time_limit else DEFAULT_DECISIONS)
    if not total:
        return None
    per = args.num_envs * args.num_steps
    if not (start_update or start_decisions):
        return max(1, total // per)
    return start_update + max(0, (total - start_decisions) // per)


def plan(args: Args, start_update: int = 0, start_decisions: int = 0) -> str:
    """The run's length, printed as it starts: the decisions it trains from update
    ``start_update`` (a resumed run's, ``start_decisions`` trained) on, in whole updates (the
    decisions asked for rounded down; the default's up to one update where one is larger), or
    the minutes of its ``--time-limit``."""
    per = args.num_envs * args.num_steps
    size = f"of {args.num_envs} games x {args.num_steps} steps ({per:,} decisions each)"
    num_updates = planned_updates(args, start_update, start_decisions)
    if num_updates is None:
        return f"training for {args.time_limit:g} minutes, in updates {size}"
    count = num_updates - start_update
    text = f"training {count * per:,} decisions: {count} update{'s' * (count > 1)} {size}"
    if start_update:
        text += f", continuing from update {start_update}"
    asked = args.total_decisions or DEFAULT_DECISIONS
    if asked % per:
        what = "asked for" if args.total_decisions else "of the default"
        rounded = "up to one update" if asked < per else "down to whole updates"
        text += f"; the {asked:,} decisions {what}, rounded {rounded}"
    if args.time_limit:
        text += f"; fewer if --time-limit {args.time_limit:g} minutes end it first"
    return text


def progress(update: int, num_updates: int | None, elapsed: float, time_limit: float) -> float:
    """The share of the run done before update ``update`` (counted from 0): the share of the
    planned updates, or of the ``time_limit`` minutes elapsed (``elapsed`` seconds), whichever
    is larger, so that the learning rate reaches 0 where the run stops."""
    done = update / num_updates if num_updates else 0.0
    if time_limit:
        done = max(done, elapsed / (60 * time_limit))
    return min(done, 1.0)


def input_version(args: Args) -> str:
    """The input the flags ask the network to read: v1, v2 (``--features``) or v2+rule."""
    return VERSION_RULE if args.rule_hint else VERSION_V2 if args.features else VERSION


def demonstrations(net: PolicyNet, args: Args, rules: Rules) -> Demonstrations:
    """``args.bc_agent``'s self-play, observed as ``net`` reads it, but for ``rule``'s advice
    to a ``--rule-hint`` network: zeros unless ``--bc-sees-hint``."""
    agent = make_agent(args.bc_agent, seed=args.seed, rules=rules)
    env = SelfPlayVecEnv(args.num_envs, rules, seed=args.seed + 1, reward_scale=args.reward_scale)
    steps = max(1, args.bc_decisions // args.num_envs)
    demos = collect_demonstrations(agent, env, steps, seed=args.seed + 1)
    blank = net.obs_version == VERSION_RULE and not args.bc_sees_hint
    read = NetInput(VERSION_V2 if blank else net.obs_version, rules)
    seen = np.stack([read(o, m) for o, m in zip(demos.obs, demos.mask, strict=True)])
    if blank:  # the advice's blocks, left at zero
        zeros = np.zeros((*seen.shape[:2], net.in_size - HINT_START), np.float32)
        seen = np.concatenate([seen, zeros], -1)
    return demos._replace(obs=seen)


def clone_agent(net: PolicyNet, args: Args, demos: Demonstrations) -> dict:
    """Warm start: fit ``net`` to the ``demos`` of ``args.bc_agent`` (:func:`behaviour_clone`);
    a ``--rule-hint`` network fitted without the advice in view then starts with zero weights
    on it."""
    fit = behaviour_clone(
        net,
        demos,
        epochs=args.bc_epochs,
        vf_coef=args.vf_coef,
        seed=args.seed,
        smoothing=args.bc_smoothing,
    )
    if net.obs_version == VERSION_RULE and not args.bc_sees_hint:
        with torch.no_grad():
            net.body[0].weight[:, HINT_START:] = 0.0
    print(
        f"behaviour cloning of {args.bc_agent}: {fit['decisions']:,} decisions; held-out games "
        f"({fit['held_out_decisions']:,} decisions): cross-entropy "
        f"{fit['held_out_loss_before']:.3f} -> {fit['held_out_loss']:.3f}, "
        f"accuracy {fit['held_out_accuracy']:.3f}, entropy {fit['held_out_entropy']:.3f}",
        flush=True,
    )
    return fit


class Rollout:
    """The ``[rows, B]`` buffers of one rollout of :class:`SelfPlayVecEnv`: ``carried`` rows
    taken over from the previous rollout (:meth:`next`), then the new steps. Row ``k`` holds
    the decisions of step id ``first_id + k``."""

    FIELDS = (
        "obs",
        "mask",
        "act",
        "logp",
        "values",
        "seats",
        "phi",
        "learner",
        "rewards",
        "dones",
        "finished",
        "trained",
        "hidden",
    )

    def __init__(
        self, T: int, B: int, first_id: int = 0, hidden_size: int = 0, obs_size: int = OBS_SIZE
    ):
        self.first_id = first_id
        self.carried = 0
        self.obs = torch.zeros((T, B, obs_size))  # what the network read (v1, v2 or v2+rule)
        self.hidden = torch.zeros((T, B, hidden_size))  # for an oracle critic (else size 0)
        self.mask = torch.zeros((T, B, NUM_ACTIONS), dtype=torch.bool)
        self.act = torch.zeros((T, B), dtype=torch.long)
        self.logp = torch.zeros((T, B))
        self.values = np.zeros((T, B), dtype=np.float32)
        self.seats = np.zeros((T, B), dtype=np.int64)
        self.phi = np.zeros((T, B), dtype=np.float32)  # shaping potential of each decision
        self.learner = np.zeros((T, B), dtype=bool)  # taken by the learner (not a pool member)
        self.rewards = np.zeros((T, B), dtype=np.float32)
        self.dones = np.zeros((T, B), dtype=bool)
        self.finished = np.zeros((T, B), dtype=bool)
        self.trained = np.zeros((T, B), dtype=bool)  # finished and trained on before

    def next(self, T: int) -> Rollout:
        """The next rollout's buffers (``T`` new steps), which start with this rollout's rows
        from its earliest unfinished decision on (at most ``T`` of them): a decision still
        open at the boundary (a seat's last of a hand, settlement included) is finished and
        trained on there, instead of dropped; the rows finished here are marked ``trained``."""
        rows, B = self.seats.shape
        open_rows = np.flatnonzero((~self.finished).any(1))
        c = min(rows - int(open_rows[0]), T) if open_rows.size else 0
        hid, width = self.hidden.shape[-1], self.obs.shape[-1]
        out = Rollout(c + T, B, self.first_id + rows - c, hid, width)
        out.carried = c
        if c:
            for name in self.FIELDS:
                getattr(out, name)[:c] = getattr(self, name)[rows - c :]
            out.trained[:c] = self.finished[rows - c :]
        return out

    def fill(self, transitions) -> None:
        """Record a step's finished decisions (the environment's ``Transitions``)."""
        transitions.fill(self.rewards, self.dones, self.finished, start=self.first_id)


def sample(net: PolicyNet, obs: torch.Tensor, mask: torch.Tensor, device: torch.device):
    """``(actions, log-probabilities, values)`` of ``net``'s masked policy on a batch of
    observations (CPU tensors, values as numpy); call under ``torch.inference_mode``."""
    logits, value = net(obs.to(device), mask.to(device))
    action = torch.multinomial(torch.softmax(logits, -1), 1)  # not exp(log_softmax): see learner
    logp = torch.log_softmax(logits, -1).gather(-1, action).squeeze(-1)
    return action.squeeze(-1).cpu(), logp.cpu(), value.cpu().numpy()


def lone_seats(rng: np.random.Generator, games: int, n: int, members: int) -> np.ndarray:
    """int ``[games, n]``: who plays each seat of ``games`` new hands with one learner seat a
    game: -1 (the learner) in one seat drawn uniformly, a member ``0..members-1`` drawn
    uniformly in each other seat."""
    learner = rng.integers(n, size=games)
    who = rng.integers(members, size=(games, n))
    return np.where(np.arange(n) == learner[:, None], -1, who)


def learner_input(
    read: NetInput, obs: np.ndarray, masks: np.ndarray, rows: np.ndarray | None, size: int
) -> np.ndarray:
    """What the network reads (``read``) of every row of a step, or with ``rows`` of those
    alone, zeros elsewhere: with one learner seat a game (:class:`Trainer`'s ``lone_learner``)
    the other rows are never trained on, and their input (``rule``'s advice under
    ``--rule-hint``) is not worked out."""
    if rows is None:
        return read(obs, masks)
    x = np.zeros((len(obs), size), np.float32)
    if rows.size:
        x[rows] = read(obs[rows], masks[rows])
    return x


def fixed_actions(
    member,
    read: NetInput,
    x: torch.Tensor | None,
    obs: np.ndarray,
    mask: np.ndarray,
    state: State | None = None,
    games: np.ndarray | None = None,
):
    """A fixed pool agent's actions on its rows, all of them in one call (one forward pass of a
    policy network): a ``rule`` seat under ``--rule-hint`` plays the ``rule_choice`` block the
    network input ``x`` already carries (the same rules, and ``rule`` is deterministic), so its
    advice is not worked out twice; any other agent acts (so does ``rule`` where ``x`` is None),
    given the public view of ``games`` of the engine's ``state`` where it needs one
    (``search:``, :func:`agents.base.decide`)."""
    ruled = read.rule is not None and isinstance(member, RuleAgent) and member.rules == read.rules
    if x is not None and ruled:
        return x[:, HINT_START : HINT_START + NUM_ACTIONS].argmax(1)
    if state is None:
        return torch.from_numpy(member.act(obs, mask))
    return torch.from_numpy(decide(member, obs, mask, state, games))


def rollout_advantages(r: Rollout, args: Args) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(advantages, returns, valid)`` of a rollout: shaping (``--shaping``, ``--kong-shaping``:
    :func:`~training.learner.potential`), then per-seat GAE
    with ``--gamma`` and ``--gae-lambda``; ``valid`` marks the learner's finished decisions that
    were not trained on in the previous rollout."""
    shaped = r.rewards
    if args.shaping or args.kong_shaping:
        shaped = shaped_rewards(r.seats, r.phi, r.rewards, r.dones, r.finished, args.gamma)
    adv, ret, valid = seat_gae(
        r.seats, r.values, shaped, r.dones, r.finished, args.gamma, args.gae_lambda
    )
    return adv, ret, valid & r.learner & ~r.trained


def learner_batch(r: Rollout, adv: np.ndarray, ret: np.ndarray, valid: np.ndarray) -> Batch:
    """The valid decisions of a rollout, flattened for :func:`~training.learner.ppo_update`."""
    idx = np.flatnonzero(valid.reshape(-1))
    t = torch.from_numpy(idx)
    return Batch(
        obs=r.obs.reshape(-1, r.obs.shape[-1])[t],
        mask=r.mask.reshape(-1, NUM_ACTIONS)[t],
        act=r.act.reshape(-1)[t],
        logp=r.logp.reshape(-1)[t],
        adv=torch.from_numpy(adv.reshape(-1)[idx]),
        ret=torch.from_numpy(ret.reshape(-1)[idx]),
        value=torch.from_numpy(r.values.reshape(-1)[idx]),
        hidden=r.hidden.reshape(-1, r.hidden.shape[-1])[t] if r.hidden.shape[-1] else None,
    )


def evaluate(net: PolicyNet, args: Args, rules: Rules, seed: int) -> dict:
    """Arena results of the policy against each opponent, played by sampling (``ppo_mean``,
    ``margin`` and their 95% intervals) and by argmax (``argmax_mean``, ``argmax_margin``), on
    the same deals: {opponent: {...}}."""
    out: dict[str, dict] = {}
    for play, greedy in (("", False), ("argmax_", True)):
        agent = PPOAgent(net, seed=seed, greedy=greedy, rules=rules)
        results = against_each(agent, "ppo", args.eval_opponents, args.eval_deals, seed, rules)
        for opp, res in results.items():
            ppo = res.summary()["agents"]["ppo"]
            margin, ci = res.margin("ppo", opp)
            mean = "ppo_" if play == "" else play
            out.setdefault(opp, {}).update(
                {
                    f"{mean}mean": ppo["mean"],
                    f"{mean}ci95": ppo["ci95"],
                    f"{play}margin": margin,
                    f"{play}margin_ci95": ci,
                }
            )
    return out


def train_message(stats: dict) -> str:
    """One line of an update's training statistics (:func:`training.learner.ppo_update`'s):
    the policy and value losses, the entropy and the explained variance of the values."""
    return (
        f"policy loss {stats['loss/policy']:+.4f}, value loss {stats['loss/value']:.4f}, "
        f"entropy {stats['loss/entropy']:.3f}, explained variance "
        f"{stats['loss/explained_variance']:+.3f}"
    )


def say(bar, text: str) -> None:
    """Print ``text`` on a line of its own above the progress bar ``bar`` (or None): on a
    terminal tqdm clears the bar, prints and draws it again; in a file (a log) the bar's line
    is ended first, so that the text never follows the bar on its line."""
    if bar is None:
        print(text, flush=True)
    elif bar.fp.isatty():
        bar.write(text)
    else:
        bar.fp.write("\n")
        bar.fp.flush()
        print(text, flush=True)


def eval_message(ev: dict) -> str:
    """One line of an evaluation: each opponent's margin by sampling and by argmax."""
    return "  ".join(
        f"vs {k}: margin {v['margin']:+.2f} {interval_text(v['margin_ci95'], 2)}, argmax "
        f"{v['argmax_margin']:+.2f} {interval_text(v['argmax_margin_ci95'], 2)}"
        for k, v in ev.items()
    )


class PhaseClock:
    """Wall and CPU seconds (this process) spent in each phase of training: ``lap(name)``
    charges the time since the previous lap to ``name``; :meth:`start` (of a rollout) charges
    it to ``other`` (logging, checkpoints, evaluations, the rollout's new buffers)."""

    def __init__(self):
        self.wall = {"env": 0.0, "inference": 0.0, "update": 0.0, "other": 0.0}
        self.cpu = dict(self.wall)
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def start(self) -> None:
        self.lap("other")

    def lap(self, name: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.wall[name] += wall - self._wall
        self.cpu[name] += cpu - self._cpu
        self._wall, self._cpu = wall, cpu

    def phases(self) -> dict[str, dict[str, float]]:
        return {k: {"wall": self.wall[k], "cpu": self.cpu[k]} for k in self.wall}


def train(args: Args) -> dict:
    """Run the training; returns the evaluations, the per-update statistics and timing (``{}``
    in the processes of a data-parallel run but the first): ``decisions`` is the running total,
    ``resumed_decisions`` the resumed checkpoint's part of it (0 on a fresh run), ``seconds``
    this run's wall time.

    Every flag is checked first (:func:`check_args`): nothing is written on a bad one; then the
    run's folder is prepared (:func:`prepare_out_dir`). A data-parallel run (``--processes``,
    ``--nnodes`` or torchrun: :func:`training.distributed.launch`) trains in
    :func:`training.distributed.data_parallel`, each process running :data:`JOB`."""
    place = launch(args)
    if place.size > 1:
        return data_parallel(args, place, JOB)
    rules, resumed, device = check_args(args)
    with prepare_out_dir(args, resumed):
        return run(args, rules, resumed, device)


def prepare_out_dir(args: Args, resumed) -> FolderLock:
    """Lock ``--out-dir`` for this run (:func:`training.cli.lock_out_dir`; returned, held until
    closed) and check again that it holds no run, as one may have started since
    :func:`check_args`; then ``--force`` deletes the earlier run in it
    (:func:`replaced_files`), and a run resumed in its checkpoint's own folder drops the rows of
    ``metrics.jsonl`` past the checkpoint's update (:func:`training.cli.drop_rows_after`), which
    it logs again, and logs the checkpoint's own row where a stop during its evaluation lost
    it (:func:`restore_row`)."""
    lock = lock_out_dir(args.out_dir)
    try:
        found = replaced_files(args, resumed[1] if resumed else {})
        if args.force:
            remove_paths(found)
        if resumed and Path(args.resume).resolve().parent == Path(args.out_dir).resolve():
            ckpt = resumed[1]
            update = ckpt.get("update", 0)
            metrics = Path(args.out_dir) / "metrics.jsonl"
            dropped = drop_rows_after(metrics, "update", update)
            if dropped:
                print(
                    f"metrics.jsonl: dropped {dropped} row(s) past update {update}, which "
                    f"--resume {args.resume!r} never reached (the run was stopped before saving "
                    "them); the resumed run logs those updates again"
                )
            restore_row(metrics, ckpt)
    except BaseException:
        lock.close()
        raise
    return lock


def restore_row(metrics: Path, ckpt: dict) -> None:
    """Append the checkpoint's own row (saved in it before the update's evaluation) to
    ``metrics`` where the log has none of its update: the run was stopped during that
    evaluation, after the checkpoint and before the row."""
    row = ckpt.get("row")
    if not isinstance(row, dict) or not is_plain_int(row.get("update")):
        return
    if row["update"] in logged(metrics, "update"):
        return
    append_text_atomic(metrics, json_text(row) + "\n")
    print(
        f"metrics.jsonl: logged update {row['update']} from its checkpoint (the run was stopped "
        "during its evaluation, before its row; the row has no evaluation)"
    )


@dataclass(frozen=True)
class Trainer:
    """What a trainer built on :func:`run`'s loop sets (:func:`self_play` is this module's;
    ``training.best_response`` is another): ``module`` is the one whose ``python -m`` reruns a
    stage (the checkpoints' ``stages``); ``fixed`` the agent specs that join the opponents for
    good; with ``lone_learner`` each hand has exactly one learner seat, drawn at random, and
    the fixed agents play every other seat (without it each seat of a hand is a pool member
    with chance ``--pool-prob``); ``evaluate(net, rules, seed)`` evaluates the network
    (``{opponent: margins}``, as :func:`evaluate`), or is None for no evaluation; ``initial``
    is the network a fresh run starts from (None: a new one of ``--hidden`` and the input the
    flags ask for)."""

    module: str
    fixed: tuple[str, ...] = ()
    lone_learner: bool = False
    evaluate: Callable[[PolicyNet, Rules, int], dict] | None = None
    initial: PolicyNet | None = None


def self_play(args: Args) -> Trainer:
    """This module's trainer: ``--pool-agents`` as the fixed opponents, evaluated against
    ``--eval-opponents`` (none: no evaluation)."""

    def against_opponents(net: PolicyNet, rules: Rules, seed: int) -> dict:
        return evaluate(net, args, rules, seed)

    evaluating = bool(agent_specs(args.eval_opponents))
    fixed = tuple(agent_specs(args.pool_agents))
    return Trainer(MODULE, fixed, evaluate=against_opponents if evaluating else None)


def run(
    args: Args,
    rules: Rules,
    resumed,
    device: torch.device,
    group: ProcessGroup | None = None,
    trainer: Trainer | None = None,
) -> dict:
    """The training loop of one process (of ``group``'s, when given: the first one evaluates,
    logs, saves and returns the results of :func:`train`; the others return ``{}``), of
    ``trainer`` (default :func:`self_play`)."""
    trainer = trainer or self_play(args)
    rank, size = (group.rank, group.size) if group else (0, 1)
    lead = rank == 0
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)  # the same initial network in every process
    seed = rank_seed(args.seed, rank)
    rng = np.random.default_rng(seed)
    out_dir = Path(args.out_dir)
    if lead:
        out_dir.mkdir(parents=True, exist_ok=True)
    B = args.num_envs // size
    env = SelfPlayVecEnv(B, rules, seed=seed, reward_scale=args.reward_scale)
    n, T = rules.num_players, args.num_steps
    if resumed:
        net, ckpt = resumed
    else:
        net, ckpt = trainer.initial, {}
        if net is None:
            net = PolicyNet(args.hidden, input_version(args))
    read = NetInput(net.obs_version, rules)
    net.to(device).train()
    opt = torch.optim.Adam(net.parameters(), lr=args.lr, eps=1e-5)
    critic = None
    if args.oracle_critic:
        critic = oracle_critic(net, args.oracle_draws)
        if "critic" in ckpt:
            critic.load_state_dict(ckpt["critic"])
        critic.to(device).train()
        opt.add_param_group({"params": list(critic.parameters())})
    hidden_size = oracle_hidden_size(args.oracle_draws) if critic is not None else 0
    if "optimizer" in ckpt:
        if len(ckpt["optimizer"]["param_groups"]) == len(opt.param_groups):
            opt.load_state_dict(ckpt["optimizer"])
            for param_group in opt.param_groups:  # the state's own is where it stopped
                param_group["lr"] = args.lr
        elif lead:  # the oracle critic switched on: its parameters are another group
            print("optimizer state not resumed: the checkpoint was trained without a critic")
    start_update, decisions = ckpt.get("update", 0), ckpt.get("decisions", 0)
    resumed_decisions = decisions
    resumed_seconds = resumed_training_seconds(ckpt)
    if lead:
        print(plan(args, start_update, decisions), flush=True)
    run_start = time.perf_counter()
    bf16 = bf16_from_flag(args.bf16, device)
    stage = {
        "command": launch_command(args, trainer.module),
        "processes": size,
        "commit": source_commit(),
        "preset": rules.preset,
        "rules": rules.to_record(),
        "bf16": bf16,
        **({"resumed_from": resumed_from(args.resume, ckpt)} if resumed else {}),
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    clone = demos = None
    if args.bc_agent and not resumed:
        if lead:
            print(f"cloning {args.bc_agent} on {args.bc_decisions:,} decisions", flush=True)
            demos = demonstrations(net, args, rules)
            fit = clone_agent(net, args, demos)
            stage["bc_held_out_accuracy"] = fit["held_out_accuracy"]
            stage["bc_held_out_entropy"] = fit["held_out_entropy"]
        if group:
            group.broadcast_parameters(net)
    elif args.bc_coef and lead:  # resumed: the demonstrations again, without refitting
        demos = demonstrations(net, args, rules)
    elif args.bc_agent and lead:
        print(f"--bc-agent {args.bc_agent}: not cloned again, the run is resumed", flush=True)
    if args.bc_coef and lead:
        rows = max(1, args.num_envs * args.num_steps // args.num_minibatches // 4)
        clone = CloneLoss(demos, args.bc_coef, rows, np.random.default_rng([args.seed, 7]))
    demos = None  # only the clone term's tensors keep them
    magnet = None
    if args.magnet_coef:  # after the cloning, which a clone anchor copies
        magnet = Magnet(magnet_anchor(args, net, ckpt).to(device), args.magnet_coef)
    if rank:
        torch.manual_seed(seed)  # its own sampling
    num_updates = planned_updates(args, start_update, resumed_decisions)
    writer = None
    if args.tensorboard and lead:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(str(out_dir / "tb"))
    metrics = out_dir / "metrics.jsonl"  # none in a fresh run (replaced_files); --resume appends
    fixed = [make_agent(s, seed=seed + 3, rules=rules) for s in trainer.fixed]
    pool: list[PolicyNet] = []  # past snapshots of the network
    pool_seat = np.full((B, n), -1)  # member of fixed + pool playing each seat, -1: the learner

    def draw_pool(games):
        if trainer.lone_learner:
            pool_seat[games] = lone_seats(rng, games.size, n, len(fixed))
        elif fixed or pool:
            pick = rng.random((games.size, n)) < args.pool_prob
            who = rng.integers(len(fixed) + len(pool), size=(games.size, n))
            pool_seat[games] = np.where(pick, who, -1)

    def report_eval(label: str, stats: dict | None = None) -> dict:
        """Evaluate the network now; print the result (after an update, its losses, entropy
        and explained variance first) and log it to TensorBoard."""
        net.eval()
        ev = trainer.evaluate(net, rules, args.seed + 1000)
        net.train()
        if stats is not None:
            say(bar, f"update {label} decisions {decisions:,}: {train_message(stats)}")
        say(bar, f"update {label} decisions {decisions:,}: {eval_message(ev)}")
        if writer:
            for k, v in ev.items():
                writer.add_scalar(f"eval/margin_vs_{k}", v["margin"], decisions)
                writer.add_scalar(f"eval/argmax_margin_vs_{k}", v["argmax_margin"], decisions)
        return ev

    obs, masks, seats = env.reset(seed=seed)
    draw_pool(np.arange(B))
    bar = None
    history, updates = [], []
    if args.eval_every and trainer.evaluate and not resumed and lead:  # where the curve starts
        ev = report_eval(str(start_update))
        history.append(
            {
                "update": start_update,
                "decisions": decisions,
                "seconds": 0.0,
                "total_seconds": resumed_seconds,
                "eval": ev,
            }
        )
    clock = PhaseClock()
    t_start = time.perf_counter()
    r = None
    if args.progress and lead:
        from tqdm import tqdm

        bar = tqdm(total=num_updates, initial=start_update, desc="ppo", unit="update")
    update = start_update
    while num_updates is None or update < num_updates:
        if args.anneal_lr:
            elapsed = torch.tensor([time.perf_counter() - t_start], dtype=torch.float64)
            elapsed = group.broadcast(elapsed) if group else elapsed  # the same lr everywhere
            done = progress(update, num_updates, float(elapsed[0]), args.time_limit)
            for param_group in opt.param_groups:
                param_group["lr"] = args.lr * (1 - done)
        r = Rollout(T, B, env.step_id, hidden_size, net.in_size) if r is None else r.next(T)
        clock.start()
        for t in range(r.carried, r.carried + T):
            m = torch.from_numpy(masks)
            player = pool_seat[np.arange(B), seats]  # pool member to act, -1: the learner
            mine = np.flatnonzero(player < 0) if trainer.lone_learner else None
            o = torch.from_numpy(learner_input(read, obs, masks, mine, net.in_size))
            with torch.inference_mode():
                if mine is None:
                    action, logp, value = sample(net, o, m, device)
                else:  # the network runs on the learner's rows alone
                    action, logp = torch.zeros(B, dtype=torch.long), torch.zeros(B)
                    value = np.zeros(B, np.float32)
                    if mine.size:
                        action[mine], logp[mine], value[mine] = sample(
                            net, o[mine], m[mine], device
                        )
                if critic is not None:
                    h = torch.from_numpy(env.hidden(args.oracle_draws))
                    r.hidden[t] = h
                    value = critic(o.to(device), h.to(device)).cpu().numpy()
                for k, member in enumerate(fixed + pool):
                    rows = np.flatnonzero(player == k)
                    if rows.size and k < len(fixed):
                        x = o[rows] if mine is None else None  # the learner's input, if read
                        action[rows] = fixed_actions(
                            member, read, x, obs[rows], masks[rows], env.game.state, rows
                        )
                    elif rows.size:
                        action[rows] = sample(member, o[rows], m[rows], device)[0]
            r.obs[t], r.mask[t], r.act[t], r.logp[t] = o, m, action, logp
            r.values[t] = value
            r.seats[t] = seats
            r.phi[t] = potential(obs, args.shaping, args.kong_shaping)
            r.learner[t] = player < 0
            clock.lap("inference")
            obs, masks, seats, _, dones, infos = env.step(action.numpy())
            clock.lap("env")
            r.fill(infos["transitions"])
            ended = np.flatnonzero(dones)
            if ended.size:
                draw_pool(ended)
            clock.lap("inference")
        decisions += args.num_envs * T
        adv, ret, valid = rollout_advantages(r, args)
        stats = ppo_update(
            net,
            opt,
            learner_batch(r, adv, ret, valid),
            epochs=args.update_epochs,
            num_minibatches=args.num_minibatches,
            clip_coef=args.clip_coef,
            ent_coef=args.ent_coef,
            vf_coef=args.vf_coef,
            max_grad_norm=args.max_grad_norm,
            rng=rng,
            bf16=bf16,
            critic=critic,
            group=group,
            clone=clone,
            magnet=magnet,
        )
        if args.magnet == "lagged" and (update + 1) % args.magnet_every == 0:
            magnet.anchor.load_state_dict(net.state_dict())
        clock.lap("update")
        hands_reward = r.rewards[r.dones]
        counts = torch.tensor(
            [valid.sum(), np.abs(hands_reward).sum(), hands_reward.size], dtype=torch.float64
        )
        trained, abs_reward, hands = (group.sum(counts) if group else counts).tolist()
        stats["train/abs_hand_reward"] = abs_reward / hands if hands else 0.0
        stats["train/trained_decisions"] = int(trained)
        stats["train/env_time_share"] = clock.wall["env"] / (time.perf_counter() - t_start)
        stats["train/lr"] = opt.param_groups[0]["lr"]
        if writer:
            for k, v in stats.items():
                writer.add_scalar(k, v, decisions)
        if args.pool_size and (update + 1) % args.pool_every == 0:
            pool.append(copy.deepcopy(net).eval())  # the network's own width, also on resume
            del pool[: -args.pool_size]
        out_of_time = bool(args.time_limit) and time.perf_counter() - t_start > 60 * args.time_limit
        if group:  # the first process's clock ends the run for all
            out_of_time = bool(group.broadcast(torch.tensor([out_of_time]))[0])
        last = update + 1 == num_updates or out_of_time
        saving = (args.save_every and (update + 1) % args.save_every == 0) or last
        if group and saving:
            group.check_same_parameters(net)
            if critic is not None:
                group.check_same_parameters(critic)
        if not lead:
            if last:
                break
            update += 1
            continue
        seconds = time.perf_counter() - t_start
        row = {
            "update": update + 1,
            "decisions": decisions,
            "seconds": seconds,
            "total_seconds": resumed_seconds + seconds,
            "train": stats,
        }
        updates.append(row)
        if saving:  # before the evaluation (minutes), with the row a stop there would lose
            extra = {
                "update": update + 1,
                "decisions": decisions,
                "args": dataclasses.asdict(args),
                "rules": rules.to_record(),
                "optimizer": opt.state_dict(),
                "row": dict(row),  # metrics.jsonl's row without its evaluation (restore_row)
                **({"critic": critic.state_dict()} if critic is not None else {}),
                **({"magnet": magnet.anchor.state_dict()} if args.magnet in MAGNET_ANCHORS else {}),
                "stages": [
                    *ckpt.get("stages", []),
                    {
                        **stage,
                        "decisions": decisions - resumed_decisions,
                        "seconds": round(time.perf_counter() - run_start, 1),
                    },
                ],
            }
            save_checkpoint(out_dir / f"update_{update + 1}.pt", net, **extra)
            copy_atomic(out_dir / f"update_{update + 1}.pt", out_dir / "latest.pt")
        if trainer.evaluate and ((args.eval_every and (update + 1) % args.eval_every == 0) or last):
            of = f"/{num_updates}" if num_updates else ""
            row["eval"] = report_eval(f"{update + 1}{of}", stats)
            history.append(row)
        broken = sorted(k for k, v in stats.items() if not math.isfinite(v))
        if broken:  # metrics.jsonl holds them as null (standard JSON has no NaN)
            print(
                f"warning: update {update + 1}: not finite: {', '.join(broken)} (the training "
                "has diverged; metrics.jsonl writes them as null)",
                file=sys.stderr,
                flush=True,
            )
        append_text_atomic(metrics, json_text(row) + "\n")
        if bar is not None:
            bar.update(1)
        if last:
            break
        update += 1
    phases = clock.phases()
    if group:  # every process's CPU seconds, so that decisions per CPU second stay honest
        names = sorted(phases)
        cpu = group.sum(torch.tensor([phases[k]["cpu"] for k in names], dtype=torch.float64))
        for k, c in zip(names, cpu.tolist(), strict=True):
            phases[k]["cpu"] = c
    if not lead:
        return {}
    if bar is not None:
        bar.close()
    if writer:
        writer.close()
    total = time.perf_counter() - t_start
    so_far = f" ({decisions:,} with the {resumed_decisions:,} resumed)" if resumed_decisions else ""
    print(
        f"trained {decisions - resumed_decisions:,} decisions in {total:.0f} s{so_far}; "
        f"environment share of wall time {clock.wall['env'] / total:.0%}"
    )
    return {
        "history": history,
        "updates": updates,
        "seconds": total,
        "env_seconds": clock.wall["env"],
        "phases": phases,
        "decisions": decisions,
        "resumed_decisions": resumed_decisions,
        "checkpoint": str(out_dir / "latest.pt"),
    }


def train_share(args: Args, checked, group) -> dict:
    """A data-parallel process's training, once every process has joined ``group``: process 0
    prepares ``--out-dir`` (:func:`prepare_out_dir`), then each trains its share (:func:`run`)
    with what :func:`check_args` returned (``checked``)."""
    rules, resumed, device = checked
    group = ProcessGroup(group)
    if group.rank:
        return run(args, rules, resumed, device, group)
    with prepare_out_dir(args, resumed):
        return run(args, rules, resumed, device, group)


MODULE = "training.ppo_selfplay"
"""The module the commands run (``python -m``, torchrun's ``-m``)."""
PROG = f"python -m {MODULE}"
"""The command in usage and error lines."""
JOB = Job(PROG, check_args, train_share, files={"resume": "checkpoint"})
"""What each process of a data-parallel run does (:func:`training.distributed.data_parallel`):
checks its flags, then trains its share; every process needs the same ``--resume``."""


def saved_message(args: Args, command: str = PROG) -> str:
    """What a run stopped by Ctrl-C left in ``--out-dir`` and the command that resumes it from
    its newest checkpoint (``latest.pt``, or the ``update_<k>.pt`` a stop kept it from copying
    there), or, with none saved, starts it again (:func:`training.cli.start_again`); ``command``
    is the trainer's (a best response resumes with its own)."""
    out = Path(args.out_dir)
    saved = [p for p in run_files(out) if checkpoint_update(p) is not None]
    if not saved:
        return start_again(command, args, run_files(out))
    newest = max(saved, key=checkpoint_update)
    ckpt = load_weights_only(newest, str(newest))
    if (out / "latest.pt").is_file() and load_weights_only(out / "latest.pt", "latest.pt").get(
        "update"
    ) == ckpt.get("update"):
        newest = out / "latest.pt"
    again = command_line(command, dataclasses.replace(args, resume=str(newest), force=False))
    return (
        f"{newest} holds update {ckpt.get('update', 0)} ({ckpt.get('decisions', 0):,} "
        f"decisions) and metrics.jsonl its rows; resume with: {again}"
    )


@exits_2_when_out_of_memory("python -m training.ppo_selfplay")
def main(argv: list[str] | None = None) -> int:
    args = parse_args(Args, argv, __doc__, prog(MODULE), recipes=RECIPES)
    return run_main(train, args, PROG, saved_message)


if __name__ == "__main__":
    raise SystemExit(main())
