"""The notebooks run, fast, and are committed with their outputs at their analysis sizes.

Each notebook in ``notebooks/`` has a ``# Parameters`` cell whose values are its **analysis
sizes** (what its committed outputs show), and prints the sizes it ran with in the code cell
that follows (``This run: ...``). The tests execute each notebook with nbclient in a fresh
kernel (working folder ``notebooks/``, this checkout first on the import path) at its **small**
sizes (:data:`SMALL`), set in a cell injected after the parameter cell, as papermill does; a
parameter naming a file the notebook writes is set to a file already there, as on a rerun,
which must be kept. The tests never write a notebook, and check without running them that the
committed outputs were made at the analysis sizes, on numpy's AVX2 code.

Each notebook prints the numpy SIMD target it ran on (``numpy SIMD target: ...``,
:func:`zhuoji_env.machine.numpy_simd`): games that read ``rule``'s advice replay exactly only on
the same target (docs/search.md), and the committed outputs are made on numpy's AVX2 code, which
``make notebooks`` selects on a CPU with AVX-512 too (``NPY_DISABLE_CPU_FEATURES`` set to
:func:`zhuoji_env.machine.avx2_switch`; the kernels inherit it).

``python tests/test_notebooks.py [--small] [NOTEBOOK ...]`` (``make notebooks``) executes the
notebooks (or those named: a path, a file name, or a prefix such as ``02``) at their analysis
sizes, or with ``--small`` at the test's, and writes them back with their outputs: each whole
or not at all, and only when no cell raised, so that a failed run leaves the committed notebook
as it was. A ``--small`` run keeps its injected cell (tagged ``injected-parameters``) in the
notebook, so that what it shows is plain; every run drops such a cell before it starts.
"""

import argparse
import ast
import contextlib
import io
import os
import re
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from zhuoji_env import machine
from zhuoji_env.fileio import write_text_atomic

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TIME_LIMIT = 150.0  # seconds per notebook at SMALL sizes; about 30-60 on two idle cores
MAX_BYTES = 1_000_000
INJECTED = "injected-parameters"  # the tag of an injected cell, as papermill's
SMALL = {
    "01_environment_tour.ipynb": {},  # no sizes: it always runs as committed
    "02_baselines.ipynb": {"DEALS": 6, "TRACE_DEALS": 1},  # a traced deal: 24 seatings
    "03_policy_analysis.ipynb": {"DEALS": 2},  # 6 seatings each
    "04_bring_your_own_agent.ipynb": {
        "ARENA_DEALS": 2,
        "LADDER_DEALS": 4,
        "BOOTSTRAP": 100,
        "TRACE_DEALS": 1,
    },
}
"""Per notebook, the parameters the test suite sets (the rest keep their analysis values)."""
WRITES = {"01_environment_tour.ipynb": "VIEWER_PAGE", "03_policy_analysis.ipynb": "VIEWER_PAGE"}
"""The parameter that names a file a notebook writes (by default under ``runs/``, which git ignores:
the committed outputs name a file that a run of the notebook makes, never a temporary one)."""
SIMD = "numpy SIMD target: "
"""How a notebook's output line naming the numpy SIMD target it ran on begins."""
AVX2 = ("X86_V3", "AVX2")
"""numpy's names of its AVX2 target (numpy 2.4 on, and before), as ``numpy_simd`` gives them."""


def parameter_cell(book: nbformat.NotebookNode) -> int:
    """The index of the notebook's ``# Parameters`` code cell (``ValueError`` if none)."""
    for i, c in enumerate(book.cells):
        if c.cell_type == "code" and c.source.startswith("# Parameters"):
            return i
    raise ValueError("no code cell starting with '# Parameters'")


