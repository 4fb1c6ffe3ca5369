"""The notebooks run, fast, and are committed with their outputs.

Each notebook in ``notebooks/`` is executed with nbclient in a fresh kernel (working folder
``notebooks/``, this checkout first on the import path) with its small default parameters.
``python tests/test_notebooks.py`` executes them and writes them back with their outputs (do
that after editing one, so that it reads on GitHub).
"""

import os
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TIME_LIMIT = 150.0  # seconds per notebook; about 30-60 on two idle cores
MAX_BYTES = 1_000_000


def execute(path: Path) -> tuple[nbformat.NotebookNode, float]:
    """Run a notebook in a fresh kernel; returns it with its outputs and the seconds taken."""
    book = nbformat.read(path, as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (str(ROOT), env_path) if x)
    try:
        start = time.perf_counter()
        NotebookClient(
            book,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
        return book, time.perf_counter() - start
    finally:
        os.environ["PYTHONPATH"] = env_path


def test_there_are_three_notebooks():
    assert [p.name for p in NOTEBOOKS] == [
        "01_environment_tour.ipynb",
        "02_baselines.ipynb",
        "03_policy_analysis.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_with_outputs_and_small(path):
    assert path.stat().st_size < MAX_BYTES
    book = nbformat.read(path, as_version=4)
    code = [c for c in book.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code), "run python tests/test_notebooks.py"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_runs(path):
    book, seconds = execute(path)
    errors = [
        o
        for c in book.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]
    assert not errors
    assert seconds < TIME_LIMIT, f"{path.name} took {seconds:.0f} s"


if __name__ == "__main__":
    for p in NOTEBOOKS if len(sys.argv) < 2 else [Path(a).resolve() for a in sys.argv[1:]]:
        nb, sec = execute(p)
        nbformat.write(nb, p)
        print(f"{p.name}: {sec:.0f} s, {p.stat().st_size:,} bytes")
