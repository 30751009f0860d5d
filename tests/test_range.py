"""The float32 schemes across the whole float32 range: power-of-two scaling, overflow, ties at the top.

GEMM: every float32 scheme scales the rows of A and the columns of B by powers of two
(``SplitDType.scale_exponent``), so a product of rows and columns scaled by powers of two is the
scaled product, bit for bit, wherever the result is a normal number; results beyond the float32
range are ±inf and the largest finite results are rounded once. FFT: each line is scaled by a power
of two before the transform and back after it, so tiny and huge lines keep the accuracy of
mid-range ones and only transforms that overflow float32 give inf.
"""
import functools
import math

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import splitprec as sp
from splitprec.accuracy import exact_dft, exact_matmul, fft_bound, gemm_bound, rfft_bound
from splitprec.split import split

ALL_DTYPES = sp.dtypes("float32")
FP32_CLASS = [n for n in ALL_DTYPES if sp.dtype(n).fp32_class]
F = float(np.finfo(np.float32).max)
U32 = 2.0 ** -24
f32 = np.float32


def normwise(c, exact):
    return float(np.linalg.norm(c.astype(np.float64) - exact) / np.linalg.norm(exact))


def rounded(x):
    """float64 ``x`` rounded once to float32 (±inf beyond the range)."""
    with np.errstate(over="ignore"):
        return np.asarray(x, np.float64).astype(np.float32)


# ---- GEMM -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL_DTYPES)
@pytest.mark.parametrize("a, b", [([[3e-37]], [[1e30]]), ([[2.0 ** -140]], [[2.0 ** 100]]),
                                  ([[1e-45, 3e-39]], [[2.0 ** 120], [-1e20]]), ([[1e30]], [[3e-37]])])
def test_matmul_of_tiny_times_huge_keeps_its_digits_regression(name, a, b):
    """Once the low parts of values near 2**-126 underflowed (bf16x9 lost 8.9e-5 on 3e-37 * 1e30,
    and 2**-140 * 2**100 gave 0): now the split error is the scheme's normal-range one."""
    a, b = f32(a), f32(b)
    exact = exact_matmul(a, b)
    error = np.abs(sp.matmul(a, b, dtype=name).astype(np.float64) - exact)
    assert (error <= gemm_bound(a, b, name)).all()
    assert (error <= (sp.dtype(name).product_error + 4 * U32) * (np.abs(a) @ np.abs(b))).all()


@pytest.mark.parametrize("name", FP32_CLASS)
def test_matmul_of_subnormal_operands_is_as_accurate_as_float32_regression(name):
    """16 x 64 operands of size ~1e-39 (float32 subnormals) times N(0,1): bf16x9 had 2.8e-2 where
    float32's own product has 4.4e-7."""
    rng = np.random.default_rng(24)
    a = (rng.standard_normal((16, 64)) * 2.0 ** -126).astype(np.float32)
    b = (rng.standard_normal((64, 16)) * 2.0 ** 100).astype(np.float32)
    exact = exact_matmul(a, b)
    native = normwise((a.astype(np.float64) * 2.0 ** 126).astype(np.float32) @ b, exact * 2.0 ** 126)
    assert normwise(sp.matmul(a, b, dtype=name), exact) <= 2 * native


def scaled_operands(data, m, k, n):
    """Mid-range ``a0, b0`` and row/column exponents anywhere in float32's range (their products and
    sums staying below 2**120), with ``a = a0 * 2**ea`` and ``b = b0 * 2**eb`` rounded once."""
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    ea = np.array(data.draw(st.lists(st.integers(-160, 126), min_size=m, max_size=m)))[:, None]
    eb = np.array(data.draw(st.lists(st.integers(-160, 126), min_size=n, max_size=n)))[None, :]
    eb = np.minimum(eb, 112 - ea.max() - int(math.log2(k)) - 1)       # no entry near the top
    a = (rng.standard_normal((m, k)) * 2.0 ** ea).astype(np.float32)
    b = (rng.standard_normal((k, n)) * 2.0 ** eb).astype(np.float32)
    # The float32 operands scaled back exactly (their lost subnormal bits stay lost).
    a0 = (a.astype(np.float64) * 2.0 ** -ea).astype(np.float32)
    b0 = (b.astype(np.float64) * 2.0 ** -eb).astype(np.float32)
    return a, b, a0, b0, ea + eb


