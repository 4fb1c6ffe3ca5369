"""Dealing, stepping and legal-action masks of a batch of hands (RULES.md 2-4, 6).

``deal`` starts hands from given walls; ``step`` applies one action per game for the seat the
decision protocol of RULES.md 3 asks, runs the forced moves that follow (draws, replacement
draws, window resolution), settles the hands that end, and computes the next actor's mask.
Each branch of the rules runs as array code on the subset of games that takes it.

Legend of the index arrays (all aligned with one another within a function):

- ``g``: game indices into the batch (the subset a branch works on); ``e``: ended games;
  ``live``: games that move in this step; ``w``: games that end with a win.
- ``s``, ``ss``: the seat acting (turn seat or asked seat) in each game of ``g``;
  ``p``: the discarder or the ``bugang`` seat whose tile a window decides on; ``q``: the
  other seats, ``[k, n-1]`` in turn order from ``p + 1`` (or the replying seat, ``[k]``).
- ``t``: a tile kind 0-26 per game; ``a``: an action number (``actions``).
- ``c``: the claiming seat; ``c_g``, ``c_p``, ``c_t``: the games, discarders and tiles of
  the windows that close with a pong or kong; ``kg`` / ``pg``: positions in those of the kongs
  and the pongs; ``gg``, ``cc``: the pong games and claimers.
- ``r``, ``c`` in ``_win_options``: row and column of ``np.nonzero`` over ``[k, n-1]``.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from zhuoji_env import hands
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import fastpath
from zhuoji_env.engine.rerpao import clear_turn_kongs, note_turn_kong, passport
from zhuoji_env.engine.settlement import baoting_bonus, meld_tiles, settle, streak_term, zimo_extra
from zhuoji_env.engine.state import (
    AN_KONG,
    BAOTING_DISCARD,
    BU_KONG,
    END_DRAW,
    END_QIANGGANG,
    END_RON,
    END_ZIMO,
    MAX_DECISIONS,
    MING_KONG,
    OPT_HU,
    OPT_KONG,
    OPT_PONG,
    OVER,
    PONG_MELD,
    RESPONSE,
    ROB,
    TURN,
    YAOJI_CLAIMED,
    YAOJI_IN_RIVER,
    YAOJI_NONE,
    YAOJI_WON,
    State,
    check_games,
    empty_state,
)
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import NUM_KINDS, NUM_TILES, YAOJI, kind_counts

_EYE = np.eye(NUM_KINDS, dtype=np.int8)
_STATE_FIELDS = dataclasses.fields(State)


class IllegalActionError(ValueError):
    """An action that the game's current decision does not allow."""


# --------------------------------------------------------------------------- dealing
def deal(rules: Rules, walls, dealer, streak=0) -> State:
    """Start hands from ``walls`` (``[B,108]`` kinds) with the given dealers and streaks."""
    if not isinstance(rules, Rules):
        raise TypeError(f"deal takes Rules (Rules.make(...)), got {type(rules).__name__}")
    walls = np.asarray(walls)
    if walls.ndim != 2 or walls.shape[1] != NUM_TILES or walls.shape[0] < 1:
        raise ValueError(f"walls must have shape [B, 108] with B >= 1, got {walls.shape}")
    if walls.dtype.kind not in "iu":
        raise ValueError(f"walls must hold integer kinds 0-26, got dtype {walls.dtype}")
    if walls.min() < 0 or walls.max() >= NUM_KINDS or (kind_counts(walls) != 4).any():
        raise ValueError("a wall must hold each of the 27 kinds exactly four times")
    b, n = walls.shape[0], rules.num_players
    seats, streaks = np.asarray(dealer), np.asarray(streak)
    if seats.dtype.kind not in "iu" or streaks.dtype.kind not in "iu":  # 1.7, True, "a"
        raise ValueError(
            f"dealer must be a seat 0-{n - 1} and streak an integer >= 0 (or one per wall), "
            f"got {dealer!r} and {streak!r}"
        )
    st = empty_state(b, n)
    st.wall[:] = walls
    st.dealer[:] = np.broadcast_to(seats, b)
    st.streak[:] = np.broadcast_to(streaks, b)
    if ((st.dealer < 0) | (st.dealer >= n)).any() or (st.streak < 0).any():
        raise ValueError(f"dealer must be a seat 0-{n - 1} and streak >= 0")
    rows = np.arange(b)
    for k in range(n):
        seat = (st.dealer + k) % n
        st.hand[rows, seat] = _EYE[walls[:, 13 * k : 13 * k + 13]].sum(1)
    others = np.ones((b, n), bool)
    others[rows, st.dealer] = False
    st.dealt_ready[others] = hands.is_ready(st.hand[others])
    last = walls[:, 13 * n]
    st.hand[rows, st.dealer, last] += 1
    st.front[:] = 13 * n + 1
    st.back[:] = NUM_TILES - 1
    st.phase[:] = TURN
    st.actor[:] = st.dealer
    st.turn_seat[:] = st.dealer
    st.drawn[:] = last
    st.drew[:] = True
    compute_masks(rules, st, rows)
    return st


