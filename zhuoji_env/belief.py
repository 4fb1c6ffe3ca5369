"""Belief sampling: complete game states that agree with everything one seat has seen.

Decision-time search needs the hidden state a seat cannot see. :func:`public_view` keeps what
the acting seat knows of a batch of games and blanks the rest; :func:`sample` deals the blanks
anew, K times per game, as one :class:`~zhuoji_env.engine.state.State` the engine steps like any
other. Samples are drawn from the view alone, so they cannot depend on the real hidden state.

What a seat knows (kept): its own hand, melds and concealed kongs (闷豆); every seat's pongs,
exposed kongs, river (in order, claimed discards marked), 报听 and first-discard state; how many
concealed kongs each other seat made, which of them were late (憨包豆) and which were made in
the current turn (热炮); how many concealed tiles each seat holds; the size of the live wall; the
dealer and streak; the fate of the first ``1s`` (冲锋鸡 / 责任鸡); its own 过手胡 lock and claim
options; the pass-win penalties it incurred.

What is drawn, uniformly from the tiles the seat has not seen: the other seats' concealed tiles,
the kinds of their concealed kongs (distinct kinds of which no copy has been seen), and the order
of the live wall, whose front tile is the flip tile (翻牌) a win would turn up.

The rest follows from the drawn tiles as the engine would have it: the other seats' claim
options in an open window; their 报听 eligibility (``dealt_ready``) while they still hold their
dealt tiles. Where the seat cannot know a fact that does not follow from the tiles, the sample
takes the simplest reading and says so: the other seats are not locked by 过手胡 (the seat
cannot see who passed a win), seats asked before it in the current window passed, and the tile
a bugang seat drew this turn (in a rob window) is one of its concealed tiles at random.

This uniform belief ignores what the others' play implies about their hands (a 报听 seat is
ready, a seat that passed a pong holds no pair of it, a seat with many discards has drawn
towards a complete hand). At ``improve=0`` the distribution is exact: every arrangement of
the unseen copies (taken as distinct physical tiles) over the hidden places is equally likely.
With ``improve`` above 0, :func:`improve_hands` then plays each other seat's hand forward by
exchanges with the live wall, as many as its discards (times ``improve``), keeping what brings
it nearer to complete: a model of the others' play, so that about as many of them are ready
(听) as in ``ppo-guiyang``'s play. Everything the seat sees is unchanged by it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from zhuoji_env import hands
from zhuoji_env.engine import actions as A
from zhuoji_env.engine import core
from zhuoji_env.engine.game import as_generator, batch_memory, is_integer, is_real
from zhuoji_env.engine.state import AN_KONG, OVER, RESPONSE, ROB, State, check_games
from zhuoji_env.limits import check_memory
from zhuoji_env.rules import Rules
from zhuoji_env.tiles import COPIES, NUM_KINDS, NUM_TILES

_HIDDEN = -1  # a blanked tile or seat


@dataclass
class PublicView:
    """What the acting seat of each of B games knows (module docstring), as fixed-shape arrays.

    ``state`` is the game state with every hidden part blanked: the other seats' concealed
    tiles are zero and their concealed kongs absent; the wall holds only ``-1``; the other seats'
    claim options, choices, locks, penalties and 报听 eligibility are cleared; the drawn tile is
    ``-1`` unless it is the seat's own; the built-in record is empty. It is no legal engine state
    until :func:`sample` fills it.
    """

    state: State  # B games, hidden parts blanked
    seat: np.ndarray  # int8 [B]: the seat whose view this is (the actor of each game)
    concealed: np.ndarray  # int8 [B,n]: concealed tiles each seat holds
    an_kongs: np.ndarray  # int8 [B,n,2,2]: other seats' 闷豆 by (late 憨包豆, made this turn)

    @property
    def batch_size(self) -> int:
        return self.seat.shape[0]

    def take(self, idx) -> PublicView:
        """The views of games ``idx`` (a copy)."""
        return PublicView(self.state.take(idx), *(a[idx].copy() for a in self._arrays()))

    def _arrays(self):
        return self.seat, self.concealed, self.an_kongs


def public_view(st: State, g=None) -> PublicView:
    """The public view of games ``g`` (default: all) for the seat each must act with now.

    ``g`` is a 1-D sequence of game indices 0..B-1 (:func:`~zhuoji_env.engine.game.check_games`).
    Raises ``ValueError`` for a finished game: nobody decides in it.
    """
    if not isinstance(st, State):
        raise TypeError(
            f"public_view takes a State (a BatchGame's .state), got {type(st).__name__}"
        )
    g = np.arange(st.batch_size) if g is None else check_games(g, st.batch_size)
    over = st.phase[g] == OVER
    if over.any():
        raise ValueError(f"game {int(g[over][0])} is over: no seat acts in it, so it has no view")
    v = st.take(g)
    k, n = g.size, st.num_players
    rows = np.arange(k)
    seat = v.actor.astype(np.int64)
    other = np.ones((k, n), bool)
    other[rows, seat] = False

    concealed = v.hand.sum(-1).astype(np.int8)
    hidden_kong = other[..., None] & (v.meld == AN_KONG)  # [k,n,27]
    turn = np.zeros((k, n, NUM_KINDS), bool)
    turn[rows, v.turn_seat] = v.turn_kong
    an_kongs = np.zeros((k, n, 2, 2), np.int8)
    for late in (0, 1):
        for this_turn in (0, 1):
            sel = hidden_kong & (v.meld_late == bool(late)) & (turn == bool(this_turn))
            an_kongs[..., late, this_turn] = sel.sum(-1)

    robbed = np.flatnonzero(v.phase == ROB)  # the bugang tile is shown: the only known one
    bugang_tile = v.hand[robbed, v.turn_seat[robbed], v.tile[robbed]] > 0
    v.hand[other] = 0
    v.hand[robbed, v.turn_seat[robbed], v.tile[robbed]] = bugang_tile
    v.meld[hidden_kong] = 0
    v.meld_late[hidden_kong] = False
    v.meld_from[hidden_kong] = -1
    v.turn_kong &= ~hidden_kong[rows, v.turn_seat]
    v.wall[:] = _HIDDEN
    v.claim_opts[other] = 0
    v.claim_choice[other] = -1
    v.pass_lock[other] = False
    v.baopai[other] = 0
    v.dealt_ready[other] = False
    own_drawn = v.turn_seat == seat
    v.drawn[~own_drawn] = _HIDDEN
    v.rec_seat[:] = -1
    v.rec_action[:] = -1
    v.rec_len[:] = 0
    return PublicView(v, seat.astype(np.int8), concealed, an_kongs)


def unseen_counts(view: PublicView) -> np.ndarray:
    """int ``[B,27]``: copies of each kind the seat has not seen (other hands, other seats'
    concealed kongs, the live wall)."""
    st = view.state
    seen = st.hand.sum(1) + st.river_counts.sum(1)
    meld = st.meld
    seen = seen + (3 * (meld == 1) + 4 * (meld >= AN_KONG)).sum(1)
    return (COPIES - seen).astype(np.int64)


def sample(
    rules: Rules | str | Mapping | None, view: PublicView, k: int, rng, improve: float = 0.0
) -> State:
    """``B * k`` complete states: rows ``i*k .. i*k+k-1`` are k draws for game ``i`` of ``view``.

    ``rules`` is what :meth:`Rules.make <zhuoji_env.rules.Rules.make>` accepts. ``rng`` is a
    ``numpy.random.Generator`` or a seed for one; the samples depend on nothing else but
    ``view``, ``k`` and ``improve``. Every sample encodes for the seat to its real observation
    and has its real legal actions. ``improve=0`` is the uniform belief; above 0,
    :func:`improve_hands` then plays each other seat's drawn hand forward as its discards say.

    The view's legal actions (``view.state.mask``, the real ones of the game it was made from)
    are its rules' fingerprint: rules under which a sample's legal actions differ from them are
    not the view's, and raise ``ValueError``. A ``B * k`` whose memory exceeds this machine's
    raises :class:`~zhuoji_env.limits.SizeError` before anything is allocated.
    """
    if not isinstance(view, PublicView):
        raise TypeError(
            f"sample takes a PublicView (belief.public_view(state, games)), "
            f"got {type(view).__name__}"
        )
    rules = Rules.make(rules)
    if not is_integer(k) or k < 1:
        raise ValueError(f"k (samples per game) must be an integer >= 1, got {k!r}")
    if not valid_improve(improve):
        raise ValueError(
            f"improve (draws per discard) must be a number in [0, {IMPROVE_MAX}], got {improve!r}"
        )
    if view.state.num_players != rules.num_players:
        raise ValueError(
            f"the view is of {view.state.num_players}-player games, the rules of "
            f"{rules.num_players}"
        )
    k, improve = int(k), float(improve)
    b, n = view.batch_size, rules.num_players
    check_memory(f"k={k} samples of {b} games", sample_memory(b * k, n))
    rng = as_generator(rng)
    rep = np.repeat(np.arange(b), k)
    st = view.state.take(rep)
    if not b:
        return st  # a view of no games: no samples
    r = rep.size
    rows = np.arange(r)
    seat = view.seat[rep].astype(np.int64)
    other = np.ones((r, n), bool)
    other[rows, seat] = False
    unseen = unseen_counts(view)[rep]  # [r,27]
    an_kongs = view.an_kongs[rep]  # [r,n,2,2]

    # 1. the kinds of the other seats' concealed kongs: distinct kinds with every copy unseen
    slots = an_kongs.reshape(r, -1).sum(-1)
    width = int(slots.max(initial=0))
    if width:
        keys = rng.random((r, NUM_KINDS))
        keys[unseen < COPIES] = 2.0
        kinds = np.argsort(keys, axis=1, kind="stable")[:, :width]
        if (np.take_along_axis(keys, kinds, 1)[np.arange(width) < slots[:, None]] > 1).any():
            raise ValueError("a view whose other seats hold more concealed kongs than kinds unseen")
        _place_kongs(st, an_kongs, kinds, slots)
        taken = np.arange(width)[None] < slots[:, None]
        np.subtract.at(unseen, (rows[:, None].repeat(width, 1)[taken], kinds[taken]), COPIES)

    # 2. the other seats' concealed tiles, then the live wall: a uniform shuffle of the rest
    known = st.hand.sum(-1)
    sizes = np.where(other, view.concealed[rep] - known, 0).astype(np.int64)  # [r,n]
    live = np.maximum(st.back - st.front + 1, 0).astype(np.int64)
    total = unseen.sum(-1)
    if (total != sizes.sum(-1) + live).any():
        i = int(np.flatnonzero(total != sizes.sum(-1) + live)[0] // k)
        raise ValueError(f"game {i} of the view does not conserve tiles: it is not a real view")
    pos = np.arange(NUM_TILES)
    pool = (pos[None] >= np.cumsum(unseen, -1)[..., None]).sum(1)  # [r,108]: kinds, 27 past end
    keys = rng.random((r, NUM_TILES))
    keys[pos[None] >= total[:, None]] = 2.0
    tiles = np.take_along_axis(pool, np.argsort(keys, axis=1, kind="stable"), 1)
    ends = np.cumsum(sizes, -1)  # [r,n]: where each seat's share ends in the shuffled pool
    in_hand = pos[None] < ends[:, -1:]
    owner = (pos[None, :, None] >= ends[:, None, :]).sum(-1)  # [r,108]
    rr, pp = np.nonzero(in_hand)
    np.add.at(st.hand, (rr, owner[rr, pp], tiles[rr, pp]), 1)
    rr, pp = np.nonzero(~in_hand & (pos[None] < total[:, None]))
    st.wall[rr, st.front[rr] + pp - ends[rr, -1]] = tiles[rr, pp]

    if improve:
        improve_hands(st, other, improve, rng)

    # 3. what follows from the drawn tiles
    _fill_dealt_ready(st, other)
    _fill_robbed_draw(st, rng)
    _fill_windows(rules, st, seat)
    core.compute_masks(rules, st, rows)
    _check_masks(rules, view, st, k)
    return st


def sample_memory(samples: int, num_players: int) -> int:
    """Bytes :func:`sample` plans on for ``samples`` states: a batch's
    (:func:`~zhuoji_env.engine.game.batch_memory`) and the shuffle's ``[samples, 108]``
    temporaries, 32 bytes a tile (measured at about 10 KB a 4-seat sample)."""
    return batch_memory(samples, num_players) + 32 * NUM_TILES * samples


def _check_masks(rules: Rules, view: PublicView, st: State, k: int) -> None:
    """Refuse samples whose legal actions are not the view's: the view was made under other
    rules (its state carries the seat's real legal actions, and every sample must have them)."""
    bad = np.flatnonzero((st.mask != np.repeat(view.state.mask, k, axis=0)).any(-1))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"game {i // k} of the view was not made under these rules ({rules.to_record()}): "
            f"its seat's legal actions are {core.legal_names(view.state, i // k)}, these rules "
            f"give {core.legal_names(st, i)}; sample it under the rules of the game it came from"
        )


