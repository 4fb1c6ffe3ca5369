"""zhuoji-env: a reinforcement-learning environment for Guiyang Zhuoji mahjong (贵阳捉鸡麻将).

``BatchGame`` plays B games in lock-step; ``replay`` re-runs a game record (RULES.md 10).
``env()`` / ``raw_env`` are the PettingZoo AEC environment (also ``zhuoji_v1.env()``, by its
versioned name), ``SingleAgentEnv`` the Gymnasium one, registered as ``zhuoji_env/Guiyang-v1``,
``zhuoji_env/App-v1`` and ``zhuoji_env/Classic-v1`` when this package is imported,
``SelfPlayVecEnv`` batched self-play (``zhuoji_env.envs``). ``__version__`` is the package's
version, ``versions`` says what the environment's version covers.
"""

from zhuoji_env import zhuoji_v1
from zhuoji_env.engine import BatchGame, IllegalActionError, RecordError, ResultMismatch
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.engine.records import replay
from zhuoji_env.envs import SelfPlayVecEnv, SingleAgentEnv, env, raw_env
from zhuoji_env.envs.registration import register_envs
from zhuoji_env.rules import Rules
from zhuoji_env.versions import __version__

register_envs()

__all__ = [
    "NUM_ACTIONS",
    "BatchGame",
    "IllegalActionError",
    "RecordError",
    "ResultMismatch",
    "Rules",
    "SelfPlayVecEnv",
    "SingleAgentEnv",
    "__version__",
    "env",
    "raw_env",
    "replay",
    "zhuoji_v1",
]
