"""A plain-Python path of :func:`core.step <zhuoji_env.engine.core.step>` for a batch of one.

At batch size 1 (the AEC environment, replays, a human at the terminal) the array code pays
numpy's per-call overhead on every line, about 200 us a step. The moves of nearly every turn
are written here a second time with Python integers on the same :class:`State` arrays: a
discard (打牌) and the response window it opens; a pass, pong (碰) or 点豆 kong in that window
when nobody wins on the tile; the live or replacement draw that follows; a wall running out
(黄庄); and the next actor's mask. Everything else (wins, concealed kongs and 转弯豆, 报听,
robbing, pass-win penalties) returns ``None`` untouched for the array code to apply.
``tests/test_fastpath.py`` plays games of every preset and many switches through both paths
and compares every field of the state after every step; in shadow mode
(``ZHUOJI_FASTPATH_SHADOW=1``, which the test suite sets) ``core.step`` does the same check on
every step it hands to this module. The rules shared with the array code (the 热炮 passport and
the kongs of the turn) come from :mod:`~zhuoji_env.engine.rerpao`.
"""

from __future__ import annotations

import numpy as np

from zhuoji_env import hands
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.rerpao import clear_turn_kongs, note_turn_kong, passport
from zhuoji_env.engine.settlement import meld_tiles, settle
from zhuoji_env.engine.state import (
    AN_KONG,
    BAOTING_DISCARD,
    END_DRAW,
    MAX_DECISIONS,
    MING_KONG,
    OPT_HU,
    OPT_KONG,
    OPT_PONG,
    OVER,
    PONG_MELD,
    RESPONSE,
    TURN,
    YAOJI_CLAIMED,
    YAOJI_IN_RIVER,
    YAOJI_NONE,
    State,
)
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import NUM_KINDS, YAOJI

_DISCARDS = slice(A.DISCARD, A.DISCARD + NUM_KINDS)
_ANGANGS = slice(A.ANGANG, A.ANGANG + NUM_KINDS)
_BUGANGS = slice(A.BUGANG, A.BUGANG + NUM_KINDS)


def step_one(rules: Rules, st: State, actions) -> np.ndarray | None:
    """:func:`~zhuoji_env.engine.core.step` of a one-game batch when the action is a legal
    discard, or a legal pass, pong or kong in a response window that closes without a win;
    ``None`` (nothing changed) for anything else, including illegal input, which the array code
    then reports."""
    if not isinstance(actions, np.ndarray) or actions.shape != (1,):
        return None
    if actions.dtype.kind not in "iu":
        return None
    a = int(actions[0])
    if not 0 <= a < A.NUM_ACTIONS or not st.mask[0, a]:
        return None
    pos = int(st.rec_len[0])
    if pos >= MAX_DECISIONS:
        return None
    phase = int(st.phase[0])
    seat = int(st.actor[0])
    if phase in (TURN, BAOTING_DISCARD) and a < A.DISCARD + NUM_KINDS:
        _record(st, pos, seat, a)
        _discard(rules, st, seat, a - A.DISCARD)
    elif phase == RESPONSE and a != A.HU:
        nxt = _next_asked(st, int(st.turn_seat[0]), seat)
        if nxt < 0 and A.HU in st.claim_choice[0].tolist():
            return None  # the window closes with a win (a locked seat's void hu reads as pass)
        _record(st, pos, seat, a)
        _reply(rules, st, seat, a, nxt)
    else:
        return None
    if st.phase[0] == OVER:
        settle(rules, st, np.zeros(1, dtype=np.int64))
        return np.ones(1, dtype=bool)
    _masks(rules, st)
    return np.zeros(1, dtype=bool)


def _record(st: State, pos: int, seat: int, a: int) -> None:
    st.rec_seat[0, pos] = seat
    st.rec_action[0, pos] = a
    st.rec_len[0] = pos + 1


def _discard(rules: Rules, st: State, s: int, t: int) -> None:
    """Seat ``s`` discards ``t`` and the response window opens (RULES.md 3.2)."""
    st.hand[0, s, t] -= 1
    pos = int(st.river_len[0, s])
    st.river[0, s, pos] = t
    st.river_len[0, s] = pos + 1
    st.river_counts[0, s, t] += 1
    st.discarded[0, s] = True
    if t == YAOJI and st.yaoji_fate[0] == YAOJI_NONE:
        st.yaoji_fate[0] = YAOJI_IN_RIVER
        st.yaoji_seat[0] = s
        st.yaoji_pos[0] = pos
    st.tile[0] = t
    n = rules.num_players
    live = st.front[0] <= st.back[0]
    all_hands = st.hand[0].tolist()
    melds = st.meld[0].tolist()
    baoting = st.baoting[0].tolist()
    locked = st.pass_lock[0].tolist()
    opts = [0] * n
    asked = -1
    for j in range(1, n):
        q = (s + j) % n
        h = all_hands[q]
        nm = NUM_KINDS - melds[q].count(0)
        h[t] += 1
        o = 0
        if hands.is_win_one(h, nm) and not (rules.pass_win == "forbid" and locked[q]):
            may = _may_ron(rules, st, h, melds[q], nm, baoting[q], baoting[s])
            o = OPT_HU if may else 0
        h[t] -= 1
        if not baoting[q]:
            if h[t] >= 2:
                o |= OPT_PONG
            if h[t] == 3 and live:
                o |= OPT_KONG
        opts[q] = o
        if o and asked < 0:
            asked = q
    st.claim_opts[0] = opts
    st.claim_choice[0] = -1
    st.turn_seat[0] = s
    st.phase[0] = RESPONSE
    if asked >= 0:
        st.actor[0] = asked
    else:
        _live_draw(st, (s + 1) % n)