def defaults(book: nbformat.NotebookNode) -> dict:
    """The values the parameter cell assigns (literals only; nothing is executed)."""
    values = {}
    for node in ast.parse(book.cells[parameter_cell(book)].source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            raise ValueError(f"the parameter cell may only assign literals: {ast.unparse(node)}")
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            raise ValueError(f"the parameter cell assigns to {ast.unparse(target)}")
        try:
            values[target.id] = ast.literal_eval(node.value)
        except ValueError:
            raise ValueError(
                f"the parameter cell may only assign literals: {ast.unparse(node)}"
            ) from None
    return values


def without_injected(book: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``book`` without the cells an earlier run injected."""
    book.cells = [c for c in book.cells if INJECTED not in c.metadata.get("tags", [])]
    return book


def with_parameters(book: nbformat.NotebookNode, values: dict) -> nbformat.NotebookNode:
    """``book`` with a cell setting ``values`` after its ``# Parameters`` cell (as papermill
    injects parameters), tagged ``injected-parameters``."""
    where = parameter_cell(book)
    lines = [f"{name} = {value!r}" for name, value in values.items()]
    cell = nbformat.v4.new_code_cell(  # formatted as ruff formats: no trailing newline
        "\n".join(["# Parameters injected by tests/test_notebooks.py (small sizes)", *lines]),
        metadata={"tags": [INJECTED]},
    )
    book.cells.insert(where + 1, cell)
    return book


def run_line_cell(book: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The code cell after the parameter cell (and any injected one): it prints the sizes."""
    later = book.cells[parameter_cell(book) + 1 :]
    return next(
        c for c in later if c.cell_type == "code" and INJECTED not in c.metadata.get("tags", [])
    )


def run_line(book: nbformat.NotebookNode, values: dict) -> str:
    """What the ``This run:`` cell prints with parameter ``values`` (it uses nothing else)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(run_line_cell(book).source, {"__builtins__": __builtins__, **values})
    return out.getvalue()


def simd_shown(book: nbformat.NotebookNode) -> list[str]:
    """The numpy SIMD targets a notebook's outputs say it ran on (its ``numpy SIMD target:``
    lines, in order)."""
    return [
        line.removeprefix(SIMD)
        for c in book.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "stream"
        for line in o.text.splitlines()
        if line.startswith(SIMD)
    ]


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


def execute(
    path: Path, parameters: dict | None = None, timeout: int | None = 300
) -> tuple[nbformat.NotebookNode, float]:
    """Run a notebook in a fresh kernel (with ``parameters`` set after its own; an earlier
    run's injected cell is dropped first); returns it with its outputs and the seconds taken.
    ``timeout``: seconds per cell (None: no limit)."""
    book = without_injected(nbformat.read(path, as_version=4))
    if parameters:
        book = with_parameters(book, parameters)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (str(ROOT), env_path) if x)
    try:
        start = time.perf_counter()
        NotebookClient(
            book,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
        return book, time.perf_counter() - start
    finally:
        os.environ["PYTHONPATH"] = env_path


def test_there_are_four_notebooks_each_with_small_sizes():
    assert [p.name for p in NOTEBOOKS] == [
        "01_environment_tour.ipynb",
        "02_baselines.ipynb",
        "03_policy_analysis.ipynb",
        "04_bring_your_own_agent.ipynb",
    ]
    assert sorted(SMALL) == [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_parameter_cell_holds_the_analysis_sizes(path):
    book = nbformat.read(path, as_version=4)
    values = defaults(book)  # raises without a '# Parameters' cell of literals
    names = set(SMALL[path.name]) | ({WRITES[path.name]} if path.name in WRITES else set())
    assert names <= set(values), f"not parameters of {path.name}: {names - set(values)}"
    for name, small in SMALL[path.name].items():  # the small sizes are smaller
        assert isinstance(small, int) and small < values[name], name
    assert run_line_cell(book).source.lstrip().startswith("print(")
    line = run_line(book, values)
    assert line.startswith("This run: ") and line.count("\n") == 1, line
    if SMALL[path.name]:  # derived from the parameters: a small run says so
        assert run_line(book, {**values, **SMALL[path.name]}) != line


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_with_outputs_and_small(path):
    assert path.stat().st_size < MAX_BYTES
    book = nbformat.read(path, as_version=4)
    code = [c for c in book.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code), "run python tests/test_notebooks.py"
    assert not errors_of(book)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_at_analysis_sizes(path):
    """The committed outputs were made with the parameter cell's values (``make notebooks``),
    not the test's small ones: the ``This run:`` line shows them."""
    book = nbformat.read(path, as_version=4)
    injected = [c for c in book.cells if INJECTED in c.metadata.get("tags", [])]
    shown = "".join(o.get("text", "") for o in run_line_cell(book).outputs)
    assert not injected and shown == run_line(book, defaults(book)), (
        f"{path.name} shows {shown.strip()!r}: run make notebooks"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_on_numpy_s_avx2_code(path):
    """The committed outputs say they were made on numpy's AVX2 code, on which the published
    arenas and ladders replay (``make notebooks`` runs it where the CPU has AVX-512 too)."""
    shown = simd_shown(nbformat.read(path, as_version=4))
    assert len(shown) == 1 and shown[0] in AVX2, (
        f"{path.name} was run on numpy SIMD target {shown}: run make notebooks"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_runs(path, tmp_path):
    earlier = tmp_path / "page.html"
    earlier.write_text("an earlier run's page")
    parameters = {WRITES[path.name]: str(earlier)} if path.name in WRITES else {}
    parameters |= SMALL[path.name]
    committed = path.read_bytes()
    book, seconds = execute(path, parameters)
    assert not errors_of(book)
    assert seconds < TIME_LIMIT, f"{path.name} took {seconds:.0f} s"
    assert path.read_bytes() == committed
    shown = "".join(o.get("text", "") for o in run_line_cell(book).outputs)
    assert shown == run_line(book, {**defaults(book), **parameters})  # it says what it ran
    assert simd_shown(book) == [str(machine.numpy_simd())]  # and on which numpy code
    if path.name in WRITES:  # a rerun keeps the file it wrote before, and writes beside it
        assert earlier.read_text() == "an earlier run's page"
        assert (tmp_path / "page-2.html").read_bytes().startswith(b"<!DOCTYPE html>")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_outputs_name_no_temporary_file(path):
    """What a committed notebook shows stays true for its reader: no output names a file in a
    temporary folder, which was gone when the notebook was committed."""
    book = nbformat.read(path, as_version=4)
    temporary = re.compile(r"(/tmp/|/var/folders/|\\Temp\\|ipykernel_|pytest-of-)")
    shown = [
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in book.cells
        if c.cell_type == "code"
        for o in c.outputs
    ]
    assert [t for t in shown if temporary.search(t)] == []


def test_bring_your_own_agent_registers_whatever_class_replaces_the_example():
    """Notebook 04 says replacing the agent class is all a user changes: with the example's cell
    replaced by another class, under another name and spec, the notebook up to its arena
    registers that class and makes it by its spec (no cell names the example's class)."""
    path = ROOT / "notebooks" / "04_bring_your_own_agent.ipynb"
    book = without_injected(nbformat.read(path, as_version=4))
    agent = next(i for i, c in enumerate(book.cells) if "class KongGreedy" in c.source)
    register = next(
        i
        for i, c in enumerate(book.cells)
        if c.cell_type == "code" and "register_agent(" in c.source
    )
    book.cells[agent].source = (
        "from agents.simple import RandomAgent\n\n\n"
        "class PassFirst(RandomAgent):\n"
        '    name = "pass-first"\n\n\n'
        "AGENT_CLASS = PassFirst\n"
    )
    check = nbformat.v4.new_code_cell(
        'assert MINE == "pass-first" and FIELD[-1] == MINE\n'
        "assert type(make_agent(MINE, seed=0)) is PassFirst"
    )
    book.cells = [*book.cells[: register + 1], check]
    assert not [c for c in book.cells if "KongGreedy" in c.source and c.cell_type == "code"]
    probe = ROOT / "notebooks" / ".probe-04.ipynb"
    try:
        nbformat.write(book, probe)
        ran, _ = execute(probe, SMALL[path.name])
    finally:
        probe.unlink(missing_ok=True)
    assert errors_of(ran) == []


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


def test_injected_parameters_and_the_run_line(tmp_path):
    """A small write-back keeps its tagged injected cell; the next run drops it before its own
    (analysis sizes: none), so sizes never stack; the run line is read from the cell after."""
    book = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("# Parameters\nDEALS = 100"),
            nbformat.v4.new_code_cell('print(f"This run: {DEALS} deals")'),
        ]
    )
    assert defaults(book) == {"DEALS": 100}
    small = with_parameters(book, {"DEALS": 2})
    assert [c.source.splitlines()[-1] for c in small.cells] == [
        "DEALS = 100",
        "DEALS = 2",
        'print(f"This run: {DEALS} deals")',
    ]
    assert run_line(small, {"DEALS": 2}) == "This run: 2 deals\n"
    path = tmp_path / "book.ipynb"
    write_back(small, path)
    again = without_injected(nbformat.read(path, as_version=4))
    assert [c.source for c in again.cells] == [
        c.source for c in small.cells if c is not small.cells[1]
    ]
    bad = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("# Parameters\nN = len([])")])
    with pytest.raises(ValueError, match="literal"):
        defaults(bad)


