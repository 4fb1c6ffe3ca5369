"""Slow, obvious, single-game reference implementation of RULES.md (the test oracle).

It plays one hand of Guiyang Zhuoji mahjong exactly as RULES.md sections 2-8 describe, with every
switch of section 9, one decision at a time, in plain Python (lists of 27 counts, no numpy). It
is independent of ``zhuoji_env.hands`` and of the batched engine: it imports only the tile helpers
and the ``Rules`` dataclass.

Interpretations (where RULES.md leaves room; the twelve sample records agree with all of them):

 1. Turn options of a seat that declared 报听 (after its declaring discard): ``hu`` when it has
    a winning hand, and ``discard`` of the tile it just drew; nothing else (it may decline a
    self-drawn win by discarding the drawn tile).
 2. 报听 is legal only before any meld (an ``angang`` counts as a meld), only once, and right
    after declaring the only legal decisions are discards that leave the hand ready (no ``hu``).
 3. 硬报 vs 软报 is fixed at declaration: dealer, or the seat's 13 dealt tiles were ready.
 4. In a response/rob window every seat with a legal claim is asked, whatever earlier seats
    chose; the options of each asked seat are fixed when the window opens.
 5. A seat is "offered" ``hu`` when ``hu`` is in its option list. Declining it (pass, pong,
    kong) or choosing a void ``hu`` (penalty mode) sets its lock; only its own next live or
    replacement draw clears it. A pong does not clear it.
 6. 冲锋鸡 replaces that tile's ordinary chicken value: the first discarded ``1s``, while it lies
    in its discarder's river, is paid only as item ``chongfeng`` (value ``chongfeng`` x 2 when
    golden, NOT multiplied by ``chicken_unit``), never also as an ordinary river chicken
    (records guiyang-1/app-1: a river with two ``1s`` pays 1 chicken + 冲锋鸡).
 7. A seat *collects* (chickens, 冲锋鸡, 责任鸡, 包鸡) when it is not burned and, with
    ``ready_required``, is a winner or ready, whatever its own chicken total (RULES.md 7.4);
    without it, when its chicken total (ordinary + 冲锋鸡) is positive. Collecting seats are
    paid by every other seat (no netting between two collecting seats: example A).
 8. 包鸡 (``bao_ji``): a non-ready seat pays each collecting seat (interp. 7, even one with no
    chickens of its own) ``chicken_unit`` (x2 golden) per ``1s`` in its river (excluding its
    冲锋鸡 tile) and in its melds, plus its 冲锋鸡 value (record app-2: a 冲锋鸡 alone costs 3,
    not 3 + 1). Paid also by a burned seat.
 9. 责任鸡 ``on``: the discarder pays the claimer when the claimer collects (interp. 7, which
    always holds without ``ready_required`` since the claimer holds ``1s``). ``reversible``:
    otherwise, if the discarder is ready (winners count), the claimer is not, and the discarder
    is not burned, the claimer pays the discarder. Amount ``chicken_unit`` (x2 golden).
10. ``chicken_kong_60``: a seat that collects and owns an ``angang`` of a chicken kind (late
    or void kongs too) counts those four tiles as a flat 60 (times ``base_stake``; not scaled
    by ``chicken_unit``, not doubled when golden) instead of their unit values.
11. ``yaoji_river``: river tiles count only when they are ``1s`` (golden ``1s`` included).
12. The dealer streak term ``+k`` is added once to each payment line between the dealer and
    another seat, in the item ``hu`` / ``chajiao`` / ``baopai``. For a 抢杠 ``pay_for_all``
    the robbed seat pays what every other seat would have paid on the self-drawn win: the sum
    over the other seats o of ``value + k(o, winner)``, so ``(n-1) x k`` when the winner is the
    dealer and ``k`` once when the dealer is the robbed seat or a third seat (RULES.md 7.2).
13. 热炮 ``transfer`` pays, to each winner, the ``kong_values`` the void kongs would have
    collected (闷豆 and 转弯豆 x (n-1), 点豆 x 1, late 0), and 0 when ``ready_required`` is on
    and the discarder is not ready at the end of the hand. With several winners each receives
    the full 热炮 extra.
14. 热炮 voids exactly the kongs the discarder completed during the turn of the discard won on
    (a ``kong`` claimed from a discard belongs to the turn it starts).
15. Kong payments need (with ``ready_required``) the owner ready at the end; a robbed seat is
    judged on its concealed tiles without the robbed tile (its pong stays a pong).
16. 杠上开花 applies when the seat's most recent draw in this turn was a replacement draw.
    The app 一扣二 (``plain_only``) gives +1 to plain (non-flush 平胡) hands only.
17. The pass-win penalty (``baopai``) amount per other seat: pattern value of the void win
    (hand + discarded/robbed tile), + the self-draw extra (``zimo_bonus``) when it was a rob,
    + the locked seat's own 报听 bonus, + k between dealer and another seat.
18. Pattern value: max over readings; 单吊 (``bei_dandiao``) needs four melds (so it is always a
    大对子 shape): 10, flush 10 + 10 = 20. A hand is plain when its best reading is a
    non-flush 平胡; 单吊 hands are never plain.
19. 查叫 (exhaustive draw) value of a ready seat: the best pattern value over the kinds that
    make it ready (kinds it holds four of excluded), + its 报听 bonus, + k where the dealer
    pays or is paid. Nothing is paid to burned seats (none exist on a draw).
20. The flip tile is ``W[front]`` when ``front <= back`` at the end of the hand, else none
    (then only ``1s`` is a chicken); golden when ``1s`` is ``next(F)`` (or ``prev(F)`` with
    ``up_down``). ``flip`` in the result is null on an exhaustive draw (the wall is empty).
21. ``hu`` after a pong (no draw this turn) is not legal; after a pong + ``angang`` the
    replacement draw makes it legal (杠上开花).
22. Burned seats (app 热炮 / 抢杠) collect no kong and no chickens (nor reversed 责任鸡) but pay.
23. With two winners the next dealer is the first winner counting from the dealer; the streak
    grows only when the dealer itself wins and deals again, else resets unless the dealer kept
    the deal (draw, or three winners on its own discard/robbed kong: unchanged).
24. In 3-player games the same rules apply with n = 3 (deal 13 x 3 + 1, live wall from W[40]).
25. A void (penalty) ``hu`` on the first discarded ``1s`` is not a claim: the tile stays in the
    river and stays the 冲锋鸡. A ``1s`` robbed from a ``bugang`` is not a discard.
26. The 热炮 passport (5.3) holds whenever the discarder completed any kong (late or claimed
    too) earlier in the turn of that discard, whether or not anyone then wins.
27. With several robbers under ``pay_for_all`` the robbed seat pays each of them
    ``(n-1) x`` its own hand value; burned seats (app) are burned once for all winners.
28. The late-kong test compares with the tile drawn most recently *in this turn*; a turn that
    began with a pong has none, so its kongs are late (unless the dealt-quad exception).

What the twelve records confirm: 6 and 8 (冲锋鸡 paid once), the +k streak term in 自摸
payments (guiyang-1), the two-winner dealer and streak growth (guiyang-2), late kongs paying
nothing without ``ready_required`` (classic-1), 硬报 for a non-dealer dealt ready (app-4), the
app 抢杠 amount (value + 20 + 9) and burning, the 包三家 streak term paid once when the dealer
is a third seat (guiyang-4), the classic draw dealer (classic-3). The others are readings of
RULES.md not exercised by the records.
"""

