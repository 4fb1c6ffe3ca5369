"""Observation encoding ``zhuoji-obs-v1``: engine state -> one seat's tensor, and the global state.

An observation is a flat float32 vector made of named blocks. Seats are **relative to the
observer**: slot 0 is the observer, slot 1 its 下家 (the next seat to play), and so on; with 3
players slot 3 is always zero. Tile axes are the 27 kinds (``1m``..``9s``). Nothing hidden from
the observer is encoded: other seats' concealed tiles, the order of the wall, the flip tile and
the kinds of other seats' concealed kongs never appear. Some public facts are left out too:
who fed each pong or 点豆 (which seat pays for a 点豆, RULES.md 7.3), which discards were
claimed (``river_recent`` shows them unmarked), the order of discards between seats, and a
pass-win penalty (包牌) paid during the hand; adding them would change ``OBS_SIZE`` and with it
every trained network's input.

=================== ========= ==============================================================
block               shape     meaning
=================== ========= ==============================================================
hand                27        own concealed tiles, counts 0-4
pong                4 x 27    1 where the seat holds a pong of the kind
kong_exposed        4 x 27    1 where the seat holds an exposed kong (点豆 or 转弯豆)
kong_concealed_own  27        1 where the observer holds a concealed kong (闷豆)
kong_counts         4 x 4     per seat: 闷豆, 转弯豆, 点豆 and 憨包豆 (late) kongs made
river               4 x 27    per seat: discards still lying in its river, counts
river_recent        4 x 6 x27 per seat: its last 6 discards, most recent first, one-hot
                              (claimed ones included)
tile                27        the discard or bugang tile being decided on (one-hot)
tile_from           4         the seat that discarded it or declared the bugang
phase               4         turn, response to a discard, rob window, 报听 discard
to_act              4         the seat asked now (always slot 0 when the observer must act;
                              in a claim window only seats that may claim are asked, RULES.md
                              3, so a seat not asked sees who may: the environments hand a
                              seat its observation only when it is asked)
drawn               27        the tile the observer just drew, on its own turn
turn_flags          3         the turn seat has drawn this turn (a draw, or a kong's
                              replacement after a pong); latest draw was a replacement
                              (杠上开花 chance); the turn seat completed a kong this turn (热炮)
yaoji               9         1s discarded so far /4; first 1s discarded by seat (4);
                              its fate: in the river (冲锋鸡), claimed (责任鸡), won on; claimer
                              is the observer
zeren_claimer       4         the seat that ponged or konged the first 1s
baoting             4 x 2     per seat: declared 硬报 (hard), 软报 (soft)
pass_lock           1         the observer passed a win and is locked (过手胡)
wall                2         live tiles left /108; the wall is empty
dealer              4         the dealer's seat
streak              1         dealer streak k /10
scores              4         match scores so far /100
hand_no             1         hands played in this match / hands_per_game
seats_present       4         1 for each seat in play (3 or 4 players)
waits               27        kinds that would complete the observer's hand (3k+1 tiles),
                              or kinds whose discard leaves it ready (3k+2 tiles)
shanten             8         one-hot shanten -1..6+ of the observer's hand (seven pairs on)
discard_shanten     27        with 3k+2 tiles: (shanten after discarding the kind + 1) / 8 for
                              each kind held, else 0
best_discard        27        with 3k+2 tiles: 1 for the kinds whose discard leaves the least
                              shanten
=================== ========= ==============================================================

**``zhuoji-obs-v2``** is the v1 observation followed by blocks *derived from it alone*
(:func:`features`, :func:`with_features`): facts a player works out from what is on the table
that v1 leaves implicit. They add no information, only arithmetic a network would otherwise
have to learn. The environments always emit v1; a network trained on v2 (its checkpoint says
so) derives the rest itself, so v1 and v2 policies sit at the same table.

=================== ========= ==============================================================
block (v2 only)     shape     meaning
=================== ========= ==============================================================
unseen              27        copies of each kind the observer has not seen /4 (in other
                              hands, other seats' concealed kongs, or the wall)
passport            4         per seat: owns a kong or declared 报听, so it may win a plain
                              hand on a discard (通行证, RULES.md 5.3)
wait_value          27        3k+1 tiles: pattern value (RULES.md 5.3) of the win on each
                              waiting kind; 3k+2: per discard that leaves the hand ready, the
                              best pattern value among its waits; / the largest pattern value
live_waits          27        3k+1: unseen copies of each waiting kind /4; 3k+2: per ready
                              discard, unseen copies of all its waits /16
=================== ========= ==============================================================

``encode_state`` (for centralised critics and oracle guiding) is seat 0's observation, so its
seats are absolute, followed by the hidden information: every seat's concealed tiles (4 x 27),
the kinds of every concealed kong (4 x 27), the live wall as counts (27) and the flip tile the
wall would turn up now (27). ``encode_hidden`` is that hidden part alone, with the seats
relative to a given seat, for an oracle critic beside the seat's own observation.
"""

