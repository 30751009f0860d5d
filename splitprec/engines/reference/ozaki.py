"""The Ozaki-II engine on numpy: scale to integers, residues, exact modular products, CRT.

The numpy engine is the reference model of the GPU engine (``splitprec.engines.cuda.ozaki``): the same
exponents, the same int8 residues, the same products modulo each ``m_l`` (float32 BLAS over runs of k short
enough that every partial sum is an integer of at most 2**24, the runs added in float64 below 2**53:
exact in any order), and the same float64 operations in the CRT, so both engines return the same bits.
"""
import fractions
import functools
import math

import numpy as np

from ..._backend import broadcast_shapes

from ...ozaki import K_BLOCK, scale_exponents
from .gemm import with_nonfinite


BLOCK = 1 << 15            # entries per pass of an elementwise step: its temporaries stay in the core's cache
RESIDUE_BLOCK = 5000       # entries per pass of residues and CRT, N moduli at once (not a power of two:
                           # the N rows of a temporary, 2**j values apart, would share the cache's sets)


def residues(t, d, dtype=np.float32):
    """Symmetric residues ``t mod m_l`` in ``[-floor(m/2), ceil(m/2) - 1]`` (int8 range) of the
    integer-valued float64 array ``t`` (``|t| < 2**72``): an array ``(N,) + t.shape`` of ``dtype``,
    one entry per modulus (exact in int8, which the engine keeps, and in float32, which the float32
    BLAS of :func:`_block_product` reads).

    The steps of ``ozaki2_residue`` in kernels/common/ozaki2.cuh, each exact: ``t = hi 2**36 +
    lo``, ``r = hi (2**36 mod m) + lo < 2**45``, then ``r - m rint(r / m)`` (+128 -> -128 for 256).
    They run over blocks of ``RESIDUE_BLOCK`` entries, every modulus in each pass, so the passes read
    and write cached memory (the same operations on each entry: the same bits).
    """
    flat = np.ascontiguousarray(t).reshape(-1)
    out = np.empty((d.terms, flat.size), dtype)
    moduli = np.array(d.moduli, np.float64)[:, None]
    high_weights = np.array([float(2 ** 36 % m) for m in d.moduli])[:, None]
    reciprocals = 1.0 / moduli
    even = [l for l, m in enumerate(d.moduli) if m % 2 == 0]  # r = m/2 (a tie of r/m) is past the range
    size = min(RESIDUE_BLOCK, flat.size)
    hi, lo, r, q = np.empty(size), np.empty(size), np.empty((d.terms, size)), np.empty((d.terms, size))
    for start in range(0, flat.size, RESIDUE_BLOCK):
        block = flat[start:start + RESIDUE_BLOCK]
        n = block.size
        h, low, rb, qb = hi[:n], lo[:n], r[:, :n], q[:, :n]
        np.multiply(block, 2.0 ** -36, out=h)
        np.trunc(h, out=h)
        np.multiply(h, 2.0 ** 36, out=low)
        np.subtract(block, low, out=low)
        np.multiply(h, high_weights, out=rb)
        rb += low
        np.multiply(rb, reciprocals, out=qb)
        np.rint(qb, out=qb)
        qb *= moduli
        rb -= qb
        for l in even:
            m = d.moduli[l]
            np.subtract(rb[l], m, out=rb[l], where=rb[l] > (m - 1) // 2)    # r - m (exact)
        np.copyto(out[:, start:start + n], rb, casting="unsafe")          # exact
    return out.reshape((d.terms,) + t.shape)


def crt(r, d):
    """float64 nearest (within one rounding and a tail) to the integer ``C`` with ``|C| < M/2`` and ``C = r_l
    mod m_l`` for every l; ``r`` (an array or sequence of N arrays, integer-valued) holds ``r_l``
    with ``|r_l| < m_l`` first along its leading axis.

    ``S_c = sum_l W[l, c] r_l`` is exact per chunk c, in any order (every product and partial sum
    is), so it runs as float64 BLAS over the moduli; ``q = rint((S_0 + S_1) / M)`` is the multiple
    of M to remove (exact while ``|C| <= 3M/8``); ``T_c = S_c - q M_c`` is exact, and ``C = T_0 +
    T_1 + T_2 (+ T_3)`` is summed as ``h + (e + (T_2 + T_3))`` with ``h + e = T_0 + T_1`` exactly
    (TwoSum), so the result is rounded once but for the tiny low chunks (docs/bounds.md, "Ozaki
    scheme II"). Over blocks of ``RESIDUE_BLOCK`` entries, as :func:`residues`.
    """
    r = np.asarray(r)
    flat = r.reshape(d.terms, -1)
    consts = d.crt_constants()
    count, chunks = d.terms, d.chunks
    weights = np.ascontiguousarray(consts[:count * chunks].reshape(count, chunks).T)
    m_chunks, inverse = consts[count * chunks:-1, None], consts[-1]
    out = np.empty(flat.shape[1])
    size = min(RESIDUE_BLOCK, out.size)
    residue, chunk_sums = np.empty((count, size)), np.empty((chunks, size))
    for start in range(0, out.size, RESIDUE_BLOCK):
        n = min(RESIDUE_BLOCK, out.size - start)
        block, t = residue[:, :n], chunk_sums[:, :n]
        np.copyto(block, flat[:, start:start + n])
        np.matmul(weights, block, out=t)
        q = np.rint((t[0] + t[1]) * inverse)
        t -= q * m_chunks
        low = (t[2] + t[3]) if chunks > 3 else t[2] if chunks > 2 else 0.0
        high = t[0] + t[1]
        z = high - t[0]
        error = (t[0] - (high - z)) + (t[1] - z)        # TwoSum: high + error == T_0 + T_1 exactly
        np.add(high, error + low, out=out[start:start + n])
    return out.reshape(r.shape[1:])


EXACT_IN_FLOAT32 = 1024   # k of residue products whose sums stay exact in float32: 1024 * 128**2 = 2**24


def _block_product(ra, rb, k0, k1, total=None, run=None):
    """``(ra[..., k0:k1] @ rb[..., k0:k1, :], run buffer)`` of residues, exactly, in float64:
    float32 BLAS over runs of ``EXACT_IN_FLOAT32`` (each an integer of at most 2**24, exact in any
    order) added in float64 (below 2**53): the same integers as a float64 product, at float32
    BLAS's rate. ``total`` (float64) and ``run`` (float32), buffers of the product's shape from an
    earlier call, are reused: fresh ones of this size cost their page faults on every call."""
    for j in range(k0, k1, EXACT_IN_FLOAT32):
        x = ra[..., j:min(j + EXACT_IN_FLOAT32, k1)].astype(np.float32, copy=False)
        y = rb[..., j:min(j + EXACT_IN_FLOAT32, k1), :].astype(np.float32, copy=False)
        run = np.matmul(x, y, out=run)
        if j != k0:
            np.add(total, run, out=total)                     # widened as it is read: exact
        elif total is None:
            total = run.astype(np.float64)
        else:
            np.copyto(total, run)
    return total, run


def _fmod(x, m, out=None):
    """``numpy.fmod(x, m)`` of integer-valued float64 ``x`` (``|x| <= 2**51``) and modulus ``m``, by
    exact operations: ``x - m trunc(x r)`` with ``r`` the float64 above ``1/m`` (:func:`_reciprocal`;
    the quotient rounds to the right integer at these magnitudes), the sign of ``x`` kept on zeros
    of a float ``out``, as fmod does; libm's fmod costs ~15 ns an entry. Into ``out`` (``x`` itself
    allowed, or an int16 array when the results fit), over blocks of ``BLOCK`` entries."""
    x = np.ascontiguousarray(x)
    out = np.empty_like(x) if out is None else out
    flat, flat_out = x.reshape(-1), out.reshape(-1)
    signed_zeros = out.dtype.kind == "f"
    reciprocal = _reciprocal(m)
    quotient = np.empty(min(BLOCK, flat.size))
    for start in range(0, flat.size, BLOCK):
        block, part = flat[start:start + BLOCK], flat_out[start:start + BLOCK]
        q = quotient[:block.size]
        np.multiply(block, reciprocal, out=q)
        np.trunc(q, out=q)
        q *= m
        if signed_zeros:
            np.subtract(block, q, out=q)
            np.copysign(q, block, out=part)
        else:
            np.subtract(block, q, out=part, casting="unsafe")
    return out


@functools.lru_cache(maxsize=None)
def _reciprocal(m):
    """The least float64 ``r >= 1/m``: for an integer ``|x| <= 2**51``, ``x r`` exceeds ``x / m`` by
    at most ``1/(2m)`` in magnitude, more than half the float64 spacing short of the next integer,
    so ``trunc(x r) = trunc(x / m)``: a division's result at a multiplication's cost."""
    r = 1.0 / m
    return r if fractions.Fraction(r) >= fractions.Fraction(1, m) else math.nextafter(r, 1.0)


def _modular_products(ra, rb, d):
    """``(A' B') mod m_l`` per modulus from the residues ``ra`` (N, ..., m, k) and ``rb`` (N, ...,
    k, n), reduced like the CRT kernel: ``acc = P_0``, then ``acc = fmod(acc, m) + fmod(P_b, m)``
    for each further k-block ``b``, then ``fmod(acc, m)`` (``fmod(P_0, m)`` kept for ``P_0``: the
    same values, fmod being idempotent). One int16 array (N, ..., m, n): every value kept is an
    integer below ``2 m`` in magnitude (zeros lose their sign, which no result of :func:`crt`
    depends on). Each modulus's residues are widened to float32 into one buffer per operand, reused
    across moduli."""
    k = ra.shape[-1]
    x, y = np.empty(ra.shape[1:], np.float32), np.empty(rb.shape[1:], np.float32)
    shape = broadcast_shapes(x.shape[:-2], y.shape[:-2]) + (x.shape[-2], y.shape[-1])
    out = np.empty((d.terms,) + shape, np.int16)
    total = run = None
    for l, m in enumerate(d.moduli):
        np.copyto(x, ra[l])
        np.copyto(y, rb[l])
        acc = out[l]
        for k0 in range(0, k, K_BLOCK):
            total, run = _block_product(x, y, k0, min(k0 + K_BLOCK, k), total, run)
            if k0 == 0:
                _fmod(total, m, out=acc)
            else:
                reduced = _fmod(acc.astype(np.float64), m)
                reduced += _fmod(total, m, out=total)
                np.copyto(acc, reduced, casting="unsafe")
        if k > K_BLOCK:
            _fmod(acc.astype(np.float64), m, out=acc)
    return out


def _product(a, b, d):
    """``(a @ b with NaN/inf inputs taken as zeros, whether every input is finite)`` for float64
    numpy arrays of ndim >= 2 (batch dimensions broadcast) in Ozaki-II scheme ``d`` (cupy arrays:
    ``splitprec.engines.cuda.ozaki.matmul``).

    Accuracy: ``accuracy.gemm_bound(a, b, d)``, checked by
    ``tests/test_ozaki.py::test_matmul_error_within_bound``.
    """
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    all_finite = bool(np.isfinite(a).all()) and bool(np.isfinite(b).all())
    if not all_finite:
        a, b = (np.where(np.isfinite(x), x, 0.0) for x in (a, b))
    if 0 in (m, k, n) or 0 in batch:
        return np.zeros(batch + (m, n)), all_finite
    bits_a, bits_b = d.bits
    sigma, tau = scale_exponents(a, bits_a, -1), scale_exponents(b, bits_b, -2)
    ra, rb = (residues(_integers(x, e), d, np.int8) for x, e in ((a, sigma), (b, tau)))
    value = crt(_modular_products(ra, rb, d), d)
    return np.ldexp(value, -(sigma + tau), out=value), all_finite


def _integers(x, e):
    """``rint(x 2**e)``, in one array."""
    t = np.ldexp(x, e)
    return np.rint(t, out=t)


def matmul(a, b, d):
    """``a @ b`` for float64 numpy arrays of ndim >= 2 in Ozaki-II scheme ``d``: NaN/inf exactly
    where the float64 product has them.

    Accuracy: ``accuracy.gemm_bound(a, b, d)``, checked by
    ``tests/test_ozaki.py::test_matmul_error_within_bound``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        c, all_finite = _product(a, b, d)
    return c if all_finite else with_nonfinite(c, a, b)
