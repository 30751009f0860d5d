"""The derived bounds: their constants agree with the scheme table, and they bound what they claim."""
import functools
import math
import operator

import numpy as np
import pytest

import splitprec
import splitprec as sp
from splitprec import accuracy
from splitprec.engines import plan as fft_plan
from splitprec.accuracy import cases, exact_matmul, fft_bound, gemm_bound, probabilistic, rfft_bound
from splitprec.accuracy.bounds import U32, U_TRUNCATE, gamma, schemes
from splitprec.accuracy.fft_bounds import fft_radices
from splitprec.split import split

SCHEMES = schemes()  # every registered scheme with a derived bound


def test_gamma_is_highams_definition():
    assert gamma(1) == U32 / (1 - U32)
    assert gamma(3, 2.0 ** -23) == 3 * 2.0 ** -23 / (1 - 3 * 2.0 ** -23)
    assert gamma(2 ** 24) == math.inf


@pytest.mark.parametrize("scheme", SCHEMES)
def test_gemm_bound_is_at_least_the_accumulation_error_of_the_products(scheme):
    """Even with an exact split, the bound keeps gamma_k * |A||B|: float32 accumulation."""
    rng = np.random.default_rng(0)
    a, b = cases.normal(rng, (4, 300)), cases.normal(rng, (300, 5))
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(gemm_bound(a, b, scheme) >= gamma(300) * magnitude)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_gemm_bound_per_product_matches_the_dtype_table(scheme):
    """For k = 1 and unit inputs away from the range ends, bound / |a b| is the table's
    product_error plus the float32 rounding of the (exact) product and of the product sum
    (the table counts the residual cross term as 3 s**2, the derivation as s**2)."""
    d = splitprec.dtype(scheme)
    a = np.float32([[1.25]])
    b = np.float32([[-0.75]])
    relative = gemm_bound(a, b, scheme)[0, 0] / abs(1.25 * 0.75)
    magnitude = sum((1 + d.part_bound) ** 2 * d.part_bound ** (p + q) for p, q in d.products)
    accumulation = (1 + gamma(1)) * (1 + gamma(len(d.products) - 1)) - 1
    expected = d.product_error + accumulation * magnitude
    s = d.split_error
    assert expected - 2 * s * s <= relative * (1 + 1e-9) and relative <= expected * (1 + 1e-9)


@pytest.mark.parametrize("scheme", [s for s in SCHEMES if splitprec.dtype(s).fp32_class])
def test_fp32_class_bound_is_within_sixteen_fp32_roundings_per_product(scheme):
    rng = np.random.default_rng(1)
    a, b = cases.normal(rng, (3, 64)), cases.normal(rng, (64, 3))
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(gemm_bound(a, b, scheme) <= (gamma(64) * 1.01 + 16 * U32) * magnitude)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_gemm_bound_underflow_term_matches_the_dtype_table(scheme):
    """The split of x below the base format's normal range costs at most the table's
    underflow_error at the pow2 scale of x's row: the bound holds that term, and 2**-140 (scaled
    up to 2**scale_exponent) is far from it."""
    d = splitprec.dtype(scheme)
    a = np.full((1, 1), 2.0 ** -140, np.float32)
    b = np.ones((1, 1), np.float32)
    bound = gemm_bound(a, b, scheme)[0, 0]
    sigma = 2.0 ** (-140 - d.scale_exponent(1))
    assert d.underflow_error * sigma <= bound < 1e-30


def test_gemm_bound_is_inf_where_the_product_is_nonfinite_or_may_overflow():
    a = np.float32([[np.inf, 1], [1, 1], [3e38, 3e38]])
    b = np.float32([[1], [1]])
    bound = gemm_bound(a, b, "bf16x9")
    assert np.isinf(bound[0, 0]) and np.isfinite(bound[1, 0]) and np.isinf(bound[2, 0])


