"""The agent that plays a saved sb3-contrib ``MaskablePPO`` model (``sb3:PATH``).

``training.sb3_maskable`` writes such models; this module imports Stable-Baselines3 only when a
model is loaded. SB3's ``.zip`` format stores some objects with cloudpickle, so open only model
files you trust; a missing, empty or unreadable file raises ``ValueError`` naming it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.base import Agent


class SB3Agent(Agent):
    """Plays a MaskablePPO model through the common agent interface."""

    name = "sb3"
    uses_torch = True

    def __init__(self, model, seed=None, deterministic: bool = False):
        super().__init__(seed)
        self.model = model
        self.deterministic = deterministic

    @classmethod
    def load(cls, path: str | Path, seed=None, deterministic: bool = False) -> SB3Agent:
        from sb3_contrib import MaskablePPO

        path = Path(path)
        if not path.is_file():
            raise ValueError(f"no SB3 model file at {str(path)!r}")
        try:
            model = MaskablePPO.load(path, device="cpu")
        except Exception as exc:  # SB3 raises whatever its zip, JSON or torch reader raises
            raise ValueError(
                f"{path}: not a MaskablePPO model saved by sb3-contrib "
                f"({type(exc).__name__}: {exc})"
            ) from None
        return cls(model, seed=seed, deterministic=deterministic)

    def reseed(self, seed) -> None:
        super().reseed(seed)
        self.model.set_random_seed(int(self.rng.integers(2**31)))

    def _act(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        actions, _ = self.model.predict(obs, action_masks=mask, deterministic=self.deterministic)
        return np.asarray(actions)


def agent_factory(arg: str | None, seed=None, rules=None) -> SB3Agent:
    """``sb3:PATH`` plays a saved MaskablePPO model."""
    if not arg:
        raise ValueError("agent 'sb3' needs a model file: sb3:path/to/model.zip")
    return SB3Agent.load(arg, seed=seed)
