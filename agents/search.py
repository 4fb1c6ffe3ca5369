"""Search at decision time: ``search:BASE`` plays BASE, improved by rollouts from sampled deals.

At a decision with more than one legal action (and, with ``unsure``, only where BASE has action
probabilities and its most likely action has less than that one), the agent takes BASE's ``c``
most likely actions, draws ``k`` complete deals that agree with everything the seat has seen
(:mod:`zhuoji_env.belief`), plays each candidate from each deal with BASE in every seat, and
scores each in points: by the seat's settlement of the hand as the engine makes it, or, with
``leaf=N``, by BASE's value at the seat's N-th next decision (its settlement if the hand ends
first; with ``mean=M``, by the mean of its values at the seat's last M decisions up to the
N-th). Every candidate meets the same deals and the same random numbers in its rollouts
(common random numbers), so the comparison is paired: the candidate with the best mean is played
if it beats BASE's favourite by more than ``z`` standard errors of their paired difference, else
the favourite is (a few noisy rollouts should not overrule a good policy). With ``race=K2`` (and
``z=0``) a close call between the two best means is played out again from K2 fresh deals and
decided by their means over all their deals; with ``confirm=K2`` a candidate that overrules the
favourite must beat it again on K2 fresh deals.

Rollouts of every table an arena or environment asks at once run as one engine batch, with one
call of BASE per step for all of them. BASE acts in rollouts by its action probabilities
(:func:`rollout_probs`): a PPO network's softmax (its argmax with ``:greedy``), uniform for
``random``, and the action it plays for the others (``rule`` is deterministic; ``greedy``'s
ties and other agents' own randomness are then their own, not shared between candidates).

Spec: ``search:BASE[:OPTION=VALUE]...`` with the options ``k``, ``c``, ``unsure``, ``z``,
``leaf``, ``mean``, ``confirm``, ``race`` and ``improve`` (the others' draws per discard in
the sampled deals, :func:`zhuoji_env.belief.improve_hands`; by default 0, the uniform belief,
for a ``ppo`` BASE and 1 for a BASE without a value) at the end, each at most once, e.g.
``search:ppo-guiyang``, ``search:rule:k=64:c=2``, ``search:ppo:run/latest.pt:greedy:k=8``;
``c=all`` searches every legal action (``c=86``). :data:`VALUE_DEFAULTS` are the defaults for
a ``ppo`` BASE (one with a value), :data:`DEFAULTS` for one with ``leaf=0`` and
:data:`NO_VALUE_DEFAULTS` for a BASE without a value. The agent needs the public view of the
game (``needs_view``): the arena, ``agents.play``, the environments' opponents and the AEC
environment's :meth:`~zhuoji_env.envs.aec.raw_env.public_view` give it; ``act`` alone refuses.
"""

from __future__ import annotations

import numpy as np

from agents.base import Agent, missing_methods
from agents.simple import RandomAgent
from zhuoji_env import belief
from zhuoji_env.engine import core
from zhuoji_env.engine.game import as_generator, is_real
from zhuoji_env.engine.state import OVER, State
from zhuoji_env.envs.common import as_mask
from zhuoji_env.observation import SLICES, encode
from zhuoji_env.rules import Rules

DEFAULTS = {
    "k": 16,
    "c": 3,
    "unsure": 0.9,
    "z": 1.0,
    "leaf": 0,
    "mean": 1,
    "confirm": 0,
    "race": 0,
    "improve": 0.0,
}
"""The defaults where a ``ppo`` BASE's rollouts play to the end of the hand (``leaf=0``; a BASE
without a value, such as ``rule``, has no other choice and takes :data:`NO_VALUE_DEFAULTS`):
deals sampled per decision, candidate actions searched, the probability of BASE's favourite at
or above which it is played without search (``None``: search every decision with a choice; a
BASE without action probabilities is searched at every decision with a choice), the standard
errors by which another candidate must beat the favourite to be played, the rollouts' depth, the
values a rollout's score averages (the leaf's alone), the fresh deals of a second stage (none),
the fresh deals of a close call's race (none) and the others' draws per discard in the sampled
deals (none: the uniform belief)."""

