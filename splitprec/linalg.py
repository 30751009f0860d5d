"""Matrix products in a split-precision scheme: ``matmul``.

``dtype`` names the scheme (see :func:`splitprec.dtypes`); ``precision="fp32"`` picks the cheapest
scheme whose bound is fp32 class, ``precision="fp64"`` the cheapest fp64-class one. Inputs of
float32-target schemes are float32 (float16 is widened exactly); float64 is rejected rather than
silently rounded. Inputs of float64-target schemes (``ozaki2_int8x<N>``) are float64 and the result
is float64; float32 is rejected rather than silently promoted. numpy arrays run on the reference engine, cupy arrays on the
GPU, where a call is queued on the current stream with no host wait (as ``cupy.matmul``). NaN and
±inf appear in the result exactly where they appear in the float64 product of the same inputs
(Inf*0 gives NaN). Finite inputs never give NaN: an entry whose narrow products overflow (inf - inf,
or a partial sum past the float32 range) is recomputed as a float64 dot product rounded to float32,
so results beyond the float32 range become ±inf as in the float64 product.
"""
import numpy as np

from ._backend import is_cupy, is_dask, namespace
from . import _gpu, _ozaki_engine, _ozaki_gpu
from ._engine import narrow_matmul
from .dtypes import cheapest, dtype as get_dtype
from .split import Parts, split

_ACCEPTED = {"float32": ((np.float16, np.float32), "float32 or float16", "float32"),
             "float64": ((np.float64,), "float64", "float64")}


def _scheme(dtype, precision, op, on_gpu=False):
    if dtype is not None and precision is not None:
        raise ValueError(f"{op}: give dtype or precision, not both (got dtype={dtype!r}, "
                         f"precision={precision!r})")
    if dtype is not None:
        d = get_dtype(dtype)
    else:
        d = (_gpu.fastest if on_gpu else cheapest)("fp32" if precision is None else precision)
    return d


def _operand(x, name, op, d):
    """``x`` as a float32 numpy/cupy array of ndim >= 1, or a TypeError/ValueError naming it."""
    if not (isinstance(x, np.ndarray) or is_cupy(x)):
        if not isinstance(x, (list, tuple, int, float, np.generic)):
            raise TypeError(f"{op}: {name} must be a numpy or cupy array, got {type(x).__name__}")
        x = np.asarray(x)
    accepted, listed, widest = _ACCEPTED[d.target]
    if x.dtype not in accepted:
        raise TypeError(f"{op}: {name} has dtype {x.dtype}; scheme {d.name!r} accepts {listed} "
                        f"(convert explicitly, e.g. {name}.astype(numpy.{widest}))")
    if x.ndim == 0:
        raise ValueError(f"{op}: {name} is a scalar (ndim 0); expected an array with ndim >= 1")
    return x.astype(widest, copy=False)


def _nonfinite_pattern(a, b):
    """The product's values where non-finite inputs make it NaN/inf (finite elsewhere), on numpy.

    Finite entries become their signs, so each finite sum is an integer of magnitude <= k while
    inf*0, inf-inf and NaN behave as in the float64 product (the GPU engines' fix-up kernel,
    kernels/gemm_nonfinite_sm80.cu, does the same).
    """
    return np.matmul(np.where(np.isfinite(a), np.sign(a), a), np.where(np.isfinite(b), np.sign(b), b))


def _recompute_overflowed(a, b, c):
    """Entries where finite inputs gave NaN/inf (parts overflowing to inf - inf, partial sums past
    the float32 range), as float64 dots.

    Their float64 dot product rounded to float32 is what the float32 operation means there (±inf
    when the product itself is beyond the float32 range).
    """
    where = np.nonzero(~np.isfinite(c))
    batch = c.shape[:-2]
    rows = np.broadcast_to(a, batch + a.shape[-2:])[where[:-1]].astype(np.float64)
    cols = np.moveaxis(np.broadcast_to(b, batch + b.shape[-2:]), -1, -2)[where[:-2] + where[-1:]]
    c[where] = (rows * cols.astype(np.float64)).sum(axis=-1).astype(np.float32)
    return c


def _finite_parts(parts):
    """The parts of an array with its non-finite entries zeroed, from the array's own parts."""
    hi = parts.terms[0]
    return Parts((np.where(np.isfinite(hi), hi, np.float32(0)),) + parts.terms[1:], parts.exponent)


def _cached_parts(splitter, d, axis, index):
    """``splitter(d, axis)`` (an operand's cached split) indexed like its 2-D form, or None."""
    if splitter is None:
        return None
    parts = splitter(d, axis)
    exponent = None if parts.exponent is None else parts.exponent[index]
    return Parts(tuple(t[index] for t in parts.terms), exponent)


def _cpu_product(a, b, d, parts_a, parts_b):
    """``(product with NaN/inf inputs taken as zeros, whether every input is finite)`` on numpy."""
    all_finite = bool(np.isfinite(a).all()) and bool(np.isfinite(b).all())
    if not all_finite:
        parts_a, parts_b = (p if p is None else _finite_parts(p) for p in (parts_a, parts_b))
        a, b = (np.where(np.isfinite(x), x, np.float32(0)) for x in (a, b))
    parts_a = split(a, d, axis=-1) if parts_a is None else parts_a
    parts_b = split(b, d, axis=-2) if parts_b is None else parts_b
    c = narrow_matmul(parts_a, parts_b, d)
    if not np.isfinite(c).all():
        c = _recompute_overflowed(a, b, c)
    return c, all_finite


