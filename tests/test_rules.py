"""The rules configuration: presets, overrides, validation (RULES.md 9)."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from zhuoji_env.rules import (
    MAX_BASE_STAKE,
    MAX_HANDS_PER_GAME,
    MAX_VALUE,
    PRESET_NAMES,
    SWITCHES,
    Rules,
    parse_switches,
)

# RULES.md section 9, written out switch by switch: (guiyang, classic, app).
TABLE = {
    "num_players": (4, 4, 4),
    "units": ("bei", "fan", "bei_dandiao"),
    "zimo_bonus": (1, 0, "plain_only"),
    "gangkai_bonus": (1, 10, 1),
    "rerpao": ("plus_one", "transfer", "plus_one_burn"),
    "qianggang": ("pay_for_all", "pay_for_all", "plus_nine_burn"),
    "dou_values": ((2, 3, 1), (20, 10, 10), (3, 3, 3)),
    "jian_dou_san": (False, False, True),
    "ready_required": (True, False, True),
    "chicken_unit": (1, 10, 1),
    "chicken_scope": ("all", "hand", "yaoji_river"),
    "flip_mode": ("up", "up", "up"),
    "chongfeng": (2, 0, 3),
    "zeren": ("on", "off", "reversible"),
    "chicken_kong_60": (False, True, False),
    "bao_ji": (False, False, True),
    "pass_win": ("penalty", "penalty", "forbid"),
    "baoting": (False, False, True),
    "draw_dealer": ("stay", "classic", "stay"),
    "dealer_streak_bonus": (True, False, False),
    "hands_per_game": (1, 1, 1),
    "base_stake": (1, 1, 1),
}
PRESETS = ("guiyang", "classic", "app")

# A legal non-default value for every switch (differs from the guiyang value).
OTHER_VALUE = {
    "num_players": 3,
    "units": "fan",
    "zimo_bonus": 2,
    "gangkai_bonus": 0,
    "rerpao": "transfer",
    "qianggang": "plus_nine_burn",
    "dou_values": (5, 6, 7),
    "jian_dou_san": True,
    "ready_required": False,
    "chicken_unit": 3,
    "chicken_scope": "hand",
    "flip_mode": "up_down",
    "chongfeng": 0,
    "zeren": "reversible",
    "chicken_kong_60": True,
    "bao_ji": True,
    "pass_win": "forbid",
    "baoting": True,
    "draw_dealer": "classic",
    "dealer_streak_bonus": False,
    "hands_per_game": 8,
    "base_stake": 100,
}

BAD_VALUES = [
    ("num_players", 5),
    ("num_players", 2),
    ("num_players", "4"),
    ("num_players", True),
    ("units", "x"),
    ("units", None),
    ("zimo_bonus", -1),
    ("zimo_bonus", "x"),
    ("zimo_bonus", 1.5),
    ("zimo_bonus", True),
    ("zimo_bonus", MAX_VALUE + 1),
    ("gangkai_bonus", -1),
    ("gangkai_bonus", "1"),
    ("gangkai_bonus", 1.0),
    ("gangkai_bonus", MAX_VALUE + 1),
    ("rerpao", "x"),
    ("qianggang", "x"),
    ("dou_values", [1, 2]),
    ("dou_values", [1, 2, 3, 4]),
    ("dou_values", [1, 2, -1]),
    ("dou_values", [1, 2, 1.5]),
    ("dou_values", [1, 2, True]),
    ("dou_values", [1, 2, 10**10]),
    ("dou_values", 3),
    ("dou_values", "123"),
    ("jian_dou_san", 1),
    ("jian_dou_san", "true"),
    ("ready_required", 0),
    ("ready_required", None),
    ("chicken_unit", 0),
    ("chicken_unit", -1),
    ("chicken_unit", 1.0),
    ("chicken_unit", 1_500_000_000),
    ("chicken_scope", "x"),
    ("flip_mode", "down"),
    ("chongfeng", -1),
    ("chongfeng", "2"),
    ("chongfeng", MAX_VALUE + 1),
    ("zeren", "x"),
    ("zeren", True),
    ("chicken_kong_60", 1),
    ("bao_ji", "no"),
    ("pass_win", "x"),
    ("baoting", 1),
    ("draw_dealer", "x"),
    ("dealer_streak_bonus", 1),
    ("hands_per_game", 0),
    ("hands_per_game", True),
    ("hands_per_game", MAX_HANDS_PER_GAME + 1),
    ("base_stake", 0),
    ("base_stake", 2.0),
    ("base_stake", 10**9),
]


def test_switch_names_are_the_table():
    assert set(SWITCHES) == set(TABLE)
    assert len(SWITCHES) == len(TABLE) == 22
    assert tuple(PRESET_NAMES) == PRESETS


@pytest.mark.parametrize("switch", sorted(TABLE))
@pytest.mark.parametrize("i, preset", list(enumerate(PRESETS)))
def test_preset_values(i, preset, switch):
    r = Rules.make(preset)
    assert r.preset == preset
    expected = TABLE[switch][i]
    got = getattr(r, switch)
    assert got == expected
    assert type(got) is type(expected)


def test_default_is_guiyang():
    assert Rules.make() == Rules.make("guiyang") == Rules() == Rules.from_preset()
    assert Rules.make(None).preset == "guiyang"


def test_derived_values():
    g, c, a = (Rules.make(p) for p in PRESETS)
    assert g.kong_values == (2, 3, 1)
    assert c.kong_values == (20, 10, 10)
    assert a.kong_values == (3, 3, 3)
    assert Rules.make("guiyang", jian_dou_san=True).kong_values == (3, 3, 3)
    assert Rules.make("classic", jian_dou_san=True).kong_values == (3, 3, 3)
    assert g.baoting_bonus == (20, 10)
    assert c.baoting_bonus == (200, 100)
    assert a.baoting_bonus == (20, 10)
    assert Rules.make("guiyang", units="fan").baoting_bonus == (200, 100)


def test_pattern_tables():
    assert Rules.make("guiyang").pattern_table == {
        "pinghu": 1,
        "daduizi": 5,
        "qidui": 10,
        "longqidui": 20,
        "flush": 10,
        "dandiao": 0,
    }
    assert Rules.make("classic").pattern_table == {
        "pinghu": 10,
        "daduizi": 30,
        "qidui": 40,
        "longqidui": 50,
        "flush": 50,
        "dandiao": 0,
    }
    assert Rules.make("app").pattern_table == {
        "pinghu": 1,
        "daduizi": 5,
        "qidui": 10,
        "longqidui": 20,
        "flush": 10,
        "dandiao": 10,
    }


# ------------------------------------------------------------------------ construction
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("switch", sorted(OTHER_VALUE))
def test_override_each_switch(preset, switch):
    value = OTHER_VALUE[switch]
    ways = [
        Rules.make(preset, **{switch: value}),
        Rules.from_preset(preset, **{switch: value}),
        Rules.make({"preset": preset, "overrides": {switch: value}}),
        Rules.make(Rules.make(preset), **{switch: value}),
        Rules.make(preset).replace(**{switch: value}),
    ]
    for r in ways:
        assert r.preset == preset
        assert getattr(r, switch) == value
        for other in TABLE:
            if other != switch:
                assert getattr(r, other) == TABLE[other][PRESETS.index(preset)], other
    assert len(set(ways)) == 1


def test_dou_values_list_becomes_tuple():
    r = Rules.make("guiyang", dou_values=[4, 5, 6])
    assert r.dou_values == (4, 5, 6)
    assert isinstance(r.dou_values, tuple)
    assert r.kong_values == (4, 5, 6)
    assert r.to_record() == {"preset": "guiyang", "overrides": {"dou_values": [4, 5, 6]}}


def test_from_mapping():
    r = Rules.make({"preset": "classic", "overrides": {"flip_mode": "up_down", "num_players": 3}})
    assert (r.preset, r.flip_mode, r.num_players, r.units) == ("classic", "up_down", 3, "fan")
    assert Rules.make({"preset": "app"}) == Rules.make("app")
    assert Rules.make({"preset": "app", "overrides": None}) == Rules.make("app")
    assert Rules.make({}) == Rules.make("guiyang")
    assert Rules.make({"overrides": {"base_stake": 5}}).base_stake == 5


def test_mapping_plus_keywords():
    r = Rules.make({"preset": "app", "overrides": {"chongfeng": 7, "baoting": False}}, chongfeng=9)
    assert r.chongfeng == 9
    assert r.baoting is False
    assert r.preset == "app"


def test_make_from_rules_object():
    base = Rules.make("classic", flip_mode="up_down")
    assert Rules.make(base) is base
    r = Rules.make(base, base_stake=3)
    assert r.preset == "classic"
    assert r.flip_mode == "up_down"
    assert r.base_stake == 3
    assert base.base_stake == 1  # unchanged
    r2 = r.replace(flip_mode="up")
    assert r2.flip_mode == "up"
    assert r2.base_stake == 3


def test_equality_and_hash():
    assert Rules.make("guiyang", units="fan") == Rules.make("guiyang", units="fan")
    assert Rules.make("guiyang") != Rules.make("classic")
    assert Rules.make("guiyang") != Rules.make("guiyang", base_stake=2)
    assert hash(Rules.make("app")) == hash(Rules.make("app"))


# ------------------------------------------------------------------------ records
@pytest.mark.parametrize(
    "spec",
    [
        "guiyang",
        "classic",
        "app",
        {"preset": "guiyang", "overrides": {"flip_mode": "up_down"}},
        {"preset": "classic", "overrides": {"dou_values": [1, 2, 3], "num_players": 3}},
        {"preset": "app", "overrides": {"zimo_bonus": 4, "baoting": False, "zeren": "off"}},
        {"preset": "guiyang", "overrides": {k: v for k, v in OTHER_VALUE.items()}},
    ],
)
def test_record_round_trip(spec):
    r = Rules.make(spec)
    rec = r.to_record()
    assert set(rec) == {"preset", "overrides"}
    assert rec["preset"] == r.preset
    # JSON-serialisable and stable through JSON
    again = Rules.make(json.loads(json.dumps(rec)))
    assert again == r
    assert again.to_record() == rec
    for k, v in rec["overrides"].items():
        got = getattr(again, k)
        assert (list(got) if isinstance(got, tuple) else got) == v
    if isinstance(spec, dict):
        assert rec == json.loads(json.dumps(spec))


def test_record_of_preset_has_no_overrides():
    for p in PRESETS:
        assert Rules.make(p).to_record() == {"preset": p, "overrides": {}}


def test_record_accumulates_overrides():
    r = Rules.make("app", flip_mode="up_down").replace(base_stake=2)
    assert r.to_record() == {
        "preset": "app",
        "overrides": {"flip_mode": "up_down", "base_stake": 2},
    }


# ------------------------------------------------------------------------ validation
@pytest.mark.parametrize("switch, value", BAD_VALUES, ids=[f"{s}={v!r}" for s, v in BAD_VALUES])
def test_bad_value_rejected(switch, value):
    for make in (
        lambda: Rules.make("guiyang", **{switch: value}),
        lambda: Rules.make({"preset": "classic", "overrides": {switch: value}}),
        lambda: Rules.make(Rules.make("app"), **{switch: value}),
        lambda: Rules(**{switch: value}),
    ):
        with pytest.raises(
            ValueError, match=rf"^switch '{switch}': bad value {re.escape(repr(value))}, allowed "
        ):
            make()


def test_every_switch_has_a_bad_value_case():
    assert {s for s, _ in BAD_VALUES} == set(SWITCHES)


def test_zimo_bonus_plain_only_and_ints():
    assert Rules.make("guiyang", zimo_bonus="plain_only").zimo_bonus == "plain_only"
    assert Rules.make("app", zimo_bonus=0).zimo_bonus == 0
    assert Rules.make("app", zimo_bonus=7).zimo_bonus == 7


@pytest.mark.parametrize("bad", ["foo", "Guiyang", "", "tianjin"])
def test_unknown_switch_rejected(bad):
    for make in (
        lambda: Rules.make("guiyang", **{bad: 1}),
        lambda: Rules.make({"preset": "guiyang", "overrides": {bad: 1}}),
        lambda: Rules.make(Rules.make("app"), **{bad: 1}),
    ):
        with pytest.raises(
            ValueError, match=rf"^unknown switch {re.escape(repr(bad))}: allowed switches \["
        ) as e:
            make()
        msg = str(e.value)
        for name in SWITCHES:
            assert name in msg


@pytest.mark.parametrize("bad", ["foo", "Guiyang", "", "sichuan"])
def test_unknown_preset_rejected(bad):
    for make in (
        lambda: Rules.make(bad),
        lambda: Rules.from_preset(bad),
        lambda: Rules.make({"preset": bad}),
        lambda: Rules(preset=bad),
    ):
        with pytest.raises(
            ValueError, match=rf"^unknown preset {re.escape(repr(bad))}: allowed \["
        ) as e:
            make()
        msg = str(e.value)
        for name in PRESETS:
            assert name in msg


def test_bad_spec_rejected():
    kinds = r"rules must be a preset name, a \{'preset', 'overrides'\} object or Rules, got "
    with pytest.raises(ValueError, match=kinds + "int$"):
        Rules.make(5)
    with pytest.raises(ValueError, match=kinds + "list$"):
        Rules.make(["guiyang"])
    with pytest.raises(
        ValueError, match="rules object has unknown key 'extra': allowed 'preset' and 'overrides'"
    ):
        Rules.make({"preset": "guiyang", "extra": 1})
    with pytest.raises(ValueError, match=r"rules 'overrides' must be an object, got \[1, 2\]"):
        Rules.make({"preset": "guiyang", "overrides": [1, 2]})


PRESET_NOT_A_SWITCH = r"^'preset' is not a switch and cannot be overridden: give the preset as "


@pytest.mark.parametrize(
    "make",
    [
        lambda: Rules.make({"preset": "app", "overrides": {"preset": "guiyang"}}),
        lambda: Rules.make({"overrides": {"preset": "app"}}),
        lambda: Rules.make("app", preset="classic"),
        lambda: Rules.make(Rules.make("app"), preset="classic"),
        lambda: Rules.make("app").replace(preset="classic"),
    ],
    ids=["in-overrides", "overrides-only", "keyword", "keyword-on-rules", "replace"],
)
def test_preset_as_an_override_is_a_value_error(make):
    """'preset' among the switches was a raw TypeError (two values for from_preset's preset)."""
    with pytest.raises(ValueError, match=PRESET_NOT_A_SWITCH):
        make()


@pytest.mark.parametrize("overrides", [0, [], "", "num_players=3", 1.5])
def test_overrides_that_are_not_an_object_are_refused(overrides):
    """Falsy non-objects (0, [], "") were read as no overrides."""
    with pytest.raises(ValueError, match=r"^rules 'overrides' must be an object, got "):
        Rules.make({"preset": "app", "overrides": overrides})


def test_a_non_string_switch_name_is_named():
    with pytest.raises(ValueError, match=r"^unknown switch 1: allowed switches \['num_players'"):
        Rules.make({"preset": "app", "overrides": {1: 2}})


# ------------------------------------------------------------------------ frozen
@pytest.mark.parametrize("switch", ["units", "num_players", "preset", "dou_values"])
def test_frozen(switch):
    r = Rules.make("guiyang")
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{switch}'"):
        setattr(r, switch, OTHER_VALUE.get(switch, "classic"))
    assert r == Rules.make("guiyang")


def test_direct_construction_round_trips():
    r = Rules(units="fan", base_stake=2)
    assert Rules.make(r.to_record()) == r


@pytest.mark.parametrize(
    "switch, value", [("num_players", 3.0), ("num_players", True), ("units", 1), ("zeren", None)]
)
def test_choice_switches_need_the_exact_type(switch, value):
    with pytest.raises(ValueError, match=f"switch '{switch}'"):
        Rules.make("guiyang", **{switch: value})


# The documented bounds (rules module): the bound itself is allowed, one above it is not, and the
# message names the range.
BOUNDS = {
    "zimo_bonus": (MAX_VALUE, f"an integer 0-{MAX_VALUE} or 'plain_only'"),
    "gangkai_bonus": (MAX_VALUE, f"an integer 0-{MAX_VALUE}"),
    "chicken_unit": (MAX_VALUE, f"an integer 1-{MAX_VALUE}"),
    "chongfeng": (MAX_VALUE, f"an integer 0-{MAX_VALUE}"),
    "hands_per_game": (MAX_HANDS_PER_GAME, f"an integer 1-{MAX_HANDS_PER_GAME}"),
    "base_stake": (MAX_BASE_STAKE, f"an integer 1-{MAX_BASE_STAKE}"),
}


@pytest.mark.parametrize("switch", sorted(BOUNDS))
def test_integer_switch_bounds(switch):
    high, allowed = BOUNDS[switch]
    assert getattr(Rules.make(**{switch: high}), switch) == high
    with pytest.raises(ValueError) as e:
        Rules.make(**{switch: high + 1})
    assert str(e.value) == f"switch {switch!r}: bad value {high + 1}, allowed {allowed}"


def test_dou_values_bounds():
    assert Rules.make(dou_values=[MAX_VALUE, 0, MAX_VALUE]).dou_values == (MAX_VALUE, 0, MAX_VALUE)
    with pytest.raises(ValueError, match=rf"allowed a list of three integers 0-{MAX_VALUE} "):
        Rules.make(dou_values=[0, MAX_VALUE + 1, 0])


def test_a_switch_set_twice_is_refused_naming_it():
    assert parse_switches(["num_players=3", "flip_mode=up_down"]) == {
        "num_players": 3,
        "flip_mode": "up_down",
    }
    for items in (["num_players=3", "num_players=4"], ["num_players=3", " num_players =3"]):
        with pytest.raises(ValueError, match=r"^switch 'num_players' is set twice \('num_"):
            parse_switches(items)


def test_numpy_scalars_are_taken_as_the_python_values_they_hold():
    """A sweep over ``np.arange`` gives numpy integers: they were refused with a message that
    read like a contradiction ("bad value np.int64(2), allowed an integer 1-1000")."""
    import numpy as np

    given = Rules.make(
        "guiyang",
        num_players=np.int64(3),
        hands_per_game=np.int32(2),
        baoting=np.bool_(True),
        flip_mode=np.str_("up_down"),
        dou_values=tuple(np.array([1, 2, 3])),
    )
    plain = Rules.make(
        "guiyang",
        num_players=3,
        hands_per_game=2,
        baoting=True,
        flip_mode="up_down",
        dou_values=[1, 2, 3],
    )
    assert given == plain
    assert json.dumps(given.to_record()) == json.dumps(plain.to_record())
    assert [type(v) for v in given.dou_values] == [int, int, int]
    assert type(given.num_players) is int and type(given.baoting) is bool
    with pytest.raises(ValueError, match=r"^switch 'hands_per_game': bad value 2\.0, allowed "):
        Rules.make("guiyang", hands_per_game=np.float64(2.0))
    with pytest.raises(ValueError, match=r"^switch 'baoting': bad value 1, allowed true or false"):
        Rules.make("guiyang", baoting=np.int64(1))
