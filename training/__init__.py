"""Training scripts (self-play PPO in torch, sb3-contrib MaskablePPO, the demo job) and the
learner's maths (``training.learner``). Training imports ``agents``; ``agents`` never imports
training."""
