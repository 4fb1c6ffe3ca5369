"""Environments over the batched engine.

- :func:`env` / :class:`raw_env`: the PettingZoo AEC environment ``zhuoji_v1`` (``aec``; its
  module documentation is the environment's documentation).
- :class:`SingleAgentEnv`: a Gymnasium environment where a learner holds one seat against fixed
  opponent policies (``single``).
- :class:`SelfPlayVecEnv`: batched self-play over B games with per-seat credit assignment
  (``vector``).
- :class:`SB3VecEnv`: a Stable-Baselines3 ``VecEnv`` of B games against batched opponents
  (``sb3``; imported on first use, so that importing zhuoji_env needs neither
  stable-baselines3 nor torch).

Shared pieces (spaces, input checks, illegal actions, :class:`RandomPolicy`) are in ``common``,
the text table in ``render``. ``python -m zhuoji_env.envs.bench`` measures throughput.
"""

from zhuoji_env.envs.aec import env, raw_env
from zhuoji_env.envs.common import RandomPolicy
from zhuoji_env.envs.single import SingleAgentEnv
from zhuoji_env.envs.vector import SelfPlayVecEnv, Transitions


def __getattr__(name: str):
    """``SB3VecEnv``, imported from ``zhuoji_env.envs.sb3`` when first asked for."""
    if name == "SB3VecEnv":
        from zhuoji_env.envs.sb3 import SB3VecEnv

        return SB3VecEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "RandomPolicy",
    "SB3VecEnv",
    "SelfPlayVecEnv",
    "SingleAgentEnv",
    "Transitions",
    "env",
    "raw_env",
]