def _matmul2d(a, b, d, parts_a=None, parts_b=None, caches=(None, None)):
    """``a @ b`` for arrays of ndim >= 2 of the scheme's target dtype (batch dimensions broadcast).

    ``parts_a``/``parts_b``: the operands' split when already known (the reference engine uses
    it). The GPU engines split on the device, where they also handle NaN/inf and overflow;
    ``caches``: the operands' ``SplitArray._cached`` (or None), which keep their device split.
    """
    if namespace(a, b) is not np:
        if d.target == "float32":
            return _gpu.matmul(a, b, d, checked=True, caches=caches)
        return _ozaki_gpu.matmul(a, b, d)
    with np.errstate(over="ignore", invalid="ignore"):   # overflow is handled in the products
        if d.target == "float64":
            c, all_finite = _ozaki_engine.product(a, b, d)
        else:
            c, all_finite = _cpu_product(a, b, d, parts_a, parts_b)
    if all_finite:
        return c
    pattern = _nonfinite_pattern(a, b)
    return np.where(np.isfinite(pattern), c, pattern)


def _raw_matmul(a, b, *, out, dtype, precision, op, splitters=(None, None), caches=(None, None)):
    d = _scheme(dtype, precision, op, on_gpu=is_cupy(a) or is_cupy(b))
    a, b = _operand(a, "a", op, d), _operand(b, "b", op, d)
    xp = namespace(a, b)
    vector_a, vector_b = a.ndim == 1, b.ndim == 1
    a2 = a[None, :] if vector_a else a
    b2 = b[:, None] if vector_b else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"{op}: inner dimensions differ: a has shape {a.shape}, b has shape {b.shape}")
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ValueError(f"{op}: batch dimensions do not broadcast: a has shape {a.shape}, "
                         f"b has shape {b.shape}") from None
    parts = (None, None) if xp is not np else (
        _cached_parts(splitters[0], d, -1, (None, slice(None)) if vector_a else ...),
        _cached_parts(splitters[1], d, -1 if vector_b else -2, (slice(None), None) if vector_b else ...))
    c = _matmul2d(a2, b2, d, *parts, caches=caches)
    c = c.reshape(batch + c.shape[-2:])
    if vector_a:
        c = c[..., 0, :]
    if vector_b:
        c = c[..., 0]
    if out is None:
        return c
    if type(out) is not type(c) or out.dtype != c.dtype or out.shape != c.shape:
        raise ValueError(f"{op}: out must be a {type(c).__name__} of dtype {c.dtype} and shape "
                         f"{c.shape}; got {type(out).__name__} of dtype "
                         f"{getattr(out, 'dtype', None)} and shape {getattr(out, 'shape', None)}")
    out[...] = c
    return out


def matmul(a, b, /, out=None, *, dtype=None, precision=None):
    """Matrix product ``a @ b`` in a split-precision scheme, with numpy's ``matmul`` semantics.

    Parameters
    ----------
    a, b : numpy.ndarray, cupy.ndarray, SplitArray or dask.array.Array, ndim >= 1
        float32 (or float16) for float32-target schemes, float64 for ``ozaki2_int8x<N>``.
        Operands; leading dimensions broadcast as in ``numpy.matmul``. A SplitArray operand's
        cached parts are reused, and ``dtype=None`` then means its (promoted) scheme. A dask
        operand (2-D) gives a dask array, computed block by block (docs/dask.md).
    out : array, optional
        Array of the result's dtype and shape to write into.
    dtype : str or SplitDType, optional
        Scheme name, e.g. ``"tf32x3"``, ``"bf16x9"``, ``"ozaki2_int8x14"``; see ``splitprec.dtypes()``.
    precision : {"fp32", "fp64"}, optional
        Pick the cheapest scheme whose bound is fp32 class (the default when ``dtype`` is None)
        or fp64 class (``ozaki2_int8x14``, docs/ozaki.md).

    Returns
    -------
    float32 (float64 for ``ozaki2_int8x<N>``) array of the same kind (numpy or cupy) as the
    inputs; a SplitArray (or its scalar, for 1-D operands) when either input is one.

    Raises
    ------
    TypeError
        Operands whose dtype the scheme does not take (float64 is not silently rounded to
        float32, float32 not silently promoted to float64).
    ValueError
        Unknown scheme, scalar operands, mismatched inner or batch dimensions, a bad ``out``,
        numpy and cupy operands mixed.

    Accuracy: ``accuracy.gemm_bound(a, b, dtype)``, checked by
    ``tests/test_linalg.py::test_matmul_error_within_bound`` and, for ``ozaki2_int8x<N>``,
    ``tests/test_ozaki.py::test_matmul_error_within_bound``.

    Examples
    --------
    >>> import numpy as np, splitprec as sp
    >>> a = np.float32([[1, 2], [3, 4]]); b = np.float32([[1, 0], [0, 1]])
    >>> sp.matmul(a, b, dtype="bf16x9")
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    if is_dask(a) or is_dask(b):
        from .engines import dask
        return dask.matmul(a, b, out=out, dtype=dtype, precision=precision)
    for x in (a, b):
        split_array_matmul = getattr(type(x), "__splitprec_matmul__", None)
        if split_array_matmul is not None:
            return split_array_matmul(a, b, out=out, dtype=dtype, precision=precision)
    return _raw_matmul(a, b, out=out, dtype=dtype, precision=precision, op="matmul")
