"""The notebooks run, fast, and are committed with their outputs.

Each notebook in ``notebooks/`` is executed with nbclient in a fresh kernel (working folder
``notebooks/``, this checkout first on the import path) with its small default parameters; a
parameter naming a file the notebook writes is set to a file already there, as on a rerun,
which must be kept. The tests never write a notebook. ``python tests/test_notebooks.py``
executes them and writes them back with their outputs (do that after editing one, so that it
reads on GitHub): each whole or not at all, and only when no cell raised, so that a failed run
leaves the committed notebook as it was.
"""

import os
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from zhuoji_env.fileio import write_text_atomic

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TIME_LIMIT = 150.0  # seconds per notebook; about 30-60 on two idle cores
MAX_BYTES = 1_000_000
WRITES = {"03_policy_analysis.ipynb": "VIEWER_PAGE"}
"""The parameter that names a file a notebook writes (None by default: a temporary folder)."""


def with_parameters(book: nbformat.NotebookNode, values: dict) -> nbformat.NotebookNode:
    """``book`` with a cell setting ``values`` after its ``# Parameters`` cell (as papermill
    injects parameters)."""
    where = next(i for i, c in enumerate(book.cells) if c.source.startswith("# Parameters"))
    lines = "".join(f"{name} = {value!r}\n" for name, value in values.items())
    book.cells.insert(where + 1, nbformat.v4.new_code_cell(lines))
    return book


def errors_of(book: nbformat.NotebookNode) -> list:
    """The error outputs of a notebook's code cells."""
    return [
        o
        for c in book.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]


def write_back(book: nbformat.NotebookNode, path: Path) -> None:
    """Write an executed notebook over ``path`` whole or not at all; one in which a cell raised
    is refused (``RuntimeError``), and the committed notebook stays as it was."""
    errors = errors_of(book)
    if errors:
        raise RuntimeError(
            f"{path.name}: a cell raised {errors[0].ename}: {errors[0].evalue}; not written back"
        )
    text = nbformat.writes(book)
    write_text_atomic(path, text if text.endswith("\n") else text + "\n")


def execute(path: Path, parameters: dict | None = None) -> tuple[nbformat.NotebookNode, float]:
    """Run a notebook in a fresh kernel (with ``parameters`` set after its own); returns it
    with its outputs and the seconds taken."""
    book = nbformat.read(path, as_version=4)
    if parameters:
        book = with_parameters(book, parameters)
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
    assert not errors_of(book)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_runs(path, tmp_path):
    earlier = tmp_path / "page.html"
    earlier.write_text("an earlier run's page")
    parameters = {WRITES[path.name]: str(earlier)} if path.name in WRITES else {}
    committed = path.read_bytes()
    book, seconds = execute(path, parameters)
    assert not errors_of(book)
    assert seconds < TIME_LIMIT, f"{path.name} took {seconds:.0f} s"
    assert path.read_bytes() == committed
    if parameters:  # a rerun keeps the file it wrote before, and writes beside it
        assert earlier.read_text() == "an earlier run's page"
        assert (tmp_path / "page-2.html").read_bytes().startswith(b"<!DOCTYPE html>")


def test_write_back_is_whole_and_refuses_a_failed_run(tmp_path):
    path = tmp_path / "book.ipynb"
    good = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    write_back(good, path)
    committed = path.read_bytes()
    assert nbformat.read(path, as_version=4).cells[0].source == "1 + 1"
    failed = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    failed.cells[0].outputs = [
        nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero")
    ]
    with pytest.raises(RuntimeError, match="ZeroDivisionError: division by zero; not written"):
        write_back(failed, path)
    assert path.read_bytes() == committed
    assert [p.name for p in tmp_path.iterdir()] == ["book.ipynb"]  # no temporary left


if __name__ == "__main__":
    failed = []
    for p in NOTEBOOKS if len(sys.argv) < 2 else [Path(a).resolve() for a in sys.argv[1:]]:
        nb, sec = execute(p)
        try:
            write_back(nb, p)
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            failed.append(p.name)
            continue
        print(f"{p.name}: {sec:.0f} s, {p.stat().st_size:,} bytes")
    sys.exit(1 if failed else 0)
