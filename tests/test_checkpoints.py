"""Trained-policy agents: checkpoints load safely (weights_only) and broken ones are refused at
load time with the file's name; ``agents`` never imports ``training``."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import zhuoji_env
from agents import make_agent
from agents.ppo import PolicyNet, PPOAgent, load_checkpoint, save_checkpoint
from zhuoji_env.observation import OBS_SIZE, VERSION

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def ckpt(tmp_path):
    """A checkpoint written as the trainer writes it (counters, flags, rules, optimizer)."""
    torch.manual_seed(0)
    net = PolicyNet(8)
    opt = torch.optim.Adam(net.parameters())
    net(torch.zeros(2, OBS_SIZE), torch.ones(2, 86, dtype=torch.bool))[1].sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    save_checkpoint(
        path,
        net,
        update=3,
        decisions=96,
        args={"lr": 3e-4, "rules": "guiyang"},
        rules={"preset": "guiyang", "overrides": {}},
        optimizer=opt.state_dict(),
    )
    return path


def test_a_trainer_checkpoint_loads_with_weights_only(ckpt):
    raw = torch.load(ckpt, weights_only=True)
    assert raw["obs_size"] == OBS_SIZE and raw["obs_version"] == VERSION and raw["hidden"] == 8
    net, meta = load_checkpoint(ckpt)
    assert net.hidden == 8 and meta["update"] == 3 and "state" in meta["optimizer"]
    greedy = make_agent(f"ppo:{ckpt}:greedy", seed=0)
    assert isinstance(greedy, PPOAgent) and greedy.greedy
    assert not make_agent(f"ppo:{ckpt}", seed=0).greedy


def _bad(tmp_path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_empty_garbage_and_truncated_files_are_refused(tmp_path, ckpt):
    cases = {
        _bad(tmp_path, "empty.pt", b""): "empty file",
        _bad(
            tmp_path, "garbage.pt", b"this is not a checkpoint\n" * 10
        ): "not written by torch.save",
        _bad(
            tmp_path, "cut.pt", ckpt.read_bytes()[: ckpt.stat().st_size // 2]
        ): "truncated or damaged torch.save archive",
    }
    for path, match in cases.items():
        with pytest.raises(ValueError, match=match) as info:
            load_checkpoint(path)
        assert str(path) in str(info.value)
        with pytest.raises(ValueError, match=match):
            make_agent(f"ppo:{path}")
    torch.save([1, 2, 3], tmp_path / "list.pt")
    with pytest.raises(ValueError, match="no 'model' state dict"):
        load_checkpoint(tmp_path / "list.pt")


class _Planted:
    """Unpickling this would touch a file: a stand-in for code run by a malicious .pt."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_checkpoint_that_would_run_code_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    torch.save({"model": PolicyNet(8).state_dict(), "x": _Planted(marker)}, path)
    with pytest.raises(ValueError, match="could run code") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)
    assert not marker.exists()


def test_another_observation_size_version_or_nan_weights_are_refused(tmp_path, ckpt):
    raw = torch.load(ckpt, weights_only=True)
    wide = dict(raw, model=dict(raw["model"], **{"body.0.weight": torch.zeros(8, OBS_SIZE + 5)}))
    torch.save(wide, tmp_path / "wide.pt")
    with pytest.raises(ValueError, match=f"size {OBS_SIZE + 5}, .* zhuoji-obs-v1 with {OBS_SIZE}"):
        load_checkpoint(tmp_path / "wide.pt")
    v2 = dict(raw, obs_version="zhuoji-obs-v2")  # a v1 network under a v2 label
    torch.save(v2, tmp_path / "v2.pt")
    with pytest.raises(ValueError, match=f"size {OBS_SIZE}, .* zhuoji-obs-v2 with {OBS_SIZE + 85}"):
        load_checkpoint(tmp_path / "v2.pt")
    torch.save(dict(raw, obs_version="v0"), tmp_path / "old.pt")
    reads = "'zhuoji-obs-v1', 'zhuoji-obs-v2', 'zhuoji-obs-v2\\+rule'"
    made = re.escape(f"(zhuoji-env {zhuoji_env.__version__}, environment zhuoji_v1)")
    with pytest.raises(ValueError, match=f"'v0' {made}, this package reads {reads}"):
        load_checkpoint(tmp_path / "old.pt")
    hinted = dict(raw, obs_version="zhuoji-obs-v2+rule")  # a v1 network under the advice's label
    torch.save(hinted, tmp_path / "hinted.pt")
    size = OBS_SIZE + 85 + 172
    with pytest.raises(ValueError, match=f"size {OBS_SIZE}, .* zhuoji-obs-v2\\+rule with {size}"):
        load_checkpoint(tmp_path / "hinted.pt")
    bias = raw["model"]["pi.bias"].clone()
    bias[3] = float("nan")
    torch.save(dict(raw, model=dict(raw["model"], **{"pi.bias": bias})), tmp_path / "nan.pt")
    with pytest.raises(ValueError, match=r"nan\.pt: NaN or infinite weights in pi\.bias"):
        load_checkpoint(tmp_path / "nan.pt")
    torch.save(dict(raw, model={"other": torch.zeros(2)}), tmp_path / "alien.pt")
    with pytest.raises(ValueError, match="not a PolicyNet"):
        load_checkpoint(tmp_path / "alien.pt")
    with pytest.raises(ValueError, match="no checkpoint file"):
        make_agent(f"ppo:{tmp_path / 'missing.pt'}:greedy")


