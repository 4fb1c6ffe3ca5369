"""The agent interface and observation helpers shared by the baseline agents.

Every agent maps observations to actions with one batched call::

    actions = agent.act(obs, mask)   # obs float32 [k, OBS_SIZE], mask bool [k, 86] -> int [k]
    action = agent.act(obs1, mask1)  # obs float32 [OBS_SIZE], mask bool [86] -> int

An agent sees only the observation (``zhuoji_env.observation``; it holds no hidden
information) and the mask; it never reads engine state. Agents hold no per-game memory, so one
agent object can play any number of games and seats at once. Agents that use randomness draw
from ``self.rng``, a ``numpy.random.Generator`` made from the seed given at construction;
:meth:`Agent.reseed` replaces it (the arena reseeds per chunk of games so that results do not
depend on how games are split between processes).

Importing it refuses an ``agents`` or ``training`` package that another distribution's files
share (:func:`zhuoji_env.distribution.check_packages`): every module of ``agents`` and
``training`` imports this one.
"""

from __future__ import annotations

import numpy as np

from zhuoji_env.belief import public_view
from zhuoji_env.distribution import check_packages
from zhuoji_env.engine import actions as A
from zhuoji_env.engine.game import as_generator
from zhuoji_env.engine.state import BAOTING_DISCARD, RESPONSE, ROB, TURN, State
from zhuoji_env.envs.common import as_mask
from zhuoji_env.observation import OBS_SIZE, block, seen_kinds
from zhuoji_env.tiles import NUM_KINDS
from zhuoji_env.view import PROBS_SUM_TOLERANCE

check_packages()

DEVICES = ("auto", "cpu", "cuda")
"""Where a policy network runs: ``auto`` is CUDA when torch sees it, else the CPU (the
``:DEVICE`` option of checkpoint agents, and the arena's and ladder's ``--device``)."""

# the observation's phase block is one-hot in the engine's phase codes
P_TURN, P_RESPONSE, P_ROB, P_BAOTING = TURN, RESPONSE, ROB, BAOTING_DISCARD


class Agent:
    """Base class: validates and batches input, then calls ``_act`` on ``[k, ...]`` arrays.

    An agent with ``needs_view = True`` (``search:BASE``) decides from the public view of the
    game as well (:mod:`zhuoji_env.belief`: what the seat knows, nothing hidden) through
    ``act_view(obs, mask, view)``; :func:`decide` gives it that view.
    """

    name = "agent"
    needs_view = False

    def __init__(self, seed=None):
        self.rng = as_generator(seed, "agent seed")

    def reseed(self, seed) -> None:
        """Replace the random generator (``seed`` as for
        :func:`~zhuoji_env.engine.game.as_generator`)."""
        self.rng = as_generator(seed, "agent seed")

    def act(self, obs, mask):
        """Actions for observations ``[k, OBS_SIZE]`` and masks ``[k, 86]`` (or single rows):
        finite observations whose hand block holds counts 0-4, masks of bools or of 0/1."""
        obs = np.asarray(obs)
        if obs.dtype.kind not in "biuf":
            raise ValueError(f"obs must be a real-valued array, got dtype {obs.dtype}")
        obs = obs.astype(np.float32, copy=False)
        mask = as_mask(mask)
        single = obs.ndim == 1
        if single:
            obs, mask = obs[None], mask[None]
        if obs.ndim != 2 or obs.shape[1] != OBS_SIZE:
            raise ValueError(
                f"obs must have shape [k, {OBS_SIZE}] or [{OBS_SIZE}], got {obs.shape}"
            )
        if mask.shape != (obs.shape[0], A.NUM_ACTIONS):
            raise ValueError(
                f"mask must have shape [{obs.shape[0]}, {A.NUM_ACTIONS}] to match obs, "
                f"got {mask.shape}"
            )
        if not np.isfinite(obs).all():
            raise ValueError("obs holds NaN or infinite values: not an observation")
        hand = block(obs, "hand")
        if ((hand != np.rint(hand)) | (hand < 0) | (hand > 4)).any():
            raise ValueError(
                "obs's hand block must hold tile counts 0-4 (zhuoji_env.observation): "
                "not an observation of this environment"
            )
        if obs.shape[0] and not mask.any(-1).all():
            raise ValueError("every mask row needs at least one legal action")
        if obs.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        out = checked_actions(self, self._act(obs, mask), mask)
        return int(out[0]) if single else out

    def _act(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def check_device_name(device, allow_none: bool = False) -> str | None:
    """``device`` if it is one of :data:`DEVICES` (or None, where ``allow_none``), else
    ``ValueError``."""
    if device is None and allow_none:
        return None
    if not isinstance(device, str) or device not in DEVICES:
        either = "None or " if allow_none else ""
        raise ValueError(f"device {device!r}: must be {either}one of {', '.join(DEVICES)}")
    return device


def add_note(exc: BaseException, text: str) -> None:
    """``exc.add_note(text)`` (Python 3.11+). Python 3.10 has no notes: there the text joins
    the message of an exception whose first argument is a string, so that it is still shown."""
    if hasattr(exc, "add_note"):
        exc.add_note(text)
    elif exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]} ({text})", *exc.args[1:])


AGENT_METHODS = ("act", "reseed")
"""What every agent offers: ``act(obs, mask)`` and ``reseed(seed)`` (the arena reseeds it per
chunk of deals)."""


def missing_methods(agent) -> list[str]:
    """The :data:`AGENT_METHODS` that ``agent`` lacks (not callable): ``[]`` for an agent."""
    return [m for m in AGENT_METHODS if not callable(getattr(agent, m, None))]


