"""The rules configuration: a preset (``guiyang``, ``classic``, ``app``) plus switch overrides.

Every switch of RULES.md section 9 is a field of :class:`Rules`. A configuration is built from a
preset name, from a record's ``{"preset": ..., "overrides": {...}}`` object, or from keyword
overrides, and is validated on construction: an unknown switch or a bad value raises
``ValueError`` naming the switch and what it allows.

Every integer switch has an upper bound (``INT_SWITCH_RANGES``, ``MAX_VALUE``), and so has a
record's dealer streak (``MAX_STREAK``). Within them a seat wins or loses less than
500 x MAX_VALUE + 400 x streak + 10**6 units in one hand (at most 4 kongs and 12 chicken tiles
per seat, at most 108 pass-win penalties), that is below 10**9 units and 10**15 after
``base_stake``: every amount of a hand is below 2**53 (exact as a JSON number in any reader), and
a match of ``MAX_HANDS_PER_GAME`` hands sums to below 10**18 < 2**63, so the engine's int64
arithmetic is exact.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PRESET_NAMES = ("guiyang", "classic", "app")

_CHOICES: dict[str, tuple] = {
    "num_players": (4, 3),
    "units": ("bei", "fan", "bei_dandiao"),
    "rerpao": ("plus_one", "transfer", "plus_one_burn"),
    "qianggang": ("pay_for_all", "plus_nine_burn"),
    "chicken_scope": ("all", "hand", "yaoji_river"),
    "flip_mode": ("up", "up_down"),
    "zeren": ("off", "on", "reversible"),
    "pass_win": ("penalty", "forbid"),
    "draw_dealer": ("stay", "classic"),
}
_BOOLS = (
    "jian_dou_san",
    "ready_required",
    "chicken_kong_60",
    "bao_ji",
    "baoting",
    "dealer_streak_bonus",
)
MAX_VALUE = 10**6
"""Upper bound of ``zimo_bonus``, ``gangkai_bonus``, ``chicken_unit``, ``chongfeng`` and each
``dou_values`` entry."""
MAX_BASE_STAKE = 10**6
MAX_HANDS_PER_GAME = 1000
MAX_STREAK = 10**6
"""Upper bound of a record's ``dealer_streak`` (a match of the engine starts at 0)."""
INT_SWITCH_RANGES: dict[str, tuple[int, int]] = {
    "gangkai_bonus": (0, MAX_VALUE),
    "chicken_unit": (1, MAX_VALUE),
    "chongfeng": (0, MAX_VALUE),
    "hands_per_game": (1, MAX_HANDS_PER_GAME),
    "base_stake": (1, MAX_BASE_STAKE),
}
"""(lowest, highest) of each integer switch; ``zimo_bonus`` and ``dou_values`` are checked on
their own (0 to ``MAX_VALUE``)."""

# Pattern values (RULES.md 5.3): shape -> value, and the flush base.
PATTERN_TABLES = {
    "bei": {"pinghu": 1, "daduizi": 5, "qidui": 10, "longqidui": 20, "flush": 10, "dandiao": 0},
    "fan": {"pinghu": 10, "daduizi": 30, "qidui": 40, "longqidui": 50, "flush": 50, "dandiao": 0},
    "bei_dandiao": {
        "pinghu": 1,
        "daduizi": 5,
        "qidui": 10,
        "longqidui": 20,
        "flush": 10,
        "dandiao": 10,
    },
}
# 报听 bonus (hard, soft) by units (RULES.md 7.2).
BAOTING_BONUS = {"bei": (20, 10), "fan": (200, 100), "bei_dandiao": (20, 10)}


