"""A league in ``ppo_selfplay``: frozen exploiters (``training.best_response`` checkpoints) and
past checkpoints join the opponents through ``--pool-agents ppo:PATH,...``; they hold about
``--pool-prob`` of the seats, each plays its seats in one call a step, none of them is trained
and their decisions are not trained on."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from agents.ppo import load_checkpoint
from training import best_response, ppo_selfplay

TINY = dict(
    num_envs=16, num_steps=16, num_minibatches=2, update_epochs=1, hidden=16, progress=False,
)  # fmt: skip


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_exploiters_and_past_checkpoints_play_a_share_of_the_seats_frozen(tmp_path, monkeypatch):
    exploiter = tmp_path / "exploiter"
    best_response.train(best_response.Args(target="rule", total_decisions=256, eval_every=0,
                                           eval_deals=1, final_deals=2, out_dir=str(exploiter),
                                           **TINY))  # fmt: skip
    past = tmp_path / "past"
    ppo_selfplay.train(ppo_selfplay.Args(total_decisions=256, eval_opponents="",
                                         out_dir=str(past), **TINY))  # fmt: skip
    league = [exploiter / "latest.pt", past / "latest.pt"]
    before = [_sha(p) for p in league]
    rows, calls = Counter(), Counter()
    played = ppo_selfplay.fixed_actions

    def counted(member, read, x, obs, mask, state=None, games=None):
        rows[member.spec] += len(mask)
        calls[member.spec] += 1
        return played(member, read, x, obs, mask, state, games)

    monkeypatch.setattr(ppo_selfplay, "fixed_actions", counted)
    specs = [f"ppo:{p}" for p in league]
    out = ppo_selfplay.train(
        ppo_selfplay.Args(
            total_decisions=4 * 256,
            pool_agents=",".join(specs),
            pool_prob=0.5,
            eval_opponents="",
            out_dir=str(tmp_path / "run"),
            **TINY,
        )  # fmt: skip
    )
    assert set(rows) == set(specs)
    steps = 4 * 16
    assert all(calls[s] <= steps for s in specs)  # one call a step for all its seats
    share = sum(rows.values()) / out["decisions"]
    assert share == pytest.approx(0.5, abs=0.12)  # about --pool-prob of the seats
    assert rows[specs[0]] == pytest.approx(rows[specs[1]], rel=0.5)  # drawn evenly
    trained = sum(u["train"]["train/trained_decisions"] for u in out["updates"])
    assert trained <= out["decisions"] - sum(rows.values())
    assert [_sha(p) for p in league] == before  # never trained, never rewritten
    _, ckpt = load_checkpoint(tmp_path / "run" / "latest.pt")
    assert ckpt["args"]["pool_agents"] == ",".join(specs)  # the league is in the provenance
