"""The console commands: pyproject's ``[project.scripts]`` installs each command of
``zhuoji_env.commands.COMMANDS`` as its module's ``main``, and each installed one runs."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from test_citation import pyproject

from zhuoji_env.commands import COMMANDS, prog

BIN = Path(sys.executable).parent


def test_pyproject_installs_every_command_as_its_modules_main():
    assert pyproject()["project"]["scripts"] == {c: f"{m}:main" for c, m in COMMANDS.items()}
    for module in COMMANDS.values():
        assert callable(importlib.import_module(module).main), module
    assert {"zhuoji-arena", "zhuoji-ladder", "zhuoji-train", "zhuoji-play", "zhuoji-view"} <= set(
        COMMANDS
    )


def test_the_usage_names_the_command_as_it_was_run(monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(BIN / "zhuoji-arena")])
    assert prog("agents.arena") == "zhuoji-arena"
    assert prog("agents.ladder") == "python -m agents.ladder"  # another command's module
    monkeypatch.setattr(sys, "argv", ["/somewhere/agents/arena.py"])
    assert prog("agents.arena") == "python -m agents.arena"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_installed_command_runs_its_help(command):
    path = BIN / command
    assert path.is_file(), (
        f"{command} is not installed beside {sys.executable}: reinstall the package "
        "(make venv, or pip install -e .) to put pyproject's [project.scripts] on the PATH"
    )
    run = subprocess.run(
        [str(path), "--help"], capture_output=True, text=True, timeout=180, cwd=BIN.parent
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"usage: {command} "), run.stdout[:200]
