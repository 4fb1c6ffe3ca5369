"""Command-line flags from a dataclass of arguments (CleanRL's style, on ``argparse``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import TypeVar

from zhuoji_env.rules import Rules

T = TypeVar("T")


def parse_args(cls: type[T], argv: list[str] | None = None, doc: str | None = None) -> T:
    """``--field-name VALUE`` for every field of ``cls`` (``--flag``/``--no-flag`` for bools)."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        if f.type in (bool, "bool"):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            kind = {"int": int, "float": float, "str": str}.get(f.type, f.type)
            parser.add_argument(flag, type=kind, default=f.default, help=f"default {f.default!r}")
    return cls(**vars(parser.parse_args(argv)))


def rules_from_flag(text: str) -> Rules:
    """The ``--rules`` flag: a preset name, or a JSON ``{"preset", "overrides"}`` object."""
    return Rules.make(json.loads(text) if text.startswith("{") else text)
