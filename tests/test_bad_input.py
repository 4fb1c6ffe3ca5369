"""Bad input to numbers, records and replay (issue 11): exact results or clear errors.

Amounts are int64 end to end and every integer switch and the dealer streak are bounded so that
they cannot overflow; a malformed record, its stored result included, is a ``RecordError`` naming
the field, what it holds and what is allowed; the replay CLI reports a bad file and goes on.
"""

from __future__ import annotations

import copy
import importlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from zhuoji_env.engine.game import BatchGame
from zhuoji_env.engine.records import (
    MAX_AMOUNT,
    RecordError,
    ResultMismatch,
    compare,
    parse,
    replay,
)
from zhuoji_env.rules import MAX_BASE_STAKE, MAX_STREAK, MAX_VALUE, Rules

RECORDS = Path(__file__).parent / "data" / "records"
replay_cli = importlib.import_module("zhuoji_env.replay")


def sample(name: str) -> dict:
    return json.loads((RECORDS / name).read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- numbers
def _extreme(preset: str, base_stake: int) -> Rules:
    return Rules.make(
        preset,
        gangkai_bonus=MAX_VALUE,
        chicken_unit=MAX_VALUE,
        chongfeng=MAX_VALUE,
        dou_values=[MAX_VALUE] * 3,
        base_stake=base_stake,
        hands_per_game=4,
        **({} if preset == "app" else {"zimo_bonus": MAX_VALUE}),
    )


def _play(rules: Rules, seed: int, batch: int):
    """Rewards of every step and final scores of ``batch`` matches of random play."""
    game = BatchGame(rules, batch, seed=seed, auto_reset=False, keep_records=True)
    rng = np.random.default_rng(seed)
    rewards, records = [], []
    final = np.zeros((batch, rules.num_players), dtype=object)
    while not game.over.all():
        out = game.step(game.random_actions(rng))
        assert out.rewards.dtype == np.int64 and out.final_scores.dtype == np.int64
        rewards.append(out.rewards.copy())
        records += [rec for _, rec in out.records]
        final[out.match_over] = out.final_scores[out.match_over]
    return np.stack(rewards), final, records


@pytest.mark.parametrize("preset", ["guiyang", "classic", "app"])
def test_switches_at_their_bounds_in_matches(preset):
    """Random matches with every switch at its bound: rewards and match totals are int64 and
    exactly base_stake times those of base_stake 1 (amounts are linear in it)."""
    one, one_final, _ = _play(_extreme(preset, 1), seed=7, batch=8)
    big, big_final, records = _play(_extreme(preset, MAX_BASE_STAKE), seed=7, batch=8)
    assert (big.astype(object) == one.astype(object) * MAX_BASE_STAKE).all()
    assert (big_final == one_final * MAX_BASE_STAKE).all()
    assert (big_final == big.astype(object).sum(0)).all()
    for rec in records[:3]:
        assert compare(rec["result"], replay(rec)) == []


@pytest.mark.parametrize("name", sorted(p.name for p in RECORDS.glob("*.json")))
def test_sample_hands_at_the_bounds_are_exact(name):
    """The twelve sample hands (wins with kongs and chickens, draws, robbed kongs) replayed with
    every switch at its bound: each ledger line is exactly MAX_BASE_STAKE times the line with
    base_stake 1 (far beyond 32 bits after a win), and the result is a valid stored result."""
    rec = sample(name)
    del rec["result"]
    results = []
    for stake in (1, MAX_BASE_STAKE):
        rules = _extreme(rec["rules"]["preset"], stake).replace(**rec["rules"]["overrides"])
        results.append(replay({**rec, "rules": rules.to_record()}))
    small, big = results
    assert big["ledger"] == [[p, q, v * MAX_BASE_STAKE, i] for p, q, v, i in small["ledger"]]
    assert big["deltas"] == [d * MAX_BASE_STAKE for d in small["deltas"]]
    top = max(line[2] for line in big["ledger"])
    assert top <= MAX_AMOUNT
    if big["end"] != "draw":
        assert top > 2**31
    parse({**rec, "rules": rules.to_record(), "result": big})


@pytest.mark.parametrize(
    "switch, value",
    [
        ("chicken_unit", 1_500_000_000),
        ("base_stake", 1_000_000_000),
        ("dou_values", [2, 3, 10**10]),
        ("zimo_bonus", 10**12),
        ("gangkai_bonus", MAX_VALUE + 1),
        ("chongfeng", MAX_VALUE + 1),
        ("hands_per_game", 1001),
    ],
)
def test_switch_above_its_bound_refused(switch, value):
    with pytest.raises(ValueError, match=f"switch '{switch}': bad value .*allowed .*1000") as e:
        BatchGame("guiyang", 1, seed=0, **{switch: value})
    assert "integer" in str(e.value)


@pytest.mark.parametrize("streak", [32767, 65538, MAX_STREAK])
def test_big_dealer_streak_is_exact(streak):
    """guiyang-2-ron: dealer 1 (streak 2) and seat 3 win on seat 2's discard. Seat 2's hu payment
    to the dealer carries +k, and the dealer's streak grows by one."""
    rec = sample("guiyang-2-ron.json")
    rec["dealer_streak"] = streak
    got = replay(rec, check=False)  # the stored result is the old streak's
    assert got["next_streak"] == streak + 1
    shift = streak - 2
    assert [2, 1, 12 + shift, "hu"] in got["ledger"]
    assert got["deltas"] == [17, 9 + shift, -33 - shift, 7]
    rec["result"] = got
    assert parse(rec)[3] == streak


def test_a_record_whose_result_differs_from_its_replay_is_reported():
    """RULES.md 10: a replay reports any difference from the stored result. ``replay`` (and
    ``zhuoji_env.replay``) returned the replayed result and said nothing."""
    import zhuoji_env

    rec = sample("guiyang-2-ron.json")
    good = replay(rec)
    rec["result"]["deltas"] = [0, 0, 0, 0]
    rec["result"]["end"] = "zimo"
    for call in (replay, zhuoji_env.replay):
        with pytest.raises(ResultMismatch, match="end: record has 'zimo', replay gives 'ron'") as e:
            call(rec)
        assert e.value.differences == compare(rec["result"], good) and len(e.value.differences) == 2
        assert call(rec, check=False) == good
    with pytest.raises(TypeError, match="check must be True or False"):
        replay(rec, check="no")


@pytest.mark.parametrize("tile", [12, None, 1.0, ["5m"]])
def test_an_actions_tile_must_be_a_code(tile):
    """RULES.md 1 and 10: a tile is written as a code such as ``5m``. A number (12) and a null
    third element replayed here and would fail elsewhere."""
    rec = sample("guiyang-2-ron.json")
    seat, name = rec["actions"][0][:2]
    rec["actions"][0] = [seat, name, tile]
    with pytest.raises(RecordError, match=r"action 0 \(seat \d\): bad tile .*such as '5m'"):
        replay(rec)


@pytest.mark.parametrize("streak", [MAX_STREAK + 1, 2**70, -1, 1.0, True, "3"])
def test_dealer_streak_out_of_range_refused(streak):
    rec = sample("guiyang-2-ron.json")
    rec["dealer_streak"] = streak
    with pytest.raises(RecordError, match=rf"bad dealer_streak .*0-{MAX_STREAK}"):
        replay(rec)


def test_record_rules_above_bound_refused():
    rec = sample("guiyang-1-zimo.json")
    rec["rules"] = {"preset": "guiyang", "overrides": {"chicken_unit": 1_500_000_000}}
    with pytest.raises(RecordError, match="bad rules: switch 'chicken_unit'.*1-1000000"):
        replay(rec)


@pytest.mark.parametrize(
    "rules, message",
    [
        (None, r"expected an object \{'preset': NAME, 'overrides': .*\(RULES.md 10\), got None"),
        ("app", r"expected an object \{'preset': NAME, .*got 'app'"),
        (["app"], r"expected an object \{'preset': NAME, .*got \['app'\]"),
        ({"overrides": {}}, r"no 'preset' in \{'overrides': \{\}\}: expected an object"),
        ({"preset": "app", "overrides": 0}, r"'overrides' 0 is not an object: expected"),
        ({"preset": "app", "overrides": []}, r"'overrides' \[\] is not an object: expected"),
        ({"preset": "app", "overrides": ""}, r"'overrides' '' is not an object: expected"),
        ({"preset": "app", "overrides": None}, r"'overrides' None is not an object: expected"),
        ({"preset": "app", "overrides": {"preset": "guiyang"}}, "'preset' is not a switch"),
    ],
    ids=[
        "null",
        "name",
        "list",
        "no-preset",
        "zero",
        "empty-list",
        "empty-string",
        "null-over",
        "preset-over",
    ],
)
def test_record_rules_of_another_shape_refused(rules, message):
    """RULES.md 10's rules object or nothing: app-2-ron.json with "rules": null or "overrides":
    0 replayed silently under plain guiyang (to other deltas), and "preset" among the overrides
    raised a TypeError."""
    rec = sample("app-2-ron.json")
    rec["rules"] = rules
    with pytest.raises(RecordError, match="^bad rules: " + message):
        parse(rec)


def test_record_rules_may_leave_out_overrides_or_be_absent():
    rec = sample("app-2-ron.json")
    assert compare(rec["result"], replay({**rec, "rules": {"preset": "app"}})) == []
    assert parse({k: v for k, v in rec.items() if k != "rules"})[0] == Rules.make("guiyang")


def test_replay_cli_preset_among_overrides_is_status_2(tmp_path, capsys):
    """It was a traceback and exit status 1 (the status of a differing result)."""
    rec = sample("app-2-ron.json")
    rec["rules"] = {"preset": "app", "overrides": {"preset": "guiyang"}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(rec), encoding="utf-8")
    assert replay_cli.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: error: bad rules: 'preset' is not a switch" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- stored results
def _set(path, value):
    """A change to a record: set ``rec[path...]`` to ``value``."""

    def change(rec):
        target = rec
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _append_line(line):
    return lambda rec: rec["result"]["ledger"].append(line)


def _drop(key):
    return lambda rec: rec["result"].pop(key)


BAD_RESULTS = [
    ("result a list", _set(["result"], [1, 2]), "bad result: expected an object, got list"),
    ("result a string", _set(["result"], "zimo"), "expected an object, got str"),
    ("ledger a string", _set(["result", "ledger"], "1 0 3 hu"), "'ledger' '1 0 3 hu'"),
    ("line of two fields", _set(["result", "ledger", 0], [1, 0]), r"\[payer, payee, amount, item"),
    ("line not a list", _set(["result", "ledger", 0], {"a": 1}), "expected \\[payer"),
    ("string amount", _set(["result", "ledger", 0, 2], "3"), "amount must be an integer 1-"),
    ("float amount", _set(["result", "ledger", 0, 2], 3.0), "amount must be an integer 1-"),
    ("zero amount", _append_line([1, 0, 0, "bao_ji"]), "amount must be an integer 1-"),
    ("negative amount", _set(["result", "ledger", 0, 2], -3), "amount must be an integer 1-"),
    ("huge amount", _set(["result", "ledger", 0, 2], 2**60), "amount must be an integer 1-"),
    ("unknown item", _append_line([1, 0, 3, "tip"]), "unknown item 'tip', allowed \\['hu'"),
    ("item a list", _set(["result", "ledger", 0, 3], ["hu"]), "unknown item \\['hu'\\]"),
    ("pays itself", _set(["result", "ledger", 0, 1], 1), "two different seats 0-3"),
    ("payer seat 4", _set(["result", "ledger", 0, 0], 4), "two different seats 0-3"),
    ("second line", _append_line([1, 0, 1, "hu"]), "a second line for 1->0 hu"),
    ("unknown key", _set(["result", "score"], 3), "unknown key 'score'"),
    ("missing key", _drop("flip"), "no 'flip'"),
    ("end unknown", _set(["result", "end"], "win"), "'end' 'win': expected one of"),
    ("end a list", _set(["result", "end"], ["zimo"]), "'end' \\['zimo'\\]"),
    ("winners unsorted", _set(["result", "winners"], [3, 1]), "ascending"),
    ("winners twice", _set(["result", "winners"], [0, 0]), "distinct seats"),
    ("winners a seat", _set(["result", "winners"], 0), "'winners' 0"),
    ("flip bad code", _set(["result", "flip"], "0m"), "'flip': bad tile code '0m'"),
    ("next_dealer 4", _set(["result", "next_dealer"], 4), "'next_dealer' 4: expected a seat 0-3"),
    ("next_streak bool", _set(["result", "next_streak"], True), "'next_streak' True"),
    ("next_streak -1", _set(["result", "next_streak"], -1), "'next_streak' -1"),
    ("deltas short", _set(["result", "deltas"], [19, -7, -6]), "list of 4 integers"),
    ("deltas string", _set(["result", "deltas", 0], "19"), "list of 4 integers"),
]


@pytest.mark.parametrize("wrong, right", [("rule", "rules"), ("dealer_steak", "dealer_streak")])
def test_a_misspelt_record_key_is_refused_not_defaulted(wrong, right):
    """A misspelt key used to leave its field at the default: classic-1-zimo.json with "rule"
    replayed under guiyang, deltas [19, -7, -6, -6] for the recorded [60, -20, -20, -20]."""
    rec = sample("classic-1-zimo.json")
    rec[wrong] = rec.pop(right)
    del rec["result"]  # no stored result to compare with: the key alone must be caught
    with pytest.raises(RecordError, match=f"unknown key {wrong!r}: a record holds \\['format'"):
        replay(rec)


def test_a_record_keeps_its_annotations_and_refuses_other_keys():
    rec = sample("guiyang-1-zimo.json")
    n = len(rec["actions"])
    replay({**rec, "probs": [None] * n, "values": [None] * n, "agents": ["a", "b", "c", "d"]})
    with pytest.raises(RecordError, match="unknown key 'comment'"):
        replay({**rec, "comment": "hi"})


@pytest.mark.parametrize(
    "change, message", [b[1:] for b in BAD_RESULTS], ids=[b[0] for b in BAD_RESULTS]
)
def test_malformed_result_refused(change, message):
    rec = sample("guiyang-1-zimo.json")
    change(rec)
    with pytest.raises(RecordError, match=message):
        replay(rec)


def test_valid_sample_results_pass():
    for path in sorted(RECORDS.glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        parse(rec)
        assert compare(rec["result"], replay(rec)) == []


# --------------------------------------------------------------------------- actions
@pytest.mark.parametrize(
    "entry, message",
    [
        ([1, ["discard"]], r"action 0 \(seat 1\): bad action \['discard'\], expected a name"),
        ([1, ["discard", "9s"]], r"bad action \['discard', '9s'\]"),
        ([1, None], "bad action None"),
        ([1, "discard", ["9s"]], r"action 0 \(seat 1\): bad tile \['9s'\], expected a code"),
        ([1, "discard", True], "bad tile True"),
        ([1, "discard", 9.0], "bad tile 9.0"),
        ([1, "throw", "9s"], "unknown action 'throw'"),
        (["discard"], r"action 0: expected \[seat, action\]"),
    ],
)
def test_malformed_action_refused(entry, message):
    rec = sample("guiyang-1-zimo.json")
    rec["actions"][0] = entry
    with pytest.raises(RecordError, match=message):
        replay(rec)


# --------------------------------------------------------------------------- the replay CLI
def test_replay_cli_goes_on_after_a_bad_file(tmp_path, capsys):
    """A non-UTF-8 file and a malformed result are reported per file; the good files still
    replay, and the exit status at the end is 2."""
    latin = tmp_path / "latin1.json"
    latin.write_bytes('{"dealer": "é"}'.encode("latin-1"))
    bad = sample("guiyang-1-zimo.json")
    bad["result"]["ledger"][0] = [1, 0]
    bad_path = tmp_path / "bad-result.json"
    bad_path.write_text(json.dumps(bad), encoding="utf-8")
    good = [RECORDS / "guiyang-1-zimo.json", RECORDS / "app-2-ron.json"]
    files = [latin, good[0], bad_path, good[1], tmp_path / "missing.json", tmp_path]
    assert replay_cli.main([str(f) for f in files]) == 2
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert [json.loads(line) for line in lines] == [replay(sample(f.name)) for f in good]
    assert f"{latin}: error: not UTF-8 text (byte 0xe9 at offset 12)" in err
    assert "a record is JSON in UTF-8" in err
    assert f"{bad_path}: error: bad result ledger line 0 [1, 0]: expected [payer" in err
    assert f"{good[0]}: result matches the record" in err
    assert f"{good[1]}: result matches the record" in err
    assert f"{tmp_path / 'missing.json'}: error: No such file or directory" in err
    assert f"{tmp_path}: error: Is a directory" in err
    assert "Traceback" not in err


def test_replay_cli_difference_is_status_1(tmp_path, capsys):
    rec = sample("guiyang-3-draw-chajiao.json")
    rec["result"]["ledger"][0][2] = 2
    path = tmp_path / "r.json"
    path.write_text(json.dumps(rec), encoding="utf-8")
    assert replay_cli.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}: differs: ledger 1->0 chajiao: record has 2, replay gives 1" in err


def test_replay_does_not_change_the_record():
    rec = sample("app-4-qianggang.json")
    before = copy.deepcopy(rec)
    replay(rec)
    assert rec == before


# --------------------------------------------------------------------------- core Python APIs
def test_an_empty_wall_is_a_record_error_and_the_cli_goes_on(tmp_path, capsys):
    """``kind_counts`` of no tiles raised numpy's reshape error: a traceback, exit 1, and the
    next file never replayed."""
    with pytest.raises(RecordError, match="bad wall: 0 tiles, expected 108"):
        replay({"wall": "", "dealer": 0, "actions": []})
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"wall": "", "dealer": 0, "actions": []}))
    good = Path(__file__).parent / "data" / "records" / "guiyang-2-ron.json"
    assert replay_cli.main([str(empty), str(good)]) == 2
    out = capsys.readouterr()
    assert "bad wall: 0 tiles" in out.err and "guiyang-2-ron.json" in out.out + out.err


