"""The PPO policy network, its checkpoint files, and the agent that plays one (``ppo:PATH``).

A checkpoint is a ``torch.save`` dict of plain data and tensors only: ``model`` (the state
dict), ``hidden`` (layer width), ``obs_size`` and ``obs_version`` (the observation encoding it
was trained on: ``zhuoji-obs-v1``; ``zhuoji-obs-v2``, which the network derives from the
v1 observation it is given; or ``zhuoji-obs-v2+rule``, v2 and the ``rule`` agent's advice:
:class:`NetInput`), ``versions`` (the package and environment versions it was made under,
:func:`zhuoji_env.versions.stamp`; a checkpoint written before they were stated loads by its
``obs_version`` alone), and whatever the trainer adds (counters, its flags, ``rules`` in
record form, the optimizer state). It is read with
``torch.load(..., weights_only=True)``, which refuses to run code, once its tensors are sized
(:mod:`agents.untrusted`: loading costs no more memory than the file's size, and tensors are
only under ``model``, ``optimizer``, ``critic`` and ``magnet``), and checked before use: a file
that is not a checkpoint, is truncated, holds objects other than plain data, declares more than
it holds, has a field that does not hold what it should (:mod:`agents.checkpoint_fields`), was
trained on another observation size or version, or holds NaN or infinite weights raises
``ValueError`` naming the file and what is wrong.
Four trained policies ship inside the package (``agents/policies``: ``ppo-guiyang``,
``ppo-classic``, ``ppo-app``, the strongest per preset, and ``ppo-scratch``, guiyang's
from-scratch reference; each with a provenance file), named like any
agent: ``make_agent("ppo-guiyang")``, ``ppo-app:greedy`` (:func:`shipped_factory`).
``PPOAgent.load(path)`` plays it through the common agent interface, so
``python -m agents.arena --agents ppo:runs/ppo/latest.pt,rule`` evaluates it. A checkpoint loads
on the CPU unless a device is named (:func:`resolve_device`: ``cpu``, ``cuda`` or ``auto``, which
is CUDA when torch sees it), e.g. ``ppo:PATH:cuda`` or ``ppo:PATH:greedy:auto``. This module
imports torch; the registry imports it only when a ``ppo:`` agent is made.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import shlex
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from agents.base import DEVICES, Agent, check_device_name
from agents.checkpoint_fields import check_fields, check_provenance
from agents.rule import VERSION_RULE, RuleAgent
from agents.untrusted import size_torch_file
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.engine.game import check_flag, is_real
from zhuoji_env.fileio import write_atomic
from zhuoji_env.limits import check_memory
from zhuoji_env.observation import (
    FEATURE_SLICES,
    OBS_SIZE,
    OBS_SIZES,
    SLICES,
    VERSION,
    VERSION_V2,
    with_features,
)
from zhuoji_env.rules import Rules
from zhuoji_env.versions import ENVIRONMENT, __version__, check_stamp, stamp

NEG_INF = -1e9
HINT_START = OBS_SIZES[VERSION_V2]
"""Where ``rule``'s advice starts in a ``zhuoji-obs-v2+rule`` input (after the v2 blocks)."""
INPUT_SIZES = {**OBS_SIZES, VERSION_RULE: HINT_START + 2 * NUM_ACTIONS}
"""Size of each input a network may read: the observation versions, and ``zhuoji-obs-v2+rule``
(:class:`NetInput`)."""


def resolve_device(name: str) -> torch.device:
    """The torch device of a device name: ``cpu``, ``cuda``, or ``auto`` (CUDA when torch sees
    a CUDA device, else the CPU). ``cuda`` without a CUDA device raises ``ValueError``."""
    check_device_name(name)
    cuda = torch.cuda.is_available()
    if name == "cuda" and not cuda:
        cu = torch.version.cuda
        built = f"built with CUDA {cu}" if cu else "a CPU-only build"
        raise ValueError(
            f"device 'cuda': torch sees no CUDA device (torch {torch.__version__}, {built}); "
            "use 'cpu', or 'auto' to take CUDA only when there is one"
        )
    return torch.device("cuda" if name == "cuda" or (name == "auto" and cuda) else "cpu")


