"""Exact references: exact_matmul against math.fsum / fractions, exact_dft against mpmath."""
from fractions import Fraction
import math
import re

import mpmath
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from splitprec.accuracy import cases, check, exact_dft, exact_matmul, gemm_bound


def fsum_matmul(a, b):
    """The naive oracle: math.fsum of the float64 products (exact for float32 inputs)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return np.array([[math.fsum(a[i] * b[:, j]) for j in range(b.shape[1])]
                     for i in range(a.shape[0])]).reshape(a.shape[0], b.shape[1])


FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@st.composite
def float32_pairs(draw):
    m, k, n = (draw(st.integers(1, 4)) for _ in range(3))
    return (draw(hnp.arrays(np.float32, (m, k), elements=FLOAT32)),
            draw(hnp.arrays(np.float32, (k, n), elements=FLOAT32)))


@given(pair=float32_pairs())
@example(pair=(np.float32([[1e30, 1, -1e30, 3e-30]]), np.ones((4, 1), np.float32)))
@example(pair=(np.float32([[3.4e38, 3.4e38, -3.4e38]]), np.float32([[2], [2], [-2]])))
@example(pair=(np.float32([[1.4e-45, 1.4e-45]]), np.float32([[1.4e-45], [-3e38]])))
def test_exact_matmul_equals_fsum_on_any_float32(pair):
    a, b = pair
    with np.errstate(over="ignore"):
        expected = fsum_matmul(a, b)
    np.testing.assert_array_equal(exact_matmul(a, b), expected)


def test_exact_matmul_equals_fsum_across_wide_exponent_spans():
    rng = np.random.default_rng(0)
    for phi in (0, 5, 20, 40):
        a = cases.exponent_span(rng, (5, 40), phi)
        b = cases.exponent_span(rng, (40, 6), phi)
        np.testing.assert_array_equal(exact_matmul(a, b), fsum_matmul(a, b))


def test_exact_matmul_long_k_crosses_digit_blocks():
    rng = np.random.default_rng(1)
    a, b = cases.normal(rng, (2, 8192 + 37)), cases.normal(rng, (8192 + 37, 3))
    np.testing.assert_array_equal(exact_matmul(a, b), fsum_matmul(a, b))


def test_exact_matmul_ill_conditioned_dot_is_exact():
    x, y = cases.ill_conditioned_dot(np.random.default_rng(2), 100, 1e30)
    assert exact_matmul(x[None, :], y[:, None])[0, 0] == fsum_matmul(x[None, :], y[:, None])[0, 0]


def test_exact_matmul_float64_equals_fraction_sum():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 6)) * np.exp(rng.standard_normal((3, 6)) * 150)
    b = rng.standard_normal((6, 4)) * np.exp(rng.standard_normal((6, 4)) * 150)
    expected = [[float(sum(Fraction(a[i, t]) * Fraction(b[t, j]) for t in range(6)))
                 for j in range(4)] for i in range(3)]
    np.testing.assert_array_equal(exact_matmul(a, b), expected)


def test_exact_matmul_float64_tiny_products_are_not_lost():
    """mpmath.fdot at default precision returns 0.0 here; the exact product is 1e-300."""
    a = np.array([[1e-150, 1e10, -1e10]])
    b = np.array([[1e-150], [1.0], [1.0]])
    assert exact_matmul(a, b)[0, 0] == 1e-300


def test_exact_matmul_batched_matches_each_matrix():
    rng = np.random.default_rng(4)
    a, b = cases.normal(rng, (2, 1, 3, 5)), cases.normal(rng, (3, 5, 4))
    c = exact_matmul(a, b)
    assert c.shape == (2, 3, 3, 4)
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(c[i, j], fsum_matmul(a[i, 0], b[j]))


def test_exact_matmul_nonfinite_pattern_is_the_float64_products():
    a = np.float32([[np.inf, 1], [0, np.nan], [1, 2]])
    b = np.float32([[0, 1], [1, -np.inf]])
    c = exact_matmul(a, b)
    with np.errstate(invalid="ignore"):
        expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(c), np.isnan(expected))
    np.testing.assert_array_equal(c[np.isinf(c)], expected[np.isinf(expected)])
    assert c[2, 0] == 2


def test_exact_matmul_empty_inner_dimension_gives_zeros():
    assert np.array_equal(exact_matmul(np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32)),
                          np.zeros((2, 3)))


def test_exact_matmul_rejects_mismatched_and_bad_inputs():
    with pytest.raises(ValueError, match=r"^exact_matmul: inner dimensions differ"):
        exact_matmul(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match=r"^exact_matmul: a has shape \(\); expected ndim >= 1"):
        exact_matmul(np.float32(3), np.ones((3, 2), np.float32))
    with pytest.raises(TypeError, match=r"^exact_matmul: b has dtype int64"):
        exact_matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.int64))
    with pytest.raises(ValueError, match=r"^exact_matmul: batch dimensions do not broadcast"):
        exact_matmul(np.ones((2, 2, 3), np.float32), np.ones((3, 3, 2), np.float32))


def mpmath_dft(x):
    """The naive oracle: the DFT sum in mpmath at 200 bits (local context)."""
    ctx = mpmath.MPContext()
    ctx.prec = 200
    n = len(x)
    vals = [ctx.mpc(complex(v)) for v in x]
    return np.array([complex(ctx.fsum(v * ctx.expjpi(-ctx.mpf(2 * f * t) / n)
                                      for t, v in enumerate(vals))) for f in range(n)])


@pytest.mark.parametrize("n", [1, 2, 3, 7, 12, 16])
def test_exact_dft_matches_mpmath(n):
    x = cases.complex_normal(np.random.default_rng(n), n)
    np.testing.assert_allclose(exact_dft(x), mpmath_dft(x), rtol=2.0 ** -52, atol=1e-300)


def test_exact_dft_of_impulse_and_tone_are_exact():
    assert np.array_equal(exact_dft(cases.impulse(8, 0)), np.ones(8, np.complex128))
    spectrum = exact_dft(np.ones(12, np.float32))
    assert spectrum[0] == 12 and np.all(np.abs(spectrum[1:]) < 1e-40)


def test_exact_dft_agrees_with_complex128_fft_for_large_n():
    x = cases.complex_normal(np.random.default_rng(5), 512)
    reference = np.fft.fft(x.astype(np.complex128))
    assert np.linalg.norm(exact_dft(x) - reference) < 1e-14 * np.linalg.norm(reference)


def test_exact_dft_rejects_bad_input():
    with pytest.raises(ValueError, match=r"^exact_dft: x has shape \(2, 2\)"):
        exact_dft(np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"^exact_dft: x holds NaN or inf"):
        exact_dft([1.0, np.nan])
    with pytest.raises(TypeError, match=r"^exact_dft: x has dtype int64"):
        exact_dft(np.arange(4))


@pytest.mark.parametrize("op, call", [
    ("exact_matmul", exact_matmul),
    ("gemm_bound", lambda a, b: gemm_bound(a, b, "bf16x9")),
    ("gemm_bound", lambda a, b: gemm_bound(a.astype(np.float64), b.astype(np.float64), "ozaki2_int8x14")),
    ("check", lambda a, b: check(a, b, "bf16x9")),
])
@pytest.mark.parametrize("shape_a, shape_b", [((5,), (4,)), ((3, 5), (4,)), ((5,), (4, 3))])
def test_vector_inner_dimension_error_names_the_shapes_as_given_regression(op, call, shape_a, shape_b):
    """A vector whose length did not match was reported by its promoted shape (``a has shape (1, 5)``
    for a ``(5,)`` the caller never wrote); now the shapes as given, as sp.matmul names them."""
    a, b = np.ones(shape_a, np.float32), np.ones(shape_b, np.float32)
    with pytest.raises(ValueError, match=rf"^{op}: inner dimensions differ: a has shape {re.escape(str(shape_a))}, "
                                         rf"b has shape {re.escape(str(shape_b))}$"):
        call(a, b)