# --------------------------------------------------------------------------- masks
def compute_masks(rules: Rules, st: State, g: np.ndarray) -> None:
    """Fill ``st.mask`` of games ``g``: the legal actions of each game's actor."""
    st.mask[g] = False
    ph = st.phase[g]
    turn = g[ph == TURN]
    if turn.size:
        _turn_mask(rules, st, turn)
    bt = g[ph == BAOTING_DISCARD]
    if bt.size:
        s = st.actor[bt]
        st.mask[bt, : A.DISCARD + NUM_KINDS] = _ready_discards(st.hand[bt, s])
    win = g[(ph == RESPONSE) | (ph == ROB)]
    if win.size:
        opts = st.claim_opts[win, st.actor[win]]
        st.mask[win, A.HU] = (opts & OPT_HU) > 0
        st.mask[win, A.PONG] = (opts & OPT_PONG) > 0
        st.mask[win, A.KONG] = (opts & OPT_KONG) > 0
        st.mask[win, A.PASS] = True


def _ready_discards(h: np.ndarray) -> np.ndarray:
    """``[k,27]``: discarding kind t leaves the (meld-free) hand ready."""
    after = np.maximum(h[:, None, :] - _EYE[None], 0)
    return (h > 0) & hands.is_ready(after)


def _turn_mask(rules: Rules, st: State, g: np.ndarray) -> None:
    s = st.actor[g]
    h = st.hand[g, s]
    m = st.meld[g, s]
    nm = (m > 0).sum(-1)
    live = st.front[g] <= st.back[g]
    frozen = st.baoting[g, s] > 0
    st.mask[g, A.HU] = st.drew[g] & hands.is_win(h, nm)
    discards = h > 0
    drawn_only = np.zeros_like(discards)
    fz = np.flatnonzero(frozen)
    drawn_only[fz, st.drawn[g[fz]]] = True
    st.mask[g, A.DISCARD : A.DISCARD + NUM_KINDS] = np.where(frozen[:, None], drawn_only, discards)
    can_kong = (live & ~frozen)[:, None]
    st.mask[g, A.ANGANG : A.ANGANG + NUM_KINDS] = (h == 4) & can_kong
    st.mask[g, A.BUGANG : A.BUGANG + NUM_KINDS] = (m == PONG_MELD) & (h >= 1) & can_kong
    if rules.baoting:
        first = ~st.discarded[g, s] & (nm == 0) & st.drew[g] & (st.baoting[g, s] == 0)
        if first.any():
            f = np.flatnonzero(first)
            st.mask[g[f], A.BAOTING] = _ready_discards(h[f]).any(-1)


# --------------------------------------------------------------------------- moves
def _record(st: State, g, seat, action) -> None:
    pos = st.rec_len[g]
    if (pos >= MAX_DECISIONS).any():
        raise RuntimeError(f"more than {MAX_DECISIONS} decisions in one hand")
    st.rec_seat[g, pos] = seat
    st.rec_action[g, pos] = action
    st.rec_len[g] += 1


def _live_draw(st: State, g: np.ndarray, s: np.ndarray) -> None:
    """Seat ``s`` draws from the front and takes a turn; an empty wall ends in 黄庄."""
    empty = st.front[g] > st.back[g]
    if empty.any():
        e = g[empty]
        st.end[e] = END_DRAW
        st.phase[e] = OVER
        g, s = g[~empty], s[~empty]
    t = st.wall[g, st.front[g]]
    st.front[g] += 1
    st.hand[g, s, t] += 1
    clear_turn_kongs(st, g)
    st.rep_draw[g] = False
    _begin_turn(st, g, s, t)


