"""The PettingZoo AEC environment by its versioned name, as PettingZoo's classic environments are
imported (``from pettingzoo.classic import chess_v6``)::

    from zhuoji_env import zhuoji_v1

    env = zhuoji_v1.env(rules="guiyang")  # zhuoji_v1.raw_env: unwrapped

What version 1 covers is in :mod:`zhuoji_env.versions`; the environment's documentation is
:mod:`zhuoji_env.envs.aec`'s.
"""

from zhuoji_env.envs.aec import env, raw_env

__all__ = ["env", "raw_env"]
