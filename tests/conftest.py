"""Fixtures shared by the test modules, and the fast path's shadow mode for the whole suite.

``ZHUOJI_FASTPATH_SHADOW=1`` makes every batch-1 ``core.step`` that takes the plain-Python
fast path also run the array code and compare every state field (``zhuoji_env.engine.core``);
set it to ``0`` in the environment to run the suite without it.
"""

import os

import pytest

os.environ.setdefault("ZHUOJI_FASTPATH_SHADOW", "1")


@pytest.fixture
def one_torch_thread():
    """Small networks train fastest on one thread (and far faster on a busy machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