IMPROVE_MAX = 8
"""The most exchanges per discard :func:`improve_hands` makes (``improve``)."""


def valid_improve(improve) -> bool:
    """Whether ``improve`` is a real number (not a bool) in ``[0, IMPROVE_MAX]``."""
    return is_real(improve) and 0 <= improve <= IMPROVE_MAX


def improve_hands(st: State, other: np.ndarray, improve: float, rng: np.random.Generator) -> None:
    """Play the other seats' drawn hands forward as their discards say, in place: a model of
    their play.

    The uniform belief deals the others hands as if they had never played: in ``ppo-guiyang``
    self-play about a third of them are ready (听) with 5-7 discards and 59% with 8-11, against
    under 2% of uniform draws (docs/search.md). Here each other seat (``other``, bool ``[B,n]``)
    with ``d`` discards in its river makes ``round(improve * d)`` exchanges with the live wall:
    it draws a tile from a uniformly chosen live position and puts back in its place the tile
    that leaves its hand nearest to complete (least shanten, ties at random; it may be the drawn
    one), as a player who keeps the tiles it needs. The wall keeps its size and the tiles are
    conserved; the seats' melds, the rivers and everything else the seat sees are untouched, so
    the sample still gives its observation. Only hands of 3k+1 tiles exchange (the bugang seat
    of a rob window holds 3k+2 with its shown tile, and is left as drawn).
    """
    held = st.hand.sum(-1)
    live = (st.back - st.front + 1).astype(np.int64)
    n = other.shape[1]
    ready_to_move = other & (held % 3 == 1) & (live[:, None] > 0)
    moves = np.where(ready_to_move, np.rint(improve * st.river_len), 0).astype(np.int64)
    for q in range(n):
        for step in range(int(moves[:, q].max(initial=0))):
            g = np.flatnonzero(moves[:, q] > step)
            pos = st.front[g] + (rng.random(g.size) * live[g]).astype(np.int64)
            hand = st.hand[g, q]
            hand[np.arange(g.size), st.wall[g, pos]] += 1
            after = hands.shanten_neighbours(hand, -1)[1] + rng.random(hand.shape)
            out = after.argmin(-1)
            hand[np.arange(g.size), out] -= 1
            st.hand[g, q] = hand
            st.wall[g, pos] = out


