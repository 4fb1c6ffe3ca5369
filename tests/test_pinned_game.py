"""Behaviour of BatchGame, the agents' view, terminal play, shipping and curves that no other test
pinned: a mutation test (2026-12-06) planted 30 small bugs there, 16 survived the rest of the
suite, and these tests kill 13 of them (tests/test_play.py pins two more): game i keyed by
(seed, i); first dealers over every seat, also at a restart; final scores only where a match
ended; live counts; an empty mask row; the human's seat in agents.play and the dealer and streak
it carries to the next hand; ship_policy's overrides, staged files and seconds; the curve's
order of checkpoints; the memory limit's bounds."""

import re

import numpy as np

from zhuoji_env.engine import core
from zhuoji_env.engine.game import BatchGame, first_deals
from zhuoji_env.rules import Rules


def test_game_i_is_keyed_by_seed_then_index():
    """Module docstring: game i draws its wall and first dealer from the stream (seed, i),
    the same stream the arena's deal i uses."""
    game = BatchGame("guiyang", 5, seed=123)
    walls, dealers = first_deals([np.random.default_rng([123, i]) for i in range(5)], 4)
    want = core.deal(Rules.make("guiyang"), walls, dealers, 0)
    assert (game.state.wall == want.wall).all()
    assert (game.state.dealer == dealers).all()


def test_first_dealers_cover_every_seat():
    game = BatchGame("guiyang", 200, seed=0)
    assert set(game.state.dealer.tolist()) == {0, 1, 2, 3}
    assert (game.state.streak == 0).all()


def test_restart_draws_first_dealer_over_every_seat_and_zeroes_match():
    game = BatchGame("guiyang", 200, seed=1, hands_per_game=2)
    rng = np.random.default_rng(0)
    while not ((game.hand_no > 0).any() and game.scores.any()):  # a hand has ended somewhere
        game.step(game.random_actions(rng))
    game.restart(np.arange(200))
    assert set(game.state.dealer.tolist()) == {0, 1, 2, 3}
    assert (game.state.streak == 0).all()
    assert (game.hand_no == 0).all() and (game.scores == 0).all()


def test_final_scores_only_where_the_match_ended():
    """StepOutput.final_scores: match totals where match_over, else 0 (also for a hand that
    ended mid-match)."""
    game = BatchGame("guiyang", 32, seed=5, hands_per_game=3)
    rng = np.random.default_rng(1)
    totals = np.zeros((32, 4), np.int64)
    mid_match_scored = matches = 0
    while matches < 10 or not mid_match_scored:
        out = game.step(game.random_actions(rng))
        totals += out.rewards
        mid = out.hand_over & ~out.match_over
        mid_match_scored += int((mid & totals.any(1)).sum())
        assert (out.final_scores[~out.match_over] == 0).all()
        done = np.flatnonzero(out.match_over)
        assert (out.final_scores[done] == totals[done]).all()
        totals[done] = 0
        matches += done.size


def test_live_counts_is_four_minus_visible_unclipped_for_unseen_kinds():
    from agents.base import live_counts, visible_counts
    from zhuoji_env.engine import actions as A
    from zhuoji_env.observation import encode

    game = BatchGame("guiyang", 16, seed=2)
    rng = np.random.default_rng(3)
    for _ in range(12):
        game.step(game.random_actions(rng))
    st = game.state
    obs = encode(st, np.arange(16), st.actor)
    vis, live = visible_counts(obs), live_counts(obs)
    assert ((vis >= 0) & (vis <= 4)).all()
    assert (live == 4 - vis).all()
    assert (live == 4).any()  # some kind nobody has shown
    assert A.NUM_ACTIONS == 86


def test_one_empty_mask_row_among_legal_ones_is_refused_up_front():
    import pytest

    from agents.rule import RuleAgent
    from agents.simple import GreedyAgent
    from zhuoji_env.observation import encode

    game = BatchGame("guiyang", 4, seed=0)
    obs = encode(game.state, np.arange(4), game.state.actor)
    mask = game.mask.copy()
    mask[2] = False
    for agent in (RuleAgent(0), GreedyAgent(0)):
        with pytest.raises(ValueError, match="every mask row needs at least one legal action"):
            agent.act(obs, mask)


def test_play_shows_the_table_from_the_humans_seat():
    from agents import play

    for seat in (1, 2, 3):
        out = []
        assert play.main(["--seed", "3", "--seat", str(seat)], lambda p: "quit", out.append) == 0
        text = "\n".join(out)
        assert f"Viewer: player_{seat}" in text
        assert re.search(rf"player_{seat} \[(dealer, )?you\]", text)
        assert "Viewer: player_0" not in text
        assert not re.search(r"player_0 \[(dealer, )?you\]", text)


