"""Observation values from a hand-built state, block by block, against values worked out by hand.

The encoder tests elsewhere compare the batched encoder with the single-seat one; a block that
both get wrong in the same way (zeroed, say) passes them. Here one hand-built table (non-zero
match scores, dealer seat 2, pongs, exposed, added, late and concealed kongs, rivers of known
order with claimed tiles, a pass lock, a hard and a soft 报听, the first 1s claimed) is encoded
for every seat by both encoders, and every block of ``zhuoji-obs-v1`` (the table in
``zhuoji_env/observation.py``) is compared with its value written out here.

The table (game 1 of a batch of two), absolute seats::

    seat 0: hand 3m4m5m 4p5p 7s7s, pong 8m (from seat 3), 闷豆 9s; 软报
            river 9m 1s* 4s 6s 2p 8p 3m          (* claimed: seat 2's pong of 1s)
    seat 1: hand 4m5m6m 7s8s 6p 9p, 点豆 2m (from seat 2, this turn), late 转弯豆 7p
            river 1s 7m 1p                       (1p: the discard being decided on)
    seat 2: hand 1p1p 3p4p 6m7m 4s5s 8s8s, pong 1s (seat 0's first 1s: 责任鸡); dealer
            river 2m* 9p 4s
    seat 3: hand 2p3p4p 5m6m7m 1m1m 4s5s, 闷豆 3s; 硬报; locked after passing a win (过手胡)
            river 8m* 7p* 5s 6s 2s 9m 3m 4p

Seat 1 konged 2m, drew its replacement (1p) and discarded it: the response window asks seat 2
(which could pong 1p). Wall: live tiles 70..103 (34 left), dealer streak 3, match scores
12, -30, 5, 13 after hand 2 of 4. Game 0 is the same table at seat 0's turn, having just drawn
9p (its hand 3m4m5m 4p5p 7s7s 9p), with scores -40, 10, 20, 10 after hand 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from zhuoji_env.engine.state import (
    AN_KONG,
    BAOTING_DISCARD,
    BU_KONG,
    MING_KONG,
    PONG_MELD,
    RESPONSE,
    ROB,
    TURN,
    YAOJI_CLAIMED,
    YAOJI_IN_RIVER,
    YAOJI_WON,
    empty_state,
)
from zhuoji_env.observation import (
    OBS_SIZE,
    SLICES,
    STATE_SIZE,
    block,
    encode,
    encode_one,
    encode_state,
)
from zhuoji_env.tiles import kind, parse_tiles

SEATS = (0, 1, 2, 3)
HANDS_PER_GAME = 4
# the documented blocks of zhuoji-obs-v1 in order, with their sizes (observation.py's table)
DOCUMENTED = (
    ("hand", 27), ("pong", 108), ("kong_exposed", 108), ("kong_concealed_own", 27),
    ("kong_counts", 16), ("river", 108), ("river_recent", 648), ("tile", 27), ("tile_from", 4),
    ("phase", 4), ("to_act", 4), ("drawn", 27), ("turn_flags", 3), ("yaoji", 9),
    ("zeren_claimer", 4), ("baoting", 8), ("pass_lock", 1), ("wall", 2), ("dealer", 4),
    ("streak", 1), ("scores", 4), ("hand_no", 1), ("seats_present", 4), ("waits", 27),
    ("shanten", 8), ("discard_shanten", 27), ("best_discard", 27),
)  # fmt: skip

HANDS = {0: "3m4m5m4p5p7s7s", 1: "4m5m6m7s8s6p9p", 2: "1p1p3p4p6m7m4s5s8s8s",
         3: "2p3p4p5m6m7m1m1m4s5s"}  # fmt: skip
RIVERS = {0: "9m1s4s6s2p8p3m", 1: "1s7m1p", 2: "2m9p4s", 3: "8m7p5s6s2s9m3m4p"}
TAKEN = {0: [1], 2: [0], 3: [0, 1]}  # claimed discards (index in the river)


def counts(codes: str) -> np.ndarray:
    """Count vector [27] of concatenated tile codes."""
    return np.bincount(parse_tiles(codes), minlength=27).astype(np.float32)


def rows(per_seat: dict[int, str]) -> np.ndarray:
    """[4, 27] counts, one row per absolute seat."""
    return np.stack([counts(per_seat.get(s, "")) for s in SEATS])


def rotate(absolute: np.ndarray, observer: int) -> np.ndarray:
    """Rows of absolute seats in the observer's order: slot j is seat (observer + j) % 4, its
    j-th seat in turn order (slot 1 is its 下家, who plays after it)."""
    return absolute[[(observer + j) % 4 for j in SEATS]]


def built_state():
    """The table of the module docstring: ``(state, scores, hand_no)``."""
    st = empty_state(2, 4)
    g = 1
    st.wall[g] = np.arange(108) % 27
    st.front[g], st.back[g] = 70, 103
    st.dealer[g], st.streak[g] = 2, 3
    for s, h in HANDS.items():
        st.hand[g, s] = counts(h)
    for s, t, m, feeder in [(0, "8m", PONG_MELD, 3), (0, "9s", AN_KONG, -1),
                            (1, "2m", MING_KONG, 2), (1, "7p", BU_KONG, 3),
                            (2, "1s", PONG_MELD, 0), (3, "3s", AN_KONG, -1)]:  # fmt: skip
        st.meld[g, s, kind(t)] = m
        st.meld_from[g, s, kind(t)] = feeder
    st.meld_late[g, 1, kind("7p")] = True
    for s, r in RIVERS.items():
        tiles = parse_tiles(r)
        st.river[g, s, : len(tiles)] = tiles
        st.river_len[g, s] = len(tiles)
        st.river_taken[g, s, TAKEN.get(s, [])] = True
        kept = [t for i, t in enumerate(tiles) if i not in TAKEN.get(s, [])]
        st.river_counts[g, s] = np.bincount(kept, minlength=27)
    st.phase[g], st.turn_seat[g], st.actor[g], st.tile[g] = RESPONSE, 1, 2, kind("1p")
    st.drawn[g] = kind("1p")  # seat 1's replacement draw, discarded: not shown in a window
    st.drew[g], st.rep_draw[g] = True, True
    st.turn_kong[g, kind("2m")] = True
    st.discarded[g] = True
    st.pass_lock[g, 3] = True
    st.baoting[g, 0], st.baoting[g, 3] = 2, 1
    st.yaoji_seat[g], st.yaoji_fate[g], st.yaoji_claimer[g], st.yaoji_pos[g] = (
        0, YAOJI_CLAIMED, 2, 1,
    )  # fmt: skip
    # game 0: the same table, seat 0 to play having drawn 9p
    st.put([0], st.take([1]))
    st.phase[0], st.turn_seat[0], st.actor[0], st.tile[0] = TURN, 0, 0, -1
    st.drawn[0] = kind("9p")
    st.hand[0, 0, kind("9p")] += 1
    st.rep_draw[0] = False
    st.turn_kong[0] = False
    scores = np.array([[-40, 10, 20, 10], [12, -30, 5, 13]], dtype=np.int32)
    hand_no = np.array([1, 2], dtype=np.int32)
    return st, scores, hand_no


def onehot(n: int, *hot: int) -> np.ndarray:
    v = np.zeros(n, dtype=np.float32)
    v[list(hot)] = 1
    return v


def kinds(*codes: str) -> np.ndarray:
    """[27] with 1 at each listed kind."""
    return onehot(27, *(kind(c) for c in codes))


def recent(order: str) -> np.ndarray:
    """[6, 27] one-hot rows of the last discards, most recent first."""
    out = np.zeros((6, 27), dtype=np.float32)
    for i, t in enumerate(parse_tiles(order)):
        out[i, t] = 1
    return out


# blocks that do not depend on the game (0 or 1), per absolute seat
PONGS = rows({0: "8m", 2: "1s"})  # pongs: seat 1's pong of 7p became its added kong
EXPOSED = rows({1: "2m7p"})  # 点豆 and 转弯豆; the concealed kongs of 0 and 3 are hidden
KONG_COUNTS = np.array([[1, 0, 0, 0],  # seat 0: one 闷豆
                        [0, 0, 1, 1],  # seat 1: one 点豆; the late 转弯豆 counts as late only
                        [0, 0, 0, 0],
                        [1, 0, 0, 0]], dtype=np.float32)  # fmt: skip
RIVER = rows({0: "9m4s6s2p8p3m", 1: "1s7m1p", 2: "9p4s", 3: "5s6s2s9m3m4p"})  # claimed ones gone
RECENT = np.stack([recent("3m8p2p6s4s1s"),  # seat 0: 7 discards, the oldest (9m) dropped
                   recent("1p7m1s"),
                   recent("4s9p2m"),  # claimed 2m included
                   recent("4p3m9m2s6s5s")])  # fmt: skip
BAOTING = np.array([[0, 1], [0, 0], [0, 0], [1, 0]], dtype=np.float32)  # 0 软报, 3 硬报
CONCEALED_OWN = {0: kinds("9s"), 1: kinds(), 2: kinds(), 3: kinds("3s")}
# slot of an absolute seat as seen by each observer: (seat - observer) % 4, written out
SLOT = {  # SLOT[observer][seat]
    0: {0: 0, 1: 1, 2: 2, 3: 3},
    1: {0: 3, 1: 0, 2: 1, 3: 2},
    2: {0: 2, 1: 3, 2: 0, 3: 1},
    3: {0: 1, 1: 2, 2: 3, 3: 0},
}
SHANTEN_ONEHOT = {0: 1, 1: 2, 2: 3, 3: 1}  # index = shanten + 1 of each seat's 13-tile hand
WAITS = {
    0: kinds("3p", "6p"),  # 345m 45p 77s: two-sided wait
    1: kinds(),  # 456m 78s 6p 9p: 1-shanten, no waits
    2: kinds(),  # 11p 34p 67m 45s 88s: 2-shanten
    3: kinds("6s"),  # 234p 567m 11m 45s waits 3s and 6s, but seat 3 holds all four 3s (its kong)
}


def expected(observer: int, game: int) -> dict[str, np.ndarray]:
    """Every block of the observation of ``observer`` in ``game``, worked out by hand."""
    sl = SLOT[observer]
    turn = game == 0
    hand = HANDS[observer] + ("9p" if turn and observer == 0 else "")
    scores = {0: [-40, 10, 20, 10], 1: [12, -30, 5, 13]}[game]
    e = {
        "hand": counts(hand),
        "pong": rotate(PONGS, observer),
        "kong_exposed": rotate(EXPOSED, observer),
        "kong_concealed_own": CONCEALED_OWN[observer],
        "kong_counts": rotate(KONG_COUNTS, observer),
        "river": rotate(RIVER, observer),
        "river_recent": rotate(RECENT, observer),
        # the discard 1p of seat 1 in the window; nothing at seat 0's turn
        "tile": kinds() if turn else kinds("1p"),
        "tile_from": onehot(4) if turn else onehot(4, sl[1]),
        "phase": onehot(4, 0 if turn else 1),
        "to_act": onehot(4, sl[0] if turn else sl[2]),
        "drawn": kinds("9p") if turn and observer == 0 else kinds(),
        "turn_flags": np.array([1, 0, 0] if turn else [1, 1, 1], dtype=np.float32),
        # two 1s discarded (seat 0's, claimed; seat 1's) -> 2/4; first by seat 0; claimed;
        # the claimer (seat 2) is the observer
        "yaoji": np.concatenate([[0.5], onehot(4, sl[0]), [0, 1, 0], [observer == 2]]),
        "zeren_claimer": onehot(4, sl[2]),
        "baoting": rotate(BAOTING, observer),
        "pass_lock": np.array([observer == 3], dtype=np.float32),
        "wall": np.array([34 / 108, 0], dtype=np.float32),
        "dealer": onehot(4, sl[2]),
        "streak": np.array([0.3], dtype=np.float32),
        "scores": np.array([scores[s] for s in sorted(sl, key=sl.get)]) / 100,
        "hand_no": np.array([1 / 4 if turn else 2 / 4], dtype=np.float32),
        "seats_present": np.ones(4, dtype=np.float32),
        "waits": WAITS[observer],
        "shanten": onehot(8, SHANTEN_ONEHOT[observer]),
        "discard_shanten": kinds(),
        "best_discard": kinds(),
    }
    if turn and observer == 0:
        # 345m 45p 77s 9p: discarding 9p leaves it ready (shanten 0 -> 1/8); any other kind
        # leaves 1-shanten (2/8)
        e["waits"] = kinds("9p")
        e["shanten"] = onehot(8, 1)
        e["discard_shanten"] = kinds("3m", "4m", "5m", "4p", "5p", "7s") * 2 / 8 + kinds("9p") / 8
        e["best_discard"] = kinds("9p")
    return e


def test_the_layout_is_the_documented_table():
    pos = 0
    for name, size in DOCUMENTED:
        assert SLICES[name] == slice(pos, pos + size), name
        pos += size
    assert OBS_SIZE == pos == 1238 and len(SLICES) == len(DOCUMENTED)


def test_scores_rotation_written_out():
    """The scores block of the response window, seat by seat (slot 1 = the next seat)."""
    st, scores, hand_no = built_state()
    obs = encode(st, [1, 1, 1, 1], SEATS, scores, hand_no, HANDS_PER_GAME)
    assert block(obs, "scores") * 100 == pytest.approx(
        np.array([[12, -30, 5, 13], [-30, 5, 13, 12], [5, 13, 12, -30], [13, 12, -30, 5]])
    )
    assert block(obs, "dealer").argmax(-1).tolist() == [2, 1, 0, 3]


@pytest.mark.parametrize("game", [0, 1], ids=["turn", "response"])
@pytest.mark.parametrize("encoder", ["batched", "one"])
def test_every_block_has_its_hand_worked_value(encoder, game):
    st, scores, hand_no = built_state()
    if encoder == "batched":  # two or more rows take the array path
        obs = encode(st, [game] * 4, SEATS, scores, hand_no, HANDS_PER_GAME)
    else:
        obs = np.stack([encode_one(st, game, s, scores, hand_no, HANDS_PER_GAME) for s in SEATS])
    assert obs.shape == (4, OBS_SIZE) and obs.dtype == np.float32
    for observer in SEATS:
        for name, want in expected(observer, game).items():
            got = block(obs[observer], name)
            np.testing.assert_allclose(
                got,
                np.asarray(want, dtype=np.float32).reshape(got.shape),
                rtol=1e-6,
                err_msg=f"block {name!r}, observer seat {observer}, game {game}",
            )


def test_global_state_adds_the_hidden_information():
    """``encode_state``: seat 0's observation, then every hand, every concealed kong, the live
    wall as counts and the flip tile."""
    st, scores, hand_no = built_state()
    full = encode_state(st, [1, 0], scores, hand_no, HANDS_PER_GAME)
    assert full.shape == (2, STATE_SIZE)
    for name, want in expected(0, 1).items():
        got = block(full[0], name)
        np.testing.assert_allclose(got, np.asarray(want).reshape(got.shape), rtol=1e-6)
    np.testing.assert_array_equal(block(full[0], "all_hands"), rows(HANDS))
    np.testing.assert_array_equal(block(full[0], "all_concealed_kongs"), rows({0: "9s", 3: "3s"}))
    # wall[i] = i % 27; live 70..103: kinds 16..26 (70..80) then 0..22 (81..103)
    live = np.ones(27)
    live[16:23] = 2
    np.testing.assert_array_equal(block(full[0], "live_wall"), live)
    np.testing.assert_array_equal(block(full[0], "flip"), kinds("8p"))  # wall[70] = kind 16


def test_three_players_rotate_over_three_slots_and_leave_slot_3_empty():
    """Seats 0-2 of the table above at a 3-player game (seat 1 to discard, dealer seat 2):
    slots run over the three seats (slot 1 of seat 2 is seat 0) and slot 3 stays zero."""
    st = empty_state(2, 3)
    for s in (0, 1, 2):
        st.hand[:, s] = counts(HANDS[s])
        st.river_counts[:, s] = RIVER[s]
    st.meld[:, 0, kind("8m")] = PONG_MELD
    st.meld[:, 1, kind("2m")] = MING_KONG
    st.meld[:, 2, kind("1s")] = PONG_MELD
    st.baoting[:, 0] = 2
    st.dealer[:], st.turn_seat[:], st.actor[:] = 2, 1, 1
    st.front[:], st.back[:] = 60, 107
    scores = np.array([[7, -3, -4], [7, -3, -4]], dtype=np.int32)
    pong3 = rows({0: "8m", 2: "1s"})[:3]
    want_slots = {0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]}  # absolute seat in slots 0-2
    batched = encode(st, [0, 1, 1], [0, 1, 2], scores)
    for seat in (0, 1, 2):
        order = want_slots[seat]
        for obs in (batched[seat], encode_one(st, 1, seat, scores)):
            np.testing.assert_allclose(
                block(obs, "scores"), [scores[0, s] / 100 for s in order] + [0], rtol=1e-6
            )
            assert block(obs, "dealer").tolist() == [float(s == 2) for s in order] + [0]
            assert block(obs, "to_act").tolist() == [float(s == 1) for s in order] + [0]
            assert block(obs, "seats_present").tolist() == [1, 1, 1, 0]
            np.testing.assert_array_equal(block(obs, "river")[:3], RIVER[order])
            np.testing.assert_array_equal(block(obs, "pong")[:3], pong3[order])
            assert block(obs, "kong_counts")[:3, 2].tolist() == [float(s == 1) for s in order]
            assert block(obs, "baoting")[:3, 1].tolist() == [float(s == 0) for s in order]
            for name in ("pong", "kong_exposed", "kong_counts", "river", "river_recent", "baoting"):
                assert not block(obs, name)[3].any(), name
            assert block(obs, "wall").tolist() == [pytest.approx(48 / 108), 0]


@pytest.mark.parametrize("encoder", ["batched", "one"])
def test_rob_window_baoting_discard_and_the_fates_of_the_first_1s(encoder):
    """The other phases and fates on the table above: seat 3 adds 4p to a pong and seat 0 is
    asked whether to rob it (game 1, the first 1s still in the river); seat 0 has drawn 9p and
    must discard after declaring 报听 (game 0, the first 1s won on)."""
    st, scores, hand_no = built_state()
    st.phase[1], st.turn_seat[1], st.actor[1], st.tile[1] = ROB, 3, 0, kind("4p")
    st.yaoji_fate[1], st.yaoji_claimer[1] = YAOJI_IN_RIVER, -1
    st.phase[0] = BAOTING_DISCARD
    st.yaoji_fate[0] = YAOJI_WON
    for game, phase, fate in [(1, 2, 0), (0, 3, 2)]:
        if encoder == "batched":
            obs = encode(st, [game] * 4, SEATS, scores, hand_no, HANDS_PER_GAME)
        else:
            obs = np.stack(
                [encode_one(st, game, s, scores, hand_no, HANDS_PER_GAME) for s in SEATS]
            )
        for seat in SEATS:
            o, sl = obs[seat], SLOT[seat]
            assert block(o, "phase").tolist() == onehot(4, phase).tolist()
            assert block(o, "yaoji")[5:8].tolist() == onehot(3, fate).tolist()
            if game == 1:  # the robbed tile and who added it; seat 0 asked
                assert block(o, "tile").tolist() == kinds("4p").tolist()
                assert block(o, "tile_from").tolist() == onehot(4, sl[3]).tolist()
                assert block(o, "to_act").tolist() == onehot(4, sl[0]).tolist()
                assert not block(o, "drawn").any()
                assert block(o, "yaoji")[8] == 0 and not block(o, "zeren_claimer").any()
            else:  # seat 0's own draw is shown to seat 0 only; no tile being decided on
                assert not block(o, "tile").any() and not block(o, "tile_from").any()
                want = kinds("9p") if seat == 0 else kinds()
                assert block(o, "drawn").tolist() == want.tolist()
