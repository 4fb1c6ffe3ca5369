"""The documentation holds: README.md and docs/*.md link to what exists, and their code runs.

- Every relative link and image of README.md and docs/*.md names a file of this checkout, and
  every ``#anchor`` matches a heading of its target by GitHub's slug rules (http(s) links are
  not followed).
- Every ```python block runs: each file's blocks in order, in one namespace, in a fresh
  interpreter whose working folder is the repository root. A block that must not run in the
  suite (it trains for an hour, it needs Ray, ...) carries ``<!-- skip-test: REASON -->`` on
  the line just before its fence; a marker without a reason, or not followed by a python
  block, fails. The skipped blocks are reported as one skipped test with their reasons.
- Shell blocks (sh, bash, console, shell, or no language) are not run, but every
  ``python -m MODULE`` in them (and in inline code) names a module that exists, every
  ``python FILE.py`` a file, and every ``make TARGET`` a target of the Makefile.

The checkers work on strings, so the planted-error tests at the end show that they can fail.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SNIPPET_TIMEOUT = 240  # seconds per file; about 20 for README.md on two busy cores
SHELL_LANGS = {"", "sh", "bash", "console", "shell", "shell-session"}
PYTHON_LANGS = {"python", "py", "python3"}
SKIP_MARK = re.compile(r"^\s*<!--\s*skip-test\b:?(.*?)-->\s*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")


# --------------------------------------------------------------------------- parsing
@dataclass
class Block:
    """A fenced code block: its language, first code line (1-based), code, and the line just
    before its opening fence."""

    lang: str
    line: int
    code: str
    before: str


def split_fences(text: str) -> tuple[list[Block], str]:
    """The fenced blocks of a markdown text, and the text with each block's lines blanked (so
    that line numbers and everything outside the blocks stay as they were)."""
    lines = text.split("\n")
    blocks, outside = [], []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            outside.append(lines[i])
            i += 1
            continue
        mark, lang = m.group(1), m.group(2).lower()
        start, body = i, []
        i += 1
        while i < len(lines) and not re.match(
            rf"^ {{0,3}}{re.escape(mark[0])}{{{len(mark)},}}\s*$", lines[i]
        ):
            body.append(lines[i])
            i += 1
        before = lines[start - 1] if start > 0 else ""
        blocks.append(Block(lang, start + 2, "\n".join(body) + "\n", before))
        outside.extend([""] * (min(i, len(lines) - 1) - start + 1))
        i += 1
    return blocks, "\n".join(outside)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: markdown links reduced to their text, lowercased, every
    character but letters, digits, ``_``, ``-`` and spaces dropped, spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a markdown text's headings, repeated ones numbered -1, -2, ... as GitHub
    does (fenced code is not headings)."""
    _, outside = split_fences(text)
    seen: dict[str, int] = {}
    found = set()
    for line in outside.split("\n"):
        m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")


def links(text: str) -> list[tuple[int, str]]:
    """(line, target) of every inline link and image outside code and HTML comments."""
    _, outside = split_fences(text)
    keep_lines = lambda m: "\n" * m.group().count("\n")  # noqa: E731
    outside = re.sub(r"<!--.*?-->", keep_lines, outside, flags=re.S)
    # inline code is not a link, but a link's text may be code: keep a placeholder
    outside = re.sub(r"`[^`]*`", lambda m: "code" + keep_lines(m), outside)
    return [(outside.count("\n", 0, m.start()) + 1, m.group(1)) for m in LINK.finditer(outside)]


def link_problems(text: str, source: Path, root: Path = ROOT, check_anchors: bool = True) -> list:
    """What is broken in the links of ``text`` (the contents of file ``source``): a relative
    target that does not exist in the checkout, or an anchor that no heading of the target
    has. http(s) and mailto links are skipped."""
    problems = []
    source = source.resolve()
    for line, target in links(text):
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # a URL (http, https, mailto, ...): not followed
        path, _, anchor = target.partition("#")
        file = (source.parent / unquote(path)).resolve() if path else source
        where = f"{source.name}:{line}: {target}"
        if root.resolve() not in (file, *file.parents):
            problems.append(f"{where}: outside the checkout")
            continue
        if file != source and not file.exists():
            problems.append(f"{where}: no file {file.relative_to(root.resolve())}")
            continue
        if anchor and check_anchors:
            if file.suffix != ".md":
                problems.append(f"{where}: an anchor into a file that is not markdown")
                continue
            heads = anchors(text if file == source else file.read_text(encoding="utf-8"))
            if unquote(anchor) not in heads:
                problems.append(f"{where}: no heading with anchor #{anchor}")
    return problems


