"""Behaviour of the arena, ladder, search, belief and learner that no other test pinned: a
mutation test (2026-12-06) planted 48 small bugs in them and these 13 survived the rest of the
suite; each test below fails under its bug. The expected numbers are worked out by hand in the
comments."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from test_belief import small_position
from test_search import GOOD, OWN, _scripted, _search, position

from agents import arena, ladder, make_agent
from agents.ladder import PairResult, fit_ladder, fit_ratings
from agents.search import SearchAgent, paired, rollout_probs
from zhuoji_env import belief
from zhuoji_env.observation import encode
from zhuoji_env.rules import Rules


# ------------------------------------------------------------------------------------- arena
def test_each_chunk_gives_the_agents_fresh_random_streams():
    """Agents are reseeded per chunk from (seed, agent, chunk index): the same deal played in
    chunk 0 and in chunk 1 meets other random choices (a replay of chunk 0 the same ones)."""
    rules = Rules.make("guiyang")
    rot = arena.seatings(2, 4)
    agents = [make_agent("random", seed=0, rules=rules), make_agent("random", seed=1, rules=rules)]
    deal = np.array([0])

    def actions(chunk_index):
        out = arena.run_chunk(rules, agents, rot, 5, arena.Chunk(chunk_index, deal), keep=True)
        return [r["actions"] for r in out["games"]["records"]]

    first = actions(0)
    assert actions(0) == first, "a chunk replays exactly"
    assert actions(1) != first, "another chunk, other random streams"


# ------------------------------------------------------------------------------------ ladder
def _pair(a, b, margins):
    """A pair whose per-deal margins are ``margins``: 2 hands a deal, score_a = margin."""
    m = np.asarray(margins, dtype=np.int64)
    h = np.full(m.size, 2, dtype=np.int64)
    return PairResult(a, b, m, -m, h, h)


def test_fit_ratings_weighs_each_pair_by_the_inverse_of_its_variance():
    """Triangle 0-1, 0-2, 1-2 with margins -2, -5, 0 and variances 1, 1, 2: minimise
    (r1-2)^2 + (r2-5)^2 + (r2-r1)^2 / 2: 3 r1 - r2 = 4, -r1 + 3 r2 = 10, so r1 = 2.75 and
    r2 = 4.25 (weights 1/variance^2 would give 2.5 and 4.5)."""
    r = fit_ratings([(0, 1), (0, 2), (1, 2)], np.array([-2.0, -5.0, 0.0]),
                    np.array([1.0, 1.0, 2.0]), 3, anchor=0)  # fmt: skip
    assert r == pytest.approx([0.0, 2.75, 4.25], abs=1e-9)


def _uneven_ladder():
    """a - random on 2 deals (1, 3: mean 2, variance of the mean 2/2 = 1), b - random on 4
    (4, 6, 4, 6: mean 5, 4/3/4 = 1/3), b - a on 2 (0, 2: mean 1, 1): weights 1, 3, 1.
    Minimise (ra-2)^2 + 3 (rb-5)^2 + (rb-ra-1)^2: rb = 2 ra - 1 and 4 rb - ra = 16, so
    ra = 20/7 and rb = 33/7 (unweighted by the number of deals: 2.75 and 4.5)."""
    pairs = [_pair("a", "random", [1, 3]), _pair("b", "random", [4, 6, 4, 6]),
             _pair("b", "a", [0, 2])]  # fmt: skip
    labels = ["random", "a", "b"]
    return fit_ladder(labels, labels, pairs, "random", bootstrap=0)


def test_pairs_of_more_deals_weigh_more_in_the_fit():
    assert _uneven_ladder().ratings == pytest.approx([0.0, 20 / 7, 33 / 7], abs=1e-9)


def test_chi_square_from_hand_worked_residuals():
    """Residuals 2 - 20/7 = -6/7, 5 - 33/7 = 2/7, 1 - 13/7 = -6/7 over standard errors (ddof 1)
    1, sqrt(1/3), 1: chi2 = 36/49 + 12/49 + 36/49 = 12/7 on 3 - 3 + 1 = 1 dof."""
    chi2, dof = _uneven_ladder().chi2()
    assert chi2 == pytest.approx(12 / 7, abs=1e-9) and dof == 1


def test_the_bootstrap_resamples_the_same_deals_for_every_pair():
    """Two agents with the same per-deal margins against random: every resample draws the
    same deals for both pairs, so their ratings, and their intervals, are equal."""
    x = [0, 2, -4, 6, 1, -3, 5, 8, -2, 7, 3, -1]
    pairs = [_pair("a", "random", x), _pair("b", "random", x)]
    labels = ["random", "a", "b"]
    fit = fit_ladder(labels, labels, pairs, "random", bootstrap=200, seed=3)
    assert np.ptp(fit.ci95[1]) > 1.0, "a real interval"
    assert fit.ci95[1].tolist() == fit.ci95[2].tolist()


def test_a_reused_pair_read_the_other_way_round_keeps_its_sign(tmp_path):
    """A published pair random - greedy, reused by a ladder that lists greedy first: the pair
    it plays is greedy - random, and its margins are the published ones negated."""
    rules = Rules.make("guiyang")
    p = _pair("random", "greedy", [2, -4, 6])
    fit = fit_ladder(["random", "greedy"], ["random", "greedy"], [p], "random", bootstrap=0)
    path = tmp_path / "l.json"
    path.write_text(json.dumps(ladder.ladder_json(fit, rules, 3, 0, "permute", {})))
    reuse = ladder.reusable(str(path), rules, 3, 0, "permute")
    assert reuse["random", "greedy"].per_deal().tolist() == [2.0, -4.0, 6.0]
    back = reuse["greedy", "random"]
    assert (back.a, back.b) == ("greedy", "random")
    assert back.per_deal().tolist() == [-2.0, 4.0, -6.0]
    out = ladder.play_pairs(["greedy", "random"], ["greedy", "random"], rules, 3, 0, "permute",
                            reuse=reuse, log=lambda m: None)  # fmt: skip
    assert (out[0].a, out[0].b) == ("greedy", "random")
    assert out[0].per_deal().tolist() == [-2.0, 4.0, -6.0]


# ------------------------------------------------------------------------------------ search
def test_paired_standard_error_uses_n_minus_1():
    """Differences 1 and 3 over k=2 deals: mean 2, sd (ddof 1) sqrt(2), se sqrt(2)/sqrt(2) = 1
    (ddof 0 would give 1/sqrt(2)); so at z=2.5 a gain of 2 does not overrule the favourite."""
    scores = np.array([[[0.0, 1.0], [0.0, 3.0]]])
    mean, se = paired(scores, np.array([1]), np.array([0]))
    assert mean.tolist() == [2.0] and se == pytest.approx([1.0], abs=1e-12)
    agent = SearchAgent(make_agent("random"), k=2, c=2, z=2.5)
    assert agent.choose(scores, np.array([[5, 6]])).tolist() == [0]
    assert SearchAgent(make_agent("random"), k=2, c=2, z=1.9).choose(
        scores, np.array([[5, 6]])
    ).tolist() == [1]


def test_a_race_tied_over_all_deals_keeps_the_leader(monkeypatch):
    """Candidate 2 leads the favourite by 0.5 on 4 deals (sum 2), a close call; on 2 fresh
    deals it scores -1, -1 against 0, 0: 0 against 0 over all 6, a tie, and the leader of the
    first stage is kept (only a better mean replaces it)."""
    rules = Rules.make("guiyang")
    agent = SearchAgent(make_agent("rule", rules=rules), rules=rules, k=4, c=3, z=0, race=2)

    def scores_of(k, c):
        if k == 4:
            return np.stack([np.zeros(4), np.full(4, -9.0), [0.0, 2.0, -1.0, 1.0]], axis=1)[None]
        return np.stack([np.array([-1.0, -1.0]), np.zeros(2)], axis=1)[None]

    act, fav, asked, cands = _scripted(monkeypatch, agent, scores_of)
    assert asked == [(4, 3), (2, 2)]
    assert act == cands[0][0, 2] and fav == cands[0][0, 0]


def test_distinct_candidates_playing_the_same_action_share_their_random_numbers():
    """A sampling base (random): two candidate columns with the same action, both played out
    (neither repeats the first), meet the same deals and the same uniform numbers at every
    step, so their scores are equal deal by deal."""
    rules, st = position(OWN, *GOOD)
    agent = _search(rules, make_agent("random", seed=4), k=32, c=3, seed=2)
    obs = encode(st, np.array([0]), st.actor)
    legal = np.flatnonzero(st.mask[0])
    cand = np.array([[legal[0], legal[1], legal[1]]])
    scores = agent.evaluate(belief.public_view(st), obs, cand)
    assert scores.shape == (1, 32, 3)
    assert np.ptp(scores[0, :, 1]) > 0, "random rollouts vary from deal to deal"
    assert np.array_equal(scores[..., 1], scores[..., 2])


def test_candidates_after_the_favourite_follow_rules_advice_best_first():
    """With a ``rule`` base (one-hot probabilities) the candidates after its own choice are the
    legal actions it scores highest, in descending order of its advice."""
    rules, st = position(OWN, *GOOD)
    agent = _search(rules, make_agent("rule", rules=rules), c=4)
    obs = encode(st, np.array([0]), st.actor)
    probs = rollout_probs(agent.base, obs, st.mask)
    cand = agent.candidates(obs, st.mask, probs)[0]
    pref = agent.base.advice(obs, st.mask)[1][0]
    pref = np.where(np.isnan(pref), -np.inf, pref)
    assert cand[0] == agent.base.act(obs, st.mask)[0]
    rest = [a for a in np.flatnonzero(st.mask[0]) if a not in cand]
    assert np.ptp(pref[np.isfinite(pref)]) > 0, "the advice tells the actions apart"
    assert pref[cand[1]] >= pref[cand[2]] >= pref[cand[3]] >= max(pref[rest])


# ------------------------------------------------------------------------------------ belief
def test_improve_makes_round_of_improve_times_discards_exchanges():
    """Seat 3 with one discard at improve=0.6 makes round(0.6) = 1 exchange (in this position
    every exchange keeps the drawn tile: one live place changes); at 0.4, round(0.4) = 0."""
    rules, st, _ = small_position()
    st.river_len[0] = [0, 0, 0, 1]
    other = np.array([[False, True, True, True]])
    for improve, changed in ((0.6, 1), (0.4, 0)):
        for seed in range(5):
            s = st.copy()
            belief.improve_hands(s, other, improve, np.random.default_rng(seed))
            assert np.count_nonzero(s.wall[0] != st.wall[0]) == changed, (improve, seed)


# ---------------------------------------------------------------------------------- learner
def test_the_entropy_bonus_raises_the_entropy(one_torch_thread):
    """Zero advantages and no value loss: the loss is -ent_coef x entropy, so an update makes
    the policy more uncertain."""
    from agents.ppo import PolicyNet
    from training.learner import Batch, ppo_update
    from zhuoji_env.observation import OBS_SIZE

    torch.manual_seed(0)
    net = PolicyNet(16)
    with torch.no_grad():  # a peaked policy, well below the maximum entropy log(86)
        net.pi.bias.copy_(torch.linspace(0.0, 8.0, 86))
    rng = np.random.default_rng(0)
    n = 64
    obs = torch.from_numpy(rng.random((n, OBS_SIZE), dtype=np.float32))
    mask = torch.ones((n, 86), dtype=torch.bool)
    act = torch.from_numpy(rng.integers(86, size=n))

    def entropy():
        with torch.no_grad():
            logits, value = net(obs, mask)
            return torch.distributions.Categorical(logits=logits).entropy().mean().item(), (
                logits,
                value,
            )

    before, (logits, value) = entropy()
    logp = torch.distributions.Categorical(logits=logits).log_prob(act)
    b = Batch(obs, mask, act, logp, torch.zeros(n), torch.zeros(n), value)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    ppo_update(net, opt, b, epochs=2, num_minibatches=1, clip_coef=0.2, ent_coef=1.0,
               vf_coef=0.0, max_grad_norm=10.0, rng=np.random.default_rng(0))  # fmt: skip
    after, _ = entropy()
    assert before < 4.0 and after > before + 0.05, (before, after)


def test_the_learning_rate_of_update_u_is_lr_times_1_minus_u_over_the_updates(tmp_path):
    """3 planned updates: the rate of update u (from 0) is lr x (1 - u/3), so the first update
    trains at the full rate and the last at a third of it."""
    from training import ppo_selfplay

    args = ppo_selfplay.Args(
        total_decisions=3 * 4 * 8, num_envs=4, num_steps=8, num_minibatches=1, update_epochs=1,
        eval_every=0, eval_opponents="", hidden=16, progress=False, save_every=0,
        out_dir=str(tmp_path), lr=3e-4,
    )  # fmt: skip
    out = ppo_selfplay.train(args)
    lrs = [row["train"]["train/lr"] for row in out["updates"]]
    assert lrs == pytest.approx([3e-4, 2e-4, 1e-4], rel=1e-9)
