"""Helpers for the hand-built rule scenarios of ``tests/test_scenarios.py``.

A scenario is a game record (RULES.md section 10) built from chosen hands, chosen live and
replacement draws and a short list of decisions, plus a result worked out by hand from RULES.md.
``check`` replays the record with the engine and with the reference and compares both with the
hand-worked result.
"""

from __future__ import annotations

from collections import Counter

from reference import RefGame, replay_record

from zhuoji_env.engine import actions as A
from zhuoji_env.engine.records import compare, replay
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import format_tiles, kind, parse_tiles

# filler hands that are not ready: in each suit the kinds held are three or more ranks apart,
# at most five pairs, no 1s
J1 = "1m1m4m4m7m5p5p8p8p3s6s9s9s"
J2 = "2m2m5m5m8m3p3p6p6p9p2s5s8s"
J3 = "3m3m6m6m9m9m1p1p4p4p7p4s7s"

VARIANTS = [  # rulesets played by the engine-vs-reference and fast-path tests
    "guiyang",
    "classic",
    "app",
    {"preset": "guiyang", "overrides": {"num_players": 3}},
    {"preset": "app", "overrides": {"num_players": 3}},
    {"preset": "guiyang", "overrides": {"flip_mode": "up_down", "pass_win": "forbid"}},
    {"preset": "guiyang", "overrides": {"baoting": True, "base_stake": 2}},
    {"preset": "classic", "overrides": {"pass_win": "forbid", "draw_dealer": "stay"}},
    {"preset": "app", "overrides": {"pass_win": "penalty", "zeren": "on", "chongfeng": 1}},
    {"preset": "guiyang", "overrides": {"rerpao": "transfer", "qianggang": "plus_nine_burn"}},
    {"preset": "classic", "overrides": {"rerpao": "plus_one_burn", "chicken_scope": "all"}},
    {"preset": "guiyang", "overrides": {"chicken_scope": "yaoji_river", "bao_ji": True}},
    {"preset": "guiyang", "overrides": {"ready_required": False, "jian_dou_san": True}},
    {"preset": "app", "overrides": {"zimo_bonus": 2, "units": "fan", "chicken_unit": 3}},
    {"preset": "classic", "overrides": {"draw_dealer": "classic", "num_players": 3}},
]


def make_wall(dealer, hands, live="", back="", n=4, partial=False):
    """A wall (list of kinds) dealing ``hands`` (seat -> codes; the dealer's 14th code is its
    extra tile), then ``live`` as the next live draws (W[13n+1], ...), ``back`` as replacement
    draws (W[107] first); the other tiles fill the middle in sorted order (1m, 1m, ..., 9s).
    With ``partial``, seats may be left out or given fewer tiles (the fill deals the rest)."""
    wall = [None] * 108
    for k in range(n):
        seat = (dealer + k) % n
        tiles = parse_tiles(hands.get(seat, "") if partial else hands[seat])
        full = 14 if seat == dealer else 13
        assert partial or len(tiles) == full, f"seat {seat}: {len(tiles)} tiles"
        wall[13 * k : 13 * k + len(tiles[:13])] = tiles[:13]
        if len(tiles) == 14:
            wall[13 * n] = tiles[13]
    for i, t in enumerate(parse_tiles(live)):
        assert wall[13 * n + 1 + i] is None
        wall[13 * n + 1 + i] = t
    for i, t in enumerate(parse_tiles(back)):
        assert wall[107 - i] is None, "live and back draws overlap"
        wall[107 - i] = t
    rest = Counter({k: 4 for k in range(27)})
    rest.subtract(t for t in wall if t is not None)
    bad = [k for k, v in rest.items() if v < 0]
    assert not bad, f"more than four copies of {format_tiles(bad)}"
    fill = sorted(rest.elements())
    return [t if t is not None else fill.pop(0) for t in wall]


