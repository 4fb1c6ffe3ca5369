"""The environment version's fingerprint: seeded trajectories hashed, held per version.

An environment version (``zhuoji_env.versions``) stands for one game: the rules engine, the
observation, the action table and the rewards. Seeded trajectories of every preset (batched
self-play by a seeded policy that wins, kongs and pongs: observations v1 and v2, masks,
rewards, records; the AEC environment's rewards, an illegal action's penalty included; the
action table) are hashed and compared with ``tests/data/env_fingerprint.json``. Any change
fails here until the version says so: bump ``ENVIRONMENT_VERSION`` (and the observation
version, for a change to observations), add the CHANGELOG entry, then record the new version's
fingerprint with ``python tests/test_env_fingerprint.py --write``, which adds it and never
replaces a version's.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import warnings
from pathlib import Path

import numpy as np

from zhuoji_env import env as aec_env
from zhuoji_env.engine import actions as A
from zhuoji_env.envs import SelfPlayVecEnv
from zhuoji_env.observation import block, with_features
from zhuoji_env.versions import (
    ENVIRONMENT,
    ENVIRONMENT_VERSION,
    OBSERVATION,
    OBSERVATION_V2,
    RECORD_FORMAT,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "env_fingerprint.json"

CASES = (
    ("guiyang", {"hands_per_game": 2}),
    ("app", {}),
    ("classic", {}),
    ("guiyang", {"num_players": 3}),
)
"""Rules of the trajectories: each preset, a match of two hands, three players."""
GAMES, STEPS, SEED = 8, 300, 20261207
COMPONENTS = ("actions", "observations", "observations_v2", "masks", "rewards", "records")


class Digests:
    """One running sha256 per component."""

    def __init__(self):
        self.sha = {c: hashlib.sha256() for c in COMPONENTS}

    def add(self, component: str, value) -> None:
        if isinstance(value, np.ndarray):
            value = np.ascontiguousarray(value)
            head = f"{value.dtype.newbyteorder('<').str}{value.shape}".encode()
            self.sha[component].update(head + value.astype(value.dtype.newbyteorder("<")).data)
        else:
            self.sha[component].update(json.dumps(value, sort_keys=True).encode())

    def hexdigests(self) -> dict[str, str]:
        return {c: h.hexdigest() for c, h in self.sha.items()}


def play(rng: np.random.Generator, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """An action per row that makes hands end in wins, kongs and chickens (uniformly random
    play ends nearly every hand in a draw, which would leave the settlement unfingerprinted):
    a win, else 报听, a kong, a pong, else a random discard among the observation's
    ``best_discard`` kinds, else any legal action at random."""
    draw = rng.random(masks.shape)
    actions = np.argmax(draw * masks, axis=1)
    best = (block(obs, "best_discard") > 0) & masks[:, : A.ANGANG]
    actions = np.where(best.any(1), np.argmax(draw[:, : A.ANGANG] * best, axis=1), actions)
    kongs = masks[:, A.ANGANG : A.PONG]
    actions = np.where(kongs.any(1), A.ANGANG + np.argmax(kongs, axis=1), actions)
    for a in (A.PONG, A.KONG, A.BAOTING, A.HU):
        actions = np.where(masks[:, a], a, actions)
    return actions


def self_play(digests: Digests, preset: str, switches: dict, seed: int) -> None:
    env = SelfPlayVecEnv(GAMES, preset, seed=seed, keep_records=True, **switches)
    rng = np.random.default_rng(seed)
    obs, masks, seats = env.reset()
    for _ in range(STEPS):
        digests.add("observations", obs)
        digests.add("observations_v2", with_features(obs, env.rules.pattern_table))
        digests.add("masks", masks)
        digests.add("masks", seats.astype(np.int64))
        obs, masks, seats, rewards, dones, infos = env.step(play(rng, obs, masks))
        digests.add("rewards", rewards.astype(np.float64))
        digests.add("rewards", dones)
        for game, record in infos["records"]:
            digests.add("records", [game, {k: v for k, v in record.items() if k != "versions"}])


def aec_rewards(digests: Digests, preset: str, switches: dict, seed: int) -> None:
    """The AEC environment's rewards in two matches, the second ended by an illegal action."""
    rng = np.random.default_rng(seed)
    env = aec_env(rules=preset, **switches)
    for match in range(2):
        env.reset(seed=seed + match)
        for turn, agent in enumerate(env.agent_iter()):
            obs, reward, term, trunc, _ = env.last()
            digests.add("rewards", [agent, reward])
            if term or trunc:
                env.step(None)
                continue
            mask = obs["action_mask"].astype(bool)
            if match == 1 and turn == 40:  # illegal: the penalty ends the match (one warning)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    env.step(int(np.flatnonzero(~mask)[0]))
            else:
                env.step(int(play(rng, obs["observation"][None], mask[None])[0]))


