"""Training scripts: self-play PPO in torch and sb3-contrib MaskablePPO."""
