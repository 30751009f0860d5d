"""Matrix products in a split-precision scheme: ``matmul``.

``dtype`` names the scheme (see :func:`splitprec.dtypes`); ``precision="fp32"`` picks the fastest
fp32-class path of the engine (on numpy arrays the scheme measured fastest on the CPU engine,
``engines.reference.tuning``; on cupy arrays the fastest path of the shape, cuBLAS SGEMM included:
``engines.cuda.gemm.fp32_path``), ``precision="fp64"`` the adaptive ``ozaki2_int8_adaptive``
(DGEMM's worst-case bound on every input, docs/ozaki.md). With neither, the
operands' dtype decides the target: float32 (and float16, bfloat16) operands run the float32
default (``splitprec.default_scheme``: the fp32 class unless set), float64 operands the float64
default (``ozaki2_int8_adaptive``), and float32 beside float64 is refused; integer, bool
and Python data take the other operand's target (float32 when both are such data). Inputs of
float32-target schemes are float32 (float16 and bfloat16 are widened exactly); float64 is rejected
rather than silently rounded. Inputs of float64-target schemes (``ozaki2_int8x<N>``, ``ozaki2_int8_adaptive``) are float64 and
the result is float64, ±inf where it is beyond float64's range; float32 is rejected rather than silently promoted. Integer and bool data are
taken where the target holds every value exactly, and any array library's operands are read through
DLPack, with the result given back in that library (:mod:`splitprec.interop`). numpy arrays run on
the reference engine, cupy arrays on the GPU, where a call is queued on the current stream with no
host wait (as ``cupy.matmul``; the float64-target schemes read a few flags back,
``splitprec.engines.fp64``). NaN and ±inf appear in the result exactly where they appear in the
float64 product of the same inputs (Inf*0 gives NaN). Finite inputs never give NaN: an entry whose
narrow products overflow (inf - inf, or a partial sum past the float32 range) is recomputed as a
float64 dot product rounded to float32, so results beyond the float32 range become ±inf as in the
float64 product.
"""
from __future__ import annotations

import functools
import numbers
import operator

import numpy as np

from ._backend import broadcast_shapes, dask_layer, is_cupy, is_dask, namespace
from . import _plans, interop
from ._defaults import class_of, resolve
from .dtypes import PRECISIONS, SchemeLike, dtype as get_dtype
from .engines import fp64
from .engines.cuda import gemm as cuda_gemm
from .engines.reference import gemm as reference_gemm
from .engines.reference.tuning import class_scheme as reference_class_scheme
from .interop import Array, ArrayLike
from .split import Parts

__all__ = ["matmul"]
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only


def _scheme(dtype, precision, op, on_gpu=False, target="float32"):
    """The scheme of a product: ``dtype``, else the ``precision`` class's pick, else the default for
    operands of ``target`` (class picks: ``cuda_gemm.class_scheme`` on the GPU, ``reference_class_scheme``
    on the CPU; ``matmul`` on cupy arrays runs the fp32 class by shape instead, ``cuda_gemm.fp32_path``).
    ``dtype="fp32"`` (which ``default_scheme`` takes) is refused pointing to ``precision=``."""
    if precision is None and isinstance(dtype, str) and dtype.lower() in PRECISIONS:
        raise ValueError(f"{op}: dtype={dtype!r} is a precision class, not a scheme; expected "
                         f"precision={dtype.lower()!r}, or a scheme name as dtype (splitprec.dtypes())")
    return resolve(dtype, precision, target=target, op=op, pick=cuda_gemm.class_scheme if on_gpu else reference_class_scheme)


def _target(a, b, op):
    """The target the operands' dtypes ask for (module docstring), or a TypeError naming both."""
    targets = {interop.target_of(a), interop.target_of(b)} - {None}
    if len(targets) > 1:
        raise TypeError(f"{op}: a has dtype {a.array.dtype} and b has dtype {b.array.dtype}; the "
                        "operands' dtype picks the target, so expected both float32 (fp32-class "
                        "schemes) or both float64 (fp64-class schemes), or dtype= or precision= "
                        "(convert one explicitly, e.g. b.astype(a.dtype))")
    return targets.pop() if targets else "float32"


