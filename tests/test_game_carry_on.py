"""BatchGame.carry_on: a finished match's game goes on with the next dealer and streak."""

import numpy as np
import pytest

from zhuoji_env import BatchGame


def test_carry_on_deals_with_the_next_dealer_and_streak():
    game = BatchGame("guiyang", batch_size=16, seed=5, auto_reset=False)
    rng = np.random.default_rng(0)
    while not game.over.all():
        game.step(game.random_actions(rng))
    nxt, streak = game.state.next_dealer.copy(), game.state.next_streak.copy()
    game.scores[:] = 7  # a match total, which the next match starts without
    game.carry_on(np.arange(16))
    assert (game.state.dealer == nxt).all() and (game.state.streak == streak).all()
    assert (game.scores == 0).all() and (game.hand_no == 0).all() and not game.over.any()


def test_carry_on_refuses_a_game_still_playing():
    game = BatchGame("guiyang", batch_size=2, seed=5, auto_reset=False)
    with pytest.raises(ValueError, match="game 1 is still playing: carry_on follows"):
        game.carry_on([1])