def test_state_take_and_legal_names_need_game_indices():
    """``take(1)`` dropped the batch axis of every field (a "State" of 108 games of 27 seats);
    ``legal_names(st, -1)`` read the last game, ``True`` game 1."""
    from zhuoji_env.engine import core

    st = BatchGame("guiyang", 2, seed=0).state
    for bad in (1, [-1], [2], [True, False], [1.0], [[0]]):
        with pytest.raises(ValueError, match="game ind"):
            st.take(bad)
    assert st.take([1, 1]).batch_size == 2  # repeats are a take's business
    for bad in (-1, True, 1.0, 2):
        with pytest.raises(ValueError, match="game ind"):
            core.legal_names(st, bad)
    assert core.legal_names(st, np.int64(1)) == core.legal_names(st, 1)


def test_deal_refuses_what_it_truncated():
    """A float wall failed deep in numpy; dealer 1.7 dealt seat 1, True seat 1, streak 2.9 a
    streak of 2; a preset name met an AttributeError."""
    from zhuoji_env.engine import core
    from zhuoji_env.tiles import full_set

    rules = Rules.make("guiyang")
    wall = np.random.default_rng(0).permutation(full_set())[None]
    for walls, dealer, streak, said in [
        (wall.astype(float), 0, 0, "walls must hold integer kinds 0-26, got dtype float64"),
        (np.zeros((0, 108), int), 0, 0, "with B >= 1"),
        (wall, 1.7, 0, "dealer must be a seat 0-3 and streak an integer >= 0"),
        (wall, True, 0, "dealer must be a seat 0-3 and streak an integer >= 0"),
        (wall, 0, 2.9, "dealer must be a seat 0-3 and streak an integer >= 0"),
        (wall, 0, "a", "dealer must be a seat 0-3 and streak an integer >= 0"),
    ]:
        with pytest.raises(ValueError, match=re.escape(said)):
            core.deal(rules, walls, dealer, streak)
    with pytest.raises(TypeError, match="deal takes Rules"):
        core.deal("guiyang", wall, 0)
    assert core.deal(rules, wall, np.int64(1), 2).dealer.tolist() == [1]


