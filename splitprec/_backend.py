"""Array-namespace helpers: the same code runs on numpy and cupy arrays; cupy is imported lazily."""
import sys

import numpy as np


def is_cupy(x):
    """True when ``x`` is a cupy array (checked without importing cupy)."""
    return type(x).__module__.split(".")[0] == "cupy"


def namespace(*arrays):
    """The array module (numpy or cupy) that holds ``arrays``; all must live on one device."""
    on_gpu = {is_cupy(x) for x in arrays}
    if len(on_gpu) > 1:
        raise ValueError("arrays live on different devices: got both numpy (cpu) and cupy (gpu) arrays; "
                         "move them to one device first")
    return sys.modules["cupy"] if on_gpu == {True} else np


def device_name(x):
    """``'gpu'`` for cupy storage, ``'cpu'`` otherwise."""
    return "gpu" if is_cupy(x) else "cpu"


def is_dask(x):
    """True when ``x`` is a dask array (checked without importing dask)."""
    return type(x).__module__.split(".")[0] == "dask"
