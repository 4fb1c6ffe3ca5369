"""training.sb3_maskable's budget and model flags: --time-limit, --snapshot-minutes,
--net-arch, --norm-reward; and what a run prints and leaves behind."""

from __future__ import annotations

import tempfile

import pytest
from json_helpers import strict_json

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
    shapes = [tuple(p.shape) for p in agent.net.mlp_extractor.policy_net.parameters()]
    assert shapes == [(96, 1238), (96,), (32, 96), (32,)]
    assert "trained" in capsys.readouterr().out


class Clock:
    """A stand-in for the module's ``time``: each reading is 6 s (0.1 min) after the last."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        self.now += 6.0
        return self.now


def test_snapshots_are_saved_on_the_way_and_load_as_agents(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sb3_maskable, "time", Clock())
    out = tmp_path / "run"
    argv = [*TINY, "--time-limit", "0.45", "--total-timesteps", "10000000"]
    argv += ["--snapshot-minutes", "0.25,0.15", "--eval-opponents", "", "--out-dir", str(out)]
    args = sb3_maskable.parse_args(sb3_maskable.Args, argv, "", sb3_maskable.PROG)
    result = sb3_maskable.train(args)
    # rollouts of 8 x 16 decisions start 0.1, 0.2, 0.3, 0.4 and 0.5 min into training: the
    # snapshots are taken at the second and third, and the fifth stops after one step
    assert result["snapshots"] == [
        {"minutes": 0.15, "decisions": 128, "model": str(out / "model-0.15min.zip")},
        {"minutes": 0.25, "decisions": 256, "model": str(out / "model-0.25min.zip")},
    ]
    assert result["decisions"] == 4 * 128 + 8
    shots = result["snapshots"]
    later = make_agent(f"sb3:{shots[1]['model']}")
    final = make_agent(f"sb3:{out / 'model.zip'}")
    differ = [
        not (a == b).all()
        for a, b in zip(later.net.parameters(), final.net.parameters(), strict=True)
    ]
    assert any(differ)  # the snapshot is the model of its time, not the final one
    assert "snapshot after 0.25 min: 256 decisions" in capsys.readouterr().out
    # a second run into the same folder is refused, naming the snapshots it would overwrite
    (out / "model.zip").unlink()
    rc = sb3_maskable.main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and "holds model-0.15min.zip, model-0.25min.zip" in err and "--force" in err


@pytest.mark.parametrize(
    "flag, value, match",
    [
        ("--net-arch", "64,x", "--net-arch '64,x': must be 1 to 4 comma-separated widths"),
        ("--net-arch", "0", "--net-arch '0'"),
        ("--net-arch", "8,8,8,8,8", "1 to 4"),
        ("--time-limit", "-1", "--time-limit"),
        ("--snapshot-minutes", "30,x", "--snapshot-minutes '30,x': must be comma-separated"),
        ("--snapshot-minutes", "0", "minutes > 0"),
        ("--snapshot-minutes", "60", "each below --time-limit 60"),
    ],
)
def test_bad_budget_and_model_flags_exit_2(flag, value, match, tmp_path, capsys):
    argv = [flag, value, "--out-dir", str(tmp_path / "r")]
    if flag != "--time-limit":
        argv += ["--time-limit", "60"]
    rc = sb3_maskable.main(argv)
    assert rc == 2 and match in capsys.readouterr().err


def test_a_run_says_what_it_trains_leaves_no_log_folder_and_prints_standard_json(
    tmp_path, capsys, monkeypatch
):
    """Three findings of one review: 100 decisions asked for quietly became 128 (SB3 rounds up
    to whole rollouts; the run now rounds down, as ppo_selfplay does, and says so); every
    learn() left an empty SB3-<time> folder in the temporary folder (SB3's default logger); and
    an evaluation of one deal printed its interval as NaN, which is not JSON."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    argv = ["--total-timesteps", "100", "--n-envs", "2", "--n-steps", "32", "--batch-size", "32"]
    argv += ["--eval-opponents", "random", "--eval-deals", "1", "--out-dir", str(tmp_path / "r")]
    args = sb3_maskable.parse_args(sb3_maskable.Args, argv, "", sb3_maskable.PROG)
    assert sb3_maskable.train(args)["decisions"] == 64
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "training 64 decisions of the learner: 1 rollout of 2 games x 32 steps (64 decisions "
        "each); the 100 decisions asked for, rounded down to whole rollouts"
    )
    assert lines[-1].startswith(f"saved {tmp_path / 'r' / 'model.zip'}; margins {{")
    margins = strict_json(lines[-1].split("; margins ", 1)[1])
    assert margins["random"]["ci95"] == [None, None]
    assert not list(temp.glob("SB3-*"))  # (torch may leave its own folders there)


def _not_json(name):
    raise ValueError(f"{name} is not JSON")
