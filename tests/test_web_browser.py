"""The web app in a real headless Chromium (Playwright, Debian's chromium as in
test_view_browser): hands played by clicking, a watched table of agents, and the downloaded
record replaying to the result the page showed."""

import json
import re

import pytest
from playwright.sync_api import sync_playwright
from test_view_browser import chromium_path

from agents.web.app import BackgroundServer, Settings, check_agents, create_app
from zhuoji_env import replay

AGENTS = ["random", "rule", "ppo-guiyang"]


@pytest.fixture(scope="module")
def url():
    settings = Settings(AGENTS, policies=check_agents(AGENTS))
    with BackgroundServer(create_app(settings)) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    exe = chromium_path()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield b
        b.close()


def open_app(browser, url, width=1280, height=800):
    pg = browser.new_page(
        viewport={"width": width, "height": height}, accept_downloads=True, bypass_csp=True
    )  # bypass_csp: Playwright evaluates its waits as strings, which the CSP forbids
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: m.type == "error" and errors.append(m.text))
    pg.on("request", lambda r: r.url.startswith(url) or errors.append("fetched " + r.url))
    pg.goto(url + "/")
    pg.wait_for_selector("#agent-1")
    return pg, errors


def set_pace(pg, ms):
    pg.eval_on_selector(
        "#pace", f"e => {{ e.value = {ms}; e.dispatchEvent(new Event('change')); }}"
    )


def test_play_hands_by_clicking_and_replay_the_downloaded_record(browser, url, tmp_path):
    pg, errors = open_app(browser, url)
    pg.fill("#seed", "11")
    pg.select_option("#hint", "ppo-guiyang")
    pg.click("#create")
    pg.wait_for_selector("#seat-0")
    set_pace(pg, 0)
    done = {"discard": 0, "claim": 0, "pass": 0, "hint": 0}
    hands = 0
    while hands < 6 and (hands == 0 or not (done["claim"] and done["pass"])):
        pg.wait_for_function(
            "document.querySelector('#turn').textContent === 'Your move' || "
            "document.querySelector('#next-hand') !== null",
            timeout=30000,
        )
        if pg.locator("#next-hand").count():
            hands += 1
            check_settlement(pg, tmp_path, hands)
            pg.keyboard.press("n")  # the shortcut of the next-hand button
            pg.wait_for_selector("#next-hand", state="detached")
            continue
        version = pg.evaluate("V.version")
        buttons = {b.get_attribute("data-action"): b for b in pg.locator("#actions button").all()}
        pg.wait_for_selector("#hint-box tr")  # what would ppo-guiyang do here?
        done["hint"] += 1
        if "hu" in buttons:
            buttons["hu"].click()
        elif "pong" in buttons and not done["claim"]:
            pg.keyboard.press("p")
            done["claim"] += 1
        elif "pass" in buttons:
            buttons["pass"].click()
            done["pass"] += 1
        elif pg.locator("#seat-0 .tile.clickable").count():
            pg.locator("#seat-0 .tile.clickable").last.click()
            done["discard"] += 1
        else:
            next(iter(buttons.values())).click()
        pg.wait_for_function(f"V.version > {version}")
    assert done["discard"] and done["claim"] and done["pass"] and hands >= 1, done
    assert errors == []
    pg.close()  # its pending long poll ends with it


def check_settlement(pg, tmp_path, hands):
    """The ledger shown, and the downloaded record replaying to the result shown."""
    text = pg.text_content("#settle")
    assert text.startswith("Hand over: ")
    rows = [r.inner_text().split("\t") for r in pg.locator("#ledger tr").all()[1:]]
    assert rows, "no ledger rows"
    link = pg.locator("#records a.record").nth(hands - 1)
    with pg.expect_download() as dl:
        link.click()
    path = tmp_path / f"hand{hands}.json"
    dl.value.save_as(path)
    record = json.loads(path.read_text())
    result = replay(record)
    scores = ", ".join(f"P{s} {d:+d}".replace("+0", "0") for s, d in enumerate(result["deltas"]))
    assert text.split(" | scores ")[1].startswith(scores)
    assert text.split(",")[0] == f"Hand over: {result['end']}"
    payments = [r for r in rows if r != ["no payments"]]
    assert len(payments) == len(result["ledger"])


def test_watch_agents_play_a_hand_to_the_end(browser, url):
    pg, errors = open_app(browser, url)
    pg.select_option("#your-seat", "watch")
    for s in range(4):
        pg.select_option(f"#agent-{s}", "ppo-guiyang" if s == 0 else "rule")
    pg.check("#open")
    pg.click("#create")
    pg.wait_for_selector("#seat-0")
    pg.click("#pause")
    pg.wait_for_function("V.paused")
    # every hand open: 13 or 14 tiles shown at each seat, none face down
    assert pg.locator("#table .tile.back").count() == 0
    before = pg.evaluate("V.version")
    pg.click("#step")
    pg.wait_for_function(f"V.version > {before} && V.last_decision !== null")
    if pg.evaluate("V.last_decision.seat") == 0:  # ppo-guiyang's probabilities are shown
        assert pg.locator("#decision-box tr").count() >= 1
    set_pace(pg, 0)
    pg.click("#pause")  # play
    pg.wait_for_selector("#next-hand", timeout=60000)
    assert re.match(r"Hand over: (zimo|ron|qianggang|draw)", pg.text_content("#settle"))
    assert pg.locator("#ledger").count() == 1
    assert errors == []
    pg.close()


def test_readable_on_a_phone_sized_window(browser, url):
    pg, errors = open_app(browser, url, width=390, height=844)
    pg.click("#create")
    pg.wait_for_selector("#seat-0 .tile")
    overflow = pg.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than the window"
    assert errors == []
    pg.close()