def python_blocks(text: str) -> tuple[list[Block], list[tuple[Block, str]], list[str]]:
    """The python blocks to run, the skipped ones with their reasons, and the problems of the
    skip markers (a marker without a reason, or one not right before a python block)."""
    blocks, _ = split_fences(text)
    run, skipped, problems = [], [], []
    marked_lines = set()
    for b in blocks:
        m = SKIP_MARK.match(b.before)
        if m:
            marked_lines.add(b.line - 2)  # the marker's line (1-based)
        if b.lang not in PYTHON_LANGS:
            if m:
                problems.append(f"line {b.line - 2}: a skip-test marker before a {b.lang!r} block")
            continue
        if not m:
            run.append(b)
        elif not m.group(1).strip():
            problems.append(f"line {b.line - 2}: a skip-test marker needs a reason")
        else:
            skipped.append((b, m.group(1).strip()))
    for i, line in enumerate(text.split("\n"), 1):
        if SKIP_MARK.match(line) and i not in marked_lines:
            problems.append(f"line {i}: a skip-test marker not on the line before a fence")
    return run, skipped, problems


def makefile_targets(makefile: Path = ROOT / "Makefile") -> set[str]:
    """The explicit targets of a Makefile (rules and .PHONY names; not variables)."""
    targets = set()
    for line in makefile.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.$()/ -]+?)\s*::?(?!=)", line)
        if m and not line.startswith("\t"):
            targets.update(t for t in m.group(1).split() if "$" not in t)
        if line.startswith(".PHONY:"):
            targets.update(line.split(":", 1)[1].split())
    return targets


def commands(code: str) -> list[str]:
    """The command lines of a shell block: prompts and comments dropped, continuation lines
    joined."""
    out, current = [], ""
    for raw in code.split("\n"):
        line = re.sub(r"^\s*[$>]\s+", "", raw)
        line = re.sub(r"(^|\s)#.*$", "", line).rstrip()
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip():
            out.append(current.strip())
        current = ""
    if current.strip():
        out.append(current.strip())
    return out


def command_problems(line: str, targets: set[str], root: Path = ROOT) -> list[str]:
    """What a shell command line names that does not exist: a ``python -m`` module, a
    ``python FILE.py`` script or a ``make`` target."""
    problems = []
    for part in re.split(r"&&|\|\||;|\|", line):
        words = part.split()
        for i, word in enumerate(words):
            name = word.rsplit("/", 1)[-1]
            if re.fullmatch(r"python(3(\.\d+)?)?", name) and i + 1 < len(words):
                rest = [w for w in words[i + 1 :] if w not in ("-u", "-X", "-O", "-B")]
                if len(rest) >= 2 and rest[0] == "-m":
                    module = rest[1]
                    try:
                        found = importlib.util.find_spec(module) is not None
                    except (ImportError, ValueError):
                        found = False
                    if not found:
                        problems.append(f"python -m {module}: no such module")
                elif rest and rest[0].endswith(".py") and not (root / rest[0]).is_file():
                    problems.append(f"python {rest[0]}: no such file")
            if name == "make" and (i == 0 or words[i - 1] in ("sudo", "env")):
                for arg in words[i + 1 :]:
                    if "=" in arg or arg.startswith("-"):
                        continue
                    if not re.fullmatch(r"[A-Za-z0-9_.-]+", arg):
                        break  # [--long], a placeholder, ...: the end of the targets
                    if arg not in targets:
                        problems.append(f"make {arg}: no such target in the Makefile")
    return problems


def shell_problems(text: str, targets: set[str], root: Path = ROOT) -> list[str]:
    """The problems of every command of a markdown text's shell blocks and of its inline code
    that is a ``python -m`` or ``make`` command."""
    blocks, outside = split_fences(text)
    problems = []
    for b in blocks:
        if b.lang in SHELL_LANGS:
            for line in commands(b.code):
                problems += [f"line {b.line}: {p}" for p in command_problems(line, targets, root)]
    for m in re.finditer(r"`([^`]+)`", outside):
        code = " ".join(m.group(1).split())
        if re.match(r"^(make|python3?|\S*/python3?)\s", code):
            line = outside.count("\n", 0, m.start()) + 1
            problems += [f"line {line}: {p}" for p in command_problems(code, targets, root)]
    return problems


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --------------------------------------------------------------------------- the docs
def test_docs_found():
    names = {p.name for p in DOCS}
    assert {"README.md", "RULES.md", "search.md", "results.md", "training.md"} <= names


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_links_resolve(doc):
    # docs/RULES.md (a copy of the project's shared RULES.md, not edited here) holds no links
    # today; it is checked like every other file, anchors included.
    assert link_problems(doc.read_text(encoding="utf-8"), doc) == []


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_shell_commands_exist(doc):
    assert shell_problems(doc.read_text(encoding="utf-8"), makefile_targets()) == []


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_skip_markers_have_reasons(doc):
    assert python_blocks(doc.read_text(encoding="utf-8"))[2] == []


RUNNER = """
import sys, traceback
namespace = {"__name__": "__main__"}
for where, code in BLOCKS:
    try:
        exec(compile(code, where, "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        print(f"FAILED: the python block at {where}", file=sys.stderr)
        sys.exit(1)
"""


