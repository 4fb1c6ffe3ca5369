"""Loading an agent never runs code from its file, and sizes are checked before allocation.

``sb3:PATH`` rebuilds a MaskablePPO policy from the zip's weights without unpickling its
settings (and plays exactly as ``MaskablePPO.load`` does); ``ppo:PATH`` refuses every
code-running payload with that reason, whatever torch's wording; a checkpoint that declares a
layer too wide for this machine is refused, naming the file and the limit, before the network
is built. The ``rllib:`` counterparts are in ``tests/test_rllib.py`` (they need Ray).
"""

from __future__ import annotations

import base64
import io
import json
import os
import posix
import subprocess
import zipfile
from pathlib import Path

import cloudpickle
import numpy as np
import pytest
import torch

from agents import make_agent
from agents.arena import main as arena_main
from agents.ppo import PolicyNet, load_checkpoint
from agents.sb3 import SB3Agent
from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.limits import SizeError
from zhuoji_env.observation import OBS_SIZE, VERSION


class Payload:
    """Unpickling this calls ``func(*args)``: a stand-in for code planted in a model file."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _serialized(obj) -> dict:
    """An entry of an SB3 zip's ``data`` the way SB3 stores what JSON cannot hold."""
    return {
        ":type:": str(type(obj)),
        ":serialized:": base64.b64encode(cloudpickle.dumps(obj)).decode(),
    }


def _rewrite(src: Path, dst: Path, **replace: bytes) -> Path:
    """A copy of the zip ``src`` with some entries' bytes replaced."""
    with zipfile.ZipFile(src) as old, zipfile.ZipFile(dst, "w") as new:
        for info in old.infolist():
            new.writestr(info, replace.get(info.filename, old.read(info)))
    return dst


def _with_data(src: Path, dst: Path, **entries) -> Path:
    """A copy of the model ``src`` with some entries of its ``data`` JSON replaced."""
    with zipfile.ZipFile(src) as z:
        data = json.loads(z.read("data"))
    data.update(entries)
    return _rewrite(src, dst, data=json.dumps(data).encode())


@pytest.fixture(scope="module")
def sb3_model(tmp_path_factory) -> Path:
    """A MaskablePPO model trained a little by ``training.sb3_maskable`` (weights off their
    initial values)."""
    from training import sb3_maskable

    out = tmp_path_factory.mktemp("sb3")
    args = sb3_maskable.Args(
        total_timesteps=128,
        n_envs=2,
        n_steps=64,
        batch_size=64,
        opponent="random",
        eval_opponents="",
        out_dir=str(out),
    )
    return Path(sb3_maskable.train(args)["model"])


@pytest.fixture(scope="module")
def positions():
    """640 observations and masks of games where every seat plays random legal actions."""
    from zhuoji_env.envs.sb3 import SB3VecEnv

    env = SB3VecEnv(16, opponent=make_agent("random", seed=0), seed=0)
    rng = np.random.default_rng(0)
    obs, seen, masks = env.reset(), [], []
    for _ in range(40):
        mask = env.action_masks()
        seen.append(obs)
        masks.append(mask)
        obs, *_ = env.step(np.array([rng.choice(np.flatnonzero(row)) for row in mask]))
    return np.concatenate(seen), np.concatenate(masks)


# --------------------------------------------------------------------------- sb3: weights only
def test_sb3_rebuilt_from_weights_plays_exactly_as_maskableppo_load(sb3_model, positions):
    from sb3_contrib import MaskablePPO

    obs, mask = positions
    model = MaskablePPO.load(sb3_model, device="cpu")
    for spec in (f"sb3:{sb3_model}", f"sb3+trusted:{sb3_model}"):
        agent = make_agent(spec, seed=0)
        with torch.no_grad():
            ours = agent.net.get_distribution(torch.from_numpy(obs), action_masks=mask)
            theirs = model.policy.get_distribution(torch.from_numpy(obs), action_masks=mask)
        assert torch.equal(ours.distribution.probs, theirs.distribution.probs)
        best, _ = model.predict(obs, action_masks=mask, deterministic=True)
        greedy = SB3Agent(agent.net, deterministic=True).act(obs, mask)
        assert (greedy == best).all() and len(set(best.tolist())) > 5
        sampled = agent.act(obs, mask)
        assert mask[np.arange(len(obs)), sampled].all()


def test_sb3_payload_in_the_policy_class_never_runs(sb3_model, tmp_path):
    marker = tmp_path / "ran"
    evil = _with_data(
        sb3_model,
        tmp_path / "evil.zip",
        policy_class=_serialized(Payload(os.system, f"touch {marker}")),
    )
    with pytest.raises(ValueError, match="not a plain class reference") as info:
        make_agent(f"sb3:{evil}")
    assert str(evil) in str(info.value) and f"sb3+trusted:{evil}" in str(info.value)
    assert "runs any code" in str(info.value)
    assert not marker.exists()