from __future__ import annotations

import json
from collections import defaultdict

from zhuoji_env.rules import Rules
from zhuoji_env.tiles import CODES, YAOJI, code, kind, next_kind, parse_tiles, prev_kind

NUM_KINDS = 27


# --------------------------------------------------------------------------- hand analysis
def _all_sets(c: list[int], i: int = 0) -> bool:
    """Can the counts ``c`` be split entirely into sets (triplets and runs)?"""
    while i < NUM_KINDS and c[i] == 0:
        i += 1
    if i == NUM_KINDS:
        return True
    if c[i] >= 3:
        c[i] -= 3
        ok = _all_sets(c, i)
        c[i] += 3
        if ok:
            return True
    if i % 9 <= 6 and c[i + 1] > 0 and c[i + 2] > 0:
        c[i] -= 1
        c[i + 1] -= 1
        c[i + 2] -= 1
        ok = _all_sets(c, i)
        c[i] += 1
        c[i + 1] += 1
        c[i + 2] += 1
        if ok:
            return True
    return False


def is_standard(counts: list[int]) -> bool:
    """Concealed counts = sets + exactly one pair."""
    if sum(counts) % 3 != 2:
        return False
    for p in range(NUM_KINDS):
        if counts[p] >= 2:
            c = list(counts)
            c[p] -= 2
            if _all_sets(c):
                return True
    return False