def _operand(x, name, op, d):
    """Operand ``x`` as an array of the scheme's target dtype and ndim >= 1, or an error naming it."""
    x = interop.exact(x, op, name, target=d.target, accepted=f"scheme {d.name!r} accepts")
    if x.ndim == 0:
        raise ValueError(f"{op}: {name} is a scalar (ndim 0); expected an array with ndim >= 1")
    return x


def _cached_parts(splitter, d, axis, index):
    """``splitter(d, axis)`` (an operand's cached split) indexed like its 2-D form, or None."""
    if splitter is None:
        return None
    parts = splitter(d, axis)
    exponent = None if parts.exponent is None else parts.exponent[index]
    return Parts(tuple(t[index] for t in parts.terms), exponent)


def _matmul2d(a, b, d, parts_a=None, parts_b=None, caches=(None, None), fp32_class=False):
    """``a @ b`` for arrays of ndim >= 2 of the scheme's target dtype (batch dimensions broadcast).

    ``parts_a``/``parts_b``: the operands' split when already known (the reference engine uses
    it). The GPU engines split on the device, where they also handle NaN/inf and overflow;
    ``caches``: the operands' ``SplitArray._cached`` (or None), which keep their device split.
    ``fp32_class``: the call asked for the fp32 class, whose GPU path is chosen per shape.
    """
    if d.target == "float64":
        return fp64.matmul(a, b, d)
    if namespace(a, b) is not np:
        if fp32_class:
            return cuda_gemm.matmul_fp32(a, b)
        return cuda_gemm.matmul(a, b, d, checked=True, caches=caches)
    return reference_gemm.matmul(a, b, d, parts_a, parts_b)


def core_axes(axes, ndim_a, ndim_b, op):
    """numpy's ``axes=`` of ``matmul``: ``[axes of a, axes of b, axes of the result]``, each a tuple
    of its core axes (two; one for a 1-D operand; the result has as many as its operands' 2-D ones,
    so ``()`` for a scalar). An int stands for a 1-tuple."""
    cores = [1 if ndim_a == 1 else 2, 1 if ndim_b == 1 else 2]
    cores.append((cores[0] == 2) + (cores[1] == 2))
    expected = "expected e.g. [(-2, -1), (-2, -1), (-2, -1)], or [0, 0, ()] for two vectors"
    if not isinstance(axes, (list, tuple)):
        raise TypeError(f"{op}: axes={axes!r} of type {type(axes).__name__} is not a list of an entry for a, "
                        f"b and the result; {expected}")
    if len(axes) != 3:
        raise ValueError(f"{op}: axes={axes!r} is not a list of an entry for a, b and the result; {expected}")
    entries = [_core_entry(e, op) for e in axes]
    batch = max(ndim_a - cores[0], ndim_b - cores[1])
    for name, entry, core, ndim in zip(("a", "b", "the result"), entries, cores, (ndim_a, ndim_b, batch + cores[2])):
        if len(entry) != core:
            raise np.exceptions.AxisError(f"{op}: axes entry {entry!r} for {name} names {len(entry)} axes; "
                                          f"expected {core}, its core dimensions")    # numpy's type
        for axis in entry:
            if not -ndim <= axis < ndim:
                raise np.exceptions.AxisError(axis, ndim, msg_prefix=f"{op}: axes entry for {name}")
        if len({axis % ndim for axis in entry}) != len(entry):
            raise ValueError(f"{op}: axes entry {entry!r} for {name} repeats an axis; expected distinct axes")
    return entries


def _core_entry(entry, op):
    """One entry of ``axes=`` as a tuple of ints, or a TypeError naming it: a bool is no axis (numpy
    refuses it; taken as 0 or 1 it multiplied other axes), nor is a float, a str or None."""
    axes = (entry,) if isinstance(entry, numbers.Integral) else \
        tuple(entry) if isinstance(entry, (list, tuple)) else None
    if axes is None or any(isinstance(axis, bool) or not isinstance(axis, numbers.Integral) for axis in axes):
        raise TypeError(f"{op}: axes entry {entry!r} is not an axis or a tuple of axes; expected an int "
                        "(not a bool) for a 1-D operand, or a tuple of ints, e.g. (-2, -1)")
    return tuple(operator.index(axis) for axis in axes)


