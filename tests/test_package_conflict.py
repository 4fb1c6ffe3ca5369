"""``zhuoji_env.distribution``: an installed ``agents`` or ``training`` that holds another
distribution's files is refused with the remedy. Here on a hand-made install (a site folder
with zhuoji-env's RECORD); ``tests/test_wheel.py`` installs the real wheel beside a real
conflicting distribution, in both orders."""

from __future__ import annotations

import base64
import hashlib
from importlib import metadata
from pathlib import Path

import pytest

from zhuoji_env import distribution
from zhuoji_env.distribution import PackageConflict, check_packages, foreign_files

FILES = {
    "agents/__init__.py": "from agents.base import Agent\n",
    "agents/base.py": "class Agent: ...\n",
    "agents/policies/ppo-x.json": "{}\n",
    "training/__init__.py": "",
}


def record_line(site: Path, name: str) -> str:
    digest = hashlib.sha256((site / name).read_bytes()).digest()
    return f"{name},sha256={base64.urlsafe_b64encode(digest).rstrip(b'=').decode()},1"


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    """A site folder where a wheel of zhuoji-env installed :data:`FILES`, and the distribution
    :func:`check_packages` then finds."""
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    info = tmp_path / "zhuoji_env-1.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.4\nName: zhuoji-env\nVersion: 1.0.0\n")
    lines = [record_line(tmp_path, n) for n in FILES] + [f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(lines) + "\n")
    dist = metadata.PathDistribution(info)
    monkeypatch.setattr(distribution.metadata, "distribution", lambda name: dist)
    return tmp_path


def test_a_whole_install_is_taken(site):
    (site / "agents" / "__pycache__").mkdir()
    (site / "agents" / "__pycache__" / "base.cpython-311.pyc").write_bytes(b"compiled")
    assert foreign_files("agents") == [] and foreign_files("training") == []
    check_packages()


def test_replaced_and_added_files_are_found(site):
    (site / "agents" / "__init__.py").write_text('"""Another agents package."""\n')
    (site / "agents" / "tool.py").write_text("def function_tool(f): return f\n")
    (site / "agents" / "models").mkdir()
    (site / "agents" / "models" / "openai.py").write_text("")
    assert foreign_files("agents") == [
        "agents/__init__.py",
        "agents/models/openai.py",
        "agents/tool.py",
    ]
    assert foreign_files("training") == []


def test_the_conflict_names_the_other_distribution_and_the_remedy(site, monkeypatch):
    (site / "training" / "loop.py").write_text("")
    monkeypatch.setattr(
        distribution.metadata,
        "packages_distributions",
        lambda: {"training": ["zhuoji-env", "other-trainer"], "agents": ["zhuoji-env"]},
    )
    with pytest.raises(PackageConflict) as info:
        check_packages()
    said = str(info.value)
    assert isinstance(info.value, ImportError)
    assert said.startswith(
        f"zhuoji-env's package 'training' ({site / 'training'}) holds files of other-trainer "
        "(training/loop.py): both install a top-level package named 'training'"
    )
    assert "Install zhuoji-env in a virtual environment of its own" in said
    assert "uninstall other-trainer and then reinstall zhuoji-env" in said


def test_an_editable_install_or_a_checkout_is_not_checked(monkeypatch):
    """No RECORD with hashes of the package's files: nothing to compare, nothing refused."""

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(distribution.metadata, "distribution", missing)
    assert foreign_files("agents") == []
    check_packages()
