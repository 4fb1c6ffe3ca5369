"""What the environments share: spaces, score parts, input checks, illegal actions, opponents.

The AEC environment (``aec``), ``SingleAgentEnv`` (``single``), the vector environments
(``vector``) and ``SB3VecEnv`` (``sb3``) import from here; the text table is in ``render``.

Actions. Every environment, and every opponent's answer, takes an action as an integer: a Python
``int``, a numpy integer scalar or a 0-d integer array (:func:`as_action`). Anything else (a
float, a bool, a string, ``None``, an array of another shape) is a ``TypeError``; an integer
outside 0-85 is a ``ValueError``. The vector environments take one action per game
(:func:`as_actions`): a sequence or array of the wrong length or shape is a ``ValueError``, one
of floats, bools or strings a ``TypeError``. An integer in range that the mask forbids is an
*illegal* action, handled per ``illegal_action``:

- ``"penalty"``: PettingZoo's ``TerminateIllegalWrapper`` convention: the episode ends, the
  offender receives ``illegal_reward`` (default: :func:`illegal_penalty`), a warning is
  logged once per environment, and the info says what happened (``"illegal_action"``,
  ``"legal_actions"``, ``"message"``);
- ``"raise"``: :class:`~zhuoji_env.IllegalActionError` naming the seat, the action and the legal
  actions, with nothing changed.

Opponents. An opponent is what ``agents`` provides: an object whose ``act(obs, mask)`` takes
float32 ``[k, OBS_SIZE]`` observations and bool ``[k, 86]`` masks and returns ``k`` actions
(:func:`opponent_actions` checks the answer). One with ``needs_observation = False`` receives
``obs=None`` (encoding is skipped). One with ``reseed(seed)`` is reseeded from the
environment's generator at every reset. :class:`RandomPolicy` is the uniformly random one
(``agents.RandomAgent`` is this class).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from zhuoji_env.belief import public_view
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.game import BatchGame, as_generator, check_seed, is_integer, is_real
from zhuoji_env.engine.state import State
from zhuoji_env.observation import OBS_SIZE, SLICES, STATE_SIZE, STATE_SLICES
from zhuoji_env.rules import SWITCHES, Rules
from zhuoji_env.tiles import NUM_KINDS, NUM_TILES, parse_tiles

__all__ = [
    "CHICKEN_ITEMS",
    "HAND_ITEMS",
    "ILLEGAL_ACTION_MODES",
    "KONG_ITEMS",
    "OpponentFailure",
    "RandomPolicy",
    "as_action",
    "as_actions",
    "as_mask",
    "check_illegal_mode",
    "check_num_envs",
    "check_opponent",
    "check_options",
    "check_reset_options",
    "check_reward",
    "check_seat",
    "check_seed",
    "dealer_rows",
    "env_rules",
    "illegal_penalty",
    "hand_info",
    "illegal_info",
    "illegal_message",
    "match_game",
    "observation_box",
    "opponent_actions",
    "score_parts",
    "state_box",
    "wall_rows",
    "warn_illegal",
]

HAND_ITEMS = ("hu", "rerpao", "baopai", "chajiao")
"""The ledger items (RULES.md 7) of a score's ``hand`` part."""
KONG_ITEMS = ("dou_an", "dou_bu", "dou_ming")
"""The ledger items of a score's ``kong`` part (beans)."""
CHICKEN_ITEMS = ("chicken", "chongfeng", "zeren", "bao_ji")
"""The ledger items of a score's ``chicken`` part."""
_PARTS = {"hand": HAND_ITEMS, "kong": KONG_ITEMS, "chicken": CHICKEN_ITEMS}
ILLEGAL_ACTION_MODES = ("penalty", "raise")
"""What ``illegal_action`` may be: ``"penalty"`` ends the episode with a penalty, ``"raise"``
raises :class:`~zhuoji_env.engine.core.IllegalActionError`."""
_PHASES = ("turn", "response window", "rob window", "报听 discard", "over")