def _replacement_draw(st: State, g: np.ndarray, s: np.ndarray) -> None:
    """Seat ``s`` draws from the back after a kong (补牌); its turn continues."""
    t = st.wall[g, st.back[g]]
    st.back[g] -= 1
    st.hand[g, s, t] += 1
    st.rep_draw[g] = True
    _begin_turn(st, g, s, t)


def _begin_turn(st: State, g, s, drawn) -> None:
    st.pass_lock[g, s] = False
    st.drawn[g] = drawn
    st.drew[g] = True
    st.phase[g] = TURN
    st.actor[g] = s
    st.turn_seat[g] = s
    st.tile[g] = -1


def _discard(rules: Rules, st: State, g, s, t) -> None:
    st.hand[g, s, t] -= 1
    pos = st.river_len[g, s]
    st.river[g, s, pos] = t
    st.river_len[g, s] += 1
    st.river_counts[g, s, t] += 1
    st.discarded[g, s] = True
    first = (t == YAOJI) & (st.yaoji_fate[g] == YAOJI_NONE)
    f = g[first]
    st.yaoji_fate[f] = YAOJI_IN_RIVER
    st.yaoji_seat[f] = s[first]
    st.yaoji_pos[f] = pos[first]
    st.tile[g] = t
    _open_window(rules, st, g, s, t, rob=False)


def _win_options(rules: Rules, st: State, g, q, t, discarder, rob: bool) -> np.ndarray:
    """``[k, m]``: seats ``q`` may be offered ``hu`` on tile ``t`` (passport and lock, 5.3-5.4)."""
    h = st.hand[g[:, None], q] + _EYE[t][:, None, :]
    m = st.meld[g[:, None], q]
    nm = (m > 0).sum(-1)
    ok = hands.is_win(h, nm)
    if rules.pass_win == "forbid":
        ok &= ~st.pass_lock[g[:, None], q]
    if not rob and ok.any():
        r, c = np.nonzero(ok)
        plain = hands.is_plain(h[r, c], meld_tiles(m[r, c]), nm[r, c])
        ok[r, c] = ~plain | passport(
            rules,
            owns_kong=(m[r, c] >= AN_KONG).any(-1),
            turn_kong=st.turn_kong[g[r]],
            baoting_winner=st.baoting[g[r], q[r, c]],
            baoting_discarder=st.baoting[g[r], discarder[r]],
        )
    return ok


