"""Creation of SplitArrays: ``empty``, ``full``, ``zeros``, ``ones`` (``asarray`` is in core)."""
import numpy as np

from .core import _DEVICES, SplitArray, _data_on, _scheme
from .._backend import device_name, gpu_module


def _creation(shape, dtype, device, op):
    """An uninitialized float32 value of ``shape`` on ``device`` and the scheme, for ``op``."""
    d = _scheme(dtype, op)
    if device not in (None, *_DEVICES):
        raise ValueError(f"{op}: unknown device {device!r}; expected 'cpu' or 'gpu'")
    xp = gpu_module(op, "device='gpu'") if device == "gpu" else np
    return xp.empty(shape, np.float32), d


def empty(shape, dtype=None, *, device=None):
    """An uninitialized SplitArray (``asarray`` explains ``dtype`` and ``device``)."""
    return SplitArray._wrap(*_creation(shape, dtype, device, "empty"))


def _filled(shape, fill_value, dtype, device, op):
    value, d = _creation(shape, dtype, device, op)
    value[...] = _data_on(fill_value, device_name(value), op, "fill_value")
    return SplitArray._wrap(value, d)


def full(shape, fill_value, dtype=None, *, device=None):
    """A SplitArray of ``shape`` filled with ``fill_value`` (which float32 must hold exactly)."""
    return _filled(shape, fill_value, dtype, device, "full")


def zeros(shape, dtype=None, *, device=None):
    """A SplitArray of zeros (``asarray`` explains ``dtype`` and ``device``)."""
    return _filled(shape, 0, dtype, device, "zeros")


def ones(shape, dtype=None, *, device=None):
    """A SplitArray of ones (``asarray`` explains ``dtype`` and ``device``)."""
    return _filled(shape, 1, dtype, device, "ones")
