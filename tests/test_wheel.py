"""The wheel stands alone: ``python -m build`` makes a wheel and an sdist, the wheel installs
into a fresh virtual environment outside the checkout, and there the environments, a shipped
policy in the arena, the records tools and the viewer run from it, by their installed
commands. A distribution that installs its own top-level ``agents`` (as OpenAI's Agents SDK
does) beside it is refused with the remedy, in either order of install. ``CITATION.cff`` is
validated against the CFF 1.2.0 schema by ``cffconvert`` in an environment of its own.

Marked ``wheel`` (``make test-wheel``; ``make test`` leaves it out): a few minutes, and the
citation check installs ``cffconvert`` from the package index. The fresh environment installs
the wheel without its dependencies and reads them (numpy, torch, ...) from this environment's
site-packages through a ``.pth`` file: nothing of the checkout is on its path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
from test_env_fingerprint import project_version

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[1]
VERSION = project_version()
STAMP = {"zhuoji_env": VERSION, "environment": "zhuoji_v1"}
TABLES = "zhuoji_env/data/hand_tables_v4.npz"


def run(args, cwd: Path, ok: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run a command as a user would, with nothing of the checkout on its path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.pop("ZHUOJI_FASTPATH_SHADOW", None)  # the test suite's own mode
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    if ok:
        assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The wheel and sdist of this checkout's files, by ``python -m build``, from a copy of the
    files git tracks (as they are in the work tree) and the hand tables, built first so that
    the wheel ships them rather than each install building them. A copy, as a release is built
    from a clean clone: setuptools also packs what an earlier build's ``*.egg-info`` listed."""
    import zhuoji_env.hands  # noqa: F401 (builds zhuoji_env/data's tables where missing)

    assert (ROOT / TABLES).is_file(), f"{TABLES} is missing: the checkout's package is read-only"
    src = tmp_path_factory.mktemp("src")
    for name in [
        *run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT
        ).stdout.splitlines(),
        TABLES,
    ]:
        if (ROOT / name).is_file():  # a tracked file deleted in the work tree is not copied
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out, src], cwd=out)
    return out


def wheel_of(dist: Path) -> Path:
    return dist / f"zhuoji_env-{VERSION}-py3-none-any.whl"


