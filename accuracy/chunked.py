"""The per-entry bound of a product computed in k-chunks (``splitprec.matmul`` on dask arrays).

Derived in docs/bounds.md, section 14: each k-chunk's product obeys the scheme's own bound ``E_p``
(:func:`accuracy.gemm_bound` of that chunk); the ``P`` partial products are added in float64 in a
fixed order and rounded once to the target, which adds ``(gamma_(P-1)(2**-53)(1 + u) + u)(|A||B| +
sum_p E_p) + eta`` (``u = 2**-24``, ``eta = 2**-150`` for float32 targets; ``u = eta = 0`` for
float64 ones). ``accuracy.gemm_bound(a, b, dtype, chunks=...)`` calls :func:`chunked_gemm_bound`.
"""
import numbers

import numpy as np

import splitprec

from .bounds import ETA32, FP32_MAX, U32, _round_up, gamma, gemm_bound

U64 = 2.0 ** -53
FP64_MAX = float(np.finfo(np.float64).max)


def k_chunks(chunks, k, op="gemm_bound"):
    """The k-chunk sizes from ``chunks``: an int (dask's: that size, the last one shorter), a tuple of
    sizes, or a dask-style chunks tuple of A (its last entry: the k-chunks)."""
    if isinstance(chunks, numbers.Integral) and not isinstance(chunks, bool) and chunks > 0:
        return (chunks,) * (k // chunks) + ((k % chunks,) if k % chunks else ()) or (0,)
    if isinstance(chunks, tuple) and chunks and all(isinstance(c, tuple) for c in chunks):
        chunks = chunks[-1]
    if not (isinstance(chunks, tuple) and chunks and all(
            isinstance(c, numbers.Integral) and not isinstance(c, bool) and c >= 0 for c in chunks)):
        raise ValueError(f"{op}: chunks must be a positive int, a tuple of k-chunk sizes or a dask "
                         f"chunks tuple of a; got {chunks!r}")
    if sum(chunks) != k:
        raise ValueError(f"{op}: chunks {chunks!r} sum to {sum(chunks)}, but the inner dimension is "
                         f"k = {k}; expected k-chunk sizes that sum to k")
    return tuple(int(c) for c in chunks)


def chunked_gemm_bound(a, b, dtype, chunks, **options):
    """Per-entry bound on ``|C_hat - a @ b|`` for ``C_hat`` the sum over the k-chunks ``chunks`` of
    ``splitprec.matmul`` of each chunk, added in float64 and rounded once (module docstring);
    ``options``: :func:`accuracy.gemm_bound`'s (engine, k_block, small_k_block)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        return gemm_bound(a, b, dtype, **options)           # its errors, for the whole product
    sizes = k_chunks(chunks, a.shape[-1])
    if len(sizes) == 1:
        return gemm_bound(a, b, dtype, **options)
    ends = np.cumsum((0,) + sizes)
    per_chunk = sum(gemm_bound(a[..., s:e], b[..., s:e, :], dtype, **options) for s, e in zip(ends, ends[1:]))
    float32 = splitprec.dtype(dtype).target == "float32"
    u, eta, largest = (U32, ETA32, FP32_MAX) if float32 else (0.0, 0.0, FP64_MAX)
    with np.errstate(invalid="ignore", over="ignore"):
        clean = [np.where(np.isfinite(x), np.abs(x), 0).astype(np.float64) for x in (a, b)]
        magnitude = np.matmul(*clean) + per_chunk
        summed = gamma(len(sizes) - 1, U64) * (1 + u) + u
        bound = _round_up(per_chunk + summed * magnitude + eta, a.shape[-1] + len(sizes) + 4)
        overflow = ~(magnitude * (1 + gamma(len(sizes), U64)) * (1 + u) < largest * (1 - 2.0 ** -20))
    return np.where(overflow, np.inf, bound)
