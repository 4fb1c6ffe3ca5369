"""What each field of a checkpoint, and of a shipped policy's provenance, may hold, checked once,
as the file is read.

A checkpoint (:mod:`agents.ppo`) is a dict: the network's tensors (``model``), the trainer's
(``optimizer``, ``critic``) and metadata in plain data. :func:`check_fields` checks every field
the package reads (:data:`FIELDS`; a training stage's by :data:`STAGE_FIELDS`, the trainer's
arguments by :data:`ARGS_FIELDS`) and refuses a bad one with a ``ValueError`` naming the file
and the field, e.g. ``ckpt.pt: stages[1]['command'] is 7: must be a string``. Everything that
reads a checkpoint's metadata after :func:`agents.ppo.load_checkpoint` can take it as checked.
A shipped policy's ``NAME.json`` is checked the same way by :func:`check_provenance`
(:data:`PROVENANCE_FIELDS`), as :func:`agents.ppo.provenance` reads it.
Fields the package does not read are left to whoever wrote them, as long as they are plain data
(the tensors of a checkpoint are sized before it is read: :mod:`agents.untrusted`).
"""

from __future__ import annotations

import math
import reprlib
import shlex
from collections.abc import Callable

from zhuoji_env.engine.game import is_real
from zhuoji_env.engine.records import is_plain_int
from zhuoji_env.rules import Rules

Check = tuple[Callable[[object], bool], str]
"""A field's test and what it allows, as the refusal says it."""


def plain_data(value, depth: int = 0) -> bool:
    """``value`` is JSON-like plain data: None, a bool, a number, a string, or lists, tuples
    and string-keyed dicts of them (nested at most 32 levels)."""
    if depth > 32:
        return False
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(plain_data(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain_data(v, depth + 1) for k, v in value.items())
    return False


def _parses(command) -> bool:
    try:
        shlex.split(command)
    except ValueError:
        return False
    return True


def _tensors(value) -> bool:
    import torch

    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in value.items()
    )


def _rules_problem(value) -> str | None:
    """Why ``value`` is not rules in record form, or None."""
    try:
        Rules.make(value)
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


def _rules(value) -> bool:
    return _rules_problem(value) is None


def _finite(value) -> bool:
    return is_real(value) and isinstance(value, (int, float)) and math.isfinite(value)


INT_AT_LEAST_0: Check = (lambda v: is_plain_int(v) and v >= 0, "an integer >= 0")
INT_AT_LEAST_1: Check = (lambda v: is_plain_int(v) and v >= 1, "an integer >= 1")
STRING: Check = (lambda v: isinstance(v, str), "a string")
PLAIN_OBJECT: Check = (
    lambda v: isinstance(v, dict) and plain_data(v),
    "an object of plain data (strings, numbers, lists, objects)",
)

STAGE_FIELDS: dict[str, Check] = {
    "command": (lambda v: isinstance(v, str) and _parses(v), "a string that parses as a command"),
    "commit": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "preset": STRING,
    "decisions": INT_AT_LEAST_0,
    "seconds": (lambda v: _finite(v) and v >= 0, "a finite number >= 0"),
    "processes": INT_AT_LEAST_1,
    "bf16": (lambda v: isinstance(v, bool), "true or false"),
    "rules": (_rules, "rules in record form ({'preset': ..., 'overrides': {...}})"),
    "started": STRING,
}
"""A training stage's fields (:mod:`training.ppo_selfplay` writes one per run; a stage's
other fields must be plain data)."""

ARGS_FIELDS: dict[str, Check] = {
    "reward_scale": (lambda v: _finite(v) and v > 0, "a finite number > 0"),
    "oracle_critic": (lambda v: isinstance(v, bool), "true or false"),
}
"""The trainer's arguments that the package reads back (the others must be plain data)."""

