"""The versioned names of the environments: ``zhuoji_env.__version__``, the Gymnasium ids
registered on ``import zhuoji_env`` and PettingZoo's ``from zhuoji_env import zhuoji_v1``."""

from __future__ import annotations

import subprocess
import sys
import warnings
from importlib import metadata

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test
from test_env_fingerprint import project_version

import zhuoji_env
from zhuoji_env import versions, zhuoji_v1
from zhuoji_env.envs.aec import raw_env
from zhuoji_env.envs.single import SingleAgentEnv

IDS = list(versions.GYMNASIUM_IDS)


def test_the_package_version_is_the_installed_metadata_and_says_when_there_is_none(monkeypatch):
    assert zhuoji_env.__version__ == metadata.version("zhuoji-env") == project_version()

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    assert versions.package_version() == versions.UNKNOWN == "0+unknown"


def test_the_ids_are_of_the_environment_version_one_per_preset():
    assert versions.GYMNASIUM_IDS == {
        "zhuoji_env/Guiyang-v1": "guiyang",
        "zhuoji_env/App-v1": "app",
        "zhuoji_env/Classic-v1": "classic",
    }
    assert versions.ENVIRONMENT == f"zhuoji_v{versions.ENVIRONMENT_VERSION}" == "zhuoji_v1"
    for env_id in IDS:
        spec = gymnasium.spec(env_id)
        assert (spec.namespace, spec.version) == ("zhuoji_env", versions.ENVIRONMENT_VERSION)


def test_a_plain_import_registers_the_ids_in_a_fresh_interpreter():
    """Nothing but ``import zhuoji_env`` (and Gymnasium's ``module:id`` form, which imports the
    module itself) makes the ids known."""
    code = (
        "import gymnasium\n"
        "assert 'zhuoji_env/Guiyang-v1' not in gymnasium.registry\n"
        "env = gymnasium.make('zhuoji_env:zhuoji_env/Classic-v1')\n"
        "import zhuoji_env\n"
        "for i in ('zhuoji_env/Guiyang-v1', 'zhuoji_env/App-v1'):\n"
        "    print(gymnasium.make(i).unwrapped.rules.preset)\n"
        "print(env.unwrapped.rules.preset)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["guiyang", "app", "classic"]


@pytest.mark.parametrize("env_id", IDS)
def test_each_id_makes_its_preset_and_passes_gymnasiums_checker(env_id):
    env = gymnasium.make(env_id)
    assert env.spec.id == env_id and isinstance(env.unwrapped, SingleAgentEnv)
    assert env.unwrapped.rules.preset == versions.GYMNASIUM_IDS[env_id]
    assert env.unwrapped.rules.num_players == 4
    three = gymnasium.make(env_id, num_players=3, learner_seat=None)
    assert three.unwrapped.rules.num_players == 3 and three.spec.kwargs == {
        "num_players": 3,
        "learner_seat": None,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env.unwrapped)
        check_env(three.unwrapped)
    obs, info = three.reset(seed=3)
    assert obs.shape == three.observation_space.shape and info["action_mask"].any()


def test_an_id_refuses_rules_of_another_preset():
    with pytest.raises(ValueError, match="zhuoji_env/Guiyang-v1 plays the 'guiyang' preset"):
        gymnasium.make("zhuoji_env/Guiyang-v1", rules="classic")
    with pytest.raises(ValueError, match="unknown keyword 'num_player'"):
        gymnasium.make("zhuoji_env/App-v1", num_player=3)


def test_make_vec_steps_the_registered_env_with_its_masks():
    envs = gymnasium.make_vec("zhuoji_env/App-v1", num_envs=3, num_players=3)
    obs, _ = envs.reset(seed=5)
    assert obs.shape == (3, zhuoji_env.observation.OBS_SIZE)
    rng = np.random.default_rng(0)
    for _ in range(50):
        masks = np.stack(envs.call("action_masks"))
        # a finished env's row is all False until the next step resets it (next-step autoreset)
        actions = [int(rng.choice(np.flatnonzero(m))) if m.any() else 0 for m in masks]
        obs, rewards, terms, truncs, infos = envs.step(actions)
        assert "illegal_action" not in infos
    assert all(e.unwrapped.rules.preset == "app" for e in envs.envs)
    envs.close()


def test_registering_twice_is_harmless():
    before = dict(gymnasium.registry)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        zhuoji_env.envs.registration.register_envs()
    assert dict(gymnasium.registry) == before


@pytest.mark.parametrize("switches", [{}, {"rules": "classic", "num_players": 3}])
def test_zhuoji_v1_is_the_aec_env_by_its_versioned_name(switches):
    assert zhuoji_v1.__name__ == f"zhuoji_env.{versions.ENVIRONMENT}"
    assert zhuoji_v1.raw_env is raw_env and zhuoji_v1.env is zhuoji_env.env
    env = zhuoji_v1.env(**switches)
    assert env.metadata["name"] == versions.ENVIRONMENT
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(env, num_cycles=100)