from __future__ import annotations

import numpy as np

from zhuoji_env import hands
from zhuoji_env.engine.settlement import meld_tiles
from zhuoji_env.engine.state import (
    AN_KONG,
    BAOTING_DISCARD,
    BU_KONG,
    MING_KONG,
    PONG_MELD,
    RESPONSE,
    ROB,
    TURN,
    State,
)
from zhuoji_env.tiles import NUM_KINDS, NUM_TILES, YAOJI
from zhuoji_env.versions import OBSERVATION as VERSION
from zhuoji_env.versions import OBSERVATION_V2 as VERSION_V2

SEATS = 4
RECENT = 6

LAYOUT: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("hand", (27,)),
    ("pong", (SEATS, 27)),
    ("kong_exposed", (SEATS, 27)),
    ("kong_concealed_own", (27,)),
    ("kong_counts", (SEATS, 4)),
    ("river", (SEATS, 27)),
    ("river_recent", (SEATS, RECENT, 27)),
    ("tile", (27,)),
    ("tile_from", (SEATS,)),
    ("phase", (4,)),
    ("to_act", (SEATS,)),
    ("drawn", (27,)),
    ("turn_flags", (3,)),
    ("yaoji", (9,)),
    ("zeren_claimer", (SEATS,)),
    ("baoting", (SEATS, 2)),
    ("pass_lock", (1,)),
    ("wall", (2,)),
    ("dealer", (SEATS,)),
    ("streak", (1,)),
    ("scores", (SEATS,)),
    ("hand_no", (1,)),
    ("seats_present", (SEATS,)),
    ("waits", (27,)),
    ("shanten", (8,)),
    ("discard_shanten", (27,)),
    ("best_discard", (27,)),
)
FEATURES: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("unseen", (27,)),
    ("passport", (SEATS,)),
    ("wait_value", (27,)),
    ("live_waits", (27,)),
)
STATE_EXTRA: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("all_hands", (SEATS, 27)),
    ("all_concealed_kongs", (SEATS, 27)),
    ("live_wall", (27,)),
    ("flip", (27,)),
)


def _offsets(layout) -> dict[str, slice]:
    out, pos = {}, 0
    for name, shape in layout:
        size = int(np.prod(shape))
        out[name] = slice(pos, pos + size)
        pos += size
    return out


SLICES: dict[str, slice] = _offsets(LAYOUT)
"""Where each block lies in the flat observation."""
SHAPES: dict[str, tuple[int, ...]] = dict(LAYOUT)
_ALL_SHAPES = dict(LAYOUT + STATE_EXTRA + FEATURES)
OBS_SIZE: int = max(s.stop for s in SLICES.values())
FEATURE_SLICES: dict[str, slice] = _offsets(FEATURES)
"""Where each derived block lies in :func:`features` (after ``OBS_SIZE`` in a v2 observation)."""
FEATURES_SIZE: int = max(s.stop for s in FEATURE_SLICES.values())
OBS_SIZES: dict[str, int] = {VERSION: OBS_SIZE, VERSION_V2: OBS_SIZE + FEATURES_SIZE}
"""The length of an observation of each version."""
_V2_SLICES = _offsets(LAYOUT + FEATURES)  # v1's blocks where they are in v1, then the derived
STATE_SLICES: dict[str, slice] = _offsets(LAYOUT + STATE_EXTRA)
STATE_SIZE: int = max(s.stop for s in STATE_SLICES.values())
HIDDEN_SIZE: int = STATE_SIZE - OBS_SIZE
"""Size of :func:`encode_hidden`: the hidden information of ``encode_state``."""


