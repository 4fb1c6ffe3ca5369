"""Fixtures shared by the test modules."""

import pytest


@pytest.fixture
def one_torch_thread():
    """Small networks train fastest on one thread (and far faster on a busy machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
