"""Baseline agents: ``random`` (uniform over legal actions) and ``greedy`` (shanten-greedy)."""

from __future__ import annotations

import numpy as np

from agents.base import P_RESPONSE, P_ROB, Agent, counts, phase
from zhuoji_env import hands
from zhuoji_env.engine import actions as A
from zhuoji_env.envs.common import RandomPolicy
from zhuoji_env.observation import block
from zhuoji_env.tiles import NUM_KINDS

_DISCARDS = slice(A.DISCARD, A.DISCARD + NUM_KINDS)


RandomAgent = RandomPolicy
"""Uniformly random over the legal actions: the environments' :class:`RandomPolicy` (one class
for both, kept at the lowest layer that uses it; it has the agents' ``act``, ``rng``, ``reseed``
and ``name``, and skips the observation)."""


def discard_shanten(hand: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """int ``[k,27]``: shanten of ``hand`` (3k+2 counts) after discarding each kind; 99 where the
    discard is not in ``legal`` (bool ``[k,27]``)."""
    _, after = hands.shanten_neighbours(hand, -1)
    return np.where(legal, after, 99).astype(np.int16)


def least_shanten_discard(hand, legal, rng=None) -> np.ndarray:
    """A legal discard of least shanten per row; ties broken at random when ``rng`` is given,
    else by the lowest kind."""
    sh = discard_shanten(hand, legal).astype(np.float64)
    if rng is not None:
        sh = sh + 0.5 * rng.random(sh.shape)
    return sh.argmin(-1)


def locked_window(obs) -> np.ndarray:
    """bool ``[k]``: a response or rob window while the observer is pass-locked (过手胡). A
    ``hu`` legal then is not a win: under ``pass_win = penalty`` it only pays the penalty (under
    ``forbid`` it is not legal at all)."""
    ph = phase(obs)
    return ((ph == P_RESPONSE) | (ph == P_ROB)) & (block(obs, "pass_lock")[:, 0] > 0.5)


class GreedyAgent(Agent):
    """Wins whenever it may (never into the pass-win penalty); otherwise discards a tile of least
    shanten (ties at random) and declines everything else: it passes in every window, never
    kongs and never declares 报听."""

    name = "greedy"

    def _act(self, obs, mask):
        out = np.where(mask[:, A.PASS], A.PASS, -1)
        out = np.where(mask[:, A.HU] & ~locked_window(obs), A.HU, out)
        need = np.flatnonzero((out < 0) & mask[:, _DISCARDS].any(-1))
        if need.size:
            hand = counts(obs[need], "hand")
            out[need] = A.DISCARD + least_shanten_discard(hand, mask[need, _DISCARDS], self.rng)
        rest = np.flatnonzero(out < 0)  # nothing above applies (e.g. only a kong is legal)
        if rest.size:
            out[rest] = mask[rest].argmax(-1)
        return out