def block(obs: np.ndarray, name: str) -> np.ndarray:
    """The named block of observations ``[..., OBS_SIZE]`` (v1 or v2, or states
    ``[..., STATE_SIZE]``), reshaped to its shape."""
    if name in FEATURE_SLICES and obs.shape[-1] != OBS_SIZES[VERSION_V2]:
        raise ValueError(f"block {name!r} is only in {VERSION_V2} observations")
    slices = STATE_SLICES if obs.shape[-1] == STATE_SIZE else _V2_SLICES
    if name not in slices:
        raise ValueError(f"unknown block {name!r}: the blocks are {list(slices)}")
    sl = slices[name]
    return obs[..., sl].reshape(obs.shape[:-1] + _ALL_SHAPES[name])


_SLOTS = np.arange(SEATS)
_SHANTEN_ONEHOT = np.eye(8, dtype=np.float32)
_OFF = {name: sl.start for name, sl in SLICES.items()}


def _own_waits(own: np.ndarray, m: np.ndarray, sh: np.ndarray) -> np.ndarray:
    """The ``waits`` block: bool ``[k,27]``.

    3k+1 hands: the kinds that complete the hand, excluding kinds of which the seat holds all
    four (concealed + melds). 3k+2 hands: the kinds whose discard leaves the hand ready (RULES.md
    5.2). Only hands of shanten <= 0 can have either (a wait or a ready discard means a complete
    hand one tile away), so only those are evaluated.
    """
    w = np.zeros(own.shape, dtype=bool)
    cand = np.flatnonzero(sh <= 0)
    if not cand.size:
        return w
    c = own[cand]
    mt = meld_tiles(m[cand])
    nm = (m[cand] > 0).sum(-1)
    one = c.sum(-1) % 3 == 1
    if one.any():
        w[cand[one]] = hands.waits(c[one], nm[one]) & (c[one] + mt[one] < 4)
    r, t = np.nonzero(c * ~one[:, None] > 0)  # 3k+2 hands: each (hand, held kind) discard
    if r.size:
        after = c[r].copy()
        after[np.arange(r.size), t] -= 1
        ready = hands.is_ready(after, mt[r], nm[r])
        w[cand[r[ready]], t[ready]] = True
    return w


def _shanten_features(own: np.ndarray):
    """Shanten ``[m]`` of hands ``[m,27]`` with their ``discard_shanten`` and ``best_discard``
    blocks (zero unless 3k+2 tiles)."""
    m = own.shape[0]
    sh = np.empty(m, dtype=np.int16)
    dsh = np.zeros((m, NUM_KINDS), dtype=np.float32)
    best = np.zeros((m, NUM_KINDS), dtype=np.float32)
    turn = own.sum(-1) % 3 == 2
    if not turn.all():
        sh[~turn] = hands.shanten(own[~turn])
    if turn.any():
        s, after = hands.shanten_neighbours(own[turn], -1)
        sh[turn] = s
        held = after < 99
        dsh[turn] = np.where(held, (after + 1) / 8, 0)
        best[turn] = held & (after == after.min(-1, keepdims=True))
    return sh, dsh, best


