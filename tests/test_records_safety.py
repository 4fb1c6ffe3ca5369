"""Records, pages and sizes that cannot hurt (issue 33, findings 5-9 and two planted bugs).

``view`` never replaces the record it reads nor an existing page unless asked; ``record`` names
files by their rules and never replaces a record unless asked; both write whole files or none. A
record with ``NaN``/``Infinity``, values that are not numbers, labels that are not strings or
brackets nested too deep is refused with a clear error, and ``replay`` goes on to the next file.
A batch, an arena or a run of records too large for this machine's memory is refused before
anything is allocated. The ledger table of ``view.Record`` and the chicken mark of a drawn tile
in ``picture.draw_table`` are checked against hand-known answers.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from zhuoji_env.engine import BatchGame, core
from zhuoji_env.engine.records import RecordError, load
from zhuoji_env.limits import SizeError
from zhuoji_env.picture import _BIG, _GOLD, _HEADER, ITEM_LABELS, draw_table
from zhuoji_env.record import main as record_main
from zhuoji_env.replay import main as replay_main
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import full_set, parse_tiles
from zhuoji_env.view import Record, replay_steps
from zhuoji_env.view import main as view_main

ROOT = Path(__file__).resolve().parents[1]
RON = ROOT / "tests" / "data" / "records" / "guiyang-2-ron.json"


def refused(capsys, main, argv) -> str:
    """The last line of the argparse error of a refused command line (exit status 2)."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def record(tmp_path) -> Path:
    """A copy of the ron record, the only copy the user has."""
    path = tmp_path / "g.json"
    shutil.copy(RON, path)
    return path


# --------------------------------------------------------------------------- finding 5: view
def test_view_never_writes_over_the_record_it_reads(tmp_path, capsys, record):
    before = record.read_bytes()
    for extra in ([], ["--force"]):
        msg = refused(capsys, view_main, [str(record), "--out", str(record), *extra])
        assert "is not an .html name: the page is HTML, e.g. g.html" in msg
    named_html = tmp_path / "g2.html"  # a record named like a page, no --out
    shutil.copy(RON, named_html)
    for extra in ([], ["--force"]):
        msg = refused(capsys, view_main, [str(named_html), *extra])
        assert "is the record itself: give the page another name with --out" in msg
    link = tmp_path / "link.html"
    link.symlink_to(named_html)
    msg = refused(capsys, view_main, [str(named_html), "--out", str(link), "--force"])
    assert "is the record itself" in msg
    assert record.read_bytes() == before and named_html.read_bytes() == RON.read_bytes()


def test_view_replaces_an_existing_file_only_with_force(tmp_path, capsys, record):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for extra in ([], ["--force"]):
        msg = refused(capsys, view_main, [str(record), "--out", str(notes), *extra])
        assert "is not an .html name" in msg and notes.read_text() == "my notes\n"
    page = tmp_path / "g.html"
    page.write_text("an older page\n")
    msg = refused(capsys, view_main, [str(record)])
    assert msg.endswith(
        f"the page next to RECORD '{page}' exists: give another name with --out, "
        "or --force to replace it"
    )
    assert page.read_text() == "an older page\n"
    assert view_main([str(record), "--force"]) == 0
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_record_save_keeps_an_existing_page_unless_overwrite(tmp_path):
    page = tmp_path / "hand.html"
    page.write_text("keep\n")
    rec = Record(RON)
    with pytest.raises(FileExistsError, match="hand.html exists: pass overwrite=True"):
        rec.save(page)
    assert page.read_text() == "keep\n"
    assert rec.save(page, overwrite=True) == page
    assert "<!DOCTYPE html>" in page.read_text(encoding="utf-8")


