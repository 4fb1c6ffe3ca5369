"""The batched game state: fixed-shape numpy arrays with a leading batch axis ``B``.

Every field is documented where it is declared (pgx's style). ``-1`` marks an empty slot.
Seats are absolute (0..n-1); ``n`` is ``Rules.num_players``.

Glossary of the names used in the engine (identifier, 汉字, English, RULES.md section):

==============================  ============  ======================================  ========
identifier                      汉字          English                                 RULES.md
==============================  ============  ======================================  ========
``wall``, ``front``, ``back``   牌墙          the wall, live and replacement ends     2
``dealer``, ``streak``          庄家, 连庄    dealer, dealer streak k                 8.1-8.2
``baoting``                     报听          declared ready (硬报 hard, 软报 soft)   3.4
``AN_KONG`` / ``dou_an``        闷豆          concealed kong (``angang``)             4, 7.3
``BU_KONG`` / ``dou_bu``        转弯豆        added kong on a pong (``bugang``)       4, 7.3
``MING_KONG`` / ``dou_ming``    点豆          exposed kong on a discard (``kong``)    4, 7.3
``meld_late``                   憨包豆        late kong, collects nothing             4
``PONG_MELD``                   碰            pong                                    3.2
``hu``                          胡            a win; the hand payment item            5, 7.2
``END_ZIMO``                    自摸          self-drawn win                          6, 7.2
``END_RON``                     点炮          win on a discard                        6, 7.2
``END_QIANGGANG``               抢杠          win by robbing a ``bugang``             3.3, 7.2
``END_DRAW``                    黄庄          exhaustive draw                         6, 7.5
``rerpao``                      热炮          win on a discard after a kong in the    5.3, 7.2
                                              same turn (杠上炮); ``rerpao`` is the
                                              record format's spelling of 热炮
``turn_kong``                   (热炮)        kongs completed in the current turn     7.2
``rep_draw``                    杠上开花      win on a replacement draw               7.2
``pass_lock`` / ``baopai``      过手胡, 包牌  passing a win; its penalty              5.4
``flip``                        翻鸡          flip tile; next(F) is a chicken         7.4
``chicken``                     鸡            chicken tile payments                   7.4
``YAOJI`` (tiles)               幺鸡          the ``1s`` tile, always a chicken       7.4
``chongfeng``                   冲锋鸡        charging chicken: first ``1s`` left     7.4
                                              in its discarder's river
``zeren``                       责任鸡        responsibility chicken (claimed 1s)     7.4
``bao_ji``                      包鸡          a seat not ready pays for its 1s        7.4
``chajiao``                     查叫          paying ready seats after 黄庄           7.5
burned                          烧鸡烧豆      collects nothing this hand (app)        7.2
==============================  ============  ======================================  ========
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from zhuoji_env.engine.actions import NUM_ACTIONS
from zhuoji_env.tiles import NUM_KINDS, NUM_TILES

RIVER_MAX = 72
"""Room for one seat's discards in a hand (a seat cannot make more)."""
MAX_DECISIONS = 640
"""Room for the decisions of one hand in the built-in record."""

# phase
TURN, RESPONSE, ROB, BAOTING_DISCARD, OVER = 0, 1, 2, 3, 4
# meld type per kind
NO_MELD, PONG_MELD, AN_KONG, BU_KONG, MING_KONG = 0, 1, 2, 3, 4
# how a hand ended
PLAYING, END_ZIMO, END_RON, END_QIANGGANG, END_DRAW = 0, 1, 2, 3, 4
END_NAMES = (None, "zimo", "ron", "qianggang", "draw")
# claim option bits in a response or rob window
OPT_HU, OPT_PONG, OPT_KONG = 1, 2, 4
# settlement ledger items (RULES.md 10), in ledger axis order
ITEMS = (
    "hu",
    "rerpao",
    "dou_an",
    "dou_bu",
    "dou_ming",
    "chicken",
    "chongfeng",
    "zeren",
    "bao_ji",
    "baopai",
    "chajiao",
)
(
    I_HU,
    I_RERPAO,
    I_DOU_AN,
    I_DOU_BU,
    I_DOU_MING,
    I_CHICKEN,
    I_CHONGFENG,
    I_ZEREN,
    I_BAO_JI,
    I_BAOPAI,
    I_CHAJIAO,
) = range(len(ITEMS))
# fate of the first discarded 1s (冲锋鸡 / 责任鸡)
YAOJI_NONE, YAOJI_IN_RIVER, YAOJI_CLAIMED, YAOJI_WON = 0, 1, 2, 3