def test_gemm_bound_gpu_model_is_wider_than_cpu_within_one_block_and_grows_with_blocks():
    rng = np.random.default_rng(2)
    a, b = cases.normal(rng, (2, 512)), cases.normal(rng, (512, 2))
    assert np.all(gemm_bound(a, b, "bf16x9", "gpu") > gemm_bound(a, b, "bf16x9"))   # truncation
    a, b = cases.normal(rng, (2, 4096)), cases.normal(rng, (4096, 2))
    gpu = gemm_bound(a, b, "bf16x9", "gpu", k_block=256, small_k_block=256)
    assert np.all(gemm_bound(a, b, "bf16x9", "gpu", k_block=256) > gpu)          # small: all of k
    assert np.all(gemm_bound(a, b, "bf16x9", "gpu", k_block=4096, small_k_block=256) > gpu)
    with pytest.raises(ValueError, match=r"^gemm_bound: small_k_block must be a positive int or None"):
        gemm_bound(a, b, "bf16x9", "gpu", small_k_block=0)


def test_gemm_bound_broadcasts_batches_like_matmul():
    rng = np.random.default_rng(3)
    a, b = cases.normal(rng, (2, 1, 3, 4)), cases.normal(rng, (5, 4, 2))
    bound = gemm_bound(a, b, "tf32x3")
    assert bound.shape == (2, 5, 3, 2)
    np.testing.assert_array_equal(bound[1, 3], gemm_bound(a[1, 0], b[3], "tf32x3"))


def test_gemm_bound_rejects_bad_arguments():
    a = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"^gemm_bound: inner dimensions differ"):
        gemm_bound(a, a, "bf16x9")
    with pytest.raises(ValueError, match=r"^gemm_bound: unknown engine 'tpu'"):
        gemm_bound(a, a.T, "bf16x9", "tpu")
    with pytest.raises(TypeError, match=r"^gemm_bound: a has dtype float64"):
        gemm_bound(a.astype(np.float64), a.T, "bf16x9")
    with pytest.raises(ValueError, match=r"^unknown split dtype 'bf16x4'"):
        gemm_bound(a, a.T, "bf16x4")
    with pytest.raises(ValueError, match=r"^gemm_bound: k_block must be a positive int"):
        gemm_bound(a, a.T, "bf16x9", "gpu", k_block=0)


@pytest.mark.parametrize("n, radices", [(1, []), (64, [8, 8]), (1024, [16, 8, 8]), (512, [16, 8, 4]), (60, [5, 4, 3]), (97, None),
                                        (2048, [16, 16, 8]), (343, [7, 7, 7]),
                                        (2 ** 13, [16, 8, 8, 8]), (2 ** 22, [16, 16, 16, 16, 8, 8]), (2 ** 23, [16] * 5 + [8]),
                                        (2 ** 25, [16] * 5 + [8, 4]), (3 * 2 ** 13, [8, 4, 3, 16, 16]),
                                        (3 ** 15, [9] * 7 + [3]), (27, [9, 3])])
def test_fft_radices_follow_the_documented_plan(n, radices):
    assert fft_radices(n) == radices


@pytest.mark.parametrize("scheme", SCHEMES)
def test_fft_bound_grows_with_the_number_of_passes(scheme):
    rng = np.random.default_rng(4)
    bounds = [fft_bound(cases.complex_normal(rng, n), scheme) for n in (16, 256, 4096)]
    assert 0 < bounds[0] < bounds[1] < bounds[2] < 1


def test_fft_bound_of_fp32_class_schemes_is_dominated_by_float32_accumulation():
    """Two radix-16 passes: gamma_32 * || |D| ||_2 / sqrt(16) per pass, a few hundred u in all,
    far below the bound of a scheme whose split loses bits (bf16x3: 2**-16)."""
    x = cases.complex_normal(np.random.default_rng(5), 256)
    assert fft_bound(x, "bf16x9") < 1000 * U32 < fft_bound(x, "bf16x3") / 2


def test_fft_bound_bluestein_is_finite_and_batched_lines_are_separate():
    rng = np.random.default_rng(6)
    x = np.stack([cases.complex_normal(rng, 97), np.zeros(97, np.complex64)])
    bounds = fft_bound(x, "tf32x3")
    assert bounds.shape == (2,) and 0 < bounds[0] < 1e-3 and bounds[1] == 0