def _own_features_one(out: np.ndarray, own: list[int], own_meld: list[int]) -> None:
    """The hand-evaluation blocks (``waits`` .. ``best_discard``) of one hand, written into
    ``out``: :func:`_own_waits` and :func:`_shanten_features` in plain Python."""
    nm = sum(1 for x in own_meld if x)
    idx = hands.suit_indices_one(own)
    turn = sum(own) % 3 == 2
    if turn:
        sh, after = hands.discard_shanten_one(own, idx)
        low = min(after)
        o, ob = _OFF["discard_shanten"], _OFF["best_discard"]
        for t, x in enumerate(after):
            if x < 99:
                out[o + t] = (x + 1) / 8
                if x == low:
                    out[ob + t] = 1
    else:
        sh = hands.shanten_one(own)
    out[_OFF["shanten"] + min(max(sh + 1, 0), 7)] = 1
    if sh > 0:
        return
    mt = [_MELD_TILES_LIST[m] for m in own_meld]
    o = _OFF["waits"]
    if turn:
        ready = hands.ready_discards_one(own, nm, mt, idx, after)
    else:
        ready = [t for t in hands.waits_one(own, nm, idx) if own[t] + mt[t] < 4]
    for t in ready:
        out[o + t] = 1


_MELD_TILES_LIST = meld_tiles(np.arange(5)).tolist()  # tiles of each meld type (0: none)
_KONG_COUNT_COLUMN = {AN_KONG: 0, BU_KONG: 1, MING_KONG: 2}  # kong_counts columns (3: late)
_REL = {n: [[(seat + j) % n for j in range(n)] for seat in range(n)] for n in (3, 4)}


def encode_one(
    st: State, g: int, seat: int, scores=None, hand_no=None, hands_per_game: int = 1
) -> np.ndarray:
    """:func:`encode` of one seat in one game, ``[OBS_SIZE]``, with Python integers instead of
    array calls (the AEC and single-agent environments); a test keeps the two equal."""
    n = st.num_players
    out = np.zeros(OBS_SIZE, dtype=np.float32)
    off = _OFF
    rel = _REL[n][seat]
    own = st.hand[g, seat]
    out[off["hand"] : off["hand"] + NUM_KINDS] = own
    span = n * NUM_KINDS
    meld = st.meld[g].tolist()
    late = st.meld_late[g].tolist()
    hot = []
    kc = off["kong_counts"]
    for s, t in zip(*np.nonzero(st.meld[g]), strict=True):  # few melds: one entry each
        s, t = int(s), int(t)
        j = (s - seat) % n
        m = meld[s][t]
        if m == PONG_MELD:
            hot.append(off["pong"] + j * NUM_KINDS + t)
            continue
        if m != AN_KONG:
            hot.append(off["kong_exposed"] + j * NUM_KINDS + t)
        elif j == 0:
            hot.append(off["kong_concealed_own"] + t)
        if m == MING_KONG or not late[s][t]:
            out[kc + 4 * j + _KONG_COUNT_COLUMN[m]] += 1
        if late[s][t]:
            out[kc + 4 * j + 3] += 1
    o = off["river"]
    out[o : o + span] = st.river_counts[g][rel].ravel()
    river = st.river[g].tolist()
    rlen = st.river_len[g].tolist()
    yaoji = 0
    o = off["river_recent"]
    for j, s in enumerate(rel):
        row = river[s][: rlen[s]]
        yaoji += row.count(YAOJI)
        at = o + j * RECENT * NUM_KINDS
        hot += [at + i * NUM_KINDS + t for i, t in enumerate(row[: -RECENT - 1 : -1])]
    phase = int(st.phase[g])
    turn_seat = int(st.turn_seat[g])
    if phase == RESPONSE or phase == ROB:
        t = int(st.tile[g])
        if t >= 0:
            hot.append(off["tile"] + t)
        hot.append(off["tile_from"] + (turn_seat - seat) % n)
    if phase < 4:
        hot.append(off["phase"] + phase)
        hot.append(off["to_act"] + (int(st.actor[g]) - seat) % n)
    drawn = int(st.drawn[g])
    if turn_seat == seat and (phase == TURN or phase == BAOTING_DISCARD) and drawn >= 0:
        hot.append(off["drawn"] + drawn)
    o = off["turn_flags"]
    out[o] = st.drew[g]
    out[o + 1] = st.rep_draw[g]
    out[o + 2] = st.turn_kong[g].any()
    o = off["yaoji"]
    out[o] = yaoji / 4
    ys = int(st.yaoji_seat[g])
    if ys >= 0:
        hot.append(o + 1 + (ys - seat) % n)
    fate = int(st.yaoji_fate[g])
    if 1 <= fate <= 3:
        hot.append(o + 4 + fate)
    claimer = int(st.yaoji_claimer[g])
    out[o + 8] = claimer == seat
    if claimer >= 0:
        hot.append(off["zeren_claimer"] + (claimer - seat) % n)
    bt = st.baoting[g].tolist()
    o = off["baoting"]
    for j, s in enumerate(rel):
        if bt[s]:
            hot.append(o + 2 * j + bt[s] - 1)
    out[off["pass_lock"]] = st.pass_lock[g, seat]
    left = max(int(st.back[g]) - int(st.front[g]) + 1, 0)
    out[off["wall"]] = left / NUM_TILES
    out[off["wall"] + 1] = left == 0
    hot.append(off["dealer"] + (int(st.dealer[g]) - seat) % n)
    out[off["streak"]] = int(st.streak[g]) / 10
    if scores is not None:
        o = off["scores"]
        sc = np.asarray(scores)[g].tolist()
        for j, s in enumerate(rel):
            out[o + j] = sc[s] / 100
    if hand_no is not None:
        out[off["hand_no"]] = np.asarray(hand_no)[g] / hands_per_game
    out[off["seats_present"] : off["seats_present"] + n] = 1
    out[hot] = 1
    _own_features_one(out, own.tolist(), meld[seat])
    return out