def check_games(idx, batch_size: int, distinct: bool = False) -> np.ndarray:
    """Game indices as int64 ``[k]``: a 1-D sequence of integers 0..batch_size-1 (distinct
    ones if ``distinct``); ``ValueError`` naming what was wrong otherwise. Booleans, fractions
    and negative indices are refused, not read as numpy would (a mask, a truncation, from the
    end)."""
    allowed = f"a 1-D list or array of {'distinct ' * distinct}game indices 0-{batch_size - 1}"
    a = np.asarray(idx)
    if a.ndim != 1:
        raise ValueError(f"game indices {idx!r}: expected {allowed}, got {a.ndim}-D")
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(a.dtype, np.integer):
        hint = " (for a mask, pass np.flatnonzero(mask))" if a.dtype == bool else ""
        raise ValueError(f"game indices {idx!r}: expected {allowed}, got dtype {a.dtype}{hint}")
    bad = (a < 0) | (a >= batch_size)
    if bad.any():
        raise ValueError(f"game index {a[bad][0]} out of range: expected {allowed}")
    a = a.astype(np.int64)
    if distinct and np.unique(a).size != a.size:
        raise ValueError(f"game indices {idx!r} repeat a game: expected {allowed}")
    return a


@dataclass
class State:
    """A batch of hands in play. All arrays have leading axis B."""

    # --- the wall (RULES.md 2)
    wall: np.ndarray  # int8 [B,108]: tile kinds in wall order
    front: np.ndarray  # int16 [B]: index of the next live draw (摸牌)
    back: np.ndarray  # int16 [B]: next replacement draw (补牌); the wall is empty when front > back
    # --- seats
    dealer: np.ndarray  # int8 [B]: the dealer (庄家) of this hand
    streak: np.ndarray  # int64 [B]: dealer streak k (连庄, RULES.md 8.2)
    hand: np.ndarray  # int8 [B,n,27]: concealed tile counts
    meld: np.ndarray  # int8 [B,n,27]: meld of each kind: 0 none, 1 pong, 2 闷豆, 3 转弯豆, 4 点豆
    meld_from: np.ndarray  # int8 [B,n,27]: feeder of a pong or 点豆 (a 转弯豆 keeps its pong's), -1
    meld_late: np.ndarray  # bool [B,n,27]: the kong is a late kong (憨包豆, RULES.md 4)
    river: np.ndarray  # int8 [B,n,RIVER_MAX]: each seat's discards in order, -1 past the end
    river_len: np.ndarray  # int16 [B,n]: number of discards made
    river_taken: np.ndarray  # bool [B,n,RIVER_MAX]: the discard was claimed (pong, kong or won on)
    river_counts: np.ndarray  # int8 [B,n,27]: discards still lying in the river, per kind
    # --- whose decision it is
    phase: np.ndarray  # int8 [B]: TURN, RESPONSE, ROB, BAOTING_DISCARD or OVER
    actor: np.ndarray  # int8 [B]: the seat asked now (the protocol of RULES.md 3)
    turn_seat: np.ndarray  # int8 [B]: seat whose turn it is (the discarder, or the bugang seat)
    tile: np.ndarray  # int8 [B]: the discard or bugang tile being decided on; the won tile; -1
    # --- turn flags
    drawn: np.ndarray  # int8 [B]: tile the turn seat drew most recently this turn; -1 after a pong
    drew: np.ndarray  # bool [B]: the turn seat has drawn this turn (a 自摸 is possible)
    rep_draw: np.ndarray  # bool [B]: the latest draw was a replacement (杠上开花)
    turn_kong: np.ndarray  # bool [B,27]: kongs the turn seat completed this turn (热炮, rerpao.py)
    discarded: np.ndarray  # bool [B,n]: the seat has made its first discard of the hand
    # --- claims
    claim_opts: np.ndarray  # uint8 [B,n]: claims offered in the window (bits hu 1, pong 2, kong 4)
    claim_choice: np.ndarray  # int8 [B,n]: choice in the window (HU, PONG, KONG or PASS), -1
    pass_lock: np.ndarray  # bool [B,n]: passed a win, locked until its next draw (过手胡, 5.4)
    baopai: np.ndarray  # int64 [B,n,n]: pass-win penalties so far, payer x payee, in units
    # --- 报听 (3.4)
    baoting: np.ndarray  # int8 [B,n]: 0 none, 1 硬报 (hard), 2 软报 (soft)
    dealt_ready: np.ndarray  # bool [B,n]: the 13 dealt tiles were ready (hard 报听 for non-dealers)
    # --- the first discarded 1s (冲锋鸡 / 责任鸡, 7.4)
    yaoji_seat: np.ndarray  # int8 [B]: seat that discarded the first 1s, -1 none yet
    yaoji_fate: np.ndarray  # int8 [B]: YAOJI_NONE, _IN_RIVER, _CLAIMED (pong/kong) or _WON
    yaoji_claimer: np.ndarray  # int8 [B]: seat that ponged or konged it, -1
    yaoji_pos: np.ndarray  # int16 [B]: its index in the discarder's river, -1
    # --- the end of the hand
    end: np.ndarray  # int8 [B]: PLAYING, END_ZIMO, END_RON, END_QIANGGANG or END_DRAW
    winners: np.ndarray  # bool [B,n]
    flip: np.ndarray  # int8 [B]: the flip tile (翻牌) turned up at settlement, -1 none
    ledger: np.ndarray  # int64 [B,n,n,ITEMS]: settlement, payer x payee x item (x base_stake)
    next_dealer: np.ndarray  # int8 [B]: dealer of the next hand (8.1)
    next_streak: np.ndarray  # int64 [B]: streak of the next hand (8.2)
    # --- the built-in record of decisions (RULES.md 10)
    rec_seat: np.ndarray  # int8 [B,MAX_DECISIONS]
    rec_action: np.ndarray  # int8 [B,MAX_DECISIONS]
    rec_len: np.ndarray  # int16 [B]
    # --- the legal actions of the actor
    mask: np.ndarray  # bool [B,86]

    @property
    def batch_size(self) -> int:
        return self.wall.shape[0]

    @property
    def num_players(self) -> int:
        return self.hand.shape[1]

    def take(self, idx) -> State:
        """The games at ``idx`` (a copy): a 1-D sequence of game indices, repeats allowed
        (:func:`check_games`; a scalar would drop the batch axis of every field)."""
        idx = check_games(idx, self.batch_size)
        return State(**{f.name: getattr(self, f.name)[idx].copy() for f in _FIELDS})

    def put(self, idx, other: State) -> None:
        """Overwrite the games at ``idx`` with ``other`` (masked assignment for auto-reset)."""
        for f in _FIELDS:
            getattr(self, f.name)[idx] = getattr(other, f.name)

    def copy(self) -> State:
        return State(**{f.name: getattr(self, f.name).copy() for f in _FIELDS})


