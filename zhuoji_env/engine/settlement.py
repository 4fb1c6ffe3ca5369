"""Settlement of ended hands (RULES.md 7) and the next dealer (RULES.md 8).

The result is a ledger ``[B, n, n, ITEMS]`` of amounts paid by a seat (axis 1) to a seat (axis 2)
for an item (axis 3, ``state.ITEMS``), already multiplied by ``base_stake``. A seat's score for
the hand is what it received minus what it paid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zhuoji_env import hands
from zhuoji_env.engine.rerpao import is_rerpao, rerpao_burned, rerpao_extra, rerpao_void_kongs
from zhuoji_env.engine.state import (
    AN_KONG,
    BU_KONG,
    END_DRAW,
    END_QIANGGANG,
    END_RON,
    END_ZIMO,
    I_BAO_JI,
    I_BAOPAI,
    I_CHAJIAO,
    I_CHICKEN,
    I_CHONGFENG,
    I_DOU_AN,
    I_DOU_BU,
    I_DOU_MING,
    I_HU,
    I_RERPAO,
    I_ZEREN,
    ITEMS,
    MING_KONG,
    YAOJI_CLAIMED,
    YAOJI_IN_RIVER,
    State,
)
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import NUM_KINDS, YAOJI, next_kind, prev_kind

_MELD_TILES = np.array([0, 3, 4, 4, 4], dtype=np.int8)
"""Tiles held in a meld of each type (none, pong, 闷豆, 转弯豆, 点豆)."""
_EYE = np.eye(NUM_KINDS, dtype=np.int8)


def meld_tiles(meld: np.ndarray) -> np.ndarray:
    """Tiles per kind held in melds (a pong 3, a kong 4), same shape as ``meld``."""
    return _MELD_TILES[meld]


def baoting_bonus(rules: Rules, level) -> np.ndarray:
    """报听 bonus of declaration levels (0 none, 1 硬报, 2 软报), RULES.md 7.2."""
    hard, soft = rules.baoting_bonus
    return np.array([0, hard, soft], dtype=np.int64)[np.asarray(level, dtype=np.int64)]


def zimo_extra(rules: Rules, plain: np.ndarray) -> np.ndarray:
    """The 自摸 extra of wins whose hands are plain or not."""
    if rules.zimo_bonus == "plain_only":
        return np.asarray(plain).astype(np.int64)
    return np.full(np.shape(plain), rules.zimo_bonus, dtype=np.int64)


def streak_term(rules: Rules, st: State, g, a, b) -> np.ndarray:
    """``+k`` on a hand payment between seats a and b where one is the dealer (8.2)."""
    if not rules.dealer_streak_bonus:
        return np.zeros(np.shape(g), dtype=np.int64)
    d = st.dealer[g]
    return np.where((a == d) | (b == d), st.streak[g], 0).astype(np.int64)


def settle(rules: Rules, st: State, e: np.ndarray) -> None:
    """Fill ``ledger``, ``flip``, ``next_dealer`` and ``next_streak`` of the ended games ``e``.

    The order of RULES.md 7.1: after a win, hand payments (7.2), kong payments (7.3) and
    chickens (7.4); after an exhaustive draw, 查叫 (7.5); pass-win penalties (5.4) either way.
    """
    k = e.size
    end = st.end[e]
    winners = st.winners[e]
    tile = st.tile[e].astype(np.int64)
    hand = st.hand[e].astype(np.int16)
    by_discard = (end == END_RON) | (end == END_QIANGGANG)
    hand += (winners & by_discard[:, None])[..., None] * _EYE[np.maximum(tile, 0)][:, None, :]
    meld = st.meld[e]
    mt = meld_tiles(meld)
    nm = (meld > 0).sum(-1)
    draw = end == END_DRAW
    flip = np.full(k, -1, dtype=np.int64)
    live = st.front[e] <= st.back[e]
    flip[live] = st.wall[e[live], st.front[e[live]]]
    flip[draw] = -1
    h = _Ended(
        st=st,
        e=e,
        ledger=np.zeros((k, rules.num_players, rules.num_players, len(ITEMS)), dtype=np.int64),
        end=end,
        winners=winners,
        won=~draw,
        draw=draw,
        hand=hand,
        meld=meld,
        mt=mt,
        nm=nm,
        ready=winners | hands.is_ready(hand, mt, nm),
        flip=flip,
    )
    if draw.any():
        _pay_chajiao(rules, h)
    if h.won.any():
        _settle_wins(rules, h)
    h.ledger[..., I_BAOPAI] += st.baopai[e]
    h.ledger *= rules.base_stake
    st.ledger[e] = h.ledger
    st.flip[e] = flip
    _next_dealer(rules, h)


@dataclass
class _Ended:
    """The ended hands of games ``e`` being settled: what every settlement rule reads, and the
    ``ledger`` they fill (``[k,n,n,ITEMS]``, in units until ``base_stake`` multiplies it)."""

    st: State
    e: np.ndarray  # [k]: the games
    ledger: np.ndarray  # int64 [k,n,n,ITEMS]: payer x payee x item
    end: np.ndarray  # [k]: how each hand ended
    winners: np.ndarray  # bool [k,n]
    won: np.ndarray  # bool [k]: somebody won
    draw: np.ndarray  # bool [k]: an exhaustive draw (黄庄)
    hand: np.ndarray  # int16 [k,n,27]: concealed tiles, a winner's with the tile it won on
    meld: np.ndarray  # int8 [k,n,27]: meld types
    mt: np.ndarray  # [k,n,27]: tiles held in melds
    nm: np.ndarray  # [k,n]: number of melds
    ready: np.ndarray  # bool [k,n]: ready at the end of the hand, winners included (5.2)
    flip: np.ndarray  # int64 [k]: the flip tile, -1 none

    @property
    def rows(self) -> np.ndarray:
        return np.arange(self.e.size)


def _next_dealer(rules: Rules, h: _Ended) -> None:
    """Next dealer (RULES.md 8.1) and dealer streak (连庄, 8.2) of the ended hands."""
    st, e, winners, k, n = h.st, h.e, h.winners, h.e.size, rules.num_players
    dealer = st.dealer[e].astype(np.int64)
    nxt = dealer.copy()
    nwin = winners.sum(-1)
    order = (dealer[:, None] + np.arange(n)[None]) % n  # seats from the dealer on
    first_winner = order[np.arange(k), np.argmax(winners[np.arange(k)[:, None], order], -1)]
    nxt = np.where(nwin == 1, winners.argmax(-1), nxt)
    nxt = np.where(nwin == 2, first_winner, nxt)
    nxt = np.where(nwin >= 3, st.turn_seat[e], nxt)
    if rules.draw_dealer == "classic" and h.draw.any():
        ready = h.ready
        nready = ready.sum(-1)
        lone = (~ready).argmax(-1)
        after = order[:, 1:]
        first_ready = after[np.arange(k), np.argmax(ready[np.arange(k)[:, None], after], -1)]
        dealer_ready = ready[np.arange(k), dealer]
        pick = np.where(dealer_ready, dealer, first_ready)
        pick = np.where(nready == n - 1, lone, pick)
        pick = np.where((nready == 0) | (nready == n), dealer, pick)
        nxt = np.where(h.draw, pick, nxt)
    dealer_won = winners[np.arange(k), dealer]
    streak = st.streak[e].astype(np.int64)
    st.next_dealer[e] = nxt
    st.next_streak[e] = np.where(nxt == dealer, np.where(dealer_won, streak + 1, streak), 0)


def _pay_chajiao(rules: Rules, h: _Ended) -> None:
    """黄庄查叫 (RULES.md 7.5): after an exhaustive draw with some but not all seats ready, each
    seat not ready pays each ready seat its 查叫 value (+ its 报听 bonus, + k with the dealer)."""
    st, e, ready, n = h.st, h.e, h.ready, rules.num_players
    nready = ready.sum(-1)
    pays = h.draw & (nready > 0) & (nready < n)
    if not pays.any():
        return
    value = hands.chajiao_value(h.hand, h.mt, h.nm, rules.pattern_table)
    value = value + baoting_bonus(rules, st.baoting[e])
    for r in range(n):
        for i in range(n):
            if i == r:
                continue
            due = pays & ready[:, r] & ~ready[:, i]
            amount = value[:, r] + streak_term(rules, st, e, i, r)
            h.ledger[:, i, r, I_CHAJIAO] += np.where(due, amount, 0)


def _settle_wins(rules: Rules, h: _Ended) -> None:
    """A hand somebody won: hand payments (7.2), kong payments (7.3) and chickens (7.4)."""
    st, e, rows, n = h.st, h.e, h.rows, rules.num_players
    disc = st.turn_seat[e].astype(np.int64)  # the discarder or the robbed seat
    turn_kong = st.turn_kong[e]
    rerpao = h.won & is_rerpao(h.end, turn_kong)
    rob = h.won & (h.end == END_QIANGGANG)
    burned = np.zeros((e.size, n), bool)
    burned[rows, disc] |= rerpao_burned(rules, rerpao) | _qianggang_burned(rules, rob)
    void = np.zeros_like(h.meld, dtype=bool)  # kongs that collect nothing: 热炮, burned seats
    void[rows, disc] |= rerpao_void_kongs(turn_kong, rerpao)
    void |= burned[..., None]

    value, plain = hands.value_and_plain(h.hand, h.mt, h.nm, rules.pattern_table)
    value = value + baoting_bonus(rules, st.baoting[e])  # the 报听 bonus is in every hand value
    _pay_zimo(rules, h, value, plain)
    _pay_ron(rules, h, value, disc)
    _pay_rerpao(rules, h, rerpao, disc, turn_kong)
    _pay_qianggang(rules, h, value, plain, disc, rob)
    _pay_kongs(rules, h, void)
    _pay_chickens(rules, h, burned)


def _pay_zimo(rules: Rules, h: _Ended, value: np.ndarray, plain: np.ndarray) -> None:
    """自摸 (RULES.md 7.2): each other seat pays the winner its hand value, with the 自摸 extra
    and 杠上开花, + k between the dealer and another seat (8.2)."""
    st, e, n = h.st, h.e, rules.num_players
    zimo = h.won & (h.end == END_ZIMO)
    for w in range(n):
        due = zimo & h.winners[:, w]
        if not due.any():
            continue
        v = value[:, w] + zimo_extra(rules, plain[:, w]) + rules.gangkai_bonus * st.rep_draw[e]
        for o in range(n):
            if o != w:
                h.ledger[:, o, w, I_HU] += np.where(due, v + streak_term(rules, st, e, o, w), 0)


def _pay_ron(rules: Rules, h: _Ended, value: np.ndarray, disc: np.ndarray) -> None:
    """A win on a discard (RULES.md 7.2): the discarder alone pays each winner its hand value,
    + its own 报听 bonus (杀报), + k between the dealer and another seat (8.2)."""
    st, e, rows = h.st, h.e, h.rows
    ron = h.won & (h.end == END_RON)
    sha_bao = baoting_bonus(rules, st.baoting[e, disc])
    for w in range(rules.num_players):
        due = ron & h.winners[:, w]
        if due.any():
            amount = value[:, w] + sha_bao + streak_term(rules, st, e, disc, w)
            h.ledger[rows, disc, w, I_HU] += np.where(due, amount, 0)


def _pay_rerpao(rules: Rules, h: _Ended, rerpao, disc, turn_kong) -> None:
    """热炮 (RULES.md 7.2): on top of the hand value, the discarder pays each winner the extra
    of switch ``rerpao`` as item ``rerpao`` (see :mod:`~zhuoji_env.engine.rerpao`)."""
    if not rerpao.any():
        return
    st, e, rows = h.st, h.e, h.rows
    extra = rerpao_extra(
        rules,
        void_kongs=rerpao_void_kongs(turn_kong, rerpao),
        meld=h.meld[rows, disc],
        late=st.meld_late[e, disc],
        discarder_ready=h.ready[rows, disc],
    )
    for w in range(rules.num_players):
        due = rerpao & h.winners[:, w]
        h.ledger[rows, disc, w, I_RERPAO] += np.where(due, extra, 0)


def _qianggang_burned(rules: Rules, rob: np.ndarray) -> np.ndarray:
    """``[k]``: the robbed seat is burned by 抢杠 under ``qianggang = plus_nine_burn`` (7.2)."""
    return rob & (rules.qianggang == "plus_nine_burn")


def _pay_qianggang(rules: Rules, h: _Ended, value, plain, disc, rob) -> None:
    """抢杠 (RULES.md 7.2): the robbed seat alone pays each robber. ``pay_for_all`` (包三家):
    what every other seat would have paid on that self-drawn win, (n-1) x the hand value with
    its 自摸 extra plus the streak terms of those payments (8.2): (n-1) x k when the robber is
    the dealer, k once otherwise (robbed or not, the dealer is one of the payers it stands in
    for). ``plus_nine_burn``: the hand value without a self-draw extra, + 9, + k between the
    robbed seat and the robber where one is the dealer (the robbed seat is burned)."""
    st, e, rows, n = h.st, h.e, h.rows, rules.num_players
    for w in range(n):
        due = rob & h.winners[:, w]
        if not due.any():
            continue
        if rules.qianggang == "pay_for_all":
            streak = sum(streak_term(rules, st, e, o, w) for o in range(n) if o != w)
            amount = (n - 1) * (value[:, w] + zimo_extra(rules, plain[:, w])) + streak
        else:
            amount = value[:, w] + 9 + streak_term(rules, st, e, disc, w)
        h.ledger[rows, disc, w, I_HU] += np.where(due, amount, 0)


def _pay_kongs(rules: Rules, h: _Ended, void: np.ndarray) -> None:
    """Kong payments (豆, RULES.md 7.3): each timely kong that is not ``void`` collects; 闷豆 and
    转弯豆 from every other seat, 点豆 from its feeder; with ``ready_required`` (双杀) only a
    ready owner's kongs collect. A late kong (憨包豆) collects nothing."""
    st, e, meld, n = h.st, h.e, h.meld, rules.num_players
    an, bu, ming = rules.kong_values
    collects = (meld >= AN_KONG) & ~void & ~st.meld_late[e]
    if rules.ready_required:
        collects &= h.ready[..., None]
    n_an = (collects & (meld == AN_KONG)).sum(-1)
    n_bu = (collects & (meld == BU_KONG)).sum(-1)
    diandou = collects & (meld == MING_KONG)
    feeder = st.meld_from[e]
    others = ~np.eye(n, dtype=bool)  # [payer, payee]: every other seat pays
    won = h.won[:, None]
    h.ledger[..., I_DOU_AN] += others * np.where(won, n_an * an, 0)[:, None, :]
    h.ledger[..., I_DOU_BU] += others * np.where(won, n_bu * bu, 0)[:, None, :]
    for p in range(n):  # 点豆: only the feeder pays
        fed = (diandou & (feeder == p)).sum(-1)  # [k, payee]
        h.ledger[:, p, :, I_DOU_MING] += others[p] * np.where(won, fed * ming, 0)