def chosen(names: list[str]) -> list[Path]:
    """The notebooks named on the command line: paths, file names or prefixes (``02``)."""
    if not names:
        return NOTEBOOKS
    out = []
    for name in names:
        hits = [p for p in NOTEBOOKS if p.name.startswith(Path(name).name)]
        if len(hits) != 1:
            raise SystemExit(
                f"{name!r} names {len(hits)} notebooks of {[p.name for p in NOTEBOOKS]}"
            )
        out += hits
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tests/test_notebooks.py",
        description="Execute the notebooks at their analysis sizes (the values of their "
        "parameter cells) and write them back with their outputs.",
    )
    parser.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="e.g. 02 (default all)")
    parser.add_argument(
        "--small", action="store_true", help="the test suite's small sizes instead (SMALL)"
    )
    args = parser.parse_args(argv)
    if not args.small and machine.is_avx512(machine.numpy_simd()):
        print(
            f"numpy runs its {machine.numpy_simd()} (AVX-512) code here: the committed outputs are "
            "made on its AVX2 code, which `make notebooks` selects (NPY_DISABLE_CPU_FEATURES)",
            file=sys.stderr,
        )
    failed = []
    for p in chosen(args.notebooks):
        values = SMALL[p.name] if args.small else {}
        nb, sec = execute(p, values, timeout=300 if args.small else None)
        try:
            write_back(nb, p)
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            failed.append(p.name)
            continue
        sizes = "small" if args.small else "analysis"
        simd = ", ".join(simd_shown(nb)) or "not shown"
        print(f"{p.name}: {sizes} sizes, {sec:.0f} s, {p.stat().st_size:,} bytes, numpy {simd}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