def test_sb3_payload_in_an_unused_setting_never_runs(sb3_model, tmp_path, capsys):
    """The settings that the policy does not need are never unpickled: the model plays, and
    the payload stays inert."""
    marker = tmp_path / "ran"
    evil = _with_data(
        sb3_model,
        tmp_path / "evil.zip",
        ep_info_buffer=_serialized(Payload(os.system, f"touch {marker}")),
        lr_schedule=_serialized(Payload(posix.system, f"touch {marker}")),
    )
    assert arena_main(["--agents", f"sb3:{evil},random", "--deals", "1", "--no-progress"]) == 0
    assert "sb3" in capsys.readouterr().out
    assert not marker.exists()


def test_sb3_payload_in_the_weights_is_refused(sb3_model, tmp_path):
    marker = tmp_path / "ran"
    with zipfile.ZipFile(sb3_model) as z:
        state = torch.load(io.BytesIO(z.read("policy.pth")), weights_only=True)
    buf = io.BytesIO()
    torch.save({**state, "x": Payload(os.system, f"touch {marker}")}, buf)
    evil = _rewrite(sb3_model, tmp_path / "evil.zip", **{"policy.pth": buf.getvalue()})
    with pytest.raises(ValueError, match=r"policy\.pth\): refused.*could run code"):
        make_agent(f"sb3:{evil}")
    assert not marker.exists()


@pytest.mark.parametrize(
    "entries, match",
    [
        (
            {"policy_kwargs": {**_serialized({}), "activation_fn": "<class 'ReLU'>"}},
            r"policy_kwargs \[':serialized:', ':type:', 'activation_fn'\] that sb3:PATH",
        ),
        (  # plain JSON, but a setting the rebuilt policy would not honour
            {"policy_kwargs": {"net_arch": [64, 64], "squash_output": True}},
            r"policy_kwargs \['net_arch', 'squash_output'\] that sb3:PATH",
        ),
        (
            {"observation_space": {":type:": "<class 'gymnasium.spaces.dict.Dict'>"}},
            "its observation_space is \"<class 'gymnasium.spaces.dict.Dict'>\"",
        ),
    ],
)
def test_sb3_model_it_cannot_rebuild_is_refused_naming_the_trusted_spec(
    sb3_model, tmp_path, entries, match
):
    other = _with_data(sb3_model, tmp_path / "other.zip", **entries)
    with pytest.raises(ValueError, match=match) as info:
        make_agent(f"sb3:{other}")
    assert f"sb3+trusted:{other}" in str(info.value)


def test_sb3_settings_that_contradict_the_weights_are_refused(sb3_model, tmp_path):
    other = _with_data(sb3_model, tmp_path / "other.zip", policy_kwargs={"net_arch": [32]})
    with pytest.raises(ValueError, match=r"other\.zip: .*net_arch \[32\] but layers pi \[64, 64\]"):
        make_agent(f"sb3:{other}")


def test_sb3_layers_too_wide_for_memory_are_refused_before_allocation(sb3_model, tmp_path):
    """Two 300,000-wide layers stored as expanded zero tensors (a file of a few KB)."""
    wide = 300_000
    shapes = {
        "mlp_extractor.policy_net.0.weight": (wide, OBS_SIZE),
        "mlp_extractor.policy_net.0.bias": (wide,),
        "mlp_extractor.policy_net.2.weight": (wide, wide),
        "mlp_extractor.policy_net.2.bias": (wide,),
        "mlp_extractor.value_net.0.weight": (64, OBS_SIZE),
        "mlp_extractor.value_net.0.bias": (64,),
        "action_net.weight": (NUM_ACTIONS, wide),
        "action_net.bias": (NUM_ACTIONS,),
        "value_net.weight": (1, 64),
        "value_net.bias": (1,),
    }
    buf = io.BytesIO()
    torch.save({k: torch.zeros(1).expand(*s) for k, s in shapes.items()}, buf)
    evil = _rewrite(sb3_model, tmp_path / "wide.zip", **{"policy.pth": buf.getvalue()})
    with pytest.raises(SizeError, match=r"wide\.zip \(policy\.pth\): .* needs about .* GiB"):
        make_agent(f"sb3:{evil}")


# --------------------------------------------------------------------------- ppo: payloads
def _lambda_payload(marker):
    return Payload(lambda: Path(marker).touch())


PAYLOADS = {
    "os.system": (lambda m: Payload(os.system, f"touch {m}"), {}),
    "posix.system": (lambda m: Payload(posix.system, f"touch {m}"), {}),
    "builtins.eval": (lambda m: Payload(eval, f"__import__('os').system('touch {m}')"), {}),
    "builtins.exec": (lambda m: Payload(exec, f"open({str(m)!r}, 'w')"), {}),
    "subprocess.Popen": (lambda m: Payload(subprocess.Popen, ["touch", str(m)]), {}),
    "Path.touch": (lambda m: Payload(Path.touch, m), {}),
    "lambda, protocol 2": (_lambda_payload, {"pickle_module": cloudpickle, "pickle_protocol": 2}),
    "legacy format": (
        lambda m: Payload(os.system, f"touch {m}"),
        {"_use_new_zipfile_serialization": False},
    ),
}