PPO = "python -m training.ppo_selfplay"
BAD_METADATA = [
    ({"args": {"reward_scale": 0}}, r"args\['reward_scale'\] is 0: must be a finite number > 0"),
    ({"args": {"reward_scale": -5}}, r"args\['reward_scale'\] is -5: .* finite number > 0"),
    ({"args": {"reward_scale": float("nan")}}, r"args\['reward_scale'\] is nan"),
    ({"args": {"reward_scale": "abc"}}, r"args\['reward_scale'\] is 'abc'"),
    ({"args": {"reward_scale": True}}, r"args\['reward_scale'\] is True"),
    ({"stages": 5}, "'stages' is 5: must be a list of objects"),
    ({"stages": ["x"]}, r"'stages' is \['x'\]: must be a list of objects"),
    (
        {"stages": [{"command": f"{PPO} --seed 'x"}]},
        r"stages\[0\]\['command'\] is .*: must be a string that parses as a command",
    ),
    (
        {"stages": [{"command": f"{PPO} --reward-scale=abc"}]},
        r"stages\[0\]\['command'\]'s --reward-scale is 'abc', not a number",
    ),
    ({"stages": [{"command": f"{PPO} --reward-scale 0"}]}, "--reward-scale is 0.0: the reward"),
    ({"rules": "nonsense"}, "'rules' is 'nonsense': must be rules in record form .*unknown preset"),
    ({"rules": 5}, "'rules' is 5: must be rules in record form"),
]


@pytest.mark.parametrize("change, message", BAD_METADATA, ids=[str(c) for c, _ in BAD_METADATA])
def test_checkpoint_metadata_is_checked_and_named_with_the_file(tmp_path, ckpt, change, message):
    """The reward scale (the search divides values by it), the stages it is read from and the
    rules are checked when the agent is made; each error names the file and the field."""
    path = tmp_path / "meta.pt"
    torch.save(dict(torch.load(ckpt, weights_only=True), **change), path)
    with pytest.raises(ValueError, match=f"{re.escape(str(path))}: .*{message}"):
        make_agent(f"ppo:{path}")


def test_ppo_agent_refuses_a_non_bool_greedy_and_a_non_network(ckpt):
    """``greedy="no"`` played the argmax; ``PPOAgent(None)`` failed on an attribute."""
    with pytest.raises(TypeError, match="greedy must be True or False, got 'no'"):
        PPOAgent.load(ckpt, greedy="no")
    net = PolicyNet(8)
    with pytest.raises(TypeError, match="greedy must be True or False"):
        PPOAgent(net, greedy=1)
    with pytest.raises(TypeError, match="PPOAgent plays a PolicyNet, got NoneType"):
        PPOAgent(None)
    for scale in (0, -1, float("inf")):
        with pytest.raises(ValueError, match="reward_scale is .*: the reward scale must be"):
            PPOAgent(net, reward_scale=scale)
    assert PPOAgent.load(ckpt, greedy=True).greedy is True
    assert PPOAgent(net, reward_scale=1).reward_scale == 1.0


