"""``python -m zhuoji_env.record`` (issue 11): bad flags are argparse errors with nothing
written, ``hands_per_game`` plays matches, and game i's record does not depend on ``--n``;
``python -m zhuoji_env.view`` does not show a record whose stored result differs from its
replay unless told to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zhuoji_env.engine.records import compare, replay
from zhuoji_env.record import main
from zhuoji_env.view import Record
from zhuoji_env.view import main as view_main


def run_error(capsys, argv) -> str:
    """The argparse error message of a refused command line (exit status 2)."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def listing(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_out_is_a_file(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("keep\n")
    msg = run_error(capsys, ["--n", "1", "--out", str(f)])
    assert msg.endswith(f"error: --out: {f} is a file, not a folder")
    assert f.read_text() == "keep\n" and listing(tmp_path) == ["afile"]


def test_out_under_a_file(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("keep\n")
    out = f / "deeper" / "records"
    msg = run_error(capsys, ["--n", "1", "--out", str(out)])
    assert msg.endswith(f"error: --out: {out} lies under {f}, which is a file, not a folder")
    assert listing(tmp_path) == ["afile"]


def test_out_under_a_root_that_cannot_hold_it(capsys):
    msg = run_error(capsys, ["--n", "1", "--out", "/proc/zhuoji-no-such/records"])
    assert msg.endswith(
        "error: --out: cannot create /proc/zhuoji-no-such/records: No such file or directory"
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seed", "-1"], "argument --seed: expected an integer >= 0, got -1"),
        (["--seed", "x"], "argument --seed: expected an integer >= 0, got 'x'"),
        (["--n", "0"], "argument --n: expected an integer >= 1, got 0"),
        (["--set", "hands_per_game=0"], "--set: switch 'hands_per_game': bad value 0"),
        (["--set", "chicken_unit=1500000000"], "--set: switch 'chicken_unit': bad value"),
        (["--set", "nosuch=1"], "--set: unknown switch 'nosuch'"),
        (["--set", "baoting"], "--set: expected SWITCH=VALUE, got 'baoting'"),
    ],
)
def test_bad_flags_write_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "records"
    msg = run_error(capsys, [*argv, "--out", str(out)])
    assert message in msg
    assert not out.exists()


