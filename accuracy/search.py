"""Adversarial search: hypothesis strategies over the case generators, and the ratio they maximize.

``gemm_inputs()`` and ``fft_inputs()`` draw a generator family of :mod:`accuracy.cases`, its
parameters and a seed, or raw float32 bit patterns; ``gemm64_inputs()`` draws float64 operands
for the fp64 schemes ``ozaki2_int8x<N>`` (exponent spans across and within rows and columns, ties
on the Ozaki-II rounding grid, float64's range edges, NaN/inf, raw float64 values). The tests call
``hypothesis.target(ratio)`` so the search climbs toward the largest ``error / bound``.
``PINNED_GEMM`` / ``PINNED_GEMM64`` hold known hard inputs (rounding ties, cancellation, range
edges), pinned as ``@example`` in the tests. This module needs hypothesis (a test dependency);
the rest of the harness does not import it.
"""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from splitprec.ozaki import SCHEMES as OZAKI2_SCHEMES, scale_exponents

from . import cases
from .measure import measure_fft, measure_gemm

FAMILIES = ("normal", "uniform", "span", "cancel", "near_max", "near_min", "subnormal", "row_span",
            "ties", "bits")


def gemm_ratio(a, b, scheme, engine="cpu"):
    """``max |C_hat - C| / gemm_bound`` for ``splitprec.matmul(a, b, dtype=scheme)``."""
    with np.errstate(all="ignore"):
        return measure_gemm(a, b, scheme, engine, probabilistic=False).ratio


def fft_ratio(x, scheme, engine="cpu"):
    """``||X_hat - X|| / (fft_bound * ||X||)`` for ``splitprec.fft.fft(x, dtype=scheme)``."""
    with np.errstate(all="ignore"):
        return measure_fft(x, scheme, engine, probabilistic=False).ratio


def ties(rng, shape, p):
    """Values exactly halfway between two neighbours of a ``p``-bit format (round-to-even ties),
    and halfway points of the residual after one part."""
    e = rng.integers(-20, 20, shape)
    odd = rng.integers(0, 2 ** (p - 1), shape) * 2 + 1
    first = (2.0 ** (p - 1) + rng.integers(0, 2 ** (p - 1), shape)) * 2.0 ** -(p - 1)
    x = np.where(rng.random(shape) < 0.5, first + 2.0 ** -p, first + odd * 2.0 ** -(2 * p))
    return (x * 2.0 ** e * rng.choice([-1, 1], shape)).astype(np.float32)


def _family(rng, family, shape, k, param):
    if family == "normal":
        return cases.normal(rng, shape)
    if family == "uniform":
        return cases.uniform(rng, shape)
    if family == "span":
        return cases.exponent_span(rng, shape, param * 20)
    if family == "near_min":
        return cases.near_min_normal(rng, shape)
    if family == "subnormal":
        return cases.subnormal(rng, shape)
    if family == "row_span":
        return cases.row_span(rng, shape, int(param * 80))
    return ties(rng, shape, (8, 11)[int(param * 2) % 2])


