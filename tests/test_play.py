"""The terminal game: command parsing and a whole hand driven by scripted input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agents import play
from agents.play import parse_command
from zhuoji_env.engine import actions as A
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
    for bad, why in [("", "enter an action"), ("6m", "not legal"), ("pong", "not legal"),
                     ("99", "no action number"), ("x9", "unknown action"),
                     ("discard", "needs a tile"), ("discard 0z", "bad tile code"),
                     ("hu 5m", "takes no tile"), ("a b c", "too many")]:
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
    assert play.main(["--seed", "1", "--seat", "0", "--opponents", "random,greedy"],
                     lambda p: next(answers), out.append) == 0
    text = "\n".join(out)
    assert text.count("Your options:") >= 2 and "Bye." in text
    assert "player_1 random" in text and "player_2 greedy" in text and "player_3 random" in text
