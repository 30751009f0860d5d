"""Rigorous per-entry error bounds of the fp64 schemes: ``ozaki2_int8x<N>`` and ``ozaki2_int8_adaptive``.

Derived in docs/bounds.md, sections 12 and 13. A fixed-count product: the int8 products and the CRT
are exact, so the error is the rounding of each row of A and column of B to integers on their
power-of-two grid (``splitprec.ozaki.scale_exponents``) plus the float64 rounding of the recovered
integer. The adaptive scheme: the same bound for each slice pair of its plan
(``splitprec.ozaki_plan.plan``), the Sum2 rounding over the pairs, DGEMM's bound for the entries it
computes in float64. Both: entries whose norms allow a result beyond float64's range are float64
dot products (``splitprec.engines.fp64.rescue_overflow``). ``accuracy.gemm_bound`` calls
:func:`ozaki2_gemm_bound` for these schemes.
"""
import numpy as np

from splitprec.ozaki import scale_exponents
from splitprec.ozaki_plan import ADAPTIVE, RESCUE_EXPONENT, gamma, overflow_risk, plan

from splitprec.interop import unmasked

from .reference import infinite_where_unbounded, round_up as _round_up

U64 = 2.0 ** -53                     # float64 unit roundoff
TINY64 = 2.0 ** -1074                # float64 subnormal spacing
FP64_MAX = float(np.finfo(np.float64).max)
TAIL = 2.0 ** -112                   # rounding of the low CRT chunks, per 2**(e_i + e_j)
ENGINES = ("cpu", "gpu")


def _operand(x, name, op):
    x = np.asarray(unmasked(x, op, name))
    if x.dtype != np.float64:
        raise TypeError(f"{op}: {name} has dtype {x.dtype}; the ozaki2 schemes take float64")
    if x.ndim < 2:
        raise ValueError(f"{op}: {name} has shape {x.shape}; expected ndim >= 1")
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


def _pair_bound(a, b, d):
    """``(bound, magnitude)`` for one fixed-count product of finite ``a``, ``b`` in scheme ``d``
    (docs/bounds.md, section 12): ``bound = |dA||B| + |A||dB| + |dA||dB| + u(1 + 2**-50)(|A| +
    |dA|)(|B| + |dB|) + 2**-112 2**(e_i + e_j) + (3k + 8) 2**-1074``, the tail only where row i of
    A and column j of B share a nonzero position (else the integer product is 0, exactly), and
    ``magnitude = (|A| + |dA|)(|B| + |dB|)``, which bounds the result's magnitude."""
    k = a.shape[-1]
    bits_a, bits_b = d.bits
    sigma, tau = scale_exponents(a, bits_a, -1), scale_exponents(b, bits_b, -2)
    da, db = _rounding_error(a, sigma), _rounding_error(b, tau)
    mag_a, mag_b = np.abs(a), np.abs(b)
    scaling = np.matmul(da, mag_b) + np.matmul(mag_a, db) + np.matmul(da, db)
    magnitude = np.matmul(mag_a + da, mag_b + db)
    shared = np.matmul((mag_a > 0).astype(np.float64), (mag_b > 0).astype(np.float64)) > 0
    tail = np.where(shared, np.ldexp(TAIL, (bits_a - sigma) + (bits_b - tau)), 0.0)
    bound = scaling + U64 * (1 + 2.0 ** -50) * magnitude + tail + (3 * k + 8) * TINY64
    return _round_up(bound, k + 8), magnitude

def _float64_bound(a, b, s, t):
    """Bound of the float64 dot products of rows of ``a`` scaled by ``2**-s`` and columns of ``b``
    by ``2**-t`` (exponents >= 0), scaled back: ``gamma_k (|A| + dA)(|B| + dB) + dA|B| + |A|dB +
    dA dB + k 2**(s + t - 1075)``, ``dA = 2**(s - 1075)`` at nonzero entries (the scaling's
    underflow). With ``s = t = 0`` DGEMM's worst-case bound ``gamma_k |A||B| + k 2**-1074``."""
    k = a.shape[-1]
    da = np.where((a != 0) & (s > 0), np.ldexp(TINY64, np.maximum(s - 1, 0)), 0.0)
    db = np.where((b != 0) & (t > 0), np.ldexp(TINY64, np.maximum(t - 1, 0)), 0.0)
    mag_a, mag_b = np.abs(a), np.abs(b)
    bound = gamma(k) * np.matmul(mag_a + da, mag_b + db) + np.matmul(da, mag_b) + \
        np.matmul(mag_a, db) + np.matmul(da, db) + k * np.ldexp(TINY64, np.maximum(s + t - 1, 0))
    return _round_up(bound, k + 8)