# --------------------------------------------------------------------------- spaces
def observation_box(rules: Rules) -> spaces.Box:
    """The exact per-element bounds of ``observation.encode`` under ``rules``."""
    low = np.zeros(OBS_SIZE, dtype=np.float32)
    high = np.ones(OBS_SIZE, dtype=np.float32)
    _fill_bounds(low, high, SLICES, rules)
    return spaces.Box(low, high, dtype=np.float32)


def state_box(rules: Rules) -> spaces.Box:
    """The exact per-element bounds of ``observation.encode_state`` under ``rules``."""
    low = np.zeros(STATE_SIZE, dtype=np.float32)
    high = np.ones(STATE_SIZE, dtype=np.float32)
    _fill_bounds(low, high, STATE_SLICES, rules)
    for name in ("all_hands", "live_wall"):
        high[STATE_SLICES[name]] = 4
    return spaces.Box(low, high, dtype=np.float32)


def _fill_bounds(low, high, sl, rules: Rules) -> None:
    for name in ("hand", "kong_counts", "river"):
        high[sl[name]] = 4
    high[sl["streak"]] = rules.hands_per_game / 10  # the streak is below the hands played
    low[sl["scores"]] = -np.inf
    high[sl["scores"]] = np.inf


# --------------------------------------------------------------------------- hand results
def score_parts(result: Mapping[str, Any], seat: int) -> dict[str, int]:
    """A seat's score for a hand split into ``hand``, ``kong`` and ``chicken`` parts.

    Each part is what the seat received minus what it paid on the ledger items of that part
    (:data:`HAND_ITEMS`, :data:`KONG_ITEMS`, :data:`CHICKEN_ITEMS`); they sum to its delta.
    """
    out = dict.fromkeys(_PARTS, 0)
    for payer, payee, amount, item in result["ledger"]:
        for part, items in _PARTS.items():
            if item in items:
                out[part] += int(amount) * ((payee == seat) - (payer == seat))
    return out


def hand_info(result: Mapping[str, Any], seat: int, hand_no: int, score: int) -> dict[str, Any]:
    """The info of a seat for a hand that ended: its number in the match, the seat's score and
    its :func:`score_parts`, and the hand's result (a copy)."""
    return {
        "hand_no": hand_no,
        "score": score,
        **score_parts(result, seat),
        "result": copy.deepcopy(result),
    }


def match_game(game: BatchGame | None, rules: Rules, seed: int) -> BatchGame:
    """The one-game :class:`BatchGame` of an environment, on a new match (made on first use)."""
    if game is None:
        return BatchGame(rules, 1, seed=seed, auto_reset=False, keep_records=True)
    game.reset(seed)
    return game


# --------------------------------------------------------------------------- input checks
def env_rules(owner: type, rules, switches: Mapping[str, Any], name: str | None = None) -> Rules:
    """``Rules.make(rules, **switches)`` for the constructor of ``owner`` (called ``name`` in
    messages, default its class name), whose extra keywords are rule switches: a keyword that is
    neither an argument of ``owner`` nor a switch is refused naming both lists."""
    unknown = sorted(set(switches) - set(SWITCHES))
    if unknown:
        name = name or owner.__name__
        params = inspect.signature(owner).parameters.values()
        own = [p.name for p in params if p.kind is not p.VAR_KEYWORD]
        raise ValueError(
            f"{name}: unknown keyword {unknown[0]!r}: neither an argument of {name} "
            f"({', '.join(own)}) nor a rule switch ({', '.join(SWITCHES)})"
        )
    return Rules.make(rules, **switches)


def as_action(action, who: str = "action") -> int:
    """``action`` as an int 0-85: an integer-like value is taken as that integer; anything else
    is a ``TypeError``, an integer out of range a ``ValueError`` (both name what was given)."""
    if not is_integer(action):
        shape = f" of shape {action.shape}" if isinstance(action, np.ndarray) else ""
        raise TypeError(
            f"{who} must be an integer 0-{A.NUM_ACTIONS - 1} (int, numpy integer or 0-d integer "
            f"array), got {action!r} ({type(action).__name__}{shape})"
        )
    a = int(action)
    if not 0 <= a < A.NUM_ACTIONS:
        raise ValueError(f"{who} must be an integer 0-{A.NUM_ACTIONS - 1}, got {a}")
    return a


