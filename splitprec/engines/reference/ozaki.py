"""The Ozaki-II engine on numpy: scale to integers, residues, exact modular products, CRT.

The numpy engine is the reference model of the GPU engine (``splitprec.engines.cuda.ozaki``): the same
exponents, the same int8 residues, the same products modulo each ``m_l`` (float32 BLAS over runs of k short
enough that every partial sum is an integer of at most 2**24, the runs added in float64 below 2**53:
exact in any order), and the same float64 operations in the CRT, so both engines return the same bits.
"""
import numpy as np

from ..._backend import broadcast_shapes

from ...ozaki import K_BLOCK, scale_exponents
from .gemm import with_nonfinite


RESIDUE_BLOCK = 1 << 14    # entries per pass of residues: its temporaries stay in the core's cache


def residues(t, d):
    """Symmetric residues ``t mod m_l`` in ``[-floor(m/2), ceil(m/2) - 1]`` (int8 range) of the
    integer-valued float64 array ``t`` (``|t| < 2**72``), one float32 array per modulus (exact: the
    float32 BLAS of :func:`_block_product` reads them as they are).

    The steps of ``ozaki2_residue`` in kernels/common/ozaki2.cuh, each exact: ``t = hi 2**36 +
    lo``, ``r = hi (2**36 mod m) + lo < 2**45``, then ``r - m rint(r / m)`` (+128 -> -128 for 256).
    They run over blocks of ``RESIDUE_BLOCK`` entries, every modulus per block, so the nine passes
    per modulus read and write cached memory (the same operations on each entry: the same bits).
    """
    flat = np.ascontiguousarray(t).reshape(-1)
    out = [np.empty(t.shape, np.float32) for _ in d.moduli]
    flat_out = [x.reshape(-1) for x in out]
    size = min(RESIDUE_BLOCK, flat.size)
    hi, lo, r, q, past = np.empty(size), np.empty(size), np.empty(size), np.empty(size), np.empty(size, bool)
    for start in range(0, flat.size, RESIDUE_BLOCK):
        block = flat[start:start + RESIDUE_BLOCK]
        n = block.size
        h, low, rb, qb, pb = hi[:n], lo[:n], r[:n], q[:n], past[:n]
        np.multiply(block, 2.0 ** -36, out=h)
        np.trunc(h, out=h)
        np.multiply(h, 2.0 ** 36, out=low)
        np.subtract(block, low, out=low)
        for m, residue in zip(d.moduli, flat_out):
            np.multiply(h, float(2 ** 36 % m), out=rb)
            rb += low
            np.multiply(rb, 1.0 / m, out=qb)
            np.rint(qb, out=qb)
            qb *= m
            rb -= qb
            part = residue[start:start + n]
            part[...] = rb                                                 # float32: exact
            if m % 2 == 0:      # r = m/2 (a tie of r/m) is past the range; odd m have no ties
                np.greater(rb, (m - 1) // 2, out=pb)
                np.subtract(part, np.float32(m), out=part, where=pb)      # r - m (exact)
    return out


def crt(r, d):
    """float64 nearest (within one rounding and a tail) to the integer ``C`` with ``|C| < M/2`` and ``C = r_l
    mod m_l`` for every l; ``r`` holds one float64 array per modulus with ``|r_l| < m_l``.

    ``S_c = sum_l W[l, c] r_l`` is exact per chunk c; ``q = rint((S_0 + S_1) / M)`` is the multiple
    of M to remove (exact while ``|C| <= 3M/8``); ``T_c = S_c - q M_c`` is exact, and ``C = T_0 +
    T_1 + T_2 (+ T_3)`` is summed as ``h + (e + (T_2 + T_3))`` with ``h + e = T_0 + T_1`` exactly
    (TwoSum), so the result is rounded once but for the tiny low chunks (docs/bounds.md, "Ozaki
    scheme II"). Over blocks of ``RESIDUE_BLOCK`` entries, as :func:`residues`.
    """
    flat = [np.ascontiguousarray(x).reshape(-1) for x in r]
    out = np.empty(flat[0].size)
    for start in range(0, out.size, RESIDUE_BLOCK):
        out[start:start + RESIDUE_BLOCK] = _crt_block([x[start:start + RESIDUE_BLOCK] for x in flat], d)
    return out.reshape(r[0].shape)


def _crt_block(r, d):
    """:func:`crt` of one block of entries (1-D arrays)."""
    consts = d.crt_constants()
    count, chunks = d.terms, d.chunks
    weights, m_chunks, inverse = consts[:count * chunks].reshape(count, chunks), \
        consts[count * chunks:-1], consts[-1]
    s = [weights[0, c] * r[0] for c in range(chunks)]
    term = np.empty_like(s[0])
    for l in range(1, count):
        for c in range(chunks):
            np.multiply(weights[l, c], r[l], out=term)
            s[c] += term
    q = np.rint((s[0] + s[1]) * inverse)
    t = s
    for c in range(chunks):
        np.multiply(q, m_chunks[c], out=term)
        t[c] -= term
    low = (t[2] + t[3]) if chunks > 3 else t[2] if chunks > 2 else 0.0
    high = t[0] + t[1]
    z = high - t[0]
    error = (t[0] - (high - z)) + (t[1] - z)        # TwoSum: high + error == T_0 + T_1 exactly
    return high + (error + low)


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
    """``numpy.fmod(x, m)`` of integer-valued float64 ``x`` (``|x| < 2**52``) and modulus ``m``, by
    exact operations: ``x - m trunc(x / m)`` (the quotient rounds to the right integer at these
    magnitudes), the sign of ``x`` kept on zeros, as fmod does; libm's fmod costs ~15 ns an entry.
    Into ``out`` (``x`` itself allowed, or a float32 array when the results fit), over blocks of
    ``RESIDUE_BLOCK`` entries as :func:`residues`."""
    x = np.ascontiguousarray(x)
    out = np.empty_like(x) if out is None else out
    flat, flat_out = x.reshape(-1), out.reshape(-1)
    quotient = np.empty(min(RESIDUE_BLOCK, flat.size))
    for start in range(0, flat.size, RESIDUE_BLOCK):
        block = flat[start:start + RESIDUE_BLOCK]
        q = quotient[:block.size]
        np.divide(block, m, out=q)
        np.trunc(q, out=q)
        q *= m
        np.subtract(block, q, out=q)
        np.copysign(q, block, out=flat_out[start:start + RESIDUE_BLOCK])
    return out


def _modular_products(ra, rb, d):
    """``(A' B') mod m_l`` per modulus, reduced like the CRT kernel: ``acc = P_0``, then
    ``acc = fmod(acc, m) + fmod(P_b, m)`` for each further k-block ``b``, then ``fmod(acc, m)``
    (``fmod(P_0, m)`` kept for ``P_0``: the same values, fmod being idempotent). float32 arrays:
    every value kept is an integer below ``2 m`` in magnitude, exact."""
    k = ra[0].shape[-1]
    out, total, run = [], None, None
    for l, m in enumerate(d.moduli):
        acc = None
        for k0 in range(0, k, K_BLOCK):
            total, run = _block_product(ra[l], rb[l], k0, min(k0 + K_BLOCK, k), total, run)
            if acc is None:
                acc = _fmod(total, m, out=np.empty(total.shape, np.float32))
            else:
                reduced = _fmod(acc.astype(np.float64), m)
                reduced += _fmod(total, m, out=total)
                acc = reduced.astype(np.float32)
        out.append(acc if k <= K_BLOCK else _fmod(acc.astype(np.float64), m).astype(np.float32))
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
    ra = residues(np.rint(np.ldexp(a, sigma)), d)
    rb = residues(np.rint(np.ldexp(b, tau)), d)
    value = crt(_modular_products(ra, rb, d), d)
    return np.ldexp(value, -(sigma + tau)), all_finite


def matmul(a, b, d):
    """``a @ b`` for float64 numpy arrays of ndim >= 2 in Ozaki-II scheme ``d``: NaN/inf exactly
    where the float64 product has them.

    Accuracy: ``accuracy.gemm_bound(a, b, d)``, checked by
    ``tests/test_ozaki.py::test_matmul_error_within_bound``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        c, all_finite = _product(a, b, d)
    return c if all_finite else with_nonfinite(c, a, b)