@dataclass(frozen=True)
class Rules:
    """A validated ruleset. Field names and values are exactly the switches of RULES.md 9.

    Build it with :meth:`make` or :meth:`from_preset`, which start from the preset's values;
    constructing ``Rules(...)`` directly starts from guiyang's values whatever ``preset`` says.
    """

    preset: str = "guiyang"
    num_players: int = 4
    units: str = "bei"
    zimo_bonus: int | str = 1
    gangkai_bonus: int = 1
    rerpao: str = "plus_one"
    qianggang: str = "pay_for_all"
    dou_values: tuple[int, int, int] = (2, 3, 1)
    jian_dou_san: bool = False
    ready_required: bool = True
    chicken_unit: int = 1
    chicken_scope: str = "all"
    flip_mode: str = "up"
    chongfeng: int = 2
    zeren: str = "on"
    chicken_kong_60: bool = False
    bao_ji: bool = False
    pass_win: str = "penalty"
    baoting: bool = False
    draw_dealer: str = "stay"
    dealer_streak_bonus: bool = True
    hands_per_game: int = 1
    base_stake: int = 1
    overrides: Mapping[str, Any] = field(default=None, init=False, compare=False, repr=False)
    """The switches that differ from the preset (derived), as written in records."""

    def __post_init__(self):
        for name in SWITCHES:  # numpy's scalars as the Python values a record's JSON holds
            value = getattr(self, name)
            if isinstance(value, np.generic):
                object.__setattr__(self, name, value.item())
            elif isinstance(value, (list, tuple)):
                plain = [v.item() if isinstance(v, np.generic) else v for v in value]
                object.__setattr__(self, name, type(value)(plain))
        if self.preset not in PRESET_NAMES:
            raise ValueError(f"unknown preset {self.preset!r}: allowed {list(PRESET_NAMES)}")
        for name, allowed in _CHOICES.items():
            value = getattr(self, name)
            if type(value) is not type(allowed[0]) or value not in allowed:
                raise ValueError(f"switch {name!r}: bad value {value!r}, allowed {list(allowed)}")
        for name in _BOOLS:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(
                    f"switch {name!r}: bad value {getattr(self, name)!r}, allowed true or false"
                )
        for name, (low, high) in INT_SWITCH_RANGES.items():
            _check_int(name, getattr(self, name), low, high)
        if self.zimo_bonus != "plain_only":
            _check_int(
                "zimo_bonus",
                self.zimo_bonus,
                0,
                MAX_VALUE,
                f"an integer 0-{MAX_VALUE} or 'plain_only'",
            )
        dou = self.dou_values
        if (
            not isinstance(dou, (list, tuple))
            or len(dou) != 3
            or any(not _int_in(v, 0, MAX_VALUE) for v in dou)
        ):
            raise ValueError(
                f"switch 'dou_values': bad value {dou!r}, allowed a list of three integers "
                f"0-{MAX_VALUE} (闷豆, 转弯豆, 点豆)"
            )
        object.__setattr__(self, "dou_values", tuple(dou))
        preset = {**_DEFAULTS, **_PRESETS[self.preset]}
        diff = {k: getattr(self, k) for k in SWITCHES if getattr(self, k) != preset[k]}
        object.__setattr__(self, "overrides", diff)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_preset(cls, preset: str = "guiyang", /, **overrides: Any) -> Rules:
        """The preset with the given switches overridden (``preset`` positional, so that an
        override named ``'preset'`` reaches :func:`check_switch_names`)."""
        if preset not in PRESET_NAMES:
            raise ValueError(f"unknown preset {preset!r}: allowed {list(PRESET_NAMES)}")
        check_switch_names(overrides)
        return cls(preset=preset, **{**_PRESETS[preset], **overrides})

    @classmethod
    def make(cls, spec: str | Mapping[str, Any] | Rules | None = None, **overrides: Any) -> Rules:
        """Build from a preset name, ``{"preset": .., "overrides": {..}}``, or a ``Rules``.

        Keyword overrides are applied on top.
        """
        if spec is None:
            spec = "guiyang"
        if isinstance(spec, Rules):
            return spec.replace(**overrides) if overrides else spec
        if isinstance(spec, str):
            return cls.from_preset(spec, **overrides)
        if isinstance(spec, Mapping):
            extra = sorted(set(spec) - {"preset", "overrides"}, key=repr)
            if extra:
                raise ValueError(
                    f"rules object has unknown key {extra[0]!r}: allowed 'preset' and 'overrides'"
                )
            base = spec.get("overrides")
            if base is None:
                base = {}
            if not isinstance(base, Mapping):
                raise ValueError(f"rules 'overrides' must be an object, got {base!r}")
            check_switch_names(base)  # before ** unpacks it: a key 1 is no keyword
            return cls.from_preset(spec.get("preset", "guiyang"), **{**base, **overrides})
        raise ValueError(
            f"rules must be a preset name, a {{'preset', 'overrides'}} object or Rules, "
            f"got {type(spec).__name__}"
        )

    def replace(self, **overrides: Any) -> Rules:
        """A copy with more switches overridden."""
        return Rules.from_preset(self.preset, **{**self.overrides, **overrides})

    def to_record(self) -> dict:
        """The record form ``{"preset": name, "overrides": {...}}`` (RULES.md 10)."""
        out = {}
        for k, v in self.overrides.items():
            out[k] = list(v) if isinstance(v, tuple) else v
        return {"preset": self.preset, "overrides": out}

    # ------------------------------------------------------------------ derived values
    @property
    def pattern_table(self) -> dict[str, int]:
        return PATTERN_TABLES[self.units]

    @property
    def baoting_bonus(self) -> tuple[int, int]:
        """(硬报, 软报) bonus in units."""
        return BAOTING_BONUS[self.units]

    @property
    def kong_values(self) -> tuple[int, int, int]:
        """What a 闷豆, 转弯豆, 点豆 collects, after 见豆三."""
        return (3, 3, 3) if self.jian_dou_san else self.dou_values


