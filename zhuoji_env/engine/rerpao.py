"""热炮 (杠上炮, RULES.md 5.3 and 7.2) and the passport it gives: every rule about them, used
by the array code (``core``, ``settlement``) and the batch-1 fast path alike.

热炮 is a win on a discard made in a turn in which the discarder completed a kong (any kind:
late, or claimed from a discard, too). ``rerpao`` is the record format's spelling (the ledger
item and the switch); the state keeps the kongs of the current turn in ``State.turn_kong``.
The functions take numpy arrays or Python integers for the games ``g`` (a batch index array
in the array code, ``0`` in the fast path).
"""

from __future__ import annotations

import numpy as np

from zhuoji_env.engine.state import END_RON, State
from zhuoji_env.rules import Rules


def note_turn_kong(st: State, g, t) -> None:
    """The turn seat of games ``g`` completed a kong of kind ``t`` in this turn."""
    st.turn_kong[g, t] = True


def clear_turn_kongs(st: State, g) -> None:
    """A new turn starts in games ``g`` (a live draw, a pong or a 点豆): no kongs in it yet."""
    st.turn_kong[g] = False


def rerpao_passport(turn_kong: np.ndarray) -> np.ndarray:
    """热炮 passport (RULES.md 5.3): the discarder completed a kong in the turn of its discard,
    so a plain hand may win on that discard. ``turn_kong``: ``[..., 27]``."""
    return turn_kong.any(-1)


def passport(rules: Rules, owns_kong, turn_kong, baoting_winner, baoting_discarder) -> np.ndarray:
    """The passport (通行证, RULES.md 5.3) that a plain hand needs to win on a discard: the
    winner owns a kong of any kind, or the discard is a 热炮 (``turn_kong``: ``[..., 27]``), or
    under ``baoting`` the winner or the discarder declared 报听 (levels > 0). Robbing a kong
    needs none, and a self-drawn win never does."""
    ok = np.asarray(owns_kong) | rerpao_passport(turn_kong)
    if rules.baoting:
        ok = ok | (np.asarray(baoting_winner) > 0) | (np.asarray(baoting_discarder) > 0)
    return ok


def is_rerpao(end: np.ndarray, turn_kong: np.ndarray) -> np.ndarray:
    """热炮 (RULES.md 7.2): the hands won on a discard made after a kong in the same turn."""
    return (end == END_RON) & rerpao_passport(turn_kong)


def rerpao_void_kongs(turn_kong: np.ndarray, rerpao: np.ndarray) -> np.ndarray:
    """``[k,27]``: the discarder's kongs that 热炮 voids, those completed in that turn (7.2)."""
    return turn_kong & rerpao[:, None]


def rerpao_burned(rules: Rules, rerpao: np.ndarray) -> np.ndarray:
    """``[k]``: the discarder is burned (烧鸡烧豆) by 热炮 under ``rerpao = plus_one_burn``."""
    return rerpao & (rules.rerpao == "plus_one_burn")


def rerpao_extra(
    rules: Rules,
    *,
    void_kongs: np.ndarray,
    meld: np.ndarray,
    late: np.ndarray,
    discarder_ready: np.ndarray,
) -> np.ndarray:
    """``[k]``: the 热炮 extra (item ``rerpao``) the discarder pays each winner (RULES.md 7.2).

    ``plus_one`` and ``plus_one_burn``: 1. ``transfer``: what the discarder's void kongs
    (``void_kongs``, its ``meld`` types and ``late`` flags, all ``[k,27]``) would have collected
    under 7.3 at the kong values in force, a late kong nothing; and, as 7.3 pays a kong only
    to a ready owner under ``ready_required`` (双杀), 0 there when the discarder is not ready at
    the end of the hand (``discarder_ready``, ``[k]``).
    """
    if rules.rerpao != "transfer":
        return np.ones(void_kongs.shape[0], dtype=np.int64)
    n = rules.num_players
    an, bu, ming = rules.kong_values
    collected = np.array([0, 0, an * (n - 1), bu * (n - 1), ming])[meld]
    extra = ((void_kongs & ~late) * collected).sum(-1)
    if rules.ready_required:
        extra = np.where(discarder_ready, extra, 0)
    return extra