@settings(max_examples=30, deadline=None)
@given(data=st.data(), name=st.sampled_from(ALL_DTYPES), shape=st.tuples(st.integers(1, 6), st.integers(1, 40),
                                                                          st.integers(1, 6)))
def test_matmul_commutes_with_power_of_two_row_and_column_scaling(data, name, shape):
    """``(D_A a0) @ (b0 D_B) == D_A (a0 @ b0) D_B`` rounded once, for power-of-two diagonals anywhere
    in float32's range: the split of a scaled row is the split of the row."""
    a, b, a0, b0, e = scaled_operands(data, *shape)
    c = sp.matmul(a, b, dtype=name)
    c0 = sp.matmul(a0, b0, dtype=name)
    np.testing.assert_array_equal(c, rounded(c0.astype(np.float64) * 2.0 ** e))


@pytest.mark.parametrize("seed", range(3))
def test_fp32_class_schemes_are_as_accurate_as_float32_across_the_range(seed):
    """Rows and columns scaled anywhere in float32's range, products and sums normal: each row of
    each fp32-class scheme's product within 2x of numpy's float32 product's error on that row
    (numpy's is scale-invariant there; measured at most 1.6x for tf32x3, 0.8x for bf16x6/x9)."""
    rng = np.random.default_rng(seed)
    ea = rng.integers(-140, 60, (64, 1))
    eb = np.clip(rng.integers(-60, 100, (1, 64)), -100 - ea.min(), 60 - ea.max())
    a = (rng.standard_normal((64, 64)) * 2.0 ** ea).astype(np.float32)
    b = (rng.standard_normal((64, 64)) * 2.0 ** eb).astype(np.float32)
    exact = exact_matmul(a, b)

    def row_errors(c):
        return np.linalg.norm(c.astype(np.float64) - exact, axis=1) / np.linalg.norm(exact, axis=1)

    native = row_errors(a @ b)
    for name in FP32_CLASS:
        assert (row_errors(sp.matmul(a, b, dtype=name)) <= 2 * native).all(), name


@pytest.mark.parametrize("name", ALL_DTYPES)
@pytest.mark.parametrize("a, b", [([[2.0 ** 120, 2.0 ** 60]], [[2.0 ** -120], [2.0 ** 100]]),
                                  ([[-2.0 ** 120, 2.0 ** 60]], [[2.0 ** -120], [2.0 ** 100]]),
                                  ([[2.0 ** 100, 2.0 ** 100]], [[2.0 ** 27], [2.0 ** 27]]),
                                  ([[F, F]], [[1.0], [-0.5]]), ([[F, F, -F]], [[1.0], [1.0], [1.0]])])
def test_matmul_beyond_the_float32_range_is_inf_regression(name, a, b):
    """fp16x3 gave 0.0 for 2**120 * 2**-120 + 2**60 * 2**100 (1.46e48): a result beyond the float32
    range is ±inf in every scheme, and a large finite one stays finite."""
    a, b = f32(a), f32(b)
    np.testing.assert_array_equal(sp.matmul(a, b, dtype=name), rounded(exact_matmul(a, b)))


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_matmul_rounds_a_tie_at_the_top_to_inf_regression(name):
    """F + 2**103 lies halfway between F and 2**128: round to nearest even gives inf (numpy too);
    every scheme gave F. Just below and above the tie: F and inf, in batches, 1-D, transposed."""
    a = f32([[F, 2.0 ** 103], [F, 2.0 ** 102], [-F, -2.0 ** 103], [F, 2.0 ** 104]])
    b = f32([[1.0], [1.0]])
    expected = f32([[np.inf], [F], [-np.inf], [np.inf]])
    np.testing.assert_array_equal(sp.matmul(a, b, dtype=name), expected)
    np.testing.assert_array_equal(sp.matmul(np.stack([a, a]), b, dtype=name), np.stack([expected] * 2))
    np.testing.assert_array_equal(sp.matmul(a[0], b[:, 0], dtype=name), expected[0, 0])
    np.testing.assert_array_equal(sp.matmul(b.T, a.T, dtype=name), expected.T)