def core_last(x, entry, move):
    """``x`` with the core axes ``entry`` moved to the end, by ``move`` (a ``moveaxis``)."""
    return move(x, entry, tuple(range(-len(entry), 0))) if entry else x


def core_placed(c, entry, move):
    """The result ``c`` with its core axes (the last ones) moved to ``entry``."""
    return move(c, tuple(range(-len(entry), 0)), entry) if entry else c


def _raw_matmul(a, b, *, out, dtype, precision, op, splitters=(None, None), caches=(None, None), axes=None):
    (a, b), back = interop.read(op, a=a, b=b)
    target = _target(a, b, op) if dtype is None and precision is None else "float32"
    on_gpu = is_cupy(a.array) or is_cupy(b.array)
    d = _scheme(dtype, precision, op, on_gpu=on_gpu, target=target)
    fp32_class = on_gpu and d.target == "float32" and class_of(dtype, precision, target=target) == "fp32"
    a, b = _operand(a, "a", op, d), _operand(b, "b", op, d)
    xp = namespace(a, b)
    entries = None if axes is None else core_axes(axes, a.ndim, b.ndim, op)
    if entries is not None:
        a, b = core_last(a, entries[0], xp.moveaxis), core_last(b, entries[1], xp.moveaxis)
    vector_a, vector_b = a.ndim == 1, b.ndim == 1
    a2 = a[None, :] if vector_a else a
    b2 = b[:, None] if vector_b else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"{op}: inner dimensions differ: a has shape {a.shape}, b has shape {b.shape}")
    try:
        batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ValueError(f"{op}: batch dimensions do not broadcast: a has shape {a.shape}, "
                         f"b has shape {b.shape}") from None
    parts = (None, None) if xp is not np else (
        _cached_parts(splitters[0], d, -1, (None, slice(None)) if vector_a else ...),
        _cached_parts(splitters[1], d, -1 if vector_b else -2, (slice(None), None) if vector_b else ...))
    c = _matmul2d(a2, b2, d, *parts, caches=caches, fp32_class=fp32_class)
    c = c.reshape(batch + c.shape[-2:])
    if vector_a:
        c = c[..., 0, :]
    if vector_b:
        c = c[..., 0]
    if entries is not None:
        c = core_placed(c, entries[2], xp.moveaxis)
    return interop.write(back(c), out, op)


def gpu_k_block(dtype, k):
    """The longest run of k that the GPU engines accumulate in the tensor core (which truncates)
    before a round-to-nearest float32 promotion, for products of scheme ``dtype`` and inner
    dimension ``k``: the ``k_block`` of ``accuracy.gemm_bound(..., engine="gpu")``. It grows like
    sqrt(k) (1024 for bf16 parts at k = 8192); all of k for one-part schemes."""
    return cuda_gemm.gpu_k_block(get_dtype(dtype), k)