def killed_mid_write(monkeypatch):
    """Every ``Path.write_text`` from now on writes half its text, then the process "dies"."""

    def half(self, text, *args, **kwargs):
        with open(self, "w", encoding="utf-8") as f:
            f.write(text[: len(text) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", half)


def test_a_page_is_written_whole_or_not_at_all(tmp_path, monkeypatch, record):
    """Killed in the middle of writing, no part of the page is left under its name; an
    existing page being replaced is there as it was."""
    page = tmp_path / "g.html"
    killed_mid_write(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        view_main([str(record)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]
    monkeypatch.undo()
    page.write_text("the old page\n")
    killed_mid_write(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        view_main([str(record), "--force"])
    assert page.read_text() == "the old page\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.html", "g.json"]


# --------------------------------------------------------------------------- finding 6: record
def test_record_names_follow_the_rules_and_never_replace_records(tmp_path, capsys):
    out = tmp_path / "recs"
    assert record_main(["--seed", "5", "--n", "2", "--out", str(out)]) == 0
    four = snapshot(out)
    assert sorted(four) == ["guiyang-5-0.json", "guiyang-5-1.json"]
    argv = ["--seed", "5", "--n", "2", "--set", "num_players=3", "--out", str(out)]
    assert record_main(argv) == 0
    both = snapshot(out)
    assert {k: both[k] for k in four} == four  # the 4-player records are untouched
    three = sorted(set(both) - set(four))
    assert three == ["guiyang+num_players=3-5-0.json", "guiyang+num_players=3-5-1.json"]
    assert all(json.loads(both[k])["rules"]["overrides"] == {"num_players": 3} for k in three)
    msg = refused(capsys, record_main, argv)
    assert msg.endswith(
        f"--out: 2 of this run's records exist already in {out} "
        "(guiyang+num_players=3-5-0.json, ...): give another folder, or --force to replace them"
    )
    assert snapshot(out) == both
    (out / three[0]).write_text("edited\n")
    assert record_main([*argv, "--force"]) == 0
    assert snapshot(out) == both


def test_rules_tags_are_distinct_and_fit_a_file_name():
    from zhuoji_env.record import MAX_TAG, rules_tag

    assert rules_tag(Rules.make("classic")) == "classic"
    assert rules_tag(Rules.make("guiyang", num_players=4)) == "guiyang"  # the preset's value
    tag = rules_tag(Rules.make("guiyang", baoting=True, dou_values=[1, 2, 3]))
    assert tag == "guiyang+dou_values=1,2,3+baoting=true"
    many = {
        "units": "fan",
        "rerpao": "transfer",
        "qianggang": "plus_nine_burn",
        "chicken_scope": "yaoji_river",
        "flip_mode": "up_down",
        "zeren": "reversible",
        "pass_win": "forbid",
        "draw_dealer": "classic",
    }
    long_a = rules_tag(Rules.make("guiyang", **many))
    long_b = rules_tag(Rules.make("guiyang", **many, chicken_unit=2))
    assert re.fullmatch(r"guiyang\+rules-[0-9a-f]{12}", long_a) and len(long_a) <= MAX_TAG
    assert long_a != long_b


def test_records_are_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """Killed in the middle of writing a record, no part of it is left under its name; a record
    being replaced with --force is there as it was."""
    out = tmp_path / "recs"
    argv = ["--seed", "2", "--n", "1", "--out", str(out)]
    killed_mid_write(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        record_main(argv)
    assert list(out.iterdir()) == []
    monkeypatch.undo()
    assert record_main(argv) == 0
    (out / "guiyang-2-0.json").write_text("an older record\n")
    before = snapshot(out)
    killed_mid_write(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        record_main([*argv, "--force"])
    assert snapshot(out) == before


# --------------------------------------------------------------------------- real SIGKILL
PAUSE = r"""
import builtins, io, os, pathlib, runpy, sys, time

ready, stage, name, module, *argv = sys.argv[1:]
real_open, real_replace = io.open, os.replace


def pause():
    # what is on disk now is what a kill leaves: say so, then wait for the parent's SIGKILL
    with real_open(ready + ".part", "w") as f:
        f.write(str(os.getpid()))
    real_replace(ready + ".part", ready)
    time.sleep(600)
    os._exit(3)


class Half:
    # a file open for writing whose first write stores half its data on disk, then pauses
    def __init__(self, f):
        self._f = f

    def __getattr__(self, key):
        return getattr(self._f, key)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._f.__exit__(*exc)

    def write(self, data):
        self._f.write(data[: len(data) // 2])
        self._f.flush()
        os.fsync(self._f.fileno())
        pause()


def open_(file, mode="r", *args, **kwargs):
    f = real_open(file, mode, *args, **kwargs)
    writes = set(mode) & set("wax+")
    if stage == "write" and writes and name in os.path.basename(os.fsdecode(file)):
        return Half(f)
    return f


def replace(src, dst, **kwargs):
    real_replace(src, dst, **kwargs)
    if stage == "replaced" and os.path.basename(os.fsdecode(dst)) == name:
        pause()


io.open = open_  # Path.write_text and open() both go through it
builtins.open = open_
if hasattr(pathlib, "_NormalAccessor"):  # Python 3.10: Path.open calls the io.open it bound
    pathlib._NormalAccessor.open = staticmethod(open_)
os.replace = replace
sys.argv = [module, *argv]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""
"""Run ``python -m MODULE ARGV``; the first write to a file whose name holds ``name`` (the
target or its temporary) stores half its data and pauses (``stage`` 'write'), or the rename onto
``name`` is done and then pauses ('replaced'). The parent then sends SIGKILL."""


def kill_during_write(tmp_path: Path, stage: str, name: str, module: str, argv: list[str]):
    """Run ``module`` under :data:`PAUSE` and SIGKILL it once it is paused at ``stage``."""
    ready = tmp_path / f"ready-{stage}"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [sys.executable, "-c", PAUSE, str(ready), stage, name, module, *argv]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while not ready.exists():
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace")
                pytest.fail(f"{module} exited ({proc.returncode}) before {stage}: {err[-2000:]}")
            assert time.monotonic() < deadline, f"{module} never reached {stage}"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


def assert_old_or_new(path: Path, old: bytes, is_new, stage: str) -> None:
    """After the kill ``path`` holds the old bytes (killed mid-write) or the complete new file
    (killed after the rename), and the only other thing beside it is, at most, the hidden
    temporary of the cut write."""
    data = path.read_bytes()
    if stage == "write":
        assert data == old or is_new(data), f"{path.name} is cut: {data[:200]!r}"
    else:
        assert is_new(data), f"{path.name} is not the complete new file: {data[:200]!r}"
    temporary = re.compile(rf"\.{re.escape(path.name)}\.\d+\.[a-z0-9_]{{8}}\.tmp")
    others = [p.name for p in path.parent.iterdir() if p.name != path.name]
    assert all(temporary.fullmatch(x) for x in others), others


STAGES = pytest.mark.parametrize("stage", ["write", "replaced"])


@STAGES
def test_a_record_replaced_with_force_survives_a_sigkill(tmp_path, stage):
    out, ref = tmp_path / "recs", tmp_path / "ref"
    argv = ["--seed", "2", "--n", "1"]
    assert record_main([*argv, "--out", str(ref)]) == 0
    new = (ref / "guiyang-2-0.json").read_bytes()
    out.mkdir()
    target = out / "guiyang-2-0.json"
    old = b'{"an older record": true}\n'
    target.write_bytes(old)
    module = "zhuoji_env.record"
    kill_during_write(tmp_path, stage, target.name, module, [*argv, "--out", str(out), "--force"])
    assert_old_or_new(target, old, lambda data: data == new, stage)


@STAGES
def test_a_page_replaced_with_force_survives_a_sigkill(tmp_path, stage, record):
    assert view_main([str(record), "--out", str(tmp_path / "ref.html")]) == 0
    new = (tmp_path / "ref.html").read_bytes()
    pages = tmp_path / "pages"
    pages.mkdir()
    target = pages / "g.html"
    old = b"<!DOCTYPE html><p>the old page</p>\n"
    target.write_bytes(old)
    argv = [str(record), "--out", str(target), "--force"]
    kill_during_write(tmp_path, stage, target.name, "zhuoji_env.view", argv)
    assert_old_or_new(target, old, lambda data: data == new, stage)


@STAGES
def test_an_arena_summary_replaced_with_force_survives_a_sigkill(tmp_path, stage):
    from agents import arena

    argv = ["--agents", "random,greedy", "--deals", "2", "--seed", "3", "--no-progress"]
    assert arena.main([*argv, "--json", str(tmp_path / "ref.json")]) == 0

    def summary(data: bytes) -> dict:
        s = json.loads(data)
        s.pop("seconds")  # differs between two runs
        s["machine"].pop("code")  # the checkout's commit and dirty flag: edits may come between
        return s

    new = summary((tmp_path / "ref.json").read_bytes())

    def is_new(data: bytes) -> bool:
        try:
            s = summary(data)
        except (ValueError, KeyError):
            return False
        return json.dumps(s, sort_keys=True) == json.dumps(new, sort_keys=True)

    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "g.json"
    old = b'{"the old summary": 1}\n'
    target.write_bytes(old)
    argv = [*argv, "--json", str(target), "--force"]
    kill_during_write(tmp_path, stage, target.name, "agents.arena", argv)
    assert_old_or_new(target, old, is_new, stage)


# --------------------------------------------------------------------------- finding 7: NaN
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused_when_a_record_is_read(tmp_path, capsys, constant):
    rec = load(RON)
    n = len(rec["actions"])
    path = tmp_path / "nan.json"
    text = json.dumps({**rec, "values": ["HOLE"] + [None] * (n - 1)})
    path.write_text(text.replace('"HOLE"', constant), encoding="utf-8")
    with pytest.raises(RecordError, match=f"not valid JSON: {constant} is not a JSON number"):
        load(path)
    assert view_main([str(path)]) == 2
    assert f"nan.json: error: not valid JSON: {constant}" in capsys.readouterr().err
    assert not (tmp_path / "nan.html").exists()


def test_a_key_given_twice_is_refused_when_a_record_is_read(tmp_path, capsys):
    """Python's ``json`` keeps the last of two keys, other readers the first: the same file
    replayed with another dealer (or rules) here than elsewhere, and "result matches"."""
    text = RON.read_text(encoding="utf-8")
    dealer = json.loads(text)["dealer"]
    path = tmp_path / "twice.json"
    path.write_text(text.replace('"dealer":', f'"dealer": {(dealer + 1) % 4}, "dealer":', 1))
    with pytest.raises(RecordError, match=r"^not a record: key 'dealer' appears twice in one"):
        load(path)
    assert replay_main([str(path)]) == 2
    assert "key 'dealer' appears twice" in capsys.readouterr().err


def test_a_byte_order_mark_is_skipped_when_a_record_is_read(tmp_path):
    """RFC 8259 lets a reader ignore a leading byte-order mark, as some Windows editors write."""
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + RON.read_bytes())
    assert load(path) == load(RON)
    assert replay_main([str(path)]) == 0


@pytest.mark.parametrize(
    "field, bad, message",
    [
        ("values", float("nan"), r"values\[3\]: expected null or a finite number .* got nan"),
        ("values", float("inf"), r"values\[3\]: expected null or a finite number .* got inf"),
        ("values", "0.5", r"values\[3\]: .* got '0.5'"),
        ("values", {"v": 1}, r"values\[3\]: .* got \{'v': 1\}"),
        ("values", True, r"values\[3\]: .* got True"),
        ("values", [10**400], r"values\[3\]: .* got \[1000"),
        ("values", 10**400, r"values\[3\]: expected null or a finite number .* got 1000"),
        ("agents", {"0": "rule"}, r"'agents' must list one label \(a string\) per seat \(4\)"),
        ("agents", ["a", "b", {"c": 1}, "d"], r"'agents' must list one label \(a string\)"),
        ("agents", ["a", "b", float("nan"), "d"], r"'agents' must list one label \(a string\)"),
    ],
)
def test_values_and_agents_of_the_wrong_kind_are_refused(field, bad, message):
    rec = load(RON)
    if field == "values":
        rec["values"] = [None, 0.25, -(10**300)] + [bad] + [None] * (len(rec["actions"]) - 4)
    else:
        rec["agents"] = bad
    with pytest.raises(RecordError, match=message):
        replay_steps(rec)


def test_a_pages_title_is_its_file_name_as_text(tmp_path, record):
    """The title was put in first and the page's other parts after, so a file named
    ``x__DATA__.json`` showed the whole data in its heading; a file name that is not UTF-8
    ended in a traceback."""
    for name, title in ((b"x__DATA__.json", "x__DATA__"), (b"\xffbad.json", "?bad")):
        path = Path(os.fsdecode(bytes(tmp_path) + b"/" + name))
        shutil.copy(record, path)
        out = tmp_path / "page.html"
        assert view_main([str(path), "--out", str(out), "--force"]) == 0
        text = out.read_text(encoding="utf-8")
        assert f"<title>{title}</title>" in text and f"<h1>{title}" in text


def test_a_page_embeds_only_standard_json(tmp_path, record):
    rec = load(record)
    rec["values"] = [0.5] * len(rec["actions"])
    rec["agents"] = ["ppo", "rule", "random", "greedy"]
    good = tmp_path / "good.json"
    good.write_text(json.dumps(rec), encoding="utf-8")
    assert view_main([str(good)]) == 0
    text = (tmp_path / "good.html").read_text(encoding="utf-8")
    data = re.search(r'<script id="data" type="application/json">(.*?)</script>', text).group(1)

    def strict(name):
        raise AssertionError(f"{name} in the page's data")

    assert json.loads(data, parse_constant=strict)["agents"][0] == "ppo"


# --------------------------------------------------------------------------- finding 9: nesting
def test_replay_reports_a_deeply_nested_record_and_goes_on(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)  # 200 KB
    digits = tmp_path / "digits.json"
    digits.write_text('{"dealer": ' + "7" * 5000 + "}")
    good = tmp_path / "good.json"
    shutil.copy(RON, good)
    assert replay_main([str(deep), str(digits), str(good)]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert f"{deep}: error: arrays or objects nested too deeply to read" in err
    assert f"{digits}: error: not a record: Exceeds the limit" in err
    assert f"{good}: result matches the record" in err
    assert json.loads(out.strip().splitlines()[-1])["deltas"] == [17, 9, -33, 7]


def test_view_reports_a_deeply_nested_record(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text('{"wall": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert view_main([str(deep)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{deep}: error: arrays or objects nested too deeply to read" in err
    assert not (tmp_path / "deep.html").exists()
    with pytest.raises(RecordError, match="nested too deeply"):
        Record(deep)


# --------------------------------------------------------------------------- finding 8: sizes
@pytest.mark.parametrize("size", [0, -1, 2.0, True, "3", None])
def test_bad_batch_sizes_are_refused(size):
    with pytest.raises(ValueError, match=r"batch_size must be an integer >= 1, got"):
        BatchGame("guiyang", size)


def test_a_batch_larger_than_memory_is_refused(monkeypatch):
    monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", str(1 << 20))
    with pytest.raises(
        SizeError,
        match=r"batch_size=1000 needs about 0\.01 GiB of memory, more "
        r"than the 0\.00 GiB that ZHUOJI_MEMORY_LIMIT sets \(set ZHUOJI_MEMORY_LIMIT",
    ):
        BatchGame("guiyang", 1000)
    assert BatchGame("guiyang", 10).batch_size == 10


def test_record_refuses_more_games_than_memory_before_playing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", str(1 << 20))
    out = tmp_path / "recs"
    msg = refused(capsys, record_main, ["--n", "200", "--out", str(out)])
    assert "error: --n 200 needs about" in msg and "that ZHUOJI_MEMORY_LIMIT sets" in msg
    assert not out.exists()


def test_run_arena_refuses_bad_and_oversized_deals(monkeypatch):
    from agents.arena import run_arena

    for deals in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="deals must be an integer >= 1, got"):
            run_arena(["random", "random"], deals, progress=False)
    monkeypatch.setenv("ZHUOJI_MEMORY_LIMIT", str(1 << 20))
    with pytest.raises(SizeError, match=r"^100000 deals x 6 seatings needs about"):
        run_arena(["random", "rule"], 100_000, progress=False)


def _limited(limit: int):
    """A child process limited to ``limit`` bytes of address space: a regression fails there
    with MemoryError instead of taking the machine down."""

    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def run_limited(code: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    env.pop("ZHUOJI_MEMORY_LIMIT", None)
    return subprocess.run(
        [sys.executable, *code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited(2 << 30),
    )


def test_arena_cli_refuses_a_trillion_deals():
    p = run_limited(["-m", "agents.arena", "--agents", "random,rule", "--deals", str(10**12)])
    assert p.returncode == 2, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    assert re.search(
        r"error: 1000000000000 deals x 6 seatings needs about [\d,.]+ GiB of memory, more than "
        r"the [\d,.]+ GiB the address-space limit \(ulimit -v, 2\.00 GiB\) leaves",
        p.stderr,
    )


def test_a_batch_of_a_trillion_games_is_refused_before_allocating():
    code = (
        "from zhuoji_env.engine import BatchGame\n"
        "from zhuoji_env.limits import SizeError\n"
        "try:\n    BatchGame('guiyang', 10**12)\n"
        "except SizeError as e:\n    print(e)\n"
    )
    p = run_limited(["-c", code])
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.startswith("batch_size=1000000000000 needs about")


# --------------------------------------------------------------------------- planted bugs
def test_record_ledger_table_says_who_paid_whom():
    """guiyang-2-ron: P2 dealt into P1's and P3's wins (12 and 10 for the win); the table's rows
    are the record's ledger lines with payer and payee in their columns, and each seat's
    received minus paid is its hand score (+17 +9 -33 +7)."""
    rec = Record(RON)
    cells = re.findall(
        r"<tr><td>([^<]*)</td><td>P(\d)</td><td>P(\d)</td><td>(\d+)</td></tr>", rec.ledger_html()
    )
    rows = [(label, int(p), int(q), int(a)) for label, p, q, a in cells]
    assert rows[:2] == [(ITEM_LABELS["hu"], 2, 1, 12), (ITEM_LABELS["hu"], 2, 3, 10)]
    want = sorted((ITEM_LABELS[it], p, q, a) for p, q, a, it in load(RON)["result"]["ledger"])
    assert sorted(rows) == want
    net = np.zeros(4, dtype=int)
    for _, payer, payee, amount in rows:
        net[payer] -= amount
        net[payee] += amount
    assert net.tolist() == [17, 9, -33, 7]
    page_rows = sorted(
        (x["label"], x["payer"], x["payee"], x["amount"]) for x in replay_steps(load(RON))["ledger"]
    )
    assert page_rows == want


def dealt(hand: str, drawn: str) -> tuple[Rules, object]:
    """A guiyang hand dealt to seat 0 (the dealer): ``hand`` its 13 tiles, ``drawn`` its 14th;
    the other tiles in a fixed order."""
    mine = parse_tiles(hand) + parse_tiles(drawn)
    rest = list(full_set())
    for k in mine:
        rest.remove(k)
    rest = list(np.random.default_rng(0).permutation(rest))
    wall = np.array(mine[:13] + rest[:39] + mine[13:] + rest[39:], dtype=np.int8)
    rules = Rules.make("guiyang")
    st = core.deal(rules, wall[None], 0)
    assert int(st.drawn[0]) == mine[13]
    return rules, st


def corner(img, j: int) -> tuple[int, ...]:
    """The top-right pixel of seat 0's j-th hand tile (j = 13: the drawn tile, set apart)."""
    x = 10 + j * (_BIG[0] + 2) + (8 if j == 13 else 0)
    return tuple(img[_HEADER + 24 + 2, x + _BIG[0] - 2])


@pytest.mark.parametrize(
    "hand, drawn, last_gold, drawn_gold",
    [
        ("1m2m3m4m5m6m7m8m9m2p3p4p9s", "1s", False, True),  # drew the chicken 1s, last 9s
        ("1m2m3m4m5m6m7m8m9m2p3p4p1s", "5p", True, False),  # last kind 1s, drew 5p
    ],
)
def test_the_drawn_tile_has_its_own_chicken_mark(hand, drawn, last_gold, drawn_gold):
    rules, st = dealt(hand, drawn)
    img = draw_table(rules, st, 0, viewer=0)
    assert (corner(img, 12) == _GOLD) is last_gold
    assert (corner(img, 13) == _GOLD) is drawn_gold
    assert corner(img, 0) != _GOLD  # 1m