def test_fft_bound_is_inf_for_nonfinite_signals_or_where_the_transform_may_overflow():
    assert fft_bound(np.float32([1, np.nan]), "bf16x9") == math.inf
    assert fft_bound(np.full(16, 3e37, np.complex64), "bf16x9") == math.inf      # 4.8e38 at bin 0
    x = np.full(8, 3e37, np.complex64)                                              # 2.4e38: finite
    bound = fft_bound(x, "bf16x9")
    assert bound < 1e-5
    assert np.linalg.norm(splitprec.fft.fft(x, dtype="bf16x9") - np.fft.fft(x.astype(np.complex128))) <= \
        bound * np.linalg.norm(np.fft.fft(x.astype(np.complex128)))


def test_fft_bound_rejects_bad_arguments():
    with pytest.raises(TypeError, match=r"^fft_bound: x has dtype int64; accepted: float32, complex64 \(or float16\)"):
        fft_bound(np.arange(4), "bf16x9")
    with pytest.raises(ValueError, match=r"^fft_bound: x has shape \(0,\); expected a non-empty last axis"):
        fft_bound(np.ones(0, np.complex64), "bf16x9")
    with pytest.raises(ValueError, match=r"^fft_bound: unknown engine 'tpu'"):
        fft_bound(np.ones(4, np.complex64), "bf16x9", "tpu")


@pytest.mark.parametrize("inverse", ["yes", 1, None])
def test_fft_bound_takes_inverse_as_a_bool_only_regression(inverse):
    """``fft_bound(inverse="yes")`` was accepted (a truthy string meant the inverse)."""
    with pytest.raises(TypeError, match=rf"^fft_bound: inverse must be a bool, got {inverse!r}"):
        fft_bound(np.ones(4, np.complex64), "bf16x9", inverse=inverse)
    assert fft_bound(np.ones(4, np.complex64), "bf16x9", inverse=np.True_) == \
        fft_bound(np.ones(4, np.complex64), "bf16x9", inverse=True)


def test_exact_reference_error_is_negligible_against_every_bound():
    """The float64 rounding of the exact product (2**-53 relative) stays far below each bound."""
    rng = np.random.default_rng(7)
    a, b = cases.normal(rng, (3, 8)), cases.normal(rng, (8, 3))
    c = np.abs(exact_matmul(a, b))
    for scheme in SCHEMES:
        assert np.all(2.0 ** -53 * c < 2.0 ** -26 * gemm_bound(a, b, scheme))


def test_every_float32_scheme_of_the_registry_is_bounded():
    expected = [n for n in splitprec.dtypes() if splitprec.dtype(n).target == "float32"]
    assert schemes() == expected and len(expected) >= 8


def test_fft_radices_are_the_engines_plan():
    # the bound must describe what the code runs
    sizes = [*range(1, 5000), *range(5000, 2 ** 24, 9973), *(2 ** e for e in range(13, 27)), 3 * 2 ** 13,
             100000, 44100, 6000, 3 ** 15, 2 ** 20 + 7]
    assert all(fft_radices(n) == fft_plan.factorize(n) for n in sizes)


# ---- argument errors -----------------------------------------------------------------------------

def test_gemm_bound_names_both_shapes_when_batches_do_not_broadcast_regression():
    a, b = np.ones((2, 3, 4), np.float32), np.ones((5, 4, 2), np.float32)
    message = (r"^gemm_bound: batch dimensions do not broadcast: a has shape \(2, 3, 4\), b has shape "
               r"\(5, 4, 2\) \(batch \(2,\) against \(5,\)\)$")
    with pytest.raises(ValueError, match=message):
        gemm_bound(a, b, "bf16x9")
    with pytest.raises(ValueError, match=message):
        gemm_bound(a.astype(np.float64), b.astype(np.float64), "ozaki2_int8x14")


