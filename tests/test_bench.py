"""The benchmark scripts: the printed figures are the work done divided by the time taken.

Each bench module's clock is replaced by a fake one that advances a fixed step per reading, so
the measured time is known exactly, and the games and environments are wrapped to count the
steps, decisions and hands they really made; the printed rates must be those counts over that
time (decisions counted against steps and batch size). No timing claims are made.
"""

from __future__ import annotations

import json

import pytest

from zhuoji_env import bench
from zhuoji_env.engine.game import BatchGame
from zhuoji_env.envs import bench as env_bench
from zhuoji_env.envs import vector
from zhuoji_env.envs.single import SingleAgentEnv

TICK = 1 / 64  # seconds per reading of the fake clock (exact in binary)


class FakeClock:
    """Stands in for the ``time`` module of a bench: ``perf_counter`` advances TICK per call."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += TICK
        return self.now


def _run(main, argv, capsys):
    """``(printed lines, the last line's JSON)`` of a bench run."""
    assert main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    return lines, json.loads(lines[-1])


def test_engine_bench_counts_batch_decisions_per_step(monkeypatch, capsys):
    hands_per_step: list[int] = []

    class CountingGame(BatchGame):
        def step(self, actions, active=None):
            out = super().step(actions, active)
            hands_per_step.append(int(out.hand_over.sum()))
            return out

    monkeypatch.setattr(bench, "BatchGame", CountingGame)
    monkeypatch.setattr(bench, "time", FakeClock())
    lines, out = _run(bench.main, ["--batch", "8", "--seconds", "4", "--json"], capsys)
    # 20 warm-up steps, then a step per clock reading until 4 s have passed: the start reads
    # TICK, the loop reads 2 TICK .. 257 TICK, so 255 steps in exactly 4 s
    assert len(hands_per_step) == 20 + 255
    hands = sum(hands_per_step[20:])
    assert hands > 0
    r = out["results"][0]
    assert r["batch"] == 8
    assert r["decisions_per_s"] == 255 * 8 / 4 == 510.0
    assert r["hands_per_s"] == hands / 4
    assert out["decisions_per_s"] == r["decisions_per_s"]
    assert lines[1].split() == ["8", "510", f"{hands / 4:,.1f}"]


def test_selfplay_bench_counts_batch_decisions_per_step(monkeypatch, capsys):
    dones_per_step: list[int] = []

    class CountingSelfPlay(vector.SelfPlayVecEnv):
        def step(self, actions):
            out = super().step(actions)
            dones_per_step.append(int(out[4].sum()))
            return out

    monkeypatch.setattr(env_bench, "SelfPlayVecEnv", CountingSelfPlay)
    monkeypatch.setattr(env_bench, "time", FakeClock())
    argv = ["--only", "selfplay", "--batch", "16", "--seconds", "1", "--json"]
    lines, out = _run(env_bench.main, argv, capsys)
    r = out["selfplay"]
    # 20 warm-up steps, then 63 steps in exactly 1 s (readings 2 TICK .. 64 TICK)
    assert len(dones_per_step) == 20 + 63
    hands = sum(dones_per_step[20:])
    assert r["batch"] == 16
    assert r["decisions_per_s"] == 63 * 16 == 1008
    assert r["hands_per_s"] == hands
    # the split: 10 bare steps (max(63 // 4, 10)), each step and each encoding one tick long
    assert r["ms_per_step"] == pytest.approx(1000 / 63)
    assert r["ms_engine_step"] == r["ms_encode"] == pytest.approx(TICK * 1000)
    assert r["ms_other"] == 0.0  # a step (1000 / 63 ms) is shorter than the two ticks
    assert lines[0].startswith("SelfPlayVecEnv batch 16: 1,008 decisions/s")


def test_aec_bench_counts_every_turn(monkeypatch, capsys):
    calls = {"step": 0, "reset": 0}
    make_aec = env_bench.make_aec

    def counting_env(**kwargs):
        e = make_aec(**kwargs)
        step, reset = e.step, e.reset

        def counted_step(action):
            calls["step"] += 1
            step(action)

        def counted_reset(*args, **kw):
            calls["reset"] += 1
            return reset(*args, **kw)

        e.step, e.reset = counted_step, counted_reset
        return e

    monkeypatch.setattr(env_bench, "make_aec", counting_env)
    monkeypatch.setattr(env_bench, "time", FakeClock())
    lines, out = _run(env_bench.main, ["--only", "aec", "--seconds", "2", "--json"], capsys)
    r = out["aec"]
    # 127 passes of up to 4 turns each in exactly 2 s; the first reset is not a new match
    assert 4 * 100 < calls["step"] <= 4 * 127
    assert r["turns_per_s"] == calls["step"] / 2
    assert r["matches_per_s"] == (calls["reset"] - 1) / 2
    assert lines[0].startswith(f"AEC env (zhuoji_v1, wrapped): {calls['step'] / 2:,.0f} turns/s")


def test_single_bench_counts_learner_steps_and_all_decisions(monkeypatch, capsys):
    tally = {"steps": 0, "episodes": 0, "finished_decisions": 0}

    class CountingSingle(SingleAgentEnv):
        def reset(self, **kw):
            self.decisions = 0
            out = super().reset(**kw)
            assert out[1]["skipped_matches"] == 0
            return out

        def _apply(self, action):
            self.decisions += 1
            return super()._apply(action)

        def step(self, action):
            out = super().step(action)
            tally["steps"] += 1
            if out[2]:
                tally["episodes"] += 1
                tally["finished_decisions"] += self.decisions
            return out

    monkeypatch.setattr(env_bench, "SingleAgentEnv", CountingSingle)
    monkeypatch.setattr(env_bench, "time", FakeClock())
    lines, out = _run(env_bench.main, ["--only", "single", "--seconds", "2", "--json"], capsys)
    r = out["single"]
    assert tally["steps"] == 127  # one learner step per reading, 2 s
    assert tally["episodes"] > 0
    assert r["steps_per_s"] == 127 / 2
    assert r["episodes_per_s"] == tally["episodes"] / 2
    # every decision of the finished episodes (the learner's and the opponents')
    assert r["decisions_per_s"] == tally["finished_decisions"] / 2
    assert tally["finished_decisions"] > tally["steps"]
    assert lines[0].startswith("SingleAgentEnv: 64 learner steps/s")


def test_sb3_bench_counts_learner_steps_times_batch(monkeypatch, capsys):
    pytest.importorskip("stable_baselines3")
    from zhuoji_env.envs import sb3

    steps = []

    class CountingSB3(sb3.SB3VecEnv):
        def step_wait(self):
            steps.append(self.num_envs)
            return super().step_wait()

    monkeypatch.setattr(sb3, "SB3VecEnv", CountingSB3)
    monkeypatch.setattr(env_bench, "time", FakeClock())
    argv = ["--only", "sb3", "--sb3-batch", "4", "--seconds", "0.25", "--json"]
    lines, out = _run(env_bench.main, argv, capsys)
    # 15 steps of 4 learners in exactly 0.25 s
    assert steps == [4] * 15
    assert out["sb3"] == {"batch": 4, "learner_steps_per_s": 15 * 4 / 0.25}
    assert lines[0] == "SB3VecEnv batch 4: 240 learner steps/s (random opponents)"


SECONDS = "--seconds must be a finite number >= 0.01 (time per measurement), got "


@pytest.mark.parametrize(
    "bad, why",
    [
        (["--seconds", "0"], SECONDS + "0.0"),
        (["--seconds", "nan"], SECONDS + "nan"),  # 0 steps: a ZeroDivisionError, or "0/s"
        (["--seconds", "inf"], SECONDS + "inf"),
        (["--batch", "0"], "--batch must be >= 1, got 0"),  # "the batch sizes must be positive"
        (["--sb3-batch", "-2"], "--sb3-batch must be >= 1, got -2"),
    ],
)
def test_env_bench_rejects_bad_arguments(bad, why, capsys):
    with pytest.raises(SystemExit) as info:
        env_bench.main(bad)
    assert info.value.code == 2
    assert f"error: {why}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "bad, why",
    [
        (["--batch", "0"], "--batch must be >= 1, got 0"),
        (["--seconds", "0"], SECONDS + "0.0"),
        (["--seconds", "nan"], SECONDS + "nan"),
    ],
)
def test_engine_bench_rejects_bad_arguments(bad, why, capsys):
    with pytest.raises(SystemExit) as info:
        bench.main(bad)
    assert info.value.code == 2
    assert f"error: {why}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "main, argv, says",
    [
        (bench.main, ["--batch", str(10**12)], "--batch 1000000000000 needs about"),
        (
            env_bench.main,
            ["--batch", str(10**12), "--only", "selfplay"],
            "--batch 1000000000000 needs about",
        ),
        (
            env_bench.main,
            ["--sb3-batch", str(10**12), "--only", "sb3"],
            "--sb3-batch 1000000000000 needs about",
        ),
    ],
    ids=["engine", "selfplay", "sb3"],
)
def test_a_batch_too_large_for_memory_exits_2_before_any_game(main, argv, says, capsys):
    """A trillion games would fill the machine: refused with the estimate and the limit (exit
    2, no traceback) before any game is made."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "GiB of memory, more than the" in err


@pytest.mark.parametrize(
    "bad, why",
    [
        (["--sizes", "4,x"], "--sizes '4,x': batch sizes must be integers >= 1"),
        (["--min-time", "inf"], "--min-time must be a finite number > 0, got inf"),
        (["--ref-hands", "0"], "--ref-hands must be >= 1, got 0"),  # named with --min-time
    ],
)
def test_hands_bench_rejects_bad_arguments(bad, why, capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "benchmarks" / "bench_hands.py"
    spec = importlib.util.spec_from_file_location("bench_hands", path)
    bench_hands = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_hands)
    with pytest.raises(SystemExit) as info:
        bench_hands.main(bad)
    assert info.value.code == 2
    assert f"error: {why}" in capsys.readouterr().err