def _may_ron(rules: Rules, st: State, h: list[int], meld: list[int], nm: int, bt_q, bt_s) -> bool:
    """A winning hand on a discard needs the passport of RULES.md 5.3 unless it is not plain
    (``bt_q``, ``bt_s``: the 报听 levels of the winner and the discarder)."""
    if passport(rules, any(x >= AN_KONG for x in meld), st.turn_kong[0], bt_q, bt_s):
        return True
    m = np.array(meld, dtype=np.int8)
    return not bool(hands.is_plain(np.array(h, dtype=np.int8), meld_tiles(m), nm))


def _next_asked(st: State, p: int, after: int) -> int:
    """The next seat after ``after`` in turn order from ``p + 1`` with a claim, or -1."""
    n = st.num_players
    opts = st.claim_opts[0].tolist()
    for j in range((after - p) % n + 1, n):
        q = (p + j) % n
        if opts[q]:
            return q
    return -1


def _reply(rules: Rules, st: State, q: int, a: int, nxt: int) -> None:
    """Seat ``q`` passes, pongs or kongs; the window goes on to seat ``nxt`` or, the last
    reply, (``nxt < 0``) resolves (RULES.md 3.3)."""
    p = int(st.turn_seat[0])
    st.claim_choice[0, q] = a
    if nxt >= 0:
        st.actor[0] = nxt
        return
    st.pass_lock[0] |= (st.claim_opts[0] & OPT_HU) > 0  # every seat offered hu declined it
    choice = st.claim_choice[0].tolist()
    claimers = [c for c, x in enumerate(choice) if x == A.PONG or x == A.KONG]
    if not claimers:
        _live_draw(st, (p + 1) % rules.num_players)
        return
    c = claimers[0]
    kong = choice[c] == A.KONG
    t = _take_from_river(st, p, c)
    st.hand[0, c, t] -= 3 if kong else 2
    st.meld[0, c, t] = MING_KONG if kong else PONG_MELD
    st.meld_from[0, c, t] = p
    clear_turn_kongs(st, 0)
    st.rep_draw[0] = False
    if kong:
        note_turn_kong(st, 0, t)
        _replacement_draw(st, c)
    else:
        st.phase[0] = TURN
        st.actor[0] = c
        st.turn_seat[0] = c
        st.drawn[0] = -1
        st.drew[0] = False
        st.tile[0] = -1


def _take_from_river(st: State, p: int, claimer: int) -> int:
    """The latest discard of seat ``p`` leaves its river for a pong or kong; returns it."""
    pos = int(st.river_len[0, p]) - 1
    t = int(st.river[0, p, pos])
    st.river_taken[0, p, pos] = True
    st.river_counts[0, p, t] -= 1
    if st.yaoji_fate[0] == YAOJI_IN_RIVER and st.yaoji_seat[0] == p and st.yaoji_pos[0] == pos:
        st.yaoji_fate[0] = YAOJI_CLAIMED
        st.yaoji_claimer[0] = claimer
    return t


def _replacement_draw(st: State, s: int) -> None:
    """Seat ``s`` draws from the back after a kong (补牌); its turn continues."""
    back = int(st.back[0])
    t = int(st.wall[0, back])
    st.back[0] = back - 1
    st.hand[0, s, t] += 1
    st.rep_draw[0] = True
    _begin_turn(st, s, t)


def _live_draw(st: State, s: int) -> None:
    """Seat ``s`` draws from the front and takes a turn; an empty wall ends in 黄庄."""
    front = int(st.front[0])
    if front > st.back[0]:
        st.end[0] = END_DRAW
        st.phase[0] = OVER
        return
    t = int(st.wall[0, front])
    st.front[0] = front + 1
    st.hand[0, s, t] += 1
    clear_turn_kongs(st, 0)
    st.rep_draw[0] = False
    _begin_turn(st, s, t)


def _begin_turn(st: State, s: int, drawn: int) -> None:
    st.pass_lock[0, s] = False
    st.drawn[0] = drawn
    st.drew[0] = True
    st.phase[0] = TURN
    st.actor[0] = s
    st.turn_seat[0] = s
    st.tile[0] = -1


def _masks(rules: Rules, st: State) -> None:
    """The mask of the next actor: a turn (after a draw, a pong or a kong) or a response."""
    row = st.mask[0]
    row[:] = False
    s = int(st.actor[0])
    if st.phase[0] == RESPONSE:
        o = int(st.claim_opts[0, s])
        row[A.HU] = o & OPT_HU
        row[A.PONG] = o & OPT_PONG
        row[A.KONG] = o & OPT_KONG
        row[A.PASS] = True
        return
    hrow = st.hand[0, s]
    h = hrow.tolist()
    meld = st.meld[0, s]
    nm = NUM_KINDS - meld.tolist().count(0)
    frozen = st.baoting[0, s] > 0
    drew = bool(st.drew[0])
    row[A.HU] = drew and hands.is_win_one(h, nm)
    if frozen:
        row[_DISCARDS][int(st.drawn[0])] = True  # indexed as the array code indexes it
    else:
        row[_DISCARDS] = hrow > 0
        if st.front[0] <= st.back[0]:
            row[_ANGANGS] = hrow == 4
            row[_BUGANGS] = (meld == PONG_MELD) & (hrow >= 1)
    if rules.baoting and drew and nm == 0 and not frozen and not st.discarded[0, s]:
        row[A.BAOTING] = bool(hands.ready_discards_one(h, 0))
