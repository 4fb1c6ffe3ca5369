"""zhuoji-env: a reinforcement-learning environment for Guiyang Zhuoji mahjong (贵阳捉鸡麻将)."""

from zhuoji_env.rules import Rules

__all__ = ["Rules"]