class PolicyNet(nn.Module):
    """An MLP with a policy head over the 86 actions and a value head, over observations of
    version ``obs_version`` (:data:`INPUT_SIZES`, :class:`NetInput`)."""

    def __init__(self, hidden: int = 256, obs_version: str = VERSION):
        super().__init__()
        if obs_version not in INPUT_SIZES:
            raise ValueError(f"observation version {obs_version!r}: one of {list(INPUT_SIZES)}")
        self.hidden = hidden
        self.obs_version = obs_version
        self.in_size = INPUT_SIZES[obs_version]
        self.body = nn.Sequential(
            nn.Linear(self.in_size, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
        )
        self.pi = nn.Linear(hidden, NUM_ACTIONS)
        self.v = nn.Linear(hidden, 1)
        nn.init.orthogonal_(self.pi.weight, 0.01)
        nn.init.zeros_(self.pi.bias)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor):
        """Masked logits (illegal actions at -1e9, before any softmax) and values."""
        return self.after_first_layer(self.body[0](obs), mask)

    def after_first_layer(self, pre: torch.Tensor, mask: torch.Tensor):
        """:meth:`forward` from the first layer's output ``pre`` on (the learner computes that
        layer from the observations' nonzeros, :class:`training.learner.SparseRowsLinear`)."""
        h = self.body[3](self.body[2](self.body[1](pre)))
        logits = self.pi(h).masked_fill(~mask, NEG_INF)
        return logits, self.v(h).squeeze(-1)