def _pay_chickens(rules: Rules, h: _Ended, burned: np.ndarray) -> None:
    """Chickens (鸡, RULES.md 7.4): each collecting seat receives its chicken total and its
    冲锋鸡 from every other seat; then 责任鸡 and 包鸡."""
    unit, golden = chicken_units(rules, h.flip)
    river_ex_chongfeng, chongfeng = _chongfeng(rules, h, golden)
    total = _chicken_totals(rules, h, unit, river_ex_chongfeng)
    collect = _collecting_seats(rules, h, burned, total, chongfeng)
    others = ~np.eye(rules.num_players, dtype=bool)
    h.ledger[..., I_CHICKEN] += others * np.where(collect, total, 0)[:, None, :]
    h.ledger[..., I_CHONGFENG] += others * np.where(collect, chongfeng, 0)[:, None, :]
    if rules.zeren != "off":
        _pay_zeren(rules, h, unit[:, YAOJI], collect, burned)
    if rules.bao_ji:
        _pay_bao_ji(rules, h, unit[:, YAOJI], river_ex_chongfeng, chongfeng, collect)


def chicken_units(rules: Rules, flip: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which tiles are chickens and their unit values (RULES.md 7.4): ``[k,27]`` units (0 for a
    tile that is no chicken) and ``[k]`` 金鸡 (golden: ``1s`` is a flip chicken, worth double).
    ``1s`` always; next(F) of the flip tile F (翻鸡), and previous(F) under ``up_down`` (上下鸡)."""
    k = flip.size
    rows = np.arange(k)
    has_flip = flip >= 0
    f = np.maximum(flip, 0)
    chick = np.zeros((k, NUM_KINDS), bool)
    chick[:, YAOJI] = True
    chick[rows[has_flip], next_kind(f[has_flip])] = True
    golden = has_flip & (next_kind(f) == YAOJI)
    if rules.flip_mode == "up_down":
        chick[rows[has_flip], prev_kind(f[has_flip])] = True
        golden |= has_flip & (prev_kind(f) == YAOJI)
    unit = np.where(chick, rules.chicken_unit, 0).astype(np.int64)
    unit[:, YAOJI] *= np.where(golden, 2, 1)
    return unit, golden


def _chongfeng(rules: Rules, h: _Ended, golden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """冲锋鸡 (RULES.md 7.4): the first discarded ``1s`` still in its discarder's river is worth
    ``chongfeng`` units (x2 golden) to it instead of its ordinary chicken value. Returns the
    rivers without that tile (``[k,n,27]``) and each seat's 冲锋鸡 (``[k,n]``)."""
    st, e, rows = h.st, h.e, h.rows
    river = st.river_counts[e].astype(np.int64)
    ys = st.yaoji_seat[e].astype(np.int64)
    chong = h.won & (st.yaoji_fate[e] == YAOJI_IN_RIVER) & (rules.chongfeng > 0)
    river[rows[chong], ys[chong], YAOJI] -= 1
    value = rules.chongfeng * np.where(golden, 2, 1)
    chongfeng = np.zeros((e.size, rules.num_players), dtype=np.int64)
    chongfeng[rows[chong], ys[chong]] = value[chong]
    return river, chongfeng


def _chicken_totals(rules: Rules, h: _Ended, unit, river_ex_chongfeng) -> np.ndarray:
    """``[k,n]``: each seat's chicken total (RULES.md 7.4), from the tiles of ``chicken_scope``
    (concealed and melds; unclaimed discards under ``all``, discarded ``1s`` only under
    ``yaoji_river``), and a flat 60 for a 闷豆 of a chicken under ``chicken_kong_60``."""
    if rules.chicken_scope == "hand":
        river = np.zeros_like(river_ex_chongfeng)
    elif rules.chicken_scope == "yaoji_river":
        river = river_ex_chongfeng * (np.arange(NUM_KINDS) == YAOJI)
    else:
        river = river_ex_chongfeng
    held = h.hand.astype(np.int64) + h.mt
    total = ((held + river) * unit[:, None, :]).sum(-1)
    if rules.chicken_kong_60:
        quad = (h.meld == AN_KONG) & (unit > 0)[:, None, :]
        total += (quad * (60 - 4 * unit[:, None, :])).sum(-1)
    return total


def _collecting_seats(rules: Rules, h: _Ended, burned, total, chongfeng) -> np.ndarray:
    """``[k,n]``: the collecting seats (RULES.md 7.4 "Who collects"), which receive chickens,
    冲锋鸡, 责任鸡 and 包鸡: never a burned seat; with ``ready_required`` (双杀) the winners and
    the ready seats, whatever their own chicken total; without it the seats whose chicken total,
    冲锋鸡 included, is above 0."""
    collect = h.won[:, None] & ~burned
    if rules.ready_required:
        return collect & h.ready
    return collect & (total + chongfeng > 0)


def _pay_zeren(rules: Rules, h: _Ended, yaoji_unit, collect, burned) -> None:
    """责任鸡 (RULES.md 7.4): the discarder of a claimed first ``1s`` pays the claimer one ``1s``
    unit when the claimer collects; ``reversible``: otherwise the claimer pays the discarder
    when only the discarder is ready (and not burned)."""
    st, e, rows, ready = h.st, h.e, h.rows, h.ready
    claimed = h.won & (st.yaoji_fate[e] == YAOJI_CLAIMED)
    ys = st.yaoji_seat[e].astype(np.int64)
    cl = np.maximum(st.yaoji_claimer[e].astype(np.int64), 0)
    fwd = claimed & collect[rows, cl]
    h.ledger[rows, ys, cl, I_ZEREN] += np.where(fwd, yaoji_unit, 0)
    if rules.zeren == "reversible":
        rev = claimed & ~fwd & ready[rows, ys] & ~ready[rows, cl] & ~burned[rows, ys]
        h.ledger[rows, cl, ys, I_ZEREN] += np.where(rev, yaoji_unit, 0)


def _pay_bao_ji(rules: Rules, h: _Ended, yaoji_unit, river_ex_chongfeng, chongfeng, collect):
    """包鸡 (RULES.md 7.4): a seat that is not ready (burned or not) pays each collecting seat,
    whatever that seat's own chicken total, the ``1s`` in its discards (whatever
    ``chicken_scope`` says) and melds at the ``1s`` unit, and its 冲锋鸡 at the 冲锋鸡 value;
    concealed chickens are not charged."""
    n = rules.num_players
    owed = (river_ex_chongfeng[:, :, YAOJI] + h.mt[:, :, YAOJI]) * yaoji_unit[:, None] + chongfeng
    for i in range(n):
        for c in range(n):
            if i == c:
                continue
            due = h.won & ~h.ready[:, i] & collect[:, c]
            h.ledger[:, i, c, I_BAO_JI] += np.where(due, owed[:, i], 0)