@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_a_code_running_ppo_checkpoint_is_refused_for_that_reason(tmp_path, payload):
    make, save_kw = PAYLOADS[payload]
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    torch.save({"model": PolicyNet(8).state_dict(), "x": make(marker)}, path, **save_kw)
    with pytest.raises(ValueError) as info:
        load_checkpoint(path)
    text = str(info.value)
    assert text.startswith(f"{path}: refused") and "could run code" in text, text
    assert "truncated" not in text and "damaged" not in text
    assert not marker.exists()


def test_the_arena_refuses_a_code_running_checkpoint_with_exit_2(tmp_path, capsys):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    torch.save({"model": {}, "x": Payload(posix.system, f"touch {marker}")}, path)
    with pytest.raises(SystemExit) as info:
        arena_main(["--agents", f"ppo:{path},random", "--deals", "1", "--no-progress"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "posix.system" in err and "could run code" in err and "Traceback" not in err
    assert not marker.exists()


# --------------------------------------------------------------------------- ppo: sizes
def _ppo_shapes(hidden: int) -> dict[str, tuple[int, ...]]:
    """The state dict shapes of a v1 ``PolicyNet`` ``hidden`` wide."""
    return {
        "body.0.weight": (hidden, OBS_SIZE),
        "body.0.bias": (hidden,),
        "body.2.weight": (hidden, hidden),
        "body.2.bias": (hidden,),
        "pi.weight": (NUM_ACTIONS, hidden),
        "pi.bias": (NUM_ACTIONS,),
        "v.weight": (1, hidden),
        "v.bias": (1,),
    }


def _wide_checkpoint(path: Path, wide: int, consistent: bool = True) -> Path:
    """A ``ppo:`` checkpoint of expanded zero tensors declaring a ``wide`` layer (only its
    first layer if not ``consistent``)."""
    shapes = _ppo_shapes(wide if consistent else 8)
    shapes["body.0.weight"] = (wide, OBS_SIZE)
    state = {k: torch.zeros(1).expand(*s) for k, s in shapes.items()}
    torch.save({"model": state, "hidden": wide, "obs_size": OBS_SIZE, "obs_version": VERSION}, path)
    return path


def test_a_checkpoint_too_wide_for_memory_is_refused_before_allocation(tmp_path):
    path = _wide_checkpoint(tmp_path / "wide.pt", 300_000)
    assert path.stat().st_size < 4096
    with pytest.raises(SizeError, match=r"wide\.pt: a PolicyNet of 90,[\d,]+ weights needs about"):
        load_checkpoint(path)


def test_a_wide_checkpoint_is_checked_against_the_memory_limit(tmp_path, monkeypatch):
    """20,000 wide needs about 4.8 GB with its copies: over a 1 GiB limit, refused before the
    1.6 GB layer is allocated; the message names the file, the estimate and the limit."""
    monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", str(1 << 30))
    path = _wide_checkpoint(tmp_path / "wide.pt", 20_000)
    with pytest.raises(SizeError, match=r"wide\.pt: .* needs about 4\.\d\d GiB .* the 1\.00 GiB"):
        load_checkpoint(path)
    with pytest.raises(SizeError):
        make_agent(f"ppo:{path}")


def test_a_layer_that_does_not_fit_the_others_is_refused_before_allocation(tmp_path):
    path = _wide_checkpoint(tmp_path / "odd.pt", 300_000, consistent=False)
    with pytest.raises(
        ValueError, match=r"odd\.pt: body\.0\.bias has shape \(8,\), .* \(300000,\)"
    ):
        load_checkpoint(path)
    ok = _ppo_shapes(8)
    torch.save(
        {
            "model": {k: torch.zeros(s) for k, s in ok.items()},
            "hidden": 300_000,
            "obs_version": VERSION,
        },
        tmp_path / "declared.pt",
    )
    with pytest.raises(ValueError, match="declares hidden 300000, but its weights say 8"):
        load_checkpoint(tmp_path / "declared.pt")


def test_a_mixed_shipped_pair_is_refused(tmp_path, monkeypatch):
    """A ``NAME.pt`` that is not the checkpoint its ``NAME.json`` describes (a hand copy, an
    interrupted ship) is refused, naming both files, instead of played."""
    import shutil

    import agents.ppo as ppo

    for suffix in (".pt", ".json"):
        shutil.copy(ppo.POLICY_DIR / f"ppo-guiyang{suffix}", tmp_path)
    shutil.copy(ppo.POLICY_DIR / "ppo-app.pt", tmp_path / "ppo-guiyang.pt")
    real = ppo.POLICY_DIR
    monkeypatch.setattr(ppo, "POLICY_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"ppo-guiyang.pt .* is not the checkpoint"):
        make_agent("ppo-guiyang")
    shutil.copy(real / "ppo-guiyang.pt", tmp_path)
    assert make_agent("ppo-guiyang").name == "ppo-guiyang"
