"""The versions a result is made under: the package's and the environment's.

**The package** (``zhuoji-env``) has a semantic version, ``zhuoji_env.__version__``, read from the
installed distribution's metadata (the ``version`` of ``pyproject.toml`` at install time; an
editable install reads it again when reinstalled). Code run from a checkout that was never
installed has no metadata: its version is :data:`UNKNOWN`, ``"0+unknown"``, which PEP 440 sorts
below every release, so a file stamped with it says plainly that its code had no release.

**The environment** has one version, :data:`ENVIRONMENT_VERSION`, for everything that decides
what an agent sees, may do and is paid (:data:`COVERS`): the rules engine (play and settlement
of RULES.md under every preset and switch), the observation encoding, the action table and the
rewards. Any change to one of them that changes a trajectory is a new environment version, with
a CHANGELOG entry; ``tests/test_env_fingerprint.py`` holds seeded trajectories of the current
version and fails on any change until the version says so. The version names:

- :data:`ENVIRONMENT`, ``zhuoji_v1``: the PettingZoo AEC environment's ``metadata["name"]`` and
  module (``from zhuoji_env import zhuoji_v1``), as PettingZoo's classic environments are named;
- :data:`GYMNASIUM_IDS`: the registered single-agent ids, one per rule preset
  (``zhuoji_env/Guiyang-v1``, ``zhuoji_env/App-v1``, ``zhuoji_env/Classic-v1``);
- :data:`OBSERVATION` (``zhuoji-obs-v1``, what the environments emit) and
  :data:`OBSERVATION_V2` (v1 and blocks derived from it), the versions a policy network's
  checkpoint names: a change to the encoding is a new observation version as well, so that
  networks trained on the old one are refused rather than fed inputs they misread;
- :data:`RECORD_FORMAT` (``zhuoji-record-1``), the game record format of RULES.md 10.

:func:`stamp` is what records, arena and ladder JSON, checkpoints and shipped policies carry:
``{"zhuoji_env": package version, "environment": "zhuoji_v1"}``.
"""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "zhuoji-env"
UNKNOWN = "0+unknown"
"""The package version where no installed metadata says it (a checkout never installed)."""


def package_version() -> str:
    """The installed ``zhuoji-env`` distribution's version, else :data:`UNKNOWN`."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return UNKNOWN


__version__ = package_version()

ENVIRONMENT_VERSION = 1
"""The environment's version number: the ``1`` of ``zhuoji_v1`` and of the Gymnasium ids."""
ENVIRONMENT = f"zhuoji_v{ENVIRONMENT_VERSION}"
"""The environment's versioned name, as PettingZoo names its classic environments."""
OBSERVATION = "zhuoji-obs-v1"
"""The observation encoding the environments emit."""
OBSERVATION_V2 = "zhuoji-obs-v2"
"""The v1 observation and the blocks a network derives from it."""
RECORD_FORMAT = "zhuoji-record-1"
"""The game record format of RULES.md section 10."""

COVERS = {
    "rules": "play and settlement of docs/RULES.md under every preset and switch "
    "(zhuoji_env.engine)",
    "observation": f"{OBSERVATION}, and {OBSERVATION_V2} derived from it (zhuoji_env.observation)",
    "actions": "one Discrete(86) table for every decision (zhuoji_env.engine.actions)",
    "rewards": "each seat's settlement of each hand in raw zero-sum points, at the hand's end; "
    "an illegal action under 'penalty' pays -10 plain hands to its actor alone",
}
"""What :data:`ENVIRONMENT_VERSION` versions: a change to any of these is a new version."""

PRESET_IDS = {"guiyang": "Guiyang", "app": "App", "classic": "Classic"}
GYMNASIUM_IDS = {
    f"zhuoji_env/{name}-v{ENVIRONMENT_VERSION}": preset for preset, name in PRESET_IDS.items()
}
"""Registered Gymnasium id -> the rule preset its ``SingleAgentEnv`` plays."""


def stamp() -> dict[str, str]:
    """The versions a file made now states: ``{"zhuoji_env": ..., "environment": ...}``."""
    return {"zhuoji_env": __version__, "environment": ENVIRONMENT}


STAMP_KEYS = ("zhuoji_env", "environment")
"""The keys of a :func:`stamp`, in order."""


def check_stamp(value, where: str) -> dict[str, str]:
    """``value`` as a stamp of :func:`stamp`'s shape (an object of :data:`STAMP_KEYS`, each a
    non-empty string), else ``ValueError`` naming ``where`` and what is allowed."""
    shape = '{"zhuoji_env": PACKAGE_VERSION, "environment": "zhuoji_vN"}'
    if not isinstance(value, dict):
        raise ValueError(f"{where}: 'versions' is {value!r}, expected an object {shape}")
    keys = sorted(value)
    if keys != sorted(STAMP_KEYS) or not all(isinstance(v, str) and v for v in value.values()):
        raise ValueError(
            f"{where}: 'versions' is {value!r}, expected an object {shape} with exactly the "
            f"keys {list(STAMP_KEYS)}, each a non-empty string"
        )
    return value
