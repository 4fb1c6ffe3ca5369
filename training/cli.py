"""Command-line flags from a dataclass of arguments (CleanRL's style, on ``argparse``), and the
checks that the training scripts run on every flag before any work starts."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import math
import os
import re
import reprlib
import shlex
import shutil
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from agents import make_agent
from agents.arena import json_text as json_text  # the trainers' JSON writer
from agents.registry import split_specs
from training.recipes import recipe_flags
from zhuoji_env.engine.game import is_real
from zhuoji_env.engine.records import is_plain_int
from zhuoji_env.fileio import FolderBusy, FolderLock, lock_dir, write_text_atomic
from zhuoji_env.limits import check_memory
from zhuoji_env.machine import git_output
from zhuoji_env.rules import Rules

T = TypeVar("T")


class FlagError(ValueError):
    """A flag (or the ``Args`` field behind it) whose value is not allowed; the message names
    the flag, the value and what is allowed."""


class _Switch(argparse.BooleanOptionalAction):
    """``--flag``/``--no-flag`` with the help text as given (Python 3.10's action appends its
    own default to it, later versions do not)."""

    def __init__(self, *args, help: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.help = help


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (the string literal right after its
    annotated assignment), whitespace collapsed; fields without one are left out. A subclass's
    fields take their base classes' docstrings unless it gives its own."""
    docs = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        body = tree.body[0].body
        for stmt, nxt in zip(body, body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = " ".join(nxt.value.value.split())
    return docs


def parse_args(
    cls: type[T],
    argv: list[str] | None = None,
    doc: str | None = None,
    prog: str | None = None,
    recipes: dict | None = None,
) -> T:
    """``--field-name VALUE`` for every field of ``cls`` (``--flag``/``--no-flag`` for bools);
    each flag's help is its field's docstring and default; ``prog`` names the command in the
    usage (e.g. ``python -m training.ppo_selfplay``).

    With ``recipes`` (name -> :class:`training.recipes.Recipe`) it also takes ``--recipe NAME``,
    whose values become the defaults of the other flags, so that a flag given beside it wins;
    ``--help`` lists what each recipe sets (with ``--recipe NAME`` its flags show the recipe's
    values as their defaults)."""
    parser = argparse.ArgumentParser(
        prog=prog, description=plain(doc), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        text = docs.get(f.name, "").replace("%", "%%")
        default = f"default {f.default!r}".replace("%", "%%")
        help_text = f"{text} ({default})" if text else default
        if f.type in (bool, "bool"):
            switch = f"default {'--' if f.default else '--no-'}{flag[2:]}"
            parser.add_argument(
                flag,
                action=_Switch,
                default=f.default,
                help=f"{text} ({switch})" if text else switch,
            )
        else:
            types = field_types(f)
            first = types[0] if types else f.type  # "str | bool": a string on the command line
            kind = {"int": int, "float": float, "str": str}.get(first, first)
            parser.add_argument(flag, type=kind, default=f.default, help=help_text)
    if not recipes:
        return cls(**vars(parser.parse_args(argv)))
    chosen = _add_recipes(parser, recipes, argv)
    given = vars(parser.parse_args(argv))
    if given.pop("recipe") != chosen:  # the two parsers read --recipe alike; never silently not
        parser.error(f"--recipe: read as {chosen!r} before the other flags, then otherwise")
    return cls(**given)


def _add_recipes(parser: argparse.ArgumentParser, recipes: dict, argv: list[str] | None):
    """Add ``--recipe`` to ``parser`` with the recipes' list as its epilog, and make the values
    of the recipe that ``argv`` names the defaults of their flags; returns its name (None)."""
    names = list(recipes)
    parser.add_argument(
        "--recipe",
        choices=names,
        help="a named set of flag values (below); the flags given beside it override them "
        "(default: none, the defaults above)",
    )
    lines = ["recipes (--recipe NAME sets these flags; a flag given beside it wins):"]
    wrap = dict(width=96, break_on_hyphens=False, break_long_words=False)
    for name, recipe in recipes.items():
        lines += textwrap.wrap(
            f"{name}: {recipe.summary}", initial_indent="  ", subsequent_indent="    ", **wrap
        )
        lines += textwrap.wrap(
            recipe_flags(recipe.values), initial_indent="      ", subsequent_indent="      ", **wrap
        )
    parser.epilog = "\n".join(lines)
    first = argparse.ArgumentParser(add_help=False)  # --recipe alone, before the other flags
    first.add_argument("--recipe")
    chosen = first.parse_known_args(argv)[0].recipe
    if chosen in recipes:  # an unknown name: the full parse refuses it, naming the recipes
        parser.set_defaults(**recipes[chosen].values)
    return chosen


def plain(doc: str | None) -> str | None:
    """A docstring as ``--help`` shows it: without the double backticks around code, and each
    cross-reference role (``:func:``, ``:mod:``, ...) as its target's name (the last part only
    after a ``~``, as Sphinx shows it)."""
    if doc is None:
        return None
    doc = re.sub(
        r":\w+(?::\w+)?:`(~?)([^`]+)`",
        lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2],
        doc,
    )
    return re.sub(r"``([^`]+)``", r"\1", doc)


INTERRUPTED = 130
"""The exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it)."""


def interrupted(prog: str, saved: Callable[[], str]) -> int:
    """End a command stopped by Ctrl-C with one line on stderr, ``PROG: interrupted: SAVED``
    (``saved()`` says what was saved and how to go on) and exit status :data:`INTERRUPTED`, not
    a traceback: every file is whole or absent (:mod:`zhuoji_env.fileio`)."""
    try:
        said = saved()
    except Exception as exc:  # what is on disk could not be read: say so, still in one line
        said = f"what was saved could not be read ({type(exc).__name__}: {exc})"
    print(f"{prog}: interrupted: {said}", file=sys.stderr, flush=True)
    return INTERRUPTED


def start_again(prog: str, args, left: list[Path]) -> str:
    """What an interrupted run that saved nothing to go on from says: the command that starts
    it again, with ``--force`` where it left files that would refuse a fresh run (``left``)."""
    if left:
        again = command_line(prog, dataclasses.replace(args, force=True))
        return (
            f"nothing to resume from was saved; start again with: {again} (--force lets it "
            f"replace what the folder holds: {file_names(left)})"
        )
    return f"nothing was saved; start again with: {command_line(prog, args)}"


def run_main(train: Callable, args, prog: str, saved: Callable[[object], str] | None = None) -> int:
    """Run ``train(args)``; a :class:`FlagError` is printed as a usage error (exit status 2);
    Ctrl-C ends with :func:`interrupted`'s line, ``saved(args)`` saying what was saved."""
    try:
        train(args)
    except FlagError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return interrupted(prog, lambda: saved(args) if saved else "nothing was saved")
    return 0


def flag(name: str) -> str:
    """The command-line flag of an ``Args`` field."""
    return "--" + name.replace("_", "-")


def _is_number(v) -> bool:
    """An int or float (numpy's float64 is one), not a bool: a number JSON writes as it is, as
    the run's ``Args`` are written (numpy integers are refused, not converted)."""
    return is_real(v) and isinstance(v, int | float)


def _is_finite(v) -> bool:
    return _is_number(v) and math.isfinite(v)


INT_POSITIVE = (lambda v: is_plain_int(v) and v >= 1, "an integer >= 1")
INT_NON_NEGATIVE = (lambda v: is_plain_int(v) and v >= 0, "an integer >= 0")
SEED = (lambda v: is_plain_int(v) and 0 <= v < 2**32, "an integer 0 to 2**32 - 1")
"""A trainer's seed: numpy's legacy seeding (SB3's) takes at most 32 bits, and the processes of
a data-parallel run seed torch with it plus ``2**32`` times their rank, below 2**64."""
TORCH_THREADS = (lambda v: is_plain_int(v) and 1 <= v <= 256, "an integer 1-256")
"""``torch.set_num_threads``: 100,000 crashed torch, 5,000 hung it."""
POSITIVE = (lambda v: _is_finite(v) and v > 0, "a finite number > 0")
NON_NEGATIVE = (lambda v: _is_finite(v) and v >= 0, "a finite number >= 0")
UNIT = (lambda v: _is_finite(v) and 0 <= v <= 1, "a number in [0, 1]")


TYPE_CHECKS = {
    "bool": (lambda v: isinstance(v, bool), "True or False"),
    "int": (is_plain_int, "an integer"),
    "float": (_is_number, "a number"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "None": (lambda v: v is None, "None"),
}
"""The check of a field's value by its annotation's type (a union such as ``str | bool``: any of
them): plain Python values as the command line gives them, so that ``force="no"`` is not taken
as true and ``rules={...}`` is not met by an ``AttributeError`` deep inside. A float's range,
finiteness included, is its field's own check (``POSITIVE``, ``UNIT``, ...), whose message says
more."""


def field_types(f: dataclasses.Field) -> list[str]:
    """The type names of a dataclass field's annotation (``"str | bool"``: ``["str", "bool"]``),
    or ``[]`` when any of them is not one of :data:`TYPE_CHECKS` (the field is not checked)."""
    text = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    names = [t.strip() for t in text.split("|")]
    return names if all(t in TYPE_CHECKS for t in names) else []


def check_fields(args, checks: dict[str, tuple[Callable, str]]) -> None:
    """Raise :class:`FlagError` for the first field of ``args`` that fails its check in
    ``checks``, then, when ``args`` is a dataclass, for the first other field whose value is not
    of its annotation's type (:data:`TYPE_CHECKS`)."""
    for name, (ok, allowed) in checks.items():
        value = getattr(args, name)
        if not ok(value):
            raise FlagError(f"{flag(name)} {value!r}: must be {allowed}")
    if not dataclasses.is_dataclass(args):
        return
    for f in dataclasses.fields(args):
        types = field_types(f)
        value = getattr(args, f.name)
        if f.name not in checks and types and not any(TYPE_CHECKS[t][0](value) for t in types):
            allowed = " or ".join(TYPE_CHECKS[t][1] for t in types)
            raise FlagError(
                f"{flag(f.name)} {reprlib.repr(value)}: must be {allowed}, not "
                f"{type(value).__name__}"
            )


def rules_from_flag(text: str, name: str = "rules") -> Rules:
    """The ``--rules`` flag: a preset name, or a JSON ``{"preset", "overrides"}`` object."""
    try:
        spec = json.loads(text) if text.lstrip().startswith("{") else text
    except json.JSONDecodeError as exc:
        raise FlagError(f"{flag(name)} {text!r}: not valid JSON ({exc})") from None
    try:
        return Rules.make(spec)
    except (ValueError, TypeError) as exc:
        raise FlagError(
            f"{flag(name)} {text!r}: {exc} (a preset name or a JSON object "
            '{"preset": ..., "overrides": {...}})'
        ) from None


def agent_specs(text: str) -> list[str]:
    """The agent specs of a comma-separated flag (blank ones left out)."""
    return [s.strip() for s in text.split(",") if s.strip()]


def check_agent_specs(text: str, name: str, rules: Rules, allow_empty: bool = False) -> None:
    """Every comma-separated agent spec of a flag names an agent that can be made; an empty
    item (``rule,,greedy``) is refused."""
    if text.strip():
        try:
            split_specs(text, flag(name))
        except ValueError as exc:
            raise FlagError(str(exc)) from None
    specs = agent_specs(text)
    if not specs and not allow_empty:
        raise FlagError(f"{flag(name)} {text!r}: needs at least one agent spec")
    for spec in specs:
        try:
            make_agent(spec, seed=0, rules=rules)
        except ValueError as exc:
            raise FlagError(f"{flag(name)} {text!r}: {exc}") from None


def check_out_dir(path: str, name: str = "out_dir") -> None:
    """``path`` is a folder, or can be created as one (its nearest existing parent is a
    writable folder); an empty path is refused, not read as the current folder."""
    if path == "":
        raise FlagError(f"{flag(name)} {path!r}: an empty path; name a folder ('.' for this one)")
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise FlagError(f"{flag(name)} {path!r}: exists and is not a folder")
    parent = p
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise FlagError(f"{flag(name)} {path!r}: {str(parent)!r} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise FlagError(f"{flag(name)} {path!r}: cannot write in {str(parent)!r}")


def check_arena_deals(deals: int, rules: Rules, name: str = "eval_deals") -> None:
    """An arena of two agents on ``deals`` duplicate deals under ``rules`` (the trainers'
    evaluations) fits in this machine's memory, by the arena's own plan
    (:func:`agents.arena.planned_memory`), checked before training starts instead of when the
    first evaluation is due."""
    from agents.arena import planned_memory, run_arena, seatings

    rotations = len(seatings(2, rules.num_players))
    chunk_games = inspect.signature(run_arena).parameters["chunk_games"].default
    per_chunk = max(1, chunk_games // rotations)
    need = planned_memory(deals, 2, rotations, per_chunk, rules.num_players, False)
    check_flag_memory(f"{flag(name)} {deals}", need)


def check_flag_memory(what: str, need: float) -> None:
    """:func:`zhuoji_env.limits.check_memory` for sizes given by flags: a :class:`FlagError`
    (exit 2) naming them, also for a bad ``ZHUOJI_MEMORY_LIMIT``."""
    try:
        check_memory(what, need)
    except ValueError as exc:  # limits.SizeError, or a bad ZHUOJI_MEMORY_LIMIT
        raise FlagError(str(exc)) from None


def _keyed_lines(path: Path, key: str) -> list[tuple[str, int | None]]:
    """Each line of the JSON-lines log ``path`` (none where there is no log) with the integer
    value of ``key`` in its row, None for a line that is no such row."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        value = row.get(key) if isinstance(row, dict) else None
        out.append((line, value if is_plain_int(value) else None))
    return out


def logged(path: Path, key: str) -> set[int]:
    """The integer values of ``key`` in the rows of the JSON-lines log ``path`` (none where
    there is no log); lines that are not such rows are passed over."""
    return {value for _, value in _keyed_lines(path, key) if value is not None}


def lock_out_dir(path: str, name: str = "out_dir") -> FolderLock:
    """:func:`zhuoji_env.fileio.lock_dir` of a trainer's output folder, a ``FlagError`` naming
    the flag where another run holds it."""
    try:
        return lock_dir(path)
    except FolderBusy as exc:
        raise FlagError(f"{flag(name)} {path!r}: {exc}") from None


def drop_rows_after(path: Path, key: str, last: int) -> int:
    """Drop the rows of the JSON-lines log ``path`` whose ``key`` is above ``last``, in one
    atomic rewrite; returns how many were dropped.

    A run logs a row at every update (or iteration) but saves a checkpoint only every few, so
    a run killed between two checkpoints leaves rows its newest checkpoint never reached; a
    run resumed from that checkpoint logs those updates again, and without this the log would
    hold both (updates 1, 2, 3, 4, 4, 5, ...). Lines that are not such rows are kept."""
    lines = _keyed_lines(path, key)
    kept = [line for line, value in lines if value is None or value <= last]
    dropped = len(lines) - len(kept)
    if dropped:
        write_text_atomic(path, "".join(kept))
    return dropped


def file_names(paths: list[Path], limit: int = 6) -> str:
    """The names of ``paths`` for a message, in a natural order (``update_2.pt`` before
    ``update_10.pt``): all of them, or the first and last few and how many in all."""

    def natural(name: str) -> list:
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]

    names = sorted((p.name for p in paths), key=natural)
    if len(names) > limit:
        names = [*names[: limit // 2], "...", *names[-(limit // 2) :], f"({len(paths)} in all)"]
    return ", ".join(names)


def remove_paths(paths: list[Path]) -> None:
    """Delete the files and folders of an earlier run that ``--force`` replaces."""
    for p in paths:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)


def device_from_flag(name: str, flag_name: str = "device"):
    """The ``torch.device`` of a ``--device auto|cpu|cuda`` flag
    (:func:`agents.ppo.resolve_device`: ``auto`` is CUDA when torch sees it); ``cuda`` without
    one is refused."""
    from agents.ppo import resolve_device

    try:
        return resolve_device(name)
    except ValueError as exc:
        raise FlagError(f"{flag(flag_name)} {name!r}: {exc}") from None


BF16_MODES = ("auto", "on", "off")


def bf16_from_flag(mode: str | bool, device, flag_name: str = "bf16") -> bool:
    """Whether a ``--bf16 auto|on|off`` flag autocasts the update to bfloat16 on ``device``:
    ``auto`` where bfloat16 is fast there (:func:`training.learner.fast_bf16`). The boolean of
    the flag's older form (``Args(bf16=True)``) is taken as ``on``/``off``."""
    from training.learner import fast_bf16

    if isinstance(mode, bool):
        mode = "on" if mode else "off"
    if mode not in BF16_MODES:
        raise FlagError(f"{flag(flag_name)} {mode!r}: must be one of {', '.join(BF16_MODES)}")
    return mode == "on" or (mode == "auto" and fast_bf16(device))


def command_line(prog: str, args) -> str:
    """The shell command that reruns ``args`` (a dataclass of ``Args``): ``prog`` and every
    flag whose value differs from its default, quoted for a POSIX shell."""
    words = [prog]
    for f in dataclasses.fields(args):
        value = getattr(args, f.name)
        if value == f.default:
            continue
        if isinstance(value, bool):
            words.append(flag(f.name) if value else "--no-" + flag(f.name)[2:])
        else:
            words += [flag(f.name), shlex.quote(str(value))]
    return " ".join(words)


def source_commit() -> str | None:
    """The git commit of this checkout (``+dirty`` when its files differ from it, new ones that
    git does not ignore included), or None outside a checkout of this repository: where a
    checkpoint's code came from."""
    root = Path(__file__).resolve().parent.parent
    top = git_output(str(root), "rev-parse", "--show-toplevel")
    if top is None or Path(os.fsdecode(top.strip())).resolve() != root:
        return None  # not a checkout, or installed inside some other repository: not ours
    head = git_output(str(root), "rev-parse", "HEAD")
    dirty = git_output(str(root), "status", "--porcelain")  # untracked, not ignored: they count
    if head is None or dirty is None:
        return None
    return head.decode("ascii", "replace").strip() + ("+dirty" if dirty.strip() else "")