def matmul(a: ArrayLike, b: ArrayLike, /, out: Array | None = None, *, dtype: SchemeLike = None,
           precision: str | None = None, axes: list | None = None) -> Array:
    """Matrix product ``a @ b`` in a split-precision scheme, with numpy's ``matmul`` semantics.

    Parameters
    ----------
    a, b : array (numpy, cupy, torch, jax, ... any DLPack object), SplitArray, or nested list; ndim >= 1
        float32 (or float16, bfloat16) for float32-target schemes, float64 for ``ozaki2_int8x<N>``;
        integers, bools and Python numbers where the target holds them exactly. Operands; leading
        dimensions broadcast as in ``numpy.matmul``. A SplitArray operand's cached parts are
        reused, and ``dtype=None`` then means its (promoted) scheme. A dask operand (2-D) gives a
        dask array, computed block by block (docs/dask.md). An ndarray subclass (``numpy.matrix``)
        is read as its plain ndarray, and the result is a plain ndarray.
    out : array, optional
        Array of the result's kind, dtype and shape to write into.
    dtype : str, SplitDType or jax.lax.DotAlgorithmPreset, optional
        Scheme name, e.g. ``"tf32x3"``, ``"bf16x9"``, ``"BF16_BF16_F32_X9"``, ``"ozaki2_int8x14"``;
        see ``splitprec.dtypes()``.
    precision : {"fp32", "fp64"}, optional
        Pick the fastest path whose bound is fp32 class (numpy arrays: the scheme measured fastest
        on the CPU engine, ``tf32x3``; cupy arrays: the fastest path of the shape, cuBLAS SGEMM
        included; bound ``accuracy.gemm_bound(a, b, precision="fp32", engine=...)``), or for ``"fp64"``
        ``ozaki2_int8_adaptive``: DGEMM's worst-case bound on every input (docs/ozaki.md). With neither ``dtype`` nor ``precision``, the operands' dtype picks the
        target and :func:`splitprec.default_scheme` the scheme (module docstring).
    axes : list of tuples of ints, optional
        numpy's: the core axes of ``a``, ``b`` and the result, e.g. ``[(0, 1), (0, 1), (0, 1)]``
        to multiply the matrices along the first two axes (an int for a 1-D operand, ``()`` for
        a scalar result). Default: the last two axes.

    Returns
    -------
    float32 (float64 for the fp64 schemes) array of the inputs' kind (numpy, cupy, or the
    library of a foreign operand, through DLPack); a numpy.float32 (float64) scalar for two 1-D
    numpy operands, as ``numpy.matmul`` (a 0-d array on cupy, as ``cupy.matmul``); a SplitArray
    (or its scalar, for 1-D operands) when either input is one.

    Raises
    ------
    TypeError
        Operands whose dtype the scheme does not take (float64 is not silently rounded to
        float32, float32 not silently promoted to float64), float32 beside float64 with no
        ``dtype``/``precision``, integers the target cannot hold, masked arrays, operands of two
        array libraries, a ``precision`` that is not a str.
    ValueError
        Unknown scheme or precision, scalar operands, mismatched inner or batch dimensions, a bad
        ``out``, numpy and cupy operands mixed.
    splitprec.UnsupportedDeviceError
        GPU operands where no usable CUDA GPU is.

    Accuracy: ``accuracy.gemm_bound(a, b, dtype)``, checked by
    ``tests/test_search.py::test_gemm_error_within_bound``, for ``ozaki2_int8x<N>``
    ``tests/test_ozaki.py::test_matmul_error_within_bound``, for ``ozaki2_int8_adaptive``
    ``tests/test_fp64.py::test_adaptive_error_within_bound_on_spans_and_range_edges``.

    Examples
    --------
    >>> import numpy as np, splitprec as sp
    >>> a = np.float32([[1, 2], [3, 4]]); b = np.float32([[1, 0], [0, 1]])
    >>> sp.matmul(a, b, dtype="bf16x9")
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    if out is None and axes is None and is_cupy(a) and is_cupy(b):    # through the plan cache (splitprec._plans)
        return _plans.planned("matmul", (a, b), (dtype, precision), functools.partial(
            _raw_matmul, out=None, dtype=dtype, precision=precision, op="matmul"),
            functools.partial(_direct, dtype=dtype, precision=precision))
    if is_dask(a) or is_dask(b):
        if axes is not None:
            raise TypeError(f"matmul: axes={axes!r} is not supported for dask arrays; expected axes=None "
                            "(move the axes first, e.g. with dask.array.moveaxis)")
        return dask_layer().matmul(a, b, out=out, dtype=dtype, precision=precision)
    for x in (a, b, out):                    # a SplitArray operand, or numpy's out= of one
        split_array_matmul = getattr(type(x), "__splitprec_matmul__", None)
        if split_array_matmul is not None:
            return split_array_matmul(a, b, out=out, dtype=dtype, precision=precision, axes=axes)
    c = _raw_matmul(a, b, out=out, dtype=dtype, precision=precision, op="matmul", axes=axes)
    return c[()] if out is None and type(c) is np.ndarray and c.ndim == 0 else c


def _direct(a, b, *, dtype, precision):
    """The launches a planned call on cupy ``a``, ``b`` repeats without a graph
    (``cuda_gemm.direct_call``): ``precision="fp32"``'s SGEMM path and the fused engine's products,
    for float32 operands; else None."""
    if a.dtype != np.float32 or b.dtype != np.float32:
        return None
    if class_of(dtype, precision, target="float32") == "fp32":
        return cuda_gemm.direct_call(a, b)
    d = resolve(dtype, precision, target="float32", op="matmul")
    return cuda_gemm.direct_call(a, b, d) if getattr(d, "target", None) == "float32" else None
