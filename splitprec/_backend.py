"""Array-namespace helpers: the same code runs on numpy and cupy arrays; cupy is imported lazily.
Also ``broadcast_shapes``, for the batch shapes of any ndim numpy allows."""
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


def broadcast_shapes(*shapes):
    """numpy's broadcast of ``shapes`` (tuples) for any number of dimensions: ``numpy.broadcast_shapes``
    builds an iterator, limited to 32 dimensions, where arrays and ``numpy.matmul`` take 64.

    Raises
    ------
    ValueError
        Shapes that do not broadcast (as ``numpy.broadcast_shapes``).
    """
    ndim = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    result = []
    for sizes in zip(*padded):
        others = {n for n in sizes if n != 1}
        if len(others) > 1:
            raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape: "
                             f"{', '.join(map(str, shapes))}")
        result.append(others.pop() if others else 1)
    return tuple(result)