def fingerprint() -> dict[str, str]:
    """The hashes of this checkout's trajectories, one per component."""
    digests = Digests()
    digests.add("actions", [A.describe(a) for a in range(A.NUM_ACTIONS)])
    for i, (preset, switches) in enumerate(CASES):
        self_play(digests, preset, switches, SEED + i)
        aec_rewards(digests, preset, switches, SEED + i)
    return digests.hexdigests()


def held() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def names() -> dict[str, str]:
    """The formats the current environment version names beside its hashes."""
    return {
        "observation": OBSERVATION,
        "observation_v2": OBSERVATION_V2,
        "record_format": RECORD_FORMAT,
    }


BUMP = (
    "bump ENVIRONMENT_VERSION in zhuoji_env/versions.py (for a change to observations, the "
    "observation version there too, so that networks trained on the old encoding are refused), "
    "add the new version's entry to CHANGELOG.md, then record its fingerprint with "
    "`python tests/test_env_fingerprint.py --write`"
)


def test_the_current_environment_version_has_a_fingerprint():
    assert ENVIRONMENT in held(), (
        f"environment {ENVIRONMENT} has no fingerprint in {DATA.name}: record it with "
        "`python tests/test_env_fingerprint.py --write`"
    )
    said = held()[ENVIRONMENT]
    now = names()
    assert {k: said[k] for k in now} == now, (
        f"{ENVIRONMENT}'s fingerprint was recorded with {said}, the package now says {now}: {BUMP}"
    )


def test_seeded_trajectories_match_the_environment_version():
    """Any change to the rules, the observations (v1 or v2), the action table, the rewards or
    the records of seeded play fails, naming what changed and what to do."""
    want = held()[ENVIRONMENT]["hashes"]
    got = fingerprint()
    changed = [c for c in COMPONENTS if got[c] != want.get(c)]
    assert not changed, (
        f"the seeded trajectories of environment {ENVIRONMENT} changed ({', '.join(changed)}): "
        f"results made under {ENVIRONMENT} no longer describe this game. If the change is meant, "
        f"{BUMP}; if not, undo it"
    )


def test_observations_never_change_under_one_observation_version():
    """Across the versions held, two whose observations differ have different observation
    versions: a network's checkpoint names the observation version it reads."""
    versions = sorted(held().items(), key=lambda kv: int(kv[0].rpartition("v")[2]))
    for (old, a), (new, b) in zip(versions, versions[1:], strict=False):
        for hashed, named in (
            ("observations", "observation"),
            ("observations_v2", "observation_v2"),
        ):
            if a["hashes"][hashed] != b["hashes"][hashed]:
                assert a[named] != b[named], (
                    f"{old} and {new} encode {hashed} differently under one name {a[named]!r}: "
                    "give the new encoding a new observation version in zhuoji_env/versions.py"
                )


def test_the_changelog_has_the_package_and_environment_versions():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    version = project_version()
    assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M), (
        f"CHANGELOG.md has no section '## [{version}] - YYYY-MM-DD' for pyproject's version"
    )
    assert f"`{ENVIRONMENT}`" in text, f"CHANGELOG.md never names environment {ENVIRONMENT}"
    assert ENVIRONMENT == f"zhuoji_v{ENVIRONMENT_VERSION}"


def project_version() -> str:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]


def write() -> int:
    """Add the current environment version's fingerprint; never replace one already held."""
    data = held() if DATA.exists() else {}
    new = {**names(), "hashes": fingerprint()}
    if ENVIRONMENT in data:
        if data[ENVIRONMENT] == new:
            print(f"{DATA}: {ENVIRONMENT}'s fingerprint is already there, unchanged")
            return 0
        print(
            f"{DATA}: {ENVIRONMENT} has a fingerprint, and this checkout's trajectories differ "
            f"from it; a version's fingerprint is never replaced: {BUMP.split(', then')[0]}",
            file=sys.stderr,
        )
        return 2
    data[ENVIRONMENT] = new
    DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{DATA}: recorded {ENVIRONMENT}'s fingerprint")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        print("usage: python tests/test_env_fingerprint.py --write", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(write())