def agent_label(agent) -> str:
    """How errors name ``agent``: the spec :func:`agents.make_agent` made it from, else its
    repr."""
    spec = getattr(agent, "spec", None)
    return repr(spec) if isinstance(spec, str) else repr(agent)


class AgentActionError(ValueError):
    """An agent returned actions that are not ``k`` legal integers (:func:`checked_actions`)."""


def checked_actions(agent, actions, mask: np.ndarray) -> np.ndarray:
    """``actions`` as int64 ``[k]`` if they are ``k`` integers, each legal under ``mask``
    ``[k, 86]``; otherwise :class:`AgentActionError` naming ``agent`` and what it returned
    (a float action is not rounded, an illegal one not replaced)."""
    out = np.asarray(actions)
    k = mask.shape[0]
    name = agent_label(agent)
    if out.shape != (k,) or not (out.dtype.kind in "iu" or (k == 0 and out.dtype.kind == "f")):
        raise AgentActionError(
            f"agent {name} returned actions of shape {out.shape} and dtype {out.dtype}: "
            f"expected {k} integer actions, one per mask row"
        )
    out = out.astype(np.int64, copy=False)
    bad = ~A.is_legal(mask, out)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise AgentActionError(
            f"agent {name} returned the illegal action {int(out[row])} in row {row}; legal "
            f"there: {np.flatnonzero(mask[row]).tolist()}"
        )
    return out


def decide(agent, obs: np.ndarray, mask: np.ndarray, st: State, g: np.ndarray) -> np.ndarray:
    """``agent``'s actions for games ``g`` of ``st`` (``obs`` and ``mask`` are those games' acting
    seats' observations and masks): ``act``, or ``act_view`` with the public view of the games
    for an agent that ``needs_view``; checked (:func:`checked_actions`) where ``Agent.act`` has
    not already checked them. An exception the agent raises carries a note naming it."""
    view = public_view(st, g) if getattr(agent, "needs_view", False) else None
    try:
        if view is not None:
            return checked_actions(agent, agent.act_view(obs, mask, view), mask)
        actions = agent.act(obs, mask)
    except AgentActionError:
        raise
    except Exception as exc:
        add_note(exc, f"raised by agent {agent_label(agent)} deciding {len(g)} game(s)")
        raise
    return actions if isinstance(agent, Agent) else checked_actions(agent, actions, mask)


def policy_outputs(agent: Agent, obs: np.ndarray, mask: np.ndarray):
    """``(probs [k, 86], value [k])`` of an agent with a policy, else ``None``: one that offers
    ``policy(obs, mask) -> (probs [k, 86], value [k])`` (the PPO agents; ``agents.analysis``
    and the web app's hints read it), the value NaN where it has none;
    ``ValueError`` naming the agent where a row's legal actions' probabilities do not sum to 1
    (within :data:`zhuoji_env.view.PROBS_SUM_TOLERANCE`, as the viewer reads them)."""
    if not hasattr(agent, "policy"):
        return None
    probs, value = agent.policy(obs, mask)
    probs = np.asarray(probs, dtype=np.float64)
    total = np.where(mask, probs, 0.0).sum(-1)
    bad = np.flatnonzero(~(np.abs(total - 1) <= PROBS_SUM_TOLERANCE))
    if bad.size:
        raise ValueError(
            f"agent {agent_label(agent)}'s policy(): the probabilities of row {int(bad[0])}'s "
            f"legal actions sum to {total[bad[0]]:.4g}, not 1 (a policy gives each decision a "
            "distribution over its legal actions)"
        )
    return probs, np.asarray(value, dtype=np.float64)


# --------------------------------------------------------------------------- decoding helpers
_MELD_TILES = 3  # tiles per pong


def counts(obs: np.ndarray, name: str) -> np.ndarray:
    """A block as int16 (counts and flags)."""
    return np.rint(block(obs, name)).astype(np.int16)


def phase(obs: np.ndarray) -> np.ndarray:
    """int ``[k]``: P_TURN, P_RESPONSE, P_ROB or P_BAOTING."""
    return block(obs, "phase").argmax(-1)


def decision_tile(obs: np.ndarray) -> np.ndarray:
    """int ``[k]``: the discard (or bugang tile) being decided on, -1 outside a window."""
    t = block(obs, "tile")
    return np.where(t.any(-1), t.argmax(-1), -1)


def own_melds(obs: np.ndarray):
    """``(meld_tiles [k,27], n_melds [k], n_kongs [k])`` of the observer's melds."""
    pong = counts(obs, "pong")[:, 0]
    exposed = counts(obs, "kong_exposed")[:, 0]
    concealed = counts(obs, "kong_concealed_own")
    mt = _MELD_TILES * pong + 4 * (exposed + concealed)
    kongs = exposed.sum(-1) + concealed.sum(-1)
    return mt, pong.sum(-1) + kongs, kongs


def visible_counts(obs: np.ndarray) -> np.ndarray:
    """int ``[k,27]``: copies of each kind the observer can see
    (:func:`zhuoji_env.observation.seen_kinds`: own hand and kongs, every seat's pongs and
    exposed kongs, every discard still lying in a river, a rob window's added tile)."""
    return seen_kinds(obs)


def live_counts(obs: np.ndarray) -> np.ndarray:
    """int ``[k,27]``: copies of each kind not visible to the observer (still drawable, or in
    other hands)."""
    return np.clip(4 - visible_counts(obs), 0, 4)


EYE = np.eye(NUM_KINDS, dtype=np.int16)