@pytest.mark.parametrize("bound, x", [(fft_bound, np.ones(8)), (fft_bound, np.ones(8, np.complex128)),
                                      (rfft_bound, np.ones(8)), (rfft_bound, np.ones(8, np.complex64))])
def test_fft_bounds_refuse_double_precision_and_complex_real_input_like_the_ffts_regression(bound, x):
    accepted = "float32, complex64 \\(or float16\\)" if bound is fft_bound else "float32 \\(or float16\\)"
    with pytest.raises(TypeError, match=rf"^{bound.__name__}: x has dtype {x.dtype}; accepted: {accepted}; "
                                        r"nothing is rounded silently"):
        bound(x, "bf16x9")


@pytest.mark.parametrize("bound, x", [(gemm_bound, None), (fft_bound, np.ones(8, np.complex64)),
                                      (rfft_bound, np.ones(8, np.float32))])
def test_bounds_reject_unknown_kind_and_confidence_outside_zero_one(bound, x):
    args = (np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)) if x is None else (x,)
    name = bound.__name__
    with pytest.raises(ValueError, match=rf"^{name}: unknown kind 'likely'; expected one of 'rigorous', "
                                         r"'probabilistic'$"):
        bound(*args, "bf16x9", kind="likely")
    for confidence in (0, 1, 1.5, True, "0.9"):
        with pytest.raises(ValueError, match=rf"^{name}: confidence must be a number strictly between 0 "
                                             rf"and 1, got {confidence!r}$"):
            bound(*args, "bf16x9", kind="probabilistic", confidence=confidence)


@pytest.mark.parametrize("n", [8, 7], ids=["even n", "odd n"])
@pytest.mark.parametrize("bound", [fft_bound, rfft_bound])
@pytest.mark.parametrize("option, message", [
    ({"engine": "tpu"}, r"unknown engine 'tpu'; expected one of 'cpu', 'gpu'"),
    ({"norm": "sideways"}, r"unknown norm 'sideways'; expected None, 'backward', 'ortho' or 'forward'"),
    ({"norm": ["ortho"]}, r"unknown norm \['ortho'\]; expected None"),
    ({"engine": "gpu", "k_block": 0}, r"k_block must be a positive int or None, got 0"),
    ({"engine": "gpu", "k_block": "64"}, r"k_block must be a positive int or None, got '64'"),
    ({"dtype": "ozaki2_int8x14"}, r"no bound is derived for scheme 'ozaki2_int8x14'")])
def test_fft_bounds_name_the_function_called_and_check_every_option_regression(n, bound, option, message):
    """rfft_bound's errors named fft_bound, which it runs, an odd n skipped its norm check, fft_bound
    took any k_block (0 silently, a str as a bare TypeError from a comparison) and a list norm raised
    'unhashable type'."""
    x = np.ones(n, np.float32 if bound is rfft_bound else np.complex64)
    options = {"dtype": "bf16x9", **option}
    with pytest.raises(ValueError, match=rf"^{bound.__name__}: {message}"):
        bound(x, **options)


@pytest.mark.parametrize("bound, args", [(gemm_bound, (np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))),
                                         (fft_bound, (np.ones(8, np.complex64),)),
                                         (rfft_bound, (np.ones(8, np.float32),))])
def test_bounds_add_their_name_to_an_unknown_scheme_error_regression(bound, args):
    """An unknown scheme raised splitprec.dtype's error with no word of which bound was called."""
    with pytest.raises(ValueError, match=r"^unknown split dtype 'bf16x4'") as raised:
        bound(*args, "bf16x4")
    assert raised.value.__notes__ == [f"raised by {bound.__name__}(dtype='bf16x4')"]


# ---- probabilistic bounds (docs/bounds.md, section 13) ---------------------------------------------

