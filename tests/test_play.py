"""The terminal game: command parsing and a whole hand driven by scripted input."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from scenario_helpers import make_wall

from agents import make_agent, play
from agents.base import Agent
from agents.play import parse_command
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.state import AN_KONG, END_NAMES, ITEMS, OVER, RESPONSE, ROB
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import CODES, full_set


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


class _Greedy(Agent):
    """``greedy``'s choice, except where :meth:`override` changes it."""

    name = "scripted"

    def __init__(self, seed):
        super().__init__(seed)
        self.greedy = make_agent("greedy", seed=seed)

    def _act(self, obs, mask):
        return self.override(self.greedy.act(obs, mask), mask)


class _Claimer(_Greedy):
    """Takes a concealed kong, then any claim, where it may."""

    def override(self, acts, mask):
        for first in (A.ANGANG, A.HU, A.KONG, A.PONG):
            rows = np.flatnonzero(mask[:, first : first + (27 if first == A.ANGANG else 1)].any(1))
            picks = mask[rows, first : first + 27].argmax(1) if first == A.ANGANG else 0
            acts[rows] = first + picks
            if rows.size:
                break
        return acts


class _Passer(_Greedy):
    """Pongs and adds kongs where it may and passes every other window (ron and robbing)."""

    def override(self, acts, mask):
        bug = mask[:, A.BUGANG : A.BUGANG + 27]
        rows = np.flatnonzero(bug.any(1))
        acts[rows] = A.BUGANG + bug[rows].argmax(1)
        acts[mask[:, A.PASS]] = A.PASS
        acts[mask[:, A.PONG]] = A.PONG
        return acts


def _told(opponent, hands, seed, dealer=None):
    """Seat 0, passing whenever it may, plays ``hands`` hands against ``opponent(seat)`` in
    seats 1-3, dealt by ``dealer`` (drawn per hand when None): the lines told to it, each with
    the phase it was told in, and every hand's final state."""
    rules = Rules.make("guiyang")
    opponents = {s: opponent(s) for s in (1, 2, 3)}
    rng = np.random.default_rng(seed)
    told, states = [], []
    for _ in range(hands):
        wall = rng.permutation(full_set())[None]
        st = core.deal(rules, wall, int(rng.integers(4)) if dealer is None else dealer, 0)

        def ask(prompt, st=st):
            legal = np.flatnonzero(st.mask[0])
            return str(legal[A.PASS == legal].max(initial=legal[0]))  # pass when it may

        def say(line, st=st):
            told.append((line, int(st.phase[0])))

        play.play_hand(rules, st, 0, opponents, ask, say, np.zeros(4, np.int64))
        states.append(st)
    return told, states


def test_the_others_moves_are_told_as_the_table_sees_them():
    """The move lines showed an opponent's concealed kong with its tile, every pass (who held
    a pair of the discard, or waited on a robbed tile) and every claim at once, before the
    seats asked after it had chosen (RULES.md 3.2)."""
    told, states = _told(_Claimer, 40, seed=0, dealer=0)
    hidden_kongs = sum(int((st.meld[0, 1:] == AN_KONG).sum()) for st in states)
    moves = [(line, phase) for line, phase in told if line.startswith("player_")]
    assert not [m for m in moves if m[0].endswith(": pass")]
    assert not [m for m in moves if "angang" in m[0]]
    assert sum(line.endswith(": concealed kong") for line, _ in moves) == hidden_kongs > 0
    claims = [m for m in moves if re.search(r": (pong|kong|hu)$", m[0])]
    assert claims and all(phase not in (RESPONSE, ROB) for _, phase in claims)


def test_no_pass_and_no_move_of_an_open_window_is_told(monkeypatch):
    """Against opponents that pass their wins and robs, no pass and nothing said in a claim or
    rob window reaches the human (a mutation test found neither pinned above, whose opponents
    claim where they may)."""
    windows, step = [], core.step

    def counted(rules, st, actions, *rest):
        windows.append(int(st.phase[0]))
        return step(rules, st, actions, *rest)

    monkeypatch.setattr(core, "step", counted)
    told, _ = _told(_Passer, 60, seed=11)
    assert windows.count(ROB) > 0 and windows.count(RESPONSE) > 0
    moves = [(line, phase) for line, phase in told if line.startswith("player_")]
    assert not [m for m in moves if m[0].endswith(": pass")]
    assert all(phase not in (RESPONSE, ROB) for _, phase in moves)
    assert [m for m in moves if m[0].endswith(": pong")]


def test_the_end_of_hand_table_names_its_hand_and_ctrl_c_says_bye():
    """The closing table of hand 1 said "hand 2/4"; Ctrl-C at the prompt ended in a traceback."""
    out = []
    answers = itertools.cycle(["hu", "pass", *CODES])

    def ask(prompt):
        return "n" if "another" in prompt.lower() else next(answers)

    argv = ["--seed", "3", "--set", "hands_per_game=4"]
    assert play.main(argv, ask, out.append) == 0
    text = "\n".join(out)
    closing = text[text.rindex("\nZhuoji mahjong") :]  # the table drawn as the hand ended
    assert "hand 1/4" in closing and "hand 2/4" not in text
    assert "Hand over: " in closing and "this hand [" in closing

    def interrupted(prompt):
        raise KeyboardInterrupt

    out.clear()
    assert play.main(["--seed", "3"], interrupted, out.append) == 130
    assert out[-1].strip() == "Bye."


def test_a_rob_is_told_only_after_the_second_robber_chose():
    """A hand-built 抢杠 window that asks two seats: seat 1 adds 2p to its pong, seat 2 robs
    it and the human (seat 0, waiting on 2p too) is asked after seat 2. Seat 2's hu must not
    reach the human before it has chosen (RULES.md 3.2 and 3.3; a mutation test found this
    unpinned, as the random games above seldom open a rob window with two robbers)."""
    robber = "3p4p5m6m7m3s4s5s6m7m8m9s9s"  # 234p 567m 345s 678m 99s with 2p
    hands = {0: robber + "2p", 1: "1m1m4m4m1p3m5p5p8p8p2p2p2s", 2: robber,
             3: "1m1m2m2m3m3m9m9m1p6p7p9p1s"}  # fmt: skip
    rules = Rules.make("guiyang")
    st = core.deal(rules, np.array([make_wall(0, hands, live="7s8s6s2p")]), 0, 0)
    opening = [("discard", "2p"), ("pong", None), ("discard", "2s"), ("discard", "7s"),
               ("discard", "8s"), ("discard", "6s"), ("bugang", "2p")]  # fmt: skip
    for name, tile in opening:
        core.step(rules, st, np.array([A.encode(name, tile)]))
    assert (st.phase[0], st.actor[0]) == (ROB, 2)
    events = []

    def ask(prompt):
        events.append(("asked", int(st.phase[0])))
        assert "hu" in [A.describe(a) for a in np.flatnonzero(st.mask[0])]
        return "pass"

    def say(line):
        events.append((line, int(st.phase[0])))

    opponents = {1: make_agent("greedy", seed=1), 2: _Claimer(2), 3: make_agent("greedy", seed=3)}
    result = play.play_hand(rules, st, 0, opponents, ask, say, np.zeros(4, np.int64))
    assert result["end"] == "qianggang" and result["winners"] == [2]
    asked = events.index(("asked", ROB))
    told = [i for i, (line, _) in enumerate(events) if line == "player_2: hu"]
    assert len(told) == 1 and told[0] > asked and events[told[0]][1] not in (RESPONSE, ROB)
