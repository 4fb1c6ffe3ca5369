"""Settlement of ended hands (RULES.md 7) and the next dealer (RULES.md 8).

The result is a ledger ``[B, n, n, ITEMS]`` of amounts paid by a seat (axis 1) to a seat (axis 2)
for an item (axis 3, ``state.ITEMS``), already multiplied by ``base_stake``. A seat's score for
the hand is what it received minus what it paid.
"""

from __future__ import annotations

import numpy as np

from zhuoji_env import hands
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
    """Fill ``ledger``, ``flip``, ``next_dealer`` and ``next_streak`` of the ended games ``e``."""
    n = rules.num_players
    k = e.size
    ledger = np.zeros((k, n, n, st.ledger.shape[-1]), dtype=np.int64)
    end = st.end[e]
    winners = st.winners[e]
    tile = st.tile[e].astype(np.int64)
    hand = st.hand[e].astype(np.int16)
    by_discard = (end == END_RON) | (end == END_QIANGGANG)
    hand += (winners & by_discard[:, None])[..., None] * _EYE[np.maximum(tile, 0)][:, None, :]
    meld = st.meld[e]
    mt = meld_tiles(meld)
    nm = (meld > 0).sum(-1)
    ready = winners | hands.is_ready(hand, mt, nm)
    seats = np.arange(n)

    draw = end == END_DRAW
    if draw.any():
        _chajiao(rules, st, e, ledger, draw, hand, mt, nm, ready)
    won = ~draw
    flip = np.full(k, -1, dtype=np.int64)
    live = st.front[e] <= st.back[e]
    flip[live] = st.wall[e[live], st.front[e[live]]]
    flip[draw] = -1
    if won.any():
        _settle_wins(rules, st, e, ledger, won, end, winners, hand, mt, nm, ready, flip)
    ledger[..., I_BAOPAI] += st.baopai[e]
    ledger *= rules.base_stake
    st.ledger[e] = ledger
    st.flip[e] = flip

    # next dealer and streak (8.1, 8.2)
    dealer = st.dealer[e].astype(np.int64)
    nxt = dealer.copy()
    nwin = winners.sum(-1)
    order = (dealer[:, None] + seats[None]) % n  # seats from the dealer on
    first_winner = order[np.arange(k), np.argmax(winners[np.arange(k)[:, None], order], -1)]
    nxt = np.where(nwin == 1, winners.argmax(-1), nxt)
    nxt = np.where(nwin == 2, first_winner, nxt)
    nxt = np.where(nwin >= 3, st.turn_seat[e], nxt)
    if rules.draw_dealer == "classic" and draw.any():
        nready = ready.sum(-1)
        lone = (~ready).argmax(-1)
        after = order[:, 1:]
        first_ready = after[np.arange(k), np.argmax(ready[np.arange(k)[:, None], after], -1)]
        dealer_ready = ready[np.arange(k), dealer]
        pick = np.where(dealer_ready, dealer, first_ready)
        pick = np.where(nready == n - 1, lone, pick)
        pick = np.where((nready == 0) | (nready == n), dealer, pick)
        nxt = np.where(draw, pick, nxt)
    dealer_won = winners[np.arange(k), dealer]
    streak = st.streak[e].astype(np.int64)
    st.next_dealer[e] = nxt
    st.next_streak[e] = np.where(nxt == dealer, np.where(dealer_won, streak + 1, streak), 0)


def _chajiao(rules, st, e, ledger, draw, hand, mt, nm, ready) -> None:
    """黄庄查叫 (7.5): each seat not ready pays each ready seat its 查叫 value."""
    n = rules.num_players
    nready = ready.sum(-1)
    pays = draw & (nready > 0) & (nready < n)
    if not pays.any():
        return
    value = hands.chajiao_value(hand, mt, nm, rules.pattern_table)
    value = value + baoting_bonus(rules, st.baoting[e])
    for r in range(n):
        for i in range(n):
            if i == r:
                continue
            due = pays & ready[:, r] & ~ready[:, i]
            amount = value[:, r] + streak_term(rules, st, e, i, r)
            ledger[:, i, r, I_CHAJIAO] += np.where(due, amount, 0)


