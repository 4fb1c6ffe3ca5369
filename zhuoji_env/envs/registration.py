"""The Gymnasium ids of the single-agent environment, registered when ``zhuoji_env`` is imported.

``gymnasium.make("zhuoji_env/Guiyang-v1")`` (``App-v1``, ``Classic-v1``: the other presets)
makes a :class:`~zhuoji_env.SingleAgentEnv` of that preset, wrapped as Gymnasium wraps every
registered environment (its input checker and order enforcing); keywords are the
environment's (``learner_seat``, ``opponents``, ``render_mode``, ...) and any switch of
RULES.md 9 (``num_players=3``). The preset is the id's: a ``rules`` keyword is refused, as it
would make an id that says one preset play another. Episodes end with the match, so there is
no step limit. ``gymnasium.make_vec(id, num_envs=B)`` runs B of them (Gymnasium's ``sync`` or
``async`` vectorisation); the engine's own batched vector environments, which step B games
in one call, are :class:`~zhuoji_env.SelfPlayVecEnv` and ``SB3VecEnv``. The ids and what their
version covers are in :mod:`zhuoji_env.versions`.
"""

from __future__ import annotations

from typing import Any

import gymnasium

from zhuoji_env.envs.single import SingleAgentEnv
from zhuoji_env.versions import GYMNASIUM_IDS


def make_single(preset: str, **kwargs: Any) -> SingleAgentEnv:
    """The single-agent environment of a registered id: ``SingleAgentEnv(rules=preset, ...)``."""
    if "rules" in kwargs:
        env_id = next(i for i, p in GYMNASIUM_IDS.items() if p == preset)
        raise ValueError(
            f"{env_id} plays the {preset!r} preset: a 'rules' keyword ({kwargs['rules']!r}) is "
            f"refused; make the id of another preset ({', '.join(GYMNASIUM_IDS)}), give switches "
            "as keywords (num_players=3), or build zhuoji_env.SingleAgentEnv(rules=...) directly"
        )
    return SingleAgentEnv(rules=preset, **kwargs)


def _maker(preset: str):
    def make(**kwargs: Any) -> SingleAgentEnv:
        return make_single(preset, **kwargs)

    make.__name__ = make.__qualname__ = f"make_{preset}"
    make.__doc__ = f"``SingleAgentEnv(rules={preset!r}, ...)``: see :func:`make_single`."
    return make


make_guiyang = _maker("guiyang")
make_app = _maker("app")
make_classic = _maker("classic")


def register_envs() -> None:
    """Register every id of :data:`~zhuoji_env.versions.GYMNASIUM_IDS` that Gymnasium does not
    know yet (importing the package twice, or reloading it, registers nothing twice)."""
    for env_id, preset in GYMNASIUM_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point=f"{__name__}:make_{preset}",
                disable_env_checker=False,
            )
