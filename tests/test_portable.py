"""The portable numeric mode: a protocol pair computes the same numbers under two SIMD settings
(numpy's, torch's and oneMKL's dispatch) only under it; how a command starts again under it."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agents import arena, ladder
from zhuoji_env import machine

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = machine.portable_settings()
x86_only = pytest.mark.skipif(SETTINGS is None, reason="the portable mode is for x86-64 CPUs")

DIGEST_PLUGIN = """
import atexit
import hashlib
import os

import torch

import agents.ppo as ppo

digest = hashlib.sha256()
real = ppo.pick_actions


def pick(logits, greedy, gen):
    digest.update(logits.numpy().tobytes())
    digest.update(torch.softmax(logits, -1).numpy().tobytes())
    return real(logits, greedy, gen)


ppo.pick_actions = pick
atexit.register(lambda: open(os.environ["DIGEST_FILE"], "w").write(digest.hexdigest()))
"""


def lower_targets() -> dict[str, str]:
    """The environment of another machine, as far as this one can play it: numpy on its
    baseline code (every dispatch target off), torch's kernels on their plain C++ code, oneMKL
    on its SSE4.2 branch with one thread, oneDNN on SSE4.1."""
    dispatch = machine._numpy_dispatch()
    return {
        "NPY_DISABLE_CPU_FEATURES": " ".join(dispatch[1]) if dispatch else "",
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_CBWR": "SSE4_2",
        "MKL_NUM_THREADS": "1",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
    }


def play(tmp_path: Path, name: str, env_extra: dict[str, str], portable: bool):
    """``ppo-guiyang - rule`` on 2 deals of the protocol's seed, in a fresh process: the digest
    of every logit and probability the policy computed, and the arena's summary."""
    plugin = tmp_path / "policy_digest.py"
    plugin.write_text(DIGEST_PLUGIN)
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS and k != machine.PORTABLE_MARK}
    env |= {**env_extra, "DIGEST_FILE": str(tmp_path / f"{name}.digest")}
    out = tmp_path / f"{name}.json"
    argv = ["--agents", "ppo-guiyang,rule", "--deals", "2", "--seed", "4001", "--no-progress",
            "--plugin", str(plugin), "--json", str(out)]  # fmt: skip
    argv += ["--portable"] if portable else []
    run = subprocess.run(
        [sys.executable, "-m", "agents.arena", *argv], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return (tmp_path / f"{name}.digest").read_text(), json.loads(out.read_text())


@x86_only
def test_a_protocol_pair_computes_the_same_under_two_simd_settings_only_when_portable(tmp_path):
    default, lower = {}, lower_targets()
    digest, summary = play(tmp_path, "portable-default", default, portable=True)
    digest_lower, summary_lower = play(tmp_path, "portable-lower", lower, portable=True)
    assert summary["machine"]["portable"] and summary_lower["machine"]["portable"]
    assert digest == digest_lower  # every logit and probability, to the bit
    assert summary["agents"] == summary_lower["agents"]
    native, _ = play(tmp_path, "native-default", default, portable=False)
    native_lower, lowered = play(tmp_path, "native-lower", lower, portable=False)
    assert not lowered["machine"]["portable"]
    if not machine._numpy_dispatch()[2].get("AVX2"):
        pytest.skip("no AVX2 here: the default settings are the lower ones already")
    assert native != native_lower  # what the mode removes: the settings change the numbers


def test_portable_settings_describe_and_the_machine_line(monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert machine.portable_settings() is None and not machine.is_portable()
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    settings = machine.portable_settings()
    assert settings["MKL_CBWR"] == "COMPATIBLE" and settings["MKL_NUM_THREADS"] == "1"
    assert settings["NPY_DISABLE_CPU_FEATURES"] == machine.avx2_switch()
    monkeypatch.setattr(machine, "_STARTED_WITH", {**os.environ, **settings})
    assert machine.is_portable() and machine.describe()["portable"]
    assert machine.machine_line(machine.describe()).endswith(", portable numerics")
    monkeypatch.setattr(machine, "_STARTED_WITH", {**os.environ, **settings, "MKL_CBWR": "AVX2"})
    assert not machine.is_portable()


@x86_only
def test_a_command_starts_again_under_the_mode_once(monkeypatch, capsys):
    """The command line restarts itself with the settings (and a mark); a restart that is still
    not under them is refused rather than looped; a call from Python with its own arguments
    cannot switch and says so."""
    monkeypatch.setattr(machine, "_STARTED_WITH", {})
    started = []
    monkeypatch.setattr(os, "execve", lambda *a: started.append(a))
    monkeypatch.delenv(machine.PORTABLE_MARK, raising=False)
    monkeypatch.setattr(sys, "argv", ["zhuoji", "--agents", "random,greedy", "--portable"])
    machine.run_portably("agents.arena", sys.argv[1:])
    exe, args, env = started[0]
    assert args == [sys.executable, "-m", "agents.arena", "--agents", "random,greedy", "--portable"]
    assert all(env[k] == v for k, v in SETTINGS.items()) and env[machine.PORTABLE_MARK] == "1"
    monkeypatch.setenv(machine.PORTABLE_MARK, "1")
    with pytest.raises(RuntimeError, match="still does not run under them"):
        machine.run_portably("agents.arena", [])
    monkeypatch.delenv(machine.PORTABLE_MARK)
    monkeypatch.setattr(arena, "run_arena", lambda *a, **k: pytest.fail("no arena expected"))
    with pytest.raises(SystemExit):  # its own argv: no restart, a note, then the bad --deals
        arena.main(["--agents", "random,greedy", "--deals", "0", "--portable"])
    assert "--portable runs without the portable numeric mode here" in capsys.readouterr().err
    assert len(started) == 1


@x86_only
@pytest.mark.parametrize(
    "argv",
    [["--protocol", "zhuoji-bench-v1", "--preset", "app"],
     ["--agents", "random,greedy", "--deals", "2", "--portable"]],
)  # fmt: skip
def test_the_ladder_command_restarts_under_the_mode_for_the_protocol_or_portable(
    monkeypatch, capsys, argv
):
    """Before any game or plugin: the ladder as a command starts itself again under the mode."""

    def restart(module, args):
        raise SystemExit(f"restart {module} {args}")

    monkeypatch.setattr(machine, "_STARTED_WITH", {})
    monkeypatch.setattr(arena, "run_portably", restart)
    monkeypatch.setattr(ladder, "run_arena", lambda *a, **k: pytest.fail("played before"))
    monkeypatch.setattr(sys, "argv", ["python -m agents.ladder", *argv])
    with pytest.raises(SystemExit, match=re.escape(f"restart agents.ladder {argv}")):
        ladder.main()
    monkeypatch.setattr(sys, "argv", ["ladder", "--agents", "random,greedy", "--deals", "1"])
    with pytest.raises(SystemExit) as info:  # no mode asked for: no restart, its own error
        ladder.main()
    assert info.value.code == 2 and "--deals must be >= 2" in capsys.readouterr().err


def test_portable_is_refused_where_the_mode_does_not_exist(monkeypatch, capsys):
    """``--portable`` is a usage error on a CPU that is not x86-64; the protocol, which runs
    under the mode wherever it exists, goes on without it and says so."""
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    with pytest.raises(SystemExit) as info:
        arena.main(["--agents", "random,greedy", "--deals", "1", "--portable"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--portable: the portable numeric mode is for x86-64 CPUs, not this 'arm64'" in err
    parser = argparse.ArgumentParser()
    arena.portable_or_restart(parser, "--protocol zhuoji-bench-v1", "agents.ladder", None)
    assert capsys.readouterr().err == (
        "note: --protocol zhuoji-bench-v1 runs without the portable numeric mode: it is for "
        "x86-64 CPUs, not this 'arm64'\n"
    )