NO_VALUE_DEFAULTS = {**DEFAULTS, "improve": 1.0}
"""The defaults for a BASE without a value (``rule``, ``greedy``, ``random``; ``sb3:`` and
``rllib:`` policies too, whose value the search does not read, and a network trained beside an
oracle critic, such as ``ppo-scratch``, whose own value head was never trained): as
:data:`DEFAULTS`, but the sampled deals play each other seat's hand forward one exchange per
discard in its river (``improve=1``), so that about as many of them are ready as in real play
(in ``rule``'s games a third more). With the uniform belief ``search:rule`` gained nothing over
``rule`` (+0.07 [-0.46, +0.60] over 300 deals); with this one +1.07 [+0.54, +1.61] over 200
fresh deals (docs/search.md)."""

VALUE_DEFAULTS = {**DEFAULTS, "k": 32, "z": 0.0, "leaf": 2}
"""The defaults for a BASE with a value (a network): rollouts scored by that value at the
seat's second next decision, on 32 deals, the best mean played (their paired differences vary
about five times less than whole hands', docs/search.md). ``k`` and ``z`` take these defaults
whenever ``leaf`` is above 0. At these defaults a 500-deal arena of ``search:ppo-guiyang``
against ``ppo-guiyang`` takes about 17 minutes in one process on the 2-core development machine
(at the default ``--chunk``, 500 deals are one chunk, which ``--workers`` cannot split); searching
every decision (``unsure=1:z=0.5``) cost 2.1 times as much and was not measured stronger."""

_REAL = ("unsure", "z", "improve")
_LIMITS = {
    "k": (1, 4096),
    "c": (2, 86),
    "leaf": (0, 64),
    "mean": (1, 64),
    "confirm": (0, 4096),
    "race": (0, 4096),
}
RACE_SE = 2.0
"""With ``race``, a decision is a close call where the best mean beats the runner-up by less
than this many standard errors of their paired difference over the deals."""
ROLLOUT_BATCH = 32_768
"""Rollout games stepped as one batch at most (about 7 KB each): a decision's rollouts (k for
each of its distinct candidates) are never split, so tables are searched together in groups
that fit."""
_MATCH_COLS = np.concatenate(
    [np.arange(SLICES[b].start, SLICES[b].stop) for b in ("scores", "hand_no")]
)
"""Observation columns of the match (scores, hand number): rollouts copy them from the real
observation, as the engine state does not hold them (:func:`match_columns`)."""


def match_columns(match: np.ndarray, seat: np.ndarray, actor: np.ndarray, n: int) -> np.ndarray:
    """``match`` (``[B, m]``, columns ``_MATCH_COLS`` of ``seat``'s observations) as seen by
    ``actor``: an observation lists the scores from its observer on (slot j is the seat j
    after it), so the searching seat's are turned by the seats between it and the actor."""
    out = match.copy()
    turn = (np.arange(n)[None] + (actor - seat)[:, None]) % n
    out[:, :n] = np.take_along_axis(match[:, :n], turn, 1)
    return out