class NetInput:
    """What a network of input version ``version`` reads, made from v1 observations ``[k,
    OBS_SIZE]`` and their masks ``[k, 86]`` under ``rules`` (those it was trained under):

    - ``zhuoji-obs-v1``: the observations themselves;
    - ``zhuoji-obs-v2``: with their derived blocks (:func:`~zhuoji_env.observation.features`);
    - ``zhuoji-obs-v2+rule``: v2 followed by the advice of the ``rule`` agent
      (:meth:`agents.rule.RuleAgent.advice`, under the same rules), two blocks of 86:
      ``rule_choice``, 1 at the action ``rule`` plays; ``rule_gap``, per action ``rule``
      weighed, ``1 - exp(-d / 2)`` where ``d`` is how far its score falls below the best one
      (in plain-hand values, 平胡), and 1 for the actions it did not weigh. A policy on this
      input starts from ``rule``'s judgement and learns where to depart from it (residual
      play); it reads nothing ``rule`` does not, so nothing hidden.
    """

    def __init__(self, version: str, rules=None):
        if version not in INPUT_SIZES:
            raise ValueError(f"observation version {version!r}: one of {list(INPUT_SIZES)}")
        self.version = version
        self.rules = Rules.make(rules)
        self.rule = RuleAgent(rules=self.rules) if version == VERSION_RULE else None

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.version == VERSION:
            return obs
        x = with_features(obs, self.rules.pattern_table)
        if self.rule is None:
            return x
        return np.concatenate([x, self.rule_hint(obs, mask)], axis=1)

    @property
    def blocks(self) -> dict[str, slice]:
        """Where each block lies in what this reads: the observation's blocks, then (v2) the
        derived ones, then (v2+rule) ``rule_choice`` and ``rule_gap``."""
        out = dict(SLICES)
        if self.version != VERSION:
            derived = FEATURE_SLICES.items()
            out |= {n: slice(OBS_SIZE + f.start, OBS_SIZE + f.stop) for n, f in derived}
        if self.rule is not None:
            out["rule_choice"] = slice(HINT_START, HINT_START + NUM_ACTIONS)
            out["rule_gap"] = slice(HINT_START + NUM_ACTIONS, HINT_START + 2 * NUM_ACTIONS)
        return out

    def rule_hint(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The ``rule_choice`` and ``rule_gap`` blocks, float32 ``[k, 172]``."""
        k = obs.shape[0]
        choice, scores = self.rule.advice(obs, mask)
        hint = np.zeros((k, 2 * NUM_ACTIONS), dtype=np.float32)
        hint[np.arange(k), choice] = 1.0
        weighed = ~np.isnan(scores)
        best = np.max(np.where(weighed, scores, -np.inf), axis=1, keepdims=True)
        d = np.where(weighed, best - scores, np.inf) / self.rules.pattern_table["pinghu"]
        hint[:, NUM_ACTIONS:] = -np.expm1(-d / 2)
        return hint


def save_checkpoint(path: str | Path, net: PolicyNet, **extra) -> None:
    """Write ``net`` and ``extra`` (plain data and tensors only) atomically to ``path``, with
    the versions it is made under (:func:`zhuoji_env.versions.stamp`; ``extra`` may give a
    network's own, as a shipped copy of an older checkpoint keeps its)."""
    ckpt = {
        "model": net.state_dict(),
        "hidden": int(net.hidden),
        "obs_size": net.in_size,
        "obs_version": net.obs_version,
        "versions": stamp(),
        **extra,
    }
    write_atomic(path, lambda tmp: torch.save(ckpt, tmp))


_REFUSED = (
    re.compile(r"GLOBAL (\S+) was not an allowed global"),
    re.compile(r"GLOBAL (\S+) whose module \S+ is blocked"),
    re.compile(r"reduce for unrecognized function (.+?)(?: which belongs|$)", re.MULTILINE),
    re.compile(r"Can only (?:create new object|build) .*but got (.+)$", re.MULTILINE),
)
"""How torch's ``weights_only`` unpickler words a refused global, function or class (torch
2.6 to 2.13: most globals "was not an allowed global", those of ``os``, ``posix``, ``nt`` and
``sys`` "whose module ... is blocked")."""


def refused_global(exc: BaseException) -> str | None:
    """The global, function or class that ``torch.load(..., weights_only=True)`` refused to load
    in ``exc``, or None when ``exc`` is another failure (a damaged or foreign file)."""
    text = str(exc)
    for pattern in _REFUSED:
        found = pattern.search(text)
        if found:
            return found.group(1).rstrip(".")
    return None


TENSOR_KEYS = ("model", "optimizer", "critic", "magnet")
"""The keys of a checkpoint that hold tensors (the network's, the optimizer's, the oracle
critic's and the magnet anchor's state); every other key holds plain data."""


def load_weights_only(
    source: Path | bytes,
    name: str,
    what: str = "a PPO checkpoint",
    tensor_keys: tuple[str, ...] | None = TENSOR_KEYS,
):
    """What ``torch.save`` wrote to ``source`` (a file, or the bytes of one), read with
    ``torch.load(..., weights_only=True)``, which runs no code from it, once what it declares
    is sized (:func:`agents.untrusted.size_torch_file`: tensors only under ``tensor_keys`` of
    its top-level dict, None: anywhere). ``ValueError`` naming ``name`` when it is refused: it
    holds a global that could run code, declares more than it holds, or is not a whole
    ``torch.save`` file."""
    size_torch_file(source, name, what, tensor_keys)
    try:
        return torch.load(
            io.BytesIO(source) if isinstance(source, bytes) else source,
            map_location="cpu",
            weights_only=True,
        )
    except Exception as exc:  # a damaged file makes torch's unpickler raise almost anything
        refused = refused_global(exc)
        if refused is not None:
            raise ValueError(
                f"{name}: refused, it holds objects other than tensors and plain data "
                f"({refused}), which could run code when loaded; nothing from it was run"
            ) from None
        raise ValueError(
            f"{name}: not {what}, a damaged torch.save archive ({type(exc).__name__})"
        ) from None


WEIGHT_COPIES = 3
"""Copies of a network's float32 weights that loading it may hold at once: the network, the
file's tensors once read whole (an expanded tensor is stored as a single element), and the
temporaries of building the network and of checking the weights for NaN."""


def check_state(name: str, state: dict, expected: dict[str, tuple[int, ...]], what: str) -> None:
    """Refuse (``ValueError`` naming ``name``) a state dict whose keys are not those of
    ``expected`` or whose values are not floating-point tensors of the expected shapes, then
    one whose network would need more memory than this machine has
    (:func:`zhuoji_env.limits.check_memory`), before anything of that size is allocated."""
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected))
    if missing or extra:
        raise ValueError(
            f"{name}: the state dict does not fit {what}: missing {missing}, unexpected {extra}"
        )
    for key, shape in expected.items():
        value = state[key]
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            kind = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
            raise ValueError(f"{name}: {key} is {kind}, not a floating-point tensor")
        if tuple(value.shape) != shape:
            raise ValueError(
                f"{name}: {key} has shape {tuple(value.shape)}, {what} of this size needs {shape}"
            )
    weights = sum(math.prod(shape) for shape in expected.values())
    check_memory(f"{name}: {what} of {weights:,} weights", WEIGHT_COPIES * 4 * weights)


