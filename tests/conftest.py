"""Fixtures shared by the test modules, and the fast path's shadow mode for the whole suite.

``ZHUOJI_FASTPATH_SHADOW=1``, set here before any test module imports the engine, makes every
batch-1 ``core.step`` that takes the plain-Python fast path also run the array code and compare
every state field (``zhuoji_env.engine.core``), in every test of the suite.
"""

import os

import pytest

os.environ["ZHUOJI_FASTPATH_SHADOW"] = "1"


@pytest.fixture
def one_torch_thread():
    """Small networks train fastest on one thread (and far faster on a busy machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
