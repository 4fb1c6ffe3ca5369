"""Observation encoding ``zhuoji-obs-v1``: engine state -> one seat's tensor, and the global state.

An observation is a flat float32 vector made of named blocks. Seats are **relative to the
observer**: slot 0 is the observer, slot 1 its 下家 (the next seat to play), and so on; with 3
players slot 3 is always zero. Tile axes are the 27 kinds (``1m``..``9s``). Nothing hidden from
the observer is encoded: other seats' concealed tiles, the order of the wall, the flip tile and
the kinds of other seats' concealed kongs never appear.

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
to_act              4         the seat asked now (always slot 0 when the observer must act)
drawn               27        the tile the observer just drew, on its own turn
turn_flags          3         this turn began with a draw; latest draw was a replacement
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
=================== ========= ==============================================================

``encode_state`` (for centralised critics and oracle guiding) is seat 0's observation, so its
seats are absolute, followed by the hidden information: every seat's concealed tiles (4 x 27),
the kinds of every concealed kong (4 x 27), the live wall as counts (27) and the flip tile the
wall would turn up now (27).
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
    RIVER_MAX,
    ROB,
    TURN,
    State,
)
from zhuoji_env.tiles import NUM_KINDS, NUM_TILES, YAOJI

VERSION = "zhuoji-obs-v1"
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
OBS_SIZE: int = max(s.stop for s in SLICES.values())
STATE_SLICES: dict[str, slice] = _offsets(LAYOUT + STATE_EXTRA)
STATE_SIZE: int = max(s.stop for s in STATE_SLICES.values())


def block(obs: np.ndarray, name: str) -> np.ndarray:
    """The named block of observations ``[..., OBS_SIZE]``, reshaped to its shape."""
    sl = (STATE_SLICES if obs.shape[-1] == STATE_SIZE else SLICES)[name]
    shape = dict(LAYOUT + STATE_EXTRA)[name]
    return obs[..., sl].reshape(obs.shape[:-1] + shape)


def encode(st: State, g, seat, scores=None, hand_no=None, hands_per_game: int = 1) -> np.ndarray:
    """Observations ``[k, OBS_SIZE]`` of seats ``seat`` in games ``g`` (arrays of length k).

    ``scores`` (``[B, n]``) and ``hand_no`` (``[B]``) are the match scores and hand counter of
    a :class:`~zhuoji_env.engine.game.BatchGame`; they default to zero.
    """
    g = np.asarray(g, dtype=np.int64)
    seat = np.asarray(seat, dtype=np.int64)
    k, n = g.size, st.num_players
    out = np.zeros((k, OBS_SIZE), dtype=np.float32)
    rows = np.arange(k)
    rel = (seat[:, None] + np.arange(SEATS)[None, :]) % n  # absolute seat of each slot
    present = np.arange(SEATS)[None, :] < n

    def put(name, value):
        out[:, SLICES[name]] = np.asarray(value, dtype=np.float32).reshape(k, -1)

    def slot_of(abs_seat):
        """One-hot over relative slots of absolute seats (-1 gives zeros)."""
        a = np.asarray(abs_seat, dtype=np.int64)
        onehot = np.zeros((k, SEATS), dtype=np.float32)
        ok = a >= 0
        onehot[rows[ok], ((a - seat) % n)[ok]] = 1
        return onehot

    def onehot_tile(t, on=True):
        t = np.asarray(t, dtype=np.int64)
        x = np.zeros((k, NUM_KINDS), dtype=np.float32)
        ok = (t >= 0) & on
        x[rows[ok], t[ok]] = 1
        return x

    own = st.hand[g, seat]
    put("hand", own)
    meld = st.meld[g[:, None], rel] * present[..., None]  # [k,4,27]
    put("pong", meld == PONG_MELD)
    put("kong_exposed", (meld == MING_KONG) | (meld == BU_KONG))
    put("kong_concealed_own", st.meld[g, seat] == AN_KONG)
    late = st.meld_late[g[:, None], rel] & present[..., None]
    kc = np.stack(
        [
            ((meld == AN_KONG) & ~late).sum(-1),
            ((meld == BU_KONG) & ~late).sum(-1),
            (meld == MING_KONG).sum(-1),
            late.sum(-1),
        ],
        -1,
    )
    put("kong_counts", kc)
    put("river", st.river_counts[g[:, None], rel] * present[..., None])
    rlen = st.river_len[g[:, None], rel].astype(np.int64)  # [k,4]
    recent = np.zeros((k, SEATS, RECENT, NUM_KINDS), dtype=np.float32)
    for j in range(RECENT):
        pos = rlen - 1 - j
        ok = (pos >= 0) & present
        t = st.river[g[:, None], rel, np.clip(pos, 0, RIVER_MAX - 1)]
        kk, ss = np.nonzero(ok)
        recent[kk, ss, j, t[kk, ss]] = 1
    put("river_recent", recent)
    phase = st.phase[g]
    window = (phase == RESPONSE) | (phase == ROB)
    put("tile", onehot_tile(st.tile[g], window))
    put("tile_from", slot_of(np.where(window, st.turn_seat[g], -1)))
    ph = np.zeros((k, 4), dtype=np.float32)
    for i, p in enumerate((TURN, RESPONSE, ROB, BAOTING_DISCARD)):
        ph[:, i] = phase == p
    put("phase", ph)
    put("to_act", slot_of(np.where(phase < 4, st.actor[g], -1)))
    my_turn = (st.turn_seat[g] == seat) & ((phase == TURN) | (phase == BAOTING_DISCARD))
    put("drawn", onehot_tile(st.drawn[g], my_turn))
    put(
        "turn_flags",
        np.stack([st.drew[g], st.rep_draw[g], st.turn_kong[g].any(-1)], -1),
    )
    yaoji = np.zeros((k, 9), dtype=np.float32)
    visible_1s = st.river[g][..., None] == YAOJI  # discards of 1s, claimed or not
    yaoji[:, 0] = visible_1s.sum((1, 2, 3)) / 4
    yaoji[:, 1:5] = slot_of(st.yaoji_seat[g])
    fate = st.yaoji_fate[g]
    yaoji[:, 5] = fate == 1
    yaoji[:, 6] = fate == 2
    yaoji[:, 7] = fate == 3
    yaoji[:, 8] = st.yaoji_claimer[g] == seat
    put("yaoji", yaoji)
    put("zeren_claimer", slot_of(st.yaoji_claimer[g]))
    bt = st.baoting[g[:, None], rel] * present
    put("baoting", np.stack([bt == 1, bt == 2], -1))
    put("pass_lock", st.pass_lock[g, seat][:, None])
    left = np.maximum(st.back[g] - st.front[g] + 1, 0)
    put("wall", np.stack([left / NUM_TILES, left == 0], -1))
    put("dealer", slot_of(st.dealer[g]))
    put("streak", st.streak[g][:, None] / 10)
    if scores is not None:
        sc = np.asarray(scores)[g[:, None], rel] * present
        put("scores", sc / 100)
    if hand_no is not None:
        put("hand_no", np.asarray(hand_no)[g][:, None] / hands_per_game)
    put("seats_present", np.broadcast_to(present, (k, SEATS)))
    size = own.sum(-1)
    m = st.meld[g, seat]
    nm = (m > 0).sum(-1)
    w = np.zeros((k, NUM_KINDS), dtype=bool)
    one = size % 3 == 1
    if one.any():
        w[one] = hands.waits(own[one], nm[one]) & (own[one] + meld_tiles(m[one]) < 4)
    two = size % 3 == 2
    if two.any():
        o2 = own[two]
        after = np.maximum(o2[:, None, :] - np.eye(NUM_KINDS, dtype=np.int8)[None], 0)
        mt = meld_tiles(m[two])[:, None, :]
        w[two] = (o2 > 0) & hands.is_ready(after, mt, nm[two][:, None])
    put("waits", w)
    sh = hands.shanten(own)
    put("shanten", np.eye(8, dtype=np.float32)[np.clip(sh + 1, 0, 7)])
    return out


def encode_state(st: State, g, scores=None, hand_no=None, hands_per_game: int = 1):
    """Global full-information tensors ``[k, STATE_SIZE]`` of games ``g`` (absolute seats)."""
    g = np.asarray(g, dtype=np.int64)
    k, n = g.size, st.num_players
    base = encode(st, g, np.zeros(k, dtype=np.int64), scores, hand_no, hands_per_game)
    extra = np.zeros((k, STATE_SIZE - OBS_SIZE), dtype=np.float32)
    ext = _offsets(STATE_EXTRA)
    allh = np.zeros((k, SEATS, NUM_KINDS), dtype=np.float32)
    allh[:, :n] = st.hand[g]
    extra[:, ext["all_hands"]] = allh.reshape(k, -1)
    ck = np.zeros((k, SEATS, NUM_KINDS), dtype=np.float32)
    ck[:, :n] = st.meld[g] == AN_KONG
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
    return np.concatenate([base, extra], -1)