def test_lambda_meets_the_union_bound_of_higham_and_mary():
    """count * 2 exp(-lam**2 (1-u)**2 / 2) = 1 - confidence, and gamma_tilde ~ lam sqrt(n) u."""
    lam = probabilistic.lam(0.999, 9 * 4096, U32)
    assert 9 * 4096 * 2 * math.exp(-lam ** 2 * (1 - U32) ** 2 / 2) == pytest.approx(1e-3, rel=1e-9)
    assert probabilistic.gamma_tilde(4096, lam, U32) == pytest.approx(lam * 64 * U32, rel=1e-4)


def test_probabilistic_gemm_bound_is_the_sqrt_k_factor_on_the_scheme_table():
    """bf16x9 drops nothing and splits exactly: on ones the bound is gamma_tilde_(k+|S|-1)(lam)
    times the table's magnitude coefficient, lam from confidence and the |S| k product terms."""
    d = splitprec.dtype("bf16x9")
    magnitude = sum((1 + d.part_bound) ** 2 * d.part_bound ** (p + q) for p, q in d.products)
    for k in (256, 4096):
        a, b = np.ones((1, k), np.float32), np.ones((k, 1), np.float32)
        lam = probabilistic.lam(0.99, 9 * k, U32)
        relative = gemm_bound(a, b, "bf16x9", kind="probabilistic", confidence=0.99)[0, 0] / k
        assert relative == pytest.approx(probabilistic.gamma_tilde(k + 8, lam, U32) * magnitude, rel=1e-9)
        assert relative < gemm_bound(a, b, "bf16x9")[0, 0] / k / (0.1 * math.sqrt(k))


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("engine", ["cpu", "gpu"])
def test_probabilistic_bound_is_never_above_the_rigorous_one(scheme, engine):
    rng = np.random.default_rng(8)
    for k in (1, 8, 300):
        a, b = cases.normal(rng, (3, k)), cases.uniform(rng, (k, 4))
        rigorous = gemm_bound(a, b, scheme, engine)
        assert np.all(gemm_bound(a, b, scheme, engine, kind="probabilistic") <= rigorous)
    x = cases.complex_normal(rng, 96)
    assert fft_bound(x, scheme, engine, kind="probabilistic") <= fft_bound(x, scheme, engine)


def test_probabilistic_gpu_bound_keeps_the_truncation_within_a_k_block_linear():
    """Truncation is biased, so one k-block of length b keeps gamma_2b(2**-23); only the RN
    promotions across blocks get the sqrt."""
    k = 4096
    a, b = np.ones((1, k), np.float32), np.ones((k, 1), np.float32)
    hi_hi = (1 + splitprec.dtype("bf16x9").part_bound) ** 2 * k
    one_block = gemm_bound(a, b, "bf16x9", "gpu", k_block=k, small_k_block=k, kind="probabilistic")[0, 0]
    assert one_block >= gamma(2 * k, U_TRUNCATE) * hi_hi
    promoted = gemm_bound(a, b, "bf16x9", "gpu", k_block=32, small_k_block=32, kind="probabilistic")[0, 0]
    rigorous = gemm_bound(a, b, "bf16x9", "gpu", k_block=32, small_k_block=32)[0, 0]
    assert promoted < rigorous / 2           # 130 promotions per path: their sqrt pays


def test_probabilistic_bound_of_the_ozaki2_schemes_is_the_rigorous_one():
    rng = np.random.default_rng(9)
    a, b = cases.normal(rng, (4, 64), np.float64), cases.normal(rng, (64, 3), np.float64)
    np.testing.assert_array_equal(gemm_bound(a, b, "ozaki2_int8x14", kind="probabilistic"),
                                  gemm_bound(a, b, "ozaki2_int8x14"))


def _allowed_failures(count, confidence):
    """Failures a rate of 1 - confidence allows in ``count`` trials: mean + 4 standard deviations."""
    p = 1 - confidence
    return count * p + 4 * math.sqrt(count * p * (1 - p)) + 1