def policy_shapes(hidden: int, in_size: int, value: str = "v") -> dict[str, tuple[int, ...]]:
    """The state dict shapes of a :class:`PolicyNet` (``value``: the value head's name, ``vf``
    in the RLlib module :class:`agents.rllib.MaskedPolicyModule`)."""
    return {
        "body.0.weight": (hidden, in_size),
        "body.0.bias": (hidden,),
        "body.2.weight": (hidden, hidden),
        "body.2.bias": (hidden,),
        "pi.weight": (NUM_ACTIONS, hidden),
        "pi.bias": (NUM_ACTIONS,),
        f"{value}.weight": (1, hidden),
        f"{value}.bias": (1,),
    }


def finite_or_refuse(name: str, state: dict) -> None:
    """Refuse (``ValueError`` naming ``name``) weights that hold NaN or infinite values."""
    bad = [k for k, v in state.items() if not torch.isfinite(v).all()]
    if bad:
        raise ValueError(f"{name}: NaN or infinite weights in {', '.join(bad)}")


def _read(path: Path) -> dict:
    """The checkpoint dict of ``path``, loaded without running code."""
    if path.is_dir():
        files = sorted(p.name for p in path.glob("*.pt"))
        if not files:
            raise ValueError(f"{str(path)!r} is a folder without .pt files, not a checkpoint file")
        pick = "latest.pt" if "latest.pt" in files else files[0]
        raise ValueError(
            f"{str(path)!r} is a folder, not a checkpoint file: name a .pt file in it, e.g. "
            f"{str(path / pick)!r} (its .pt files: {', '.join(files[:4])}"
            f"{', ...' if len(files) > 4 else ''})"
        )
    if not path.is_file():
        raise ValueError(f"no checkpoint file at {str(path)!r}")
    if path.stat().st_size == 0:
        raise ValueError(f"{path}: empty file, not a PPO checkpoint")
    ckpt = load_weights_only(path, str(path))
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("model"), dict):
        raise ValueError(f"{path}: not a zhuoji-env PPO checkpoint (no 'model' state dict)")
    check_fields(ckpt, str(path))
    return ckpt


def made_under(ckpt: dict, path: Path) -> str:
    """`` (zhuoji-env V, environment E)``: the versions a checkpoint states, checked (its
    ``versions`` must be a stamp, ``ValueError`` naming the file otherwise); empty for a
    checkpoint written before versions were stated, which loads by its ``obs_version`` alone."""
    if "versions" not in ckpt:
        return ""
    made = check_stamp(ckpt["versions"], str(path))
    return f" (zhuoji-env {made['zhuoji_env']}, environment {made['environment']})"


