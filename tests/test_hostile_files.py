"""Files from others: a small file costs little memory to refuse, and every malformed field is a
message naming the file and the field.

The inflation tests load a crafted file in a child process and hold its peak memory (its
``VmHWM``) under the interpreter's baseline plus a small multiple of the file's size: a
``ppo:`` checkpoint or ``sb3:`` zip whose entries inflate (deflate turns a 256 MiB run of zeros
into 256 KB), a tensor under a key the loader does not read, and an RLlib module state whose
pickle asks numpy for a large array.
"""

from __future__ import annotations

import collections
import functools
import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.ppo import PolicyNet, save_checkpoint
from agents.untrusted import StateUnpickler, plain_arrays

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20
JUNK = 256 * MIB
"""The size a crafted file declares and does not hold."""


PEAK = (
    "\nprint([int(line.split()[1]) for line in open('/proc/self/status')"
    " if line.startswith('{field}:')][0])"
)
"""Prints a peak of the process's memory in KiB: ``VmHWM`` (resident) or ``VmPeak``
(allocated), its own since it started (``ru_maxrss`` carries over the peak of the process it
was forked from)."""


@pytest.fixture(autouse=True)
def _linux():
    if not Path("/proc/self/status").is_file():
        pytest.skip("measures peak memory from /proc/self/status (Linux)")


