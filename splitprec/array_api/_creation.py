"""Creation functions of the Array API namespace (splitprec.array_api's docstring states the rules).

A float32 result is a SplitArray of the default scheme, or of the scheme given as ``dtype``; bool
and integer results are numpy (cupy) arrays. A SplitArray made without a copy of memory that
another array still owns (``asarray(x, copy=False)``, ``from_dlpack``) is watched as an exported
one is: a write through that array is seen before a cached split is reused.
"""
import numpy as np

from .._backend import is_cupy
from ..array.convert import as_float32, is_scheme_name, move, scheme
from ..array.core import SplitArray
from ..dtypes import SplitDType
from ..interop import read

_SIGNED = np.dtype(np.int64)


def _device_module(device):
    if device not in (None, "cpu", "gpu"):
        raise ValueError(f"unknown device {device!r}; expected None, 'cpu' or 'gpu'")
    if device == "gpu":
        import cupy
        return cupy
    return np


def names_scheme(dtype):
    return isinstance(dtype, SplitDType) or (isinstance(dtype, str) and is_scheme_name(dtype))


def split_dtype(dtype):
    """``(True, scheme)`` for float32 or a scheme as ``dtype`` (None: the default scheme),
    ``(False, numpy dtype)`` otherwise."""
    if dtype is None or names_scheme(dtype):
        return True, scheme(dtype, "asarray")
    numpy_dtype = np.dtype(dtype)
    if numpy_dtype == np.float32:
        return True, scheme(None, "asarray")
    if numpy_dtype.kind not in "biu":
        raise TypeError(f"dtype {numpy_dtype} is not supported by splitprec.array_api; expected "
                        "float32 (or a split scheme), bool or an integer dtype")
    return False, numpy_dtype


def _wrap(value, d, *, watched):
    new = SplitArray._wrap(value, d)
    new._storage.exported = watched
    return new


def _result(value, dtype):
    """``value`` (numpy/cupy) as the namespace returns it for the requested ``dtype``."""
    is_split, d = split_dtype(dtype)
    if is_split:
        return SplitArray._wrap(value.astype(np.float32, copy=False), d)
    return value.astype(d, copy=False)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """``obj`` as an array of the namespace (module docstring; the standard's ``asarray``)."""
    if isinstance(obj, SplitArray):
        is_split, d = split_dtype(obj._dtype if dtype is None else dtype)
        if not is_split:
            if copy is False:
                raise ValueError(f"asarray: copy=False but dtype {d} needs a copy of the float32 "
                                 "data; expected copy=None or copy=True")
            return _device_module(device or obj.device).asarray(obj._value, dtype=d)
        moved = move(obj._value, device, "asarray")
        if copy is False and (moved is not obj._value or d != obj._dtype):
            raise ValueError("asarray: copy=False but the result needs a copy (another device or scheme)")
        if d == obj._dtype and moved is obj._value and not copy:
            return obj
        return SplitArray._wrap(moved.copy() if moved is obj._value else moved, d)
    if _foreign(obj):
        (operand,), _ = read("asarray", obj=obj)          # torch, jax, ...: through DLPack, no copy
        obj = operand.array
    xp = _device_module(device) if device is not None or not is_cupy(obj) else _device_module("gpu")
    if dtype is None:
        dtype = _inferred(obj)
    is_split, d = split_dtype(dtype)
    if is_split and _narrow(getattr(obj, "dtype", None)):
        if copy is False:
            raise ValueError(f"asarray: copy=False but the result needs a copy ({obj.dtype} data "
                             "widens to float32); expected copy=None or copy=True")
        return SplitArray._wrap(move(as_float32(obj, "asarray", "obj"), device, "asarray"), d)
    kind = np.float32 if is_split else d
    value = xp.asarray(obj, dtype=kind) if copy is None else xp.array(obj, dtype=kind, copy=copy)
    if not is_split:
        return value
    aliased = value is obj or (hasattr(obj, "dtype") and xp.may_share_memory(value, obj))
    return _wrap(value, d, watched=aliased)


def _foreign(obj):
    """True for an array of another library than numpy and cupy (read as :mod:`splitprec.interop` reads it)."""
    return not (isinstance(obj, (np.ndarray, np.generic)) or is_cupy(obj)) and \
        (hasattr(obj, "__dlpack__") or hasattr(obj, "__cuda_array_interface__"))


