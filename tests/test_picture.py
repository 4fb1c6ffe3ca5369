"""Pictures of a table (zhuoji_env.picture) and the record views of zhuoji_env.view."""

import io
import itertools
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from zhuoji_env.engine import BatchGame
from zhuoji_env.engine.records import load
from zhuoji_env.engine.state import AN_KONG, ITEMS, PONG_MELD
from zhuoji_env.envs.render import render_table
from zhuoji_env.picture import (
    _BACK,
    _BAND,
    _BIG,
    _GOLD,
    _HEADER,
    _RED,
    _SMALL,
    ITEM_LABELS,
    SUIT_COLOURS,
    Table,
    chicken_kinds,
    draw_game,
    draw_table,
    frame_size,
    ledger_rows,
    status_lines,
)
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import kind
from zhuoji_env.view import Record, iter_states

RECORDS = Path(__file__).parent / "data" / "records"
RON = RECORDS / "guiyang-2-ron.json"


def hand_tile_origin(seat: int, j: int) -> tuple[int, int]:
    """Top-left ``(x, y)`` of the j-th concealed tile of a seat (the layout of draw_table)."""
    return 10 + j * (_BIG[0] + 2), _HEADER + seat * _BAND + 24


def state_at(path, k):
    """``(rules, copy of the state before decision k)`` of a record file."""
    rules, st, _ = next(itertools.islice(iter_states(load(path)), k, None))
    return rules, st.copy()


def test_frame_size_is_fixed_per_table_size():
    game = BatchGame("guiyang", 2, seed=3)
    assert draw_table(game.rules, game.state, 1).shape == (710, 960, 3) == frame_size(4) + (3,)
    three = BatchGame("guiyang", 1, seed=3, num_players=3)
    img = draw_table(three.rules, three.state, 0)
    assert img.shape == (552, 960, 3) and img.dtype == np.uint8


def test_draw_game_shows_match_scores():
    game = BatchGame("guiyang", 1, seed=7, hands_per_game=2)
    game.scores[0] = [5, -3, 0, -2]
    rules, st = game.rules, game.state
    want = draw_table(rules, st, 0, scores=[5, -3, 0, -2], reveal=True)
    assert (draw_game(game, reveal=True) == want).all()
    assert not (draw_table(rules, st, 0, reveal=True) == want).all()
    assert status_lines(rules, st, 0, scores=game.scores[0])[1].endswith("| match +5 -3 +0 -2")


def test_only_the_viewer_sees_concealed_tiles_unless_revealed():
    game = BatchGame("guiyang", 1, seed=5)
    actor = int(game.state.actor[0])
    other = (actor + 1) % 4
    x, y = hand_tile_origin(other, 0)
    centre = (y + 4, x + 4)  # inside the tile, clear of the text
    hidden = draw_table(game.rules, game.state, 0)
    assert tuple(hidden[centre]) == _BACK
    shown = draw_table(game.rules, game.state, 0, reveal=True)
    assert tuple(shown[centre]) == (252, 252, 246)
    as_other = draw_table(game.rules, game.state, 0, viewer=other)
    assert tuple(as_other[centre]) == (252, 252, 246)
    ax, ay = hand_tile_origin(actor, 0)
    assert tuple(as_other[ay + 4, ax + 4]) == _BACK


