"""Self-play PPO over the batched engine: ``python -m training.ppo_selfplay [--flags]``.

One network plays every seat of ``num_envs`` games of :class:`~zhuoji_env.envs.SelfPlayVecEnv`.
Illegal actions are masked out of the logits before the softmax, so none is ever sampled. Each
seat's decisions form their own trajectory: a hand's settlement is credited to the seat's own
last decision of the hand (the vector env's transitions), and GAE runs along each (game, seat)
trajectory (:func:`~zhuoji_env.envs.vector.seat_gae`). Optionally a share of the seats is
played by frozen past checkpoints (``--pool-size``); their decisions are not trained on.

Every ``--eval-every`` updates the policy plays the arena (duplicate deals, every seating)
against ``rule`` and ``random``; the mean score per hand of each match-up is logged, with its
95% interval, to the console, to TensorBoard (``--tensorboard``) and to ``metrics.jsonl`` in the
run directory, beside the checkpoints (``latest.pt``, ``update_<k>.pt``). ``--resume CKPT``
continues a run. The script prints the share of wall time spent inside the environment.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from agents import make_agent
from agents.arena import run_arena
from training.cli import parse_args, rules_from_flag
from training.policy import PolicyNet, PPOAgent, load_checkpoint, save_checkpoint
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.envs.vector import SelfPlayVecEnv, seat_gae
from zhuoji_env.observation import OBS_SIZE, block
from zhuoji_env.rules import Rules


@dataclass
class Args:
    """Arguments of the self-play PPO run (every field is a command-line flag)."""

    rules: str = "guiyang"
    """preset name, or a JSON rules object {"preset": ..., "overrides": {...}}"""
    total_decisions: int = 2_000_000
    """decisions to train on (all seats together)"""
    num_envs: int = 256
    """games played in lock-step"""
    num_steps: int = 128
    """steps of every game per rollout"""
    lr: float = 3e-4
    anneal_lr: bool = True
    gamma: float = 1.0
    gae_lambda: float = 0.95
    update_epochs: int = 4
    num_minibatches: int = 8
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    reward_scale: float = 0.1
    """rewards are hand scores times this"""
    shaping: float = 0.05
    """potential-based shaping: potential -shaping x shanten of the seat's hand (0: off)"""
    hidden: int = 256
    seed: int = 1
    torch_threads: int = 1
    pool_size: int = 0
    """past checkpoints kept as opponents (0: pure self-play)"""
    pool_every: int = 10
    """updates between snapshots into the pool"""
    pool_prob: float = 0.25
    """chance that a seat of a new hand is played by a pool member"""
    time_limit: float = 0.0
    """stop training after this many minutes (0: no limit), then save and evaluate"""
    bc_agent: str = ""
    """agent spec to imitate before PPO (behaviour cloning warm start; '' for none)"""
    bc_decisions: int = 200_000
    """decisions of the imitated agent's self-play to clone"""
    bc_epochs: int = 3
    eval_every: int = 20
    """updates between arena evaluations (0: only at the end)"""
    eval_deals: int = 200
    eval_opponents: str = "rule,random"
    out_dir: str = "runs/ppo"
    save_every: int = 20
    resume: str = ""
    """checkpoint to continue from"""
    tensorboard: bool = False
    progress: bool = True


def shaped_rewards(seats, phi, rewards, dones, finished, gamma: float) -> np.ndarray:
    """Add ``gamma * phi(next) - phi(this)`` to every finished decision of a ``[T, B]`` rollout.

    The next state of a decision is the same seat's next decision in the game, and the
    potential after a hand's last decision is 0, so the shaping sums to ``-phi(first)`` over a
    hand whatever the policy does (potential-based shaping leaves the optimal policy alone)."""
    T, B = seats.shape
    rows = np.arange(B)
    next_phi = np.zeros((B, int(seats.max()) + 1), dtype=np.float32)
    out = rewards.copy()
    for t in range(T - 1, -1, -1):
        s = seats[t]
        nxt = np.where(dones[t], 0.0, next_phi[rows, s])
        out[t] = np.where(finished[t], rewards[t] + gamma * nxt - phi[t], rewards[t])
        next_phi[rows, s] = phi[t]
    return out