def as_actions(actions, k: int, who: str) -> np.ndarray:
    """int64 ``[k]``: ``k`` actions given as a sequence or array of integers (each checked as
    by :func:`as_action`; a ``[k, 1]`` column, what SB3 may pass, is accepted)."""
    if actions is None or isinstance(actions, (str, bytes)):
        raise TypeError(f"{who} must be {_n_actions(k)} (integers), got {actions!r}")
    arr = np.asarray(actions)
    if arr.shape == (k, 1):
        arr = arr[:, 0]
    if arr.shape != (k,):
        raise ValueError(f"{who} must be {_n_actions(k)} (shape ({k},)), got shape {arr.shape}")
    if arr.dtype == object:
        return np.array([as_action(x, who) for x in arr], dtype=np.int64)
    if arr.dtype.kind in "iu" and isinstance(actions, (list, tuple)):
        _refuse_bools(actions, who)
    if arr.dtype.kind not in "iu":  # signed or unsigned integers (not bool, float, str)
        raise TypeError(
            f"{who} must be integers 0-{A.NUM_ACTIONS - 1}, got an array of dtype {arr.dtype}: "
            f"{arr.tolist()!r}"
        )
    if k <= 16:  # a few actions: Python's min and max are faster than numpy's reductions
        vals = arr.tolist()
        lo, hi = (min(vals), max(vals)) if k else (0, 0)
    else:
        lo, hi = arr.min(), arr.max()
    if lo < 0 or hi >= A.NUM_ACTIONS:
        j = int(np.flatnonzero((arr < 0) | (arr >= A.NUM_ACTIONS))[0])
        raise ValueError(
            f"{who} must be integers 0-{A.NUM_ACTIONS - 1}, got {int(arr[j])} at index {j}"
        )
    return arr.astype(np.int64, copy=False)


def _refuse_bools(actions, who: str) -> None:
    """A ``TypeError`` (that of :func:`as_action`) for a bool in a list or tuple of actions,
    which ``np.asarray`` would otherwise turn into 0 or 1 next to integers (an integer array or
    tensor holds no bools, and is not looped over)."""
    for j, x in enumerate(np.asarray(actions, dtype=object).reshape(-1)):
        if isinstance(x, (bool, np.bool_)) or (isinstance(x, np.ndarray) and x.dtype == bool):
            as_action(x, f"{who}[{j}]")


def _n_actions(k: int) -> str:
    return "1 action" if k == 1 else f"{k} actions"


def check_seat(name: str, seat, n: int) -> None:
    """A seat option must be a seat 0..n-1 or None."""
    if seat is not None and (not is_integer(seat) or not 0 <= int(seat) < n):
        raise ValueError(f"{name} must be a seat 0-{n - 1} or None, got {seat!r}")


def check_options(render_mode, render_modes, illegal_action: str, tile_style: str) -> None:
    """Validate the options the AEC and single-agent environments share."""
    if render_mode is not None and render_mode not in render_modes:
        raise ValueError(f"render_mode must be None or one of {render_modes}, got {render_mode!r}")
    check_illegal_mode(illegal_action)
    if tile_style not in ("code", "unicode"):
        raise ValueError(f"tile_style must be 'code' or 'unicode', got {tile_style!r}")


def check_illegal_mode(illegal_action: str) -> None:
    """``illegal_action`` must be one of :data:`ILLEGAL_ACTION_MODES`."""
    if illegal_action not in ILLEGAL_ACTION_MODES:
        raise ValueError(f"illegal_action must be 'penalty' or 'raise', got {illegal_action!r}")