def read_all(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.json"))}


def test_record_i_does_not_depend_on_n(tmp_path, capsys):
    """Game i's wall and decisions are keyed by (seed, i): records 0-4 are byte-identical
    whether 5 or 20 games are played, and they differ from another seed's."""
    few, many, other = tmp_path / "few", tmp_path / "many", tmp_path / "other"
    assert main(["--seed", "3", "--n", "5", "--out", str(few)]) == 0
    assert main(["--seed", "3", "--n", "20", "--out", str(many)]) == 0
    assert main(["--seed", "4", "--n", "5", "--out", str(other)]) == 0
    assert "wrote 5 records of 5 games" in capsys.readouterr().out
    a, b = read_all(few), read_all(many)
    assert sorted(a) == [f"guiyang-3-{i}.json" for i in range(5)]
    assert len(b) == 20
    assert all(a[name] == b[name] for name in a)
    c = read_all(other)
    assert all(a[f"guiyang-3-{i}.json"] != c[f"guiyang-4-{i}.json"] for i in range(5))
    walls = {json.loads(v)["wall"] for v in b.values()}
    assert len(walls) == 20


def test_hands_per_game_plays_matches(tmp_path, capsys):
    """--set hands_per_game=3 plays matches of three hands (RULES.md 8.2): one record per hand,
    named by game and hand, each saying hands_per_game 3, the dealer and streak carried from the
    hand before; every record replays to its result."""
    out = tmp_path / "m"
    argv = ["--preset", "classic", "--seed", "11", "--n", "2", "--set", "hands_per_game=3"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "wrote 6 records of 2 games" in capsys.readouterr().out
    recs = read_all(out)
    tag = "classic+hands_per_game=3"
    assert sorted(recs) == [f"{tag}-11-{i}-{h}.json" for i in range(2) for h in range(3)]
    for i in range(2):
        match = [json.loads(recs[f"{tag}-11-{i}-{h}.json"]) for h in range(3)]
        assert match[0]["dealer_streak"] == 0
        for rec in match:
            assert rec["rules"] == {"preset": "classic", "overrides": {"hands_per_game": 3}}
            assert compare(rec["result"], replay(rec)) == []
        for prev, nxt in zip(match, match[1:], strict=False):
            assert nxt["dealer"] == prev["result"]["next_dealer"]
            assert nxt["dealer_streak"] == prev["result"]["next_streak"]
            assert nxt["wall"] != prev["wall"]
    # The first hand of each match is the one-hand game of the same seed.
    single = tmp_path / "s"
    assert main(["--preset", "classic", "--seed", "11", "--n", "2", "--out", str(single)]) == 0
    one = read_all(single)
    for i in range(2):
        first = json.loads(recs[f"{tag}-11-{i}-0.json"])
        alone = json.loads(one[f"classic-11-{i}.json"])
        assert first["wall"] == alone["wall"] and first["actions"] == alone["actions"]


def test_view_refuses_a_record_whose_result_differs_unless_allowed(tmp_path, capsys):
    """``zhuoji_env.view`` on a record whose stored result was changed: no page and exit 1, with
    what differs as ``zhuoji_env.replay`` says it; with --allow-mismatch the page is written
    with the differences at its top. A record that replays to its result has no such list."""
    ron = Path(__file__).parent / "data" / "records" / "guiyang-2-ron.json"
    rec = json.loads(ron.read_text())
    rec["result"]["deltas"] = [0, 0, 0, 0]
    bad, page = tmp_path / "bad.json", tmp_path / "bad.html"
    bad.write_text(json.dumps(rec))
    said = "deltas: record has [0, 0, 0, 0], replay gives [17, 9, -33, 7]"
    assert view_main([str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}: differs: {said}" in err and "--allow-mismatch" in err
    assert not page.exists()
    assert view_main([str(bad), "--allow-mismatch"]) == 0
    assert f"{bad}: differs: {said}" in capsys.readouterr().err
    text = page.read_text(encoding="utf-8")
    assert '<div id="mismatch">' in text and f"<li>{said}</li>" in text
    assert f"stored result differs: {said}" in Record(rec)._repr_html_()
    good = tmp_path / "good.html"
    assert view_main([str(ron), "--out", str(good)]) == 0
    assert 'id="mismatch"' not in good.read_text(encoding="utf-8")
    assert "differs" not in Record(ron)._repr_html_()


RON = Path(__file__).parent / "data" / "records" / "guiyang-2-ron.json"


def test_record_save_never_replaces_its_record_and_takes_only_a_bool_overwrite(tmp_path):
    """The viewer's promise holds in Python too: ``Record(p).save(p, overwrite=True)`` wrote HTML
    over the record; ``overwrite="no"`` replaced a page; a folder was "exists" then
    IsADirectoryError."""
    rec_path = tmp_path / "hand.json"
    rec_path.write_text(RON.read_text())
    record = Record(rec_path)
    for target in (rec_path, str(rec_path)):
        with pytest.raises(ValueError, match="is the record this page shows: the viewer never"):
            record.save(target, overwrite=True)
    assert rec_path.read_text() == RON.read_text()
    page = record.save(tmp_path / "hand.html")
    page.write_text("mine")
    with pytest.raises(TypeError, match="overwrite must be True or False, got 'no'"):
        record.save(page, overwrite="no")
    assert page.read_text() == "mine"
    for overwrite in (False, True):
        with pytest.raises(IsADirectoryError, match="is a folder: give the page a file name"):
            record.save(tmp_path, overwrite=overwrite)
    assert record.save(page, overwrite=True) == page and page.read_text().startswith("<!DOC")


def test_record_page_and_table_refuse_arguments_of_the_wrong_type():
    for bad in ([1, 2], 5, b"hand.json", None):
        with pytest.raises(TypeError, match="Record takes a record object .* got "):
            Record(bad)
    record = Record(RON)
    with pytest.raises(TypeError, match="title must be a string, got None"):
        record.page(title=None)
    with pytest.raises(TypeError, match="reveal must be True or False, got 'no'"):
        record.table(0, reveal="no")
    assert record.table(0, reveal=False, viewer=0) is not None