def record(
    hands,
    actions,
    *,
    dealer=0,
    preset="guiyang",
    overrides=None,
    live="",
    back="",
    streak=0,
):
    """A section-10 record (without ``result``)."""
    overrides = dict(overrides or {})
    n = overrides.get("num_players", 4)
    wall = make_wall(dealer, hands, live=live, back=back, n=n)
    return {
        "format": "zhuoji-record-1",
        "rules": {"preset": preset, "overrides": overrides},
        "dealer": dealer,
        "dealer_streak": streak,
        "wall": format_tiles(wall),
        "actions": [list(a) for a in actions],
    }


def result(end, winners, flip, next_dealer, next_streak, deltas, ledger):
    """An expected ``result`` object; checks that ``deltas`` follow from ``ledger``."""
    n = len(deltas)
    from_ledger = [0] * n
    for payer, payee, amount, _item in ledger:
        from_ledger[payer] -= amount
        from_ledger[payee] += amount
    assert from_ledger == list(deltas), f"hand-worked deltas {deltas} != ledger {from_ledger}"
    return {
        "end": end,
        "winners": list(winners),
        "flip": flip,
        "next_dealer": next_dealer,
        "next_streak": next_streak,
        "deltas": list(deltas),
        "ledger": [list(line) for line in ledger],
    }


def pays(payers, payee, **amounts):
    """Ledger lines: each seat in ``payers`` pays ``payee`` every ``item=amount`` given."""
    return [[p, payee, v, item] for p in payers for item, v in amounts.items()]


def check(rec, expected):
    """Replay ``rec`` with the engine and with the reference; both must give ``expected``."""
    engine = compare(expected, replay(rec))
    ref = compare(expected, replay_record(rec))
    assert (engine, ref) == ([], []), f"engine: {engine}; reference: {ref}"


def check_engine(rec, expected):
    """Engine only (for a case whose reference result is checked separately)."""
    assert compare(expected, replay(rec)) == []


def check_reference(rec, expected):
    """Reference only."""
    assert compare(expected, replay_record(rec)) == []


def play_out(rec, stop=None):
    """Append to ``rec["actions"]`` the decisions of a table where nobody claims anything: each
    seat discards the tile it just drew and every seat asked passes (the reference decides who
    is asked, RULES.md 3.2). Stops when the hand is over, or before the first decision for which
    ``stop(game)`` is true (then the caller appends its own decisions). Returns ``rec``."""
    rules = Rules.make(rec["rules"])
    game = RefGame(rules, parse_tiles(rec["wall"]), rec["dealer"], rec["dealer_streak"])
    play(game, rec["actions"])
    while not game.done and not (stop and stop(game)):
        move = idle_move(game)
        play(game, [move])
        rec["actions"].append(move)
    return rec


def play(game, actions):
    """Apply record actions (``[seat, action]`` or ``[seat, action, tile code]``) to a
    reference game."""
    for a in actions:
        game.apply(a[0], a[1], kind(a[2]) if len(a) > 2 else None)


def idle_move(game):
    """The reference game's next decision at a table where nobody claims anything: the turn
    seat discards the tile it just drew, an asked seat passes."""
    seat = game.to_act()
    if game.phase == "turn":
        assert game.last_draw is not None
        return [seat, "discard", format_tiles([game.last_draw])]
    return [seat, "pass"]


# seat 0 deals and discards 9m, the others discard what they draw, seat 0 then discards 5m and
# seat 1 wins on it with a 大对子 (111p 222s 333s 444s + 5m): the credit-assignment scenario of
# the environment and training tests
CREDIT_HANDS = {
    0: "1m2m3m4m5m6m7m8m9m2p3p4p7p5m",
    1: "1p1p1p2s2s2s3s3s3s4s4s4s5m",
    2: "6p6p8p8p9p9p5s5s6s7s8s9s9s",
    3: "1m1m2m2m3m3m4m6m7m8m5p5p5p",
}
CREDIT_WALL = make_wall(0, CREDIT_HANDS, live="7s2p6m7p")
CREDIT_PLAN = [
    (0, A.encode("discard", "9m")),
    (1, A.encode("discard", "7s")),
    (2, A.encode("discard", "2p")),
    (3, A.encode("discard", "6m")),
    (0, A.encode("discard", "5m")),
    (1, A.HU),
]
