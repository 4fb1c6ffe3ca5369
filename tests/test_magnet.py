"""The magnet term (``--magnet-coef``, ``--magnet``): a reverse KL toward an anchor policy in the
PPO loss (Magnetic Mirror Descent). Its gradient pulls the policy toward the anchor, a zero
coefficient leaves today's update alone, the anchors (clone, lagged, a checkpoint) are what
they say, and bad combinations of the flags are refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from agents.ppo import PolicyNet, load_checkpoint, save_checkpoint
from training import learner, ppo_selfplay
from training.cli import FlagError
from training.learner import Batch, Magnet, ppo_update, reverse_kl
from zhuoji_env.observation import OBS_SIZE

TINY = dict(
    num_envs=16, num_steps=16, num_minibatches=2, update_epochs=1, hidden=16, eval_every=0,
    eval_opponents="", progress=False,
)  # fmt: skip


def _batch(n: int = 64, seed: int = 0) -> Batch:
    """``n`` decisions with sparse observations, a few legal actions each, and advantages of
    zero: PPO's own policy term then has no gradient."""
    rng = np.random.default_rng(seed)
    obs = rng.random((n, OBS_SIZE), dtype=np.float32) * (rng.random((n, OBS_SIZE)) < 0.06)
    mask = rng.random((n, 86)) < 0.2
    mask[np.arange(n), rng.integers(86, size=n)] = True
    act = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
    zeros = torch.zeros(n)
    return Batch(torch.from_numpy(obs), torch.from_numpy(mask), torch.from_numpy(act), zeros,
                 zeros, zeros, zeros)  # fmt: skip


def _kl(net, anchor, b: Batch) -> float:
    with torch.no_grad():
        return reverse_kl(net(b.obs, b.mask)[0], anchor(b.obs, b.mask)[0], b.mask).mean().item()


def test_reverse_kl_is_the_sum_over_the_legal_actions_worked_by_hand():
    mask = torch.tensor([[True, True, False]])
    p, q = torch.tensor([0.25, 0.75]), torch.tensor([0.5, 0.5])
    logits = torch.tensor([[p[0].log(), p[1].log(), -1e9]])
    anchor = torch.tensor([[q[0].log() + 3.0, q[1].log() + 3.0, -1e9]])  # a shift changes nothing
    want = 0.25 * np.log(0.25 / 0.5) + 0.75 * np.log(0.75 / 0.5)
    assert reverse_kl(logits, anchor, mask).item() == pytest.approx(want, abs=1e-6)
    assert reverse_kl(logits, logits, mask).item() == pytest.approx(0.0, abs=1e-7)


@pytest.mark.parametrize("sparse", [True, False], ids=["cpu-sparse-path", "dense-path"])
def test_the_magnet_pulls_the_policy_toward_its_anchor(sparse, one_torch_thread):
    """With PPO's own terms silent (zero advantages, no value or entropy weight), updates with
    the magnet alone shrink KL(pi || anchor), by a gradient step the size of the coefficient;
    a term of the other sign would push the policy away."""
    torch.manual_seed(0)
    net, anchor = PolicyNet(16), PolicyNet(16)
    with torch.no_grad():
        anchor.pi.bias.copy_(3 * torch.randn(86))  # far from the near-uniform new network
    b = _batch()
    before = _kl(net, anchor, b)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    stats = ppo_update(
        net, opt, b, epochs=5, num_minibatches=2, clip_coef=0.2, ent_coef=0.0, vf_coef=0.0,
        max_grad_norm=10.0, rng=np.random.default_rng(0), bf16=not sparse,
        magnet=Magnet(anchor, 1.0),
    )  # fmt: skip
    after = _kl(net, anchor, b)
    assert before > 0.5 and after < 0.6 * before
    assert 0 < stats["loss/magnet_kl"] < 2 * before
    assert not any(p.requires_grad for p in anchor.parameters())  # the anchor is frozen


def test_the_magnet_gradient_is_the_coefficient_times_the_kl_gradient():
    torch.manual_seed(1)
    net, anchor = PolicyNet(8), PolicyNet(8)
    b = _batch(32, seed=1)
    grads = []
    for coef in (0.5, 2.0):
        copy = PolicyNet(8)
        copy.load_state_dict(net.state_dict())
        opt = torch.optim.SGD(copy.parameters(), lr=0.0)  # a step of 0: the gradient alone
        ppo_update(
            copy, opt, b, epochs=1, num_minibatches=1, clip_coef=0.2, ent_coef=0.0,
            vf_coef=0.0, max_grad_norm=1e9, rng=np.random.default_rng(0),
            magnet=Magnet(anchor, coef),
        )  # fmt: skip
        grads.append(copy.pi.weight.grad.clone())
    torch.testing.assert_close(grads[1], 4 * grads[0])