def _place_kongs(st: State, an_kongs: np.ndarray, kinds: np.ndarray, slots: np.ndarray) -> None:
    """Give the other seats their concealed kongs of ``kinds`` (in slot order: seats in order,
    then (late, this turn) in order), with their late and this-turn flags."""
    r, n = an_kongs.shape[:2]
    flat = an_kongs.reshape(r, -1).astype(np.int64)  # [r, n*4]: slot counts per (seat, flags)
    ends = np.cumsum(flat, -1)
    j = np.arange(kinds.shape[1])
    cls = (j[None, :, None] >= ends[:, None, :]).sum(-1)  # [r,width]: (seat, late, turn) class
    rr, jj = np.nonzero(j[None] < slots[:, None])
    c = cls[rr, jj]
    s, late, this_turn = c // 4, (c // 2) % 2, c % 2
    t = kinds[rr, jj]
    st.meld[rr, s, t] = AN_KONG
    st.meld_late[rr, s, t] = late.astype(bool)
    turn = this_turn.astype(bool)
    st.turn_kong[rr[turn], t[turn]] = True


def _fill_dealt_ready(st: State, other: np.ndarray) -> None:
    """A non-dealer that has not discarded and made no meld still holds its 13 dealt tiles: its
    hard 报听 eligibility is whether those are ready."""
    r, n = other.shape
    dealer = np.zeros((r, n), bool)
    dealer[np.arange(r), st.dealer] = True
    dealt = other & ~dealer & ~st.discarded & ~(st.meld > 0).any(-1)
    if dealt.any():
        st.dealt_ready[dealt] = hands.is_ready(st.hand[dealt])


