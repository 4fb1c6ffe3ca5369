"""Expert iteration (training.distill_search): what it collects, what it fits, what it writes."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from agents.ppo import VERSION_RULE, NetInput, PolicyNet, load_checkpoint, save_checkpoint
from agents.search import SearchAgent
from agents.simple import RandomAgent
from training import distill_search, ppo_selfplay
from training.cli import FlagError
from zhuoji_env.belief import public_view
from zhuoji_env.engine import BatchGame
from zhuoji_env.observation import encode
from zhuoji_env.rules import Rules


@pytest.fixture
def base(tmp_path):
    """A small untrained guiyang network, saved as a trainer would (rules, decisions, stages)."""
    torch.manual_seed(0)
    path = tmp_path / "base.pt"
    stage = {"command": "by hand", "commit": None, "preset": "guiyang", "decisions": 0,
             "seconds": 0.0}  # fmt: skip
    rules = Rules.make("guiyang").to_record()
    save_checkpoint(path, PolicyNet(16), rules=rules, decisions=0, stages=[stage])
    return path


def _run(base, out, *flags) -> dict:
    argv = ["--base", str(base), "--out-dir", str(out), "--tables", "6", "--k", "2", "--c", "3",
            "--no-progress"]  # fmt: skip
    assert distill_search.main([*argv, *flags]) == 0
    return dict(np.load(out / "searched.npz"))


def test_the_decisions_kept_are_the_searched_ones_with_the_search_choice(base, tmp_path):
    """Every kept decision has a choice; its action is legal, its favourite is the base network's
    argmax on the kept observation, and the search overrules it at some (unsure=1, z=0)."""
    data = _run(base, tmp_path / "d", "--searched", "60", "--unsure", "1", "--z", "0")
    n = len(data["search"])
    assert n >= 60 and data["obs"].shape[0] == data["mask"].shape[0] == n
    assert (data["mask"].sum(1) > 1).all()
    assert data["mask"][np.arange(n), data["search"]].all()
    net, _ = load_checkpoint(base)
    with torch.no_grad():
        logits, _ = net(torch.from_numpy(data["obs"]), torch.from_numpy(data["mask"]))
    assert (logits.argmax(1).numpy() == data["favourite"]).all()
    assert (data["search"] != data["favourite"]).sum() > 0


def test_a_search_that_never_overrules_teaches_the_favourite(base, tmp_path):
    """z=10: the search plays the base's favourite (its candidate 0) unless another candidate
    wins by ten standard errors of whole-hand rollouts (on these seeds none does); nothing is
    overruled."""
    data = _run(
        base, tmp_path / "d", "--searched", "30", "--unsure", "1", "--z", "10", "--leaf", "0"
    )
    assert (data["search"] == data["favourite"]).all()
    report = json.loads((tmp_path / "d" / "distill.json").read_text())
    assert report["distill"]["overruled"] == 0


def test_the_fit_moves_the_network_to_the_search_and_ppo_resumes_it(base, tmp_path):
    out = tmp_path / "d"
    _run(base, out, "--searched", "80", "--unsure", "1", "--z", "0", "--epochs", "40",
         "--lr", "3e-3", "--batch-size", "16")  # fmt: skip
    report = json.loads((out / "distill.json").read_text())
    fit = report["distill"]
    net, ckpt = load_checkpoint(out / distill_search.CHECKPOINT)
    assert [s["command"] for s in ckpt["stages"]][0] == "by hand"
    assert ckpt["stages"][-1]["decisions"] == 0 and "optimizer" not in ckpt
    assert ckpt["stages"][-1]["command"].startswith(distill_search.PROG + " --base ")
    data = dict(np.load(out / "searched.npz"))
    cut = len(data["search"]) - fit["held_out_decisions"]
    assert 0 < cut < len(data["search"])  # held out: the last tables, one shared at most
    assert data["table"][cut:].min() >= data["table"][:cut].max()
    with torch.no_grad():
        logits, _ = net(torch.from_numpy(data["obs"][:cut]), torch.from_numpy(data["mask"][:cut]))
    # the fitted network plays the search's choice on most decisions it was fitted to
    assert (logits.argmax(1).numpy() == data["search"][:cut]).mean() > 0.8
    resumed = tmp_path / "ppo"
    ppo_selfplay.train(
        ppo_selfplay.Args(
            resume=str(out / distill_search.CHECKPOINT), total_decisions=16 * 8, num_envs=16,
            num_steps=8, num_minibatches=2, update_epochs=1, eval_every=0, eval_opponents="",
            out_dir=str(resumed), progress=False,
        )
    )  # fmt: skip
    stages = load_checkpoint(resumed / "latest.pt")[1]["stages"]
    assert [s.get("distill") is not None for s in stages] == [False, True, False]


def test_act_view_searched_names_the_rows_act_view_searched():
    game = BatchGame("guiyang", batch_size=12, seed=3)
    rng = np.random.default_rng(0)
    for _ in range(9):
        game.step(game.random_actions(rng))
    st, g = game.state, np.arange(12)
    obs, mask = encode(st, g, st.actor), st.mask
    agent = SearchAgent(RandomAgent(seed=1), k=2, c=2, seed=4)
    acts, rows, favourite = agent.act_view_searched(obs, mask, public_view(st, g))
    assert list(rows) == list(np.flatnonzero(mask.sum(1) > 1)) and rows.size
    assert favourite.shape == rows.shape and mask[rows, favourite].all()
    assert mask[g, acts].all()
    forced = np.setdiff1d(g, rows)
    assert (acts[forced] == mask[forced].argmax(1)).all()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--k", "0"], "--k 0: must be an integer in 1-4096"),
        (["--c", "1"], "--c 1: must be an integer in 2-86"),
        (["--unsure", "0"], "--unsure 0.0: must be a number in (0, 1]"),
        (["--improve", "9"], "--improve 9.0: must be a number in [0, 8]"),
        (["--z", "-1"], "--z -1.0: must be a number in [0, 10]"),
        (["--race", "-1"], "--race -1: must be an integer in 0-4096"),
        (["--race", "8", "--z", "1"], "--race 8 plays the better pooled mean"),
        (["--mean", "0"], "--mean 0: must be an integer in 1-64"),
        (["--mean", "3"], "which needs --leaf 3 or more (got --leaf 2)"),
        (["--searched", "1"], "--searched 1: must be an integer >= 2"),
        (["--held-out", "1"], "--held-out 1.0: must be a number in (0, 1)"),
        (["--base", "nowhere.pt"], "--base 'nowhere.pt': "),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(base, tmp_path, capsys, flags, message):
    argv = ["--base", str(base), "--out-dir", str(tmp_path / "d"), *flags]
    assert distill_search.main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_a_base_without_a_trained_value_needs_leaf_0(tmp_path, monkeypatch):
    """``ppo-scratch`` was trained beside an oracle critic: distilling its search at the default
    --leaf 2 scored the leaves by a value head that was never trained."""
    out = str(tmp_path / "d")
    with pytest.raises(FlagError, match="--leaf 2 scores rollouts by BASE's value.*--leaf 0"):
        distill_search.check_args(distill_search.Args(base="ppo-scratch", out_dir=out))
    args = distill_search.Args(base="ppo-scratch", out_dir=out, leaf=0, k=2, improve=1.0)
    distill_search.check_args(args)
    made = []

    def stop(args, agent, rules):  # the agent is made: no need to play
        made.append(agent)
        raise KeyboardInterrupt

    monkeypatch.setattr(distill_search, "collect", stop)
    with pytest.raises(KeyboardInterrupt):
        distill_search.train(args)
    assert not made[0].base.value_trained and made[0].leaf == 0


@pytest.mark.parametrize("name", [distill_search.CHECKPOINT, "searched.npz", "distill.json"])
def test_an_out_dir_with_a_distillation_needs_force(base, tmp_path, name):
    """Any of the three files (a run killed before its checkpoint leaves the other two)."""
    out = tmp_path / "d"
    out.mkdir()
    (out / name).write_bytes(b"x")
    with pytest.raises(FlagError, match=f"holds a distillation already \\({name}\\).*--force"):
        distill_search.check_args(distill_search.Args(base=str(base), out_dir=str(out)))
    distill_search.check_args(distill_search.Args(base=str(base), out_dir=str(out), force=True))


def test_a_rule_hint_network_is_fitted_on_its_own_input(tmp_path):
    """A v2+rule base (the shipped guiyang kind) reads v2 and rule's advice: the fit and the
    favourites go through its input, and the distilled checkpoint keeps its version."""
    torch.manual_seed(1)
    base = tmp_path / "hint.pt"
    save_checkpoint(base, PolicyNet(16, VERSION_RULE), rules=Rules.make("guiyang").to_record())
    data = _run(base, tmp_path / "d", "--searched", "20", "--unsure", "1", "--z", "0")
    net, ckpt = load_checkpoint(tmp_path / "d" / distill_search.CHECKPOINT)
    assert net.obs_version == VERSION_RULE and list(ckpt) == [
        "model", "hidden", "obs_size", "obs_version", "versions", "rules", "stages"
    ]  # fmt: skip
    base_net, _ = load_checkpoint(base)
    x = torch.from_numpy(NetInput(VERSION_RULE, "guiyang")(data["obs"], data["mask"]))
    with torch.no_grad():
        logits, _ = base_net(x, torch.from_numpy(data["mask"]))
    assert (logits.argmax(1).numpy() == data["favourite"]).all()
    assert (np.diff(data["table"]) >= 0).all()