def test_a_zero_coefficient_runs_no_magnet_code_and_a_magnet_needs_one(tmp_path, monkeypatch):
    """At --magnet-coef 0 (the default) no anchor is built and no KL worked out, so the update
    is today's, step for step (checked once against the trainer before the term existed: the
    same weights, bit for bit, after a run with pools, cloning and the clone term)."""

    def refuse(*args, **kwargs):
        raise AssertionError("magnet code ran at --magnet-coef 0")

    monkeypatch.setattr(ppo_selfplay, "Magnet", refuse)
    monkeypatch.setattr(learner, "reverse_kl", refuse)
    out = ppo_selfplay.train(ppo_selfplay.Args(total_decisions=2 * 256, out_dir=str(tmp_path),
                                               **TINY))  # fmt: skip
    assert "loss/magnet_kl" not in out["updates"][0]["train"]
    with pytest.raises(ValueError, match="coef > 0"):
        learner.Magnet.__init__(object.__new__(learner.Magnet), PolicyNet(8), 0.0)


def test_the_clone_anchor_is_the_cloned_network_and_a_resume_keeps_it(tmp_path):
    args = ppo_selfplay.Args(total_decisions=2 * 256, out_dir=str(tmp_path), bc_agent="greedy",
                             bc_decisions=512, bc_epochs=1, magnet_coef=0.5, magnet="clone",
                             **TINY)  # fmt: skip
    out = ppo_selfplay.train(args)
    assert all(u["train"]["loss/magnet_kl"] >= 0 for u in out["updates"])
    net, ckpt = load_checkpoint(tmp_path / "latest.pt")
    anchor = PolicyNet(16)
    anchor.load_state_dict(ckpt["magnet"])
    assert any(not torch.equal(v, net.state_dict()[k]) for k, v in anchor.state_dict().items())
    resumed = dataclasses.replace(args, total_decisions=3 * 256, resume=str(tmp_path / "latest.pt"))
    ppo_selfplay.train(resumed)
    _, again = load_checkpoint(tmp_path / "latest.pt")
    for k, v in ckpt["magnet"].items():  # the clone stays the anchor
        assert torch.equal(v, again["magnet"][k]), k


def test_the_lagged_anchor_is_refreshed_every_k_updates(tmp_path):
    args = ppo_selfplay.Args(total_decisions=3 * 256, out_dir=str(tmp_path), magnet_coef=0.5,
                             magnet="lagged", magnet_every=2, save_every=1, **TINY)  # fmt: skip
    ppo_selfplay.train(args)
    ckpts = [load_checkpoint(tmp_path / f"update_{k}.pt") for k in (1, 2, 3)]
    second_net = ckpts[1][0].state_dict()
    for k, v in ckpts[1][1]["magnet"].items():  # refreshed after update 2: update 2's network
        assert torch.equal(v, second_net[k]), k
    for k, v in ckpts[2][1]["magnet"].items():  # kept through update 3
        assert torch.equal(v, ckpts[1][1]["magnet"][k]), k
    first = ckpts[0][1]["magnet"]  # before the refresh: the network the run started with
    assert any(not torch.equal(v, ckpts[0][0].state_dict()[k]) for k, v in first.items())


def test_a_checkpoint_anchor_must_read_the_learners_input(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "anchor.pt"
    save_checkpoint(path, PolicyNet(8))
    args = ppo_selfplay.Args(total_decisions=256, out_dir=str(tmp_path / "run"), magnet_coef=0.1,
                             magnet=str(path), **TINY)  # fmt: skip
    out = ppo_selfplay.train(args)
    assert out["updates"][0]["train"]["loss/magnet_kl"] > 0
    with pytest.raises(FlagError, match="reads zhuoji-obs-v1, the network trained reads"):
        ppo_selfplay.check_args(
            dataclasses.replace(args, features=True, out_dir=str(tmp_path / "x"))
        )


@pytest.mark.parametrize(
    "change, message",
    [
        ({"magnet_coef": 0.1}, "--magnet-coef 0.1: pulls the policy toward an anchor"),
        ({"magnet": "lagged"}, "--magnet 'lagged': the anchor of the magnet term"),
        ({"magnet_coef": 0.1, "magnet": "clone"}, "--magnet clone: .* needs --bc-agent"),
        ({"magnet_coef": 0.1, "magnet": "clone", "magnet_every": 3},
         "--magnet-every 3: refreshes a lagged anchor"),
        ({"magnet_coef": 0.1, "magnet": "nowhere.pt"}, "--magnet 'nowhere.pt': no checkpoint"),
        ({"magnet_coef": -1.0, "magnet": "lagged"}, "--magnet-coef -1.0: must be a finite"),
    ],
)  # fmt: skip
def test_the_magnet_flags_are_checked_before_any_work(tmp_path, change, message):
    args = ppo_selfplay.Args(out_dir=str(tmp_path / "run"), eval_opponents="", **change)
    with pytest.raises(FlagError, match=message):
        ppo_selfplay.check_args(args)
    assert not (tmp_path / "run").exists()


def test_a_resumed_clone_magnet_needs_its_saved_anchor(tmp_path):
    ppo_selfplay.train(ppo_selfplay.Args(total_decisions=256, out_dir=str(tmp_path), **TINY))
    args = ppo_selfplay.Args(total_decisions=512, out_dir=str(tmp_path), bc_agent="greedy",
                             magnet_coef=0.1, magnet="clone", resume=str(tmp_path / "latest.pt"),
                             **TINY)  # fmt: skip
    with pytest.raises(FlagError, match="holds no anchor"):
        ppo_selfplay.check_args(args)
    lagged = dataclasses.replace(args, magnet="lagged", bc_agent="")
    assert ppo_selfplay.check_args(lagged)[1] is not None  # a lag starts from the network
