"""Array-namespace helpers: the same code runs on numpy and cupy arrays; cupy is imported lazily.
Also ``broadcast_shapes``, for the batch shapes of any ndim numpy allows."""
import functools
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


class UnsupportedDeviceError(RuntimeError):
    """A GPU (cupy) operation was asked for where no usable CUDA GPU is."""


@functools.cache
def _gpu_problem():
    """None when cupy imports and sees a CUDA device, else why not (checked once per process)."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return None
        return "cupy sees no CUDA device"
    except Exception as err:    # ImportError, CUDARuntimeError (no driver, driver too old, ...)
        return f"{type(err).__name__}: {err}"


def gpu_module(op, what):
    """The cupy module, or an :class:`UnsupportedDeviceError` naming ``op`` and ``what`` (the
    argument that asked for the GPU, e.g. ``"device='gpu'"``) when no usable GPU is present."""
    problem = _gpu_problem()
    if problem is not None:
        raise UnsupportedDeviceError(f"{op}: {what} needs a usable CUDA GPU through cupy, and there is "
                                     f"none ({problem}); expected device 'cpu' (numpy data) here")
    return sys.modules["cupy"]
def is_dask(x):
    """True when ``x`` is a dask array (checked without importing dask)."""
    return type(x).__module__.split(".")[0] == "dask"



_dask_loader = []      # filled once by splitprec/__init__.py (supply_dask_layer)


def supply_dask_layer(loader):
    """Name the function that returns ``splitprec.dask``, the module that runs the public
    operations on dask arrays. That module sits above the ops it serves, so the package's
    ``__init__`` supplies it here rather than the ops importing it."""
    _dask_loader[:] = [loader]


def dask_layer():
    """``splitprec.dask`` (imported, with dask, when the first dask array arrives)."""
    return _dask_loader[0]()


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