def load_checkpoint(path: str | Path, device: str = "cpu") -> tuple[PolicyNet, dict]:
    """The network of a checkpoint file, on ``device`` (:func:`resolve_device`), and the whole
    checkpoint dict (checked, see above; its tensors stay on the CPU). Every declared size (the
    input and layer widths, each tensor's shape) is checked against the network's architecture
    and this machine's memory before the network is built."""
    where = resolve_device(device)
    path = Path(path)
    ckpt = _read(path)
    made = made_under(ckpt, path)
    version = ckpt.get("obs_version")
    if version not in INPUT_SIZES:
        raise ValueError(
            f"{path}: trained on observations {version!r}{made}, this package "
            f"reads {', '.join(map(repr, INPUT_SIZES))} (zhuoji-env {__version__}, environment "
            f"{ENVIRONMENT}, whose observations are {VERSION}): a network of another "
            "observation version would misread its input"
        )
    state = ckpt["model"]
    first = state.get("body.0.weight")
    if not isinstance(first, torch.Tensor) or first.ndim != 2:
        raise ValueError(f"{path}: the 'model' state dict is not a PolicyNet (no body.0.weight)")
    hidden, obs_size = first.shape
    if obs_size != INPUT_SIZES[version]:
        raise ValueError(
            f"{path}: trained on observations of size {obs_size}, this package encodes "
            f"{version} with {INPUT_SIZES[version]}"
        )
    for key, size in (("hidden", hidden), ("obs_size", obs_size)):
        if key in ckpt and ckpt[key] != size:
            raise ValueError(f"{path}: declares {key} {ckpt[key]!r}, but its weights say {size}")
    if hidden < 1:
        raise ValueError(f"{path}: a PolicyNet layer of width {hidden}; it must be at least 1")
    check_state(str(path), state, policy_shapes(hidden, obs_size), "a PolicyNet")
    finite_or_refuse(str(path), state)
    net = PolicyNet(int(hidden), version)
    net.load_state_dict(state)
    net.eval()
    return net.to(where), ckpt


REWARD_SCALE = 0.1
"""The trainer's default ``--reward-scale``: a network's value head predicts the seat's
settlement of the hand times this, unless its training said otherwise (:func:`reward_scale_of`)."""


def check_reward_scale(value, where: str) -> float:
    """``value`` as a float, if it is a finite number above 0 (the search divides values by it);
    else ``ValueError`` naming ``where`` (the file and field it came from)."""
    if not is_real(value) or not math.isfinite(value) or not value > 0:
        raise ValueError(f"{where} is {value!r}: the reward scale must be a finite number > 0")
    return float(value)


def reward_scale_of(ckpt: dict, name: str = "checkpoint") -> float:
    """The reward scale a checkpoint's value head was trained with: its trainer arguments', else
    that of the last ``training.ppo_selfplay`` stage (a shipped policy keeps its stages, not its
    arguments; a stage whose command has no ``--reward-scale`` ran at :data:`REWARD_SCALE`),
    else :data:`REWARD_SCALE`. ``ckpt``'s fields are checked already
    (:func:`agents.checkpoint_fields.check_fields`, as :func:`load_checkpoint` loads it); a
    stage's ``--reward-scale`` that is not a finite number > 0 is a ``ValueError`` naming
    ``name`` (the checkpoint file) and the stage."""
    args = ckpt.get("args")
    if isinstance(args, dict) and "reward_scale" in args:
        return check_reward_scale(args["reward_scale"], f"{name}: args['reward_scale']")
    stages = ckpt.get("stages") or []
    for k in range(len(stages) - 1, -1, -1):
        field = f"stages[{k}]['command']"
        words = shlex.split(stages[k].get("command", ""))
        if "training.ppo_selfplay" not in words:
            continue
        for i, word in enumerate(words):
            if word.startswith("--reward-scale="):
                return _scale_word(word.partition("=")[2], f"{name}: {field}'s --reward-scale")
            if word == "--reward-scale" and i + 1 < len(words):
                return _scale_word(words[i + 1], f"{name}: {field}'s --reward-scale")
        break
    return REWARD_SCALE