@pytest.mark.parametrize("name", ["bf16x9", "fp16x3"])
def test_matmul_near_the_top_is_within_bound_and_finite_where_the_product_is(name):
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((8, 32)) * 2.0 ** 100).astype(np.float32)
    b = (rng.standard_normal((32, 8)) * 2.0 ** 22).astype(np.float32)
    exact = exact_matmul(a, b)
    c = sp.matmul(a, b, dtype=name)
    finite = np.isfinite(rounded(exact))
    np.testing.assert_array_equal(np.isfinite(c), finite)
    assert (np.abs(c[finite] - exact[finite]) <= gemm_bound(a, b, name)[finite]).all()


@pytest.mark.parametrize("ndim", [33, 40, 62])
def test_matmul_takes_as_many_batch_dimensions_as_numpy_regression(ndim):
    """np.broadcast_shapes stops at 32 dimensions; numpy.matmul (and so sp.matmul) goes to 64."""
    rng = np.random.default_rng(ndim)
    a = rng.standard_normal((2,) + (1,) * (ndim - 3) + (3, 4)).astype(np.float32)
    b = rng.standard_normal((1, 2) + (1,) * (ndim - 4) + (4, 2)).astype(np.float32)
    c = sp.matmul(a, b, dtype="bf16x9")
    assert c.shape == np.matmul(a, b).shape
    assert np.abs(c - np.matmul(a, b)).max() <= 1e-5
    with pytest.raises(ValueError, match=r"^matmul: batch dimensions do not broadcast"):
        sp.matmul(a, np.ones((3,) + (1,) * (ndim - 3) + (4, 2), np.float32))


def test_overflow_exponent_marks_every_entry_that_may_reach_the_top():
    """Unmarked entries have k * rowmax * colmax < 2**126 (docs/bounds.md, section 7)."""
    rng = np.random.default_rng(3)
    for name in ("bf16x9", "fp16x3", "tf32"):
        d = sp.dtype(name)
        for k in (1, 3, 64, 1000):
            a = (rng.standard_normal((5, k)) * 2.0 ** rng.integers(-149, 128, (5, 1))).astype(np.float32)
            b = (rng.standard_normal((k, 5)) * 2.0 ** rng.integers(-149, 128, (1, 5))).astype(np.float32)
            e = split(a, d, axis=-1).exponent + split(b, d, axis=-2).exponent
            reach = k * np.abs(a).max(axis=1, keepdims=True).astype(np.float64) * np.abs(b).max(axis=0, keepdims=True)
            assert (reach[e < d.overflow_exponent(k)] < 2.0 ** 126).all()


# ---- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("name", ALL_DTYPES)
def test_gpu_inf_times_subnormal_is_inf_regression(name):
    """-inf * 5.9e-39 gave NaN on the GPU: the nonfinite kernel took the subnormal's sign after
    -ftz had flushed it."""
    import cupy
    a = np.float32([[-np.inf, 1.0], [2.0, 3.0]])
    b = np.float32([[5.9e-39, -1e-45], [1.0, 2.0]])
    c = sp.matmul(cupy.asarray(a), cupy.asarray(b), dtype=name)
    np.testing.assert_array_equal(cupy.asnumpy(c)[0], [-np.inf, np.inf])


@pytest.mark.gpu
@pytest.mark.parametrize("name", ALL_DTYPES)
def test_gpu_matmul_across_the_range_like_cpu(name):
    """The reproducers of the range tests on the GPU engine: tiny times huge, beyond the range, the
    tie at the top, more than 32 batch dimensions."""
    import cupy
    cases = [([[3e-37]], [[1e30]]), ([[2.0 ** -140]], [[2.0 ** 100]]),
             ([[2.0 ** 120, 2.0 ** 60]], [[2.0 ** -120], [2.0 ** 100]]), ([[F, 2.0 ** 103]], [[1.0], [1.0]])]
    for a, b in cases:
        a, b = f32(a), f32(b)
        c = cupy.asnumpy(sp.matmul(cupy.asarray(a), cupy.asarray(b), dtype=name))
        exact = exact_matmul(a, b)
        finite = np.isfinite(rounded(exact))
        np.testing.assert_array_equal(np.isfinite(c), finite)
        assert (np.abs(c[finite] - exact[finite]) <= gemm_bound(a, b, name, engine="gpu")[finite]).all()
    a = np.ones((1,) * 40 + (2, 3), np.float32)
    assert sp.matmul(cupy.asarray(a), cupy.ones((3, 2), np.float32), dtype=name).shape == (1,) * 40 + (2, 2)


