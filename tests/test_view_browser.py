"""The replay viewer page in a real headless Chromium, driven by Playwright.

Chromium comes from the system (Debian's ``chromium`` package, which ``make test`` installs when
it is missing) and is started with ``executable_path``; Playwright's own browser downloads are
not used. Without Chromium this test fails (in CI) rather than skipping: the viewer is only
tested here.
"""

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from zhuoji_env.engine.records import RecordError, load
from zhuoji_env.view import main, page, replay_steps

RECORDS = Path(__file__).parent / "data" / "records"
RON = RECORDS / "guiyang-2-ron.json"


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    message = "no Chromium on PATH: install it (apt-get install chromium) to test the viewer"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser():
    exe = chromium_path()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield b
        b.close()


def open_page(browser, path: Path):
    pg = browser.new_page(viewport={"width": 1400, "height": 900})
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("request", lambda r: r.url.startswith("file:") or errors.append("fetched " + r.url))
    pg.goto(path.as_uri())
    return pg, errors


def test_cli_writes_a_self_contained_page(tmp_path):
    out = tmp_path / "hand.html"
    assert main([str(RON), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.isascii()  # no CJK anywhere: nothing for a font-less browser to box
    for needle in ("http://", "https://", "<link", "src="):
        assert needle not in text, needle
    bad = tmp_path / "bad.json"
    rec = load(RON)
    rec["actions"] = rec["actions"][:-1]
    bad.write_text(json.dumps(rec), encoding="utf-8")
    assert main([str(bad), "--out", str(tmp_path / "bad.html")]) == 2
    assert not (tmp_path / "bad.html").exists()


@pytest.mark.parametrize(
    "out, message",
    [
        ("", r"--out '.*' is a folder: give a file name"),
        ("afile/x.html", r"--out '.*afile/x.html': '.*afile' is not an existing folder"),
        ("missing/x.html", r"--out '.*missing/x.html': '.*missing' is not an existing folder"),
    ],
)
def test_cli_names_a_bad_out_path_not_the_record(tmp_path, capsys, out, message):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(SystemExit) as exc:
        main([str(RON), "--out", str(tmp_path / out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert str(RON) not in err


def test_optional_fields_are_checked():
    rec = load(RON)
    rec["probs"] = [None] * 3
    with pytest.raises(RecordError, match=r"'probs' must be a list with one entry per action"):
        replay_steps(rec)
    rec["probs"] = [{"discard 4p": 1.5}] + [None] * (len(rec["actions"]) - 1)
    with pytest.raises(RecordError, match=r"probs\[0\]"):
        replay_steps(rec)


@pytest.mark.parametrize(
    "first, message",
    [
        ({"fly away": 1.0}, r"probs\[0\]: 'fly away' is not a legal action of decision 0"),
        ({5: 1.0}, r"probs\[0\]: 5 is not a legal action of decision 0; the keys are"),
        ({"discard 4p": True}, r"probs\[0\]: expected null or an object .* in \[0, 1\]"),
        ({"discard 4p": float("nan")}, r"probs\[0\]: expected null"),
        ({"discard 4p": 1, "discard 1m": 1, "discard 2m": 1}, r"probs\[0\]: .* sum to 3, not 1"),
        ({"discard 4p": 0.5}, r"probs\[0\]: the probabilities sum to 0.5, not 1"),
    ],
)
def test_probabilities_must_be_a_distribution_over_the_legal_actions(first, message):
    """Keys that are no legal action of the decision (or no text), bools and rows summing to 3
    were shown as if they were the agent's probabilities."""
    rec = load(RON)
    rec["probs"] = [first] + [None] * (len(rec["actions"]) - 1)
    with pytest.raises(RecordError, match=message):
        replay_steps(rec)


def test_probabilities_rounded_as_analysis_writes_them_pass():
    rec = load(RON)
    n = len(rec["actions"])
    legal = replay_steps(rec)["steps"][0]["legal"]
    row = {a: round(1 / len(legal), 4) for a in legal}  # sums to 1 within the rounding
    rec["probs"] = [row, {"pong": 0.25, "pass": 0.75}] + [None] * (n - 2)
    assert replay_steps(rec)["steps"][0]["probs"] == row


def test_stepping_through_a_hand(browser, tmp_path):
    out = tmp_path / "ron.html"
    assert main([str(RON), "--out", str(out)]) == 0
    pg, errors = open_page(browser, out)
    assert pg.text_content("#step-label") == "Decision 1 / 56"
    assert pg.text_content("#decision") == "P1 chose: discard 4p"
    assert pg.locator("#legal tr.chosen").text_content() == "discard 4p  <- chosen"
    # all hands open: 13 tiles for each non-dealer, 13 + the drawn one for the dealer
    assert [pg.locator(f"#seat-{s} .hand > .tile").count() for s in range(4)] == [13, 14, 13, 13]
    assert pg.locator("#seat-1").get_attribute("class") == "seat actor"

    pg.keyboard.press("ArrowRight")  # seat 3 may pong the 4p and passes
    assert pg.text_content("#step-label") == "Decision 2 / 56"
    assert pg.text_content("#decision") == "P3 chose: pass"
    assert pg.text_content("#info").startswith("P1 discarded 4p: response window, P3 to act")
    assert [r.text_content() for r in pg.locator("#legal tr").all()[1:]] == [
        "pong",
        "pass  <- chosen",
    ]
    assert pg.locator("#seat-1 .river .tile.current").text_content() == "4p"

    for _ in range(4):
        pg.click("#next")
    assert pg.text_content("#step-label") == "Decision 6 / 56"
    assert pg.text_content("#info") == ("P1's turn, drew 3m | last discard P0 1s | wall 51 left")
    # the first 1s, discarded by seat 0, lies unclaimed in its river: the charging chicken
    assert pg.locator("#seat-0 .river .tile.cf").text_content() == "1s"
    pg.keyboard.press("ArrowLeft")
    assert pg.text_content("#step-label") == "Decision 5 / 56"

    pg.fill("#jump", "2.5")  # a fraction left the page on decision "3.5", failing at each step
    pg.press("#jump", "Enter")
    assert pg.text_content("#step-label") == "Decision 4 / 56"
    pg.click("#next")
    assert pg.text_content("#step-label") == "Decision 5 / 56"
    pg.fill("#jump", "36")
    pg.press("#jump", "Enter")
    assert pg.text_content("#decision") == "P0 chose: pong"

    pg.keyboard.press("End")
    assert pg.text_content("#step-label") == "End of hand (56 decisions)"
    assert pg.text_content("#decision") == (
        "Hand over: ron, winners P1, P3, flip 8s | scores P0 +17, P1 +9, P2 -33, P3 +7"
    )
    rows = [r.inner_text().split("\t") for r in pg.locator("#ledger tr").all()[1:]]
    assert len(rows) == 17
    assert rows[0] == ["hand payment, hu (7.2)", "P2", "P1", "12"]
    assert rows[2] == ["added kong, zhuan wan dou (7.3)", "P1", "P0", "3"]
    assert rows[-1] == ["charging chicken, chong feng ji (7.4)", "P3", "P0", "2"]
    assert pg.locator("#seat-0 .meld").all_text_contents() == [
        "6m6m6m6ma.kong from P2",
        "8p8p8ppong from P1",
    ]
    shot = pg.screenshot(path=str(tmp_path / "end.png"), full_page=True)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
    pg.keyboard.press("Home")
    assert pg.text_content("#step-label") == "Decision 1 / 56"
    assert pg.locator("#ledger").count() == 0
    assert errors == []


def test_probabilities_are_shown(browser, tmp_path):
    rec = load(RON)
    n = len(rec["actions"])
    rec["probs"] = [None, {"pong": 0.25, "pass": 0.75}] + [None] * (n - 2)
    rec["values"] = [None, -1.5] + [None] * (n - 2)
    rec["agents"] = ["rule", "random", "greedy", "ppo"]
    out = tmp_path / "probs.html"
    out.write_text(page(rec), encoding="utf-8")
    pg, errors = open_page(browser, out)
    assert pg.locator("#legal tr").first.text_content() == "legal alternatives (8)"
    assert pg.locator("#legal tr.chosen td").all_text_contents() == ["discard 4p  <- chosen"]
    pg.keyboard.press("ArrowRight")
    assert pg.text_content("#decision") == "P3 (ppo) chose: pass | value estimate -1.50"
    cells = [r.locator("td").all_text_contents() for r in pg.locator("#legal tr").all()]
    assert cells == [
        ["legal alternatives (2)", "agent probability"],
        ["pong", "25.0% "],
        ["pass  <- chosen", "75.0% "],
    ]
    assert errors == []
