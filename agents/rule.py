"""``rule``: a rule-based player built on a one-step expected-value estimate of a hand.

Every choice the agent makes (a discard, a kong, a pong, passing) leaves it with ``3k+1``
concealed tiles waiting for its next tile. :meth:`RuleAgent.evaluate` scores such a hand by
how likely it is to be completed, and to be ready (叫牌) when the hand ends, and what that is
worth, for several targets:

========== ================================================================================
target     shanten and useful tiles (counting only tiles not yet visible to the agent)
========== ================================================================================
standard   ``hands.shanten`` (seven pairs included) and the live tiles that lower it; a
           ready hand is valued exactly from its waits (pattern value of each wait, and
           whether it may be won on a discard: a plain hand needs a kong, the passport)
七对       6 - pairs, live tiles matching a single (concealed hands only)
大对子     tiles missing for (4 - melds) triplets and a pair
清一色     the dominant suit alone from the per-suit tables (melds must be of that suit)
========== ================================================================================

A target with shanten ``s`` and ``u`` useful live tiles is completed in the ``T`` draws the
agent has left (live wall / players) with a probability from an Erlang approximation (``s``
steps at rate ``u / unseen`` per draw, then a final step that discards by the other seats
speed up when the hand may win on a discard), and is ready at the end with probability
``P(Poisson(T u / unseen) >= s)``. The value of a win is the pattern value paid by one seat
(discard) or all (自摸, with its extra), plus the chickens held (``1s`` in hand and melds, and in
its own river where the rules count river chickens, its 冲锋鸡) and its kongs' payments, which
all need the agent to be ready; being ready at an exhaustive draw earns 查叫 from the seats not
ready. Every tile held (and, under ``chicken_scope = all``, in its river) also counts as a
chicken with the chance that the flip tile is the kind before it. The hand's value is that of
its best target.

Discards multiply the value by the chance of not dealing in, and subtract the chance times what
a deal-in costs. The deal-in chance of a tile sums over opponents: readiness (declared 报听:
certain; otherwise growing with its discards and melds), ability to win on a discard (a kong
or 报听 or a 热炮 after the agent's own kong this turn: certain; otherwise likelier with pongs,
which point to 大对子) and how likely the tile is among its waits (middle ranks more than
terminals; much less for a tile it discarded itself or whose copies are nearly all visible;
more for the suit of an opponent whose melds are all of one suit). Right after its own kong
(``turn_flags[2]``) every ready opponent may win on its discard (热炮): the chances are scaled
up (``rerpao_caution``) and a deal-in also costs the 热炮 extra and the kongs' payments, so it
discards the safest tile unless that costs much more.

Decisions: ``hu`` whenever legal (not when pass-locked under the penalty rule);
``baoting`` whenever legal and some ready discard has a live wait; kongs (闷豆, 转弯豆, 点豆)
when the hand after the kong (with one extra draw, the passport and its payment, and, for a
转弯豆, the risk of being robbed) is worth at least the best discard, so a kong that breaks a
ready hand's waits is declined; pongs when the hand after the pong and its best discard is worth
more than passing (a pong of the first discarded ``1s`` adds the 责任鸡). Everything is batched:
all candidate hands of all rows are scored in one call.

The weights are class attributes, tuned in the arena (guiyang; each change played against the
previous setting, with greedy and random at the table, 1,200 deals x 24 seatings): weighting
readiness without a win (``p_draw``, ``p_other_win``) low gained about +1.6 points per hand
(high weights made it chase 七对 and 查叫 instead of wins), and ``ron_speedup`` 0.3 instead of
0.5 another +0.5; more defence (``danger_scale`` 2 or 3) lost 0.3-0.7 against this field.
"""

from __future__ import annotations

import numpy as np

from agents.base import (
    EYE,
    P_BAOTING,
    P_RESPONSE,
    P_ROB,
    P_TURN,
    Agent,
    counts,
    decision_tile,
    live_counts,
    own_melds,
    phase,
)
from agents.simple import locked_window
from zhuoji_env import hands
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.settlement import zimo_extra
from zhuoji_env.observation import block
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import NUM_KINDS, NUM_TILES, YAOJI, prev_kind

