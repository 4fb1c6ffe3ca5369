"""The learner's maths (training/learner.py and the trainer's calls into it), on hand-made
batches with the expected numbers worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.base import Agent
from agents.ppo import PolicyNet
from training.learner import (
    Batch,
    CloneLoss,
    Demonstrations,
    SparseRowsLinear,
    behaviour_clone,
    collect_demonstrations,
    explained_variance,
    nonzeros_by_row,
    ppo_update,
    seat_gae,
    shaped_rewards,
)
from training.ppo_selfplay import Args, Rollout, planned_updates, progress, rollout_advantages
from zhuoji_env.envs.vector import SelfPlayVecEnv, Transitions
from zhuoji_env.observation import OBS_SIZE


def reference_gae(seats, values, rewards, dones, finished, gamma, lam):
    """Per-trajectory GAE with explicit lists (the definition)."""
    T, B = seats.shape
    adv = np.zeros((T, B))
    for g in range(B):
        for s in set(seats[:, g]):
            ts = [t for t in range(T) if seats[t, g] == s]
            a_next = 0.0
            for j in range(len(ts) - 1, -1, -1):
                t = ts[j]
                if not finished[t, g]:
                    a_next = 0.0
                    continue
                if dones[t, g]:
                    v_next, chain = 0.0, 0.0
                else:
                    nxt = ts[j + 1]
                    v_next = values[nxt, g]
                    chain = a_next if finished[nxt, g] else 0.0
                adv[t, g] = rewards[t, g] + gamma * v_next - values[t, g] + gamma * lam * chain
                a_next = adv[t, g]
    return adv


def test_seat_gae_matches_the_per_trajectory_definition():
    T, b = 120, 6
    env = SelfPlayVecEnv(b, seed=4)
    _, _, seats = env.reset(seed=4)
    rng = np.random.default_rng(4)
    S = np.zeros((T, b), np.int64)
    R = np.zeros((T, b), np.float32)
    D = np.zeros((T, b), bool)
    F = np.zeros((T, b), bool)
    for t in range(T):
        S[t] = seats
        _, _, seats, _, _, infos = env.step(env.random_actions(rng))
        infos["transitions"].fill(R, D, F, start=0)
    V = rng.normal(size=(T, b))
    adv, ret, valid = seat_gae(S, V, R, D, F, gamma=0.99, lam=0.9)
    want = reference_gae(S, V, R, D, F, 0.99, 0.9)
    assert np.array_equal(valid, F) and F.mean() > 0.8 and D.any()
    assert np.allclose(adv, want, atol=1e-5)
    assert np.allclose(ret[valid], (want + V)[valid], atol=1e-5)


def _hand_rollout() -> Rollout:
    """One game, seats 0 1 0 1 1: seat 0's hand ends at t=2 (reward 2); seat 1 continues at
    t=3 into t=4, whose outcome the rollout does not see."""
    r = Rollout(5, 1)
    r.seats[:, 0] = [0, 1, 0, 1, 1]
    r.values[:, 0] = [0.5, -0.2, 1.0, 0.4, 0.3]
    r.rewards[2, 0] = 2.0
    r.dones[2, 0] = True
    r.finished[:4, 0] = True
    r.learner[:] = True
    return r


def test_trainer_advantages_use_gamma_and_lambda_in_their_places():
    """gamma 0.9, lambda 0.5 (swapped they give other numbers), values != 0:
    A2 = 2 - 1 = 1;  A0 = 0.9 * 1.0 - 0.5 + 0.9 * 0.5 * A2 = 0.85;
    A3 = 0.9 * 0.3 - 0.4 = -0.13 (its successor is unfinished: bootstrap, no chain);
    A1 = 0.9 * 0.4 + 0.2 + 0.9 * 0.5 * A3 = 0.5015;  t=4 is not valid."""
    args = Args(gamma=0.9, gae_lambda=0.5, shaping=0.0)
    adv, ret, valid = rollout_advantages(_hand_rollout(), args)
    assert adv[:, 0] == pytest.approx([0.85, 0.5015, 1.0, -0.13, 0.0], abs=1e-6)
    assert ret[:4, 0] == pytest.approx([1.35, 0.3015, 2.0, 0.27], abs=1e-6)
    assert valid[:, 0].tolist() == [True, True, True, True, False]


def test_trainer_leaves_pool_decisions_out_of_the_batch():
    r = _hand_rollout()
    r.learner[1, 0] = False  # seat 1's first decision was a pool member's
    adv, _, valid = rollout_advantages(r, Args(gamma=0.9, gae_lambda=0.5, shaping=0.0))
    assert valid[:, 0].tolist() == [True, False, True, True, False]
    assert adv[1, 0] == pytest.approx(0.5015)  # still part of seat 1's trajectory


def _shaping_hand():
    """One hand of one game: seat 0 decides at t=0,2,4 (scores 3 at t=4), seat 1 at t=1,3
    (scores -3 at t=3); potentials phi = 0.3 -0.1 0.7 0.2 -0.4."""
    seats = np.array([[0], [1], [0], [1], [0]])
    phi = np.array([[0.3], [-0.1], [0.7], [0.2], [-0.4]], np.float32)
    rewards = np.array([[0], [0], [0], [-3], [3]], np.float32)
    dones = np.array([[0], [0], [0], [1], [1]], bool)
    finished = np.ones((5, 1), bool)
    return seats, phi, rewards, dones, finished


def test_shaping_telescopes_over_a_hand():
    """Each decision gets gamma phi(next) - phi(this) (0 after the hand), so a seat's discounted
    sum over the hand is its discounted score minus phi of its first decision."""
    seats, phi, rewards, dones, finished = _shaping_hand()
    out = shaped_rewards(seats, phi, rewards, dones, finished, gamma=0.9)
    # t0: 0.9*0.7 - 0.3; t1: 0.9*0.2 + 0.1; t2: 0.9*(-0.4) - 0.7; t3: -3 - 0.2; t4: 3 + 0.4
    assert out[:, 0] == pytest.approx([0.33, 0.28, -1.06, -3.2, 3.4], abs=1e-6)
    seat0 = out[0, 0] + 0.9 * out[2, 0] + 0.81 * out[4, 0]
    seat1 = out[1, 0] + 0.9 * out[3, 0]
    assert seat0 == pytest.approx(0.81 * 3 - 0.3, abs=1e-6)
    assert seat1 == pytest.approx(0.9 * -3 + 0.1, abs=1e-6)


def test_trainer_applies_shaping_before_gae():
    """With values 0 and gamma = lambda = 1 the first decision's advantage is the whole shaped
    return of the hand: score - phi(first)."""
    seats, phi, rewards, dones, finished = _shaping_hand()
    r = Rollout(5, 1)
    r.seats[:], r.phi[:], r.rewards[:], r.dones[:], r.finished[:] = (
        seats,
        phi,
        rewards,
        dones,
        finished,
    )
    r.learner[:] = True
    adv, _, valid = rollout_advantages(r, Args(gamma=1.0, gae_lambda=1.0, shaping=0.05))
    assert valid.all()
    assert adv[0, 0] == pytest.approx(3 - 0.3, abs=1e-6)
    assert adv[1, 0] == pytest.approx(-3 + 0.1, abs=1e-6)
    unshaped, _, _ = rollout_advantages(r, Args(gamma=1.0, gae_lambda=1.0, shaping=0.0))
    assert unshaped[0, 0] == pytest.approx(3.0)


def _policy_batch(n: int = 64):
    torch.manual_seed(0)
    net = PolicyNet(16)
    rng = np.random.default_rng(0)
    obs = torch.from_numpy(rng.random((n, OBS_SIZE), dtype=np.float32))
    mask = torch.ones((n, 86), dtype=torch.bool)
    act = torch.from_numpy(rng.integers(86, size=n))
    with torch.no_grad():
        logits, value = net(obs, mask)
        logp = torch.distributions.Categorical(logits=logits).log_prob(act)
    adv = torch.tensor([1.0, -1.0] * (n // 2))
    ret = torch.from_numpy(rng.normal(size=n).astype(np.float32))
    return net, Batch(obs, mask, act, logp, adv, ret, value)


def _logp(net, b: Batch) -> torch.Tensor:
    with torch.no_grad():
        logits, _ = net(b.obs, b.mask)
        return torch.distributions.Categorical(logits=logits).log_prob(b.act)


def test_one_ppo_update_moves_log_probabilities_with_the_advantage_sign(one_torch_thread):
    net, b = _policy_batch()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    stats = ppo_update(
        net,
        opt,
        b,
        epochs=1,
        num_minibatches=1,
        clip_coef=0.2,
        ent_coef=0.0,
        vf_coef=0.0,
        max_grad_norm=10.0,
        rng=np.random.default_rng(0),
    )
    change = (_logp(net, b) - b.logp).numpy()
    up, down = change[b.adv.numpy() > 0], change[b.adv.numpy() < 0]
    assert up.mean() > 0 > down.mean()
    assert (up > 0).mean() > 0.8 and (down < 0).mean() > 0.8
    # one minibatch, ratio 1 on entry: policy loss -mean(normalised advantage) = 0, no clipping
    assert stats["loss/policy"] == pytest.approx(0.0, abs=1e-6)
    assert stats["loss/clipfrac"] == 0.0 and stats["loss/approx_kl"] == pytest.approx(0, abs=1e-7)


def test_bf16_update_still_moves_log_probabilities_with_the_advantage_sign(one_torch_thread):
    """Under bfloat16 autocast (float32 log-softmax, ratios and losses) one update moves the
    log-probabilities as the float32 update does, and its logged entropy is the policy's."""
    for bf16 in (False, True):
        net, b = _policy_batch()
        before = torch.distributions.Categorical(logits=net(b.obs, b.mask)[0]).entropy().mean()
        stats = ppo_update(
            net,
            torch.optim.Adam(net.parameters(), lr=1e-3),
            b,
            epochs=1,
            num_minibatches=1,
            clip_coef=0.2,
            ent_coef=0.0,
            vf_coef=0.0,
            max_grad_norm=10.0,
            rng=np.random.default_rng(0),
            bf16=bf16,
        )
        change = (_logp(net, b) - b.logp).numpy()
        up, down = change[b.adv.numpy() > 0], change[b.adv.numpy() < 0]
        assert up.mean() > 0 > down.mean(), bf16
        assert (up > 0).mean() > 0.8 and (down < 0).mean() > 0.8, bf16
        tol = 2e-2 if bf16 else 1e-5  # bf16 keeps 8 bits of the logits' mantissa
        assert stats["loss/entropy"] == pytest.approx(before.item(), rel=tol), bf16