FIELDS: dict[str, Check] = {
    "model": (_tensors, "a state dict (names to tensors)"),
    "critic": (_tensors, "a state dict (names to tensors)"),
    "magnet": (_tensors, "a state dict (names to tensors)"),
    "optimizer": (
        lambda v: (
            isinstance(v, dict)
            and isinstance(v.get("state"), dict)
            and isinstance(v.get("param_groups"), list)
        ),
        "an optimizer's state dict ('state' and 'param_groups')",
    ),
    "hidden": INT_AT_LEAST_1,
    "obs_size": INT_AT_LEAST_1,
    "obs_version": STRING,
    "update": INT_AT_LEAST_0,
    "decisions": INT_AT_LEAST_0,
    "rules": (_rules, "rules in record form ({'preset': ..., 'overrides': {...}})"),
    "args": PLAIN_OBJECT,
    "row": (
        lambda v: isinstance(v, dict) and plain_data(v) and is_plain_int(v.get("update")),
        "an object of plain data with an integer 'update' (a metrics.jsonl row)",
    ),
    "stages": (
        lambda v: isinstance(v, list) and all(isinstance(s, dict) for s in v),
        "a list of objects, the runs that trained it",
    ),
    "name": STRING,
}
"""Every field of a checkpoint the package reads, and what it must hold."""


def _refuse(name: str, field: str, value, allowed: str) -> ValueError:
    if field.endswith("'rules'") or field.endswith("'rules']"):
        allowed = f"{allowed}: {_rules_problem(value)}"
    return ValueError(f"{name}: {field} is {reprlib.repr(value)}: must be {allowed}")


def check_stages(stages, name: str) -> None:
    """Refuse (``ValueError`` naming ``name`` and the field) ``stages`` that are not a list of
    objects whose fields hold what :data:`STAGE_FIELDS` says (the rest plain data)."""
    ok, allowed = FIELDS["stages"]
    if not ok(stages):
        raise _refuse(name, "'stages'", stages, allowed)
    for i, stage in enumerate(stages):
        for key, value in stage.items():
            where = f"stages[{i}][{key!r}]"
            ok, allowed = STAGE_FIELDS.get(key, (plain_data, "plain data"))
            if not ok(value):
                raise _refuse(name, where, value, allowed)


def check_fields(ckpt: dict, name: str) -> None:
    """Refuse (``ValueError`` naming ``name``, the file, and the field) a checkpoint any of
    whose fields of :data:`FIELDS` holds something else, a stage that fails
    :func:`check_stages`, or trainer arguments that fail :data:`ARGS_FIELDS`."""
    for key, (ok, allowed) in FIELDS.items():
        if key in ckpt and not ok(ckpt[key]):
            raise _refuse(name, repr(key), ckpt[key], allowed)
    for key, (ok, allowed) in ARGS_FIELDS.items():
        if key in ckpt.get("args", {}) and not ok(ckpt["args"][key]):
            raise _refuse(name, f"args[{key!r}]", ckpt["args"][key], allowed)
    if "stages" in ckpt:
        check_stages(ckpt["stages"], name)


PROVENANCE_FIELDS: dict[str, Check] = {
    "name": STRING,
    "preset": STRING,
    "file": STRING,
    "sha256": (
        lambda v: isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v),
        "64 lowercase hexadecimal digits",
    ),
    "decisions": INT_AT_LEAST_0,
    "seconds": STAGE_FIELDS["seconds"],
    "stages": FIELDS["stages"],
    "arena": PLAIN_OBJECT,
}
"""Every field of a shipped policy's provenance (``training.ship_policy`` writes them all)."""


def check_provenance(record, name: str) -> None:
    """Refuse (``ValueError`` naming ``name``, the file, and the field) a provenance that is
    not an object holding every field of :data:`PROVENANCE_FIELDS` as it says."""
    if not isinstance(record, dict):
        raise _refuse(name, "the whole file", record, "an object")
    missing = [key for key in PROVENANCE_FIELDS if key not in record]
    if missing:
        raise ValueError(
            f"{name}: lacks {', '.join(map(repr, missing))}; a shipped policy's provenance says "
            f"{', '.join(PROVENANCE_FIELDS)}"
        )
    for key, (ok, allowed) in PROVENANCE_FIELDS.items():
        if not ok(record[key]):
            raise _refuse(name, repr(key), record[key], allowed)
    check_stages(record["stages"], name)
