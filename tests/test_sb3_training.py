"""training.sb3_maskable's budget and model flags: --time-limit, --net-arch, --norm-reward."""

from __future__ import annotations

import pytest

from agents import make_agent
from training import sb3_maskable

TINY = ["--n-envs", "8", "--n-steps", "16", "--batch-size", "64", "--eval-deals", "2"]


def test_time_limit_stops_learning_and_the_widths_reach_the_saved_model(tmp_path, capsys):
    out = tmp_path / "run"
    args = sb3_maskable.parse_args(
        sb3_maskable.Args,
        [*TINY, "--time-limit", "0.02", "--total-timesteps", "10000000", "--net-arch", "96,32"]
        + ["--norm-reward", "--eval-opponents", "random", "--out-dir", str(out)],
        sb3_maskable.__doc__,
        sb3_maskable.PROG,
    )
    result = sb3_maskable.train(args)
    # 1.2 s of a 10M-decision budget: whole rollouts of 8 x 16, then the first step (8 games)
    # of the rollout that started past the limit, which ends learning
    assert 0 < result["decisions"] < 10_000_000 and result["decisions"] % (8 * 16) == 8
    assert result["seconds"] < 60
    agent = make_agent(f"sb3:{out / 'model.zip'}")
    shapes = [tuple(p.shape) for p in agent.policy.mlp_extractor.policy_net.parameters()]
    assert shapes == [(96, 1238), (96,), (32, 96), (32,)]
    assert "trained" in capsys.readouterr().out


@pytest.mark.parametrize(
    "flag, value, match",
    [
        ("--net-arch", "64,x", "--net-arch '64,x': must be 1 to 4 comma-separated widths"),
        ("--net-arch", "0", "--net-arch '0'"),
        ("--net-arch", "8,8,8,8,8", "1 to 4"),
        ("--time-limit", "-1", "--time-limit"),
    ],
)
def test_bad_budget_and_model_flags_exit_2(flag, value, match, tmp_path, capsys):
    rc = sb3_maskable.main([flag, value, "--out-dir", str(tmp_path / "r")])
    assert rc == 2 and match in capsys.readouterr().err