def behaviour_clone(net: PolicyNet, args: Args, rules: Rules) -> dict:
    """Fit ``net``'s policy to ``args.bc_agent`` playing every seat (cross-entropy over the
    masked logits) and its value to the final hand scores; returns the fit's accuracy."""
    agent = make_agent(args.bc_agent, seed=args.seed, rules=rules)
    env = SelfPlayVecEnv(args.num_envs, rules, seed=args.seed + 1, reward_scale=args.reward_scale)
    obs, masks, seats = env.reset(seed=args.seed + 1)
    steps = max(1, args.bc_decisions // args.num_envs)
    o_buf = np.zeros((steps, args.num_envs, OBS_SIZE), np.float32)
    m_buf = np.zeros((steps, args.num_envs, NUM_ACTIONS), bool)
    a_buf = np.zeros((steps, args.num_envs), np.int64)
    rew = np.zeros((steps, args.num_envs), np.float32)
    done = np.zeros((steps, args.num_envs), bool)
    fin = np.zeros((steps, args.num_envs), bool)
    seat_buf = np.zeros((steps, args.num_envs), np.int64)
    for t in range(steps):
        a = agent.act(obs, masks)
        o_buf[t], m_buf[t], a_buf[t], seat_buf[t] = obs, masks, a, seats
        obs, masks, seats, _, _, infos = env.step(a)
        infos["transitions"].fill(rew, done, fin, start=0)
    _, ret, valid = seat_gae(seat_buf, np.zeros_like(rew), rew, done, fin, 1.0, 1.0)
    o = torch.from_numpy(o_buf.reshape(-1, OBS_SIZE))
    m = torch.from_numpy(m_buf.reshape(-1, NUM_ACTIONS))
    a = torch.from_numpy(a_buf.reshape(-1))
    r = torch.from_numpy(ret.reshape(-1))
    v = torch.from_numpy(valid.reshape(-1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    rng = np.random.default_rng(args.seed)
    for _ in range(args.bc_epochs):
        perm = torch.from_numpy(rng.permutation(a.numel()))
        for j in perm.split(1024):
            logits, value = net(o[j], m[j])
            vl = ((value - r[j]) ** 2 * v[j]).sum() / v[j].sum().clamp(min=1)
            loss = nn.functional.cross_entropy(logits, a[j]) + args.vf_coef * vl
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        acc = (net(o[:20000], m[:20000])[0].argmax(-1) == a[:20000]).float().mean().item()
    print(f"behaviour cloning of {args.bc_agent}: {a.numel():,} decisions, accuracy {acc:.3f}",
          flush=True)
    return {"decisions": int(a.numel()), "accuracy": acc}


def evaluate(net: PolicyNet, args: Args, rules: Rules, seed: int) -> dict:
    """Arena margins of the policy against each opponent: {name: {mean, ci95, ...}}."""
    out = {}
    agent = PPOAgent(net, seed=seed)
    for opp in [o for o in args.eval_opponents.split(",") if o]:
        res = run_arena([agent, opp], args.eval_deals, seed=seed, rules=rules, progress=False,
                        labels=["ppo", opp])
        ppo = res.summary()["agents"]["ppo"]
        margin, ci = res.margin("ppo", opp)
        out[opp] = {"ppo_mean": ppo["mean"], "ppo_ci95": ppo["ci95"], "margin": margin,
                    "margin_ci95": ci}
    return out


def train(args: Args) -> dict:
    """Run the training; returns the final evaluation and timing."""
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    rules = rules_from_flag(args.rules)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = SelfPlayVecEnv(args.num_envs, rules, seed=args.seed, reward_scale=args.reward_scale)
    n, B, T = rules.num_players, args.num_envs, args.num_steps
    net, ckpt = load_checkpoint(args.resume) if args.resume else (PolicyNet(args.hidden), {})
    opt = torch.optim.Adam(net.parameters(), lr=args.lr, eps=1e-5)
    if "optimizer" in ckpt:
        opt.load_state_dict(ckpt["optimizer"])
    start_update, decisions = ckpt.get("update", 0), ckpt.get("decisions", 0)
    if args.bc_agent and not args.resume:
        behaviour_clone(net, args, rules)
    num_updates = max(1, args.total_decisions // (B * T))
    writer = None
    if args.tensorboard:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(str(out_dir / "tb"))
    metrics_file = open(out_dir / "metrics.jsonl", "a", encoding="utf-8")  # noqa: SIM115

    pool: list[PolicyNet] = []
    pool_seat = np.full((B, n), -1)  # pool member playing each seat, -1: the learner

    def draw_pool(games):
        if pool:
            pick = rng.random((games.size, n)) < args.pool_prob
            pool_seat[games] = np.where(pick, rng.integers(len(pool), size=(games.size, n)), -1)

    obs_buf = torch.zeros((T, B, OBS_SIZE))
    mask_buf = torch.zeros((T, B, NUM_ACTIONS), dtype=torch.bool)
    act_buf = torch.zeros((T, B), dtype=torch.long)
    logp_buf = torch.zeros((T, B))
    val_buf = np.zeros((T, B), dtype=np.float32)
    seat_buf = np.zeros((T, B), dtype=np.int64)
    phi_buf = np.zeros((T, B), dtype=np.float32)
    learner_buf = np.zeros((T, B), dtype=bool)

    obs, masks, seats = env.reset(seed=args.seed)
    env_time = 0.0
    t_start = time.perf_counter()
    history = []
    bar = None
    if args.progress:
        from tqdm import tqdm

        bar = tqdm(total=num_updates, initial=start_update, desc="ppo", unit="update")
    for update in range(start_update, num_updates):
        if args.anneal_lr:
            opt.param_groups[0]["lr"] = args.lr * (1 - update / num_updates)
        rew_buf = np.zeros((T, B), dtype=np.float32)
        done_buf = np.zeros((T, B), dtype=bool)
        fin_buf = np.zeros((T, B), dtype=bool)
        first_id = env.step_id
        for t in range(T):
            o = torch.from_numpy(obs)
            m = torch.from_numpy(masks)
            with torch.no_grad():
                logits, value = net(o, m)
                dist = torch.distributions.Categorical(logits=logits)
                action = dist.sample()
            player = pool_seat[np.arange(B), seats]  # pool member to act, -1: the learner
            learner = player < 0
            for k, member in enumerate(pool):
                rows = np.flatnonzero(player == k)
                if rows.size:
                    with torch.no_grad():
                        pl, _ = member(o[rows], m[rows])
                    action[rows] = torch.distributions.Categorical(logits=pl).sample()
            obs_buf[t], mask_buf[t], act_buf[t] = o, m, action
            logp_buf[t] = dist.log_prob(action)
            val_buf[t] = value.numpy()
            seat_buf[t] = seats
            phi_buf[t] = -args.shaping * (block(obs, "shanten").argmax(-1) - 1)
            learner_buf[t] = learner
            t0 = time.perf_counter()
            obs, masks, seats, _, dones, infos = env.step(action.numpy())
            env_time += time.perf_counter() - t0
            infos["transitions"].fill(rew_buf, done_buf, fin_buf, start=first_id)
            ended = np.flatnonzero(dones)
            if ended.size:
                draw_pool(ended)
        decisions += B * T
        shaped = rew_buf
        if args.shaping:
            shaped = shaped_rewards(seat_buf, phi_buf, rew_buf, done_buf, fin_buf, args.gamma)
        adv, ret, valid = seat_gae(seat_buf, val_buf, shaped, done_buf, fin_buf,
                                   args.gamma, args.gae_lambda)
        valid &= learner_buf
        idx = np.flatnonzero(valid.reshape(-1))
        b_obs = obs_buf.reshape(-1, OBS_SIZE)[idx]
        b_mask = mask_buf.reshape(-1, NUM_ACTIONS)[idx]
        b_act = act_buf.reshape(-1)[idx]
        b_logp = logp_buf.reshape(-1)[idx]
        b_adv = torch.from_numpy(adv.reshape(-1)[idx])
        b_ret = torch.from_numpy(ret.reshape(-1)[idx])
        mb = max(1, idx.size // args.num_minibatches)
        stats = {}
        for _ in range(args.update_epochs):
            perm = torch.from_numpy(rng.permutation(idx.size))
            for s in range(0, idx.size - mb + 1, mb):  # whole minibatches only
                j = perm[s : s + mb]
                logits, value = net(b_obs[j], b_mask[j])
                dist = torch.distributions.Categorical(logits=logits)
                logp = dist.log_prob(b_act[j])
                ratio = (logp - b_logp[j]).exp()
                a = b_adv[j]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip_coef,
                                                              1 + args.clip_coef)).mean()
                vloss = 0.5 * ((value - b_ret[j]) ** 2).mean()
                ent = dist.entropy().mean()
                loss = pg + args.vf_coef * vloss - args.ent_coef * ent
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(net.parameters(), args.max_grad_norm)
                opt.step()
                stats = {"loss/policy": pg.item(), "loss/value": vloss.item(),
                         "loss/entropy": ent.item(),
                         "loss/approx_kl": ((ratio - 1) - (logp - b_logp[j])).mean().item()}
        hands_reward = rew_buf[done_buf]
        stats["train/abs_hand_reward"] = float(np.abs(hands_reward).mean()) if hands_reward.size \
            else 0.0
        stats["train/env_time_share"] = env_time / (time.perf_counter() - t_start)
        if writer:
            for k, v in stats.items():
                writer.add_scalar(k, v, decisions)
        if args.pool_size and (update + 1) % args.pool_every == 0:
            pool.append(copy.deepcopy(net).eval())  # the network's own width, also on resume
            del pool[: -args.pool_size]
        out_of_time = args.time_limit and time.perf_counter() - t_start > 60 * args.time_limit
        last = update + 1 == num_updates or bool(out_of_time)
        if (args.save_every and (update + 1) % args.save_every == 0) or last:
            extra = {"update": update + 1, "decisions": decisions, "args": dataclasses.asdict(args),
                     "rules": rules.to_record(), "optimizer": opt.state_dict()}
            save_checkpoint(out_dir / f"update_{update + 1}.pt", net, **extra)
            shutil.copyfile(out_dir / f"update_{update + 1}.pt", out_dir / "latest.pt")
        if (args.eval_every and (update + 1) % args.eval_every == 0) or last:
            net.eval()
            ev = evaluate(net, args, rules, seed=args.seed + 1000)
            net.train()
            row = {"update": update + 1, "decisions": decisions,
                   "seconds": time.perf_counter() - t_start, "eval": ev}
            history.append(row)
            metrics_file.write(json.dumps(row) + "\n")
            metrics_file.flush()
            msg = "  ".join(f"vs {k}: {v['ppo_mean']:+.2f}/hand, margin {v['margin']:+.2f} "
                            f"[{v['margin_ci95'][0]:+.2f}, {v['margin_ci95'][1]:+.2f}]"
                            for k, v in ev.items())
            print(f"update {update + 1}/{num_updates} decisions {decisions:,}: {msg}", flush=True)
            if writer:
                for k, v in ev.items():
                    writer.add_scalar(f"eval/margin_vs_{k}", v["margin"], decisions)
        if bar:
            bar.update(1)
        if last:
            break
    if bar:
        bar.close()
    metrics_file.close()
    if writer:
        writer.close()
    total = time.perf_counter() - t_start
    print(f"trained {decisions:,} decisions in {total:.0f} s; environment share of wall time "
          f"{env_time / total:.0%}")
    return {"history": history, "seconds": total, "env_seconds": env_time,
            "decisions": decisions, "checkpoint": str(out_dir / "latest.pt")}


def main(argv: list[str] | None = None) -> int:
    train(parse_args(Args, argv, __doc__))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