def rollout_probs(agent: Agent, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """float64 ``[k, 86]``: the probabilities with which ``agent`` plays each action."""
    return rollout_policy(agent, obs, mask)[0]


def rollout_policy(
    agent: Agent, obs: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`rollout_probs` and, from the same network call, ``agent``'s value of each
    observation (float64 ``[k]``, in its value head's units; None for an agent without one)."""
    policy = getattr(agent, "policy", None)
    if policy is not None:
        probs, value = policy(obs, mask)
        probs = np.asarray(probs, dtype=np.float64)
        value = np.asarray(value, dtype=np.float64)
        if not getattr(agent, "greedy", False):
            return np.where(mask, probs, 0.0), value
        return np.eye(mask.shape[1])[np.where(mask, probs, -1).argmax(1)], value
    if isinstance(agent, RandomAgent):
        return mask / mask.sum(1, keepdims=True), None
    return np.eye(mask.shape[1])[agent.act(obs, mask)], None


def ranking_probs(agent: Agent, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """float64 ``[k, 86]``: the probabilities by which the search ranks ``agent``'s actions and
    measures how sure it is: a network's softmax, even with ``:greedy`` (whose one-hot rollout
    probabilities would never be unsure and would leave its candidates after the first to
    chance); :func:`rollout_probs` for the others."""
    policy = getattr(agent, "policy", None)
    if policy is None:
        return rollout_probs(agent, obs, mask)
    return np.where(mask, np.asarray(policy(obs, mask)[0], dtype=np.float64), 0.0)


def _preference(agent: Agent, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A second key for ranking candidates among actions of equal probability: ``rule``'s
    score of each action it weighs (its advice), else zeros."""
    advice = getattr(agent, "advice", None)
    if advice is None:
        return np.zeros(mask.shape)
    scores = advice(obs, mask)[1]
    return np.where(np.isnan(scores), -np.inf, scores)


def seat_scores(st: State, seat: np.ndarray) -> np.ndarray:
    """int64 ``[B]``: what seat ``seat`` of each finished hand received less what it paid."""
    rows = np.arange(st.batch_size)
    got = st.ledger.sum(axis=(1, 3))[rows, seat]
    paid = st.ledger.sum(axis=(2, 3))[rows, seat]
    return (got - paid).astype(np.int64)


def distinct(cand: np.ndarray) -> np.ndarray:
    """bool ``[R, c]``: the candidates that are not a repeat of their row's first (a row with
    fewer legal actions than c repeats it, :meth:`SearchAgent.candidates`)."""
    keep = np.ones(cand.shape, dtype=bool)
    keep[:, 1:] = cand[:, 1:] != cand[:, :1]
    return keep


def paired(scores: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mean [R], se [R])`` over the deals of the paired difference between candidates
    ``a`` and ``b`` (int ``[R]``, columns of ``scores`` ``[R, k, c]``): its mean and standard
    error (0 with one deal)."""
    r, k, _ = scores.shape
    diff = scores[np.arange(r), :, a] - scores[np.arange(r), :, b]  # [R, k]
    se = diff.std(1, ddof=1) / np.sqrt(k) if k > 1 else np.zeros(r)
    return diff.mean(1), se


def rollout(
    rules: Rules,
    base: Agent,
    st: State,
    match: np.ndarray,
    pair: np.ndarray,
    rng,
    seat: np.ndarray,
    leaf: int = 0,
    mean: int = 1,
) -> np.ndarray:
    """Play the games of ``st`` with ``base`` in every seat, in place; returns float64 ``[B]``:
    each game's score for its ``seat`` in points.

    With ``leaf=0`` every game is played to the end of its hand and scored by its settlement
    (:func:`seat_scores`). With ``leaf=N`` a game stops at ``seat``'s N-th decision with a
    choice, and is scored there by BASE's value of the seat's observation in points (its value
    head over its ``reward_scale``); a hand that ends first is scored by its settlement. With
    ``mean=M`` (at most ``leaf``) the score is the mean of BASE's values at the seat's last M
    decisions up to the N-th, the settlement standing in for those the hand ended before.

    ``match`` (``[B, m]``) holds each game's observation columns ``_MATCH_COLS`` as
    ``seat`` sees them, copied into every observation the rollout encodes (turned to its
    observer, :func:`match_columns`). Games with the same ``pair``
    id draw the same uniform number at each step (common random numbers across candidates).
    """
    if not 1 <= mean <= max(leaf, 1):
        raise ValueError(f"rollout: mean must be in 1-{max(leaf, 1)} with leaf={leaf}, got {mean}")
    size = int(pair.max(initial=-1)) + 1
    actions = np.full(st.batch_size, -1, dtype=np.int64)
    left = np.full(st.batch_size, leaf, dtype=np.int64)
    stopped = np.zeros(st.batch_size, dtype=bool)
    value = np.zeros(st.batch_size)  # the sum of the values averaged, in points
    counted = np.zeros(st.batch_size, dtype=np.int64)  # and how many
    while True:
        live = np.flatnonzero((st.phase != OVER) & ~stopped)
        if not live.size:
            break
        u = rng.random(size)
        actions[:] = -1
        mask = st.mask[live]
        ask = mask.sum(1) > 1
        actions[live[~ask]] = mask[~ask].argmax(1)
        g = live[ask]
        if g.size:
            obs = encode(st, g, st.actor[g])
            obs[:, _MATCH_COLS] = match_columns(match[g], seat[g], st.actor[g], st.num_players)
            probs, v = rollout_policy(base, obs, mask[ask])  # one call of BASE per step
            if leaf:
                own = st.actor[g] == seat[g]
                left[g[own]] -= 1
                read = own & (left[g] < mean)
                # the value head over the reward scale it was trained with: points
                value[g[read]] += v[read] / base.reward_scale
                counted[g[read]] += 1
                stop = own & (left[g] == 0)
                stopped[g[stop]] = True
                g, probs = g[~stop], probs[~stop]
            cdf = np.cumsum(probs, 1)
            actions[g] = (cdf <= (u[pair[g]] * cdf[:, -1])[:, None]).sum(1)
        core.step(rules, st, actions, active=actions != -1)
    over = st.phase == OVER
    settled = seat_scores(st, seat)
    return np.where(over, value + (mean - counted) * settled, value) / mean


def rollout_groups(cand: np.ndarray, k: int) -> list[np.ndarray]:
    """The rows of ``cand`` (``[R, c]``) in consecutive groups whose rollouts (``k`` for each
    distinct candidate) stay within :data:`ROLLOUT_BATCH` games; a row that alone exceeds it
    is a group of its own."""
    games = np.cumsum(k * distinct(cand).sum(1))  # rollout games up to each row
    out, lo = [], 0
    while lo < len(cand):
        done = games[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(games, done + ROLLOUT_BATCH, side="right")))
        out.append(np.arange(lo, hi))
        lo = hi
    return out


class SearchAgent(Agent):
    """BASE with rollouts at its decisions (module docstring)."""

    name = "search"
    needs_view = True

    def __init__(
        self,
        base: Agent,
        rules=None,
        k: int | None = None,
        c: int = DEFAULTS["c"],
        unsure: float | None = DEFAULTS["unsure"],
        z: float | None = None,
        leaf: int | None = None,
        mean: int = DEFAULTS["mean"],
        confirm: int = DEFAULTS["confirm"],
        race: int = DEFAULTS["race"],
        improve: float | None = None,
        seed=None,
    ):
        super().__init__(seed)
        missing = missing_methods(base)
        if missing:
            raise TypeError(
                f"search needs a base agent (with act and reseed), got {base!r}; make one from "
                "a spec with agents.make_agent (e.g. make_agent('rule')), or ask for "
                "make_agent('search:rule')"
            )
        if getattr(base, "needs_view", False):
            raise ValueError(f"search needs a base that plays from observations, got {base!r}")
        valued = hasattr(base, "policy") and hasattr(base, "reward_scale")
        valued = valued and getattr(base, "value_trained", True)
        if leaf is None:
            leaf = VALUE_DEFAULTS["leaf"] if valued else DEFAULTS["leaf"]
        defaults = VALUE_DEFAULTS if leaf else DEFAULTS if valued else NO_VALUE_DEFAULTS
        k = defaults["k"] if k is None else k
        z = defaults["z"] if z is None else z
        improve = defaults["improve"] if improve is None else improve
        ints = {"k": k, "c": c, "leaf": leaf, "mean": mean, "confirm": confirm, "race": race}
        for name, value in ints.items():
            low, high = _LIMITS[name]
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"search option {name} must be an integer, got {value!r}")
            if not low <= value <= high:
                raise ValueError(f"search option {name}={value} is out of range {low}-{high}")
        if unsure is not None and not (is_real(unsure) and 0 < unsure <= 1):
            raise ValueError(f"search option unsure={unsure!r} must be a number in (0, 1] or None")
        if not (is_real(z) and 0 <= z <= 10):
            raise ValueError(f"search option z={z!r} must be a number in [0, 10]")
        if mean > 1 and not leaf:
            raise ValueError(
                f"search option mean={mean} averages BASE's values at the seat's last {mean} "
                f"decisions up to the leaf: it needs value leaves (leaf={mean} or more, and a "
                "network base), not whole-hand rollouts (leaf=0)"
            )
        if mean > leaf > 0:
            raise ValueError(
                f"search option mean={mean} averages BASE's values at the seat's last {mean} "
                f"decisions up to the leaf, which needs leaf={mean} or more (got leaf={leaf})"
            )
        if race and z:
            raise ValueError(
                f"search option race={race} plays the better pooled mean of a close call, which "
                f"needs z=0 (got z={z:g})"
            )
        if not belief.valid_improve(improve):
            raise ValueError(
                f"search option improve={improve!r} must be a number in [0, {belief.IMPROVE_MAX}]"
            )
        if leaf and not valued:
            raise ValueError(
                f"search option leaf={leaf} scores rollouts by BASE's value, and {base!r} has "
                "none (or, trained beside an oracle critic, a value head that was never "
                "trained): use a network base with a value (ppo-PRESET, ppo:PATH), or leaf=0"
            )
        self.base = base
        self.rules = Rules.make(rules)
        self.k, self.c, self.unsure, self.z = int(k), int(c), unsure, float(z)
        self.leaf, self.mean = int(leaf), int(mean)
        self.confirm, self.race = int(confirm), int(race)
        self.improve = float(improve)

    def reseed(self, seed) -> None:
        super().reseed(seed)
        self.base.reseed(int(self.rng.integers(2**62)))

    def _act(self, obs, mask):
        raise ValueError(
            "search plays from the public view of the game: call act_view(obs, mask, view) with "
            "zhuoji_env.belief.public_view(state, games), or play it through the arena, "
            "agents.play or an environment"
        )

    def act_view(self, obs, mask, view: belief.PublicView) -> np.ndarray:
        """Actions ``[k]`` for observations ``[k, OBS_SIZE]``, masks ``[k, 86]`` and the public
        views of the same k games (their acting seats' observations and masks)."""
        return self.act_view_searched(obs, mask, view)[0]

    def act_view_searched(
        self, obs, mask, view: belief.PublicView
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`act_view`'s actions, the rows it searched (int ``[R]``, ascending: the
        decisions whose action came from rollouts, which expert iteration learns from,
        :mod:`training.distill_search`) and BASE's favourite at each (int ``[R]``, the
        candidate the search played unless another beat it)."""
        if not isinstance(view, belief.PublicView):
            raise TypeError(
                f"act_view takes the games' PublicView (belief.public_view(state, games)), got "
                f"{type(view).__name__}"
            )
        obs = np.asarray(obs, dtype=np.float32)
        mask = as_mask(mask)
        if obs.ndim != 2 or mask.ndim != 2 or view.batch_size != obs.shape[0]:
            raise ValueError(
                f"act_view takes obs [k, OBS_SIZE], masks [k, 86] and the views of the same k "
                f"games, got obs {obs.shape}, masks {mask.shape} and {view.batch_size} views"
            )
        if not np.array_equal(view.state.mask, mask):
            raise ValueError("the views are not of the games being decided: their masks differ")
        acts = np.asarray(self.base.act(obs, mask), dtype=np.int64)
        search, probs = self.to_search(obs, mask)
        rows = np.flatnonzero(search)
        if not rows.size:
            return acts, rows, rows
        if probs is None:
            probs = ranking_probs(self.base, obs[rows], mask[rows])
        else:
            probs = probs[rows]
        cand = self.candidates(obs[rows], mask[rows], probs)
        acts[rows] = cand[np.arange(rows.size), self.pick(view, obs, rows, cand)]
        return acts, rows, cand[:, 0]

    def pick(self, view, obs, rows, cand) -> np.ndarray:
        """int ``[R]``: which of the candidates ``cand`` (``[R, c]``, BASE's favourite first)
        to play at decisions ``rows`` of the views: :meth:`choose` on ``k`` deals; with
        ``race``, a close call between the two best means is decided again on their pooled
        scores with ``race`` fresh deals more (:meth:`raced`); and where that overrules the
        favourite and ``confirm`` is set, again on ``confirm`` fresh deals with the two of them
        alone."""
        scores = self.searched(view, obs, rows, cand, self.k)
        pick = self.choose(scores, cand)
        if self.race:
            pick = self.raced(view, obs, rows, cand, scores, pick)
        if self.confirm:
            again = np.flatnonzero(pick)
            pair = np.stack([cand[again, 0], cand[again, pick[again]]], axis=1)
            kept = self.choose(self.searched(view, obs, rows[again], pair, self.confirm), pair)
            pick[again[kept == 0]] = 0
        return pick

    def raced(self, view, obs, rows, cand, scores, pick) -> np.ndarray:
        """``pick`` (best means, ``z=0``) with its close calls raced: where the best mean beats
        the runner-up by less than :data:`RACE_SE` standard errors of their paired difference,
        both are played out from ``race`` fresh deals and the better mean over all their deals
        (``k + race``) is played (a tie keeps the first stage's leader)."""
        mean = np.where(distinct(cand), scores.mean(1), -np.inf)
        second = np.where(np.arange(cand.shape[1]) == pick[:, None], -np.inf, mean).argmax(1)
        lead, se = paired(scores, pick, second)
        runner_up = np.take_along_axis(mean, second[:, None], 1)[:, 0]
        close = np.flatnonzero(np.isfinite(runner_up) & (lead < RACE_SE * se))
        if not close.size:
            return pick
        both = np.stack([pick[close], second[close]], axis=1)  # columns of cand
        pair = np.take_along_axis(cand[close], both, 1)
        more = self.searched(view, obs, rows[close], pair, self.race)  # [n, race, 2]
        total = np.take_along_axis(scores[close].sum(1), both, 1) + more.sum(1)
        out = pick.copy()
        out[close] = np.where(total[:, 1] > total[:, 0], second[close], pick[close])
        return out

    def searched(self, view, obs, rows, cand, k: int) -> np.ndarray:
        """float64 ``[R, k, c]``: :meth:`evaluate`'s scores of ``cand`` (``[R, c]``) at
        decisions ``rows``, each on ``k`` deals, the rows in groups of at most
        :data:`ROLLOUT_BATCH` rollout games."""
        scores = np.empty((rows.size, k, cand.shape[1]))
        for part in rollout_groups(cand, k):
            scores[part] = self.evaluate(view.take(rows[part]), obs[rows[part]], cand[part], k)
        return scores

    def to_search(self, obs, mask) -> tuple[np.ndarray, np.ndarray | None]:
        """``(bool [k], probs)``: the decisions to search (more than one legal action and, with
        ``unsure`` and a BASE with probabilities, BASE unsure), and BASE's probabilities if they
        were needed for that (else None)."""
        search = mask.sum(1) > 1
        if self.unsure is None or not hasattr(self.base, "policy"):
            return search, None
        probs = ranking_probs(self.base, obs, mask)
        return search & (probs.max(1) < self.unsure), probs

    def candidates(self, obs, mask, probs) -> np.ndarray:
        """int ``[R, c]``: the c most likely legal actions of each row (by probability, then
        ``rule``'s advice, then at random), most likely first; rows with fewer legal actions
        repeat their first."""
        pref = _preference(self.base, obs, mask)
        noise = self.rng.random(mask.shape)
        order = np.lexsort((noise, -pref, -np.where(mask, probs, -1.0)), axis=1)
        c = min(self.c, mask.shape[1])
        cand = order[:, :c]
        legal = mask.sum(1, keepdims=True)
        return np.where(np.arange(c)[None] < legal, cand, cand[:, :1])

    def evaluate(
        self, view: belief.PublicView, obs: np.ndarray, cand: np.ndarray, k: int | None = None
    ) -> np.ndarray:
        """float64 ``[R, k, c]``: the seat's score in points with each candidate on each of
        ``k`` (default the agent's) sampled deals. A candidate that repeats the row's first
        (fewer legal actions than c) is not played out: its scores are the first's."""
        k = k or self.k
        return self.score(belief.sample(self.rules, view, k, self.rng, self.improve), obs, cand, k)

    def score(self, deals: State, obs: np.ndarray, cand: np.ndarray, k: int) -> np.ndarray:
        """:meth:`evaluate` on given ``deals`` (``k`` per row of ``cand``, rows ``i*k + j``):
        the seat's score with each candidate, float64 ``[R, k, c]``."""
        r = cand.shape[0]
        if deals.batch_size != r * k:
            raise ValueError(
                f"score takes k={k} deals for each of {r} decisions, got {deals.batch_size}"
            )
        keep = distinct(cand)
        n = keep.sum(1)  # candidates played out per row, the distinct ones first in ``order``
        order = np.argsort(~keep, axis=1, kind="stable")
        deal = np.repeat(np.arange(r * k), np.repeat(n, k))  # each deal once per candidate
        start = np.repeat(np.cumsum(np.repeat(n, k)) - np.repeat(n, k), np.repeat(n, k))
        col = order[deal // k, np.arange(deal.size) - start]
        st = deals.take(deal)
        seat = st.actor.astype(np.int64)
        core.step(self.rules, st, cand[deal // k, col])
        match = obs[:, _MATCH_COLS][deal // k]
        got = rollout(self.rules, self.base, st, match, deal, self.rng, seat, self.leaf, self.mean)
        scores = np.empty((r, k, cand.shape[1]))
        scores[deal // k, deal % k, col] = got
        return np.where(keep[:, None, :], scores, scores[:, :, :1])

    def choose(self, scores: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """int ``[R]``: which candidate to play, given the scores of :meth:`evaluate`: the best
        mean, where it beats BASE's favourite (candidate 0) by more than ``z`` standard errors
        of their paired difference over the deals; else the favourite. A repeated candidate
        (a row with fewer legal actions than c) is never chosen. With ``k=1``, or differences
        equal on every deal, the standard error is 0 and any gain overrules the favourite."""
        best = np.where(distinct(cand), scores.mean(1), -np.inf).argmax(1)
        gain, se = paired(scores, best, np.zeros_like(best))
        return np.where((gain > 0) & (gain > self.z * se), best, 0)

    def __repr__(self) -> str:
        return (
            f"SearchAgent({self.base!r}, k={self.k}, c={self.c}, unsure={self.unsure}, z={self.z}, "
            f"leaf={self.leaf}, mean={self.mean}, confirm={self.confirm}, race={self.race}, "
            f"improve={self.improve})"
        )


def parse_spec(arg: str) -> tuple[str, dict]:
    """``BASE[:OPTION=VALUE]...`` -> ``(BASE, options)``, the options peeled off
    the end; a trailing option name without ``=VALUE`` is refused. A part whose name is no
    identifier or whose value holds a ``/`` or ``\\`` is a path, part of BASE
    (``search:ppo:lr=3e-4/latest.pt``)."""
    opts: dict = {}
    base = arg
    while base:
        head, _, last = base.rpartition(":")
        name, eq, value = last.partition("=")
        if eq and (not name.isidentifier() or "/" in value or "\\" in value):
            break
        if not eq:
            if head and name in DEFAULTS:
                hint = "X (a number)" if name in _REAL else "N"
                raise ValueError(
                    f"search:{arg}: search option {name!r} needs a value: {name}={hint}"
                )
            break
        if name not in DEFAULTS:
            raise ValueError(
                f"search:{arg}: unknown option {name!r}; the options are k=, c=, unsure=, z=, "
                "leaf=, mean=, confirm=, race= and improve= (a checkpoint named NAME=VALUE goes "
                "with its folder: ./NAME=VALUE)"
            )
        if name in opts:
            raise ValueError(f"search:{arg}: option {name}= given more than once")
        try:
            if name == "c" and value == "all":
                opts[name] = _LIMITS["c"][1]
            else:
                opts[name] = float(value) if name in _REAL else int(value)
        except ValueError:
            kind = "a number" if name in _REAL else "an integer"
            kind += " or 'all'" if name == "c" else ""
            raise ValueError(f"search:{arg}: option {name}={value!r} is not {kind}") from None
        base = head
    if not base:
        raise ValueError(f"search:{arg}: no base agent before the options")
    return base, opts


def agent_factory(arg: str | None, seed=None, rules=None, *, make_agent) -> SearchAgent:
    """``search:BASE[:OPTION=VALUE]...``: BASE (any agent spec, made by the
    registry's ``make_agent``) with decision-time search."""
    if not arg:
        raise ValueError(
            "agent 'search' needs a base agent: search:BASE[:OPTION=VALUE]..., "
            "e.g. search:ppo-guiyang or search:rule:k=64"
        )
    base_spec, opts = parse_spec(arg)
    rng = as_generator(seed, "agent seed")  # the agents' seed rules, by name (numpy's: none)
    if isinstance(seed, (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)):
        seed = rng.integers(2**63, size=4)  # the two seeds drawn from it
    elif seed is not None and np.ndim(seed) == 0:
        seed = int(seed)  # a 0-d array, which SeedSequence cannot take (and a numpy integer)
    ss = np.random.SeedSequence(seed)  # None: fresh entropy
    base_seed, own_seed = (int(s.generate_state(1)[0]) for s in ss.spawn(2))
    base = make_agent(base_spec, seed=base_seed, rules=rules)
    return SearchAgent(base, rules=rules, seed=own_seed, **opts)