# ---- FFT ------------------------------------------------------------------------------------

TRANSFORMS = {"fft": (sp.fft.fft, "c"), "ifft": (sp.fft.ifft, "c"), "rfft": (sp.fft.rfft, "r"),
              "irfft": (sp.fft.irfft, "c")}


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), e=st.integers(-160, 100), n=st.sampled_from([2, 12, 61, 64, 97, 250]),
       op=st.sampled_from(sorted(TRANSFORMS)), norm=st.sampled_from([None, "ortho", "forward"]),
       name=st.sampled_from(ALL_DTYPES))
@example(seed=0, e=-125, n=64, op="fft", norm=None, name="bf16x6")
@example(seed=1, e=-150, n=61, op="ifft", norm=None, name="tf32x3")
def test_fft_commutes_with_power_of_two_scaling(seed, e, n, op, norm, name):
    """``fft(2**e x) == 2**e fft(x)`` rounded once, for every transform, norm and scheme, anywhere in
    float32's range: each line is scaled by a power of two first (bf16x6 had 1.15e-3 on a line of
    size 2**-125, numpy 2.5e-8)."""
    transform, kind = TRANSFORMS[op]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, n)) + (1j * rng.standard_normal((2, n)) if kind == "c" else 0)
    x = (x * 2.0 ** e).astype(np.complex64 if kind == "c" else np.float32)
    x0 = (x.astype(np.complex128 if kind == "c" else np.float64) * 2.0 ** -e).astype(x.dtype)   # lost bits stay lost
    y, y0 = transform(x, norm=norm, dtype=name), transform(x0, norm=norm, dtype=name)
    expected = y0.astype(np.complex128) * 2.0 ** e
    if expected.dtype.kind == "c" and y.dtype.kind == "c":
        expected = rounded(expected.real) + 1j * rounded(expected.imag)
    else:
        expected = rounded(expected.real)
    np.testing.assert_array_equal(y, expected.astype(y.dtype))


@pytest.mark.parametrize("name", FP32_CLASS + ["fp16x3"])
@pytest.mark.parametrize("n", [61, 64, 1000])
def test_fft_near_the_top_is_finite_where_the_transform_is_regression(name, n):
    """A length-61 signal whose largest output is 0.9 FLT_MAX came back all NaN, and an impulse of
    1.5 * 2**127 gave five non-finite outputs: Bluestein's chirp-aligned inputs sum to sqrt(n) times
    the output in its inner transform, and partial sums pass the top even where outputs do not."""
    j = np.arange(n)
    chirp = np.exp(1j * np.pi * (j * j % (2 * n)) / n)            # conj of Bluestein's chirp
    peak_out = np.abs(np.fft.fft(chirp)).max()
    for x in ((chirp * 0.9 * F / peak_out).astype(np.complex64), np.eye(1, n, 3, np.complex64)[0] * f32(1.5 * 2.0 ** 127)):
        exact = exact_dft(x)
        y = sp.fft.fft(x, dtype=name)
        assert np.isfinite(y).all()
        assert np.linalg.norm(y - exact) <= fft_bound(x, name) * np.linalg.norm(exact)
    big = (np.random.default_rng(n).uniform(-1, 1, n) * F / 2).astype(np.complex64)
    exact = exact_dft(np.conj(big)).conj() / n                     # ifft: finite, though n * ifft is not
    y = sp.fft.ifft(big, dtype=name)
    assert np.isfinite(y).all()
    assert np.linalg.norm(y - exact) <= fft_bound(big, name, inverse=True) * np.linalg.norm(exact)


def _rounded_complex(z):
    return rounded(z.real) + 1j * rounded(z.imag)