def wall_rows(walls, b: int, name: str = "walls") -> np.ndarray:
    """``[b, 108]`` kinds of ``b`` walls, each given as tile codes (one string or a list of
    codes) or as 108 kinds: the ``wall`` and ``walls`` options of ``reset``. Each wall must
    hold each of the 27 kinds four times."""
    if isinstance(walls, (str, bytes)) or not hasattr(walls, "__len__"):
        raise TypeError(f"{name} must be a sequence of {b} walls, got {walls!r}")
    if len(walls) != b:
        raise ValueError(f"{name} must hold {b} walls (one per game), got {len(walls)}")
    rows = np.zeros((b, NUM_TILES), dtype=np.int8)
    for i, w in enumerate(walls):
        where = f"{name}[{i}]" if name == "walls" else name
        if isinstance(w, np.ndarray) and w.dtype.kind == "U":  # numpy strings: tile codes
            w = w.tolist()
        if isinstance(w, str) or (isinstance(w, (list, tuple)) and w and isinstance(w[0], str)):
            try:
                kinds = np.asarray(parse_tiles(w), dtype=np.int64)
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{where}: bad tile codes: {err}") from None
        else:
            kinds = np.asarray(w)
            if kinds.dtype == object or not np.issubdtype(kinds.dtype, np.integer):
                raise TypeError(
                    f"{where} must be 108 tile codes or 108 integer kinds 0-26, got {w!r:.80}"
                )
        if kinds.shape != (NUM_TILES,):
            raise ValueError(f"{where} must hold 108 tiles, got shape {kinds.shape}")
        if kinds.min() < 0 or kinds.max() >= NUM_KINDS:
            raise ValueError(
                f"{where}: tile kinds must be 0-26, got {int(kinds.min())}-{int(kinds.max())}"
            )
        counts = np.bincount(kinds, minlength=NUM_KINDS)
        if (counts != 4).any():
            k = int(np.flatnonzero(counts != 4)[0])
            raise ValueError(
                f"{where} must hold each of the 27 kinds four times; kind {k} appears "
                f"{int(counts[k])} times"
            )
        rows[i] = kinds
    return rows


def dealer_rows(dealers, b: int, n: int, name: str = "dealers") -> np.ndarray:
    """int64 ``[b]``: the ``dealer`` (one seat for every game) or ``dealers`` option."""
    arr = np.asarray(dealers)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must be seats 0-{n - 1} (integers), got {dealers!r}")
    if arr.ndim > 1 or (arr.ndim == 1 and arr.size != b):
        raise ValueError(f"{name} must be one seat or {b} seats, got shape {arr.shape}")
    if ((arr < 0) | (arr >= n)).any():
        raise ValueError(f"{name} must be seats 0-{n - 1}, got {dealers!r}")
    return np.broadcast_to(arr.astype(np.int64), b).copy()