def test_a_broken_sb3_model_is_refused_with_its_name(tmp_path):
    path = _bad(tmp_path, "model.zip", b"PK not really a zip")
    with pytest.raises(ValueError, match="not a MaskablePPO model") as info:
        make_agent(f"sb3:{path}")
    assert str(path) in str(info.value)
    with pytest.raises(ValueError, match="no SB3 model file"):
        make_agent(f"sb3:{tmp_path / 'missing.zip'}")
    with pytest.raises(ValueError, match="needs a model file"):
        make_agent("sb3")


def test_agents_never_import_training():
    """The import graph flows one way: training imports agents, never the reverse."""
    for src in sorted((ROOT / "agents").glob("*.py")):
        for node in ast.walk(ast.parse(src.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not [n for n in names if n.split(".")[0] == "training"], src.name


def test_the_registry_imports_torch_only_for_a_trained_agent():
    code = (
        "import sys, agents\n"
        "agents.make_agent('rule'); agents.make_agent('greedy')\n"
        "print(sorted(m for m in ('torch', 'training', 'stable_baselines3') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "[]"


def test_ppo_spec_options_repeated_conflicting_or_unknown_are_refused_by_name(ckpt):
    with pytest.raises(ValueError, match=r"option 'greedy' given more than once"):
        make_agent(f"ppo:{ckpt}:greedy:greedy")
    with pytest.raises(ValueError, match=r"conflicting options 'cpu' and 'auto'; at most one of"):
        make_agent(f"ppo:{ckpt}:cpu:auto")
    with pytest.raises(ValueError, match=r"unknown option 'foo' after the path") as info:
        make_agent(f"ppo:{ckpt}:foo")
    assert "the options are greedy, auto, cpu, cuda" in str(info.value)
    with pytest.raises(ValueError, match=r"unknown option 'fast' after the path"):
        make_agent(f"ppo:{ckpt}:greedy:fast:cpu")
    agent = make_agent(f"ppo:{ckpt}:cpu:greedy", seed=0)
    assert agent.greedy and agent.device.type == "cpu"


def test_split_options_serves_a_single_option_set(tmp_path):
    from agents.ppo import split_options

    run = tmp_path / "run"
    run.mkdir()
    assert split_options(f"{run}:greedy", ("greedy",)) == (str(run), ["greedy"])
    assert split_options(str(run), ("greedy",)) == (str(run), [])
    with pytest.raises(ValueError, match=r"unknown option 'cuda' .* the options are greedy$"):
        split_options(f"{run}:cuda", ("greedy",))
    with pytest.raises(ValueError, match=r"option 'greedy' given more than once"):
        split_options(f"{run}:greedy:greedy", ("greedy",))


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("ppo-guiyang", "ppo-guiyang:cuda"),
        ("ppo-app:greedy", "ppo-app:greedy:cuda"),
        ("ppo-guiyang:cpu", "ppo-guiyang:cpu"),  # a spec's own device wins
        ("ppo:{ckpt}", "ppo:{ckpt}:cuda"),
        ("ppo:{ckpt}:greedy:auto", "ppo:{ckpt}:greedy:auto"),
        ("search:ppo-guiyang", "search:ppo-guiyang:cuda"),
        ("search:ppo-guiyang:k=8:c=all", "search:ppo-guiyang:cuda:k=8:c=all"),
        ("search:ppo:{ckpt}:greedy:z=2", "search:ppo:{ckpt}:greedy:cuda:z=2"),
        ("search:rule:k=4", "search:rule:k=4"),
        ("rule", "rule"),
        ("random", "random"),
        ("sb3:model.zip", "sb3:model.zip"),
    ],
)
def test_on_device_moves_the_networks_a_spec_names_and_nothing_else(ckpt, spec, expected):
    from agents.registry import on_device

    assert on_device(spec.format(ckpt=ckpt), "cuda") == expected.format(ckpt=ckpt)


def test_on_device_refuses_an_unknown_device_and_cpu_agents_really_move(ckpt):
    from agents.registry import on_device

    with pytest.raises(ValueError, match=r"device 'gpu': must be one of auto, cpu, cuda"):
        on_device("ppo-guiyang", "gpu")
    search = make_agent(on_device(f"search:ppo:{ckpt}:k=2", "cpu"), seed=0)
    assert search.base.device.type == "cpu" and search.k == 2
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"device 'cuda': torch sees no CUDA device"):
            make_agent(on_device(f"search:ppo:{ckpt}", "cuda"))