def test_probabilistic_gemm_bound_holds_at_its_stated_rate_on_random_data():
    """N(0,1) and U(0,1) operands, every scheme: the fraction of entries above the probabilistic
    bound is at most 1 - confidence (up to sampling noise), at two confidences."""
    rng = np.random.default_rng(10)
    outside, total = {0.9: 0, 0.999: 0}, 0
    for k in (16, 128, 512):        # short: some float32 BLAS builds turn slow beyond k = 512
        for make in (cases.normal, cases.uniform):
            a, b = make(rng, (48, k)), make(rng, (k, 48))
            exact = exact_matmul(a, b)
            for scheme in SCHEMES:
                error = np.abs(splitprec.matmul(a, b, dtype=scheme).astype(np.float64) - exact)
                total += error.size
                for confidence in outside:
                    bound = gemm_bound(a, b, scheme, kind="probabilistic", confidence=confidence)
                    outside[confidence] += int((error > bound).sum())
    assert all(count <= _allowed_failures(total, c) for c, count in outside.items()), (outside, total)


def test_probabilistic_fft_bounds_hold_at_their_stated_rate_on_random_signals():
    rng = np.random.default_rng(11)
    outside = total = 0
    for n in (64, 97, 256):
        x = np.stack([cases.complex_normal(rng, n) for _ in range(8)])
        exact = np.stack([np.fft.fft(line.astype(np.complex128)) for line in x])
        real = x.real.copy()
        exact_real = np.fft.rfft(real.astype(np.float64))
        for scheme in SCHEMES:
            for got, want, bound in ((splitprec.fft.fft(x, dtype=scheme), exact, fft_bound(x, scheme, kind="probabilistic")),
                                     (splitprec.fft.rfft(real, dtype=scheme), exact_real,
                                      rfft_bound(real, scheme, kind="probabilistic"))):
                error = np.linalg.norm(got - want, axis=-1) / np.linalg.norm(want, axis=-1)
                outside += int((error > bound).sum())
                total += error.size
    assert outside <= _allowed_failures(total, 0.999), (outside, total)


def _dot_in_k_order(x, y):
    """float32 ``x @ y`` with each entry's k products added one by one, in k order."""
    total = np.zeros((x.shape[0], y.shape[1]), np.float32)
    for q in range(x.shape[1]):
        total += x[:, q:q + 1] * y[q:q + 1, :]
    return total


def _scheme_product_in_k_order(a, b, scheme):
    """The reference engine's arithmetic (docs/bounds.md, section 4) with every narrow product's
    dot product summed in k order, not in the BLAS's order: the split's parts multiplied pairwise,
    scaled by ``2**-((i+j)*shift)``, added in float32 in the scheme's order, pow2 scales undone."""
    d = splitprec.dtype(scheme)
    parts_a, parts_b = split(a, d, axis=-1), split(b, d, axis=-2)
    products = [np.ldexp(_dot_in_k_order(parts_a.terms[i], parts_b.terms[j]), -(i + j) * d.shift).astype(np.float32)
                for i, j in d.products]
    total = functools.reduce(operator.add, products)
    if parts_a.exponent is None:
        return total
    return np.ldexp(total, parts_a.exponent + parts_b.exponent).astype(np.float32)


@pytest.mark.parametrize("scheme", ["bf16x9", "bf16x6", "tf32x3"])
def test_probabilistic_bound_is_exceeded_on_adversarial_data_within_the_rigorous_one(scheme):
    """No guarantee on adversarial data (docs/bounds.md, section 13): a 1 followed by 255 values
    just below half its ulp. Summed in k order, an accumulation order the rigorous bound covers,
    every small value is rounded away: the error grows like k u, not sqrt(k) u, and the rounding
    errors are neither random nor mean-zero. The order is made explicit here because a float32
    BLAS may keep several partial sums per entry (OpenBLAS does) and so keep some small values;
    the engine's own result, in whatever order its BLAS sums, stays within the rigorous bound."""
    k = 256
    a = np.ones((16, k), np.float32)
    b = np.full((k, 16), 255 / 256 * 2.0 ** -24, np.float32)
    b[0] = 1
    computed = _scheme_product_in_k_order(a, b, scheme).astype(np.float64)
    assert np.all(computed == 1.0)                    # every small term was lost
    exact = exact_matmul(a, b)
    error = np.abs(computed - exact)
    assert np.all(error <= gemm_bound(a, b, scheme))
    assert np.all(error > 2 * gemm_bound(a, b, scheme, kind="probabilistic"))
    assert np.all(np.abs(splitprec.matmul(a, b, dtype=scheme) - exact) <= gemm_bound(a, b, scheme))