VERSION_RULE = "zhuoji-obs-v2+rule"
"""The input of a network that reads this agent's advice (:meth:`RuleAgent.advice`) beside the
v2 observation: ``agents.ppo.NetInput``."""
_PREV = prev_kind(np.arange(NUM_KINDS))
_RANK_WAIT = np.array([0.05, 0.08, 0.11, 0.12, 0.12, 0.12, 0.11, 0.08, 0.05])
_POW5 = (5 ** np.arange(8, -1, -1)).astype(np.int32)
_LN_FACT = np.log(np.cumprod(np.r_[1.0, np.arange(1, 16)]))


def poisson_sf(k, lam) -> np.ndarray:
    """``P(Poisson(lam) >= k)`` elementwise for integer ``k >= 0``."""
    k = np.asarray(k, dtype=np.int64)
    lam = np.maximum(np.asarray(lam, dtype=np.float64), 1e-12)
    cdf = np.zeros(np.broadcast(k, lam).shape)
    log_lam = np.log(lam)
    for j in range(int(k.max(initial=0))):
        cdf += np.where(j < k, np.exp(j * log_lam - lam - _LN_FACT[min(j, 15)]), 0.0)
    return np.clip(1.0 - cdf, 0.0, 1.0)


class RuleAgent(Agent):
    """The rule-based player described in the module docstring.

    ``rules`` (a ``Rules``, a preset name or None for guiyang) only sets the values it weighs
    (pattern values, kong and chicken payments, where chickens count); it plays legally under
    any rules since it follows the mask.
    """

    name = "rule"

    # tunable weights
    # (tuned in the arena against the previous values, 1,200 deals each: see agents/README.md)
    ron_speedup = 0.3  # each opponent's discard is worth this many own draws for a final wait
    p_draw = 0.05  # weight of 查叫 at an exhaustive draw for a ready hand that does not win
    not_ready_seats = 1.5  # expected seats paying 查叫 to a ready seat
    p_other_win = 0.05  # weight of chickens and kongs collected while ready, somebody else won
    dealin_cost = 6.0  # what a deal-in costs beyond losing the hand's own value
    kong_tempo = 1.0  # extra draws a kong brings (its replacement draw)
    danger_scale = 1.0  # multiplies every opponent's chance of winning on a discard
    rerpao_caution = 2.0  # and this too right after the agent's own kong (a discard is 热炮)
    flip_weight = 1.0  # weight of the chance that a tile turns out a flip chicken
    final_wait = {"std": 5.0, "qidui": 2.5, "ddz": 3.5, "flush": 4.5}

    def __init__(self, seed=None, rules=None):
        super().__init__(seed)
        self.rules = Rules.make(rules)
        r = self.rules
        self.table = r.pattern_table
        self.kong_values = np.array(r.kong_values, dtype=np.float64)
        self.unit = float(r.chicken_unit)
        self.scope = r.chicken_scope
        self.chongfeng = float(r.chongfeng)
        self.zeren = r.zeren != "off"

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, h, mt, nm, passport, live, draws, collect, n_opp):
        """Value of ``3k+1`` hands ``h [m,27]`` with melds ``mt [m,27]`` (tiles), ``nm [m]``
        melds, ``passport [m]`` (may win plain hands on discards), ``live [m,27]`` unseen
        copies, ``draws [m]`` own draws left, ``collect [m]`` chickens and kong payments due if
        ready, ``n_opp [m]`` opponents."""
        m = h.shape[0]
        h = h.astype(np.int16)
        unseen = np.maximum(live.sum(-1), 1).astype(np.float64)
        rate = 1.0 + self.ron_speedup * n_opp
        tb = self.table
        s, sp = hands.shanten_neighbours(h, 1)
        improve = (sp < s[:, None]) & (h + mt < 4) & (live > 0)
        u_std = (live * improve).sum(-1).astype(np.float64)

        best = np.zeros(m)
        # ---- ready hands: exact waits
        rd = np.flatnonzero(s == 0)
        if rd.size:
            wr, wt = np.nonzero(improve[rd])
            rows = rd[wr]
            won = h[rows] + EYE[wt]
            value, plain = hands.value_and_plain(won, mt[rows], nm[rows], tb)
            value = value.astype(np.float64)
            ronable = ~plain | passport[rows]
            rr = np.where(ronable, rate[rows], 1.0)
            lv = live[rows, wt].astype(np.float64)
            zimo_pay = n_opp[rows] * (value + zimo_extra(self.rules, plain))
            pay = zimo_pay / rr + value * (1 - 1 / rr)
            speed = np.zeros(m)
            gain = np.zeros(m)
            chajiao = np.zeros(m)
            np.add.at(speed, rows, lv * rr)
            np.add.at(gain, rows, lv * rr * pay)
            np.maximum.at(chajiao, rows, value)
            sp_rd = speed[rd]
            p_win = 1 - np.exp(-draws[rd] * sp_rd / unseen[rd])
            v_win = gain[rd] / np.maximum(sp_rd, 1e-9) + collect[rd]
            v_ready = (
                self.p_draw * self.not_ready_seats * chajiao[rd] + self.p_other_win * (collect[rd])
            )
            best[rd] = p_win * v_win + (1 - p_win) * v_ready

        # ---- targets for hands not ready (and ready ones may still aim higher)
        def target(s_x, u_x, value, plain, wait, ok):
            ronable = ~np.asarray(plain) | passport
            s_x = np.maximum(s_x, 0)
            u_x = np.maximum(u_x, 0.5)
            rr = np.where(ronable, rate, 1.0)
            a = u_x / unseen
            b = wait * rr / unseen
            mean = s_x / a + 1 / b
            p_win = poisson_sf(s_x + 1, draws * (s_x + 1) / mean)
            p_ready = poisson_sf(s_x, draws * a)
            zimo_pay = n_opp * (value + zimo_extra(self.rules, np.broadcast_to(plain, (m,))))
            pay = zimo_pay / rr + value * (1 - 1 / rr)
            v_ready = self.p_draw * self.not_ready_seats * value + self.p_other_win * collect
            u = p_win * (pay + collect) + np.maximum(p_ready - p_win, 0) * v_ready
            return np.where(ok, u, 0.0)

        fw = self.final_wait
        nr = s > 0
        plain_value = float(tb["pinghu"])
        best = np.maximum(best, target(s, u_std, plain_value, True, fw["std"], nr))
        # 七对
        concealed = nm == 0
        pairs = (h // 2).sum(-1)
        s7 = 6 - pairs
        u7 = (live * (h % 2 == 1)).sum(-1)
        v7 = np.where((h == 4).any(-1), float(tb["longqidui"]), float(tb["qidui"]))
        best = np.maximum(best, target(s7, u7, v7, False, fw["qidui"], concealed))
        # 大对子: (4 - nm) triplets and a pair from the concealed tiles
        need_sets = 4 - nm
        c3 = np.sort(np.minimum(h, 3), -1)[:, ::-1]
        idx = np.arange(5)[None, :]
        trip_need = np.where(idx < need_sets[:, None], 3 - c3[:, :5], 0).sum(-1)
        pair_src = np.take_along_axis(c3, need_sets[:, None].clip(0, 26), -1)[:, 0]
        d_ddz = trip_need + np.maximum(2 - pair_src, 0)
        live_ok = live > 0
        u_ddz = (live * live_ok * ((h == 2) | (h == 1))).sum(-1)
        sd = d_ddz - 1
        best = np.maximum(best, target(sd, u_ddz, float(tb["daduizi"]), False, fw["ddz"], sd >= 0))
        # 清一色: the dominant suit's tiles alone
        allt = (h + mt).reshape(m, 3, 9).sum(-1)
        suit = allt.argmax(-1)
        meld_off = (mt.reshape(m, 3, 9).sum(-1) * (np.arange(3)[None] != suit[:, None])).sum(-1)
        hs = h.reshape(m, 3, 9)[np.arange(m), suit]  # [m,9]
        idx_s = hs.astype(np.int32) @ _POW5
        k_sets = h.sum(-1) // 3
        need_fl = hands.DIST[idx_s, np.clip(k_sets, 0, 4), 1].astype(np.int64)
        s_fl = need_fl - 1
        u_fl = np.zeros(m)
        live_s = live.reshape(m, 3, 9)[np.arange(m), suit]
        for rank in range(9):
            can = (hs[:, rank] < 4) & (live_s[:, rank] > 0)
            nxt = hands.DIST[np.where(can, idx_s + _POW5[rank], idx_s), np.clip(k_sets, 0, 4), 1]
            u_fl += np.where(can & (nxt < need_fl), live_s[:, rank], 0)
        flush_ok = (meld_off == 0) & (s_fl < 6)
        best = np.maximum(
            best, target(s_fl, u_fl, float(tb["flush"]), False, fw["flush"], flush_ok)
        )
        return best, s

    # ------------------------------------------------------------------ acting
    def _act(self, obs, mask):
        return self.advice(obs, mask)[0]

    def advice(self, obs, mask) -> tuple[np.ndarray, np.ndarray]:
        """``(actions [k], scores [k, 86])``: what the agent plays, and the score (expected
        points, :meth:`evaluate` less the deal-in risk) of every action it weighed, NaN for the
        others: illegal actions, and legal ones it decides without weighing (a win, or a pass
        where a win is all there is; 报听 taken or declined by its own test, and the pass left
        after a win it may not take). A pong's score is that of its best discard after it.
        ``obs`` and ``mask`` as for :meth:`act`, already checked."""
        k = obs.shape[0]
        out = np.full(k, -1, dtype=np.int64)
        scores = np.full((k, A.NUM_ACTIONS), np.nan)
        ph = phase(obs)
        window = (ph == P_RESPONSE) | (ph == P_ROB)
        hu = mask[:, A.HU] & ~locked_window(obs)
        out[hu] = A.HU
        # rob windows (only hu or pass) and anything else without a choice to weigh
        out[(out < 0) & window & ~mask[:, A.PONG] & ~mask[:, A.KONG]] = A.PASS
        # 报听 when legal and a ready discard has a live wait
        live = live_counts(obs)
        bt = np.flatnonzero((out < 0) & mask[:, A.BAOTING])
        if bt.size:
            declare = _ready_discard_has_live_wait(counts(obs[bt], "hand"), live[bt])
            out[bt[declare]] = A.BAOTING
        todo = np.flatnonzero(out < 0)
        if todo.size:
            out[todo], scores[todo] = self._choose(obs[todo], mask[todo], ph[todo], live[todo])
        return out, scores

    def _choose(self, obs, mask, ph, live):
        """Score every candidate (discard, kong, pong + discard, pass) and take the best:
        ``(actions [k], scores [k, 86])`` as for :meth:`advice`."""
        k = obs.shape[0]
        h = counts(obs, "hand")
        kc = counts(obs, "kong_counts")  # [k,4,(an, bu, ming, late)]
        mt, nm, _ = own_melds(obs)
        n_players = block(obs, "seats_present").sum(-1).round().astype(np.int64)
        n_opp = (n_players - 1).astype(np.float64)
        my_bt = block(obs, "baoting")[:, 0].any(-1)
        passport = (kc[:, 0].sum(-1) > 0) | my_bt
        draws = block(obs, "wall")[:, 0] * NUM_TILES / np.maximum(n_players, 1)
        kv = self.kong_values
        dou = n_opp * (kc[:, 0, 0] * kv[0] + kc[:, 0, 1] * kv[1]) + kc[:, 0, 2] * kv[2]
        tile = decision_tile(obs)
        flags = block(obs, "turn_flags")
        drawn = block(obs, "drawn")
        yaoji = block(obs, "yaoji")
        none_1s_yet = yaoji[:, 0] < 0.01
        river_own = counts(obs, "river")[:, 0]
        my_chong = (yaoji[:, 1] > 0.5) & (yaoji[:, 5] > 0.5)
        danger = self._deal_in_prob(obs, live, ph, flags)
        discarded = block(obs, "river_recent")[:, 0].sum((-1, -2)) > 0

        rows, acts, hs, mts, nms, pps, dls, dous, chk, dng = ([] for _ in range(10))

        def add(r, a, hh, mm, nmm, pp, dl, dd, cc, dg):
            rows.append(r)
            acts.append(a)
            hs.append(hh)
            mts.append(mm)
            nms.append(nmm)
            pps.append(pp)
            dls.append(dl)
            dous.append(dd)
            chk.append(cc)
            dng.append(dg)

        # chance that each kind is the flip chicken: the next live tile is its previous kind
        flip_p = self.flip_weight * live[:, _PREV] / np.maximum(live.sum(-1, keepdims=True), 1)
        flip_p[:, YAOJI] = 0.0  # 1s is counted as a chicken anyway

        def chickens(r, hh, mm, river_1s, chong, river_extra=None):
            """Expected chicken units of candidates: 1s in hand, melds and (where the rules
            count it) the own river, the 冲锋鸡, and the chance of each tile being the flip
            chicken (its river copies only under ``chicken_scope = all``)."""
            held = hh[:, YAOJI] + mm[:, YAOJI]
            if self.scope != "hand":
                held = held + river_1s
            flip = ((hh + mm) * flip_p[r]).sum(-1)
            if self.scope == "all":
                rv = river_own[r] if river_extra is None else river_own[r] + river_extra
                flip = flip + (rv * flip_p[r]).sum(-1)
            return self.unit * (held + flip) + self.chongfeng * self.unit * chong

        turnlike = (ph == P_TURN) | (ph == P_BAOTING)
        # discards
        r, t = np.nonzero(mask[:, A.DISCARD : A.DISCARD + NUM_KINDS] & turnlike[:, None])
        if r.size:
            hh = h[r] - EYE[t]
            is1s = t == YAOJI
            chong = my_chong[r] | (is1s & none_1s_yet[r] & (self.chongfeng > 0))
            river_1s = river_own[r, YAOJI] + is1s
            add(
                r,
                A.DISCARD + t,
                hh,
                mt[r],
                nm[r],
                passport[r],
                draws[r],
                dou[r],
                chickens(r, hh, mt[r], river_1s, chong, EYE[t]),
                danger[r, t],
            )
        # 闷豆
        r, t = np.nonzero(mask[:, A.ANGANG : A.ANGANG + NUM_KINDS])
        if r.size:
            hh = h[r] - 4 * EYE[t]
            mm = mt[r] + 4 * EYE[t]
            late = (drawn[r, t] < 0.5) & discarded[r]
            add(
                r,
                A.ANGANG + t,
                hh,
                mm,
                nm[r] + 1,
                np.ones(r.size, bool),
                draws[r] + self.kong_tempo,
                dou[r] + np.where(late, 0, n_opp[r] * kv[0]),
                chickens(r, hh, mm, river_own[r, YAOJI], my_chong[r]),
                np.zeros(r.size),
            )
        # 转弯豆 (may be robbed)
        r, t = np.nonzero(mask[:, A.BUGANG : A.BUGANG + NUM_KINDS])
        if r.size:
            hh = h[r] - EYE[t]
            mm = mt[r] + EYE[t]
            late = drawn[r, t] < 0.5
            add(
                r,
                A.BUGANG + t,
                hh,
                mm,
                nm[r],
                np.ones(r.size, bool),
                draws[r] + self.kong_tempo,
                dou[r] + np.where(late, 0, n_opp[r] * kv[1]),
                chickens(r, hh, mm, river_own[r, YAOJI], my_chong[r]),
                np.minimum(1.0, 1.5 * danger[r, t]),
            )
        resp = ph == P_RESPONSE
        # pass
        r = np.flatnonzero(resp)
        if r.size:
            add(
                r,
                np.full(r.size, A.PASS),
                h[r],
                mt[r],
                nm[r],
                passport[r],
                draws[r],
                dou[r],
                chickens(r, h[r], mt[r], river_own[r, YAOJI], my_chong[r]),
                np.zeros(r.size),
            )
        # 点豆
        r = np.flatnonzero(resp & mask[:, A.KONG])
        if r.size:
            t = tile[r]
            hh = h[r] - 3 * EYE[t]
            mm = mt[r] + 4 * EYE[t]
            add(
                r,
                np.full(r.size, A.KONG),
                hh,
                mm,
                nm[r] + 1,
                np.ones(r.size, bool),
                draws[r] + self.kong_tempo,
                dou[r] + kv[2],
                chickens(r, hh, mm, river_own[r, YAOJI], my_chong[r]),
                np.zeros(r.size),
            )
        # pong, then each discard
        r0 = np.flatnonzero(resp & mask[:, A.PONG])
        if r0.size:
            t0 = tile[r0]
            h2 = h[r0] - 2 * EYE[t0]
            first_1s = (t0 == YAOJI) & (yaoji[r0, 0] < 0.3) & (yaoji[r0, 5] > 0.5)
            # the discarder alone pays it: spread over the per-opponent chicken units
            zr = np.where(first_1s & self.zeren, self.unit / np.maximum(n_opp[r0], 1), 0.0)
            i, d = np.nonzero(h2 > 0)
            r = r0[i]
            hh = h2[i] - EYE[d]
            mm = mt[r] + 3 * EYE[t0[i]]
            add(
                r,
                np.full(r.size, A.PONG),
                hh,
                mm,
                nm[r] + 1,
                passport[r],
                draws[r],
                dou[r],
                chickens(r, hh, mm, river_own[r, YAOJI] + (d == YAOJI), my_chong[r], EYE[d])
                + zr[i],
                danger[r, d],
            )

        rows = np.concatenate(rows)
        acts = np.concatenate(acts)
        value, _ = self.evaluate(
            np.concatenate(hs),
            np.concatenate(mts),
            np.concatenate(nms),
            np.concatenate(pps),
            live[rows],
            np.concatenate(dls),
            np.concatenate(chk) * n_opp[rows] + np.concatenate(dous),
            n_opp[rows],
        )
        p = np.concatenate(dng)
        # a 热炮 costs one more and voids the kongs made this turn (their payments, at most dou)
        rerpao = (ph == P_TURN) & (flags[:, 2] > 0.5)
        cost = self.dealin_cost + np.where(rerpao, 1.0 + dou, 0.0)
        score = value * (1 - p) - p * cost[rows]
        # the best candidate per row; exact ties go to the first candidate (stable sort)
        order = np.lexsort((-score, rows))
        first = np.r_[True, rows[order][1:] != rows[order][:-1]]
        out = np.full(k, -1, dtype=np.int64)
        out[rows[order][first]] = acts[order][first]
        bad = out < 0
        if bad.any():  # nothing scored (should not happen): first legal action
            out[bad] = mask[bad].argmax(-1)
        scores = np.full((k, A.NUM_ACTIONS), -np.inf)
        np.maximum.at(scores, (rows, acts), score)
        scores[np.isneginf(scores)] = np.nan
        return out, scores

    def _deal_in_prob(self, obs, live, ph, flags) -> np.ndarray:
        """float ``[k,27]``: chance that discarding each kind is won on by an opponent."""
        k = obs.shape[0]
        pong = counts(obs, "pong")
        kexp = counts(obs, "kong_exposed")
        kc = counts(obs, "kong_counts")
        river = counts(obs, "river")
        recent = counts(obs, "river_recent").sum(2)
        present = block(obs, "seats_present") > 0.5
        bt = block(obs, "baoting").any(-1)
        rerpao = (ph == P_TURN) & (flags[:, 2] > 0.5)  # own kong this turn: a discard is 热炮
        mine_bt = bt[:, 0]
        safe_all = np.ones((k, NUM_KINDS))
        rank_w = np.tile(_RANK_WAIT, 3)[None, :]
        for o in range(1, 4):
            pongs = pong[:, o].sum(-1)
            kongs = kc[:, o].sum(-1)
            melds = pongs + kongs
            ndisc = river[:, o].sum(-1)
            p_ready = np.clip(0.03 * ndisc + 0.15 * melds - 0.05, 0.0, 0.85)
            p_ready = np.where(bt[:, o], 1.0, p_ready)
            p_ron = np.where(
                rerpao | (kongs > 0) | bt[:, o] | mine_bt, 1.0, 0.2 + 0.2 * np.minimum(pongs, 2)
            )
            w = np.broadcast_to(rank_w, (k, NUM_KINDS)).copy()
            w = np.where((river[:, o] > 0) | (recent[:, o] > 0), w * 0.35, w)
            w = np.where(live == 0, w * 0.5, w)  # the other copies are all visible
            meld_tiles = (pong[:, o] + kexp[:, o]).reshape(k, 3, 9).sum(-1)  # [k,3]
            one_suit = (melds >= 2) & ((meld_tiles > 0).sum(-1) == 1) & (kc[:, o, 0] == 0)
            in_suit = np.repeat(meld_tiles > 0, 9, axis=1)
            w = np.where(one_suit[:, None], np.where(in_suit, w * 2.0, w * 0.3), w)
            w = np.where(rerpao[:, None], w * self.rerpao_caution, w)
            p = (p_ready * p_ron * present[:, o])[:, None] * np.minimum(self.danger_scale * w, 0.9)
            safe_all *= 1 - p
        return 1 - safe_all


def _ready_discard_has_live_wait(h, live) -> np.ndarray:
    """bool ``[k]``: some discard leaves the (meld-free) hand ready with a live wait."""
    k = h.shape[0]
    ok = np.zeros(k, dtype=bool)
    r, t = np.nonzero(h > 0)
    after = h[r] - EYE[t]
    w = hands.waits(after) & (after < 4) & (live[r] > 0)
    np.logical_or.at(ok, r, w.any(-1))
    return ok
