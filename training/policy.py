"""The policy network of the PPO scripts, its checkpoints, and the agent that plays one.

A checkpoint is a ``torch.save`` dict with ``model`` (the state dict), ``hidden`` (layer width),
``obs_version`` (the observation encoding it was trained on), ``rules`` (record form) and the
training counters. ``PPOAgent.load(path)`` plays it through the common agent interface, so
``python -m agents.arena --agents ppo:runs/ppo/latest.pt,rule`` evaluates it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from agents.base import Agent
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.observation import OBS_SIZE, VERSION

NEG_INF = -1e9


class PolicyNet(nn.Module):
    """An MLP with a policy head over the 86 actions and a value head."""

    def __init__(self, hidden: int = 256):
        super().__init__()
        self.hidden = hidden
        self.body = nn.Sequential(
            nn.Linear(OBS_SIZE, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
        )
        self.pi = nn.Linear(hidden, NUM_ACTIONS)
        self.v = nn.Linear(hidden, 1)
        nn.init.orthogonal_(self.pi.weight, 0.01)
        nn.init.zeros_(self.pi.bias)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor):
        """Masked logits (illegal actions at -1e9, before any softmax) and values."""
        h = self.body(obs)
        logits = self.pi(h).masked_fill(~mask, NEG_INF)
        return logits, self.v(h).squeeze(-1)


def save_checkpoint(path: str | Path, net: PolicyNet, **extra) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"model": net.state_dict(), "hidden": net.hidden, "obs_version": VERSION,
                **extra}, tmp)
    tmp.replace(path)


def load_checkpoint(path: str | Path) -> tuple[PolicyNet, dict]:
    """The network of a checkpoint file and the whole checkpoint dict."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no checkpoint file at {str(path)!r}")
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    if not isinstance(ckpt, dict) or "model" not in ckpt:
        raise ValueError(f"{path}: not a zhuoji-env PPO checkpoint")
    if ckpt.get("obs_version") != VERSION:
        raise ValueError(
            f"{path}: trained on observations {ckpt.get('obs_version')!r}, "
            f"this package encodes {VERSION!r}"
        )
    net = PolicyNet(ckpt.get("hidden", 256))
    net.load_state_dict(ckpt["model"])
    net.eval()
    return net, ckpt


class PPOAgent(Agent):
    """Plays a policy network: samples from its masked policy, or takes its argmax."""

    name = "ppo"
    uses_torch = True

    def __init__(self, net: PolicyNet, seed=None, greedy: bool = False):
        super().__init__(seed)
        self.net = net
        self.greedy = greedy
        self._gen = torch.Generator().manual_seed(int(self.rng.integers(2**62)))

    def reseed(self, seed) -> None:
        super().reseed(seed)
        self._gen = torch.Generator().manual_seed(int(self.rng.integers(2**62)))

    @classmethod
    def load(cls, path: str | Path, seed=None, greedy: bool = False) -> PPOAgent:
        net, _ = load_checkpoint(path)
        return cls(net, seed=seed, greedy=greedy)

    @torch.no_grad()
    def _act(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        logits, _ = self.net(torch.from_numpy(obs), torch.from_numpy(mask))
        if self.greedy:
            return logits.argmax(-1).numpy()
        probs = torch.softmax(logits, -1)
        return torch.multinomial(probs, 1, generator=self._gen).squeeze(-1).numpy()


def agent_factory(arg: str | None, seed=None, rules=None) -> PPOAgent:
    """``ppo:PATH`` samples from the policy; ``ppo:PATH:greedy`` takes its argmax."""
    if not arg:
        raise ValueError("agent 'ppo' needs a checkpoint: ppo:path/to/ckpt.pt")
    greedy = arg.endswith(":greedy")
    path = arg[: -len(":greedy")] if greedy else arg
    return PPOAgent.load(path, seed=seed, greedy=greedy)
