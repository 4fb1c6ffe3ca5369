"""The learner's maths: per-seat GAE, potential-based shaping, the PPO update, behaviour cloning.

These are the functions ``training.ppo_selfplay`` calls, kept free of the rollout loop so that
tests can run each on a hand-made batch. Rollouts are ``[T, B]`` arrays over steps and games of
:class:`~zhuoji_env.envs.SelfPlayVecEnv`: each (game, seat) is its own trajectory, and a hand's
settlement is credited to each seat's own last decision of the hand (the environment's
``Transitions``, written into the arrays with ``Transitions.fill``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from agents.base import Agent, decide
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.engine.game import is_real
from zhuoji_env.envs.vector import SelfPlayVecEnv
from zhuoji_env.observation import HIDDEN_SIZE, OBS_SIZE, block


def fast_bf16(device: torch.device) -> bool:
    """Whether bfloat16 matrix products are fast on ``device``: a CUDA GPU with native
    bfloat16 (compute capability 8.0 or more), or a CPU with AMX tiles (measured here: the
    update 2.5x faster). CPUs with AVX512-BF16 alone are left out, unmeasured; on the others
    bfloat16 autocast is emulated and far slower than float32."""
    if device.type == "cuda":
        return torch.cuda.get_device_capability(device) >= (8, 0)
    return bool(getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)())


def check_rollout(seats, arrays: dict[str, np.ndarray], **discounts: float) -> np.ndarray:
    """``seats`` as int64 ``[T, B]``, once checked with the rollout ``arrays`` beside it and the
    ``discounts``: ``ValueError`` naming what is wrong. Seats must be integers >= 0 (a seat of -1
    would index the last seat's trajectory, a fraction be truncated), every array must have
    their shape (a ``[T, 1]`` one would broadcast over the games), each discount must be a
    number in [0, 1]. The checks are whole-array ones, cheap beside the loop over ``T``."""
    seats = np.asarray(seats)
    if seats.ndim != 2 or not np.issubdtype(seats.dtype, np.integer):
        raise ValueError(
            f"seats must be an integer array [T, B] (the seat that decided at each step of each "
            f"game), got {seats.dtype} of shape {seats.shape}"
        )
    if seats.size and seats.min() < 0:
        raise ValueError(f"seats must be >= 0, got {seats.min()}")
    for name, a in arrays.items():
        if np.shape(a) != seats.shape:
            raise ValueError(
                f"{name} must have the shape of seats {seats.shape}, got {np.shape(a)}"
            )
    for name, x in discounts.items():
        if not is_real(x) or not 0 <= x <= 1:
            raise ValueError(f"{name} must be a number in [0, 1], got {x!r}")
    return seats.astype(np.int64, copy=False)


def seat_gae(
    seats: np.ndarray,
    values: np.ndarray,
    rewards: np.ndarray,
    dones: np.ndarray,
    finished: np.ndarray,
    gamma: float = 1.0,
    lam: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GAE along each (game, seat) trajectory of a ``[T, B]`` self-play rollout.

    ``seats[t, i]`` is the seat that decided in game ``i`` at step ``t``, ``values`` its value
    estimate; ``rewards``, ``dones``, ``finished`` are filled from the step transitions
    (``Transitions.fill``). The successor of a decision is the same seat's next decision in the
    same game. Returns ``(advantages, returns, valid)``: ``valid`` is ``finished`` (decisions
    whose outcome is known); a finished decision whose successor is not finished bootstraps on
    the successor's value with no further advantage terms, as at the end of any rollout.
    """
    arrays = {"values": values, "rewards": rewards, "dones": dones, "finished": finished}
    seats = check_rollout(seats, arrays, gamma=gamma, lam=lam)
    values = np.asarray(values, dtype=np.float64)
    T, B = seats.shape
    n = int(seats.max()) + 1 if seats.size else 1
    rows = np.arange(B)
    next_v = np.zeros((B, n))
    next_a = np.zeros((B, n))
    next_ok = np.zeros((B, n), dtype=bool)
    adv = np.zeros((T, B))
    for t in range(T - 1, -1, -1):
        s = seats[t]
        f = np.asarray(finished[t], dtype=bool)
        cont = f & ~np.asarray(dones[t], dtype=bool)
        v_next = np.where(cont, next_v[rows, s], 0.0)
        a_next = np.where(cont & next_ok[rows, s], next_a[rows, s], 0.0)
        delta = rewards[t] + gamma * v_next - values[t]
        a = np.where(f, delta + gamma * lam * a_next, 0.0)
        adv[t] = a
        next_v[rows, s] = values[t]
        next_a[rows, s] = a
        next_ok[rows, s] = f
    valid = np.asarray(finished, dtype=bool).copy()
    returns = np.where(valid, adv + values, 0.0)
    return adv.astype(np.float32), returns.astype(np.float32), valid


def shaped_rewards(seats, phi, rewards, dones, finished, gamma: float) -> np.ndarray:
    """Add ``gamma * phi(next) - phi(this)`` to every finished decision of a ``[T, B]`` rollout.

    The next state of a decision is the same seat's next decision in the game, and the
    potential after a hand's last decision is 0, so over a seat's decisions ``k = 0..K`` of a
    hand the discounted shaping telescopes: ``sum_k gamma^k (gamma phi_{k+1} - phi_k) =
    -phi_0``, whatever the policy does (potential-based shaping leaves the optimal policy
    alone). Checked as :func:`seat_gae`'s arrays (:func:`check_rollout`)."""
    arrays = {"phi": phi, "rewards": rewards, "dones": dones, "finished": finished}
    seats = check_rollout(seats, arrays, gamma=gamma)
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


def potential(obs: np.ndarray, shaping: float, kong_shaping: float = 0.0) -> np.ndarray:
    """float32 ``[k]``: the shaping potential of observations ``[k, OBS_SIZE]``, from the
    scoring rules' point of view: ``-shaping`` per step of shanten beyond ready (a ready hand
    is 0, a complete one ``+shaping``), plus ``kong_shaping`` per kong the observer has made
    (闷豆, 转弯豆, 点豆; not the unpaid late 憨包豆): kongs are beans and the passport (RULES.md
    5.3, 7.3)."""
    phi = -shaping * (block(obs, "shanten").argmax(-1) - 1)
    if kong_shaping:
        phi = phi + kong_shaping * block(obs, "kong_counts")[:, 0, :3].sum(-1)
    return phi.astype(np.float32)


def explained_variance(
    pred: np.ndarray, target: np.ndarray, group: ProcessGroup | None = None
) -> float:
    """``1 - Var(target - pred) / Var(target)`` (CleanRL's diagnostic; NaN when Var is 0), over
    the union of the processes' arrays with a ``group``. ``pred`` and ``target`` must have one
    shape (``(4, 1)`` against ``(4,)`` would broadcast to a 4 x 4 difference)."""
    if np.shape(pred) != np.shape(target):
        raise ValueError(
            f"pred and target must have one shape, got {np.shape(pred)} and {np.shape(target)}"
        )
    if group is None:
        var = np.var(target)
        return float("nan") if var == 0 else float(1 - np.var(target - pred) / var)
    y = np.asarray(target, np.float64)
    d = y - pred
    n, sy, sd = group.sum(torch.tensor([y.size, y.sum(), d.sum()], dtype=torch.float64)).tolist()
    if not n:
        return float("nan")
    centred = [((y - sy / n) ** 2).sum(), ((d - sd / n) ** 2).sum()]  # no cancellation
    qy, qd = group.sum(torch.tensor(centred, dtype=torch.float64)).tolist()
    return float("nan") if qy == 0 else float(1 - qd / qy)


def nonzeros_by_row(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(idx, vals)``, both ``[N, K]``: the columns and values of each row's nonzeros of the
    2-d ``x``, padded to the longest row with column 0 and value 0 (observations are about 6%
    nonzero)."""
    n = x.shape[0]
    r, c = x.nonzero(as_tuple=True)  # row-major order
    counts = torch.bincount(r, minlength=n)
    k = max(int(counts.max()), 1) if n else 1
    pos = torch.arange(r.numel()) - (counts.cumsum(0) - counts)[r]
    idx = torch.zeros((n, k), dtype=torch.long)
    vals = torch.zeros((n, k), dtype=x.dtype)
    idx[r, pos] = c
    vals[r, pos] = x[r, c]
    return idx, vals


class SparseRowsLinear(torch.autograd.Function):
    """``x @ weight.T + bias`` for an ``x`` given by :func:`nonzeros_by_row`, with the
    gradients of ``weight`` and ``bias``: on the CPU, the first layer of the update's network
    in less time than the dense layer (about 6% of an observation is nonzero). Forward it sums
    weight columns (``embedding_bag``); backward it rebuilds the dense ``x`` by a scatter and
    takes one matrix product, which beat a sparse product of ``x``'s transpose (its column
    sort cost more than the product). The same sums as the dense layer, in another order."""

    @staticmethod
    def forward(ctx, idx, vals, weight, bias):
        ctx.save_for_backward(idx, vals)
        ctx.in_features = weight.shape[1]
        table = weight.t().contiguous()
        return nn.functional.embedding_bag(idx, table, mode="sum", per_sample_weights=vals) + bias

    @staticmethod
    def backward(ctx, grad):
        idx, vals = ctx.saved_tensors
        x = vals.new_zeros(idx.shape[0], ctx.in_features).scatter_add_(1, idx, vals)
        return None, None, grad.t() @ x, grad.sum(0)


class Batch(NamedTuple):
    """The learner's decisions of one rollout, flattened: tensors of length N."""

    obs: torch.Tensor  # float32 [N, OBS_SIZE] (or the v2, v2+rule size: what the network reads)
    mask: torch.Tensor  # bool [N, 86]
    act: torch.Tensor  # int64 [N]
    logp: torch.Tensor  # float32 [N]: log-probability when sampled
    adv: torch.Tensor  # float32 [N]
    ret: torch.Tensor  # float32 [N]
    value: torch.Tensor  # float32 [N]: value estimate when sampled
    hidden: torch.Tensor | None = None  # float32 [N, HIDDEN_SIZE]: for an oracle critic


class OracleCritic(nn.Module):
    """The value of a decision from the seat's observation and what it cannot see
    (:func:`~zhuoji_env.observation.encode_hidden`: every concealed hand, the live wall, the
    flip tile; ``hidden_size`` larger when it also sees the order of the wall,
    :func:`~zhuoji_env.observation.encode_draws`): a critic with the full state while the policy
    has only the observation (oracle guiding). It is trained and used for the advantages only,
    never to choose an action."""

    def __init__(self, hidden: int = 256, obs_size: int = OBS_SIZE, hidden_size: int = HIDDEN_SIZE):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(obs_size + hidden_size, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
        )
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        return self.after_first_layer(self.body[0](torch.cat([obs, hidden], -1)))

    def after_first_layer(self, pre: torch.Tensor) -> torch.Tensor:
        return self.v(self.body[3](self.body[2](self.body[1](pre)))).squeeze(-1)


def ppo_update(
    net: nn.Module,
    opt: torch.optim.Optimizer,
    batch: Batch,
    *,
    epochs: int,
    num_minibatches: int,
    clip_coef: float,
    ent_coef: float,
    vf_coef: float,
    max_grad_norm: float,
    rng: np.random.Generator,
    bf16: bool = False,
    critic: OracleCritic | None = None,
    group: ProcessGroup | None = None,
    clone: CloneLoss | None = None,
    magnet: Magnet | None = None,
) -> dict[str, float]:
    """PPO's clipped update over ``epochs`` passes of shuffled whole minibatches, on the device
    of ``net`` (the batch is moved there once). On the CPU without ``bf16`` the first layer
    runs on the observations' nonzeros (:class:`SparseRowsLinear`), the same sums in another
    order.

    Advantages are normalised per minibatch (of two or more decisions). With ``bf16`` the
    network's forward and backward run under bfloat16 autocast, while the log-softmax, ratios,
    entropy and losses are computed in float32. Returns the means over all minibatches of the
    policy loss, value loss, entropy, approximate KL and clip fraction, and the explained
    variance of the batch's values (as CleanRL logs them); ``{}`` when there are fewer
    decisions than minibatches (in any process, with a ``group``). With a
    ``critic`` (:class:`OracleCritic`, its parameters in ``opt``) the values come from it and
    the batch's ``hidden``; the network's own value head is left untrained. With a ``clone``
    (:class:`CloneLoss`) every minibatch's loss also holds its cross-entropy term on a fresh
    draw of demonstrations (run densely, whatever the path of the batch's first layer), and
    ``loss/clone`` logs that cross entropy's mean. With a ``group``, pass it in one process
    only: its term is added there at full weight, and ``loss/clone`` is that process's own.
    With a ``magnet`` (:class:`Magnet`) every minibatch's loss also holds ``magnet.coef`` x the
    mean over its decisions of the reverse KL from the policy to the magnet's anchor over the
    legal actions (:func:`reverse_kl`), and ``loss/magnet_kl`` logs that mean; with a
    ``group``, every process passes the same magnet and its term is part of the mean over the
    union, as PPO's own terms are. Without one (or with none given) the update is the plain one,
    step for step.

    With a ``group`` (:class:`ProcessGroup`) every process of it calls this on its own share of
    the rollout and they take the same steps, as many per epoch as the process with the fewest
    decisions can fill: minibatch ``k`` is the union of the processes' ``k``-th minibatches
    (each drawn from its own share), its advantages are normalised over that union, the loss
    is its mean over the union (the gradients are summed across the processes) and the
    statistics are over the whole batch: the update of one process on the union, with its
    minibatches drawn share by share, split across cores."""
    if critic is not None and batch.hidden is None:
        raise ValueError("ppo_update with a critic needs the batch's hidden part (Batch.hidden)")
    n = batch.act.numel()
    mb = max(1, n // num_minibatches)
    steps_per_epoch = n // mb if n else 0
    if group is not None:  # the same number of steps in every process
        steps_per_epoch = int(group.min(torch.tensor([steps_per_epoch]))[0])
    if not steps_per_epoch:
        return {}
    device = next(net.parameters()).device
    b = Batch(*(None if x is None else x.to(device) for x in batch))
    sparse = device.type == "cpu" and not bf16
    rows = nonzeros_by_row(b.obs) if sparse else None
    full = torch.cat([b.obs, b.hidden], -1) if critic is not None else None
    full_rows = nonzeros_by_row(full) if critic is not None and sparse else None
    params = [p for g in opt.param_groups for p in g["params"]]
    first = net.body[0]
    # this process's share of each minibatch's mean (1 alone)
    share = 1.0 if group is None else mb / float(group.sum(torch.tensor([float(mb)]))[0])
    perms = [torch.from_numpy(rng.permutation(n)).to(device) for _ in range(epochs)]
    minibatches = [p[k * mb : (k + 1) * mb] for p in perms for k in range(steps_per_epoch)]
    moments = None
    if group is not None:  # each minibatch's advantage count, sum and square sum, in one message
        adv = b.adv.double()
        moments = group.sum(torch.stack([_moments(adv[j]) for j in minibatches]))
    steps, clone_ce, magnet_kl = [], [], []
    for i, j in enumerate(minibatches):  # whole minibatches only
        if rows is not None:
            pre = SparseRowsLinear.apply(rows[0][j], rows[1][j], first.weight, first.bias)
            logits, value = net.after_first_layer(pre, b.mask[j])
        else:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                logits, value = net(b.obs[j], b.mask[j])
        if full_rows is not None:
            c = critic.body[0]
            pre = SparseRowsLinear.apply(full_rows[0][j], full_rows[1][j], c.weight, c.bias)
            value = critic.after_first_layer(pre)
        elif critic is not None:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                value = critic.after_first_layer(critic.body[0](full[j]))
        logp_all = torch.log_softmax(logits.float(), -1)
        logp = logp_all.gather(-1, b.act[j, None]).squeeze(-1)
        log_ratio = logp - b.logp[j]
        ratio = log_ratio.exp()
        a = normalised(b.adv[j], None if moments is None else moments[i])
        pg = torch.max(-a * ratio, -a * ratio.clamp(1 - clip_coef, 1 + clip_coef)).mean()
        vloss = 0.5 * ((value.float() - b.ret[j]) ** 2).mean()
        # softmax, not logp_all.exp(): exp of the masked -1e9 takes a slow path on the CPU
        ent = -(torch.softmax(logits.float(), -1) * logp_all).sum(-1).mean()  # 0 * -1e9 = 0
        terms = pg + vf_coef * vloss - ent_coef * ent
        if magnet is not None:
            kl = reverse_kl(logits, magnet.logits(b, j, rows, bf16), b.mask[j]).mean()
            magnet_kl.append(kl.detach())
            terms = terms + magnet.coef * kl
        loss = terms * share
        if clone is not None:
            ce = clone.cross_entropy(net, bf16)
            clone_ce.append(ce.detach())
            loss = loss + clone.coef * ce
        opt.zero_grad()
        loss.backward()
        if group is not None:
            group.sum_gradients(params)
        nn.utils.clip_grad_norm_(params, max_grad_norm)
        opt.step()
        with torch.no_grad():
            kl = ((ratio - 1) - log_ratio).mean()
            clipped = ((ratio - 1).abs() > clip_coef).float().mean()
            steps.append(torch.stack([pg, vloss, ent, kl, clipped]).detach())
    names = ("policy", "value", "entropy", "approx_kl", "clipfrac")
    means = torch.stack(steps).mean(0).cpu()  # one device sync per update
    if group is not None:
        means = group.sum(means.double() * share).float()
    stats = {f"loss/{k}": v for k, v in zip(names, means.tolist(), strict=True)}
    stats["loss/explained_variance"] = explained_variance(
        batch.value.numpy(), batch.ret.numpy(), group
    )
    if clone_ce:
        stats["loss/clone"] = torch.stack(clone_ce).mean().item()
    if magnet_kl:
        kl = torch.stack(magnet_kl).mean().cpu().double()
        stats["loss/magnet_kl"] = float(group.sum(kl * share) if group is not None else kl)
    return stats


def reverse_kl(logits: torch.Tensor, anchor_logits: torch.Tensor, mask: torch.Tensor):
    """float32 ``[N]``: KL(pi || anchor) = sum over the legal actions of ``pi(a) (log pi(a) -
    log anchor(a))``, from the masked logits of the policy and of the anchor (illegal actions at
    -1e9 in both, left out of the sum)."""
    logp = torch.log_softmax(logits.float(), -1)
    logq = torch.log_softmax(anchor_logits.float(), -1)
    p = torch.softmax(logits.float(), -1)  # not logp.exp(): see the entropy above
    return torch.where(mask, p * (logp - logq), 0.0).sum(-1)


class Magnet:
    """The magnet of Magnetic Mirror Descent (Sokota et al., "A unified approach to
    reinforcement learning, quantal response equilibria, and two-player zero-sum games", ICLR
    2023): ``coef`` x the reverse KL(pi || anchor) over the legal actions in the loss
    (:func:`ppo_update`), a pull of the policy toward a fixed ``anchor`` policy, a network that
    reads the learner's input (the clone of ``rule`` before PPO, a lagged copy of the learner,
    or another checkpoint). The anchor is never trained: its parameters are frozen here."""

    def __init__(self, anchor: nn.Module, coef: float):
        if not (is_real(coef) and coef > 0):
            raise ValueError(f"Magnet needs coef > 0, got {coef!r}")
        self.anchor = anchor.eval()
        self.coef = float(coef)
        for p in anchor.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def logits(self, b: Batch, j: torch.Tensor, rows, bf16: bool) -> torch.Tensor:
        """The anchor's masked logits on minibatch ``j`` of ``b``: from the observations'
        nonzeros ``rows`` (:func:`nonzeros_by_row`) where the update runs on them, else dense."""
        a = self.anchor
        if rows is not None:
            first = a.body[0]
            pre = SparseRowsLinear.apply(rows[0][j], rows[1][j], first.weight, first.bias)
            return a.after_first_layer(pre, b.mask[j])[0]
        device = b.obs.device
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            return a(b.obs[j], b.mask[j])[0]


class CloneLoss:
    """Behaviour cloning kept on during PPO: ``coef`` x the cross-entropy of the network's
    masked policy on ``rows`` decisions drawn (with replacement, by ``rng``) from
    ``demos`` at every call, an anchor to the imitated agent's choices in the states of its own
    games, such as the hands it builds toward patterns that self-play alone gives up."""

    def __init__(self, demos: Demonstrations, coef: float, rows: int, rng: np.random.Generator):
        if coef <= 0 or rows < 1:
            raise ValueError(f"CloneLoss needs coef > 0 and rows >= 1, got {coef} and {rows}")
        self.obs = torch.from_numpy(demos.obs.reshape(-1, demos.obs.shape[-1]))
        self.mask = torch.from_numpy(demos.mask.reshape(-1, NUM_ACTIONS))
        self.act = torch.from_numpy(demos.act.reshape(-1))
        self.coef, self.rows, self.rng = coef, rows, rng

    def cross_entropy(self, net: nn.Module, bf16: bool) -> torch.Tensor:
        """The cross-entropy (float32) of ``net`` on a fresh draw, on ``net``'s device."""
        device = next(net.parameters()).device
        j = torch.from_numpy(self.rng.integers(0, self.act.numel(), self.rows))
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            logits, _ = net(self.obs[j].to(device), self.mask[j].to(device))
        return nn.functional.cross_entropy(logits.float(), self.act[j].to(device))


def _moments(x: torch.Tensor) -> torch.Tensor:
    """``[count, sum, sum of squares]`` of ``x``."""
    return torch.stack([x.new_tensor(x.numel()), x.sum(), (x * x).sum()])


def normalised(adv: torch.Tensor, moments: torch.Tensor | None = None) -> torch.Tensor:
    """Advantages minus their mean over their standard deviation (``n - 1``; a lone advantage
    is left as is); with ``moments`` (``_moments`` of a larger set, such as the union of
    the processes' minibatches) the mean and deviation are those of that set."""
    if moments is None:
        return (adv - adv.mean()) / (adv.std() + 1e-8) if adv.numel() > 1 else adv
    n, s, q = moments.tolist()
    if n < 2:
        return adv
    mean = s / n
    var = max(q - s * mean, 0.0) / (n - 1)
    return (adv - mean) / (var**0.5 + 1e-8)


class ProcessGroup:
    """The processes of a data-parallel update: a torch.distributed (gloo) group, by default
    the default group, which the caller has initialised. Sums, minima and broadcasts are taken
    in place and returned."""

    def __init__(self, group=None):
        import torch.distributed as dist

        self.dist = dist
        self.group = group
        self.size = dist.get_world_size(group)
        self.rank = dist.get_rank(group)

    def broadcast(self, t: torch.Tensor) -> torch.Tensor:
        """``t`` as the group's first process has it."""
        first = 0 if self.group is None else self.dist.get_global_rank(self.group, 0)
        self.dist.broadcast(t, first, group=self.group)
        return t

    def broadcast_parameters(self, module: nn.Module) -> None:
        """Give every process the first process's parameters of ``module``."""
        for p in module.parameters():
            self.broadcast(p.data)

    def check_same_parameters(self, module: nn.Module) -> None:
        """Raise ``RuntimeError`` unless every process holds the same parameters of ``module``
        (their float64 sums and sums of squares are compared)."""
        with torch.no_grad():
            mine = torch.stack(
                [
                    sum(p.double().sum() for p in module.parameters()),
                    sum(p.double().square().sum() for p in module.parameters()),
                ]
            )
        first = self.broadcast(mine.clone())
        differs = self.sum(torch.tensor([float(not torch.equal(mine, first))]))
        if differs[0]:
            raise RuntimeError(
                f"data-parallel processes drifted apart: {int(differs[0])} of {self.size} hold "
                "other parameters than process 0"
            )

    def sum(self, t: torch.Tensor) -> torch.Tensor:
        self.dist.all_reduce(t, group=self.group)
        return t

    def min(self, t: torch.Tensor) -> torch.Tensor:
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MIN, group=self.group)
        return t

    def sum_gradients(self, params: list[torch.Tensor]) -> None:
        """Sum the gradients of ``params`` across the processes in one message (parameters
        without a gradient are left out, in every process alike)."""
        grads = [p.grad for p in params if p.grad is not None]
        flat = self.sum(torch.cat([g.reshape(-1) for g in grads]))
        for g, part in zip(grads, flat.split([g.numel() for g in grads]), strict=True):
            g.copy_(part.view_as(g))


class Demonstrations(NamedTuple):
    """An agent's self-play, ``[steps, games]``: what it saw, did, and the hand's return."""

    obs: np.ndarray  # float32 [S, B, OBS_SIZE]
    mask: np.ndarray  # bool [S, B, 86]
    act: np.ndarray  # int64 [S, B]
    ret: np.ndarray  # float32 [S, B]: the seat's score for the hand (0 where not valid)
    valid: np.ndarray  # bool [S, B]: the hand ended within the recording


def collect_demonstrations(agent: Agent, env: SelfPlayVecEnv, steps: int, seed: int):
    """``agent`` plays every seat of ``env`` for ``steps`` steps from ``reset(seed=seed)`` (an
    agent that needs the public view of the game, ``search:``, is given it:
    :func:`agents.base.decide`)."""
    B = env.num_envs
    obs, masks, seats = env.reset(seed=seed)
    o_buf = np.zeros((steps, B, OBS_SIZE), np.float32)
    m_buf = np.zeros((steps, B, NUM_ACTIONS), bool)
    a_buf = np.zeros((steps, B), np.int64)
    rew = np.zeros((steps, B), np.float32)
    done = np.zeros((steps, B), bool)
    fin = np.zeros((steps, B), bool)
    seat_buf = np.zeros((steps, B), np.int64)
    for t in range(steps):
        a = decide(agent, obs, masks, env.game.state, np.arange(B))
        o_buf[t], m_buf[t], a_buf[t], seat_buf[t] = obs, masks, a, seats
        obs, masks, seats, _, _, infos = env.step(a)
        infos["transitions"].fill(rew, done, fin, start=0)
    _, ret, valid = seat_gae(seat_buf, np.zeros_like(rew), rew, done, fin, 1.0, 1.0)
    return Demonstrations(o_buf, m_buf, a_buf, ret, valid)


def behaviour_clone(
    net: nn.Module,
    demos: Demonstrations,
    *,
    epochs: int,
    vf_coef: float,
    seed: int,
    held_out_share: float = 0.1,
    batch_size: int = 1024,
    lr: float = 1e-3,
    smoothing: float = 0.0,
) -> dict:
    """Fit ``net``'s policy to ``demos`` (cross-entropy over the masked logits) and its value to
    the hand returns, with Adam, for ``epochs`` passes. With ``smoothing`` the policy's target
    puts that share evenly on the legal actions and the rest on the demonstrated one (label
    smoothing), so a clone of a deterministic player keeps some entropy to explore with.

    The last ``held_out_share`` of the games (at least one; ``demos`` needs two or more) is held
    out: the returned cross-entropy and accuracy (argmax equals the demonstrated action) before
    and after the fit and the policy's mean entropy after it are measured on those games, which
    the fit never sees."""
    B = demos.act.shape[1]
    if B < 2:
        raise ValueError(f"behaviour cloning holds out whole games and needs >= 2, got {B}")
    cut = B - max(1, round(B * held_out_share))

    def flat(cols):
        o = torch.from_numpy(demos.obs[:, cols].reshape(-1, demos.obs.shape[-1]))
        m = torch.from_numpy(demos.mask[:, cols].reshape(-1, NUM_ACTIONS))
        a = torch.from_numpy(demos.act[:, cols].reshape(-1))
        r = torch.from_numpy(demos.ret[:, cols].reshape(-1))
        v = torch.from_numpy(demos.valid[:, cols].reshape(-1))
        return o, m, a, r, v

    o, m, a, r, v = flat(slice(0, cut))
    ho, hm, ha, _, _ = flat(slice(cut, B))

    @torch.no_grad()
    def held_out():
        logits, _ = net(ho, hm)
        loss = nn.functional.cross_entropy(logits, ha).item()
        logp = torch.log_softmax(logits, -1)
        entropy = -(logp.exp() * logp).sum(-1).mean().item()
        return loss, (logits.argmax(-1) == ha).float().mean().item(), entropy

    before, accuracy_before, _ = held_out()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        perm = torch.from_numpy(rng.permutation(a.numel()))
        for j in perm.split(batch_size):
            logits, value = net(o[j], m[j])
            vl = ((value - r[j]) ** 2 * v[j]).sum() / v[j].sum().clamp(min=1)
            target = nn.functional.one_hot(a[j], NUM_ACTIONS) * (1 - smoothing)
            target = target + smoothing * m[j] / m[j].sum(-1, keepdim=True)
            ce = -(target * torch.log_softmax(logits, -1)).sum(-1).mean()
            loss = ce + vf_coef * vl
            opt.zero_grad()
            loss.backward()
            opt.step()
    after, accuracy, entropy = held_out()
    return {
        "decisions": int(a.numel()),
        "held_out_decisions": int(ha.numel()),
        "held_out_loss_before": before,
        "held_out_loss": after,
        "held_out_accuracy_before": accuracy_before,
        "held_out_accuracy": accuracy,
        "held_out_entropy": entropy,
    }