def _peak(code: str, field: str = "VmHWM") -> tuple[str, int]:
    """What ``python -c code`` prints, and its peak resident (``field`` ``VmPeak``: allocated)
    memory in bytes."""
    tail = PEAK.format(field=field)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("ZHUOJI_MEMORY_LIMIT", None)
    p = subprocess.run(
        [sys.executable, "-c", code + tail],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    *said, peak = p.stdout.strip().splitlines()
    return "\n".join(said), int(peak) * 1024


@functools.cache
def _baseline(imports: str, field: str = "VmHWM") -> int:
    """The peak memory of a child that only runs ``imports`` (measured once per test run)."""
    return _peak(imports, field)[1]


def _refused_within(load: str, path: Path, imports: str) -> str:
    """Run ``load`` (an expression loading ``path``) in a child; it must raise ``ValueError``
    with a peak memory within the baseline of ``imports`` plus 8 times the file's size and
    16 MiB of slack. Returns the message."""
    baseline = _baseline(imports)
    said, peak = _peak(
        f"{imports}\ntry:\n    {load}\nexcept ValueError as e:\n    print('refused:', e)\n"
    )
    size = path.stat().st_size
    assert peak <= baseline + 8 * size + 16 * MIB, (
        f"peak {peak / MIB:.0f} MiB over a baseline of {baseline / MIB:.0f} MiB for a file of "
        f"{size / MIB:.2f} MiB ({said})"
    )
    assert said.startswith("refused:"), said
    return said


def _deflated(src: Path, dst: Path, **replace: bytes) -> Path:
    """``src`` rezipped with deflate, entries ending as a key of ``replace`` replaced."""
    with zipfile.ZipFile(src) as old, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as new:
        for info in old.infolist():
            data = old.read(info.filename)
            for end, value in replace.items():
                if info.filename.endswith(end):
                    data = value
            new.writestr(info.filename, data)
    return dst


PPO_IMPORTS = "from agents import make_agent\nimport agents.ppo"


def test_a_small_ppo_checkpoint_inflating_to_a_large_tensor_is_refused_in_little_memory(
    tmp_path,
):
    """It loaded and played, peaking at the inflated size."""
    plain = tmp_path / "plain.pt"
    save_checkpoint(plain, PolicyNet(8), note=torch.zeros(JUNK // 4))
    path = _deflated(plain, tmp_path / "small.pt")
    plain.unlink()
    assert path.stat().st_size < MIB
    said = _refused_within(f"make_agent('ppo:{path}')", path, PPO_IMPORTS)
    assert "small.pt: its entry" in said and "is compressed" in said


def test_a_tensor_under_a_key_the_loader_does_not_read_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "noted.pt"
    save_checkpoint(path, PolicyNet(8), note=torch.zeros(16 * MIB))
    baseline = _baseline(PPO_IMPORTS)
    said, peak = _peak(
        f"{PPO_IMPORTS}\ntry:\n    make_agent('ppo:{path}')\n"
        "except ValueError as e:\n    print('refused:', e)\n"
    )
    assert peak <= baseline + 16 * MIB, said  # the 64 MiB of the tensor never read
    assert "noted.pt: its 'note' holds tensors (67,108,864 bytes)" in said


def test_a_storage_declaring_more_than_its_entry_holds_is_refused(tmp_path):
    from agents.ppo import load_checkpoint

    path = tmp_path / "lie.pt"
    torch.save({"model": {"w": torch.zeros(3, 2)}}, path)
    with zipfile.ZipFile(path) as z:
        entries = {i.filename: z.read(i.filename) for i in z.infolist()}
    pkl = next(k for k in entries if k.endswith("data.pkl"))
    six, hundred_million = b"cpuq\x08K\x06", b"cpuq\x08J\x00\xe1\xf5\x05"  # BININT1, BININT
    assert six in entries[pkl]
    entries[pkl] = entries[pkl].replace(six, hundred_million)
    with zipfile.ZipFile(path, "w") as z:
        for k, v in entries.items():
            z.writestr(k, v)
    with pytest.raises(ValueError, match=r"lie\.pt: its storage '0' declares 100,000,000 elements"):
        load_checkpoint(path)


SB3_IMPORTS = "from agents import make_agent\nimport agents.sb3"


def test_an_sb3_zip_whose_settings_inflate_is_refused_before_inflating(tmp_path):
    """Refused only once 1 GiB had been inflated (peak 2.3 GB, 7 s)."""
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("data", b"{" + b" " * JUNK + b"}")
        z.writestr("policy.pth", b"")
    assert path.stat().st_size < MIB
    said = _refused_within(f"make_agent('sb3:{path}')", path, SB3_IMPORTS)
    assert "bomb.zip: its 'data' declares 268,435,458 bytes" in said and "zip bomb" in said


def test_sb3_weights_whose_storages_inflate_are_refused_before_inflating(tmp_path):
    weights = io.BytesIO()
    torch.save({"mlp_extractor.policy_net.0.weight": torch.zeros(JUNK // 4)}, weights)
    inner = tmp_path / "policy.pth"
    inner.write_bytes(weights.getvalue())
    small = _deflated(inner, tmp_path / "small.pth").read_bytes()
    path = tmp_path / "model.zip"
    data = b'{"policy_class": {}}'
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("data", data)
        z.writestr("policy.pth", small)
    from agents.sb3 import load_policy

    with pytest.raises(ValueError):  # the settings are refused first; the weights alone:
        load_policy(path)
    from agents.ppo import load_weights_only

    with pytest.raises(ValueError, match=r"\(policy\.pth\): its entry .* is compressed"):
        load_weights_only(small, f"{path} (policy.pth)", "SB3 weights", tensor_keys=None)


# --------------------------------------------------------------------------- RLlib's state


class _Bomb:
    """Pickles as numpy's own array rebuild, asked for ``count`` objects."""

    def __init__(self, count: int, dtype: str = "O"):
        self.count, self.dtype = count, dtype

    def __reduce__(self):
        from numpy._core.multiarray import _reconstruct

        return (_reconstruct, (np.ndarray, (self.count,), np.dtype(self.dtype)))


@pytest.mark.parametrize(
    "dtype, says", [("O", "not of numbers"), ("f8", "more than the whole file holds")]
)
def test_an_rllib_state_asking_for_a_large_array_is_refused_before_allocation(
    tmp_path, dtype, says
):
    """The unpickler allowed numpy's _reconstruct, which allocated whatever shape it was given
    (20 million elements: 160 MB) before anything looked at it; numpy leaves the pages
    untouched until the weights' checks read them, so the allocated peak is measured."""
    path = tmp_path / "module_state.pkl"
    path.write_bytes(pickle.dumps(collections.OrderedDict(w=_Bomb(20_000_000, dtype))))
    assert path.stat().st_size < 1024
    imports = "from agents.untrusted import StateUnpickler"
    load = f"StateUnpickler(open({str(path)!r}, 'rb'), budget={path.stat().st_size}).load()"
    baseline = _baseline(imports, "VmPeak")
    said, peak = _peak(
        f"{imports}\nimport pickle\ntry:\n    {load}\n"
        "except pickle.UnpicklingError as e:\n    print('refused:', e)\n",
        "VmPeak",
    )
    assert peak <= baseline + 16 * MIB, said
    assert said.startswith("refused: an array of") and says in said, said


@pytest.mark.parametrize("protocol", [4, 5])  # Ray writes 5; 2 pickles bytes through _codecs
def test_a_genuine_rllib_state_loads_as_plain_arrays(protocol):
    state = collections.OrderedDict(
        w=np.arange(12, dtype=np.float32).reshape(3, 4), b=np.ones(3, dtype=np.float64)
    )
    raw = pickle.dumps(state, protocol=protocol)
    loaded = plain_arrays(StateUnpickler(io.BytesIO(raw), budget=len(raw)).load())
    assert list(loaded) == ["w", "b"]
    for key, value in state.items():
        assert type(loaded[key]) is np.ndarray and loaded[key].dtype == value.dtype
        np.testing.assert_array_equal(loaded[key], value)


# --------------------------------------------------------------------------- metadata

MALFORMED = [
    ({"update": "7"}, "'update' is '7': must be an integer >= 0"),
    ({"update": 2.5}, "'update' is 2.5: must be an integer >= 0"),
    ({"decisions": -64}, "'decisions' is -64: must be an integer >= 0"),
    ({"hidden": "8"}, "'hidden' is '8': must be an integer >= 1"),
    ({"optimizer": 5}, "'optimizer' is 5: must be an optimizer's state dict"),
    ({"stages": {"command": "x"}}, "'stages' is {'command': 'x'}: must be a list of objects"),
    ({"stages": [{"command": 7}]}, "stages[0]['command'] is 7: must be a string that parses"),
    ({"stages": [{"command": "a 'b"}]}, "stages[0]['command'] is \"a 'b\": must be a string that"),
    ({"stages": [{"command": "x", "seconds": -1.0}]}, "stages[0]['seconds'] is -1.0: must be a"),
    ({"args": {"oracle_critic": "yes"}}, "args['oracle_critic'] is 'yes': must be true or false"),
    ({"row": {"update": "one"}}, "'row' is {'update': 'one'}: must be an object of plain data"),
    ({"row": {"update": 1, "loss": torch.zeros(2)}}, "its 'row' holds tensors (8 bytes)"),
]
"""Malformed fields, each a traceback or a message without the file's name somewhere."""


def _malformed(tmp_path: Path, change: dict) -> Path:
    path = tmp_path / "meta.pt"
    save_checkpoint(
        path,
        PolicyNet(8),
        update=1,
        decisions=64,
        rules={"preset": "app"},
        stages=[{"command": "python -m training.ppo_selfplay", "commit": None, "preset": "app",
                 "decisions": 64, "seconds": 1.0}],
    )  # fmt: skip
    ckpt = torch.load(path, weights_only=True)
    torch.save({**ckpt, **change}, path)
    return path


@pytest.mark.parametrize("change, says", MALFORMED, ids=[str(c)[:40] for c, _ in MALFORMED])
def test_a_malformed_checkpoint_field_is_named_with_its_file_by_every_reader(
    tmp_path, capsys, change, says
):
    """The agent, the trainer's --resume and ship_policy read one check."""
    from agents import make_agent
    from training import ppo_selfplay, ship_policy

    path = _malformed(tmp_path, change)
    with pytest.raises(ValueError) as refused:
        make_agent(f"ppo:{path}")
    assert str(refused.value).startswith(f"{path}: ") and says in str(refused.value)
    argv = ["--resume", str(path), "--out-dir", str(tmp_path / "run"), "--no-progress"]
    assert ppo_selfplay.main(argv) == 2
    err = capsys.readouterr().err
    assert f"--resume {str(path)!r}: {path}: " in err and says in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_:
        ship_policy.main(
            ["--checkpoint", str(path), "--name", "ppo-app", "--out-dir", str(tmp_path / "ship")]
        )
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"{path}: " in err and says in err
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------- package files

DAMAGED = [
    (lambda text: text[: len(text) // 2], "does not parse as JSON"),
    (lambda text: "\xff" + text, "does not parse as JSON"),
    (lambda text: "[" * 100_000, "does not parse as JSON"),
    (lambda text: json.dumps(drop(json.loads(text), "preset")), "lacks 'preset'"),
    (lambda text: json.dumps(drop(json.loads(text), "sha256")), "lacks 'sha256'"),
    (lambda text: json.dumps({**json.loads(text), "sha256": 5}), "'sha256' is 5: must be 64"),
    (lambda text: json.dumps({**json.loads(text), "stages": "x"}), "'stages' is 'x': must be"),
    (lambda text: json.dumps([1]), "the whole file is [1]: must be an object"),
]
"""Damaged ``NAME.json`` files of a shipped policy: each a traceback (KeyError, JSONDecodeError)
or a message without the file's name."""


def drop(record: dict, key: str) -> dict:
    return {k: v for k, v in record.items() if k != key}


@pytest.mark.parametrize("damage, says", DAMAGED, ids=[s for _, s in DAMAGED][:3] + [
    "no preset", "no sha256", "sha256 5", "stages x", "a list"])  # fmt: skip
def test_a_damaged_shipped_policy_file_is_named_with_its_field(
    tmp_path, monkeypatch, capsys, damage, says
):
    import shutil

    import agents.ppo as ppo
    from agents import make_agent
    from agents.arena import main as arena_main

    for suffix in (".pt", ".json"):
        shutil.copy(ppo.POLICY_DIR / f"ppo-app{suffix}", tmp_path)
    record = tmp_path / "ppo-app.json"
    record.write_text(damage(record.read_text(encoding="utf-8")), encoding="utf-8")
    monkeypatch.setattr(ppo, "POLICY_DIR", tmp_path)
    with pytest.raises(ValueError) as refused:
        make_agent("ppo-app")
    assert str(refused.value).startswith(f"{record}: ") and says in str(refused.value)
    with pytest.raises(SystemExit) as exit_:
        arena_main(["--agents", "ppo-app,random", "--deals", "1", "--no-progress"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert str(record) in err and says in err and "Traceback" not in err