def claim_options(rules: Rules, st: State, g, p, t, rob: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(q, opts)``: the other seats ``[k, n-1]`` in turn order from ``p+1`` and the claims
    (bits ``OPT_HU``, ``OPT_PONG``, ``OPT_KONG``) each may make on seat ``p``'s tile ``t``, a
    discard or (``rob``) a bugang tile."""
    n = rules.num_players
    q = (p[:, None] + np.arange(1, n)) % n
    opts = np.where(_win_options(rules, st, g, q, t, p, rob), OPT_HU, 0)
    if not rob:
        held = st.hand[g[:, None], q, t[:, None]]
        free = st.baoting[g[:, None], q] == 0
        live = (st.front[g] <= st.back[g])[:, None]
        opts |= np.where(free & (held >= 2), OPT_PONG, 0)
        opts |= np.where(free & (held == 3) & live, OPT_KONG, 0)
    return q, opts


def _open_window(rules: Rules, st: State, g, p, t, rob: bool) -> None:
    """Open a response window (after a discard) or rob window (after a bugang) for seat p's t."""
    n = rules.num_players
    q, opts = claim_options(rules, st, g, p, t, rob)
    st.claim_opts[g] = 0
    st.claim_opts[g[:, None], q] = opts
    st.claim_choice[g] = -1
    st.turn_seat[g] = p
    st.phase[g] = ROB if rob else RESPONSE
    nxt = _next_asked(st, g, p, p)
    asked = nxt >= 0
    st.actor[g[asked]] = nxt[asked]
    quiet = g[~asked]
    if quiet.size:
        if rob:
            _complete_bugang(st, quiet, p[~asked], t[~asked])
        else:
            _live_draw(st, quiet, (p[~asked] + 1) % n)


def _next_asked(st: State, g, p, after) -> np.ndarray:
    """The next seat after ``after`` in turn order from ``p+1`` with a claim, or -1."""
    n = st.num_players
    cur = (after - p) % n
    best = np.full(g.shape, -1, dtype=np.int64)
    for j in range(n - 1, 0, -1):
        q = (p + j) % n
        has = (st.claim_opts[g, q] > 0) & (j > cur)
        best = np.where(has, q, best)
    return best


def _late_kong(st: State, g, s, t, concealed: bool) -> np.ndarray:
    """憨包豆 (late kong, RULES.md 4): a kong of ``t`` by seat ``s`` is late unless ``t`` is the
    tile it drew most recently in this turn; a concealed kong (``angang``) before the seat's
    first discard of the hand (a dealt quad) never is. A ``kong`` on a discard never is."""
    late = t != st.drawn[g]
    if concealed:
        late &= st.discarded[g, s]
    return late


def _complete_bugang(st: State, g, s, t) -> None:
    st.hand[g, s, t] -= 1
    st.meld[g, s, t] = BU_KONG
    st.meld_late[g, s, t] = _late_kong(st, g, s, t, concealed=False)
    note_turn_kong(st, g, t)
    st.tile[g] = -1
    _replacement_draw(st, g, s)


def _penalty(rules: Rules, st: State, g, q, t, rob: bool) -> None:
    """A locked seat chose ``hu`` under ``pass_win = penalty``: it pays everyone (包牌, 5.4)."""
    h = st.hand[g, q] + _EYE[t]
    m = st.meld[g, q]
    nm = (m > 0).sum(-1)
    mt = meld_tiles(m)
    value, plain = hands.value_and_plain(h, mt, nm, rules.pattern_table)
    if rob:
        value = value + zimo_extra(rules, plain)
    value = value + baoting_bonus(rules, st.baoting[g, q])
    n = rules.num_players
    for j in range(1, n):
        o = (q + j) % n
        streak = streak_term(rules, st, g, q, o)
        st.baopai[g, q, o] += value + streak


def _window_reply(rules: Rules, st: State, g, q, a, rob: bool) -> None:
    p = st.turn_seat[g]
    t = st.tile[g]
    locked_hu = (a == A.HU) & st.pass_lock[g, q]
    if locked_hu.any():
        lk = np.flatnonzero(locked_hu)
        _penalty(rules, st, g[lk], q[lk], t[lk], rob)
    st.claim_choice[g, q] = np.where(locked_hu, A.PASS, a)
    nxt = _next_asked(st, g, p, q)
    more = nxt >= 0
    st.actor[g[more]] = nxt[more]
    done = ~more
    if done.any():
        _resolve_window(rules, st, g[done], p[done], t[done], rob)


def _resolve_window(rules: Rules, st: State, g, p, t, rob: bool) -> None:
    n = rules.num_players
    choice = st.claim_choice[g]
    hu = choice == A.HU
    offered = (st.claim_opts[g] & OPT_HU) > 0
    st.pass_lock[g] |= offered & ~hu
    won = hu.any(-1)
    if won.any():
        w = g[won]
        st.winners[w] = hu[won]
        st.end[w] = END_QIANGGANG if rob else END_RON
        st.phase[w] = OVER
        if rob:
            st.hand[w, p[won], t[won]] -= 1
        else:
            _take_from_river(st, w, p[won], YAOJI_WON)
    g, p, t, choice = g[~won], p[~won], t[~won], choice[~won]
    if not g.size:
        return
    if rob:
        _complete_bugang(st, g, p, t)
        return
    claim = (choice == A.PONG) | (choice == A.KONG)
    claimed = claim.any(-1)
    if claimed.any():
        c_g, c_p, c_t = g[claimed], p[claimed], t[claimed]
        c = claim[claimed].argmax(-1)
        kong = choice[claimed, c] == A.KONG
        _take_from_river(st, c_g, c_p, YAOJI_CLAIMED, claimer=c)
        st.hand[c_g, c, c_t] -= np.where(kong, 3, 2).astype(np.int8)
        st.meld[c_g, c, c_t] = np.where(kong, MING_KONG, PONG_MELD)
        st.meld_from[c_g, c, c_t] = c_p
        clear_turn_kongs(st, c_g)
        st.rep_draw[c_g] = False
        kg = np.flatnonzero(kong)
        note_turn_kong(st, c_g[kg], c_t[kg])
        if kg.size:
            _replacement_draw(st, c_g[kg], c[kg])
        pg = np.flatnonzero(~kong)
        if pg.size:
            gg, cc = c_g[pg], c[pg]
            st.phase[gg] = TURN
            st.actor[gg] = cc
            st.turn_seat[gg] = cc
            st.drawn[gg] = -1
            st.drew[gg] = False
            st.tile[gg] = -1
    rest = ~claimed
    if rest.any():
        _live_draw(st, g[rest], (p[rest] + 1) % n)


def _take_from_river(st: State, g, p, fate, claimer=None) -> None:
    """The latest discard of seat p leaves its river (claimed or won on)."""
    pos = st.river_len[g, p] - 1
    t = st.river[g, p, pos]
    st.river_taken[g, p, pos] = True
    st.river_counts[g, p, t] -= 1
    first = (
        (st.yaoji_fate[g] == YAOJI_IN_RIVER) & (st.yaoji_seat[g] == p) & (st.yaoji_pos[g] == pos)
    )
    st.yaoji_fate[g[first]] = fate
    if claimer is not None:
        st.yaoji_claimer[g[first]] = claimer[first]


# --------------------------------------------------------------------------- step
def check_actions(st: State, actions: np.ndarray, active: np.ndarray | None = None):
    """Validate one action per game: legal for the actor, or -1 for a finished game or one
    left out of ``active`` (a bool array ``[B]``: a list of ints or one flag for all is
    refused, not broadcast)."""
    actions = np.asarray(actions)
    if actions.shape != (st.batch_size,):
        raise ValueError(f"expected {st.batch_size} actions, got shape {actions.shape}")
    if not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(f"actions must be integers, got dtype {actions.dtype}")
    if active is not None:
        active = np.asarray(active)
        if active.dtype != bool or active.shape != (st.batch_size,):
            raise ValueError(
                f"active must be None or a bool array of shape ({st.batch_size},), one flag per "
                f"game, got dtype {active.dtype} and shape {active.shape}"
            )
    over = st.phase == OVER
    bad_over = over & (actions != -1)
    if bad_over.any():
        i = int(np.flatnonzero(bad_over)[0])
        raise IllegalActionError(f"game {i}: the hand is over; pass -1 for finished games")
    live = ~over
    if active is not None:
        held = live & ~active
        if (actions[held] != -1).any():
            i = int(np.flatnonzero(held & (actions != -1))[0])
            raise IllegalActionError(f"game {i} is not active in this step; pass -1 for it")
        live &= ~held
    bad = live & ~A.is_legal(st.mask, actions)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise IllegalActionError(
            f"game {i}: seat {st.actor[i]} tried {_describe(actions[i])}; "
            f"legal: {legal_names(st, i)}"
        )
    return actions


def _describe(a) -> str:
    try:
        return A.describe(int(a))
    except ValueError:
        return f"action {int(a)} (out of range 0-{A.NUM_ACTIONS - 1})"


def legal_names(st: State, i: int) -> list[str]:
    """Readable legal actions of game ``i`` (an index 0..B-1: not a bool, a float or from the
    end)."""
    (i,) = check_games([i], st.batch_size)
    return [A.describe(a) for a in np.flatnonzero(st.mask[i])]


SHADOW_ENV = "ZHUOJI_FASTPATH_SHADOW"
"""Environment variable: ``1`` checks every fast-path step against the array code."""
SHADOW = os.environ.get(SHADOW_ENV, "0") != "0"
"""Shadow mode, read from ``SHADOW_ENV`` when this module is first imported (once, as a step
of the fast path costs about 25 us and a look-up in ``os.environ`` several)."""


class FastPathMismatchError(RuntimeError):
    """The batch-1 fast path left a state that the array code does not (shadow mode)."""


def step(rules: Rules, st: State, actions, active=None) -> np.ndarray:
    """Apply one action per game in place; returns a bool ``[B]`` of hands that ended now.

    Every action must be legal for its game's actor (``st.mask``); finished games take ``-1``.
    With ``active`` (bool ``[B]``) only those games move; the others take ``-1`` and keep
    their state. A batch of one takes the plain-Python :mod:`~zhuoji_env.engine.fastpath`
    for the moves it covers. In shadow mode (:data:`SHADOW`: ``ZHUOJI_FASTPATH_SHADOW=1`` in
    the environment, which the test suite sets) each such step also runs the array code on a
    copy and raises :class:`FastPathMismatchError` if any state field differs.
    """
    if st.batch_size == 1 and active is None:
        shadow = st.copy() if SHADOW else None
        ended = fastpath.step_one(rules, st, actions)
        if ended is not None:
            if shadow is not None:
                _check_shadow(rules, shadow, actions, st, ended)
            return ended
    return step_arrays(rules, st, actions, active)


def _check_shadow(rules: Rules, before: State, actions, fast: State, ended: np.ndarray) -> None:
    """Shadow mode: the array code applied to ``before`` must give ``fast`` and ``ended``."""
    phase = int(before.phase[0])
    want = step_arrays(rules, before, actions)
    diffs = [
        f.name
        for f in _STATE_FIELDS
        if not np.array_equal(getattr(fast, f.name), getattr(before, f.name))
    ]
    if not np.array_equal(ended, want):
        diffs.append("ended")
    if diffs:
        raise FastPathMismatchError(
            f"the fast path and the array code differ after action {actions.tolist()} "
            f"(phase {phase} before it) in: {', '.join(diffs)}"
        )


def step_arrays(rules: Rules, st: State, actions, active=None) -> np.ndarray:
    """:func:`step` by the array code alone, whatever the batch size (the fast path's check)."""
    actions = check_actions(st, actions, active)
    live = np.flatnonzero(actions != -1)
    if not live.size:
        return np.zeros(st.batch_size, bool)
    a = actions[live].astype(np.int64)
    _record(st, live, st.actor[live], a)
    ph = st.phase[live]
    s = st.actor[live].astype(np.int64)

    turnlike = (ph == TURN) | (ph == BAOTING_DISCARD)
    sel = turnlike & (a == A.HU)
    if sel.any():
        w = live[sel]
        st.winners[w, s[sel]] = True
        st.end[w] = END_ZIMO
        st.phase[w] = OVER
    sel = turnlike & (a < A.DISCARD + NUM_KINDS)
    if sel.any():
        _discard(rules, st, live[sel], s[sel], a[sel])
    sel = (ph == TURN) & (a >= A.ANGANG) & (a < A.ANGANG + NUM_KINDS)
    if sel.any():
        g, ss, t = live[sel], s[sel], a[sel] - A.ANGANG
        st.hand[g, ss, t] -= 4
        st.meld[g, ss, t] = AN_KONG
        st.meld_late[g, ss, t] = _late_kong(st, g, ss, t, concealed=True)
        note_turn_kong(st, g, t)
        _replacement_draw(st, g, ss)
    sel = (ph == TURN) & (a >= A.BUGANG) & (a < A.BUGANG + NUM_KINDS)
    if sel.any():
        g, ss, t = live[sel], s[sel], a[sel] - A.BUGANG
        st.tile[g] = t
        _open_window(rules, st, g, ss, t, rob=True)
    sel = (ph == TURN) & (a == A.BAOTING)
    if sel.any():
        g, ss = live[sel], s[sel]
        hard = (ss == st.dealer[g]) | st.dealt_ready[g, ss]
        st.baoting[g, ss] = np.where(hard, 1, 2)
        st.phase[g] = BAOTING_DISCARD
    for phase, rob in ((RESPONSE, False), (ROB, True)):
        sel = ph == phase
        if sel.any():
            _window_reply(rules, st, live[sel], s[sel], a[sel], rob)

    ended = np.zeros(st.batch_size, bool)
    ended[live] = st.phase[live] == OVER
    e = np.flatnonzero(ended)
    if e.size:
        settle(rules, st, e)
    going = live[st.phase[live] != OVER]
    compute_masks(rules, st, going)
    return ended
