"""The Python Array API standard (2023.12) for float32 data held in SplitArrays.

``x.__array_namespace__()`` of a SplitArray returns this module. It is a thin layer over numpy 2's
main namespace, which SplitArrays implement through numpy's protocols: elementwise, statistical,
manipulation, searching, sorting and set functions run in float32 on the values, contractions
(``matmul tensordot vecdot``, ``linalg.matmul linalg.vecdot linalg.tensordot linalg.outer
linalg.matrix_power``) in the scheme (docs/arrays.md). Float32 results are SplitArrays of the
promoted scheme of their operands; new float32 arrays (``asarray``, ``zeros``, ``arange``, ...)
get the default scheme, or the scheme given as ``dtype`` (``dtype=x.dtype`` keeps ``x``'s).

Data types: ``float32`` (the default real floating dtype; a SplitArray's ``dtype``, its scheme,
compares equal to it) and ``bool``, ``int8 ... int64``, ``uint8 ... uint64`` for masks, indices and
counts, which are numpy (cupy) arrays and follow numpy. float64 and the complex dtypes are not
provided: nothing is promoted or rounded behind the caller's back. Python floats convert to
float32 as the standard's default floating dtype does (rounding where they must); float16 and
bfloat16 data widen exactly, as in ``splitprec.asarray``; float64 arrays convert only with an
explicit ``dtype=float32``. Devices: ``"cpu"`` (numpy storage) and ``"gpu"`` (cupy). Needs
numpy >= 2.1.
"""
import functools
import sys

import numpy as np

if tuple(int(p) for p in np.__version__.split(".")[:2]) < (2, 1):
    raise ImportError(f"splitprec.array_api needs numpy >= 2.1 (its main namespace follows the "
                      f"Array API standard); this is numpy {np.__version__}")

from . import linalg  # noqa: E402
from ._creation import (arange, asarray, empty, empty_like, eye, from_dlpack, full,  # noqa: E402
                        full_like, linspace, ones, ones_like, with_dtype, zeros, zeros_like)
from ._dtypes import (__array_namespace_info__, astype, can_cast, finfo, iinfo,  # noqa: E402
                      isdtype, result_type)
from ._sorting import argsort, sort  # noqa: E402

__array_api_version__ = "2023.12"

bool = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float32 = np.dtype(np.float32)
e, inf, nan, pi, newaxis = np.e, np.inf, np.nan, np.pi, None

_FROM_NUMPY = """
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_invert
bitwise_or bitwise_right_shift bitwise_xor ceil conj copysign cos cosh divide equal exp expm1
floor floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal log log1p
log2 log10 logaddexp logical_and logical_not logical_or logical_xor maximum minimum multiply
negative not_equal positive pow real remainder round sign signbit sin sinh square sqrt subtract tan
tanh trunc
take broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape roll
squeeze stack tile unstack argmax argmin nonzero searchsorted where unique_all unique_counts
unique_inverse unique_values max mean min std var all any
matrix_transpose tensordot vecdot matmul tril triu
""".split()
globals().update({name: getattr(np, name) for name in _FROM_NUMPY})
_WITH_DTYPE = ["cumulative_sum", "prod", "sum"]
globals().update({name: with_dtype(getattr(np, name)) for name in _WITH_DTYPE})


def clip(x, /, min=None, max=None):
    """``x`` limited to ``[min, max]`` (either may be None), with the standard's parameter names."""
    return np.clip(x, min, max)


def broadcast_arrays(*arrays):
    """The arrays broadcast against each other, as a list (numpy 2 gives a tuple)."""
    return list(np.broadcast_arrays(*arrays))


def meshgrid(*arrays, indexing="xy"):
    """Coordinate arrays, as a list (numpy 2 gives a tuple)."""
    return list(np.meshgrid(*arrays, indexing=indexing))

__all__ = sorted(_FROM_NUMPY + _WITH_DTYPE + [
    "clip", "broadcast_arrays", "meshgrid", "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace",
    "ones", "ones_like", "zeros", "zeros_like", "astype", "can_cast", "finfo", "iinfo", "isdtype",
    "result_type", "argsort", "sort", "linalg", "bool", "int8", "int16", "int32", "int64", "uint8",
    "uint16", "uint32", "uint64", "float32", "e", "inf", "nan", "pi", "newaxis"])
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only

from ..array.core import PROTOCOLS  # noqa: E402

PROTOCOLS["namespace"] = sys.modules[__name__]     # what SplitArray.__array_namespace__ returns