_FIELDS = dataclasses.fields(State)


def empty_state(batch: int, num_players: int) -> State:
    """A state of ``batch`` games with every field zeroed or empty."""
    b, n = batch, num_players

    def z(shape, dtype, fill=0):
        return np.full(shape, fill, dtype=dtype)

    return State(
        wall=z((b, NUM_TILES), np.int8),
        front=z(b, np.int16),
        back=z(b, np.int16),
        dealer=z(b, np.int8),
        streak=z(b, np.int64),
        hand=z((b, n, NUM_KINDS), np.int8),
        meld=z((b, n, NUM_KINDS), np.int8),
        meld_from=z((b, n, NUM_KINDS), np.int8, -1),
        meld_late=z((b, n, NUM_KINDS), bool),
        river=z((b, n, RIVER_MAX), np.int8, -1),
        river_len=z((b, n), np.int16),
        river_taken=z((b, n, RIVER_MAX), bool),
        river_counts=z((b, n, NUM_KINDS), np.int8),
        phase=z(b, np.int8),
        actor=z(b, np.int8),
        turn_seat=z(b, np.int8),
        tile=z(b, np.int8, -1),
        drawn=z(b, np.int8, -1),
        drew=z(b, bool),
        rep_draw=z(b, bool),
        turn_kong=z((b, NUM_KINDS), bool),
        discarded=z((b, n), bool),
        claim_opts=z((b, n), np.uint8),
        claim_choice=z((b, n), np.int8, -1),
        pass_lock=z((b, n), bool),
        baopai=z((b, n, n), np.int64),
        baoting=z((b, n), np.int8),
        dealt_ready=z((b, n), bool),
        yaoji_seat=z(b, np.int8, -1),
        yaoji_fate=z(b, np.int8),
        yaoji_claimer=z(b, np.int8, -1),
        yaoji_pos=z(b, np.int16, -1),
        end=z(b, np.int8),
        winners=z((b, n), bool),
        flip=z(b, np.int8, -1),
        ledger=z((b, n, n, len(ITEMS)), np.int64),
        next_dealer=z(b, np.int8, -1),
        next_streak=z(b, np.int64),
        rec_seat=z((b, MAX_DECISIONS), np.int8, -1),
        rec_action=z((b, MAX_DECISIONS), np.int8, -1),
        rec_len=z(b, np.int16),
        mask=z((b, NUM_ACTIONS), bool),
    )