def encode(st: State, g, seat, scores=None, hand_no=None, hands_per_game: int = 1) -> np.ndarray:
    """Observations ``[k, OBS_SIZE]`` of seats ``seat`` in games ``g`` (arrays of length k).

    ``scores`` (``[B, n]``) and ``hand_no`` (``[B]``) are the match scores and hand counter of
    a :class:`~zhuoji_env.engine.game.BatchGame`; they default to zero.
    """
    g = np.asarray(g, dtype=np.int64).reshape(-1)
    seat = np.asarray(seat, dtype=np.int64).reshape(-1)
    scores = None if scores is None else np.asarray(scores)
    hand_no = None if hand_no is None else np.asarray(hand_no)
    k, n = g.size, st.num_players
    if k == 1:
        return encode_one(st, int(g[0]), int(seat[0]), scores, hand_no, hands_per_game)[None]
    out = np.zeros((k, OBS_SIZE), dtype=np.float32)
    flat = out.reshape(-1)
    base = np.arange(k) * OBS_SIZE  # flat offset of each row
    gs = g[:, None]
    rel = (seat[:, None] + _SLOTS) % n  # absolute seat of each relative slot
    absent = n < SEATS  # slot 3 of a 3-player game is zeroed

    def view(name):
        return out[:, SLICES[name]].reshape((k,) + SHAPES[name])

    def hot(name, col, on=None):
        """Set ``out[row, name + col] = 1`` where ``on`` (and ``col >= 0``)."""
        ok = col >= 0 if on is None else on & (col >= 0)
        flat[base[ok] + _OFF[name] + col[ok]] = 1

    def slot_of(abs_seat):
        return np.where(abs_seat >= 0, (abs_seat - seat) % n, -1)

    own = st.hand[g, seat]
    view("hand")[:] = own
    meld = st.meld[gs, rel]  # [k,4,27]
    late = st.meld_late[gs, rel]
    river_counts = st.river_counts[gs, rel]
    rlen = st.river_len[gs, rel].astype(np.int64)  # [k,4]
    if absent:
        meld[:, n:] = 0
        late[:, n:] = False
        river_counts[:, n:] = 0
        rlen[:, n:] = 0
    view("pong")[:] = meld == PONG_MELD
    view("kong_exposed")[:] = (meld == MING_KONG) | (meld == BU_KONG)
    view("kong_concealed_own")[:] = meld[:, 0] == AN_KONG
    kc = view("kong_counts")
    kc[..., 0] = ((meld == AN_KONG) & ~late).sum(-1)
    kc[..., 1] = ((meld == BU_KONG) & ~late).sum(-1)
    kc[..., 2] = (meld == MING_KONG).sum(-1)
    kc[..., 3] = late.sum(-1)
    view("river")[:] = river_counts
    # river_recent: the last RECENT discards of each slot, most recent first
    pos = rlen[..., None] - 1 - np.arange(RECENT)  # [k,4,RECENT]
    ok = pos >= 0
    kk, ss, jj = np.nonzero(ok)
    t = st.river[g[kk], rel[kk, ss], pos[kk, ss, jj]].astype(np.int64)
    flat[base[kk] + _OFF["river_recent"] + (ss * RECENT + jj) * NUM_KINDS + t] = 1

    phase = st.phase[g].astype(np.int64)
    playing = phase < 4
    window = (phase == RESPONSE) | (phase == ROB)
    hot("tile", st.tile[g].astype(np.int64), window)
    hot("tile_from", slot_of(st.turn_seat[g].astype(np.int64)), window)
    hot("phase", phase, playing)  # TURN, RESPONSE, ROB, BAOTING_DISCARD are 0-3
    hot("to_act", slot_of(st.actor[g].astype(np.int64)), playing)
    turn_seat = st.turn_seat[g]
    my_turn = (turn_seat == seat) & ((phase == TURN) | (phase == BAOTING_DISCARD))
    hot("drawn", st.drawn[g].astype(np.int64), my_turn)
    tf = view("turn_flags")
    tf[:, 0] = st.drew[g]
    tf[:, 1] = st.rep_draw[g]
    tf[:, 2] = st.turn_kong[g].any(-1)
    yaoji = view("yaoji")
    yaoji[:, 0] = (st.river[g] == YAOJI).sum((1, 2)) / 4
    ys = st.yaoji_seat[g].astype(np.int64)
    ok = ys >= 0
    flat[base[ok] + _OFF["yaoji"] + 1 + slot_of(ys)[ok]] = 1
    fate = st.yaoji_fate[g]
    yaoji[:, 5] = fate == 1
    yaoji[:, 6] = fate == 2
    yaoji[:, 7] = fate == 3
    claimer = st.yaoji_claimer[g].astype(np.int64)
    yaoji[:, 8] = claimer == seat
    hot("zeren_claimer", slot_of(claimer))
    bt = st.baoting[gs, rel]
    if absent:
        bt[:, n:] = 0
    btv = view("baoting")
    btv[..., 0] = bt == 1
    btv[..., 1] = bt == 2
    out[:, _OFF["pass_lock"]] = st.pass_lock[g, seat]
    left = np.maximum(st.back[g] - st.front[g] + 1, 0)
    out[:, _OFF["wall"]] = left / NUM_TILES
    out[:, _OFF["wall"] + 1] = left == 0
    hot("dealer", slot_of(st.dealer[g].astype(np.int64)))
    out[:, _OFF["streak"]] = st.streak[g] / 10
    if scores is not None:
        sc = scores[gs, rel]
        if absent:
            sc[:, n:] = 0
        view("scores")[:] = sc / 100
    if hand_no is not None:
        out[:, _OFF["hand_no"]] = hand_no[g] / hands_per_game
    view("seats_present")[:, :n] = 1
    sh, dsh, best = _shanten_features(own)
    view("waits")[:] = _own_waits(own, st.meld[g, seat], sh)
    view("shanten")[:] = _SHANTEN_ONEHOT[np.clip(sh + 1, 0, 7)]
    view("discard_shanten")[:], view("best_discard")[:] = dsh, best
    return out


