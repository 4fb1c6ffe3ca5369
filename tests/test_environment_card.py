"""The environment card (docs/environment.md) states what the code does: every observation block
with its shape, size and offset in the order of ``zhuoji_env.observation``'s layout, the sizes
of the observations and the state, the action space, the illegal-action penalty and the
environment's name. The card's numbers are written out for readers; this keeps them from
drifting away from the code."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import zhuoji_env
from zhuoji_env import observation as O
from zhuoji_env.envs.common import illegal_penalty
from zhuoji_env.rules import Rules

CARD = Path(__file__).resolve().parent.parent / "docs" / "environment.md"


def block_tables(text: str) -> list[list[tuple[str, tuple[int, ...], int, int]]]:
    """Every table of the card whose first column is a block name: ``(name, shape, size,
    offset)`` per row, in order."""
    tables, rows = [], []
    for line in text.split("\n") + [""]:
        m = re.match(r"^\| `(\w+)` \| ([\d x]+) \| ([\d,]+) \| ([\d,]+) \|", line)
        if m:
            shape = tuple(int(d) for d in m.group(2).split(" x "))
            rows.append((m.group(1), shape, int(m.group(3)), int(m.group(4))))
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def layout_rows(layout, start: int) -> list[tuple[str, tuple[int, ...], int, int]]:
    """The code's blocks as the card writes them."""
    rows, pos = [], start
    for name, shape in layout:
        size = int(np.prod(shape))
        rows.append((name, shape, size, pos))
        pos += size
    return rows


def test_the_card_lists_every_block_of_both_observations_as_the_code_lays_them_out():
    tables = block_tables(CARD.read_text(encoding="utf-8"))
    assert tables == [layout_rows(O.LAYOUT, 0), layout_rows(O.FEATURES, O.OBS_SIZE)]


def test_the_card_states_the_sizes_of_the_observations_the_state_and_the_actions():
    text = " ".join(CARD.read_text(encoding="utf-8").split())
    v1, v2 = O.OBS_SIZES[O.VERSION], O.OBS_SIZES[O.VERSION_V2]
    for phrase in (
        f"float32[{v1}]",
        f"`{O.VERSION}`, {v1:,} numbers",
        f"`Box({v1},)`",
        f"obs float32 [B, {v1}]",
        f"**`{O.VERSION_V2}`**, {v2:,} numbers",
        f"{O.STATE_SIZE:,} numbers",
        f"{O.HIDDEN_SIZE} numbers",
        f"`Discrete({zhuoji_env.NUM_ACTIONS})`",
        f"int8[{zhuoji_env.NUM_ACTIONS}]",
    ):
        assert phrase in text, phrase
    for name, shape in O.STATE_EXTRA:  # the state's hidden blocks, in order
        written = " x ".join(str(d) for d in shape)
        assert f"`{name}` ({written}" in text, name
    names = [name for name, _ in O.STATE_EXTRA]
    assert [text.index(f"`{n}` (") for n in names] == sorted(text.index(f"`{n}` (") for n in names)


@pytest.mark.parametrize("preset", ["guiyang", "app", "classic"])
def test_the_card_states_the_illegal_action_penalty_of_each_preset(preset):
    text = " ".join(CARD.read_text(encoding="utf-8").split())
    penalty = illegal_penalty(Rules.make(preset))
    if preset == "classic":
        assert f"{penalty:g} in `classic`" in text
    else:
        assert f"{penalty:g} in `guiyang` and `app`" in text


def test_the_card_names_the_environment_as_its_metadata_does():
    text = CARD.read_text(encoding="utf-8")
    name = zhuoji_env.raw_env.metadata["name"]
    assert f'`metadata["name"] = "{name}"`' in text
    assert f"`{O.VERSION}`" in text


def test_a_drifted_card_is_caught():
    """The parser reads the card's rows, so a wrong size, a missing or reordered block fails."""
    text = CARD.read_text(encoding="utf-8")
    good = layout_rows(O.LAYOUT, 0)
    for broken in (
        text.replace("| `hand` | 27 | 27 | 0 |", "| `hand` | 27 | 28 | 0 |"),
        text.replace(
            "| `pass_lock` | 1 | 1 | 1132 | the observer passed a win and is locked (过手胡) |\n",
            "",
        ),
        text.replace("| `wall` | 2 | 2 | 1133 |", "| `walls` | 2 | 2 | 1133 |"),
    ):
        assert broken != text
        assert block_tables(broken)[0] != good