def test_clone_term_pulls_the_policy_to_the_demonstrations_and_nothing_else_does(
    one_torch_thread,
):
    """With no entropy or value weight, PPO's own loss moves the policy only through the
    ratios of its batch's actions; the clone term adds the demonstrations' cross entropy
    (computed here directly from the demonstrations), which falls by far more with it than
    without, on both update paths."""
    rng = np.random.default_rng(1)
    n = 256
    obs = rng.random((2, n // 2, OBS_SIZE), dtype=np.float32)
    mask = rng.random((2, n // 2, 86)) < 0.3
    act = np.where(rng.random((2, n // 2)) < 0.5, 5, 40)  # its choices: tile 5 or 40
    mask[0, np.arange(n // 2), act[0]] = mask[1, np.arange(n // 2), act[1]] = True
    zeros = np.zeros((2, n // 2), np.float32)
    demos = Demonstrations(obs, mask, act, zeros, zeros > 0)
    flat = [torch.from_numpy(x) for x in (obs.reshape(n, -1), mask.reshape(n, -1), act.ravel())]

    def cross_entropy(net, rows=slice(None)):
        with torch.no_grad():
            logits = net(flat[0][rows], flat[1][rows])[0]
            return torch.nn.functional.cross_entropy(logits, flat[2][rows]).item()

    for bf16 in (False, True):
        after = {}
        for coef in (0.0, 1.0):
            net, b = _policy_batch()
            drawn = CloneLoss(demos, 1.0, 32, np.random.default_rng(5)).cross_entropy(net, False)
            rows = torch.from_numpy(np.random.default_rng(5).integers(0, n, 32))
            assert drawn.item() == pytest.approx(cross_entropy(net, rows))
            before = cross_entropy(net)
            clone = CloneLoss(demos, coef, 64, np.random.default_rng(0)) if coef else None
            stats = ppo_update(
                net, torch.optim.Adam(net.parameters(), lr=1e-2), b, epochs=8,
                num_minibatches=2, clip_coef=0.2, ent_coef=0.0, vf_coef=0.0,
                max_grad_norm=10.0, rng=np.random.default_rng(0), bf16=bf16, clone=clone,
            )  # fmt: skip
            after[coef] = cross_entropy(net) - before
            assert ("loss/clone" in stats) == bool(coef)
        assert after[1.0] < -1.0 and abs(after[0.0]) < 0.5 * abs(after[1.0]), (bf16, after)
        assert np.isfinite(stats["loss/clone"]) and stats["loss/clone"] > 0
    with pytest.raises(ValueError, match="coef > 0 and rows >= 1"):
        CloneLoss(demos, 0.0, 8, rng)


def test_nonzeros_by_row_pads_with_column_zero_and_value_zero():
    x = torch.tensor([[0.0, 2.0, 0.0, 3.0], [0.0, 0.0, 0.0, 0.0], [5.0, 0.0, 0.0, 0.0]])
    idx, vals = nonzeros_by_row(x)
    assert idx.tolist() == [[1, 3], [0, 0], [0, 0]]
    assert vals.tolist() == [[2.0, 3.0], [0.0, 0.0], [5.0, 0.0]]


def test_sparse_first_layer_matches_the_dense_layer_and_its_gradients():
    """The update's first layer from the nonzeros gives the dense layer's outputs and weight
    and bias gradients (the same sums in another order)."""
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(300, 40, generator=gen) < 0.1) * torch.rand(300, 40, generator=gen)
    x[7] = 0  # an all-zero row
    x[:, 5] = 0  # an all-zero column
    layer = torch.nn.Linear(40, 16)
    g = torch.randn(300, 16, generator=gen)
    torch.nn.functional.linear(x, layer.weight, layer.bias).backward(g)
    dense_w, dense_b = layer.weight.grad.clone(), layer.bias.grad.clone()
    layer.zero_grad()
    out = SparseRowsLinear.apply(*nonzeros_by_row(x), layer.weight, layer.bias)
    out.backward(g)
    want = torch.nn.functional.linear(x, layer.weight, layer.bias)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(layer.weight.grad, dense_w, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(layer.bias.grad, dense_b, rtol=1e-5, atol=1e-5)
    assert (layer.weight.grad[:, 5] == 0).all()  # an unused column has no gradient


def test_the_run_progress_follows_the_decisions_or_the_time_limit():
    """The learning rate decays with ``1 - progress``: the share of the planned updates, or of
    the time budget, whichever is larger; no --total-decisions with a time limit is no cap."""
    per_update = Args.num_envs * Args.num_steps
    assert planned_updates(Args()) == 2_000_000 // per_update == 244
    assert planned_updates(Args(time_limit=55)) is None
    assert planned_updates(Args(time_limit=55, total_decisions=per_update * 10)) == 10
    assert planned_updates(Args(total_decisions=5)) == 1
    assert progress(0, 61, 0.0, 0.0) == 0.0
    assert progress(30, 60, 999.0, 0.0) == 0.5
    assert progress(7, None, 15 * 60.0, 60.0) == 0.25
    assert progress(5, 10, 15 * 60.0, 60.0) == 0.5  # the decisions run out first
    assert progress(1, 10, 30 * 60.0, 60.0) == 0.5  # the time runs out first
    assert progress(3, None, 2 * 3600.0, 60.0) == 1.0


def test_ppo_update_logs_means_over_its_minibatches(one_torch_thread):
    net, b = _policy_batch()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    stats = ppo_update(
        net,
        opt,
        b,
        epochs=3,
        num_minibatches=4,
        clip_coef=0.05,
        ent_coef=0.01,
        vf_coef=0.5,
        max_grad_norm=0.5,
        rng=np.random.default_rng(0),
    )
    assert set(stats) == {
        "loss/policy",
        "loss/value",
        "loss/entropy",
        "loss/approx_kl",
        "loss/clipfrac",
        "loss/explained_variance",
    }
    assert all(np.isfinite(v) for v in stats.values())
    assert 0 < stats["loss/clipfrac"] < 1  # later minibatches move past the tight clip
    assert 0 < stats["loss/entropy"] <= np.log(86) + 1e-6
    empty = Batch(*(None if x is None else x[:0] for x in b))
    assert (
        ppo_update(
            net,
            opt,
            empty,
            epochs=1,
            num_minibatches=1,
            clip_coef=0.2,
            ent_coef=0,
            vf_coef=0.5,
            max_grad_norm=0.5,
            rng=np.random.default_rng(0),
        )
        == {}
    )


def test_explained_variance():
    target = np.array([1.0, 2.0, 3.0, 4.0])
    assert explained_variance(target, target) == 1.0
    assert explained_variance(np.zeros(4), target - target.mean()) == 0.0
    # residuals 0.5 -0.5 0.5 -0.5: variance 0.25 of 1.25
    assert explained_variance(target - [0.5, -0.5, 0.5, -0.5], target) == pytest.approx(0.8)
    assert np.isnan(explained_variance(np.zeros(3), np.ones(3)))
    with pytest.raises(ValueError, match=r"one shape, got \(4, 1\) and \(4,\)"):
        explained_variance(np.zeros((4, 1)), target)  # would broadcast to 4 x 4 and say 0.0


def _rollout_arrays(T=3, B=2):
    seats = np.zeros((T, B), np.int64)
    return seats, np.zeros((T, B)), np.ones((T, B), np.float32), np.zeros((T, B), bool)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"seats": np.array([[0, -1], [1, 0], [0, 1]])}, "seats must be >= 0, got -1"),
        ({"seats": np.zeros((3, 2)) + 0.7}, "seats must be an integer array"),
        ({"seats": np.zeros(3, np.int64)}, r"seats must be an integer array \[T, B\]"),
        ({"rewards": np.ones((3, 1), np.float32)}, r"rewards must have the shape of seats"),
        ({"finished": np.ones((3, 1), bool)}, r"finished must have the shape of seats"),
        ({"gamma": 2}, r"gamma must be a number in \[0, 1\], got 2"),
        ({"gamma": True}, r"gamma must be a number in \[0, 1\], got True"),
        ({"lam": -1}, r"lam must be a number in \[0, 1\], got -1"),
    ],
)
def test_seat_gae_and_shaping_refuse_arrays_that_would_broadcast_or_wrap(change, message):
    """A seat of -1 indexed the last seat's trajectory, a float seat was truncated, a [T, 1]
    array broadcast over the games, gamma 2 or lambda -1 went through: now each is refused."""
    seats, values, rewards, flags = _rollout_arrays()
    arrays = {"seats": seats, "values": values, "rewards": rewards, "dones": flags}
    arrays.update(finished=~flags, gamma=0.9, lam=0.95)
    arrays.update(change)
    with pytest.raises(ValueError, match=message):
        seat_gae(**arrays)
    if "lam" not in change and "values" not in change:
        phi = np.zeros(np.shape(arrays["seats"]), np.float32)
        shaped = {k: v for k, v in arrays.items() if k not in ("values", "lam")}
        with pytest.raises(ValueError, match=message.replace("rewards", "(rewards|phi)")):
            shaped_rewards(phi=phi, **shaped)


class _LastLegal(Agent):
    """Takes the legal action of highest index: an easy signal (the policy head's biases alone
    can express it), so a short fit must nearly reproduce it on games it never saw."""

    def _act(self, obs, mask):
        return mask.shape[1] - 1 - mask[:, ::-1].argmax(1)


def test_behaviour_cloning_lowers_its_held_out_loss(one_torch_thread):
    env = SelfPlayVecEnv(8, seed=0)
    demos = collect_demonstrations(_LastLegal(), env, steps=50, seed=0)
    assert demos.act.shape == (50, 8) and demos.valid.any()
    torch.manual_seed(0)
    fit = behaviour_clone(
        PolicyNet(16), demos, epochs=3, vf_coef=0.5, seed=0, batch_size=32, lr=1e-2
    )
    assert fit["decisions"] == 50 * 7 and fit["held_out_decisions"] == 50  # game 7 held out
    assert fit["held_out_loss_before"] > 1.0  # near-uniform over the legal actions at first
    assert fit["held_out_loss"] < 0.25 * fit["held_out_loss_before"]
    assert fit["held_out_accuracy"] > 0.9
    with pytest.raises(ValueError, match="needs >= 2"):
        behaviour_clone(
            PolicyNet(8), demos._replace(act=demos.act[:, :1]), epochs=1, vf_coef=0.5, seed=0
        )


def test_label_smoothing_keeps_the_clone_exploring_at_the_share_asked(one_torch_thread):
    """With smoothing e the target is (1 - e) on the demonstrated action and e spread over the
    legal ones: the clone still picks the demonstrated action, but puts about 1 - e + e / n on
    it on average (n legal actions) instead of nearly all. Smoothing over all 86 actions (the
    illegal ones' share lost to the mask) would leave about 0.97, none at all 1.0."""
    env = SelfPlayVecEnv(8, seed=0)
    demos = collect_demonstrations(_LastLegal(), env, steps=50, seed=0)
    ho_mask = torch.from_numpy(demos.mask[:, 7])
    ho_act = torch.from_numpy(demos.act[:, 7])
    fits, probs = {}, {}
    for e in (0.0, 0.3):
        torch.manual_seed(0)
        net = PolicyNet(16)
        fits[e] = behaviour_clone(
            net, demos, epochs=30, vf_coef=0.5, seed=0, batch_size=32, lr=1e-2, smoothing=e
        )
        with torch.no_grad():
            logits, _ = net(torch.from_numpy(demos.obs[:, 7]), ho_mask)
        probs[e] = torch.softmax(logits, -1).gather(1, ho_act[:, None])[:, 0].numpy()
    n = ho_mask.sum(-1).numpy()
    assert fits[0.3]["held_out_accuracy"] > 0.9 and fits[0.0]["held_out_accuracy"] > 0.9
    assert probs[0.0].mean() > 0.97
    assert abs(probs[0.3].mean() - (0.7 + 0.3 / n).mean()) < 0.05
    assert fits[0.3]["held_out_entropy"] > 3 * fits[0.0]["held_out_entropy"]


def test_a_decision_open_at_the_rollout_boundary_is_trained_in_the_next():
    """Game 0 finished everything but its last decision, game 1 left rows 1 and 3 open: the next
    rollout starts with rows 1-3 (step ids 11-13), marks the finished ones as trained, and a
    hand-end transition of step 11 arriving later makes that decision valid there."""
    old = Rollout(4, 2, first_id=10)
    old.seats[:] = [[0, 0], [1, 1], [2, 0], [3, 1]]
    old.values[:] = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]]
    old.learner[:] = True
    old.finished[:] = [[True, True], [True, False], [True, True], [False, False]]
    new = old.next(5)
    assert (new.carried, new.first_id, new.seats.shape) == (3, 11, (8, 2))
    assert new.seats[:3].tolist() == [[1, 1], [2, 0], [3, 1]]
    assert new.values[:3, 1].tolist() == pytest.approx([0.4, 0.6, 0.8])
    assert new.trained[:3].tolist() == [[True, False], [True, True], [False, False]]
    assert (new.finished[:3] == old.finished[1:]).all() and not new.trained[3:].any()
    z = np.zeros(1, np.int64)
    new.fill(Transitions(z + 1, z + 1, z + 11, np.array([2.5], np.float32), z == 0, z == 1))
    assert new.rewards[0, 1] == 2.5 and new.dones[0, 1] and new.finished[0, 1]
    adv, _, valid = rollout_advantages(new, Args(gamma=1.0, gae_lambda=1.0, shaping=0.0))
    assert np.flatnonzero(valid.reshape(-1)).tolist() == [1]  # row 0, game 1 only
    assert adv[0, 1] == pytest.approx(2.5 - 0.4)
    done = Rollout(3, 1)
    done.finished[:] = True
    assert done.next(2).carried == 0  # nothing open: nothing carried
    stale = Rollout(6, 1)
    stale.finished[1:] = True
    assert stale.next(4).carried == 4  # at most one rollout's length is carried


def test_potential_counts_shanten_and_the_observers_paid_kongs():
    from training.learner import potential
    from zhuoji_env.observation import SLICES

    obs = np.zeros((3, OBS_SIZE), np.float32)
    sh, kc = SLICES["shanten"], SLICES["kong_counts"]
    for row, steps in enumerate([0, 1, 3]):  # complete, ready, 2-shanten
        obs[row, sh.start + steps] = 1
    counts = obs[:, kc].reshape(3, 4, 4)
    counts[1, 0] = [1, 1, 0, 1]  # own 闷豆, 转弯豆 and a late (unpaid) 憨包豆
    counts[2, 0, 2] = 1  # own 点豆
    counts[2, 1] = [2, 0, 0, 0]  # another seat's kongs do not count
    obs[:, kc] = counts.reshape(3, 16)
    assert potential(obs, 0.5).tolist() == [0.5, 0.0, -1.0]
    assert potential(obs, 0.5, kong_shaping=2.0).tolist() == [0.5, 4.0, 1.0]


def test_oracle_critic_takes_the_value_loss_and_sees_the_hidden_part(one_torch_thread):
    """With a critic, the value loss trains the critic (on observation + hidden) toward the
    returns, and the network's own value head is left alone; the policy still learns. Both on
    the CPU's sparse first layer and on the dense (bf16 autocast) path."""
    from training.learner import OracleCritic
    from zhuoji_env.observation import HIDDEN_SIZE

    for bf16 in (False, True):
        net, b = _policy_batch()
        rng = np.random.default_rng(1)
        hidden = torch.from_numpy(rng.random((len(b.act), HIDDEN_SIZE), dtype=np.float32))
        torch.manual_seed(1)
        critic = OracleCritic(16)
        b = b._replace(hidden=hidden, ret=critic(b.obs, hidden).detach() + 1.0)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        opt.add_param_group({"params": list(critic.parameters())})
        v_head = net.v.weight.detach().clone()
        before = ((critic(b.obs, hidden) - b.ret) ** 2).mean().item()
        ppo_update(
            net, opt, b, epochs=5, num_minibatches=1, clip_coef=0.2, ent_coef=0.0, vf_coef=1.0,
            max_grad_norm=10.0, rng=np.random.default_rng(0), bf16=bf16, critic=critic,
        )  # fmt: skip
        assert ((critic(b.obs, hidden) - b.ret) ** 2).mean().item() < 0.8 * before
        assert torch.equal(net.v.weight, v_head)
        change = (_logp(net, b) - b.logp).numpy()
        assert change[b.adv.numpy() > 0].mean() > 0 > change[b.adv.numpy() < 0].mean()
        # the critic reads the hidden part: changing it changes the value
        assert not torch.allclose(critic(b.obs, hidden), critic(b.obs, hidden.flip(0)))