def test_hand_checks_refuse_bad_meld_counts_and_flags():
    """``is_win(hand, 0.5)`` or ``'0'`` was silently False and ``waits(hand, -1)`` empty;
    ``seven_pairs="no"`` counted as true; ``change=1.0`` failed deep in numpy."""
    from zhuoji_env import hands
    from zhuoji_env.tiles import to_counts

    pairs = to_counts("1m1m3m3m5m5m7m7m9m9m1p1p5p5p")
    assert hands.is_win(pairs, 0)
    for melds in (0.5, "0", -1, 5, None, True):
        with pytest.raises(ValueError, match="melds must be integers 0-4"):
            hands.is_win(pairs, melds)
        with pytest.raises(ValueError, match="melds must be integers 0-4"):
            hands.waits(pairs[None, :].repeat(1, 0) - np.eye(27, dtype=np.int8)[0], melds)
    with pytest.raises(TypeError, match="seven_pairs must be True or False, got 'no'"):
        hands.shanten(pairs, seven_pairs="no")
    for change in (1.0, True):
        with pytest.raises(ValueError, match="change must be \\+1"):
            hands.shanten_neighbours(pairs - np.eye(27, dtype=np.int8)[0], change)


def test_meld_tiles_and_kinds_are_checked_where_they_were_truncated():
    """``is_ready`` with 2.5 (or -5) copies of the wait in melds said ready; ``hand_value``
    truncated a float ``meld_tiles``; ``suit_of(30)`` gave 3 and ``next_kind(27)`` 28;
    ``parse_tiles`` read a dict's keys."""
    from zhuoji_env import hands, tiles

    ready = tiles.to_counts("1m2m3m4m5m6m7m8m9m1p1p1p5s")
    assert hands.is_ready(ready, np.zeros(27, np.int8))
    for bad in (np.eye(27)[22] * 2.5, -5 * np.eye(27, dtype=int)[22], np.ones(27, bool)):
        with pytest.raises(ValueError, match="^meld_tiles: tile counts must be"):
            hands.is_ready(ready, bad)
    won = ready + np.eye(27, dtype=np.int8)[22]
    with pytest.raises(ValueError, match="^meld_tiles: "):
        hands.hand_value(won, np.full(27, 0.4), 0, Rules.make("guiyang").pattern_table)
    for f in (tiles.suit_of, tiles.next_kind, tiles.prev_kind):
        for bad in (27, -1, 4.5, True, np.array([3, 30])):
            with pytest.raises(ValueError, match="tile kinds must be integers 0-26"):
                f(bad)
    assert tiles.next_kind(8) == 0 and tiles.prev_kind(np.int8(9)) == 17
    assert tiles.suit_of(np.array([0, 9, 26])).tolist() == [0, 1, 2]
    for bad in ({"1m": 1}, {"1m"}, b"1m", 5, None):
        with pytest.raises(TypeError, match="tiles must be a string of codes"):
            tiles.parse_tiles(bad)