def _settle_wins(rules, st, e, ledger, won, end, winners, hand, mt, nm, ready, flip):
    n = rules.num_players
    k = e.size
    rows = np.arange(k)
    disc = st.turn_seat[e].astype(np.int64)  # discarder or robbed seat
    ron = won & (end == END_RON)
    rob = won & (end == END_QIANGGANG)
    zimo = won & (end == END_ZIMO)
    rerpao = ron & st.turn_kong[e].any(-1)
    burned = np.zeros((k, n), bool)
    if rules.rerpao == "plus_one_burn":
        burned[rows, disc] |= rerpao
    if rules.qianggang == "plus_nine_burn":
        burned[rows, disc] |= rob
    meld = st.meld[e]
    kong = meld >= AN_KONG
    void = np.zeros_like(kong)
    void[rows, disc] |= st.turn_kong[e] & rerpao[:, None]
    void |= burned[..., None]

    # 7.2 hand payments
    table = rules.pattern_table
    pattern, plain = hands.value_and_plain(hand, mt, nm, table)
    bt = baoting_bonus(rules, st.baoting[e])
    bt_disc = bt[rows, disc]
    kv = rules.kong_values
    transfer = (
        (void[rows, disc] & ~st.meld_late[e, disc]) * np.array(
            [0, 0, kv[0] * (n - 1), kv[1] * (n - 1), kv[2]]
        )[meld[rows, disc]]
    ).sum(-1)
    rerpao_extra = transfer if rules.rerpao == "transfer" else np.ones(k, dtype=np.int64)
    for w in range(n):
        isw = won & winners[:, w]
        if not isw.any():
            continue
        zx = zimo_extra(rules, plain[:, w])
        v_zimo = pattern[:, w] + zx + rules.gangkai_bonus * st.rep_draw[e] + bt[:, w]
        due = isw & zimo
        for o in range(n):
            if o != w:
                ledger[:, o, w, I_HU] += np.where(due, v_zimo + streak_term(rules, st, e, o, w), 0)
        s_term = streak_term(rules, st, e, disc, w)
        v_ron = pattern[:, w] + bt[:, w] + bt_disc + s_term
        if rules.qianggang == "pay_for_all":
            v_rob = (n - 1) * (pattern[:, w] + zx + bt[:, w]) + s_term
        else:
            v_rob = pattern[:, w] + bt[:, w] + 9 + s_term
        amount = np.where(isw & ron, v_ron, 0) + np.where(isw & rob, v_rob, 0)
        ledger[rows, disc, w, I_HU] += amount
        ledger[rows, disc, w, I_RERPAO] += np.where(isw & rerpao, rerpao_extra, 0)

    # 7.3 kong payments
    collects_kong = kong & ~void & ~st.meld_late[e]
    if rules.ready_required:
        collects_kong &= ready[..., None]
    n_an = (collects_kong & (meld == AN_KONG)).sum(-1)
    n_bu = (collects_kong & (meld == BU_KONG)).sum(-1)
    ming = collects_kong & (meld == MING_KONG)
    feeder = st.meld_from[e]
    others = ~np.eye(n, dtype=bool)  # [payer, payee]: every other seat pays
    won_seats = won[:, None]
    ledger[..., I_DOU_AN] += others * np.where(won_seats, n_an * kv[0], 0)[:, None, :]
    ledger[..., I_DOU_BU] += others * np.where(won_seats, n_bu * kv[1], 0)[:, None, :]
    for p in range(n):  # 点豆: only the feeder pays
        fed = (ming & (feeder == p)).sum(-1)  # [k, payee]
        ledger[:, p, :, I_DOU_MING] += others[p] * np.where(won_seats, fed * kv[2], 0)

    # 7.4 chickens
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
    river = st.river_counts[e].astype(np.int64)
    fate = st.yaoji_fate[e]
    ys = st.yaoji_seat[e].astype(np.int64)
    chong = won & (fate == YAOJI_IN_RIVER) & (rules.chongfeng > 0)
    river[rows[chong], ys[chong], YAOJI] -= 1
    chong_value = rules.chongfeng * np.where(golden, 2, 1)
    cf = np.zeros((k, n), dtype=np.int64)
    cf[rows[chong], ys[chong]] = chong_value[chong]
    if rules.chicken_scope == "hand":
        river_part = np.zeros_like(river)
    elif rules.chicken_scope == "yaoji_river":
        river_part = river * (np.arange(NUM_KINDS) == YAOJI)
    else:
        river_part = river
    held = hand.astype(np.int64) + mt
    total = ((held + river_part) * unit[:, None, :]).sum(-1)
    if rules.chicken_kong_60:
        quad = (meld == AN_KONG) & chick[:, None, :]
        total += (quad * (60 - 4 * unit[:, None, :])).sum(-1)
    collect = won[:, None] & ~burned
    if rules.ready_required:
        collect &= ready
    ledger[..., I_CHICKEN] += others * np.where(collect, total, 0)[:, None, :]
    ledger[..., I_CHONGFENG] += others * np.where(collect, cf, 0)[:, None, :]

    # 责任鸡
    if rules.zeren != "off":
        zr = won & (fate == YAOJI_CLAIMED)
        cl = np.maximum(st.yaoji_claimer[e].astype(np.int64), 0)
        z = unit[:, YAOJI]
        fwd = zr & collect[rows, cl]
        ledger[rows, ys, cl, I_ZEREN] += np.where(fwd, z, 0)
        if rules.zeren == "reversible":
            rev = zr & ~fwd & ready[rows, ys] & ~ready[rows, cl] & ~burned[rows, ys]
            ledger[rows, cl, ys, I_ZEREN] += np.where(rev, z, 0)

    # 包鸡
    if rules.bao_ji:
        owed = (river[:, :, YAOJI] + mt[:, :, YAOJI]) * unit[:, None, YAOJI] + cf
        for i in range(n):
            for c in range(n):
                if i == c:
                    continue
                due = won & ~ready[:, i] & collect[:, c] & (total[:, c] + cf[:, c] > 0)
                ledger[:, i, c, I_BAO_JI] += np.where(due, owed[:, i], 0)
