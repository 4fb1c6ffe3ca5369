"""Fixtures shared by the test modules, and the fast path's shadow mode for the whole suite.

``ZHUOJI_FASTPATH_SHADOW=1``, set here before any test module imports the engine, makes every
batch-1 ``core.step`` that takes the plain-Python fast path also run the array code and compare
every state field (``zhuoji_env.engine.core``), in every test of the suite.

The suite's temporary files, its subprocesses' included, go to a folder of pytest's own
(:func:`temporary_folder`), not the machine's: SB3's logger, torch's elastic agent and the
viewer each leave a folder there per run.
"""

import os
import tempfile

import pytest

os.environ["ZHUOJI_FASTPATH_SHADOW"] = "1"


@pytest.fixture(autouse=True, scope="session")
def temporary_folder(tmp_path_factory):
    """``TMPDIR`` (and :mod:`tempfile`'s cached folder) set to a folder under pytest's base
    temporary folder for the session, which pytest prunes. Ray keeps the machine's (its unix
    socket paths must stay short), unless ``RAY_TMPDIR`` already says otherwise."""
    before = {k: os.environ.get(k) for k in ("TMPDIR", "RAY_TMPDIR")}
    os.environ.setdefault("RAY_TMPDIR", tempfile.gettempdir())
    folder = tmp_path_factory.mktemp("tmp")
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    yield folder
    for key, value in before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    tempfile.tempdir = None


@pytest.fixture
def one_torch_thread():
    """Small networks train fastest on one thread (and far faster on a busy machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
