"""Data into SplitArrays: which values are accepted (none is rounded silently), schemes, devices.

``as_float32`` is the one rule: float32 and float16 arrays (float16 widens exactly), SplitArrays,
and integer, bool or Python-float data whose every value float32 holds exactly; everything else
raises TypeError naming the operation and the argument. ``on_device`` adds the device rule
(arrays must already be on the target device; scalars and lists move there).
"""
import numbers

import numpy as np

from .._backend import device_name, gpu_module, is_cupy, namespace
from .._defaults import resolve
from ..dtypes import dtype as get_dtype, dtypes
from ..interop import exactly

DEVICES = ("cpu", "gpu")


def scheme_names():
    """The names of the float32-target schemes (those a SplitArray can hold)."""
    return [n for n in dtypes() if get_dtype(n).target == "float32"]


def is_scheme_name(name):
    try:
        get_dtype(name)
    except ValueError:
        return False
    return True


def scheme(dtype, op):
    """The SplitDType for a SplitArray (float32 target); None means the default fp32 scheme."""
    d = resolve(dtype, None, target="float32", op=op)
    if d.target != "float32":
        raise ValueError(f"{op}: scheme {d.name!r} targets {d.target}; a SplitArray holds a "
                         f"float32-target scheme, one of {', '.join(map(repr, scheme_names()))}")
    return d


def same_device(op, *arrays):
    """numpy or cupy for the numpy/cupy arrays among ``arrays``, or a ValueError naming ``op``."""
    try:
        return namespace(*[x for x in arrays if isinstance(x, np.ndarray) or is_cupy(x)])
    except ValueError:
        raise ValueError(f"{op}: operands live on different devices (cpu and gpu); move them to "
                         "one device first, e.g. sp.asarray(x, device='gpu')") from None


def as_float32(x, op, name):
    """``x`` (not a SplitArray) as a float32 numpy/cupy array, never rounded, or a TypeError."""
    from_python = not (isinstance(x, (np.ndarray, np.generic)) or is_cupy(x))
    if from_python and not isinstance(x, (numbers.Real, list, tuple)):
        raise TypeError(f"{op}: {name} of type {type(x).__name__} is not accepted; expected a "
                        "numpy/cupy array, a SplitArray, a Python scalar or a (nested) list")
    if not is_cupy(x):
        x = np.asarray(x)
    if x.dtype in (np.float32, np.float16):
        return x.astype(np.float32, copy=False)
    if x.dtype.kind not in "biuf" or (x.dtype.kind == "f" and not from_python):
        raise TypeError(f"{op}: {name} has dtype {x.dtype}; expected float32 or float16 data, or "
                        "integers, bools and Python floats that float32 holds exactly (convert "
                        f"explicitly, e.g. {name}.astype(numpy.float32))")
    return exact_float32(x, op, name)


def exact_float32(x, op, name):
    """Integer, bool or float data ``x`` as float32, or a TypeError if any value rounds (the value
    policy of :mod:`splitprec.interop`)."""
    return exactly(x, np.float32, op, name)


def move(value, device, op):
    """``value`` on ``device`` (None: where it is); crossing devices is an explicit copy."""
    if device is not None and device not in DEVICES:
        raise ValueError(f"{op}: unknown device {device!r}; expected 'cpu' or 'gpu'")
    if device is None or device == device_name(value):
        return value
    if device == "cpu":
        return value.get()
    return gpu_module(op, "device='gpu'").asarray(value)


def on_device(data, device, op, name, *, placed):
    """float32 ``data`` (from ``as_float32`` or a SplitArray) on ``device``: the data of an array
    (``placed``) must already be there (ValueError otherwise), that of scalars and lists moves."""
    if placed:
        if device_name(data) != device:
            raise ValueError(f"{op}: {name} lives on the {device_name(data)} and the array on the "
                             f"{device}; expected both on one device (sp.asarray(x, device=...))")
        return data
    return move(data, device, op)
