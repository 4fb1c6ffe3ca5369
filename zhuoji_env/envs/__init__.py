"""Environments over the batched engine.

- :func:`env` / :class:`raw_env`: the PettingZoo AEC environment ``zhuoji_v1`` (``aec``).
- :class:`SingleAgentEnv`: a Gymnasium environment where a learner holds one seat against fixed
  opponent policies (``single``).
- :class:`SelfPlayVecEnv`: batched self-play over B games with per-seat credit assignment, and
  :class:`SB3VecEnv`: a Stable-Baselines3 ``VecEnv`` of B games against batched opponents
  (``vector``).

``python -m zhuoji_env.envs.bench`` measures their throughput.
"""

from zhuoji_env.envs.aec import RandomPolicy, env, raw_env
from zhuoji_env.envs.single import SingleAgentEnv
from zhuoji_env.envs.vector import SelfPlayVecEnv, Transitions


def __getattr__(name: str):
    # SB3VecEnv subclasses stable_baselines3's VecEnv: imported on first use only, so that
    # importing zhuoji_env needs neither stable-baselines3 nor torch.
    if name == "SB3VecEnv":
        from zhuoji_env.envs.vector import SB3VecEnv

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