def test_play_deals_the_next_hand_with_the_results_dealer_and_streak(monkeypatch):
    import itertools

    from agents import play
    from zhuoji_env.tiles import CODES

    deals, results = [], []
    real_deal, real_result = play.core.deal, play.result_of

    def deal(rules, walls, dealer, streak=0):
        deals.append((int(dealer), int(streak)))
        return real_deal(rules, walls, dealer, streak)

    def result_of(st, i):
        results.append(real_result(st, i))
        return results[-1]

    monkeypatch.setattr(play.core, "deal", deal)
    monkeypatch.setattr(play, "result_of", result_of)
    streaked = 0
    for seed in range(60):
        deals.clear(), results.clear()
        script = itertools.cycle(["hu", "pass", *CODES])
        answers = iter(["y", "y", "y", "n"])

        def ask(prompt, answers=answers, script=script):
            return next(answers) if "another" in prompt.lower() else next(script)

        assert play.main(["--seed", str(seed), "--opponents", "rule"], ask, lambda s: None) == 0
        assert len(deals) == len(results) == 4
        for res, nxt in zip(results[:-1], deals[1:], strict=True):
            assert nxt == (res["next_dealer"], res["next_streak"])
            streaked += res["next_streak"] > 0
        if streaked:
            break
    assert streaked


def _tiny_ckpt(path, rules_record, stages):
    import torch

    from agents.ppo import PolicyNet, save_checkpoint

    torch.manual_seed(0)
    decisions = sum(s["decisions"] for s in stages)
    save_checkpoint(
        path, PolicyNet(8), update=1, decisions=decisions, rules=rules_record, stages=stages
    )
    return path


def _stage(**kw):
    return {"command": "python -m training.ppo_selfplay", "commit": None, "preset": "app",
            "decisions": 64, "seconds": 1.5, **kw}  # fmt: skip


def test_ship_policy_refuses_a_checkpoint_trained_with_overrides(tmp_path, capsys):
    import pytest

    from training import ship_policy

    rules = Rules.make("app", hands_per_game=2)
    assert rules.preset == "app" and rules.overrides
    ckpt = _tiny_ckpt(tmp_path / "c.pt", rules.to_record(), [_stage()])
    ship = tmp_path / "ship"
    argv = ["--checkpoint", str(ckpt), "--name", "ppo-app", "--deals", "1", "--workers", "1"]
    with pytest.raises(SystemExit) as exc:
        ship_policy.main([*argv, "--out-dir", str(ship)])
    assert exc.value.code == 2
    assert "is the plain 'app' preset's policy" in capsys.readouterr().err
    assert not ship.exists() or not list(ship.iterdir())


def test_ship_policy_provenance_sums_every_stages_seconds(tmp_path):
    import json

    from training import ship_policy

    stages = [_stage(decisions=40, seconds=1.5), _stage(decisions=24, seconds=2.25)]
    ckpt = _tiny_ckpt(tmp_path / "c.pt", Rules.make("app").to_record(), stages)
    ship = tmp_path / "ship"
    argv = ["--checkpoint", str(ckpt), "--name", "ppo-app", "--deals", "1", "--workers", "1"]
    assert ship_policy.main([*argv, "--out-dir", str(ship)]) == 0
    prov = json.loads((ship / "ppo-app.json").read_text())
    assert prov["decisions"] == 64 and prov["seconds"] == 3.8  # round(3.75, 1)
    assert [s["seconds"] for s in prov["stages"]] == [1.5, 2.25]


def test_finish_interrupted_keeps_the_json_of_another_pt(tmp_path):
    import hashlib
    import json

    from training import ship_policy

    (tmp_path / "ppo-app.pt").write_bytes(b"weights B")
    old = json.dumps({"sha256": hashlib.sha256(b"weights B").hexdigest(), "v": "old"})
    (tmp_path / "ppo-app.json").write_text(old)
    stale = {"sha256": hashlib.sha256(b"weights C").hexdigest(), "v": "stale"}
    (tmp_path / ".ppo-app.json.new").write_text(json.dumps(stale))
    said = ship_policy.finish_interrupted(tmp_path, "ppo-app")
    assert said and "deleted the staged files" in said
    assert (tmp_path / "ppo-app.json").read_text() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ppo-app.json", "ppo-app.pt"]


def test_curve_orders_checkpoints_by_decisions_and_takes_only_update_k(tmp_path):
    from training import curve

    rec = Rules.make("app").to_record()
    run = tmp_path / "run"
    run.mkdir()
    for k, d in ((9, 900), (10, 1000), (2, 200)):
        _tiny_ckpt(run / f"update_{k}.pt", rec, [_stage(decisions=d)])
    _tiny_ckpt(run / "update_best.pt", rec, [_stage(decisions=50)])  # not update_<k>.pt
    _tiny_ckpt(run / "update_3_old.pt", rec, [_stage(decisions=300)])
    points = curve.checkpoints(run)
    assert [d for d, _, _ in points] == [200, 900, 1000]
    assert [p.name for _, p, _ in points] == ["update_2.pt", "update_9.pt", "update_10.pt"]


def test_memory_limit_refuses_zero_and_check_memory_boundary(monkeypatch):
    import pytest

    from zhuoji_env.limits import SizeError, check_memory, memory_limit

    for bad in ("0", "-5"):
        monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", bad)
        with pytest.raises(ValueError, match="expected a positive number of bytes"):
            memory_limit()
    monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", "1000")
    assert memory_limit() == 1000
    check_memory("x", 1000)  # exactly the limit fits
    with pytest.raises(SizeError, match="that ZHUOJI_MEMORY_LIMIT sets"):
        check_memory("x", 1001)