def value_trained_of(ckpt: dict) -> bool:
    """Whether a checkpoint's value head was trained: not where its run (its trainer arguments,
    else its last ``training.ppo_selfplay`` stage, as :func:`reward_scale_of` reads them) had
    ``--oracle-critic``, whose separate critic gave the values while the network's own head
    stayed as it was initialised. ``ckpt``'s fields are checked already, as for
    :func:`reward_scale_of`."""
    args = ckpt.get("args")
    if isinstance(args, dict) and "oracle_critic" in args:
        return not args["oracle_critic"]
    for stage in reversed(ckpt.get("stages") or []):
        words = shlex.split(stage.get("command", ""))
        if "training.ppo_selfplay" in words:
            return "--oracle-critic" not in words
    return True


def _scale_word(word: str, where: str) -> float:
    """The reward scale of a command's word, checked (:func:`check_reward_scale`)."""
    try:
        value = float(word)
    except ValueError:
        raise ValueError(f"{where} is {word!r}, not a number") from None
    return check_reward_scale(value, where)


class PPOAgent(Agent):
    """Plays a policy network, on the device its weights are on: samples from its masked
    policy, or takes its argmax. ``rules`` (what a v2 network's wait values, and the advice of
    ``rule`` to a ``v2+rule`` one, are counted in)
    are the rules it was trained under; :meth:`load` takes them from the checkpoint.
    ``value_trained`` False (a network trained beside an oracle critic, whose own value head
    was never trained) makes :meth:`policy`'s values NaN."""

    name = "ppo"
    uses_torch = True

    def __init__(
        self,
        net: PolicyNet,
        seed=None,
        greedy: bool = False,
        rules=None,
        reward_scale: float = REWARD_SCALE,
        value_trained: bool = True,
    ):
        if not isinstance(net, nn.Module) or not hasattr(net, "obs_version"):
            raise TypeError(
                f"PPOAgent plays a PolicyNet, got {type(net).__name__}; for a checkpoint file "
                "use PPOAgent.load(path) or make_agent('ppo:PATH')"
            )
        super().__init__(seed)
        self.reward_scale = check_reward_scale(reward_scale, "reward_scale")
        self.value_trained = check_flag(value_trained, "value_trained")
        self.net = net
        self.greedy = check_flag(greedy, "greedy")
        self.read = NetInput(net.obs_version, rules)
        self.device = next(net.parameters()).device
        self._gen = self._generator()

    def _generator(self) -> torch.Generator:
        return torch.Generator(self.device).manual_seed(int(self.rng.integers(2**62)))

    def reseed(self, seed) -> None:
        super().reseed(seed)
        self._gen = self._generator()

    @classmethod
    def load(
        cls, path: str | Path, seed=None, greedy: bool = False, device: str = "cpu"
    ) -> PPOAgent:
        """The agent of a checkpoint file (:func:`load_checkpoint`); its ``rules`` and reward
        scale (:func:`reward_scale_of`) are checked too, a bad one named with the file."""
        greedy = check_flag(greedy, "greedy")
        net, ckpt = load_checkpoint(path, device)
        rules = Rules.make(ckpt.get("rules"))  # checked as the checkpoint was loaded
        return cls(
            net,
            seed=seed,
            greedy=greedy,
            rules=rules,
            reward_scale=reward_scale_of(ckpt, str(path)),
            value_trained=value_trained_of(ckpt),
        )

    def _forward(self, obs: np.ndarray, mask: np.ndarray):
        return self._forward_input(self.read(obs, mask), mask)

    def _forward_input(self, x: np.ndarray, mask: np.ndarray):
        o = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(self.device)
        return self.net(o, torch.from_numpy(mask).to(self.device))

    @torch.inference_mode()
    def input_policy(self, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The probabilities ``[k, 86]`` of the network's input ``x`` ``[k, in_size]``, as
        ``read`` makes it from observations (:attr:`NetInput.blocks` says where each block
        lies): what :func:`agents.analysis.block_ablation` zeroes block by block."""
        return torch.softmax(self._forward_input(x, mask)[0], -1).double().cpu().numpy()

    @torch.inference_mode()
    def _act(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return pick_actions(self._forward(obs, mask)[0], self.greedy, self._gen)

    @torch.inference_mode()
    def policy(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(probs [k, 86], value [k])`` of v1 observations ``[k, OBS_SIZE]`` and masks (the
        analysis tools' interface, :mod:`agents.analysis`); the values are NaN where the value
        head was never trained (``value_trained``)."""
        logits, value = self._forward(obs, mask)
        value = value.double().cpu().numpy()
        if not self.value_trained:
            value = np.full_like(value, np.nan)
        return torch.softmax(logits, -1).double().cpu().numpy(), value


def pick_actions(logits: torch.Tensor, greedy: bool, gen: torch.Generator) -> np.ndarray:
    """Actions from masked logits ``[k, A]``: their argmax, or a draw from their softmax."""
    if greedy:
        return logits.argmax(-1).cpu().numpy()
    probs = torch.softmax(logits, -1)
    return torch.multinomial(probs, 1, generator=gen).squeeze(-1).cpu().numpy()


def split_options(
    arg: str, options: tuple[str, ...], exclusive: tuple[str, ...] = ()
) -> tuple[str, list[str]]:
    """``PATH:opt:opt`` -> ``(PATH, [opt, ...])``, peeling known ``options`` off the end (a path
    may itself contain ``:``). An option given twice, or two of the mutually ``exclusive`` ones,
    raises ``ValueError``; so does an unknown one after a path that exists (``PATH:foo``)."""
    path, found = arg, []
    while True:
        head, sep, last = path.rpartition(":")
        if not sep or not head or last not in options:
            break
        found.insert(0, last)
        path = head
    allowed = ", ".join(options)
    if not Path(path).exists():
        head, sep, _ = path.rpartition(":")
        while sep and head:
            if Path(head).exists():
                unknown = [o for o in path[len(head) + 1 :].split(":") if o not in options]
                raise ValueError(
                    f"{arg!r}: unknown option {', '.join(map(repr, unknown))} after the path "
                    f"{head!r}; the options are {allowed}"
                )
            head, sep, _ = head.rpartition(":")
    check_options(arg, found, options, exclusive)
    return path, found


def check_options(
    arg: str, found: list[str], options: tuple[str, ...], exclusive: tuple[str, ...] = ()
) -> None:
    """Refuse (``ValueError``) an option of ``found`` that is not one of ``options``, given
    twice, or two of the mutually ``exclusive`` ones; ``arg`` is the spec named in the error."""
    allowed = ", ".join(options)
    unknown = [o for o in found if o not in options]
    if unknown:
        raise ValueError(
            f"{arg!r}: unknown option {', '.join(map(repr, unknown))}; the options are {allowed}"
        )
    repeated = sorted({o for o in found if found.count(o) > 1})
    if repeated:
        raise ValueError(
            f"{arg!r}: option {', '.join(map(repr, repeated))} given more than once; "
            f"each of {allowed} at most once"
        )
    clash = [o for o in found if o in exclusive]
    if len(clash) > 1:
        raise ValueError(
            f"{arg!r}: conflicting options {' and '.join(map(repr, clash))}; "
            f"at most one of {', '.join(exclusive)}"
        )


def agent_factory(arg: str | None, seed=None, rules=None) -> PPOAgent:
    """``ppo:PATH`` samples from the policy on the CPU; options after the path, in any order,
    each at most once: ``:greedy`` takes its argmax, one of ``:cpu``, ``:cuda`` or ``:auto``
    picks the device."""
    if not arg:
        raise ValueError("agent 'ppo' needs a checkpoint: ppo:path/to/ckpt.pt[:greedy][:DEVICE]")
    path, options = split_options(arg, OPTIONS, exclusive=DEVICES)
    return _load_with_options(path, options, seed)


def _load_with_options(path: str | Path, options: list[str], seed) -> PPOAgent:
    devices = [o for o in options if o != "greedy"]
    device = devices[0] if devices else "cpu"
    return PPOAgent.load(path, seed=seed, greedy="greedy" in options, device=device)


OPTIONS = ("greedy", *DEVICES)
"""The options after a checkpoint agent's spec (``ppo:PATH:greedy:cuda``, ``ppo-app:greedy``)."""

POLICY_DIR = Path(__file__).resolve().parent / "policies"


def shipped_policy(name: str) -> Path:
    """The checkpoint file of a shipped policy (:data:`agents.registry.SHIPPED_POLICIES`)."""
    path = POLICY_DIR / f"{name}.pt"
    if not path.is_file():
        here = sorted(p.stem for p in POLICY_DIR.glob("*.pt"))
        raise ValueError(
            f"no shipped policy {name!r} in {POLICY_DIR} (the files there: {here}); the package "
            "ships each policy of agents.registry.SHIPPED_POLICIES: an install without them is "
            "incomplete"
        )
    return path


def provenance(name: str) -> dict:
    """A shipped policy's provenance (``NAME.json``): how it was trained (``stages``: command,
    commit, decisions, seconds), the checkpoint's sha256, and its arena tables; a file that
    does not parse, or lacks a field or holds a wrong one
    (:func:`agents.checkpoint_fields.check_provenance`), is a ``ValueError`` naming the file and
    the field."""
    path = shipped_policy(name).with_suffix(".json")
    if not path.is_file():
        raise ValueError(f"shipped policy {name!r} has no provenance file {path}")
    size = path.stat().st_size
    check_memory(f"{path} ({size:,} bytes)", 16 * size)  # the text and the objects parsed
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(
            f"{path}: not the provenance of shipped policy {name!r}, it does not parse as JSON "
            f"({exc}); restore it (git checkout agents/policies) or ship the policy again"
        ) from None
    check_provenance(record, str(path))
    return record


def check_shipped_pair(name: str) -> None:
    """Refuse a shipped policy whose ``NAME.pt`` is not the checkpoint its ``NAME.json``
    describes (its sha256 differs): a pair mixed by a hand copy or an interrupted ship."""
    path = shipped_policy(name)
    want = provenance(name)["sha256"]
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != want:
        raise ValueError(
            f"shipped policy {name!r}: {path.name} (sha256 {got[:12]}...) is not the checkpoint "
            f"{path.with_suffix('.json').name} describes (sha256 {str(want)[:12]}...); restore "
            "both files together (git checkout agents/policies) or ship the policy again with "
            "training.ship_policy"
        )


def shipped_factory(name: str):
    """The registry factory of shipped policy ``name``: ``NAME[:greedy][:DEVICE]``."""

    def factory(arg: str | None, seed=None, rules=None) -> PPOAgent:
        options = arg.split(":") if arg is not None else []
        check_options(f"{name}:{arg}", options, OPTIONS, exclusive=DEVICES)
        check_shipped_pair(name)
        agent = _load_with_options(shipped_policy(name), options, seed)
        agent.name = name  # how tables and the terminal game call it
        if rules is not None:
            trained = provenance(name)["preset"]
            played = Rules.make(rules)
            if played.preset != trained or played.overrides:
                warnings.warn(
                    f"{name} was trained under the plain {trained!r} preset and is played "
                    f"under {played.to_record()}: expect weaker play (the presets score "
                    f"differently); the policy of each preset is ppo-<preset>",
                    stacklevel=2,
                )
        return agent

    return factory
