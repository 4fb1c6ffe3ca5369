"""zhuoji-env: a reinforcement-learning environment for Guiyang Zhuoji mahjong (贵阳捉鸡麻将).

``BatchGame`` plays B games in lock-step; ``replay`` re-runs a game record (RULES.md 10).
``env()`` / ``raw_env`` are the PettingZoo AEC environment, ``SingleAgentEnv`` the Gymnasium
one, ``SelfPlayVecEnv`` batched self-play (``zhuoji_env.envs``).
"""

from zhuoji_env.engine import BatchGame, IllegalActionError, RecordError, ResultMismatch
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.engine.records import replay
from zhuoji_env.envs import SelfPlayVecEnv, SingleAgentEnv, env, raw_env
from zhuoji_env.rules import Rules

__all__ = [
    "NUM_ACTIONS",
    "BatchGame",
    "IllegalActionError",
    "RecordError",
    "ResultMismatch",
    "Rules",
    "SelfPlayVecEnv",
    "SingleAgentEnv",
    "env",
    "raw_env",
    "replay",
]