def _inferred(obj):
    """The standard's inferred dtype: bool, the default integer, or float32 (never float64 data)."""
    kind = getattr(obj, "dtype", None)
    if kind is None:
        probe = np.asarray(obj)
        kind = probe.dtype
        if kind.kind == "f" or _narrow(kind):             # a list of bfloat16 scalars too
            return np.float32
        return _SIGNED if kind.kind in "iu" else kind
    kind = np.dtype(kind)
    if kind == np.float32 or _narrow(kind):
        return np.float32
    if kind.kind in "fc":
        raise TypeError(f"asarray: data of dtype {kind} is not held by splitprec.array_api (it "
                        "would round to float32); expected dtype=float32 given explicitly")
    return kind


def _narrow(kind):
    """True for float16 and bfloat16, which widen exactly to float32 as in ``splitprec.asarray``."""
    return isinstance(kind, np.dtype) and (kind == np.float16 or kind.name == "bfloat16")


def from_dlpack(x, /, *, device=None, copy=None):
    """The standard's ``from_dlpack``: zero-copy where the producer allows it (watched)."""
    on_gpu = x.__dlpack_device__()[0] != 1
    xp = _device_module("gpu" if on_gpu else "cpu")
    value = xp.from_dlpack(x, copy=copy) if copy is not None else xp.from_dlpack(x)
    value = move(value, device, "from_dlpack")
    if value.dtype != np.float32:
        return value
    return _wrap(value, scheme(None, "from_dlpack"), watched=not copy)


def _filled(shape, fill, dtype, device):
    is_split, d = split_dtype(dtype)
    value = _device_module(device).full(shape, fill, dtype=np.float32 if is_split else d)
    return SplitArray._wrap(value, d) if is_split else value


def zeros(shape, *, dtype=None, device=None):
    return _filled(shape, 0, dtype, device)


def ones(shape, *, dtype=None, device=None):
    return _filled(shape, 1, dtype, device)


def empty(shape, *, dtype=None, device=None):
    return _filled(shape, 0, dtype, device)


def full(shape, fill_value, *, dtype=None, device=None):
    if dtype is None:
        dtype = np.bool_ if isinstance(fill_value, bool) else _SIGNED if isinstance(fill_value, int) else None
    return _filled(shape, fill_value, dtype, device)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """An array of ``x``'s shape, dtype (a SplitArray's scheme) and device, filled with ``fill_value``;
    ``dtype=float32`` keeps a SplitArray's scheme, as :func:`astype` does."""
    if dtype is None or (isinstance(x, SplitArray) and split_dtype(dtype)[0] and not names_scheme(dtype)):
        dtype = x.dtype
    return _filled(x.shape, fill_value, dtype, device or getattr(x, "device", None))


def zeros_like(x, /, *, dtype=None, device=None):
    """Zeros of ``x``'s shape, dtype and device (as :func:`full_like`)."""
    return full_like(x, 0, dtype=dtype, device=device)


def ones_like(x, /, *, dtype=None, device=None):
    """Ones of ``x``'s shape, dtype and device (as :func:`full_like`)."""
    return full_like(x, 1, dtype=dtype, device=device)


def empty_like(x, /, *, dtype=None, device=None):
    """An array of ``x``'s shape, dtype and device (zeros, as :func:`empty`)."""
    return full_like(x, 0, dtype=dtype, device=device)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    if dtype is None and all(isinstance(v, int) for v in (start, step) + (() if stop is None else (stop,))):
        dtype = _SIGNED
    return _result(_device_module(device).arange(start, stop, step, dtype=np.float64 if
                                                  split_dtype(dtype)[0] else dtype), dtype)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    return _result(_device_module(device).linspace(start, stop, num, endpoint=endpoint), dtype)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    return _result(_device_module(device).eye(n_rows, n_cols, k=k, dtype=np.float32), dtype)


def with_dtype(function):
    """numpy's reduction ``function`` (``sum``, ``prod``, ``cumulative_sum``) whose ``dtype`` is the
    namespace's: float32 or a scheme gives a SplitArray of that scheme (``x``'s for float32 and a
    SplitArray ``x``), also for integer or bool ``x``; other dtypes give numpy's (cupy's) arrays."""
    def reduce(x, /, *, dtype=None, **options):
        if dtype is None:
            return function(x, **options)
        is_split, d = split_dtype(dtype)
        result = function(x, dtype=np.float32 if is_split else d, **options)
        if not is_split:
            return result
        if isinstance(result, SplitArray):
            return result if not names_scheme(dtype) or result.dtype == d else SplitArray._wrap(result._value, d)
        if isinstance(result, np.ndarray) or is_cupy(result):
            return SplitArray._wrap(result, d)
        return result                                  # a float32 scalar, as a SplitArray's 0-d result
    reduce.__name__ = reduce.__qualname__ = function.__name__
    reduce.__doc__ = f"``numpy.{function.__name__}``; a float32 or scheme ``dtype`` gives a SplitArray."
    return reduce