@pytest.mark.parametrize("name", ALL_DTYPES)
@pytest.mark.parametrize("n", [61, 64, 127, 250])
@pytest.mark.parametrize("at, peak", [(0, F), (5, -F), (0, 1j * F)], ids=["impulse", "shifted", "imaginary"])
def test_fft_of_an_impulse_of_flt_max_is_finite_regression(name, n, at, peak):
    """An impulse of FLT_MAX has every output of magnitude FLT_MAX; bf16x9 and bf16x6 gave inf at
    n = 61 (Bluestein's chirps leave an output an ulp above the top at the lines' scale) and every
    single-part scheme gave inf (the top part rounds up to the next binade). The outputs are finite
    where the exact ones are, and as accurate as those of the impulse scaled down by 2**-20 (the
    engines' power-of-two line scaling makes them the same at the lines' scale)."""
    x = np.zeros(n, np.complex64)
    x[at] = peak
    exact = exact_dft(x)
    y = sp.fft.fft(x, dtype=name)
    np.testing.assert_array_equal(np.isfinite(y), np.isfinite(_rounded_complex(exact)))
    assert np.linalg.norm(y - exact) <= fft_bound(x * f32(2.0 ** -20), name) * np.linalg.norm(exact)
    real = np.zeros(n, np.float32)
    real[at] = F
    exact_half = exact_dft(real)[:n // 2 + 1]
    y = sp.fft.rfft(real, dtype=name)
    assert np.isfinite(y).all()
    assert np.linalg.norm(y - exact_half) <= rfft_bound(real * f32(2.0 ** -20), name) * np.linalg.norm(exact_half)
    spectrum = np.zeros(n // 2 + 1, np.complex64)
    spectrum[0] = F                                       # the real inverse: every output is F
    y = sp.fft.irfft(spectrum, n, norm="forward", dtype=name).astype(np.float64)
    small = sp.fft.irfft(spectrum * f32(2.0 ** -20), n, norm="forward", dtype=name).astype(np.float64) * 2.0 ** 20
    assert np.isfinite(y).all() and (np.abs(y - F) <= np.abs(small - F)).all()


@pytest.mark.parametrize("name", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(3, 162), (5, 61), (4, 64)])
def test_nd_fft_of_an_impulse_of_flt_max_is_finite_regression(name, shape):
    """The n-D transforms of an impulse of FLT_MAX: an output rounded past the top in one pass (the
    per-line limit of that pass is its own line's sum, which rounding can leave just past float32)
    became inf, then NaN in the next; each pass is limited by the whole input's modulus sum."""
    x = np.zeros(shape, np.complex64)
    x[1, 5] = f32(F) * np.complex64(np.exp(0.3j))
    exact = np.fft.fft2(x.astype(np.complex128))                 # each output: x[1, 5] times a unit root
    rows = (x * f32(2.0 ** -20)).astype(np.complex64)            # the lines of each pass, scaled into range
    columns = (np.fft.fft(x.astype(np.complex128), axis=1) * 2.0 ** -20).astype(np.complex64).T
    bound = (1 + fft_bound(rows, name).max()) * (1 + fft_bound(columns, name).max()) - 1   # the passes compose
    for y in (sp.fft.fft2(x, dtype=name), sp.fft.fftn(x, dtype=name)):
        assert np.isfinite(y).all()
        assert np.linalg.norm(y - exact) <= bound * np.linalg.norm(exact)
    real = np.zeros(shape, np.float32)
    real[1, 5] = F
    assert np.isfinite(sp.fft.rfft2(real, dtype=name)).all()
    spectrum = np.zeros((shape[0], shape[1] // 2 + 1), np.complex64)
    spectrum[0, 0] = F
    assert np.isfinite(sp.fft.irfft2(spectrum, s=shape, norm="forward", dtype=name)).all()


@pytest.mark.parametrize("name", ALL_DTYPES)
@pytest.mark.parametrize("n", [2, 64, 250])
def test_fft_past_the_top_stays_inf_where_the_exact_transform_overflows(name, n):
    """The limit on outputs near the top never hides a real overflow: FLT_MAX at 0 and n / 2 give
    ``X_k = FLT_MAX (1 + (-1)**k)``, beyond float32 for even k and 0 for odd k."""
    x = np.zeros(n, np.complex64)
    x[0] = x[n // 2] = F
    y = sp.fft.fft(x, dtype=name)
    np.testing.assert_array_equal(np.isinf(y.real), np.arange(n) % 2 == 0)
    assert np.isfinite(y[1::2]).all()


@functools.lru_cache(maxsize=None)
def subnormal_signals(n):
    """Complex and real signals of size ~1e-40 (float32 subnormals) and their exact DFTs."""
    rng = np.random.default_rng(n)
    x = ((rng.standard_normal(n) + 1j * rng.standard_normal(n)) * 1e-40).astype(np.complex64)
    xr = (rng.standard_normal(n) * 1e-40).astype(np.float32)
    return x, exact_dft(np.conj(x)).conj(), xr, exact_dft(xr.astype(np.complex64))[:n // 2 + 1]


@pytest.mark.parametrize("n, norm", [(3125, None), (3125, "ortho"), (250, "forward"), (97, None), (64, "ortho")])
def test_ifft_of_subnormal_data_within_bound_regression(n, norm):
    """ifft of subnormal data, n = 3125, fp16x3 had error/bound 1.13: the bound now models the norm
    factor, applied at the line's scale, and the one rounding of subnormal outputs."""
    x, inverse, xr, forward = subnormal_signals(n)
    c = {None: 1 / n, "ortho": 1 / math.sqrt(n), "forward": 1.0}[norm]
    c_real = {None: 1, "ortho": 1 / math.sqrt(n), "forward": 1 / n}[norm]
    for name in ALL_DTYPES:
        y = sp.fft.ifft(x, norm=norm, dtype=name)
        assert np.linalg.norm(y - c * inverse) <= fft_bound(x, name, inverse=True, norm=norm) * np.linalg.norm(c * inverse)
        y = sp.fft.rfft(xr, norm=norm, dtype=name)
        assert np.linalg.norm(y - c_real * forward) <= rfft_bound(xr, name, norm=norm) * np.linalg.norm(c_real * forward)


@pytest.mark.parametrize("n", [4, 5])
@pytest.mark.parametrize("where", [0, -1])
def test_irfft_nonfinite_imaginary_bin_parts_propagate_as_numpy(n, where):
    """numpy ignores the imaginary parts of bin 0 and (even n) bin n/2, NaN and inf included; the
    whole line came back NaN."""
    for bad in (np.nan, np.inf):
        c = np.complex64([1 + 2j, 2 - 1j, 3 + 5j])
        c.imag[where] = bad
        ours, theirs = sp.fft.irfft(c, n=n), np.fft.irfft(c.astype(np.complex128), n=n)
        if where == 0 or n % 2 == 0:
            assert np.isfinite(theirs).all() and np.isfinite(ours).all()
        else:                                            # bin 2 of n = 5 counts: a line with NaN/inf is NaN
            assert not np.isfinite(theirs).all() and np.isnan(ours).all()
    c = np.complex64([1 + 2j, 2 - 1j, 3 + 5j])
    np.testing.assert_allclose(sp.fft.irfft(c, n=n), np.fft.irfft(c.astype(np.complex128), n=n), rtol=0, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("name", FP32_CLASS + ["fp16x3"])
@pytest.mark.parametrize("n", [64, 61, 4096, 8192])
def test_gpu_fft_of_tiny_and_huge_lines_like_cpu(name, n):
    """Lines of subnormals kept their values only on the CPU, and near the top of the range the GPU
    overflowed like the CPU did: both now scale each line, and stay within the bound."""
    import cupy
    rng = np.random.default_rng(n)
    for scale in (1e-41, 2.0 ** -125, 1.0, F / (4 * n)):
        x = ((rng.standard_normal(n) + 1j * rng.standard_normal(n)) * scale).astype(np.complex64)
        for inverse in (False, True):
            y = cupy.asnumpy((sp.fft.ifft if inverse else sp.fft.fft)(cupy.asarray(x), dtype=name))
            exact, slack = _reference_dft(np.conj(x) if inverse else x)
            exact = exact.conj() / n if inverse else exact
            assert np.isfinite(y).all()
            bound = fft_bound(x, name, "gpu", inverse=inverse) + slack
            assert np.linalg.norm(y - exact) <= bound * np.linalg.norm(exact)


def _reference_dft(x):
    """``(DFT of x, its relative error bound)``: ``exact_dft`` (O(n**2) integer work) up to 1024
    values, numpy's complex128 FFT of the widened values beyond (relative error about 1e-16 log2 n,
    here bounded by 2**-40, far below any float32 bound; float64 holds every value in range)."""
    if x.size <= 1024:
        return exact_dft(x), 0.0
    return np.fft.fft(x.astype(np.complex128)), 2.0 ** -40
