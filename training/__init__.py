"""Training scripts (self-play PPO in torch, sb3-contrib MaskablePPO, the demo job) and the
learner's maths (``training.learner``). Training imports ``agents``; ``agents`` never imports
training. Importing it refuses a ``training`` package that another distribution's files share
(:func:`zhuoji_env.distribution.check_packages`)."""

from zhuoji_env.distribution import check_packages

check_packages()