@st.composite
def gemm_inputs(draw, max_k=64, max_side=5):
    """``(a, b)`` float32 operands from a generator family, or raw float32 values."""
    family = draw(st.sampled_from(FAMILIES))
    m, n = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    k = draw(st.integers(1, max_k))
    if family == "bits":
        values = st.floats(width=32, allow_nan=False, allow_infinity=False,
                           min_value=-2.0 ** 60, max_value=2.0 ** 60)
        return (draw(hnp.arrays(np.float32, (m, k), elements=values)),
                draw(hnp.arrays(np.float32, (k, n), elements=values)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    param = draw(st.floats(0, 1))
    if family == "cancel":
        return cases.cancellation(rng, m, max(k, 2), n, 10.0 ** (param * 30))
    if family == "near_max":
        return cases.near_max(rng, (m, k), k)
    a = _family(rng, family, (m, k), k, param)
    b_family = draw(st.sampled_from((family, "normal", "ties")))
    return a, _family(rng, b_family, (k, n), k, draw(st.floats(0, 1)))


FAMILIES64 = ("normal", "uniform", "span", "scaled_rows", "scaled_entries", "row_span", "cancel",
              "near_max", "huge_tiny", "near_min", "subnormal", "grid_ties", "zeros", "nonfinite", "bits")
GRID_BITS = sorted({q for d in OZAKI2_SCHEMES for q in d.bits})   # Q_A, Q_B of every ozaki2 scheme


def grid_ties(rng, shape, bits):
    """N(0,1) rows moved to ``(n + 1/2) * 2**-sigma``: halfway between two points of the grid on
    which an Ozaki-II scheme with ``bits`` = Q rounds them (``sigma`` from the row's norm, as
    ``splitprec.ozaki.scale_exponents``), wherever float64 holds that value."""
    x = cases.normal(rng, shape, np.float64)
    sigma = scale_exponents(x, bits, -1)
    return np.ldexp(np.floor(np.ldexp(x, sigma)) + 0.5, -sigma)


def _rows64(rng, family, shape, param):
    """float64 ``(rows, k)`` from ``family``, reduced along its rows (B is drawn as its transpose)."""
    f64 = np.float64
    make = {"normal": lambda: cases.normal(rng, shape, f64),
            "uniform": lambda: cases.uniform(rng, shape, f64),
            "span": lambda: cases.exponent_span(rng, shape, param * 80, f64),
            "scaled_rows": lambda: cases.scaled_rows(rng, shape, int(param * 500)),
            "scaled_entries": lambda: cases.scaled_entries(rng, shape, int(param * 300)),
            "row_span": lambda: cases.row_span(rng, shape, int(param * 150), f64),
            "near_min": lambda: cases.near_min_normal(rng, shape, f64),
            "subnormal": lambda: cases.subnormal(rng, shape, f64),
            "grid_ties": lambda: grid_ties(rng, shape, GRID_BITS[min(int(param * len(GRID_BITS)),
                                                                     len(GRID_BITS) - 1)]),
            "zeros": lambda: cases.normal(rng, shape, f64) * (rng.random((shape[0], 1)) < 0.5),
            "nonfinite": lambda: cases.with_nonfinite(rng, cases.normal(rng, shape, f64))}
    return make[family]()


@st.composite
def gemm64_inputs(draw, max_k=64, max_side=5):
    """``(a, b)`` float64 operands for the fp64 schemes: a family of :data:`FAMILIES64` for each
    operand (rows of A, columns of B), or raw float64 values of any magnitude."""
    family = draw(st.sampled_from(FAMILIES64))
    m, n = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    k = draw(st.integers(1, max_k))
    if family == "bits":
        values = st.floats(width=64, allow_nan=False, allow_infinity=False)
        return (draw(hnp.arrays(np.float64, (m, k), elements=values)),
                draw(hnp.arrays(np.float64, (k, n), elements=values)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    param = draw(st.floats(0, 1))
    if family == "cancel":
        return cases.cancellation(rng, m, max(k, 2), n, 10.0 ** (param * 60), np.float64)
    if family == "near_max":
        return cases.near_max(rng, (m, k), k, np.float64)
    if family == "huge_tiny":
        return (np.ldexp(cases.normal(rng, (m, k), np.float64), 1000),
                np.ldexp(cases.normal(rng, (k, n), np.float64), -int(1000 + param * 74)))
    b_family = draw(st.sampled_from((family, "normal", "grid_ties")))
    return _rows64(rng, family, (m, k), param), _rows64(rng, b_family, (n, k), draw(st.floats(0, 1))).T


@st.composite
def fft_inputs(draw, max_n=96):
    """A complex64 signal: random, a tone, an impulse or a wide dynamic range, of length <= max_n."""
    n = draw(st.integers(1, max_n))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    kind = draw(st.sampled_from(("normal", "tone", "impulse", "wide")))
    if kind == "tone":
        return cases.tone(n, draw(st.integers(0, max(n - 1, 0))))
    if kind == "impulse":
        return cases.impulse(n, draw(st.integers(0, n - 1)))
    if kind == "wide":
        return cases.wide_range(rng, n, draw(st.floats(0, 12)))
    return cases.complex_normal(rng, n)


def _tie_pair(p, k):
    """``a = b = 1 + 2**-p`` (a round-to-even tie of a ``p``-bit part), k copies."""
    one = np.float32(1 + 2.0 ** -p)
    return np.full((1, k), one, np.float32), np.full((k, 1), one, np.float32)


def _residual_tie_pair(p):
    """Values whose lower part is itself a tie: the largest dropped lo*lo product."""
    x = np.float32((1 + 2.0 ** -(p + 1)) + 2.0 ** -(2 * p) * 1.5)
    return np.full((1, 1), x, np.float32), np.full((1, 1), x, np.float32)


def _subnormal_tie_pair(scale):
    """``a = 3 * 2**-134``: a float32 subnormal exactly halfway between bf16 subnormals, so every
    bf16 part rounds it by the full underflow error ``2**-134`` (the absolute term is attained)."""
    return np.float32([[3 * 2.0 ** -134]]), np.float32([[scale]])


PINNED_GEMM = {
    "bf16_subnormal_tie": _subnormal_tie_pair(1.0),
    "bf16_subnormal_tie_large": _subnormal_tie_pair(-894976.0),
    "subnormal_times_large": (np.float32([[6.106605e-39]]), np.float32([[-894976.0]])),
    "bf16_tie_k1": _tie_pair(8, 1),
    "tf32_tie_k1": _tie_pair(11, 1),
    "bf16_tie_k64": _tie_pair(8, 64),
    "tf32_residual_tie_k1": _residual_tie_pair(11),
    "bf16_residual_tie_k1": _residual_tie_pair(8),
    "cancel_1e30_k64": cases.cancellation(np.random.default_rng(7), 2, 64, 2, 1e30),
    "near_max_k4": cases.near_max(np.random.default_rng(3), (2, 4), 4),
    "subnormal_times_one": (cases.subnormal(np.random.default_rng(5), (3, 8)),
                            np.ones((8, 3), np.float32)),
    "tiny_times_tiny": (cases.near_min_normal(np.random.default_rng(9), (3, 8)),
                        cases.near_min_normal(np.random.default_rng(10), (8, 3))),
    # Found by the search (error/bound > 0.9): a float32-subnormal result after the pow2 unscale,
    # and float32-subnormal inputs whose tf32 parts round by the full underflow error.
    "subnormal_result_pow2": (
        np.float32([[-6.8039457e-37], [-6.9580747e-37], [7.4738354e-38], [-1.2987132e-38],
                    [-2.216731e-39]]),
        np.float32([[2.7364035e-06, 1.2046658e-06, 3.7653372e-06, -3.59153e-05, -995072.0]])),
    "tf32_subnormal_inputs": (
        np.float32([[7.323437e-39], [-9.74134e-39], [-7.536312e-39]]),
        np.float32([[-0.00072288513, 0.0001540184, 4741.3125, 27712.0, 13.894409]])),
    "row_span_60bits": (cases.row_span(np.random.default_rng(11), (3, 16), 60),
                        cases.normal(np.random.default_rng(12), (16, 3))),
}


def _grid_tie_pair(bits):
    """``a = b = 1.5 + 2**-bits``: halfway between two points of the grid ``2**(1 - bits)`` on which
    an Ozaki-II scheme with ``Q_A = Q_B = bits`` rounds a value in (1, 2] (k = 1): the rounding
    error ``2**-bits`` of each operand is attained."""
    x = 1.5 + 2.0 ** -bits
    return np.array([[x]]), np.array([[x]])


def _fp64(gen, *args, seed):
    return gen(np.random.default_rng(seed), *args, dtype=np.float64)


PINNED_GEMM64 = {
    "x12_grid_tie_k1": _grid_tie_pair(46),
    "x13_grid_tie_k1": _grid_tie_pair(50),
    # 3 * 2**-54 in a row of norm ~1 is halfway on x14's grid 2**-53 (sigma = 53): error 2**-54.
    "small_entry_tie_k2": (np.array([[1.0, 3 * 2.0 ** -54]]), np.array([[2.0 ** -40], [1.0]])),
    "near_max_k4": cases.near_max(np.random.default_rng(3), (2, 4), 4, np.float64),
    "overflowing_product": (np.full((1, 2), 1e308), np.full((2, 2), 10.0)),
    "huge_times_tiny": (np.ldexp(_fp64(cases.normal, (2, 8), seed=4), 1000),
                        np.ldexp(_fp64(cases.normal, (8, 3), seed=5), -1070)),
    "subnormal_results": (np.ldexp(_fp64(cases.normal, (3, 8), seed=6), -560),
                          np.ldexp(_fp64(cases.normal, (8, 2), seed=7), -500)),
    "subnormal_times_one": (_fp64(cases.subnormal, (3, 8), seed=8), np.ones((8, 3))),
    "row_span_120bits": (_fp64(cases.row_span, (3, 16), 120, seed=9), _fp64(cases.normal, (16, 3), seed=10)),
    "span_phi64": (_fp64(cases.exponent_span, (3, 32), 64, seed=11),
                   _fp64(cases.exponent_span, (32, 3), 64, seed=12)),
    "cancel_1e60_k64": cases.cancellation(np.random.default_rng(13), 2, 64, 2, 1e60, np.float64),
    "nonfinite": (cases.with_nonfinite(np.random.default_rng(14), _fp64(cases.normal, (3, 5), seed=15)),
                  _fp64(cases.normal, (5, 2), seed=16)),
}
