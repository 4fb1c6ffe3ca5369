"""The ``rllib:PATH`` agent and its RLlib module (``training.rllib_ppo`` trains it).

``PATH`` is the run's ``--out-dir`` (or its ``checkpoint`` folder); ``rllib:PATH:greedy`` takes
the most likely action instead of sampling. Only the module is loaded (``RLModule.
from_checkpoint``), without starting Ray, so the arena, terminal play and the environments take
an RLlib-trained policy like any other agent. Needs the ``rllib`` extra.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_LEARNER_GROUP, COMPONENT_RL_MODULE
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import nn

from agents.base import Agent
from agents.ppo import pick_actions, split_options

POLICY_ID = "shared"
"""The one module (policy) that plays every seat."""
CHECKPOINT = "checkpoint"
"""The algorithm checkpoint's folder inside a run's ``--out-dir``."""
NEG_INF = -1e9


class MaskedPolicyModule(TorchRLModule, ValueFunctionAPI):
    """A policy and value MLP over ``obs["observation"]`` whose logits are masked by
    ``obs["action_mask"]`` (illegal actions at -1e9). ``model_config``: ``{"hidden": int}``."""

    def setup(self):
        hidden = int(self.model_config.get("hidden", 256))
        obs_size = self.observation_space["observation"].shape[0]
        self.body = nn.Sequential(
            nn.Linear(obs_size, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.pi = nn.Linear(hidden, self.action_space.n)
        self.vf = nn.Linear(hidden, 1)
        nn.init.orthogonal_(self.pi.weight, 0.01)
        nn.init.zeros_(self.pi.bias)

    def _forward(self, batch, **kwargs):
        obs = batch[Columns.OBS]
        h = self.body(obs["observation"])
        logits = self.pi(h).masked_fill(obs["action_mask"] == 0, NEG_INF)
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: h}

    def compute_values(self, batch, embeddings=None):
        if embeddings is None:
            embeddings = self.body(batch[Columns.OBS]["observation"])
        return self.vf(embeddings).squeeze(-1)


def checkpoint_dir(path: str | Path) -> Path:
    """The algorithm checkpoint in ``path``: a run's ``--out-dir`` or the checkpoint itself."""
    path = Path(path)
    if (path / CHECKPOINT / COMPONENT_LEARNER_GROUP).is_dir():
        return path / CHECKPOINT
    if (path / COMPONENT_LEARNER_GROUP).is_dir():
        return path
    raise ValueError(
        f"no RLlib checkpoint at {str(path)!r}: expected a training.rllib_ppo --out-dir "
        f"(with {CHECKPOINT}/{COMPONENT_LEARNER_GROUP}/) or an algorithm checkpoint folder"
    )


class RLlibAgent(Agent):
    """Plays an RLlib module: samples from its masked policy, or takes its argmax."""

    name = "rllib"
    uses_torch = True

    def __init__(self, module, seed=None, greedy: bool = False):
        super().__init__(seed)
        self.module = module
        self.greedy = greedy
        self._gen = torch.Generator().manual_seed(int(self.rng.integers(2**62)))

    def reseed(self, seed) -> None:
        super().reseed(seed)
        self._gen = torch.Generator().manual_seed(int(self.rng.integers(2**62)))

    @classmethod
    def load(cls, path: str | Path, seed=None, greedy: bool = False) -> RLlibAgent:
        """The agent of a run's ``--out-dir`` or of its algorithm checkpoint folder."""
        ckpt = checkpoint_dir(path)
        module_dir = (
            ckpt / COMPONENT_LEARNER_GROUP / COMPONENT_LEARNER / COMPONENT_RL_MODULE / POLICY_ID
        )
        if not module_dir.is_dir():
            raise ValueError(f"{ckpt}: no module {POLICY_ID!r} in the checkpoint ({module_dir})")
        module = RLModule.from_checkpoint(str(module_dir.resolve()))
        module.eval()
        return cls(module, seed=seed, greedy=greedy)

    @torch.no_grad()
    def _act(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch = {
            Columns.OBS: {
                "observation": torch.from_numpy(obs),
                "action_mask": torch.from_numpy(mask.astype(np.int8)),
            }
        }
        logits = self.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        return pick_actions(logits, self.greedy, self._gen)


def agent_factory(arg: str | None, seed=None, rules=None) -> RLlibAgent:
    """``rllib:PATH`` samples from the policy; ``rllib:PATH:greedy`` takes its argmax."""
    if not arg:
        raise ValueError("agent 'rllib' needs a checkpoint: rllib:path/to/out-dir")
    path, options = split_options(arg, ("greedy",))
    return RLlibAgent.load(path, seed=seed, greedy=bool(options))