def parse_switches(items: list[str]) -> dict[str, Any]:
    """Switch overrides from command-line ``SWITCH=VALUE`` items (VALUE read as JSON when it
    parses, else as a string): ``["num_players=3", "flip_mode=up_down"]``. A switch given twice
    raises ``ValueError`` naming it."""
    out: dict[str, Any] = {}
    given: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"expected SWITCH=VALUE, got {item!r}")
        name = name.strip()
        if name in given:
            raise ValueError(
                f"switch {name!r} is set twice ({given[name]!r}, then {item!r}): set each once"
            )
        given[name] = item
        try:
            out[name] = json.loads(value)
        except json.JSONDecodeError:
            out[name] = value.strip()
    return out


def check_switch_names(overrides: Mapping[str, Any]) -> None:
    """Refuse override names that are not switches, ``'preset'`` with its own message: a preset
    is chosen, not overridden."""
    for name in overrides:
        if name == "preset":
            raise ValueError(
                "'preset' is not a switch and cannot be overridden: give the preset as the rules "
                "object's 'preset' (or Rules.make's first argument), the switches in 'overrides'"
            )
        if name not in SWITCHES:
            raise ValueError(f"unknown switch {name!r}: allowed switches {list(SWITCHES)}")


def _int_in(value: Any, low: int, high: int) -> bool:
    """``value`` is an int (not a bool) in ``[low, high]``."""
    return not isinstance(value, bool) and isinstance(value, int) and low <= value <= high


def _check_int(name: str, value: Any, low: int, high: int, allowed: str | None = None) -> None:
    if not _int_in(value, low, high):
        raise ValueError(
            f"switch {name!r}: bad value {value!r}, allowed {allowed or f'an integer {low}-{high}'}"
        )


SWITCHES: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(Rules) if f.name not in ("preset", "overrides")
)
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Rules) if f.name in SWITCHES}

_PRESETS: dict[str, dict[str, Any]] = {
    "guiyang": {},
    "classic": {
        "units": "fan",
        "zimo_bonus": 0,
        "gangkai_bonus": 10,
        "rerpao": "transfer",
        "dou_values": (20, 10, 10),
        "ready_required": False,
        "chicken_unit": 10,
        "chicken_scope": "hand",
        "chongfeng": 0,
        "zeren": "off",
        "chicken_kong_60": True,
        "draw_dealer": "classic",
        "dealer_streak_bonus": False,
    },
    "app": {
        "units": "bei_dandiao",
        "zimo_bonus": "plain_only",
        "rerpao": "plus_one_burn",
        "qianggang": "plus_nine_burn",
        "dou_values": (3, 3, 3),
        "jian_dou_san": True,
        "chicken_scope": "yaoji_river",
        "chongfeng": 3,
        "zeren": "reversible",
        "bao_ji": True,
        "pass_win": "forbid",
        "baoting": True,
        "dealer_streak_bonus": False,
    },
}