def _fill_robbed_draw(st: State, rng: np.random.Generator) -> None:
    """In a rob window the tile the bugang seat drew this turn (which makes the kong late or
    not, 憨包豆) is one of its concealed tiles (the bugang tile among them), uniformly."""
    g = np.flatnonzero((st.phase == ROB) & st.drew)
    if not g.size:
        return
    held = st.hand[g, st.turn_seat[g]].astype(np.int64)
    u = rng.random(g.size) * held.sum(-1)
    st.drawn[g] = (u[:, None] >= np.cumsum(held, -1)).sum(-1)


def _fill_windows(rules: Rules, st: State, seat: np.ndarray) -> None:
    """Open windows: the other seats' claim options from their drawn tiles; those asked before
    the seat passed."""
    g = np.flatnonzero((st.phase == RESPONSE) | (st.phase == ROB))
    if not g.size:
        return
    p = st.turn_seat[g].astype(np.int64)
    n = st.num_players
    for rob in (False, True):
        sel = (st.phase[g] == ROB) == rob
        gg, pp = g[sel], p[sel]
        if not gg.size:
            continue
        q, opts = core.claim_options(rules, st, gg, pp, st.tile[gg].astype(np.int64), rob)
        mine = q == seat[gg][:, None]
        before = ((q - pp[:, None]) % n) < ((seat[gg] - pp) % n)[:, None]
        keep = st.claim_opts[gg[:, None], q]
        st.claim_opts[gg[:, None], q] = np.where(mine, keep, opts)
        asked = before & (opts > 0)
        st.claim_choice[gg[:, None], q] = np.where(asked, A.PASS, -1)
