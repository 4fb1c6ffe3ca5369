"""The import graph of the package flows one way and has no cycle (issue 15).

Layers, each importing only from its own layer or below: tiles, rules -> hands -> engine (and
the record tools built on it) -> observation -> pictures -> envs -> agents -> training. Every
``import`` counts, including those inside functions (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("zhuoji_env", "agents", "training")

LAYERS = [
    (
        "zhuoji_env.tiles",
        "zhuoji_env.rules",
        "zhuoji_env.fileio",
        "zhuoji_env.limits",
        "zhuoji_env.machine",
        "zhuoji_env.versions",
        "zhuoji_env.distribution",
        "zhuoji_env.commands",
    ),
    ("zhuoji_env.hands",),
    (
        "zhuoji_env.engine",
        "zhuoji_env.belief",
        "zhuoji_env.record",
        "zhuoji_env.replay",
        "zhuoji_env.bench",
    ),
    ("zhuoji_env.observation",),
    ("zhuoji_env.picture", "zhuoji_env.view"),
    ("zhuoji_env.envs", "zhuoji_env"),
    ("agents",),
    ("training",),
]


def layer_of(module: str) -> int:
    """The layer of a module: the longest listed prefix decides (``zhuoji_env`` itself, the
    package's ``__init__``, re-exports the environments)."""
    best, depth = None, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and p.count(".") > depth:
                best, depth = i, p.count(".")
    assert best is not None, f"module {module} is in no layer: add it to LAYERS"
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Modules of this project that ``path`` imports (absolute and relative imports)."""
    return imports_in(path.read_text(encoding="utf-8"), module_name(path), path.name)


def imports_in(source: str, mod: str, filename: str) -> set[str]:
    package = mod if filename == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            subs = [f"{base}.{a.name}" for a in node.names]
            # ``from pkg import module`` depends on the module; ``from pkg import name`` on pkg
            names = [n for n in subs if module_exists(n)] or [base]
            if any(not module_exists(n) for n in subs):
                names.append(base)
        else:
            continue
        out |= {n for n in names if n.split(".")[0] in PACKAGES and module_exists(n)}
    return out


def module_exists(name: str) -> bool:
    p = ROOT.joinpath(*name.split("."))
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


SOURCES = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_imports_flow_down_the_layers(path):
    mod = module_name(path)
    upward = sorted(i for i in imports(path) if layer_of(i) > layer_of(mod))
    assert not upward, f"{mod} (layer {layer_of(mod)}) imports from a higher layer: {upward}"


def test_no_import_cycle_between_modules():
    graph = {module_name(p): {i for i in imports(p) if i != module_name(p)} for p in SOURCES}
    # a package's __init__ re-exports its modules; an import of a module through its package
    # is an edge to the package, which is how Python runs it
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for nxt in sorted(graph.get(m, ())):
            if nxt.startswith(m + "."):
                continue  # a package importing its own submodules
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt] if nxt in stack else [m, nxt]
                raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
            if state.get(nxt) is None:
                visit(nxt, stack + [nxt])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def test_a_planted_upward_import_is_caught():
    """The check itself can fail: lazy and relative upward imports are found."""
    planted = "def f():\n    from ..envs import aec\n    import training.learner\n"
    found = imports_in(planted, "zhuoji_env.engine.core", "core.py")
    assert found == {"zhuoji_env.envs.aec", "training.learner"}
    assert all(layer_of(m) > layer_of("zhuoji_env.engine.core") for m in found)
    assert imports_in("from agents.ppo import PPOAgent\n", "agents.arena", "arena.py") == {
        "agents.ppo"
    }