def test_chickens_are_marked_and_ranks_coloured_by_suit():
    # guiyang-2-ron ends with flip 8s: 9s is a chicken; seat 1 won holding 4m4m1p1p2p2p3p3p3s3s8s8s
    # and the 9s it won on, the 13th of its sorted concealed tiles
    rules, st = state_at(RON, 56)
    img = draw_table(rules, st, 0)
    x, y = hand_tile_origin(1, 12)
    assert tuple(img[y + 2, x + _BIG[0] - 2]) == _GOLD
    x0, y0 = hand_tile_origin(1, 0)  # 4m: no chicken corner
    assert tuple(img[y0 + 2, x0 + _BIG[0] - 2]) != _GOLD
    tile0 = img[y0 : y0 + _BIG[1], x0 : x0 + _BIG[0]].reshape(-1, 3)
    assert (tile0 == SUIT_COLOURS[0]).all(-1).any()  # the rank of 4m drawn in the m colour
    assert not (tile0 == SUIT_COLOURS[2]).all(-1).any()
    # seat 0's first discard is the first 1s, unclaimed: the charging chicken's red frame
    ry = _HEADER + 24 + _BIG[1] + 16
    assert tuple(img[ry + _SMALL[1] // 2, 10 - 1]) == _RED


def test_chicken_kinds():
    guiyang, updown = Rules.make("guiyang"), Rules.make("guiyang", flip_mode="up_down")
    assert np.flatnonzero(chicken_kinds(guiyang, -1)).tolist() == [kind("1s")]
    assert np.flatnonzero(chicken_kinds(guiyang, kind("8s"))).tolist() == [kind("1s"), kind("9s")]
    assert np.flatnonzero(chicken_kinds(guiyang, kind("9p"))).tolist() == [kind("1p"), kind("1s")]
    assert np.flatnonzero(chicken_kinds(guiyang, kind("9s"))).tolist() == [kind("1s")]
    got = np.flatnonzero(chicken_kinds(updown, kind("2s"))).tolist()
    assert got == [kind("1s"), kind("3s")]


def test_text_is_ascii_at_every_step_of_every_sample_record():
    for path in sorted(RECORDS.glob("*.json")):
        for rules, st, _ in iter_states(load(path)):
            for reveal in (False, True):
                for line in status_lines(rules, st, 0, reveal=reveal, scores=[0, 0, 0, 0]):
                    assert line.isascii(), (path.name, line)
    assert all(label.isascii() for label in ITEM_LABELS.values())
    assert tuple(ITEM_LABELS) == ITEMS


def test_status_lines_say_what_happens():
    rules, st = state_at(RON, 1)  # seat 1 discarded 4p; seat 3 may claim it
    first, second = status_lines(rules, st, 0)
    assert first == "guiyang, 4 players | hand 1/1 | dealer P1 (streak 2) | wall 55 left"
    assert second.startswith("P1 discarded 4p: response window, P3 to act | legal: ")
    assert second.endswith("pong, pass")
    rules, st = state_at(RON, 56)
    first, second = status_lines(rules, st, 0)
    assert first.endswith("| flip 8s: chickens 1s 9s")
    assert second == "Hand over: ron, winners P1, P3 | scores +17 +9 -33 +7"


def test_bad_arguments_raise():
    game = BatchGame("guiyang", 1, seed=1)
    with pytest.raises(ValueError, match="viewer must be None or a seat 0-3"):
        draw_table(game.rules, game.state, 0, viewer=4)
    with pytest.raises(ValueError, match="game index 1 out of range"):
        draw_table(game.rules, game.state, 1)
    with pytest.raises(ValueError, match="unknown ledger item 'tip'"):
        ledger_rows({"ledger": [[0, 1, 2, "tip"]]})


def test_table_and_record_display_as_pictures():
    game = BatchGame("guiyang", 1, seed=2)
    view = Table(game.rules, game.state, 0, reveal=True)
    png = view._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (np.asarray(Image.open(io.BytesIO(png)).convert("RGB")) == view.rgb()).all()
    before = view.rgb()
    game.step(game.random_actions(np.random.default_rng(0)))
    assert (view.rgb() == before).all()  # the view holds a copy of the state
    rec = Record(RON)
    html = rec._repr_html_()
    assert "ron: winners P1, P3, flip 8s | P0 +17 P1 +9 P2 -33 P3 +7" in html
    assert html.count("<tr>") == 18  # header + 17 ledger lines
    assert "added kong, zhuan wan dou (7.3)" in html
    assert rec.table(0).rgb().shape == (710, 960, 3)
    with pytest.raises(ValueError, match="decision index must be 0-56"):
        rec.table(57)


def test_ledger_rows_follow_rules_order():
    rows = ledger_rows(
        {"ledger": [[1, 0, 2, "chicken"], [2, 1, 12, "hu"], [0, 3, 1, "chajiao"], [2, 0, 3, "hu"]]}
    )
    assert rows == [(2, 0, 3, "hu"), (2, 1, 12, "hu"), (1, 0, 2, "chicken"), (0, 3, 1, "chajiao")]


def test_environments_render_rgb_array_frames_of_the_table():
    """``render_mode="rgb_array"``: the AEC env and SingleAgentEnv return the picture of
    draw_game from the right seat, one fixed frame size for every step of a match."""
    import zhuoji_env
    from zhuoji_env import SingleAgentEnv

    env = zhuoji_env.env(render_mode="rgb_array")
    env.reset(seed=3)
    shapes = set()
    for agent in env.agent_iter(max_iter=40):
        obs, _, term, trunc, _ = env.last()
        frame = env.render()
        assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
        shapes.add(frame.shape)
        seat = env.agents.index(agent) if agent in env.agents else 0
        game = env.unwrapped.game
        np.testing.assert_array_equal(frame, draw_game(game, viewer=seat, reveal=False))
        env.step(None if term or trunc else int(obs["action_mask"].nonzero()[0][0]))
    assert shapes == {(710, 960, 3)}

    single = SingleAgentEnv(render_mode="rgb_array", render_all=True)
    single.reset(seed=4)
    frame = single.render()
    np.testing.assert_array_equal(frame, draw_game(single.game, viewer=single.seat, reveal=True))
    hidden = SingleAgentEnv(render_mode="rgb_array")
    hidden.reset(seed=4)
    assert (hidden.render() != frame).any()  # the other seats' concealed tiles face down


def test_environments_display_as_pictures_in_notebooks():
    import zhuoji_env
    from zhuoji_env import SingleAgentEnv

    for env in (zhuoji_env.env().unwrapped, SingleAgentEnv()):
        assert env._repr_png_() is None  # nothing to draw before reset
        env.reset(seed=5)
        png = env._repr_png_()
        assert Image.open(io.BytesIO(png)).size == (960, 710)


def _with_melds(game: BatchGame, seat: int, hidden_kind: int):
    """A copy of the state of ``game`` in which ``seat`` holds a pong of 4p (fed by the next
    seat) and a concealed kong of ``hidden_kind``."""
    st = game.state.copy()
    st.meld[0, seat, kind("4p")] = PONG_MELD
    st.meld_from[0, seat, kind("4p")] = (seat + 1) % 4
    st.meld[0, seat, hidden_kind] = AN_KONG
    return st


def test_where_a_hidden_concealed_kong_is_drawn_says_nothing_of_its_kind():
    """Melds were drawn in kind order, hidden concealed kongs among them: one drawn after a
    pong of 4p was of a kind above 4p. Two states that differ only in that kind must look the
    same to another seat, in the picture and in the text table, and differ when revealed."""
    game = BatchGame("guiyang", 1, seed=5)
    seat = (int(game.state.actor[0]) + 1) % 4
    low, high = _with_melds(game, seat, kind("2m")), _with_melds(game, seat, kind("8s"))
    rules = game.rules
    assert (draw_table(rules, low, 0) == draw_table(rules, high, 0)).all()
    assert render_table(rules, low, 0) == render_table(rules, high, 0)
    assert "melds: pong 4p from player_" in render_table(rules, low, 0)
    assert "; concealed kong (hidden)" in render_table(rules, low, 0)
    assert not (
        draw_table(rules, low, 0, reveal=True) == draw_table(rules, high, 0, reveal=True)
    ).all()
    assert render_table(rules, low, 0, viewer=seat) != render_table(rules, high, 0, viewer=seat)


def test_reveal_must_be_a_bool():
    """``reveal='no'`` is truthy: it showed every seat's concealed tiles."""
    game = BatchGame("guiyang", 1, seed=5)
    for call in (
        lambda v: draw_table(game.rules, game.state, 0, reveal=v),
        lambda v: status_lines(game.rules, game.state, 0, reveal=v),
        lambda v: render_table(game.rules, game.state, 0, reveal=v),
        lambda v: Table(game.rules, game.state, 0, reveal=v),
    ):
        for bad in ("no", 0, None):
            with pytest.raises(TypeError, match=r"^reveal must be True or False, got "):
                call(bad)
        call(np.bool_(True))
