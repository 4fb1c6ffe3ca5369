"""The benchmark scripts run and report positive throughputs (smoke tests, no timing claims)."""

from __future__ import annotations

import json

import pytest

from zhuoji_env import bench
from zhuoji_env.envs import bench as env_bench


def _last_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_engine_bench_one_batch(capsys):
    assert bench.main(["--batch", "8", "--seconds", "0.2", "--json"]) == 0
    out = _last_json(capsys)
    assert out["results"][0]["batch"] == 8 and out["decisions_per_s"] > 0


def test_env_bench_all_measurements(capsys):
    args = ["--seconds", "0.3", "--batch", "32", "--sb3-batch", "4", "--json"]
    assert env_bench.main(args) == 0
    out = _last_json(capsys)
    assert out["aec"]["turns_per_s"] > 0 and out["single"]["steps_per_s"] > 0
    assert out["selfplay"]["batch"] == 32 and out["selfplay"]["decisions_per_s"] > 0
    assert out["sb3"]["learner_steps_per_s"] > 0


@pytest.mark.parametrize("bad", [["--seconds", "0"], ["--batch", "0"]])
def test_env_bench_rejects_bad_arguments(bad):
    with pytest.raises(SystemExit):
        env_bench.main(bad)
