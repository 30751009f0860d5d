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

from ._backend import broadcast_shapes, is_cupy, namespace
from .dtypes import cheapest, dtype as get_dtype
from .engines.cuda import gemm as cuda_gemm, ozaki as cuda_ozaki
from .engines.reference import gemm as reference_gemm, ozaki as reference_ozaki
from .split import Parts

_ACCEPTED = {"float32": ((np.float16, np.float32), "float32 or float16", "float32"),
             "float64": ((np.float64,), "float64", "float64")}


def _scheme(dtype, precision, op, on_gpu=False):
    if dtype is not None and precision is not None:
        raise ValueError(f"{op}: give dtype or precision, not both (got dtype={dtype!r}, "
                         f"precision={precision!r})")
    if dtype is not None:
        d = get_dtype(dtype)
    else:
        d = (cuda_gemm.fastest if on_gpu else cheapest)("fp32" if precision is None else precision)
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


def _cached_parts(splitter, d, axis, index):
    """``splitter(d, axis)`` (an operand's cached split) indexed like its 2-D form, or None."""
    if splitter is None:
        return None
    parts = splitter(d, axis)
    exponent = None if parts.exponent is None else parts.exponent[index]
    return Parts(tuple(t[index] for t in parts.terms), exponent)


def _matmul2d(a, b, d, parts_a=None, parts_b=None, caches=(None, None)):
    """``a @ b`` for arrays of ndim >= 2 of the scheme's target dtype (batch dimensions broadcast).

    ``parts_a``/``parts_b``: the operands' split when already known (the reference engine uses
    it). The GPU engines split on the device, where they also handle NaN/inf and overflow;
    ``caches``: the operands' ``SplitArray._cached`` (or None), which keep their device split.
    """
    if namespace(a, b) is not np:
        if d.target == "float32":
            return cuda_gemm.matmul(a, b, d, checked=True, caches=caches)
        return cuda_ozaki.matmul(a, b, d)
    if d.target == "float64":
        return reference_ozaki.matmul(a, b, d)
    return reference_gemm.matmul(a, b, d, parts_a, parts_b)


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
        batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
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


def gpu_k_block(dtype, k):
    """The longest run of k that the GPU engines accumulate in the tensor core (which truncates)
    before a round-to-nearest float32 promotion, for products of scheme ``dtype`` and inner
    dimension ``k``: the ``k_block`` of ``accuracy.gemm_bound(..., engine="gpu")``. It grows like
    sqrt(k) (1024 for bf16 parts at k = 8192); all of k for one-part schemes."""
    return cuda_gemm.gpu_k_block(get_dtype(dtype), k)


def matmul(a, b, /, out=None, *, dtype=None, precision=None):
    """Matrix product ``a @ b`` in a split-precision scheme, with numpy's ``matmul`` semantics.

    Parameters
    ----------
    a, b : numpy.ndarray, cupy.ndarray or SplitArray, ndim >= 1
        float32 (or float16) for float32-target schemes, float64 for ``ozaki2_int8x<N>``.
        Operands; leading dimensions broadcast as in ``numpy.matmul``. A SplitArray operand's
        cached parts are reused, and ``dtype=None`` then means its (promoted) scheme.
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
    for x in (a, b):
        split_array_matmul = getattr(type(x), "__splitprec_matmul__", None)
        if split_array_matmul is not None:
            return split_array_matmul(a, b, out=out, dtype=dtype, precision=precision)
    return _raw_matmul(a, b, out=out, dtype=dtype, precision=precision, op="matmul")