def seen_kinds(obs: np.ndarray) -> np.ndarray:
    """int16 ``[k, 27]``: copies of each kind the observer of v1 observations ``obs`` has
    seen: its own hand and kongs, every seat's pongs and exposed kongs, every discard still in a
    river, and in a rob window the added tile, shown though still in another seat's hand (its
    meld is a pong yet)."""
    seen = (
        block(obs, "hand")
        + 3 * block(obs, "pong").sum(1)
        + 4 * block(obs, "kong_exposed").sum(1)
        + 4 * block(obs, "kong_concealed_own")
        + block(obs, "river").sum(1)
    )
    robbed = (block(obs, "phase")[:, 2] > 0) & (block(obs, "tile_from")[:, 0] == 0)
    seen = seen + robbed[:, None] * block(obs, "tile")
    return np.rint(seen).astype(np.int16)


def features(obs: np.ndarray, table: dict[str, int]) -> np.ndarray:
    """float32 ``[k, FEATURES_SIZE]``: the v2 blocks (module docstring) of v1 observations
    ``[k, OBS_SIZE]``, derived from them alone; ``table`` is ``Rules.pattern_table`` (the
    values of the waits)."""
    obs = np.asarray(obs, dtype=np.float32)
    if obs.ndim != 2 or obs.shape[1] != OBS_SIZE:
        raise ValueError(f"features need v1 observations [k, {OBS_SIZE}], got {obs.shape}")
    k = obs.shape[0]
    out = np.zeros((k, FEATURES_SIZE), dtype=np.float32)

    def view(name):
        sl = FEATURE_SLICES[name]
        return out[:, sl].reshape((k,) + _ALL_SHAPES[name])

    hand = block(obs, "hand").astype(np.int16)
    pong, kong = block(obs, "pong"), block(obs, "kong_exposed")
    own_kong = block(obs, "kong_concealed_own")
    unseen = (4 - seen_kinds(obs)).astype(np.int16)
    view("unseen")[:] = unseen / 4
    view("passport")[:] = (block(obs, "kong_counts").sum(-1) > 0) | block(obs, "baoting").any(-1)
    waits = block(obs, "waits") > 0
    rows = np.flatnonzero(waits.any(-1))
    if not rows.size:
        return out
    mt = (3 * pong[rows, 0] + 4 * kong[rows, 0] + 4 * own_kong[rows]).astype(np.int16)
    nm = (pong[rows, 0] + kong[rows, 0] + own_kong[rows]).sum(-1).astype(np.int64)
    c, w = hand[rows], waits[rows]
    top = max(table["flush"] + table["longqidui"], 2 * table["dandiao"])
    value, live = view("wait_value"), view("live_waits")
    one = c.sum(-1) % 3 == 1
    r, t = np.nonzero(w & one[:, None])  # 3k+1: the waits themselves
    won = c[r].copy()
    won[np.arange(r.size), t] += 1
    value[rows[r], t] = hands.hand_value(won, mt[r], nm[r], table) / top
    live[rows[r], t] = unseen[rows[r], t] / 4
    r, t = np.nonzero(w & ~one[:, None])  # 3k+2: each ready discard, then its waits
    after = c[r].copy()
    after[np.arange(r.size), t] -= 1
    i, u = np.nonzero(hands.waits(after, nm[r]) & (after + mt[r] < 4))
    won = after[i].copy()
    won[np.arange(i.size), u] += 1
    v = hands.hand_value(won, mt[r[i]], nm[r[i]], table) / top
    np.maximum.at(value, (rows[r[i]], t[i]), v.astype(np.float32))
    np.add.at(live, (rows[r[i]], t[i]), unseen[rows[r[i]], u] / 16)
    return out


