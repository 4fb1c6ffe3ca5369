"""The shipped policies (``ppo-guiyang``, ``ppo-classic``, ``ppo-app``, ``ppo-scratch``): each
loads by name everywhere an agent is named, beats ``random`` on a small arena, and its
provenance file is about that very file and says what the issue asks (how it was trained, its
arena tables)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from agents import arena, make_agent, play
from agents.arena import run_arena
from agents.ppo import POLICY_DIR, PPOAgent, provenance, shipped_policy
from agents.registry import SHIPPED_POLICIES
from zhuoji_env.envs.single import SingleAgentEnv
from zhuoji_env.envs.vector import SelfPlayVecEnv
from zhuoji_env.observation import OBS_SIZE

NAMES = list(SHIPPED_POLICIES)


@pytest.mark.parametrize("name", NAMES)
def test_shipped_policy_beats_random_under_its_preset(name):
    res = run_arena([name, "random"], 40, seed=4242, rules=SHIPPED_POLICIES[name], progress=False)
    margin, (lo, _) = res.margin(name, "random")
    assert lo > 0, (name, margin, lo)


@pytest.mark.parametrize("name", NAMES)
def test_provenance_describes_the_shipped_file(name):
    path = shipped_policy(name)
    assert path.stat().st_size < 4e6  # a few MB at most
    prov = provenance(name)
    assert prov["name"] == name and prov["preset"] == SHIPPED_POLICIES[name]
    assert prov["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    stages = prov["stages"]
    assert stages and sum(s["decisions"] for s in stages) == prov["decisions"] > 0
    for s in stages:
        assert s["command"].startswith("python -m training.ppo_selfplay")
        assert s["commit"] and s["seconds"] > 0
    # earlier stages may be a warm start under another preset; the last one is its own
    assert stages[-1]["preset"] == prov["preset"]
    if prov["preset"] != "guiyang":  # the default preset is not spelt out in the command
        assert f"--rules {prov['preset']}" in stages[-1]["command"]
    against = prov["arena"]["against"]
    assert set(against) == {"rule", "greedy", "random"} and prov["arena"]["deals"] >= 2000
    for opp, plays in against.items():
        hands = plays["sampling"]["summary"]["agents"]["ppo"]["hands"]
        # 6 seatings of 2 agents over 4 seats, each agent in 2 seats of every hand
        assert hands == prov["arena"]["deals"] * 12, opp
    assert "argmax" in against["rule"]
    if name == f"ppo-{prov['preset']}":
        # the strongest of its preset beats rule by >= +1.5, interval above +1.0
        rule = against["rule"]["sampling"]
        assert rule["margin"] >= 1.5 and rule["margin_ci95"][0] > 1.0, rule
    else:  # a reference policy (ppo-scratch) at least beats greedy, interval above 0
        assert against["greedy"]["sampling"]["margin_ci95"][0] > 0, against["greedy"]


def test_shipped_policies_load_with_options_and_refuse_bad_ones():
    sampling = make_agent("ppo-guiyang", seed=0)
    argmax = make_agent("ppo-guiyang:greedy:cpu", seed=0)
    assert isinstance(sampling, PPOAgent) and not sampling.greedy and argmax.greedy
    for bad, why in [
        ("ppo-guiyang:fast", "unknown option 'fast'"),
        ("ppo-guiyang:greedy:greedy", "more than once"),
        ("ppo-guiyang:cpu:auto", "conflicting options"),
    ]:
        with pytest.raises(ValueError, match=why):
            make_agent(bad)
    with pytest.raises(ValueError, match="no shipped policy .ppo-mine."):
        shipped_policy("ppo-mine")
    # the argmax agent is deterministic: the same answers whatever its seed
    obs, masks, _ = SelfPlayVecEnv(16, "guiyang", seed=3).reset(seed=3)
    again = make_agent("ppo-guiyang:greedy", seed=99)
    assert np.array_equal(argmax.act(obs, masks), again.act(obs, masks))


def test_shipped_policies_are_package_data_and_not_ignored_by_git():
    """Every name has both files; git tracks them (a '*.pt' ignore rule once hid them), and
    setuptools' package-data globs match them."""
    import fnmatch
    import re
    import subprocess

    root = POLICY_DIR.parents[1]
    text = (root / "pyproject.toml").read_text()
    section = text.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    globs = json.loads(re.search(r"^agents = (\[.*\])$", section, re.M).group(1))
    for name in NAMES:
        for suffix in (".pt", ".json"):
            path = POLICY_DIR / f"{name}{suffix}"
            assert path.is_file()
            rel = str(path.relative_to(POLICY_DIR.parent))
            assert any(fnmatch.fnmatch(rel, g) for g in globs), (rel, globs)
            ignored = subprocess.run(
                ["git", "-C", str(root), "check-ignore", "-q", str(path)], check=False
            )
            assert ignored.returncode == 1, f"git ignores {path}"


