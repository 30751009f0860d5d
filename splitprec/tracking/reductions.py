"""Sums and means of tracked arrays over axes, from SplitArray's compensated sum.

The values are ``SplitArray.sum`` / ``SplitArray.mean`` of the float32 values (pairwise sums with
every addition's error kept exactly, splitprec.array.functions). Over ``n`` entries, tree depth
``h = ceil(log2 n)``, ``R = (1 + u)**(h + 1) gamma(2h) gamma(h)`` (that module's bound) and
``T = sum(R |x^| + E)`` (the second-order term and the inputs' own bounds, summed in float64 and
rounded up for ``n`` roundings), the sum ``s^`` of exact inputs ``x`` obeys (docs/tracking.md,
"Sums")

    ``|s^ - sum x| <= T + u/(1 - u) (|s^| + T) + ETA``,

and the mean ``m^`` (the float64 sum divided by ``n``, rounded once) ``|m^ - mean x| <= (that +
u|s^| + ETA) / n + u|m^| + ETA``. On the GPU, whose float32 kernels flush subnormals, each of the
``4n`` float32 operations may lose ``2**-126`` more. The probabilistic mode uses the same bound:
its first-order term is one rounding already.
"""
import math

import numpy as np

from .._backend import namespace
from ..array.core import SplitArray
from .core import TrackedArray, implements
from .rounding import ETA, U, rounded_up

_FLUSH = 2.0 ** -126                  # a float32 result flushed to zero on the GPU


def _gamma(n):
    return n * U / (1 - n * U) if n * U < 1 else math.inf


def _axes(x, axis, op):
    """``axis`` (None, an integer or a tuple of them, numpy's included) as sorted axes of ``x``."""
    axes = tuple(range(x.ndim)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    if any(isinstance(ax, (bool, np.bool_)) for ax in axes):
        raise TypeError(f"{op}: axis {axis!r} holds a bool; expected None, an integer or a tuple of integers")
    if not all(isinstance(ax, (int, np.integer)) and -x.ndim <= ax < x.ndim for ax in axes) or \
            len({int(ax) % x.ndim for ax in axes}) != len(axes):
        raise ValueError(f"{op}: axis {axis!r} is not a set of distinct axes of an array of ndim {x.ndim}")
    return tuple(sorted(int(ax) % x.ndim for ax in axes))


def _as_array(result, xp):
    return result._value if isinstance(result, SplitArray) else xp.asarray(result, dtype=np.float32)


def _sum_bound(x, axes, keepdims, xp):
    """``(float32 sum, float64 bound before rounding up)`` of ``x`` over ``axes``."""
    n = math.prod(x.shape[i] for i in axes)
    total = _as_array(np.sum(x._split(), axis=axes, keepdims=keepdims), xp)
    h = max(n - 1, 0).bit_length()
    second = (1 + U) ** (h + 1) * _gamma(2 * h) * _gamma(h) * (1 + 2.0 ** -50)
    terms = xp.abs(x._value).astype(np.float64) * second + x._bound
    t = xp.sum(terms, axis=axes, keepdims=keepdims) * (1 + (n + 8) * 2.0 ** -52)
    bound = t + U / (1 - U) * (xp.abs(total).astype(np.float64) + t) + ETA
    return total, bound + (4 * n * _FLUSH if xp is not np else 0.0), n


def _checked(x, op):
    if not isinstance(x, TrackedArray):
        raise TypeError(f"{op}: expected a TrackedArray, got {type(x).__name__}")
    if x.is_complex:
        raise TypeError(f"{op}: tracked complex values are not supported; expected a real TrackedArray")
    return namespace(x._value)


@implements(np.sum)
def tracked_sum(a, axis=None, dtype=None, out=None, keepdims=False):
    """``np.sum`` of a real TrackedArray (module docstring); ``dtype`` None or float32, ``out`` None."""
    xp = _checked(a, "sum")
    if (dtype is not None and np.dtype(dtype) != np.float32) or out is not None:
        raise TypeError(f"sum: dtype={dtype!r} and out= are not supported for tracked arrays; "
                        "expected dtype None (or float32, as dask passes it) and out None")
    with np.errstate(over="ignore", invalid="ignore"):
        total, bound, _ = _sum_bound(a, _axes(a, axis, "sum"), keepdims, xp)
        return TrackedArray._wrap(total, rounded_up(bound, xp), a._dtype, a._confidence)


@implements(np.mean)
def tracked_mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """``np.mean`` of a real TrackedArray (module docstring); ``dtype`` None or float32, ``out`` None."""
    xp = _checked(a, "mean")
    if (dtype is not None and np.dtype(dtype) != np.float32) or out is not None:
        raise TypeError(f"mean: dtype={dtype!r} and out= are not supported for tracked arrays; "
                        "expected dtype None (or float32, as dask passes it) and out None")
    axes = _axes(a, axis, "mean")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        total, bound, n = _sum_bound(a, axes, keepdims, xp)
        mean = _as_array(np.mean(a._split(), axis=axes, keepdims=keepdims), xp)
        bound = (bound + U * xp.abs(total).astype(np.float64) + ETA) / n + U * xp.abs(mean).astype(np.float64) + ETA
        return TrackedArray._wrap(mean, rounded_up(bound, xp), a._dtype, a._confidence)