def fresh_venv(where: Path, inherit: bool = True) -> Path:
    """A new virtual environment (its python); with ``inherit``, this environment's
    site-packages appended to its path by a ``.pth`` file, for the wheel's dependencies."""
    run([sys.executable, "-m", "venv", where], cwd=where.parent)
    python = where / "bin" / "python"
    if inherit:
        site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   cwd=where).stdout.strip()  # fmt: skip
        ours = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
        Path(site, "zz_inherit.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python


def pip_install(python: Path, *args) -> None:
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", *args], cwd=python.parent)


def test_the_wheel_and_sdist_hold_the_package_its_data_and_license(dist):
    names = set(zipfile.ZipFile(wheel_of(dist)).namelist())
    tracked = run(["git", "ls-files", "zhuoji_env", "agents", "training"], cwd=ROOT).stdout
    code_and_data = {n for n in tracked.split() if not n.endswith(".md")}  # READMEs stay behind
    missing = sorted(code_and_data - names)
    assert not missing, f"files of the package not in the wheel (package data?): {missing}"
    assert TABLES in names
    assert {f"agents/policies/{n}.{x}" for n in ("ppo-guiyang", "ppo-app", "ppo-classic",
            "ppo-scratch") for x in ("pt", "json")} <= names  # fmt: skip
    info = f"zhuoji_env-{VERSION}.dist-info"
    assert f"{info}/licenses/LICENSE" in names
    assert not [n for n in names if n.startswith(("tests/", "notebooks/", "docs/"))]
    with zipfile.ZipFile(wheel_of(dist)) as whl:
        meta = whl.read(f"{info}/METADATA").decode()
        scripts = whl.read(f"{info}/entry_points.txt").decode()
        top = whl.read(f"{info}/top_level.txt").decode().split()
    assert f"Version: {VERSION}\n" in meta and "License-Expression: MIT\n" in meta
    assert "zhuoji-arena = agents.arena:main" in scripts
    assert sorted(top) == ["agents", "training", "zhuoji_env"]
    with tarfile.open(dist / f"zhuoji_env-{VERSION}.tar.gz") as sdist:
        held = {n.partition("/")[2] for n in sdist.getnames()}
    assert {"LICENSE", "CITATION.cff", "CHANGELOG.md", "docs/RULES.md", TABLES} <= held


def test_the_wheel_installed_alone_runs_the_environments_the_arena_and_the_viewer(dist, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, wheel_of(dist))
    bin_ = python.parent
    smoke = tmp_path / "smoke.py"
    smoke.write_text(
        textwrap.dedent(f"""
        import sys, warnings
        from pathlib import Path
        import gymnasium
        from pettingzoo.test import api_test
        import agents, training, zhuoji_env
        from zhuoji_env import zhuoji_v1
        for module in (zhuoji_env, agents, training):  # the wheel's, not a checkout's
            assert Path(module.__file__).is_relative_to(sys.prefix), module.__file__
        assert zhuoji_env.__version__ == {VERSION!r}, zhuoji_env.__version__
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            api_test(zhuoji_v1.env(), num_cycles=50)
        for env_id in zhuoji_env.versions.GYMNASIUM_IDS:
            env = gymnasium.make(env_id, num_players=3)
            obs, info = env.reset(seed=0)
            env.step(int(info["action_mask"].nonzero()[0][0]))
        print("ok", sorted(zhuoji_env.versions.GYMNASIUM_IDS))
    """)
    )
    said = run([python, smoke], cwd=tmp_path).stdout
    assert "Passed API test" in said
    assert said.splitlines()[-1] == (
        "ok ['zhuoji_env/App-v1', 'zhuoji_env/Classic-v1', 'zhuoji_env/Guiyang-v1']"
    )
    run([bin_ / "zhuoji-arena", "--agents", "ppo-guiyang,rule", "--deals", "2", "--seed", "1",
         "--no-progress", "--json", "arena.json"], cwd=tmp_path)  # fmt: skip
    arena = json.loads((tmp_path / "arena.json").read_text())
    assert arena["versions"] == STAMP and arena["machine"]["code"] is None  # no checkout
    assert set(arena["agents"]) == {"ppo-guiyang", "rule"}
    run([bin_ / "zhuoji-record", "--preset", "app", "--seed", "3", "--n", "1", "--out", "recs"],
        cwd=tmp_path)  # fmt: skip
    (record,) = (tmp_path / "recs").glob("*.json")
    assert json.loads(record.read_text())["versions"] == STAMP
    run([bin_ / "zhuoji-replay", record], cwd=tmp_path)
    run([bin_ / "zhuoji-view", record, "--out", "hand.html"], cwd=tmp_path)
    assert "<html" in (tmp_path / "hand.html").read_text(encoding="utf-8").lower()


FAKE_PYPROJECT = """
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "fake-agents-sdk"
version = "0.1.0"

[tool.setuptools]
packages = ["agents"]
"""


@pytest.fixture(scope="module")
def fake_wheel(tmp_path_factory) -> Path:
    """A distribution of its own top-level ``agents`` package, as OpenAI's Agents SDK has."""
    src = tmp_path_factory.mktemp("fake")
    (src / "pyproject.toml").write_text(FAKE_PYPROJECT)
    (src / "agents").mkdir()
    (src / "agents" / "__init__.py").write_text('"""Another agents."""\n\nclass Agent:\n    pass\n')
    (src / "agents" / "tool.py").write_text("def function_tool(f):\n    return f\n")
    out = src / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", out, src], cwd=src)  # fmt: skip
    (wheel,) = out.glob("fake_agents_sdk-*.whl")
    return wheel


def test_a_distribution_with_its_own_agents_package_is_refused_with_the_remedy(
    dist, fake_wheel, tmp_path
):
    python = fresh_venv(tmp_path / "venv")
    bin_ = python.parent
    pip_install(python, wheel_of(dist))
    pip_install(python, fake_wheel)  # installed second: its agents/__init__.py replaced ours
    for command in ([bin_ / "zhuoji-arena", "--help"], [python, "-m", "agents.ladder", "--help"]):
        done = run(command, cwd=tmp_path, ok=False)
        assert done.returncode != 0 and "PackageConflict" in done.stderr
        assert "holds files of fake-agents-sdk (agents/__init__.py, agents/tool.py)" in done.stderr
        assert "Install zhuoji-env in a virtual environment of its own" in done.stderr
    theirs = run([python, "-c", "from agents import make_agent"], cwd=tmp_path, ok=False)
    assert "cannot import name 'make_agent'" in theirs.stderr  # their agents, as documented
    run([python, "-c", "import zhuoji_env; zhuoji_env.env().reset(seed=0)"], cwd=tmp_path)
    # the remedy the message gives: uninstall the other, reinstall zhuoji-env
    run([python, "-m", "pip", "uninstall", "-y", "-q", "fake-agents-sdk"], cwd=tmp_path)
    pip_install(python, "--force-reinstall", wheel_of(dist))
    assert run([bin_ / "zhuoji-arena", "--help"], cwd=tmp_path).stdout.startswith("usage: zhuoji")
    # the other order: ours installed second over theirs keeps their other modules beside ours
    pip_install(python, fake_wheel)
    pip_install(python, "--force-reinstall", wheel_of(dist))
    done = run([python, "-c", "from agents import make_agent"], cwd=tmp_path, ok=False)
    assert "PackageConflict" in done.stderr
    assert "holds files of fake-agents-sdk (agents/tool.py)" in done.stderr


def test_citation_cff_is_valid_cff_1_2_0_by_cffconvert(tmp_path):
    python = fresh_venv(tmp_path / "venv", inherit=False)
    run([python, "-m", "pip", "install", "-q", "cffconvert==2.0.0"], cwd=tmp_path)
    cffconvert = python.parent / "cffconvert"
    said = run([cffconvert, "--validate", "-i", ROOT / "CITATION.cff"], cwd=tmp_path).stdout
    assert "valid according to schema version 1.2.0" in said
    broken = tmp_path / "CITATION.cff"
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    broken.write_text(text.replace('date-released: "', 'date-released: "on '), encoding="utf-8")
    assert run([cffconvert, "--validate", "-i", broken], cwd=tmp_path, ok=False).returncode != 0