def is_seven_pairs(counts: list[int], n_melds: int) -> bool:
    return n_melds == 0 and sum(counts) == 14 and all(x % 2 == 0 for x in counts)


def is_win(counts: list[int], n_melds: int) -> bool:
    if sum(counts) + 3 * n_melds != 14:
        return False
    return is_standard(counts) or is_seven_pairs(counts, n_melds)


def is_all_triplets(counts: list[int]) -> bool:
    """The concealed part reads as triplets + one pair (melds are always triplets/quads)."""
    return sum(1 for x in counts if x == 2) == 1 and all(x in (0, 2, 3) for x in counts)


def hand_value(counts: list[int], meld_kinds: list[int], table: dict) -> tuple[int, bool]:
    """(pattern value, plain?) of a complete winning hand (5.3)."""
    n_melds = len(meld_kinds)
    suits = {k // 9 for k in range(NUM_KINDS) if counts[k]} | {k // 9 for k in meld_kinds}
    flush = len(suits) == 1
    shapes = []
    if is_standard(counts):
        shapes.append("pinghu")
        if is_all_triplets(counts):
            shapes.append("daduizi")
    if is_seven_pairs(counts, n_melds):
        shapes.append("longqidui" if any(x == 4 for x in counts) else "qidui")
    best = 0
    best_shape = None
    for s in shapes:
        v = table[s]
        if flush:
            v = table["flush"] + (0 if s == "pinghu" else table[s])
        if v > best:
            best, best_shape = v, s
    if table["dandiao"] and n_melds == 4 and is_standard(counts):
        v = table["dandiao"] + (table["flush"] if flush else 0)
        if v > best:
            best, best_shape = v, "dandiao"
    plain = best_shape == "pinghu" and not flush
    return best, plain


# --------------------------------------------------------------------------- melds
class Meld:
    """A pong or a kong. ``type``: pong, angang (闷豆), bugang (转弯豆), kong (点豆)."""

    def __init__(self, kind_: int, type_: str, feeder: int | None = None):
        self.kind = kind_
        self.type = type_
        self.feeder = feeder
        self.late = False
        self.void = False

    @property
    def is_kong(self) -> bool:
        return self.type != "pong"

    @property
    def size(self) -> int:
        return 3 if self.type == "pong" else 4

    def __repr__(self):
        return f"Meld({code(self.kind)},{self.type},late={self.late},void={self.void})"


# --------------------------------------------------------------------------- the game
class RefGame:
    def __init__(self, rules: Rules, wall: list[int], dealer: int, dealer_streak: int = 0):
        self.rules = rules
        self.n = n = rules.num_players
        wall = [int(k) for k in wall]
        if len(wall) != 108 or sorted(wall) != sorted(list(range(NUM_KINDS)) * 4):
            raise ValueError("wall must hold the 108 tiles (4 of each of the 27 kinds)")
        if not 0 <= dealer < n:
            raise ValueError(f"bad dealer {dealer}")
        self.wall = wall
        self.dealer = dealer
        self.streak = dealer_streak
        self.hands = [[0] * NUM_KINDS for _ in range(n)]
        for k in range(n):
            seat = (dealer + k) % n
            for t in wall[13 * k : 13 * k + 13]:
                self.hands[seat][t] += 1
        self.dealt = [list(h) for h in self.hands]
        self.hands[dealer][wall[13 * n]] += 1
        self.front = 13 * n + 1  # next live draw
        self.back = 107  # next replacement draw
        self.melds: list[list[Meld]] = [[] for _ in range(n)]
        self.river: list[list[int]] = [[] for _ in range(n)]
        self.has_discarded = [False] * n
        self.baoting: list[str | None] = [None] * n  # 'hard' / 'soft'
        self.locked = [False] * n
        self.chongfeng = None  # [seat, status ('river'|'claimed'|'won'), claimer]
        self.ledger: list[list] = []
        self.done = False
        self._result = None
        # turn state: the dealer's first turn, its 14th tile counts as drawn
        self.phase = "turn"
        self.window = None
        self._begin_turn(dealer, drawn=wall[13 * n], replacement=False, began_with_draw=True)

    # ----------------------------------------------------------------- small helpers
    def _begin_turn(self, seat, drawn, replacement, began_with_draw, kongs=None):
        self.phase = "turn"
        self.cur = seat
        self.drew = drawn is not None
        self.last_draw = drawn
        self.last_replacement = replacement
        self.began_with_draw = began_with_draw
        self.turn_kongs: list[Meld] = list(kongs or [])
        self.baoting_pending = False

    def wall_empty(self) -> bool:
        return self.front > self.back

    def _draw_live(self, seat):
        t = self.wall[self.front]
        self.front += 1
        self.hands[seat][t] += 1
        self.locked[seat] = False
        return t

    def _draw_replacement(self, seat):
        t = self.wall[self.back]
        self.back -= 1
        self.hands[seat][t] += 1
        self.locked[seat] = False
        return t

    def _meld_kinds(self, seat):
        return [m.kind for m in self.melds[seat]]

    def _held(self, seat, t):
        return self.hands[seat][t] + sum(m.size for m in self.melds[seat] if m.kind == t)

    def _winning_with(self, seat, t) -> bool:
        c = list(self.hands[seat])
        c[t] += 1
        return is_win(c, len(self.melds[seat]))

    def _ready_counts(self, counts, melds) -> list[int]:
        """Kinds that would complete ``counts`` (3k+1 tiles) with ``melds`` (5.2)."""
        out = []
        for t in range(NUM_KINDS):
            if counts[t] + sum(m.size for m in melds if m.kind == t) >= 4:
                continue
            c = list(counts)
            c[t] += 1
            if is_win(c, len(melds)):
                out.append(t)
        return out

    def _is_ready(self, seat) -> bool:
        return bool(self._ready_counts(self.hands[seat], self.melds[seat]))

    def _value_with(self, seat, t):
        c = list(self.hands[seat])
        if t is not None:
            c[t] += 1
        return hand_value(c, self._meld_kinds(seat), self.rules.pattern_table)

    def _bt_bonus(self, seat) -> int:
        hard, soft = self.rules.baoting_bonus
        return {"hard": hard, "soft": soft, None: 0}[self.baoting[seat]]

    def _zimo_extra(self, plain: bool) -> int:
        z = self.rules.zimo_bonus
        if z == "plain_only":
            return 1 if plain else 0
        return z

    def _k(self, a, b) -> int:
        """Dealer streak term of a hand payment between seats a and b (8.2)."""
        if self.rules.dealer_streak_bonus and self.dealer in (a, b):
            return self.streak
        return 0

    def _pay(self, payer, payee, amount, item):
        if amount and payer != payee:
            self.ledger.append([payer, payee, amount * self.rules.base_stake, item])

    def _discard_leaves_ready(self, seat, t) -> bool:
        c = list(self.hands[seat])
        c[t] -= 1
        return bool(self._ready_counts(c, self.melds[seat]))

    # ----------------------------------------------------------------- protocol
    def to_act(self) -> int | None:
        if self.done:
            return None
        if self.phase == "turn":
            return self.cur
        return self.window["queue"][self.window["pos"]][0]

    def legal(self) -> list[tuple[str, int | None]]:
        if self.done:
            return []
        if self.phase != "turn":
            return list(self.window["queue"][self.window["pos"]][1])
        return self._turn_options()

    def _turn_options(self):
        s = self.cur
        h = self.hands[s]
        hand_kinds = [t for t in range(NUM_KINDS) if h[t] > 0]
        if self.baoting_pending:
            return [("discard", t) for t in hand_kinds if self._discard_leaves_ready(s, t)]
        opts = []
        can_hu = self.drew and is_win(h, len(self.melds[s]))
        if self.baoting[s]:
            if can_hu:
                opts.append(("hu", None))
            opts.append(("discard", self.last_draw))
            return opts
        if can_hu:
            opts.append(("hu", None))
        if not self.wall_empty():
            for t in hand_kinds:
                if h[t] == 4:
                    opts.append(("angang", t))
            for m in self.melds[s]:
                if m.type == "pong" and h[m.kind] > 0:
                    opts.append(("bugang", m.kind))
        if (
            self.rules.baoting
            and not self.has_discarded[s]
            and not self.melds[s]
            and self.began_with_draw
            and any(self._discard_leaves_ready(s, t) for t in hand_kinds)
        ):
            opts.append(("baoting", None))
        opts += [("discard", t) for t in hand_kinds]
        return opts

    def apply(self, seat: int, action: str, tile: int | None = None) -> None:
        if self.done:
            raise ValueError(f"seat {seat} tried {action} {tile}: the hand is over")
        if tile is not None:
            tile = int(tile)
        who = self.to_act()
        legal = self.legal()
        if seat != who or (action, tile) not in legal:
            shown = [a if t is None else f"{a} {code(t)}" for a, t in legal]
            tried = (
                action if tile is None else f"{action} {CODES[tile] if 0 <= tile < 27 else tile}"
            )
            raise ValueError(
                f"seat {seat} tried {tried!r}, but seat {who} is to act with legal {shown}"
            )
        if self.phase == "turn":
            self._apply_turn(seat, action, tile)
        else:
            self.window["choices"][seat] = action
            self.window["pos"] += 1
            if self.window["pos"] == len(self.window["queue"]):
                self._resolve_window()

    # ----------------------------------------------------------------- turn actions
    def _apply_turn(self, s, action, t):
        h = self.hands[s]
        if action == "hu":
            self._finish("zimo", [s], None, None)
        elif action == "baoting":
            hard = s == self.dealer or bool(self._ready_counts(self.dealt[s], []))
            self.baoting[s] = "hard" if hard else "soft"
            self.baoting_pending = True
        elif action == "angang":
            h[t] -= 4
            m = Meld(t, "angang")
            m.late = self.has_discarded[s] and t != self.last_draw
            self.melds[s].append(m)
            self.turn_kongs.append(m)
            drawn = self._draw_replacement(s)
            self._begin_turn(s, drawn, True, self.began_with_draw, self.turn_kongs)
        elif action == "bugang":
            h[t] -= 1
            self._open_rob_window(s, t)
        elif action == "discard":
            h[t] -= 1
            self.baoting_pending = False
            self.has_discarded[s] = True
            self.river[s].append(t)
            first_yaoji = t == YAOJI and self.chongfeng is None
            if first_yaoji:
                self.chongfeng = [s, "river", None]
            self._open_discard_window(s, t, first_yaoji)

    def _open_discard_window(self, p, t, first_yaoji):
        queue = []
        for i in range(1, self.n):
            q = (p + i) % self.n
            opts = []
            if self._winning_with(q, t) and self._ron_allowed(q, p, t):
                opts.append(("hu", None))
            if not self.baoting[q]:
                if self.hands[q][t] >= 3 and not self.wall_empty():
                    opts.append(("kong", None))
                if self.hands[q][t] >= 2:
                    opts.append(("pong", None))
            if opts:
                queue.append((q, opts + [("pass", None)]))
        self.window = {
            "kind": "discard",
            "from": p,
            "tile": t,
            "queue": queue,
            "pos": 0,
            "choices": {},
            "first_yaoji": first_yaoji,
        }
        self.phase = "respond"
        if not queue:
            self._resolve_window()

    def _ron_allowed(self, q, p, t) -> bool:
        if self.rules.pass_win == "forbid" and self.locked[q]:
            return False
        _, plain = self._value_with(q, t)
        if not plain:
            return True
        return (
            any(m.is_kong for m in self.melds[q])
            or bool(self.turn_kongs)  # 热炮: the discarder completed a kong this turn
            or (self.rules.baoting and (self.baoting[q] is not None or self.baoting[p] is not None))
        )

    def _open_rob_window(self, p, t):
        queue = []
        for i in range(1, self.n):
            q = (p + i) % self.n
            if not self._winning_with(q, t):
                continue
            if self.rules.pass_win == "forbid" and self.locked[q]:
                continue
            queue.append((q, [("hu", None), ("pass", None)]))
        self.window = {"kind": "rob", "from": p, "tile": t, "queue": queue, "pos": 0, "choices": {}}
        self.phase = "rob"
        if not queue:
            self._resolve_window()

    def _resolve_window(self):
        w = self.window
        p, t, kind_ = w["from"], w["tile"], w["kind"]
        winners = []
        claim = None
        for q, opts in w["queue"]:
            choice = w["choices"][q]
            offered = ("hu", None) in opts
            if choice == "hu":
                if self.locked[q]:  # penalty mode: a void win
                    self._pass_win_penalty(q, t, rob=kind_ == "rob")
                else:
                    winners.append(q)
            elif choice in ("pong", "kong"):
                claim = (q, choice)
            if offered and (choice != "hu" or self.locked[q]):
                self.locked[q] = True
        self.window = None
        if winners:
            if w.get("first_yaoji"):
                self.chongfeng[1] = "won"  # won on: no 冲锋鸡
            self._finish("ron" if kind_ == "discard" else "qianggang", sorted(winners), t, p)
            return
        if kind_ == "rob":
            m = next(m for m in self.melds[p] if m.type == "pong" and m.kind == t)
            m.type = "bugang"
            m.late = t != self.last_draw
            self.turn_kongs.append(m)
            drawn = self._draw_replacement(p)
            self._begin_turn(p, drawn, True, self.began_with_draw, self.turn_kongs)
            return
        if claim is not None:
            q, how = claim
            self.river[p].pop()
            if w.get("first_yaoji"):
                self.chongfeng = [p, "claimed", q]  # 责任鸡 candidate
            if how == "pong":
                self.hands[q][t] -= 2
                self.melds[q].append(Meld(t, "pong", feeder=p))
                self._begin_turn(q, None, False, False)
            else:
                self.hands[q][t] -= 3
                m = Meld(t, "kong", feeder=p)
                self.melds[q].append(m)
                drawn = self._draw_replacement(q)
                self._begin_turn(q, drawn, True, False, [m])
            return
        nxt = (p + 1) % self.n
        if self.wall_empty():
            self._finish("draw", [], None, None)
            return
        drawn = self._draw_live(nxt)
        self._begin_turn(nxt, drawn, False, True)

    # ----------------------------------------------------------------- penalties
    def _pass_win_penalty(self, q, t, rob: bool):
        value, plain = self._value_with(q, t)
        amount = value + (self._zimo_extra(plain) if rob else 0) + self._bt_bonus(q)
        for o in range(self.n):
            if o != q:
                self._pay(q, o, amount + self._k(q, o), "baopai")

    # ----------------------------------------------------------------- end of hand
    def _finish(self, end, winners, t, p):
        """Settle the hand. ``t``: the tile won on (ron/rob), ``p``: discarder / robbed seat."""
        self.done = True
        self.phase = "done"
        n, r = self.n, self.rules
        self.end, self.winners, self.win_tile, self.loser = end, winners, t, p
        burned = set()
        if end == "ron":
            self.river[p].pop()  # the tile won on is not in the river
        ready = [s in winners or self._is_ready(s) for s in range(n)]
        self.ready = ready
        self.flip = None if self.wall_empty() else self.wall[self.front]

        if end == "draw":
            self._settle_draw(ready)
        else:
            # ---- 7.2 hand payments
            rerpao = end == "ron" and bool(self.turn_kongs)
            if rerpao:
                for m in self.turn_kongs:
                    m.void = True
            for w in winners:
                value, plain = self._value_with(w, t)
                value += self._bt_bonus(w)
                if end == "zimo":
                    value += self._zimo_extra(plain)
                    if self.last_replacement:
                        value += r.gangkai_bonus
                    for o in range(n):
                        if o != w:
                            self._pay(o, w, value + self._k(o, w), "hu")
                elif end == "ron":
                    self._pay(p, w, value + self._k(p, w) + self._bt_bonus(p), "hu")
                    if rerpao:
                        if r.rerpao == "transfer":
                            an, bu, ming = r.kong_values
                            extra = 0
                            for m in self.turn_kongs:
                                if m.late:
                                    continue
                                extra += {
                                    "angang": an * (n - 1),
                                    "bugang": bu * (n - 1),
                                    "kong": ming,
                                }[m.type]
                            if r.ready_required and not ready[p]:
                                extra = 0
                        else:
                            extra = 1
                        self._pay(p, w, extra, "rerpao")
                        if r.rerpao == "plus_one_burn":
                            burned.add(p)
                else:  # qianggang
                    if r.qianggang == "pay_for_all":
                        value += self._zimo_extra(plain)
                        streak = sum(self._k(o, w) for o in range(n) if o != w)
                        self._pay(p, w, (n - 1) * value + streak, "hu")
                    else:
                        self._pay(p, w, value + 9 + self._k(p, w), "hu")
                        burned.add(p)
            self.burned = burned
            self._settle_kongs(ready, burned)
            self._settle_chickens(ready, burned)
        self._next_dealer(ready)

    def _settle_draw(self, ready):
        n = self.n
        self.burned = set()
        if not any(ready) or all(ready):
            return
        for s in range(n):
            if not ready[s]:
                continue
            value = max(
                hand_value(self._with(s, t), self._meld_kinds(s), self.rules.pattern_table)[0]
                for t in self._ready_counts(self.hands[s], self.melds[s])
            )
            value += self._bt_bonus(s)
            for o in range(n):
                if not ready[o]:
                    self._pay(o, s, value + self._k(o, s), "chajiao")

    def _with(self, s, t):
        c = list(self.hands[s])
        c[t] += 1
        return c

    def _settle_kongs(self, ready, burned):
        n, r = self.n, self.rules
        an, bu, ming = r.kong_values
        for s in range(n):
            if s in burned or (r.ready_required and not ready[s]):
                continue
            for m in self.melds[s]:
                if not m.is_kong or m.void or m.late:
                    continue
                if m.type == "angang":
                    for o in range(n):
                        if o != s:
                            self._pay(o, s, an, "dou_an")
                elif m.type == "bugang":
                    for o in range(n):
                        if o != s:
                            self._pay(o, s, bu, "dou_bu")
                else:
                    self._pay(m.feeder, s, ming, "dou_ming")

    def _chicken_kinds(self):
        kinds = {YAOJI}
        if self.flip is not None:
            kinds.add(next_kind(self.flip))
            if self.rules.flip_mode == "up_down":
                kinds.add(prev_kind(self.flip))
        golden = self.flip is not None and (
            next_kind(self.flip) == YAOJI
            or (self.rules.flip_mode == "up_down" and prev_kind(self.flip) == YAOJI)
        )
        return kinds, golden

    def _settle_chickens(self, ready, burned):
        n, r = self.n, self.rules
        kinds, golden = self._chicken_kinds()
        yaoji_unit = r.chicken_unit * (2 if golden else 1)

        def unit(t):
            return yaoji_unit if t == YAOJI else r.chicken_unit

        cf_on = r.chongfeng > 0 and self.chongfeng and self.chongfeng[1] == "river"
        cf_seat = self.chongfeng[0] if cf_on else None
        cf_value = r.chongfeng * (2 if golden else 1)

        chicken = [0] * n
        chong = [0] * n
        for s in range(n):
            concealed = list(self.hands[s])
            if s in self.winners and self.win_tile is not None:
                concealed[self.win_tile] += 1
            total = 0
            for t in kinds:
                total += concealed[t] * unit(t)
            for m in self.melds[s]:
                if m.kind not in kinds:
                    continue
                if r.chicken_kong_60 and m.type == "angang":
                    total += 60
                else:
                    total += m.size * unit(m.kind)
            river = list(self.river[s])
            if s == cf_seat:
                river.remove(YAOJI)
                chong[s] = cf_value
            if r.chicken_scope == "all":
                total += sum(unit(t) for t in river if t in kinds)
            elif r.chicken_scope == "yaoji_river":
                total += sum(unit(t) for t in river if t == YAOJI)
            chicken[s] = total

        def eligible(s):
            if s in burned:
                return False
            return ready[s] if r.ready_required else True

        collects = [
            eligible(s) and (r.ready_required or chicken[s] + chong[s] > 0) for s in range(n)
        ]
        for s in range(n):
            if not collects[s]:
                continue
            for o in range(n):
                if o != s:
                    self._pay(o, s, chicken[s], "chicken")
                    self._pay(o, s, chong[s], "chongfeng")
        # 责任鸡
        if r.zeren != "off" and self.chongfeng and self.chongfeng[1] == "claimed":
            d, c = self.chongfeng[0], self.chongfeng[2]
            if collects[c]:
                self._pay(d, c, yaoji_unit, "zeren")
            elif r.zeren == "reversible" and ready[d] and not ready[c] and d not in burned:
                self._pay(c, d, yaoji_unit, "zeren")
        # 包鸡
        if r.bao_ji:
            for s in range(n):
                if ready[s]:
                    continue
                river = list(self.river[s])
                if s == cf_seat:
                    river.remove(YAOJI)
                amount = river.count(YAOJI) * yaoji_unit + chong[s]
                amount += sum(m.size for m in self.melds[s] if m.kind == YAOJI) * yaoji_unit
                for o in range(n):
                    if o != s and collects[o]:
                        self._pay(s, o, amount, "bao_ji")

    def _next_dealer(self, ready):
        n, d = self.n, self.dealer
        if self.end == "draw":
            nxt = d
            if self.rules.draw_dealer == "classic":
                not_ready = [s for s in range(n) if not ready[s]]
                if len(not_ready) in (0, n):
                    nxt = d
                elif len(not_ready) == 1:
                    nxt = not_ready[0]
                elif ready[d]:
                    nxt = d
                else:
                    nxt = next((d + i) % n for i in range(1, n) if ready[(d + i) % n])
        elif len(self.winners) == 1:
            nxt = self.winners[0]
        elif len(self.winners) == 2:
            nxt = min(self.winners, key=lambda w: (w - d) % n)
        else:
            nxt = self.loser
        if nxt != d:
            self.next_dealer, self.next_streak = nxt, 0
        elif d in self.winners:
            self.next_dealer, self.next_streak = d, self.streak + 1
        else:
            self.next_dealer, self.next_streak = d, self.streak

    # ----------------------------------------------------------------- result
    def result(self) -> dict:
        if not self.done:
            raise ValueError("the hand is not over")
        sums: dict = defaultdict(int)
        for payer, payee, amount, item in self.ledger:
            sums[(payer, payee, item)] += amount
        ledger = [[a, b, v, item] for (a, b, item), v in sums.items() if v]
        deltas = [0] * self.n
        for a, b, v, _ in ledger:
            deltas[a] -= v
            deltas[b] += v
        return {
            "end": self.end,
            "winners": sorted(self.winners),
            "flip": None if self.flip is None or self.end == "draw" else code(self.flip),
            "next_dealer": self.next_dealer,
            "next_streak": self.next_streak,
            "deltas": deltas,
            "ledger": ledger,
        }


# --------------------------------------------------------------------------- records
def replay_record(record: dict | str) -> dict:
    """Replay a section-10 record and return its ``result``; errors name the action index."""
    if isinstance(record, str):
        record = json.loads(record)
    rules = Rules.make(record.get("rules", "guiyang"))
    wall = record["wall"]
    wall = parse_tiles(wall)
    game = RefGame(rules, wall, int(record.get("dealer", 0)), int(record.get("dealer_streak", 0)))
    for i, act in enumerate(record["actions"]):
        if game.done:
            raise ValueError(f"action {i} {act}: the hand is already over")
        try:
            seat, action = int(act[0]), act[1]
            tile = kind(act[2]) if len(act) > 2 and act[2] is not None else None
            game.apply(seat, action, tile)
        except ValueError as e:
            raise ValueError(f"action {i} {act}: {e}") from None
    if not game.done:
        raise ValueError(
            f"action {len(record['actions'])}: the record ends before the hand does "
            f"(seat {game.to_act()} to act, legal {game.legal()})"
        )
    return game.result()


# ----------------------------------------------------------------------------- random play
# How likely a biased random player takes each kind of decision when it is legal; otherwise it
# discards, preferring isolated tiles. Uniformly random play almost never wins, so this bias
# is what makes wins, kongs, 热炮, robs, pass-win penalties and 报听 show up.
TAKE = {"hu": 0.85, "angang": 0.7, "bugang": 0.6, "kong": 0.7, "pong": 0.5, "baoting": 0.8}


def _isolation(hand, t):
    near = [u for u in (t - 2, t - 1, t + 1, t + 2) if 0 <= u < 27 and u // 9 == t // 9]
    return 4 * hand[t] + sum(hand[u] for u in near)


def biased_pick(g, legal, rng, uniform):
    if uniform:
        return rng.choice(legal)
    for action in ("hu", "angang", "bugang", "kong", "pong", "baoting"):
        options = [a for a in legal if a[0] == action]
        if options and rng.random() < TAKE[action]:
            return rng.choice(options)
    discards = [a for a in legal if a[0] == "discard"]
    if discards:
        hand = g.hands[g.to_act()]
        return min(discards, key=lambda a: (_isolation(hand, a[1]), rng.random()))
    return ("pass", None) if ("pass", None) in legal else rng.choice(legal)
