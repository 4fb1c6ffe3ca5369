"""sb3-contrib MaskablePPO on Zhuoji: ``python -m training.sb3_maskable [--flags]``.

The path Stable-Baselines3 users know. ``--env single`` trains on ``n_envs`` copies of
:class:`~zhuoji_env.SingleAgentEnv` (a ``DummyVecEnv``); ``--env vec`` trains on the batched
:class:`~zhuoji_env.envs.sb3.SB3VecEnv` (no subprocesses). In both the learner holds one seat
(drawn per hand) and the other seats are played by ``--opponent`` (an agent spec: ``rule``,
``greedy``, ``random``, or a checkpoint such as ``ppo:runs/ppo/latest.pt``). The model is saved
to ``OUT_DIR/model.zip``, loads as the agent ``sb3:OUT_DIR/model.zip``, and is evaluated at the
end in the arena against ``--eval-opponents`` on duplicate deals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from agents import make_agent
from agents.arena import run_arena
from agents.base import Agent
from training.cli import parse_args, rules_from_flag
from zhuoji_env.rules import Rules


@dataclass
class Args:
    """Arguments of the MaskablePPO run (every field is a command-line flag)."""

    env: str = "vec"
    """'vec' (batched SB3VecEnv) or 'single' (DummyVecEnv of SingleAgentEnv)"""
    rules: str = "guiyang"
    opponent: str = "rule"
    total_timesteps: int = 50_000
    n_envs: int = 64
    n_steps: int = 128
    batch_size: int = 1024
    lr: float = 3e-4
    ent_coef: float = 0.01
    gamma: float = 1.0
    seed: int = 1
    torch_threads: int = 1
    eval_deals: int = 200
    eval_opponents: str = "rule,random"
    out_dir: str = "runs/sb3"
    verbose: int = 0


class SB3Agent(Agent):
    """Plays a saved MaskablePPO model through the common agent interface."""

    name = "sb3"
    uses_torch = True

    def __init__(self, model, seed=None, deterministic: bool = False):
        super().__init__(seed)
        self.model = model
        self.deterministic = deterministic

    @classmethod
    def load(cls, path: str | Path, seed=None, deterministic: bool = False) -> SB3Agent:
        from sb3_contrib import MaskablePPO

        if not Path(path).is_file():
            raise ValueError(f"no SB3 model file at {str(path)!r}")
        return cls(MaskablePPO.load(path, device="cpu"), seed=seed, deterministic=deterministic)

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


def make_env(args: Args, rules: Rules):
    """The training VecEnv of ``args.env``."""
    opponent = make_agent(args.opponent, seed=args.seed, rules=rules)
    if args.env == "vec":
        from zhuoji_env.envs.sb3 import SB3VecEnv

        return SB3VecEnv(args.n_envs, rules, learner_seat=None, opponent=opponent, seed=args.seed)
    if args.env == "single":
        from stable_baselines3.common.vec_env import DummyVecEnv

        from zhuoji_env.envs.single import SingleAgentEnv

        def one(i):
            def build():
                env = SingleAgentEnv(rules, learner_seat=None,
                                     opponents=make_agent(args.opponent, seed=[args.seed, i],
                                                          rules=rules))
                env.reset(seed=args.seed + i)
                return env
            return build

        return DummyVecEnv([one(i) for i in range(args.n_envs)])
    raise ValueError(f"--env must be 'vec' or 'single', got {args.env!r}")


def train(args: Args) -> dict:
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(args.torch_threads)
    rules = rules_from_flag(args.rules)
    env = make_env(args, rules)
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=args.n_steps, batch_size=args.batch_size,
        learning_rate=args.lr, ent_coef=args.ent_coef, gamma=args.gamma, seed=args.seed,
        verbose=args.verbose, device="cpu",
    )
    model.learn(total_timesteps=args.total_timesteps)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.zip")
    agent = SB3Agent(model, seed=args.seed)
    results = {}
    for opp in [o for o in args.eval_opponents.split(",") if o]:
        res = run_arena([agent, opp], args.eval_deals, seed=args.seed + 1000, rules=rules,
                        progress=False, labels=["sb3", opp])
        print(res.table())
        margin, ci = res.margin("sb3", opp)
        results[opp] = {"margin": margin, "ci95": ci}
    print(f"saved {out / 'model.zip'}; margins {json.dumps(results)}")
    return {"model": str(out / "model.zip"), "eval": results}


def main(argv: list[str] | None = None) -> int:
    train(parse_args(Args, argv, __doc__))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