@pytest.mark.parametrize("scheme", ["bf16x9", "bf16x6", "tf32x3"])
def test_scheme_product_in_k_order_is_the_engine_where_every_sum_is_exact(scheme):
    """The k-order model above is the engine's arithmetic: on values +-(1 + m 2**-9), m < 512,
    and k = 8, every part is a multiple of 2**-9, every sum of part products a multiple of
    2**-18 below 2**6 in magnitude, so exact in float32 in any order, and both give the same bits."""
    rng = np.random.default_rng(12)
    a, b = ((1 + rng.integers(0, 512, shape) / 512) * rng.choice([-1, 1], shape) for shape in ((16, 8), (8, 16)))
    a, b = a.astype(np.float32), b.astype(np.float32)
    assert np.array_equal(_scheme_product_in_k_order(a, b, scheme), splitprec.matmul(a, b, dtype=scheme))


@pytest.mark.parametrize("shape_a, shape_b", [((5, 7), (7,)), ((7,), (7, 5)), ((7,), (7,)), ((2, 5, 7), (7,)),
                                              ((7,), (2, 7, 5))])
def test_vector_products_are_measured_as_numpy_shapes_them_regression(shape_a, shape_b):
    """A 1-D operand is a row (a) or a column (b) whose axis leaves the result, as in numpy.matmul:
    the exact product, the bound (every kind and the fp64 schemes) and check take vectors too."""
    from splitprec.accuracy import check, exact_matmul
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(shape_a).astype(np.float32), rng.standard_normal(shape_b).astype(np.float32)
    expected = np.matmul(a, b).shape
    row, column = a.reshape((1,) * (a.ndim == 1) + a.shape), b.reshape(b.shape + (1,) * (b.ndim == 1))
    whole = exact_matmul(row, column)
    exact = exact_matmul(a, b)
    assert exact.shape == expected and np.array_equal(exact.reshape(-1), whole.reshape(-1))
    for options in ({"dtype": "bf16x9"}, {"dtype": "tf32x3", "kind": "probabilistic"}, {"precision": "fp32"}):
        bound = gemm_bound(a, b, **options)
        assert bound.shape == expected and np.array_equal(bound.reshape(-1), gemm_bound(row, column, **options).reshape(-1))
    assert (np.abs(sp.matmul(a, b, dtype="bf16x9") - exact) <= gemm_bound(a, b, "bf16x9")).all()
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert (np.abs(sp.matmul(a64, b64, dtype="ozaki2_int8x14") - exact_matmul(a64, b64))
            <= gemm_bound(a64, b64, "ozaki2_int8x14")).all()
    assert check(a, b, ["bf16x9"]).rows[0].ratio <= 1


@pytest.mark.parametrize("call", [lambda m: accuracy.exact_matmul(m, m.T), lambda m: gemm_bound(m, m.T, "bf16x9"),
                                  lambda m: accuracy.check(m, m.T, "bf16x9"), lambda m: accuracy.fft_bound(m, "bf16x9"),
                                  lambda m: accuracy.exact_dft(m[0]),
                                  lambda m: gemm_bound(m.astype(np.float64), m.T.astype(np.float64), "ozaki2_int8x14")])
def test_the_harness_refuses_masked_arrays_as_matmul_does_regression(call):
    """A masked array's mask would be ignored: TypeError naming the operand, as sp.matmul gives."""
    m = np.ma.masked_array(np.ones((3, 4), np.float32), mask=np.eye(3, 4, dtype=bool))
    with pytest.raises(TypeError, match=r"is a numpy.ma.MaskedArray, whose mask would be ignored"):
        call(m)