def check_reset_options(
    options, wall_key: str, dealer_key: str, ignored: tuple[str, ...] = ()
) -> dict:
    """``options`` of ``reset`` as a dict: ``None`` or a dict whose keys are ``wall_key`` and
    ``dealer_key`` (the dealer option needs the wall option). Another key is a ``ValueError``
    (a misspelt option would otherwise be dropped unnoticed), except those of ``ignored``."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict or None, got {options!r}")
    unknown = [k for k in options if k not in (wall_key, dealer_key, *ignored)]
    if unknown:
        raise ValueError(
            f"unknown reset option {unknown[0]!r}: the options are {wall_key!r} and {dealer_key!r}"
        )
    if dealer_key in options and wall_key not in options:
        raise ValueError(f"reset option {dealer_key!r} needs {wall_key!r} (the dealt wall)")
    return {k: v for k, v in options.items() if k not in ignored}


def check_reward(value, name: str, positive: bool = False) -> float:
    """``value`` as a float: a finite real number (not a bool), above 0 when ``positive``; a
    non-number is a ``TypeError``, NaN, an infinity or (``positive``) a number <= 0 a
    ``ValueError``, naming the parameter."""
    allowed = "a finite number > 0" if positive else "a finite number"
    if not is_real(value):
        raise TypeError(f"{name} must be {allowed}, got {value!r} ({type(value).__name__})")
    out = float(value)
    if not np.isfinite(out) or (positive and out <= 0):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return out


def check_num_envs(num_envs) -> int:
    """``num_envs`` of a vector environment: an integer >= 1 (numpy integers too), as an int."""
    if not is_integer(num_envs) or int(num_envs) < 1:
        raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    return int(num_envs)


# --------------------------------------------------------------------------- illegal actions
def illegal_penalty(rules: Rules, given=None) -> float:
    """The penalty of ``illegal_action="penalty"``: ``given`` (a finite number), by default ten
    plain hands times ``base_stake``."""
    if given is None:
        return float(-10 * rules.pattern_table["pinghu"] * rules.base_stake)
    return check_reward(given, "illegal_reward")


def illegal_message(who: str, st: State, i: int, action: int) -> str:
    """``who tried action a (name), which is illegal in this <phase>; legal: [...]``."""
    phase = _PHASES[int(st.phase[i])]
    legal = [f"{a} ({A.describe(a)})" for a in np.flatnonzero(st.mask[i])]
    return (
        f"{who} tried action {action} ({A.describe(action)}), which is illegal in this "
        f"{phase}; legal: {legal}"
    )


def illegal_info(st: State, i: int, action: int, message: str) -> dict[str, Any]:
    """What the offender's info holds after an illegal action under ``"penalty"``."""
    return {
        "illegal_action": action,
        "legal_actions": [int(x) for x in np.flatnonzero(st.mask[i])],
        "message": message,
    }


def warn_illegal(env, message: str) -> None:
    """Log the first illegal action an environment meets (PettingZoo logs each one; once is
    enough to tell that a learner ignores the mask without flooding the log)."""
    if not getattr(env, "_warned_illegal", False):
        env._warned_illegal = True
        gymnasium.logger.warn(
            f"illegal action, the episode ends with the penalty (shown once): {message}"
        )


# --------------------------------------------------------------------------- opponents
def check_opponent(policy, name: str = "opponent", rules: Rules | None = None) -> None:
    """An opponent must have ``act(obs, mask)``; a string (an agent's name) is refused, since
    the environments do not import the agents, and so is a class (its ``act`` would be met
    unbound at the first reset). One that holds ``rules`` (``rule``'s hand values, a search
    agent's rollouts) must hold the environment's ``rules`` (``hands_per_game`` aside): it
    would play by others unseen."""
    if isinstance(policy, type):
        raise TypeError(
            f"{name} must be a policy object, got the class {policy.__name__}: pass an instance, "
            f"e.g. {policy.__name__}()"
        )
    if isinstance(policy, str):
        raise TypeError(
            f"{name} must be a policy object with act(obs, mask), got the string {policy!r}: "
            f"pass agents.make_agent({policy!r}) instead (the environments do not import agents)"
        )
    if not callable(getattr(policy, "act", None)):
        raise TypeError(
            f"{name} must have a batched act(obs [k, {OBS_SIZE}], mask [k, {A.NUM_ACTIONS}]) -> "
            f"[k] actions (e.g. an agent of agents.make_agent), got {policy!r}"
        )
    own = getattr(policy, "rules", None)
    if (
        rules is not None
        and isinstance(own, Rules)
        and own.replace(hands_per_game=rules.hands_per_game) != rules
    ):
        raise ValueError(
            f"{name} holds other rules than this environment's (every switch but "
            f"hands_per_game, which plays no hand differently, must match): its "
            f"{own.to_record()}, the environment's {rules.to_record()}; make it with those, "
            "e.g. agents.make_agent(spec, rules=env.rules)"
        )


