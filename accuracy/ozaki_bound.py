"""Rigorous per-entry error bound of the Ozaki-II schemes ``ozaki2_int8x<N>`` (float64 target).

Derived in docs/bounds.md, section "Ozaki scheme II": the int8 products and the CRT are exact, so
the error is the rounding of each row of A and column of B to integers on their power-of-two grid
(``splitprec.ozaki.scale_exponents``), plus the float64 rounding of the recovered integer.
``accuracy.gemm_bound`` calls :func:`ozaki2_gemm_bound` for these schemes.
"""
import numpy as np

from splitprec.ozaki import scale_exponents

from .reference import _nonfinite_pattern

U64 = 2.0 ** -53                     # float64 unit roundoff
TINY64 = 2.0 ** -1074                # float64 subnormal spacing
FP64_MAX = float(np.finfo(np.float64).max)
TAIL = 2.0 ** -112                   # rounding of the low CRT chunks, per 2**(e_i + e_j)


def _operand(x, name, op):
    x = np.asarray(x)
    if x.dtype != np.float64:
        raise TypeError(f"{op}: {name} has dtype {x.dtype}; the ozaki2 schemes take float64")
    if x.ndim < 2:
        raise ValueError(f"{op}: {name} has shape {x.shape}; expected ndim >= 2 (..., rows, cols)")
    return x


def matmul_shapes(a, b, op):
    """Check that ``a @ b`` is defined: equal inner dimensions and batch dimensions that broadcast
    (ValueError naming both shapes otherwise)."""
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"{op}: inner dimensions differ: a has shape {a.shape}, b has shape {b.shape}")
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"{op}: batch dimensions do not broadcast: a has shape {a.shape}, b has shape "
                         f"{b.shape} (batch {a.shape[:-2]} against {b.shape[:-2]})") from None


def _rounding_error(x, sigma):
    """Bound on ``|rint(x * 2**sigma) * 2**-sigma - x|``: 0 where ``x * 2**sigma`` is a (normal)
    integer, else ``min(|x|, 2**(-sigma - 1))`` (that power clamped to at least 2**-1074)."""
    t = np.ldexp(x, sigma)
    exact = (t == np.rint(t)) & (np.abs(t) >= np.finfo(np.float64).tiny)
    half = np.maximum(np.ldexp(1.0, (-sigma - 1).astype(np.int32)), TINY64)
    return np.where((x == 0) | exact, 0.0, np.minimum(np.abs(x), half))


def ozaki2_gemm_bound(a, b, d):
    """Per-entry bound on ``|splitprec.matmul(a, b, dtype=d) - a @ b|`` (exact product), either engine.

    ``E = |dA||B| + |A||dB| + |dA||dB| + 2u(1 + 2**-50)(|A| + |dA|)(|B| + |dB|) + 2**-112 2**(e_i + e_j)
    + (3k + 8) 2**-1074``, with ``dA``, ``dB`` the integer-rounding errors, ``u = 2**-53`` and
    ``2**e_i`` the power-of-two bound on row i's 2-norm; inflated for the bound's own float64
    rounding. inf where the result may overflow and where the exact product is NaN/inf. The only
accumulation rounding is the final one, so ``gemm_bound(..., kind="probabilistic")`` is this bound.

    Accuracy: derived in docs/bounds.md ("Ozaki scheme II"); checked by
    ``tests/test_ozaki.py::test_matmul_error_within_bound``.
    """
    op = "gemm_bound"
    a, b = _operand(a, "a", op), _operand(b, "b", op)
    matmul_shapes(a, b, op)
    k = a.shape[-1]
    clean_a = np.where(np.isfinite(a), a, 0.0)
    clean_b = np.where(np.isfinite(b), b, 0.0)
    bits_a, bits_b = d.bits
    sigma, tau = scale_exponents(clean_a, bits_a, -1), scale_exponents(clean_b, bits_b, -2)
    da, db = _rounding_error(clean_a, sigma), _rounding_error(clean_b, tau)
    mag_a, mag_b = np.abs(clean_a), np.abs(clean_b)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        scaling = np.matmul(da, mag_b) + np.matmul(mag_a, db) + np.matmul(da, db)
        magnitude = np.matmul(mag_a + da, mag_b + db)
        nonzero = np.matmul((mag_a > 0).any(-1, keepdims=True), (mag_b > 0).any(-2, keepdims=True))
        tail = np.where(nonzero, np.ldexp(TAIL, (bits_a - sigma) + (bits_b - tau)), 0.0)
        bound = scaling + 2 * U64 * (1 + 2.0 ** -50) * magnitude + tail + (3 * k + 8) * TINY64
        bound = np.nextafter(bound * (1 + (k + 16) * 2.0 ** -52), np.inf)
        overflow = ~(magnitude * (1 + 2.0 ** -40) + bound < FP64_MAX)
    pattern = _nonfinite_pattern(a, b)
    return np.where(overflow if pattern is None else overflow | ~np.isfinite(pattern), np.inf, bound)