def with_features(obs: np.ndarray, table: dict[str, int]) -> np.ndarray:
    """v2 observations ``[k, OBS_SIZES[VERSION_V2]]``: v1 observations and their
    :func:`features`."""
    return np.concatenate([obs, features(obs, table)], -1)


def encode_hidden(st: State, g, seat) -> np.ndarray:
    """float32 ``[k, HIDDEN_SIZE]``: the ``STATE_EXTRA`` blocks (every seat's concealed tiles
    and concealed kongs, the live wall, the flip tile) of games ``g`` with seats relative to
    ``seat`` (0: that seat), as its observation orders them: what an oracle critic adds to the
    observation of the seat to act. Never part of an observation."""
    g = np.asarray(g, dtype=np.int64).reshape(-1)
    seat = np.broadcast_to(np.asarray(seat, dtype=np.int64).reshape(-1), g.shape)
    k, n = g.size, st.num_players
    rel = (seat[:, None] + np.arange(n)) % n  # absolute seat at each relative position
    extra = np.zeros((k, HIDDEN_SIZE), dtype=np.float32)
    ext = _offsets(STATE_EXTRA)
    allh = np.zeros((k, SEATS, NUM_KINDS), dtype=np.float32)
    allh[:, :n] = st.hand[g[:, None], rel]
    extra[:, ext["all_hands"]] = allh.reshape(k, -1)
    ck = np.zeros((k, SEATS, NUM_KINDS), dtype=np.float32)
    ck[:, :n] = st.meld[g[:, None], rel] == AN_KONG
    extra[:, ext["all_concealed_kongs"]] = ck.reshape(k, -1)
    idx = np.arange(NUM_TILES)[None, :]
    live = (idx >= st.front[g][:, None]) & (idx <= st.back[g][:, None])
    wall_counts = ((st.wall[g][..., None] == np.arange(NUM_KINDS)) & live[..., None]).sum(1)
    extra[:, ext["live_wall"]] = wall_counts
    has = st.front[g] <= st.back[g]
    flip = np.zeros((k, NUM_KINDS), dtype=np.float32)
    rows = np.flatnonzero(has)
    flip[rows, st.wall[g[rows], st.front[g[rows]]]] = 1
    extra[:, ext["flip"]] = flip
    return extra


