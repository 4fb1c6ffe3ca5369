"""The agent that plays a saved sb3-contrib ``MaskablePPO`` model (``sb3:PATH``).

``training.sb3_maskable`` writes such models. SB3's ``.zip`` stores some of a model's settings
with cloudpickle, which runs code when it is read, so ``sb3:PATH`` never unpickles them: it
reads the zip itself, only its ``data`` and ``policy.pth`` entries, each after its declared size
is checked (:func:`agents.untrusted.read_entry`: no entry is inflated past what compression can
honestly give), takes the plain JSON settings, loads ``policy.pth`` with ``torch.load(...,
weights_only=True)`` once its tensors are sized (:func:`agents.untrusted.size_torch_file`) and
rebuilds the policy (an ``MlpPolicy``, ``MaskableActorCriticPolicy``
with its default tanh layers) from the tensors' shapes, each checked against that architecture
and this machine's memory before anything is built. A model it cannot rebuild that way (another
policy class, ``policy_kwargs`` other than ``net_arch``) is refused; ``sb3+trusted:PATH`` loads
any model with ``MaskablePPO.load``, which runs whatever code the file holds, so name a file
that way only if you trust whoever wrote it. Every refusal is a ``ValueError`` naming the file.
This module imports Stable-Baselines3 only when a model is loaded.
"""

from __future__ import annotations

import base64
import json
import pickletools
import zipfile
from pathlib import Path

import numpy as np
import torch

from agents.base import Agent
from agents.ppo import check_state, finite_or_refuse, load_weights_only, pick_actions
from agents.untrusted import read_entry
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.observation import OBS_SIZE

MODEL = "a MaskablePPO model saved by sb3-contrib"
"""What an ``sb3:`` file is, as the refusals say."""
POLICY_CLASS = "sb3_contrib.common.maskable.policies.MaskableActorCriticPolicy"
"""The policy class (``MlpPolicy``) of the models that ``sb3:PATH`` rebuilds."""
SPACES = {
    "observation_space": "<class 'gymnasium.spaces.box.Box'>",
    "action_space": "<class 'gymnasium.spaces.discrete.Discrete'>",
}
"""The spaces' types as SB3 writes them in the zip's ``data`` (plain text beside the pickle)."""
POLICY_KWARGS = {"net_arch", "ortho_init"}
"""``policy_kwargs`` that the rebuilt policy honours (``ortho_init`` only sets the initial
weights, which the saved ones replace)."""
TRUST_RISK = (
    "sb3+trusted:{path} loads it with MaskablePPO.load, which unpickles the model's settings "
    "with cloudpickle and runs any code they hold: use it only for a file you trust"
)