def run_blocks(blocks: list[tuple[str, str]], timeout: float = SNIPPET_TIMEOUT):
    """Run (where, code) blocks in order in one namespace in a fresh interpreter, working
    folder the repository root (matplotlib without a display); their temporary files (the
    README's SB3 learn() makes a folder SB3-<time>) go to the suite's own (conftest.py)."""
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    script = f"BLOCKS = {blocks!r}\n{RUNNER}"
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def docs_with_python() -> list[Path]:
    return [p for p in DOCS if python_blocks(p.read_text(encoding="utf-8"))[0]]


@pytest.mark.parametrize("doc", docs_with_python(), ids=rel)
def test_python_blocks_run(doc):
    run, _, _ = python_blocks(doc.read_text(encoding="utf-8"))
    done = run_blocks([(f"{rel(doc)}:{b.line}", b.code) for b in run])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]


def test_skipped_python_blocks_reported():
    skipped = [
        f"{rel(doc)}:{b.line} ({reason})"
        for doc in DOCS
        for b, reason in python_blocks(doc.read_text(encoding="utf-8"))[1]
    ]
    if skipped:
        pytest.skip(f"{len(skipped)} python block(s) not run: " + "; ".join(skipped))


# --------------------------------------------------------------------------- the checkers fail
def test_slug_follows_github():
    assert slug("9. Rulesets and switches") == "9-rulesets-and-switches"
    assert slug("`rule`'s advice as input (`--rule-hint`)") == "rules-advice-as-input---rule-hint"
    assert slug("MaskablePPO (`training.sb3_maskable`)") == "maskableppo-trainingsb3_maskable"
    assert slug("5.3 Patterns, values and the passport (通行证)") == (
        "53-patterns-values-and-the-passport-通行证"
    )
    text = "# A\n\n## Same\n\n```\n# not a heading\n```\n\n## Same\n\n### Same\n"
    assert anchors(text) == {"a", "same", "same-1", "same-2"}


def test_link_checker_finds_planted_breaks(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## Part two\n", encoding="utf-8")
    (tmp_path / "pic.png").write_bytes(b"")
    source = tmp_path / "page.md"
    text = textwrap.dedent(
        """\
        # Page

        ## Real heading

        [fine](#real-heading) [fine](other.md#part-two) ![fine](pic.png) [web](https://x.y/#z)
        [missing file](nowhere.md) ![missing image](gone.png)
        [missing anchor](#no-such-heading) [missing there](other.md#part-three)
        `[not a link](nowhere.md)` <!-- [nor this](nowhere.md) -->

        ```
        [nor in code](nowhere.md)
        ```
        """
    )
    problems = link_problems(text, source, root=tmp_path)
    assert len(problems) == 4, problems
    assert "page.md:6: nowhere.md: no file nowhere.md" in problems
    assert "page.md:6: gone.png: no file gone.png" in problems
    assert "page.md:7: #no-such-heading: no heading with anchor #no-such-heading" in problems
    assert any("other.md#part-three" in p for p in problems)
    assert link_problems("[up](../../x.md)", source, root=tmp_path) == [
        "page.md:1: ../../x.md: outside the checkout"
    ]


def test_skip_markers_checked():
    text = textwrap.dedent(
        """\
        <!-- skip-test: trains for an hour -->
        ```python
        raise SystemExit("never run")
        ```

        ```python
        x = 1
        ```

        <!-- skip-test -->
        ```python
        y = 2
        ```

        <!-- skip-test: not before a fence -->

        <!-- skip-test: shell -->
        ```sh
        ls
        ```
        """
    )
    run, skipped, problems = python_blocks(text)
    assert [b.code for b in run] == ["x = 1\n"]
    assert [(b.line, reason) for b, reason in skipped] == [(3, "trains for an hour")]
    assert problems == [
        "line 10: a skip-test marker needs a reason",
        "line 17: a skip-test marker before a 'sh' block",
        "line 15: a skip-test marker not on the line before a fence",
    ]


def test_snippet_runner_fails_on_an_error():
    done = run_blocks([("a.md:1", "x = 1\n"), ("a.md:5", "assert x == 2\n")], timeout=60)
    assert done.returncode == 1
    assert "FAILED: the python block at a.md:5" in done.stderr


def test_shell_checker_finds_planted_names():
    targets = makefile_targets()
    assert {"demo", "test", "hour", "scratch", "rllib", "test-rllib", "bench"} <= targets
    text = textwrap.dedent(
        """\
        ```sh
        python -m agents.arena --agents rule,random   # exists
        .venv-rllib/bin/python -m training.rllib_ppo \\
            --iterations 1
        python -m no_such_module_here --flag
        make demo && make hour RUN=runs/x
        make no-such-target
        python benchmarks/bench_hands.py
        python benchmarks/no_such_script.py
        ```

        Inline: `python -m agents.nothing_here` and `make
        nowhere`, but `make test` is fine.
        """
    )
    assert shell_problems(text, targets) == [
        "line 2: python -m no_such_module_here: no such module",
        "line 2: make no-such-target: no such target in the Makefile",
        "line 2: python benchmarks/no_such_script.py: no such file",
        "line 12: python -m agents.nothing_here: no such module",
        "line 12: make nowhere: no such target in the Makefile",
    ]