REPLACEMENTS_AHEAD = 2
"""Replacement draws (补牌, from the back of the wall) that :func:`encode_draws` shows."""


def draws_size(draws: int) -> int:
    """Length of :func:`encode_draws` with ``draws`` front draws per seat."""
    return (SEATS * draws + REPLACEMENTS_AHEAD) * NUM_KINDS


def encode_draws(st: State, g, seat, draws: int) -> np.ndarray:
    """float32 ``[k, draws_size(draws)]``: the order of the wall, which :func:`encode_hidden`
    shows only as counts. One-hot kinds of each seat's next ``draws`` draws from the front (摸牌)
    if play went round without claims or kongs (seats relative to ``seat``, as in
    :func:`encode_hidden`; the seat after the turn seat draws next), then of the next
    ``REPLACEMENTS_AHEAD`` replacement draws (补牌) from the back; tiles past the live wall are
    all zero. What an oracle critic with ``--oracle-draws`` adds to :func:`encode_hidden`. Never
    part of an observation."""
    g = np.asarray(g, dtype=np.int64).reshape(-1)
    seat = np.broadcast_to(np.asarray(seat, dtype=np.int64).reshape(-1), g.shape)
    k, n = g.size, st.num_players
    front = st.front[g].astype(np.int64)
    back = st.back[g].astype(np.int64)
    first = (st.turn_seat[g].astype(np.int64) + 1) % n  # the seat that draws next
    rel = (seat[:, None] + np.arange(n)) % n  # absolute seat at each relative position
    offset = (rel - first[:, None]) % n  # its place in the round of draws
    pos = np.zeros((k, SEATS, draws), dtype=np.int64)
    pos[:, :n] = front[:, None, None] + offset[..., None] + n * np.arange(draws)
    live = np.zeros(pos.shape, dtype=bool)
    live[:, :n] = pos[:, :n] <= back[:, None, None]
    rep = back[:, None] - np.arange(REPLACEMENTS_AHEAD)
    pos = np.concatenate([pos.reshape(k, -1), rep], 1)
    live = np.concatenate([live.reshape(k, -1), rep >= front[:, None]], 1)
    kinds = st.wall[g[:, None], np.minimum(pos, NUM_TILES - 1)]
    out = np.zeros((k, pos.shape[1], NUM_KINDS), dtype=np.float32)
    r, c = np.nonzero(live)
    out[r, c, kinds[r, c]] = 1
    return out.reshape(k, -1)


def encode_state(st: State, g, scores=None, hand_no=None, hands_per_game: int = 1):
    """Global full-information tensors ``[k, STATE_SIZE]`` of games ``g`` (absolute seats)."""
    g = np.asarray(g, dtype=np.int64).reshape(-1)
    zero = np.zeros(g.size, dtype=np.int64)
    base = encode(st, g, zero, scores, hand_no, hands_per_game)
    return np.concatenate([base, encode_hidden(st, g, zero)], -1)
