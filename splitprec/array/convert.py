"""Data into SplitArrays: which values are accepted (none is rounded silently), schemes, devices.

``as_float32`` is the one rule, the same as ``splitprec.matmul``'s and the ffts' (the reading and
the value policy of :mod:`splitprec.interop`): numpy and cupy arrays, any object that speaks DLPack
or ``__cuda_array_interface__`` (torch, jax, ...), objects with ``__array__``, nested lists and
Python scalars; float32, float16 and bfloat16 data (the narrow ones widen exactly), and integer,
bool or Python-float data whose every value float32 holds exactly; everything else raises
TypeError naming the operation and the argument. ``on_device`` adds the device rule (arrays must
already be on the target device; scalars and lists move there).
"""
import numpy as np

from .._backend import device_name, gpu_module, is_cupy, namespace
from .._defaults import resolve
from ..dtypes import dtype as get_dtype, dtypes
from ..interop import exact, exactly, read

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
    """``x`` (not a SplitArray) as a float32 numpy/cupy array, never rounded, or a TypeError (the
    module docstring's rule; DLPack objects are read without a copy)."""
    (operand,), _ = read(op, **{name: x})
    return exact(operand, op, name, target="float32")


def exact_float32(x, op, name):
    """Integer, bool or float data ``x`` as float32, or a TypeError if any value rounds (the value
    policy of :mod:`splitprec.interop`)."""
    return exactly(x, np.float32, op, name)


def move(value, device, op):
    """``value`` on ``device`` (None: where it is); crossing devices is an explicit copy."""
    if device is not None and not isinstance(device, str):
        raise TypeError(f"{op}: device must be None, 'cpu' or 'gpu', got {device!r} of type {type(device).__name__}")
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