class SB3Agent(Agent):
    """Plays a MaskablePPO policy: samples from its masked action distribution, or takes its
    most likely action (``deterministic``)."""

    name = "sb3"
    uses_torch = True

    def __init__(self, model, seed=None, deterministic: bool = False):
        """``model``: a ``MaskablePPO`` model or its policy, kept as ``net`` (not ``policy``,
        which names the agents' ``policy(obs, mask) -> (probs, values)`` that analysis and
        search call: SB3's module takes tensors, not arrays)."""
        super().__init__(seed)
        self.net = getattr(model, "policy", model)
        self.deterministic = deterministic
        self._gen = torch.Generator().manual_seed(int(self.rng.integers(2**62)))

    @classmethod
    def load(
        cls, path: str | Path, seed=None, deterministic: bool = False, trusted: bool = False
    ) -> SB3Agent:
        """The agent of a saved model: its policy rebuilt from the weights alone (see above),
        or, with ``trusted``, the whole model loaded by ``MaskablePPO.load`` (runs code)."""
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"no SB3 model file at {str(path)!r}")
        policy = load_trusted(path) if trusted else load_policy(path)
        return cls(policy, seed=seed, deterministic=deterministic)

    def reseed(self, seed) -> None:
        super().reseed(seed)
        self._gen = torch.Generator().manual_seed(int(self.rng.integers(2**62)))

    @torch.no_grad()
    def _logits(self, obs: np.ndarray, mask: np.ndarray) -> torch.Tensor:
        dist = self.net.get_distribution(torch.from_numpy(obs), action_masks=mask)
        return dist.distribution.logits

    def _act(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return pick_actions(self._logits(obs, mask), self.deterministic, self._gen)


def load_trusted(path: Path):
    """The policy of ``MaskablePPO.load(path)``, which runs any code the file holds."""
    from sb3_contrib import MaskablePPO

    try:
        model = MaskablePPO.load(path, device="cpu")
    except Exception as exc:  # SB3 raises whatever its zip, JSON or torch reader raises
        raise ValueError(
            f"{path}: not a MaskablePPO model saved by sb3-contrib ({type(exc).__name__}: {exc})"
        ) from None
    return model.policy


def _pickled_class(entry) -> str | None:
    """``module.name`` of a class that SB3 stored by reference (a pickle that only names a
    global), read from the pickle's opcodes without unpickling it; None for anything else."""
    if not isinstance(entry, dict) or not isinstance(entry.get(":serialized:"), str):
        return None
    try:
        ops = list(pickletools.genops(base64.b64decode(entry[":serialized:"], validate=True)))
    except ValueError:  # not base64, or not a whole pickle
        return None
    names = [op.name for op, _, _ in ops]
    plain = {"PROTO", "FRAME", "SHORT_BINUNICODE", "BINUNICODE", "MEMOIZE", "BINPUT", "STOP"}
    if names.count("STACK_GLOBAL") != 1 or not set(names) <= plain | {"STACK_GLOBAL"}:
        return None
    strings = [arg for op, arg, _ in ops if op.name in ("SHORT_BINUNICODE", "BINUNICODE")]
    return ".".join(strings) if len(strings) == 2 else None


def _settings(path: Path, raw: bytes) -> dict:
    """The zip's ``data`` as JSON, with its pickled entries left as text; refuses a model
    whose policy this module does not rebuild."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ValueError(
            f"{path}: not a MaskablePPO model saved by sb3-contrib ('data' is not JSON: {exc})"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a MaskablePPO model saved by sb3-contrib ('data')")
    risk = TRUST_RISK.format(path=path)
    found = _pickled_class(data.get("policy_class"))
    if found != POLICY_CLASS:
        raise ValueError(
            f"{path}: its policy class is {found or 'not a plain class reference'}, and "
            f"sb3:PATH rebuilds only {POLICY_CLASS} (MlpPolicy); {risk}"
        )
    for key, kind in SPACES.items():
        entry = data.get(key)
        stored = entry.get(":type:") if isinstance(entry, dict) else None
        if stored != kind:
            raise ValueError(f"{path}: its {key} is {stored!r}, sb3:PATH plays {kind}; {risk}")
    kwargs = data.get("policy_kwargs", {})
    if not isinstance(kwargs, dict) or ":serialized:" in kwargs or set(kwargs) - POLICY_KWARGS:
        keys = sorted(kwargs) if isinstance(kwargs, dict) else kwargs
        raise ValueError(
            f"{path}: policy_kwargs {keys} that sb3:PATH does not rebuild (it takes "
            f"{sorted(POLICY_KWARGS)}); {risk}"
        )
    return kwargs


def _widths(path: Path, state: dict, prefix: str) -> list[int]:
    """The widths of the layers ``prefix.0``, ``prefix.2``, ... of an SB3 MLP state dict."""
    widths = []
    while (weight := state.get(f"{prefix}.{2 * len(widths)}.weight")) is not None:
        if not isinstance(weight, torch.Tensor) or weight.ndim != 2:
            raise ValueError(f"{path}: {prefix}.{2 * len(widths)}.weight is not a weight matrix")
        widths.append(int(weight.shape[0]))
    if not all(widths):
        raise ValueError(f"{path}: a layer of width 0 in {prefix}")
    return widths


def policy_shapes(pi: list[int], vf: list[int]) -> dict[str, tuple[int, ...]]:
    """The state dict shapes of a ``MaskableActorCriticPolicy`` with layers ``pi`` and ``vf``
    over the observation."""
    shapes = {}
    heads = (("policy_net", pi, "action_net", NUM_ACTIONS), ("value_net", vf, "value_net", 1))
    for net, widths, head, out in heads:
        before = OBS_SIZE
        for i, width in enumerate(widths):
            shapes[f"mlp_extractor.{net}.{2 * i}.weight"] = (width, before)
            shapes[f"mlp_extractor.{net}.{2 * i}.bias"] = (width,)
            before = width
        shapes[f"{head}.weight"] = (out, before)
        shapes[f"{head}.bias"] = (out,)
    return shapes


def load_policy(path: Path):
    """The ``MaskableActorCriticPolicy`` of a saved model, rebuilt from its weights without
    unpickling anything (see the module's docstring)."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(
            f"{path}: not a MaskablePPO model saved by sb3-contrib (not a zip archive: {exc})"
        ) from None
    with archive:
        kwargs = _settings(path, read_entry(archive, path, "data", MODEL))
        name = f"{path} (policy.pth)"
        weights = read_entry(archive, path, "policy.pth", MODEL)
        state = load_weights_only(weights, name, "SB3 weights", tensor_keys=None)
    if not isinstance(state, dict):
        raise ValueError(f"{name}: not a state dict")
    pi = _widths(path, state, "mlp_extractor.policy_net")
    vf = _widths(path, state, "mlp_extractor.value_net")
    arch = kwargs.get("net_arch")
    if arch is not None and arch != {"pi": pi, "vf": vf} and not (pi == vf and arch == pi):
        raise ValueError(f"{path}: policy_kwargs net_arch {arch} but layers pi {pi}, vf {vf}")
    check_state(name, state, policy_shapes(pi, vf), "a MaskableActorCriticPolicy")
    finite_or_refuse(name, state)

    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    policy = MaskableActorCriticPolicy(
        spaces.Box(-np.inf, np.inf, (OBS_SIZE,), np.float32),
        spaces.Discrete(NUM_ACTIONS),
        lr_schedule=lambda _: 0.0,
        net_arch={"pi": pi, "vf": vf},
    )
    policy.load_state_dict(state)
    policy.eval()
    return policy


def agent_factory(arg: str | None, seed=None, rules=None, trusted: bool = False) -> SB3Agent:
    """``sb3:PATH`` plays a saved MaskablePPO model, rebuilt from its weights alone;
    ``sb3+trusted:PATH`` loads it with ``MaskablePPO.load`` (runs code from the file)."""
    if not arg:
        spec = "sb3+trusted" if trusted else "sb3"
        raise ValueError(f"agent {spec!r} needs a model file: {spec}:path/to/model.zip")
    return SB3Agent.load(arg, seed=seed, trusted=trusted)
