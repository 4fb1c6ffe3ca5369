"""What every result states: the package and environment versions it was made under
(``zhuoji_env.versions.stamp``) in records, arena, ladder and curve JSON, checkpoints and
shipped policies; and what is refused: a record of another environment version, a checkpoint
of another observation version, a ladder file of another environment version."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import zhuoji_env
from agents import arena, ladder
from agents.ppo import (
    POLICY_DIR,
    PolicyNet,
    check_shipped_pair,
    load_checkpoint,
    provenance,
    save_checkpoint,
)
from agents.registry import SHIPPED_POLICIES
from training import ship_policy
from zhuoji_env import BatchGame, RecordError, versions, view
from zhuoji_env.engine import records

RECORDS = Path(__file__).resolve().parent / "data" / "records"
NOW = {"zhuoji_env": zhuoji_env.__version__, "environment": "zhuoji_v1"}
OTHER = {"zhuoji_env": "2.0.0", "environment": "zhuoji_v2"}


def played_record() -> dict:
    game = BatchGame("app", batch_size=4, seed=11, keep_records=True)
    rng = np.random.default_rng(11)
    while True:
        out = game.step(game.random_actions(rng))
        if out.records:
            return out.records[0][1]


def test_stamp_is_the_package_and_environment_version():
    assert versions.stamp() == NOW
    assert versions.check_stamp(dict(NOW), "x") == NOW


@pytest.mark.parametrize(
    "bad",
    [None, "1.0.0", {"zhuoji_env": "1.0.0"}, {**NOW, "observation": "zhuoji-obs-v1"},
     {**NOW, "environment": ""}, {**NOW, "zhuoji_env": 1}],
)  # fmt: skip
def test_a_malformed_stamp_is_refused_naming_the_shape(bad):
    with pytest.raises(ValueError, match=re.escape("where: 'versions' is")) as info:
        versions.check_stamp(bad, "where")
    assert '{"zhuoji_env": PACKAGE_VERSION, "environment": "zhuoji_vN"}' in str(info.value)


def test_a_record_states_its_versions_and_replays():
    rec = played_record()
    assert list(rec)[:2] == ["format", "versions"] and rec["versions"] == NOW
    assert zhuoji_env.replay(json.loads(json.dumps(rec))) == rec["result"]
    view.page(rec)  # the viewer takes it too


def test_records_without_versions_still_replay():
    """Records of independent implementations (RULES.md 10 has no versions key), as the
    samples in tests/data/records, replay as records of this environment version."""
    files = sorted(RECORDS.glob("*.json"))
    assert len(files) == 12
    for path in files:
        rec = records.load(path)
        assert "versions" not in rec
        assert not records.compare(rec["result"], zhuoji_env.replay(rec))


def test_a_record_of_another_environment_version_is_refused_naming_both():
    rec = dict(played_record(), versions=OTHER)
    said = (
        "record made under environment zhuoji_v2 (zhuoji-env 2.0.0); this package replays "
        "environment zhuoji_v1"
    )
    with pytest.raises(RecordError, match=re.escape(said)):
        zhuoji_env.replay(rec)
    with pytest.raises(RecordError, match=re.escape(said)):
        view.page(rec)
    del rec["versions"]  # what the message offers: replayed as a record of this version
    zhuoji_env.replay(rec)


@pytest.mark.parametrize("bad", [["1.0.0", "zhuoji_v1"], {"environment": "zhuoji_v1"}])
def test_malformed_record_versions_are_refused(bad):
    with pytest.raises(RecordError, match="record: 'versions' is"):
        zhuoji_env.replay(dict(played_record(), versions=bad))


def test_arena_json_states_its_versions(tmp_path):
    out = tmp_path / "arena.json"
    assert arena.main(["--agents", "random,greedy", "--deals", "2", "--json", str(out),
                       "--no-progress"]) == 0  # fmt: skip
    data = json.loads(out.read_text())
    assert data["versions"] == NOW
    kept = arena.run_arena(["random", "greedy"], deals=1, progress=False, keep_games=True)
    assert all(r["versions"] == NOW for r in kept.games["records"])


def test_ladder_json_states_its_versions_and_reuse_refuses_another_environment(tmp_path):
    fit = ladder.fit_ladder(
        ["random", "greedy"],
        ["random", "greedy"],
        [ladder.PairResult("random", "greedy", *(np.array([v, -v]) for v in (-6, 6)),
                           np.full(2, 12), np.full(2, 12))],
        bootstrap=0,
    )  # fmt: skip
    rules = ladder.Rules.make("guiyang")
    data = ladder.ladder_json(fit, rules, 2, 0, "permute", {})
    assert data["versions"] == NOW
    path = tmp_path / "ladder.json"
    path.write_text(json.dumps(data))
    assert ("random", "greedy") in ladder.reusable(str(path), rules, 2, 0, "permute")
    path.write_text(json.dumps({k: v for k, v in data.items() if k != "versions"}))
    assert ("random", "greedy") in ladder.reusable(str(path), rules, 2, 0, "permute")
    path.write_text(json.dumps(dict(data, versions=OTHER)))
    with pytest.raises(ValueError, match=re.escape(
        f"--reuse {str(path)!r}: its pairs were played under environment zhuoji_v2 "
        "(zhuoji-env 2.0.0), this ladder plays zhuoji_v1"
    )):  # fmt: skip
        ladder.reusable(str(path), rules, 2, 0, "permute")
    path.write_text(json.dumps(dict(data, versions="zhuoji_v1")))
    with pytest.raises(ValueError, match="'versions' is 'zhuoji_v1', expected an object"):
        ladder.reusable(str(path), rules, 2, 0, "permute")


@pytest.mark.parametrize("preset", ["guiyang", "app", "classic"])
def test_the_published_ladders_state_the_versions_they_were_played_under(preset):
    docs = Path(__file__).resolve().parents[1] / "docs"
    data = json.loads((docs / f"ladder-{preset}.json").read_text())
    assert data["versions"] == {"zhuoji_env": "0.1.0", "environment": "zhuoji_v1"}


@pytest.fixture
def ckpt(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "net.pt"
    save_checkpoint(path, PolicyNet(8), rules={"preset": "guiyang", "overrides": {}})
    return path


def test_a_checkpoint_states_its_versions_and_an_older_one_still_loads(ckpt, tmp_path):
    raw = torch.load(ckpt, weights_only=True)
    assert raw["versions"] == NOW
    _, read = load_checkpoint(ckpt)
    assert read["versions"] == NOW
    older = {k: v for k, v in raw.items() if k != "versions"}  # written before versions
    torch.save(older, tmp_path / "older.pt")
    load_checkpoint(tmp_path / "older.pt")
    kept = tmp_path / "kept.pt"  # a copy keeps the versions its network was made under
    save_checkpoint(kept, PolicyNet(8), versions=dict(OTHER))
    assert torch.load(kept, weights_only=True)["versions"] == OTHER


def test_a_checkpoint_of_another_observation_version_is_refused_naming_both(ckpt, tmp_path):
    raw = torch.load(ckpt, weights_only=True)
    torch.save(dict(raw, obs_version="zhuoji-obs-v3", versions=OTHER), tmp_path / "v3.pt")
    with pytest.raises(ValueError) as info:
        load_checkpoint(tmp_path / "v3.pt")
    said = str(info.value)
    assert (
        "trained on observations 'zhuoji-obs-v3' (zhuoji-env 2.0.0, environment zhuoji_v2)" in said
    )
    ours = f"zhuoji-env {zhuoji_env.__version__}, environment zhuoji_v1"
    assert f"({ours}, whose observations are zhuoji-obs-v1)" in said
    torch.save(dict(raw, versions={"environment": "zhuoji_v1"}), tmp_path / "bad.pt")
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'bad.pt'}: 'versions' is")):
        load_checkpoint(tmp_path / "bad.pt")


@pytest.mark.parametrize("name", sorted(SHIPPED_POLICIES))
def test_each_shipped_policy_states_its_versions_and_its_weights_are_unchanged(name):
    said = provenance(name)["versions"]
    assert versions.check_stamp(said, name) == {"zhuoji_env": "0.1.0", "environment": "zhuoji_v1"}
    check_shipped_pair(name)  # NAME.pt is still the checkpoint NAME.json's sha256 describes
    raw = torch.load(POLICY_DIR / f"{name}.pt", weights_only=True)
    assert "versions" not in raw  # the weights were shipped before versions were stated


def test_ship_policy_takes_the_checkpoints_versions_or_asks_for_them(ckpt):
    raw = torch.load(ckpt, weights_only=True)
    assert ship_policy.made_with(raw, "c.pt", None) == NOW
    older = {k: v for k, v in raw.items() if k != "versions"}
    with pytest.raises(ValueError, match="c.pt states no versions .* give the ones it was "
                       "trained under with --versions"):  # fmt: skip
        ship_policy.made_with(older, "c.pt", None)
    given = json.dumps({"zhuoji_env": "0.1.0", "environment": "zhuoji_v1"})
    assert ship_policy.made_with(older, "c.pt", given)["zhuoji_env"] == "0.1.0"
    with pytest.raises(ValueError, match="--versions is for checkpoints that state none"):
        ship_policy.made_with(raw, "c.pt", given)
    with pytest.raises(ValueError, match="--versions '{oops': not valid JSON"):
        ship_policy.made_with(older, "c.pt", "{oops")
    with pytest.raises(ValueError, match="--versions: 'versions' is"):
        ship_policy.made_with(older, "c.pt", '{"zhuoji_env": "0.1.0"}')
