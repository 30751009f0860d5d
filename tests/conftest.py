"""Shared test configuration: the ``gpu`` marker skips where no CUDA device is usable."""
import os

import numpy as np

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


@pytest.fixture(autouse=True)
def _fresh_plans():
    """Each test starts with no GPU call plans (``splitprec._plans``): a test that patches an
    engine's choice sees it on its first call."""
    from splitprec import _plans
    _plans.clear()
    yield


class ForeignDType:
    """A dtype object numpy cannot interpret (as torch's ``torch.float32``)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"foreign.{self.name}"


class ForeignTensor:
    """An array of a library that splitprec does not know, shaped like a torch tensor: DLPack, a
    ``shape`` and a ``dtype`` that numpy cannot interpret, and numpy's ``__array__``."""

    def __init__(self, array):
        self._array = array
        self.shape, self.dtype = array.shape, ForeignDType(array.dtype.name)

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._array, dtype=dtype)
