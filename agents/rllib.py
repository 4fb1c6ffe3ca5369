"""The ``rllib:PATH`` agent and its RLlib module (``training.rllib_ppo`` trains it).

``PATH`` is the run's ``--out-dir`` (or its ``checkpoint`` folder); ``rllib:PATH:greedy`` takes
the most likely action instead of sampling. Only the module is loaded, without starting Ray, so
the arena, terminal play and the environments take an RLlib-trained policy like any other
agent. Needs the ``rllib`` extra.

Ray's own loader (``RLModule.from_checkpoint``) unpickles the checkpoint's ``*.pkl`` files with
cloudpickle, which runs any code they hold. ``rllib:PATH`` runs none: it builds
:class:`MaskedPolicyModule` itself, on the environment's spaces, and reads only the module's
weights (``module_state.pkl``, a pickle of numpy arrays) with
:class:`agents.untrusted.StateUnpickler`, which refuses every global but those that rebuild
numpy arrays and sizes every array against the file before it is allocated; the layer width
comes from the weights' shapes, each checked against the architecture and the memory limit
first.
``rllib+trusted:PATH`` loads through ``RLModule.from_checkpoint`` instead (any module class,
and code from the files runs): name a checkpoint that way only if you trust whoever wrote it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from gymnasium import spaces
from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_LEARNER_GROUP, COMPONENT_RL_MODULE
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import nn

from agents.base import Agent
from agents.ppo import check_state, finite_or_refuse, pick_actions, policy_shapes, split_options
from agents.untrusted import Refused, RefusedGlobal, StateUnpickler, plain_arrays
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.envs.common import observation_box
from zhuoji_env.fileio import recover_dir
from zhuoji_env.limits import check_memory
from zhuoji_env.observation import OBS_SIZE
from zhuoji_env.rules import Rules

POLICY_ID = "shared"
"""The one module (policy) that plays every seat."""
CHECKPOINT = "checkpoint"
"""The algorithm checkpoint's folder inside a run's ``--out-dir``."""
NEG_INF = -1e9
STATE_FILE = "module_state.pkl"
"""The module's weights in its checkpoint folder (Ray's ``Checkpointable.STATE_FILE_NAME``)."""
TRUST_RISK = (
    "rllib+trusted:{path} loads it with RLModule.from_checkpoint, which unpickles the "
    "checkpoint's files with cloudpickle and runs any code they hold: use it only for a "
    "checkpoint you trust"
)


class MaskedPolicyModule(TorchRLModule, ValueFunctionAPI):
    """A policy and value MLP over ``obs["observation"]`` whose logits are masked by
    ``obs["action_mask"]`` (illegal actions at -1e9). ``model_config``: ``{"hidden": int}``."""

    def setup(self):
        hidden = int(self.model_config.get("hidden", 256))
        obs_size = self.observation_space["observation"].shape[0]
        self.body = nn.Sequential(
            nn.Linear(obs_size, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.pi = nn.Linear(hidden, self.action_space.n)
        self.vf = nn.Linear(hidden, 1)
        nn.init.orthogonal_(self.pi.weight, 0.01)
        nn.init.zeros_(self.pi.bias)

    def _forward(self, batch, **kwargs):
        obs = batch[Columns.OBS]
        h = self.body(obs["observation"])
        logits = self.pi(h).masked_fill(obs["action_mask"] == 0, NEG_INF)
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: h}

    def compute_values(self, batch, embeddings=None):
        if embeddings is None:
            embeddings = self.body(batch[Columns.OBS]["observation"])
        return self.vf(embeddings).squeeze(-1)


def checkpoint_dir(path: str | Path) -> Path:
    """The algorithm checkpoint in ``path``: a run's ``--out-dir`` or the checkpoint itself.
    A run's checkpoint left parked by a kill in the middle of its replacement is put back first
    (:func:`zhuoji_env.fileio.recover_dir`)."""
    path = Path(path)
    recover_dir(path / CHECKPOINT)
    if (path / CHECKPOINT / COMPONENT_LEARNER_GROUP).is_dir():
        return path / CHECKPOINT
    if (path / COMPONENT_LEARNER_GROUP).is_dir():
        return path
    raise ValueError(
        f"no RLlib checkpoint at {str(path)!r}: expected a training.rllib_ppo --out-dir "
        f"(with {CHECKPOINT}/{COMPONENT_LEARNER_GROUP}/) or an algorithm checkpoint folder"
    )


class RLlibAgent(Agent):
    """Plays an RLlib module: samples from its masked policy, or takes its argmax."""

    name = "rllib"
    uses_torch = True

    def __init__(self, module, seed=None, greedy: bool = False):
        super().__init__(seed)
        self.module = module
        self.greedy = greedy
        self._gen = torch.Generator().manual_seed(int(self.rng.integers(2**62)))

    def reseed(self, seed) -> None:
        super().reseed(seed)
        self._gen = torch.Generator().manual_seed(int(self.rng.integers(2**62)))

    @classmethod
    def load(
        cls, path: str | Path, seed=None, greedy: bool = False, trusted: bool = False, rules=None
    ) -> RLlibAgent:
        """The agent of a run's ``--out-dir`` or of its algorithm checkpoint folder: the module
        rebuilt from its weights alone (see above), or, with ``trusted``, loaded by
        ``RLModule.from_checkpoint`` (runs code from the files). ``rules``: those of the
        environment whose spaces the module is built on (their bounds do not change it)."""
        ckpt = checkpoint_dir(path)
        module_dir = (
            ckpt / COMPONENT_LEARNER_GROUP / COMPONENT_LEARNER / COMPONENT_RL_MODULE / POLICY_ID
        )
        if not module_dir.is_dir():
            raise ValueError(f"{ckpt}: no module {POLICY_ID!r} in the checkpoint ({module_dir})")
        if trusted:
            try:
                module = RLModule.from_checkpoint(str(module_dir.resolve()))
            except Exception as exc:  # Ray raises whatever its unpickling or restore raises
                raise ValueError(
                    f"{module_dir}: RLModule.from_checkpoint failed ({type(exc).__name__}: {exc})"
                ) from None
        else:
            module = load_module(module_dir, path, rules)
        module.eval()
        return cls(module, seed=seed, greedy=greedy)

    @torch.no_grad()
    def _act(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch = {
            Columns.OBS: {
                "observation": torch.from_numpy(obs),
                "action_mask": torch.from_numpy(mask.astype(np.int8)),
            }
        }
        logits = self.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        return pick_actions(logits, self.greedy, self._gen)


def read_state(module_dir: Path, spec_path) -> dict[str, torch.Tensor]:
    """The weights in ``module_dir/module_state.pkl`` as tensors, unpickled by
    :class:`StateUnpickler` (no code runs); ``ValueError`` naming the file otherwise."""
    risk = TRUST_RISK.format(path=spec_path)
    if (module_dir / "module_state.msgpack").is_file():
        raise ValueError(
            f"{module_dir}: the module state is saved as msgpack, which rllib:PATH does not "
            f"read (its numpy decoder unpickles object arrays); {risk}"
        )
    file = module_dir / STATE_FILE
    if not file.is_file():
        raise ValueError(f"{module_dir}: no {STATE_FILE}, not an RLlib module checkpoint")
    size = file.stat().st_size
    check_memory(f"{file} ({size:,} bytes)", 2 * size)  # the bytes read, the arrays on them
    try:
        with open(file, "rb") as f:
            state = plain_arrays(StateUnpickler(f, budget=size).load())
    except RefusedGlobal as exc:
        raise ValueError(
            f"{file}: refused, it names {exc}, which could run code when loaded; nothing from "
            f"it was run (a module state holds only numpy arrays); {risk}"
        ) from None
    except Refused as exc:
        raise ValueError(f"{file}: refused, it declares {exc}; not an RLlib module state") from None
    except Exception as exc:  # a damaged pickle or array makes them raise almost anything
        raise ValueError(
            f"{file}: not an RLlib module state, a damaged pickle ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, np.ndarray) and v.dtype.kind == "f"
        for k, v in state.items()
    ):
        raise ValueError(f"{file}: not an RLlib module state (a dict of float arrays by name)")
    return {k: torch.from_numpy(v if v.flags.writeable else v.copy()) for k, v in state.items()}


def load_module(module_dir: Path, spec_path, rules=None) -> MaskedPolicyModule:
    """The :class:`MaskedPolicyModule` of a checkpoint's module folder, built on the
    environment's spaces (under ``rules``) and loaded from its weights without running code
    from the files; every shape is checked before the module is built."""
    file = module_dir / STATE_FILE
    state = read_state(module_dir, spec_path)
    first = state.get("body.0.weight")
    if first is None or first.ndim != 2:
        raise ValueError(f"{file}: not a MaskedPolicyModule state (no body.0.weight matrix)")
    hidden = int(first.shape[0])
    if hidden < 1:
        raise ValueError(f"{file}: a layer of width {hidden}; it must be at least 1")
    shapes = policy_shapes(hidden, OBS_SIZE, value="vf")
    check_state(str(file), state, shapes, "a MaskedPolicyModule")
    finite_or_refuse(str(file), state)
    obs_space = spaces.Dict(
        {
            "observation": observation_box(Rules.make(rules)),
            "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), dtype=np.int8),
        }
    )
    module = MaskedPolicyModule(
        observation_space=obs_space,
        action_space=spaces.Discrete(NUM_ACTIONS),
        inference_only=False,
        model_config={"hidden": hidden},
    )
    module.set_state(state)
    return module


def agent_factory(arg: str | None, seed=None, rules=None, trusted: bool = False) -> RLlibAgent:
    """``rllib:PATH`` samples from the policy; ``rllib:PATH:greedy`` takes its argmax. The
    module is rebuilt from its weights alone; ``rllib+trusted:PATH`` loads it with
    ``RLModule.from_checkpoint`` (runs code from the files)."""
    spec = "rllib+trusted" if trusted else "rllib"
    if not arg:
        raise ValueError(f"agent {spec!r} needs a checkpoint: {spec}:path/to/out-dir")
    path, options = split_options(arg, ("greedy",))
    return RLlibAgent.load(path, seed=seed, greedy=bool(options), trusted=trusted, rules=rules)
