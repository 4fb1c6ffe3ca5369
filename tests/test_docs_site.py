"""The documentation site's sources (docs/conf.py; ``make docs`` builds them, every Sphinx warning
an error, and CI runs it) cover the project, and the docs speak to readers:

- every module of ``zhuoji_env``, ``agents`` and ``training`` is on its package's API page
  (Sphinx itself does not notice a module left out);
- every page of docs/ is in the site's table of contents, but for the generated ladder tables
  that the site leaves out;
- no page, README.md or agents/README.md included, refers to the work that produced it (an
  issue, a session, a stop), which means nothing to a reader.
"""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGES = ("zhuoji_env", "agents", "training")
READER_DOCS = [ROOT / "README.md", ROOT / "agents" / "README.md", *sorted(DOCS.glob("*.md"))]
WORK_HISTORY = re.compile(
    r"\bissues?\b|(?<!interactive )(?<!python )\bsessions?\b|\b(?:last|next) stop\b", re.I
)


def modules(package: str) -> list[str]:
    """The package and every module below it, found on disk (none is imported)."""
    path = [str(ROOT / package)]
    return [package, *sorted(m.name for m in pkgutil.walk_packages(path, package + "."))]


def documented_modules(page: str) -> list[str]:
    """The modules an API page documents (the ``automodule`` directives of its ``{eval-rst}``
    blocks: autodoc writes reStructuredText, which MyST's own directive syntax would read as
    markdown)."""
    return re.findall(
        r"^```\{eval-rst\}\n\.\. automodule:: (\S+)\n(?:   :[\w-]+:.*\n)*```$", page, re.M
    )


def toctree_pages(index: str) -> list[str]:
    """The page names of the ``{toctree}`` directives of the site's index."""
    names = []
    for block in re.findall(r"^```\{toctree\}\n(.*?)^```", index, re.M | re.S):
        names += [line.strip() for line in block.split("\n") if line.strip() and ":" not in line]
    return names


def work_history(text: str) -> list[str]:
    """Each line of ``text`` (numbered from 1) that refers to an issue, a session or a stop (a
    Python or interactive session is no work history)."""
    return [
        f"{n}: {line.strip()}"
        for n, line in enumerate(text.split("\n"), 1)
        if WORK_HISTORY.search(line)
    ]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_is_on_its_api_page(package):
    page = (DOCS / "api" / f"{package}.md").read_text(encoding="utf-8")
    assert documented_modules(page) == modules(package)


def test_every_page_is_in_the_table_of_contents():
    listed = toctree_pages((DOCS / "index.md").read_text(encoding="utf-8"))
    pages = [p.relative_to(DOCS).with_suffix("").as_posix() for p in DOCS.rglob("*.md")]
    wanted = [p for p in pages if p != "index" and not p.startswith(("ladder-", "_build/"))]
    assert sorted(listed) == sorted(wanted)


@pytest.mark.parametrize("doc", READER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_do_not_refer_to_the_work_that_made_them(doc):
    assert work_history(doc.read_text(encoding="utf-8")) == []


def test_the_checkers_find_planted_faults():
    assert work_history("as measured for issue 31\nfine\nthis session's CPU\nat the next stop") == [
        "1: as measured for issue 31",
        "3: this session's CPU",
        "4: at the next stop",
    ]
    assert work_history("the ladder issue may replace it") == ["1: the ladder issue may replace it"]
    assert work_history("in an interactive session (a notebook) or a Python session") == []
    page = (
        "# x\n\n```{eval-rst}\n.. automodule:: zhuoji_env\n```\n\n"
        "```{eval-rst}\n.. automodule:: zhuoji_env.tiles\n   :no-members:\n```\n\n"
        "```{automodule} zhuoji_env.hands\n```\n"
    )
    assert documented_modules(page) == ["zhuoji_env", "zhuoji_env.tiles"]
    assert documented_modules(page) != modules("zhuoji_env")
    index = "```{toctree}\n:hidden:\n\nenvironment\napi/agents\n```\n"
    assert toctree_pages(index) == ["environment", "api/agents"]