def _adaptive_bound(a, b, engine):
    """The bound of ``ozaki2_int8_adaptive``'s plan for finite ``a``, ``b`` (docs/bounds.md, 13)."""
    unscaled = np.zeros((), np.int32)
    dgemm = _float64_bound(a, b, unscaled, unscaled)
    p = plan(a, b)
    if p.everything_float64:
        return dgemm
    total, magnitude, count = (np.zeros(dgemm.shape) for _ in range(3))
    for x, y, rows, cols in p.pieces(a, b):
        block = (Ellipsis, rows[:, None], cols[None, :])
        pair, size = _pair_bound(x, y, p.scheme)
        total[block] += pair
        magnitude[block] += size
        count[block] += 1
    sum2 = np.where(count > 1, U64 + ((count - 1) * U64 / (1 - (count - 1) * U64)) ** 2, 0.0)
    bound = _round_up(total + sum2 * (magnitude + total), 32)
    bound[..., p.float64_rows, :] = dgemm[..., p.float64_rows, :]
    bound[..., p.float64_cols] = dgemm[..., p.float64_cols]
    return np.maximum(bound, dgemm) if engine == "gpu" else bound


def _rescued(a, b, bound):
    """``bound`` with the entries that ``splitprec.engines.fp64.rescue_overflow`` recomputes given
    the bound of the scaled float64 dot products (which covers the plain ones)."""
    risky, e_a, e_b = overflow_risk(a, b)
    if not risky.any():
        return bound
    s, t = np.maximum(e_a - RESCUE_EXPONENT, 0), np.maximum(e_b - RESCUE_EXPONENT, 0)
    return np.where(risky, _float64_bound(a, b, s, t), bound)


def ozaki2_gemm_bound(a, b, d, engine="cpu"):
    """Per-entry bound on ``|splitprec.matmul(a, b, dtype=d) - fl(a @ b)|``, the distance to the
    correctly rounded exact product (``accuracy.exact_matmul``), for the fp64 scheme ``d``: a
    fixed-count ``ozaki2_int8x<N>`` (either engine, which return the same bits) or
    ``ozaki2_int8_adaptive`` on ``engine`` ("gpu": also covers its DGEMM fallback). It is the bound
    ``E`` on the distance to the exact product plus that rounding, ``u |A||B| + 2**-1074``.

    Fixed count: ``E = |dA||B| + |A||dB| + |dA||dB| + u(1 + 2**-50)(|A| + |dA|)(|B| + |dB|) +
    2**-112 2**(e_i + e_j) + (3k + 8) 2**-1074``, with ``dA``, ``dB`` the integer-rounding errors and
    ``2**e_i`` the power-of-two bound on row i's 2-norm. Adaptive: the sum of that bound over the
    plan's slice pairs plus Sum2's rounding, DGEMM's ``gamma_k |A||B| + k 2**-1074`` where it runs
    float64. Both: the bound of float64 dot products where ``e_i + e_j >= 1024``; inflated for the
    bound's own float64 rounding; inf where the result may overflow and where the exact product is
    NaN/inf. The fixed-count schemes' only accumulation rounding is the final one, so
    ``gemm_bound(..., kind="probabilistic")`` is this bound.

    Accuracy: derived in docs/bounds.md (sections 12, 15); checked by
    ``tests/test_ozaki.py::test_matmul_error_within_bound`` and
    ``tests/test_fp64.py::test_adaptive_error_within_bound_on_spans_and_range_edges``.
    """
    op = "gemm_bound"
    if engine not in ENGINES:
        raise ValueError(f"{op}: unknown engine {engine!r}; expected one of 'cpu', 'gpu'")
    a, b = _operand(a, "a", op), _operand(b, "b", op)
    matmul_shapes(a, b, op)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    if 0 in shape or a.shape[-1] == 0:
        return np.zeros(shape)
    clean_a = np.where(np.isfinite(a), a, 0.0)
    clean_b = np.where(np.isfinite(b), b, 0.0)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        if d == ADAPTIVE:
            bound = _adaptive_bound(clean_a, clean_b, engine)
        else:
            bound = _pair_bound(clean_a, clean_b, d)[0]
        bound = _rescued(clean_a, clean_b, bound)
        magnitude = _round_up(np.matmul(np.abs(clean_a), np.abs(clean_b)), a.shape[-1])
        bound = _round_up(bound + U64 * magnitude + TINY64, 2)    # to the correctly rounded product
        overflow = ~(magnitude + bound < FP64_MAX)
    return infinite_where_unbounded(bound, overflow, a, b)
