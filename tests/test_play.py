"""The terminal game: command parsing and a whole hand driven by scripted input."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from agents import play
from agents.play import parse_command
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.state import END_NAMES, ITEMS, OVER
from zhuoji_env.tiles import CODES


def _mask(*actions):
    m = np.zeros(A.NUM_ACTIONS, bool)
    m[list(actions)] = True
    return m


def test_parse_command():
    legal = _mask(A.DISCARD + 4, A.ANGANG + 9, A.HU)
    assert parse_command("5m", legal) == (4, "")
    assert parse_command(" Discard 5M ", legal) == (4, "")
    assert parse_command("angang 1p", legal) == (A.ANGANG + 9, "")
    assert parse_command("hu", legal) == (A.HU, "")
    assert parse_command(str(A.HU), legal) == (A.HU, "")
    for bad, why in [
        ("", "enter an action"),
        ("6m", "not legal"),
        ("pong", "not legal"),
        ("99", "no action number"),
        ("x9", "unknown action"),
        ("discard", "needs a tile"),
        ("discard 0z", "bad tile code"),
        ("hu 5m", "takes no tile"),
        ("a b c", "too many"),
        ("²", "unknown action"),  # a digit to str.isdigit, not to int(): it raised
        ("²m", "bad tile code"),
    ]:
        a, msg = parse_command(bad, legal)
        assert a is None and why in msg, (bad, msg)
        if bad:
            assert "legal: discard 5m, angang 1p, hu" in msg


@pytest.mark.parametrize("preset", ["guiyang", "app"])
def test_a_scripted_player_finishes_a_hand(preset):
    """Answers cycle through hu, pass and every tile code (illegal ones are rejected and asked
    again), which plays any hand to its end; then no more hands."""
    script = itertools.cycle(["nonsense", "hu", "pass", *CODES])
    prompts, out = [], []

    def ask(prompt):
        prompts.append(prompt)
        if "another" in prompt.lower():
            return "n"
        assert len(prompts) < 20_000
        return next(script)

    rc = play.main(["--preset", preset, "--seed", "3", "--seat", "1", "--unicode"], ask, out.append)
    text = "\n".join(out)
    assert rc == 0
    assert "Your options:" in text and "Rejected:" in text
    assert "Hand over:" in text and "Settlement" in text and "Totals:" in text
    assert any("another" in p.lower() for p in prompts)
    assert text.rstrip().endswith("Bye.")


def test_quit_and_help():
    answers = iter(["help", "quit"])
    out = []
    assert (
        play.main(
            ["--seed", "1", "--seat", "0", "--opponents", "random,greedy"],
            lambda p: next(answers),
            out.append,
        )
        == 0
    )
    text = "\n".join(out)
    assert text.count("Your options:") >= 2 and "Bye." in text
    assert "player_1 random" in text and "player_2 greedy" in text and "player_3 random" in text


PAYMENT = re.compile(r"^  player_(\d)(?: \(you\))? -> player_(\d)(?: \(you\))?: (\d+) (\w+)$")
SCORES = re.compile(r"player_(\d)(?: \(you\))? ([+-]\d+)")


def test_printed_settlement_is_the_engines(monkeypatch):
    """Two hands at seat 2: each printed ending, winners, flip, payment, hand score and running
    total is read back from the text and compared with the engine's final state of that hand
    (its ledger array, not the result object the printing is made from); the second hand is
    dealt by the dealer and streak the first one named."""
    dealt = []
    deal = play.core.deal

    def keep_deal(*args, **kwargs):
        st = deal(*args, **kwargs)
        dealt.append(st)
        return st

    monkeypatch.setattr(play.core, "deal", keep_deal)
    script = itertools.cycle(["hu", "pass", *CODES])
    again = iter(["y", "n"])

    def ask(prompt):
        return next(again) if "another" in prompt.lower() else next(script)

    out = []
    assert play.main(["--seed", "5", "--seat", "2"], ask, out.append) == 0
    assert len(dealt) == 2
    ends = [i for i, line in enumerate(out) if line.startswith("Hand over:")]
    assert len(ends) == 2
    totals = np.zeros(4, dtype=np.int64)
    paid_any = False
    for st, at in zip(dealt, ends, strict=True):
        assert st.phase[0] == OVER
        winners = np.flatnonzero(st.winners[0]).tolist()
        head = out[at]
        assert head.startswith(f"Hand over: {END_NAMES[st.end[0]]}, winners: ")
        for w in winners:
            assert f"player_{w}" in head
        if not winners:
            assert "winners: nobody" in head
        flip = int(st.flip[0])
        assert head.endswith(f", flip tile {CODES[flip]}" if flip >= 0 else ", no flip")
        assert out[at + 1] == "Settlement (payer -> payee: amount item):"
        printed, i = [], at + 2
        while PAYMENT.match(out[i]):
            payer, payee, amount, item = PAYMENT.match(out[i]).groups()
            printed.append((int(payer), int(payee), ITEMS.index(item), int(amount)))
            i += 1
        led = st.ledger[0]
        engine = [(int(p), int(q), int(k), int(led[p, q, k])) for p, q, k in np.argwhere(led)]
        assert sorted(printed) == sorted(engine)
        if not engine:
            assert out[i] == "  (no payments)"
            i += 1
        paid_any = paid_any or bool(engine)
        net = led.sum((0, 2)) - led.sum((1, 2))  # received - paid, per seat
        assert out[i].startswith("This hand: ")
        assert {int(s): int(v) for s, v in SCORES.findall(out[i])} == dict(enumerate(net))
        totals += net
        assert out[i + 1].startswith("Totals: ")
        assert {int(s): int(v) for s, v in SCORES.findall(out[i + 1])} == dict(enumerate(totals))
        assert "player_2 (you)" in out[i + 1]
    assert paid_any
    assert dealt[1].dealer[0] == dealt[0].next_dealer[0]
    assert dealt[1].streak[0] == dealt[0].next_streak[0]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--opponents", "random,greedy,rule,random"],
         "--opponents 'random,greedy,rule,random': 4 specs for the 3 other seats; give at most 3"),
        (["--opponents", "random,greedy,rule", "--set", "num_players=3"],
         "3 specs for the 2 other seats; give at most 2"),
        (["--opponents", ""], "--opponents '': no agent spec given"),
        (["--opponents", "rule,,random"], "--opponents 'rule,,random': item 2 is empty"),
        (["--seed", "-1"], "--seed must be a non-negative integer, got -1"),
        (["--set", "num_players=3", "--set", "num_players=3"], "switch 'num_players' is set twice"),
    ],
)  # fmt: skip
def test_bad_options_are_refused_naming_them(capsys, argv, message):
    def ask(prompt):
        raise AssertionError("the game started")

    with pytest.raises(SystemExit) as info:
        play.main(argv, ask, lambda line: None)
    assert info.value.code == 2
    assert message in capsys.readouterr().err