def test_shipped_policy_as_an_environment_opponent():
    """The opponents' decisions in SingleAgentEnv are the shipped policy's own (argmax play,
    so each can be checked against a direct call on the same observation)."""
    opponent = make_agent("ppo-classic:greedy", seed=0)
    asked: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    act = opponent.act

    def recording_act(obs, mask):
        out = act(obs, mask)
        asked.append((obs.copy(), mask.copy(), np.asarray(out).copy()))
        return out

    opponent.act = recording_act
    env = SingleAgentEnv(rules="classic", opponents=opponent)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        action = rng.choice(np.flatnonzero(env.action_masks()))
        _, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    assert len(asked) >= 3
    fresh = make_agent("ppo-classic:greedy", seed=1)
    for o, m, out in asked:
        assert np.array_equal(fresh.act(o, m), out)


def test_shipped_policy_in_the_arena_cli_and_terminal_play(tmp_path, capsys):
    out = tmp_path / "a.json"
    assert (
        arena.main(
            ["--agents", "ppo-app:greedy,rule", "--deals", "2", "--preset", "app", "--no-progress"]
            + ["--json", str(out)]
        )
        == 0
    )
    assert json.loads(out.read_text())["agents"]["ppo-app:greedy"]["hands"] == 2 * 12
    answers = iter(["quit"])
    lines: list[str] = []
    rc = play.main(
        ["--seed", "1", "--seat", "0", "--opponents", "ppo-guiyang"],
        lambda p: next(answers),
        lines.append,
    )
    assert rc == 0 and "player_1 ppo-guiyang" in "\n".join(lines)


def test_ship_policy_writes_weights_and_provenance_and_refuses_mismatches(tmp_path, capsys):
    import torch

    from training import ppo_selfplay, ship_policy

    run = tmp_path / "run"
    ppo_selfplay.train(
        ppo_selfplay.Args(
            rules="app", total_decisions=512, num_envs=16, num_steps=32, num_minibatches=2,
            update_epochs=1, eval_every=0, eval_opponents="", hidden=16, out_dir=str(run),
            progress=False,
        )
    )  # fmt: skip
    ckpt = str(run / "latest.pt")
    ship = tmp_path / "ship"
    common = ["--checkpoint", ckpt, "--deals", "2", "--workers", "1", "--out-dir", str(ship)]
    with pytest.raises(SystemExit):  # trained under app, not guiyang
        ship_policy.main([*common, "--name", "ppo-guiyang"])
    assert "trained under {'preset': 'app'" in capsys.readouterr().err and not ship.exists()
    assert ship_policy.main([*common, "--name", "ppo-app"]) == 0
    prov = json.loads((ship / "ppo-app.json").read_text())
    assert prov["preset"] == "app" and prov["decisions"] == 512
    assert prov["sha256"] == hashlib.sha256((ship / "ppo-app.pt").read_bytes()).hexdigest()
    assert "--rules app" in prov["stages"][0]["command"]
    assert set(prov["arena"]["against"]) == {"rule", "greedy", "random"}
    assert prov["arena"]["against"]["rule"]["argmax"]["summary"]["agents"]["ppo"]["spec"] == (
        "ppo-app:greedy"
    )
    shipped = torch.load(ship / "ppo-app.pt", weights_only=True)
    assert "optimizer" not in shipped and shipped["stages"] == prov["stages"]
    # an older checkpoint without stages needs --stages; stages must add up to its decisions
    old = torch.load(ckpt, weights_only=True)
    del old["stages"]
    torch.save(old, tmp_path / "old.pt")
    older = ["--checkpoint", str(tmp_path / "old.pt"), "--name", "ppo-app", *common[2:]]
    with pytest.raises(SystemExit):
        ship_policy.main(older)
    assert "give them with --stages FILE" in capsys.readouterr().err
    stages = tmp_path / "stages.json"
    stages.write_text(json.dumps([{**prov["stages"][0], "decisions": 100}]))
    with pytest.raises(SystemExit):
        ship_policy.main([*older, "--stages", str(stages)])
    assert "add up to 100 decisions" in capsys.readouterr().err
    stages.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(SystemExit):
        ship_policy.main([*older, "--stages", str(stages)])
    assert "'stages' is {'not': 'a list'}: must be a list of objects" in capsys.readouterr().err


def test_a_shipped_policy_under_another_preset_warns():
    import warnings

    with pytest.warns(UserWarning, match="trained under the plain 'guiyang' preset"):
        make_agent("ppo-guiyang", seed=0, rules="classic")
    with pytest.warns(UserWarning, match="num_players"):
        make_agent("ppo-app", rules={"preset": "app", "overrides": {"num_players": 3}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, preset in SHIPPED_POLICIES.items():
            make_agent(name, seed=0, rules=preset)


def test_only_the_oracle_critic_policy_has_an_untrained_value_head():
    """``ppo-scratch`` was trained beside an oracle critic: its own value head never learnt, so
    it has no values (analysis showed them; ``search:ppo-scratch`` scored its leaves by them)."""
    obs, mask = np.zeros((2, OBS_SIZE), np.float32), np.ones((2, 86), bool)
    for name in ("ppo-guiyang", "ppo-classic", "ppo-app", "ppo-scratch"):
        agent = make_agent(name)
        assert agent.value_trained == (name != "ppo-scratch")
        assert np.isnan(agent.policy(obs, mask)[1]).all() == (name == "ppo-scratch")
    assert make_agent("search:ppo-scratch").leaf == 0 and make_agent("search:ppo-guiyang").leaf == 2
