"""Shared test configuration: the ``gpu`` marker skips where no CUDA device is usable."""
import os

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=25, deadline=None, print_blob=True)
settings.register_profile("thorough", max_examples=500, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def gpu_available():
    """True when cupy imports and sees a CUDA device."""
    try:
        import cupy
        return cupy.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (cupy.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