def opponent_actions(
    policy, obs: np.ndarray | None, mask: np.ndarray, who: str, state: State, games
) -> np.ndarray:
    """int64 ``[k]``: ``policy.act(obs, mask)`` for ``k`` mask rows of games ``games`` of
    ``state``, checked (``k`` integer actions in range; legality is checked by the caller, who
    knows the seats). A policy that ``needs_view`` (``search:BASE``) gets
    ``act_view(obs, mask, view)`` with the public view of those games (nothing hidden)."""
    if getattr(policy, "needs_view", False):
        acts = policy.act_view(obs, mask, public_view(state, games))
    else:
        acts = policy.act(obs, mask)
    return as_actions(acts, mask.shape[0], f"the actions of {who}")


def as_mask(mask) -> np.ndarray:
    """An action mask as bools: given as bools, or as numbers that are all 0 or 1. Anything
    else is refused (``TypeError`` for another dtype, ``ValueError`` for other values): as
    bools, a string mask's ``"False"`` or a 0.5 would count as legal."""
    mask = np.asarray(mask)
    if mask.dtype.kind == "b":
        return mask
    if mask.dtype.kind not in "iuf":
        raise TypeError(f"mask must be bools or the numbers 0 and 1, got dtype {mask.dtype}")
    other = (mask != 0) & (mask != 1)
    if other.any():
        bad = np.unique(mask[other])[:5].tolist()
        raise ValueError(f"mask must be bools or the numbers 0 and 1, got the values {bad}")
    return mask.astype(bool)


class OpponentFailure:
    """Whether an opponent failed inside an environment's step or reset: its error propagates
    unchanged, but the games are left half-stepped (an opponent's seat to act), so every later
    step is refused until reset (the learner's action would be played for that seat)."""

    def __init__(self) -> None:
        self.where: str | None = None

    @contextlib.contextmanager
    def watch(self, where: str):
        """Opponents play inside: an error there is noted (``where``: ``"step()"``, ...)."""
        try:
            yield
        except BaseException as err:
            self.where = f"{type(err).__name__} in the middle of {where}"
            raise

    def check(self) -> None:
        """``RuntimeError`` if an opponent failed since :meth:`clear`."""
        if self.where is not None:
            raise RuntimeError(
                f"an opponent failed ({self.where}), leaving games half-stepped with an "
                f"opponent's seat to act: call reset() before step()"
            )

    def clear(self) -> None:
        """A reset starts afresh."""
        self.where = None


class RandomPolicy:
    """Uniformly random legal actions from its own seeded generator; ``agents.RandomAgent``.

    ``act(obs, mask)`` takes masks ``[k, 86]`` (or one ``[86]``; :func:`as_mask`) and returns
    ``k`` actions (or one int). It ignores the observation, which may be ``None``
    (``needs_observation = False``: environments skip encoding for it); one that is given must
    have the matching shape. ``reseed(seed)`` replaces its generator.
    """

    name = "random"
    needs_observation = False

    def __init__(self, seed=None):
        self.rng = as_generator(seed, "agent seed")

    def reseed(self, seed) -> None:
        """Replace the random generator (``seed`` as for
        :func:`~zhuoji_env.engine.game.as_generator`)."""
        self.rng = as_generator(seed, "agent seed")

    def act(self, obs, mask):
        mask = as_mask(mask)
        single = mask.ndim == 1
        if single:
            mask = mask[None]
        if mask.ndim != 2 or mask.shape[1] != A.NUM_ACTIONS:
            raise ValueError(
                f"mask must have shape [k, {A.NUM_ACTIONS}] or [{A.NUM_ACTIONS}], got {mask.shape}"
            )
        if obs is not None:
            shape = np.shape(obs)
            want = (OBS_SIZE,) if single else (mask.shape[0], OBS_SIZE)
            if shape != want:
                raise ValueError(f"obs must have shape {list(want)} to match the mask, got {shape}")
        if not mask.any(-1).all():
            raise ValueError("every mask row needs at least one legal action")
        out = A.random_legal(self.rng, mask).astype(np.int64)
        return int(out[0]) if single else out

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
