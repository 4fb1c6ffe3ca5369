"""The flat action space: one ``Discrete(86)`` shared by every decision of the game.

======== ========== =================================================================
index    name       meaning (RULES.md 3)
======== ========== =================================================================
0-26     discard t  discard a tile of kind t (打牌)
27-53    angang t   concealed kong of kind t - 27 (闷豆)
54-80    bugang t   add the fourth tile of kind t - 54 to one's own pong (转弯豆)
81       pong       claim the discard for a pong (碰)
82       kong       claim the discard for an exposed kong (点豆)
83       hu         win: self-drawn in a turn, on a discard, or robbing a kong (胡)
84       pass       decline a claim (过)
85       baoting    declare ready (报听), only with the ``baoting`` switch
======== ========== =================================================================

A legal-action mask is a bool (or int8) vector of length :data:`NUM_ACTIONS` in this order.
"""

from __future__ import annotations

import numpy as np

from zhuoji_env.tiles import NUM_KINDS, code, kind

DISCARD = 0
ANGANG = 27
BUGANG = 54
PONG = 81
KONG = 82
HU = 83
PASS = 84
BAOTING = 85
NUM_ACTIONS = 86
"""Size of the action space: the length of every legal-action mask."""

_TILE_ACTIONS = {"discard": DISCARD, "angang": ANGANG, "bugang": BUGANG}
_PLAIN_ACTIONS = {"pong": PONG, "kong": KONG, "hu": HU, "pass": PASS, "baoting": BAOTING}
ACTION_NAMES = tuple(_TILE_ACTIONS) + tuple(_PLAIN_ACTIONS)


def encode(name: str, tile: str | int | None = None) -> int:
    """Action index of a record action such as ``("discard", "5m")`` or ``("pong",)``."""
    if name in _TILE_ACTIONS:
        if tile is None:
            raise ValueError(f"action {name!r} needs a tile")
        if isinstance(tile, str):
            return _TILE_ACTIONS[name] + kind(tile)
        code(tile)
        return _TILE_ACTIONS[name] + int(tile)
    if name in _PLAIN_ACTIONS:
        if tile is not None:
            raise ValueError(f"action {name!r} takes no tile, got {tile!r}")
        return _PLAIN_ACTIONS[name]
    raise ValueError(f"unknown action {name!r}: allowed {list(ACTION_NAMES)}")


def decode(action: int) -> tuple[str, str | None]:
    """``(name, tile code or None)`` of an action index."""
    a = int(action)
    if not 0 <= a < NUM_ACTIONS:
        raise ValueError(f"action index {a} out of range 0-{NUM_ACTIONS - 1}")
    for name, base in _TILE_ACTIONS.items():
        if base <= a < base + NUM_KINDS:
            return name, code(a - base)
    return ACTION_NAMES[3 + a - PONG], None


def describe(action: int) -> str:
    """Readable form: ``"discard 5m"``, ``"pong"``."""
    name, tile = decode(action)
    return f"{name} {tile}" if tile else name


def is_legal(mask: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """bool ``[k]``: whether each row's action is in range 0-85 and legal under its row of
    ``mask`` ``[k, 86]`` (bool or 0/1)."""
    ok = (actions >= 0) & (actions < NUM_ACTIONS)
    rows = np.flatnonzero(ok)
    ok[rows] = mask[rows, actions[rows]]
    return ok


def random_legal(rng: np.random.Generator, mask) -> np.ndarray:
    """A uniformly random legal action per mask row (``mask`` ``[..., 86]``, bool or 0/1): the
    argmax of uniform draws over the legal actions, shifted above zero so that an illegal action
    never wins on a zero draw."""
    m = np.asarray(mask)
    return ((rng.random(m.shape) + 1.0) * m).argmax(-1)
