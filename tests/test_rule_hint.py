"""``rule``'s advice (``RuleAgent.advice``) and the ``zhuoji-obs-v2+rule`` input built from it
(``agents.ppo.NetInput``): the advice is what ``rule`` plays, the hint blocks say exactly that,
and a network wired to copy the hint plays exactly like ``rule``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.ppo import (
    HINT_START,
    INPUT_SIZES,
    VERSION_RULE,
    NetInput,
    PolicyNet,
    PPOAgent,
    load_checkpoint,
    save_checkpoint,
)
from agents.rule import RuleAgent
from agents.simple import RandomAgent
from zhuoji_env.engine import actions as A
from zhuoji_env.envs import SelfPlayVecEnv
from zhuoji_env.observation import OBS_SIZES, VERSION_V2, with_features
from zhuoji_env.rules import Rules

N = A.NUM_ACTIONS


def _states(preset: str, games: int = 64, steps: int = 60, seed: int = 4):
    """(obs, mask) of every decision of mixed rule and random play."""
    rules = Rules.make(preset)
    env = SelfPlayVecEnv(games, rules, seed=seed)
    players = [RuleAgent(rules=rules), RandomAgent(seed=seed)]
    rng = np.random.default_rng(seed)
    obs, masks, _ = env.reset(seed=seed)
    found_obs, found_mask = [], []
    for _ in range(steps):
        found_obs.append(obs)
        found_mask.append(masks)
        picks = [p.act(obs, masks) for p in players]
        obs, masks, *_ = env.step(np.choose(rng.integers(2, size=games), picks))
    return np.concatenate(found_obs), np.concatenate(found_mask), rules


@pytest.mark.parametrize("preset", ["guiyang", "classic"])
def test_advice_is_what_rule_plays_and_scores_its_choice_best(preset):
    obs, mask, rules = _states(preset)
    agent = RuleAgent(rules=rules)
    acts, scores = agent.advice(obs, mask)
    assert (acts == agent.act(obs, mask)).all()
    weighed = ~np.isnan(scores)
    assert not (weighed & ~mask).any()  # only legal actions are weighed
    rows = np.flatnonzero(weighed.any(1))
    assert rows.size > len(obs) // 2
    best = np.nanmax(scores[rows], axis=1)
    assert np.allclose(scores[rows, acts[rows]], best)  # the choice is the best it weighed
    # on its turn it weighs every legal discard; a win it may take is never weighed, just taken
    turn = rows[mask[rows, A.DISCARD : A.DISCARD + 27].any(1)]
    disc = slice(A.DISCARD, A.DISCARD + 27)
    assert (weighed[turn, disc] == mask[turn, disc]).all()
    assert not weighed[acts == A.HU].any()
    # responses: passing and each legal pong or kong are weighed
    resp = rows[mask[rows, A.PASS]]
    assert weighed[resp, A.PASS].all()
    for a in (A.PONG, A.KONG):
        assert (weighed[resp, a] == mask[resp, a]).all()
    assert (acts[resp] == A.PONG).any() and (acts[resp] == A.PASS).any()


def test_rule_hint_blocks_say_what_rule_plays_and_how_far_the_rest_fall_behind():
    obs, mask, rules = _states("guiyang")
    read = NetInput(VERSION_RULE, rules)
    x = read(obs, mask)
    assert x.shape == (len(obs), INPUT_SIZES[VERSION_RULE]) and x.dtype == np.float32
    v2 = OBS_SIZES[VERSION_V2]
    assert HINT_START == v2 and INPUT_SIZES[VERSION_RULE] == v2 + 2 * N
    assert np.array_equal(x[:, :v2], with_features(obs, rules.pattern_table))
    choice, gap = x[:, v2 : v2 + N], x[:, v2 + N :]
    acts, scores = RuleAgent(rules=rules).advice(obs, mask)
    assert np.array_equal(choice, np.eye(N, dtype=np.float32)[acts])
    weighed = ~np.isnan(scores)
    assert (gap[~weighed] == 1).all() and (gap[weighed] >= 0).all() and (gap[weighed] < 1).all()
    rows = np.flatnonzero(weighed.any(1))
    assert (gap[rows, acts[rows]] == 0).all()
    # the gap is 1 - exp(-d/2), d the score's shortfall from the best in plain-hand values
    r, a = np.nonzero(weighed)
    best = np.max(np.where(weighed, scores, -np.inf), axis=1)
    d = best[r] - scores[r, a]
    assert np.allclose(gap[r, a], 1 - np.exp(-d / 2), atol=1e-6)
    assert (d > 0.5).sum() > 100  # the gaps are not all near 0


def test_the_gap_is_counted_in_the_presets_plain_hand_value():
    obs, mask, _ = _states("classic", steps=30)
    classic = Rules.make("classic")
    assert classic.pattern_table["pinghu"] != 1
    gap = NetInput(VERSION_RULE, classic).rule_hint(obs, mask)[:, N:]
    scores = RuleAgent(rules=classic).advice(obs, mask)[1]
    weighed = ~np.isnan(scores)
    r, a = np.nonzero(weighed)
    best = np.max(np.where(weighed, scores, -np.inf), axis=1)
    d = (best[r] - scores[r, a]) / classic.pattern_table["pinghu"]
    assert np.allclose(gap[r, a], 1 - np.exp(-d / 2), atol=1e-6)


def _copy_rule_net(hidden: int = 96) -> PolicyNet:
    """A v2+rule network whose logits are 50 x ``rule_choice``: it plays what rule advises."""
    net = PolicyNet(hidden, VERSION_RULE)
    v2 = HINT_START
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        net.body[0].weight[torch.arange(N), v2 + torch.arange(N)] = 1.0
        net.body[2].weight[torch.arange(N), torch.arange(N)] = 1.0
        net.pi.weight[torch.arange(N), torch.arange(N)] = 50.0
    return net


@pytest.mark.parametrize("greedy", [True, False])
def test_a_network_copying_the_hint_plays_exactly_like_rule(tmp_path, greedy):
    """End to end through a checkpoint file: input, network, agent; a hint misplaced by one
    block or one action fails this."""
    path = tmp_path / "copy.pt"
    save_checkpoint(path, _copy_rule_net(), rules={"preset": "app", "overrides": {}})
    net, ckpt = load_checkpoint(path)
    assert net.obs_version == VERSION_RULE and ckpt["obs_size"] == INPUT_SIZES[VERSION_RULE]
    agent = PPOAgent.load(path, seed=1, greedy=greedy)
    obs, mask, rules = _states("app", steps=40)
    assert (agent.act(obs, mask) == RuleAgent(rules=rules).act(obs, mask)).all()


def test_an_unknown_input_version_is_refused_by_name():
    with pytest.raises(ValueError, match="'zhuoji-obs-v3': one of .*zhuoji-obs-v2\\+rule"):
        NetInput("zhuoji-obs-v3")
    with pytest.raises(ValueError, match="'zhuoji-obs-v3': one of"):
        PolicyNet(8, "zhuoji-obs-v3")
