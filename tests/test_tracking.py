"""TrackedArray: creation, reading the bound, certify, the edges (inf bounds), products, FFTs and errors."""
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import splitprec as sp
from splitprec.accuracy import exact_dft, exact_matmul, fft_bound, gemm_bound
from splitprec.accuracy.tracking_report import ELEMENTWISE, WITH_PRODUCTS, chain_tightness, section

RNG = np.random.default_rng(0)


def tracked(data, **options):
    return sp.asarray(np.asarray(data, np.float32), dtype="bf16x9", track_error=True, **options)


def test_import_splitprec_loads_neither_mpmath_nor_the_harness():
    code = "import sys, splitprec; print('mpmath' in sys.modules, 'splitprec.accuracy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.split() == ["False", "False"]


def test_asarray_untracked_is_a_split_array_and_tracked_a_tracked_array():
    assert type(sp.asarray([1.0])) is sp.SplitArray
    x = sp.asarray([1.0], dtype="tf32x3", track_error=True)
    assert isinstance(x, sp.TrackedArray) and x.dtype.name == "tf32x3" and x.mode == "rigorous"
    assert sp.asarray([1.0], track_error="probabilistic", confidence=0.99).confidence == 0.99


def test_asarray_float64_input_bound_is_its_exact_rounding_error():
    data = np.array([0.1, 1 / 3, 2.0, 1e-46, 3.5e38])
    x = sp.asarray(data, track_error=True)
    expected = [abs(Fraction(d) - Fraction(float(np.float32(d)))) for d in data[:4]]
    assert [Fraction(b) for b in x.error_bound[:4]] == expected
    assert x.error_bound[4] == np.inf                   # beyond float32: rounds to inf


def test_asarray_error_adds_the_callers_bound():
    x = sp.asarray(np.float32([1, 2]), track_error=True, error=[0.5, 0.25])
    assert x.error_bound.tolist() == [0.5, 0.25]


@pytest.mark.parametrize("options, message", [
    (dict(error=0.1), r"^asarray: error=0.1 needs track_error=True"),
    (dict(track_error=True, error=-1.0), r"^asarray: error must hold non-negative numbers"),
    (dict(track_error="sometimes"), r"^asarray: unknown track_error 'sometimes'"),
    (dict(track_error=True, confidence=1.0), r"^asarray: confidence must be a number strictly between 0 and 1"),
])
def test_asarray_rejects_bad_tracking_options(options, message):
    with pytest.raises(ValueError, match=message):
        sp.asarray(np.float32([1, 2]), **options)


def test_certify_returns_true_within_tolerance_and_names_the_worst_entry_otherwise():
    x = tracked([1.0, 2.0, 3.0]) / 3.0
    assert x.certify(rtol=2 ** -20) is True
    with pytest.raises(ValueError, match=r"^certify: entry \(2,\) = 1\.0 has error bound .* above the "
                                         r"tolerance .*\(atol=0\.0, rtol=1e-12\)"):
        x.certify(rtol=1e-12)
    with pytest.raises(ValueError, match=r"^certify: rtol must be a non-negative number"):
        x.certify(rtol=-1)


def test_repr_shows_the_worst_relative_bound():
    x = tracked([1.0, 2.0]) * 3.0
    assert repr(x).startswith("TrackedArray([3., 6.], dtype=bf16x9, device=cpu, relative error <= ")
    printed = float(repr(x).rsplit("<= ", 1)[1].rstrip(")"))
    assert float(x.relative_error_bound.max()) <= printed == float(f"{printed:.3g}")


def test_repr_rounds_the_bound_up_and_certify_names_a_number_regression():
    """``.3g`` printed a bound of 1.2341e-7 as 1.23e-07, below it; ``rtol=0`` on an infinite value
    gave the tolerance as ``nan`` (0 * inf)."""
    x = sp.asarray(np.float32([1.0, 2.0]), dtype="bf16x9", track_error=True, error=[1.2341e-7, 0.0])
    assert repr(x).endswith("relative error <= 1.24e-07)")
    y = sp.asarray(np.float32([np.inf, 1.0]), dtype="bf16x9", track_error=True)
    with pytest.raises(ValueError, match=r"^certify: entry \(0,\) = inf has error bound inf, above the "
                                         r"tolerance 1\.0 \(atol=1, rtol=0\)"):
        y.certify(rtol=0, atol=1)


def test_division_by_an_interval_holding_zero_gives_an_infinite_bound():
    y = tracked([1.0, 1.0]) / sp.asarray(np.float32([1e-3, 1.0]), track_error=True, error=[2e-3, 0.5])
    assert y.error_bound[0] == np.inf and np.isfinite(y.error_bound[1])


@pytest.mark.parametrize("operation", [lambda x: x * np.float32(3e38), lambda x: np.log(x - 5),
                                       lambda x: np.sqrt(-x), lambda x: x / 0.0])
def test_overflow_nan_and_undefined_results_have_infinite_bounds(operation):
    with np.errstate(all="ignore"):
        assert (operation(tracked([2.0, 3.0])).error_bound == np.inf).all()


def test_inf_bound_times_exact_zero_stays_infinite_regression():
    """inf * 0 in a propagation term is NaN: it must become an inf bound, never a finite one."""
    x = sp.asarray(np.float32([1.0]), track_error=True, error=np.inf)
    assert (x * 0.0).error_bound[0] == np.inf


def test_shape_operations_carry_bounds_unchanged():
    x = sp.asarray(RNG.standard_normal((3, 4)), track_error=True)          # float64: rounded
    bound = x.error_bound
    assert np.array_equal(x.T.error_bound, bound.T)
    assert np.array_equal(x.reshape(4, 3).error_bound, bound.reshape(4, 3))
    assert np.array_equal(x[1:, ::-2].error_bound, bound[1:, ::-2])
    assert np.array_equal(np.concatenate([x, x], axis=1).error_bound, np.concatenate([bound, bound], 1))


def test_tracked_arrays_are_immutable_and_refuse_silent_conversion():
    x = tracked([1.0])
    with pytest.raises(TypeError, match=r"^TrackedArray.__setitem__: tracked arrays are immutable"):
        x[0] = 2.0
    with pytest.raises(TypeError, match=r"^TrackedArray.__array__: converting to a numpy array would drop"):
        np.asarray(x)


@pytest.mark.parametrize("call, message", [(lambda x: np.tanh(x), r"^tanh: no error-propagation rule"),
                                           (lambda x: np.std(x), r"^std: no error-propagation rule"),
                                           (lambda x: np.add.reduce(x), r"^add: tracked arrays take plain calls"),
                                           (lambda x: sp.fft.irfft(x), r"^irfft: no tracked rule")])
def test_operations_without_a_rule_raise_type_error(call, message):
    with pytest.raises(TypeError, match=message):
        call(tracked([1.0, 2.0]))


def test_matmul_bound_covers_the_exact_product_and_is_at_least_gemm_bound():
    a, b = (RNG.standard_normal(s).astype(np.float32) for s in ((6, 40), (40, 5)))
    c = sp.matmul(tracked(a), tracked(b))
    assert (np.abs(c.value - exact_matmul(a, b)) <= c.error_bound).all()
    assert (c.error_bound >= gemm_bound(a, b, "bf16x9")).all()


def test_matmul_propagates_the_operands_bounds():
    a, b = (RNG.standard_normal(s) for s in ((6, 40), (40, 5)))          # float64: rounded inputs
    c = sp.asarray(a, dtype="bf16x9", track_error=True) @ sp.asarray(b, dtype="bf16x9", track_error=True)
    assert (np.abs(c.value - exact_matmul(a, b)) <= c.error_bound).all()


def test_einsum_of_a_pair_is_the_tracked_matmul():
    a, b = tracked(RNG.standard_normal((4, 7))), tracked(RNG.standard_normal((5, 7)))
    by_einsum, by_matmul = np.einsum("ij,kj->ik", a, b), a @ b.T
    assert np.array_equal(by_einsum.value, by_matmul.value)
    assert np.array_equal(by_einsum.error_bound, by_matmul.error_bound)


def test_probabilistic_matmul_bound_is_below_the_rigorous_one_for_long_k():
    a, b = (RNG.standard_normal(s).astype(np.float32) for s in ((2, 4096), (4096, 2)))
    rigorous = sp.asarray(a, track_error=True) @ b
    probabilistic = sp.asarray(a, track_error="probabilistic") @ b
    assert (probabilistic.error_bound < rigorous.error_bound).all()


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft"])
def test_fft_bound_covers_the_exact_transform(name):
    x = RNG.standard_normal((3, 24)).astype(np.float32)
    y = getattr(sp.fft, name)(tracked(x) * 0.5)
    exact = np.array([exact_dft(line) for line in x * np.float32(0.5)])
    exact = exact[..., :13] if name == "rfft" else np.conj(exact) / 24 if name == "ifft" else exact
    assert (np.abs(y.value - exact) <= y.error_bound).all()


def test_fft_entry_bound_is_the_line_norm_bound():
    x = RNG.standard_normal(64).astype(np.float32)
    y = sp.fft.fft(tracked(x))
    line = fft_bound(x, "bf16x9") * 8 * np.linalg.norm(x.astype(np.float64))
    assert np.allclose(y.error_bound, line, rtol=2 ** -40)


def test_elementwise_chain_median_bound_is_within_100x_the_actual_error():
    assert chain_tightness(ELEMENTWISE)[-1][1] <= 100


def test_chain_with_products_bound_is_not_vacuous():
    """The bound stays within 1000x (measured ~250x, docs/tracking.md) of the actual error."""
    assert chain_tightness(WITH_PRODUCTS, shape=(8, 64))[-1][1] <= 1000


def test_scalar_results_of_numpy_ufuncs_stay_tracked_regression():
    """numpy's ufuncs return scalars for 0-d operands; the rules need arrays (a CG step failed)."""
    x = tracked([1.0, 2.0])
    ratio = (x * x).sum() / (x * x).sum()
    assert ratio.shape == () and ratio.value == 1 and 0 < ratio.error_bound < 2 ** -20


def test_report_section_lists_every_step_of_both_chains():
    text = section()
    assert "elementwise:" in text and "with products:" in text
    assert sum(line.strip().startswith(("1 ", "10 ")) for line in text.splitlines()) == 4


def test_einsum_of_three_operands_covers_the_exact_result():
    a, b, c = (RNG.standard_normal(s).astype(np.float32) for s in ((3, 5), (5, 4), (4, 2)))
    result = np.einsum("ij,jk,kl->li", tracked(a), tracked(b), tracked(c))
    exact = exact_matmul(exact_matmul(a, b).astype(np.float64), c.astype(np.float64)).T
    assert result.shape == (2, 3)
    assert (np.abs(result.value - exact) <= result.error_bound * (1 + 2.0 ** -40)).all()


def test_einsum_rejects_a_label_summed_in_one_operand():
    with pytest.raises(ValueError, match=r"^einsum: tracked operands of 'ij,jk->k' repeat a label"):
        np.einsum("ij,jk->k", tracked(np.ones((2, 3))), tracked(np.ones((3, 4))))


@pytest.mark.parametrize("n", [16, 40])
def test_fft_with_n_crops_or_pads_and_covers_the_exact_transform(n):
    x = RNG.standard_normal(24).astype(np.float32)
    y = sp.fft.fft(tracked(x), n=n)
    line = np.zeros(n, np.float32)
    line[:min(n, 24)] = x[:n]
    assert y.shape == (n,) and (np.abs(y.value - exact_dft(line)) <= y.error_bound).all()


def test_complex_products_cover_the_exact_result():
    x = RNG.standard_normal(32).astype(np.float32)
    spectrum = sp.fft.fft(tracked(x))
    scaled = spectrum * spectrum.conj() * 0.25               # |X|^2 / 4, complex arithmetic
    exact = np.abs(exact_dft(x)) ** 2 / 4
    assert scaled.is_complex and (np.abs(scaled.value - exact) <= scaled.error_bound).all()


def test_schemes_of_tracked_operands_promote_as_split_arrays_do():
    x = sp.asarray([1.0], dtype="bf16x3", track_error=True) + sp.asarray([1.0], dtype="bf16x9", track_error=True)
    assert x.dtype.name == (sp.asarray([1.0], dtype="bf16x3") + sp.asarray([1.0], dtype="bf16x9")).dtype.name


def test_where_takes_each_entry_and_its_bound_from_the_chosen_operand():
    x = sp.asarray(np.array([0.1, 0.2]), track_error=True)
    y = tracked([5.0, 6.0]) * 3.0
    chosen = np.where(np.array([True, False]), x, y)
    assert chosen.value.tolist() == [x.value[0], y.value[1]]
    assert chosen.error_bound.tolist() == [x.error_bound[0], y.error_bound[1]]


def test_untracked_gives_the_values_as_a_split_array():
    x = tracked([1.0, 2.0]) * 2.0
    assert type(x.untracked) is sp.SplitArray and np.asarray(x.untracked).tolist() == [2.0, 4.0]
    with pytest.raises(TypeError, match=r"^untracked: the values are complex64"):
        sp.fft.fft(x).untracked


def test_dask_arrays_are_tracked_chunk_by_chunk():
    da = pytest.importorskip("dask.array")
    data = RNG.uniform(1, 2, (8, 6)).astype(np.float32)
    x = sp.asarray(da.from_array(data, chunks=(4, 3)), dtype="bf16x9", track_error=True)
    y = (x * x + 1.0) / 3.0
    total, product = y.sum(axis=0).compute(scheduler="sync"), (x @ x.T).compute(scheduler="sync")
    assert isinstance(total, sp.TrackedArray) and isinstance(product, sp.TrackedArray)
    exact = [sum((Fraction(float(v)) ** 2 + 1) / 3 for v in column) for column in data.T]
    assert all(abs(Fraction(float(t)) - e) <= Fraction(float(b))
               for t, e, b in zip(total.value, exact, total.error_bound))
    assert (np.abs(product.value - exact_matmul(data, data.T)) <= product.error_bound).all()


def test_dask_error_must_be_a_scalar():
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match=r"^asarray: error= of a dask array must be a scalar bound"):
        sp.asarray(da.ones((4,), chunks=2, dtype=np.float32), track_error=True, error=np.ones(4))


@settings(max_examples=60, deadline=None)
@given(lines=st.integers(1, 3), size=st.integers(1, 40), resize=st.sampled_from([None, -5, 7]),
       name=st.sampled_from(["fft", "ifft", "rfft"]), norm=st.sampled_from([None, "ortho", "forward"]),
       scheme=st.sampled_from(["bf16x9", "tf32x3", "bf16x3"]), span=st.integers(0, 60), seed=st.integers(0, 2 ** 16))
def test_fft_of_rounded_inputs_covers_the_exact_transform(lines, size, resize, name, norm, scheme, span, seed):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((lines, size)) * 2.0 ** rng.integers(-span, span + 1, (lines, size))
    n = None if resize is None else max(size + resize, 1)
    y = getattr(sp.fft, name)(sp.asarray(data, dtype=scheme, track_error=True), n=n, norm=norm)
    length = size if n is None else n
    padded = np.zeros((lines, length))
    padded[:, :min(size, length)] = data[:, :length]
    exact = np.array([exact_dft(line) for line in padded])
    inverse = name == "ifft"
    factor = {None: 1 / length if inverse else 1.0, "ortho": length ** -0.5,
              "forward": 1.0 if inverse else 1 / length}[norm]          # numpy's norm factors
    exact = (np.conj(exact) if inverse else exact) * factor            # the input is real
    exact = exact[:, :length // 2 + 1] if name == "rfft" else exact
    assert (np.abs(y.value - exact) <= y.error_bound).all()


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "fftn", "ifftn", "rfftn"])
def test_nd_transforms_are_the_tracked_1d_transforms_over_their_axes(name):
    """The values are splitprec's n-D transforms bit for bit; the reference applies the exact DFT
    along each axis (rounded to complex128 between axes: 2**-52 relative, far below any bound)."""
    x = RNG.standard_normal((2, 6, 8)).astype(np.float32)
    y = getattr(sp.fft, name)(tracked(x))
    assert np.array_equal(y.value, getattr(sp.fft, name)(x, dtype="bf16x9"))
    axes = (-2, -1) if name.endswith("2") else (0, 1, 2)
    exact = x.astype(np.complex128)
    for axis in axes:
        exact = np.apply_along_axis(exact_dft, axis, exact)
    if name.startswith("i"):
        exact = np.conj(exact) / np.prod([x.shape[a] for a in axes])
    if name.startswith("r"):
        exact = exact[..., :5]
    assert (np.abs(y.value - exact) <= y.error_bound).all()


def test_matmul_of_tracked_arrays_refuses_axes_regression():
    """``sp.matmul`` passes ``axes=`` to its operands' own product; tracked arrays take it and refuse
    any value but None with a TypeError naming it (they raised on the keyword itself)."""
    a = tracked(RNG.standard_normal((3, 4)).astype(np.float32))
    assert sp.matmul(a, a.T, axes=None).shape == (3, 3)
    with pytest.raises(TypeError, match=r"^matmul: axes=\[\(-2, -1\), \(-2, -1\), \(-2, -1\)\] is not supported for tracked"):
        sp.matmul(a, a.T, axes=[(-2, -1), (-2, -1), (-2, -1)])


def test_exp_bound_covers_the_spread_where_exp_underflows_regression():
    """``exp(a^) expm1(E)`` loses the spread where float64's ``exp(a^)`` underflows while
    ``exp(a^ + E)`` does not: the bound there is ``exp(a^ + E)``, never below the exact error."""
    import mpmath
    mpmath.mp.prec = 200
    x = sp.asarray(np.array([2.0 ** 34 + 680]), track_error=True)      # value 2**34, bound 680
    z = np.exp(x - 2.0 ** 34 - 750.0)                                   # exp(-750) = 0; exact up to exp(-70)
    assert z.value[0] == 0 and mpmath.mpf(float(z.error_bound[0])) >= mpmath.exp(-70)
    for a, e in [(-743.25, 700.0), (-745.0, 1.0), (-800.0, 60.0), (-760.0, 700.0)]:
        w = np.exp(sp.asarray(np.float32(a), track_error=True, error=e))
        worst = mpmath.exp(mpmath.mpf(a) + mpmath.mpf(e)) - mpmath.mpf(float(w.value))
        assert mpmath.mpf(float(w.error_bound)) >= worst, (a, e)


def test_real_and_imaginary_parts_keep_the_complex_bound_regression():
    x = RNG.standard_normal((2, 16)).astype(np.float32)
    y = sp.fft.fft(tracked(x))
    exact = np.array([exact_dft(line) for line in x])
    for part, reference in ((y.imag, exact.imag), (np.imag(y), exact.imag), (y.real, exact.real)):
        assert np.array_equal(part.error_bound, y.error_bound)
        assert (np.abs(part.value - reference) <= part.error_bound).all()


def test_modulus_of_complex_values_is_tracked_regression():
    x = RNG.standard_normal(32).astype(np.float32)
    y = sp.fft.fft(tracked(x))
    modulus = np.abs(y)
    assert not modulus.is_complex and modulus.value.dtype == np.float32
    assert (np.abs(modulus.value - np.abs(exact_dft(x))) <= modulus.error_bound).all()


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="long double is float64 here")
def test_long_double_input_is_rounded_once_and_bounded_regression():
    exact = np.longdouble(1) + np.longdouble(2) ** -24 + np.longdouble(2) ** -60    # above a float32 tie
    x = sp.asarray(np.array([exact, np.longdouble(1) + np.longdouble(2) ** -60]), track_error=True)
    assert x.value.tolist() == [1 + 2.0 ** -23, 1.0]
    assert (np.abs(x.value.astype(np.longdouble) - np.array([exact, 1 + np.longdouble(2) ** -60]))
            <= x.error_bound.astype(np.longdouble)).all()


@pytest.mark.parametrize("operation", [lambda x: np.maximum(x, float("inf")), lambda x: x / float("inf"),
                                       lambda x: np.where(np.array([True, False]), x, float("nan"))])
def test_infinite_or_nan_python_operands_give_unknown_bounds_regression(operation):
    """A NaN or infinite value, or one computed from such an operand, never gets a finite bound."""
    y = operation(tracked([1.0, 2.0]))
    assert np.isinf(y.error_bound[~np.isfinite(y.value)]).all()
    assert np.isinf(y.error_bound).any()


def test_certify_takes_numpy_scalars_as_tolerances_regression():
    x = tracked([1.0, 2.0]) * 1.5
    assert x.certify(rtol=np.float32(1e-6), atol=np.float64(0)) is True
    with pytest.raises(ValueError, match=r"^certify: rtol must be a non-negative number, got np.True_"):
        x.certify(rtol=np.True_)


def test_dask_einsum_runs_chunk_by_chunk_regression():
    da = pytest.importorskip("dask.array")
    a, b = RNG.uniform(1, 2, (6, 8)).astype(np.float32), RNG.uniform(1, 2, (8, 4)).astype(np.float32)
    x = sp.asarray(da.from_array(a, chunks=(3, 4)), dtype="bf16x9", track_error=True)
    y = da.einsum("ij,jk->ik", x, sp.asarray(da.from_array(b, chunks=(4, 2)), dtype="bf16x9", track_error=True))
    result = y.compute(scheduler="sync")
    assert isinstance(result, sp.TrackedArray)
    assert (np.abs(result.value - exact_matmul(a, b)) <= result.error_bound).all()
    with pytest.raises(TypeError, match=r"^einsum: dtype=float64 would cast a tracked result"):
        np.einsum("ij,jk->ik", tracked(a), tracked(b), dtype=np.float64)



@pytest.mark.parametrize("data", [np.array([2 ** 53 + 1], np.int64), np.array([-(2 ** 53) - 1], np.int64),
                                  np.uint64(2 ** 53 + 1), 2 ** 53 + 1, 2 ** 64])
def test_integers_beyond_2_53_are_refused_regression(data):
    """The range check cast to float64 first, where 2**53 + 1 becomes 2**53: it entered with bound 0,
    1 from its exact value. Integers are compared exactly; Python ints beyond int64 get the same
    message (they were 'dtype object')."""
    with pytest.raises(TypeError, match=r"^asarray: x (holds integers|is the integer \d+,) beyond 2\*\*53"):
        sp.asarray(data, track_error=True)
    with pytest.raises(TypeError, match=r"^add: operand 1 (holds integers|is the integer \d+,) beyond 2\*\*53"):
        tracked([1.0]) + data
    x = sp.asarray(np.array([2 ** 53, 2 ** 53 - 1], np.int64), track_error=True)
    assert [Fraction(b) for b in x.error_bound] == [0, abs(Fraction(2 ** 53 - 1) - Fraction(float(x.value[1])))]


def test_complex128_input_bound_covers_its_rounding_error_regression():
    """The bound of complex128 data was the float64 modulus of its rounding error rounded to
    nearest: below the exact modulus in about half the entries."""
    z = RNG.standard_normal(500) + 1j * RNG.standard_normal(500)
    for x in (sp.asarray(z, track_error=True), tracked(np.zeros(500)) + z):
        for exact, value, bound in zip(z, x.value, x.error_bound):
            re, im = Fraction(exact.real) - Fraction(float(value.real)), Fraction(exact.imag) - Fraction(float(value.imag))
            assert re * re + im * im <= Fraction(bound) ** 2


def test_callers_error_is_added_rounded_up_regression():
    """``error=`` was added to the rounding bound in float64 to nearest, which can round down
    (0.1's rounding error plus 1e-30 gave the rounding error alone)."""
    x = sp.asarray(np.array([0.1, 0.5]), track_error=True, error=1e-30)
    assert Fraction(x.error_bound[0]) >= abs(Fraction(0.1) - Fraction(float(x.value[0]))) + Fraction(1e-30)
    assert x.error_bound[1] == 1e-30                          # exact input: the caller's bound as given


@pytest.mark.parametrize("operation", [lambda x: np.sin(1.0 / x), lambda x: np.cos(1.0 / x),
                                       lambda x: np.sin(np.sqrt(x)), lambda x: np.cos((1.0 / x) * 0.0),
                                       lambda x: np.imag(1.0 / x)])
def test_functions_of_arguments_that_may_not_exist_have_infinite_bounds_regression(operation):
    """``sin``/``cos`` capped an infinite or unknown argument bound at 2 (or ``|value| + 1``), and
    ``imag`` of real values gave bound 0: finite bounds for ``sin(1/x)`` with ``x``'s interval
    holding 0, where the exact value does not exist."""
    x = sp.asarray(np.float32([1e-3, 0.0]), track_error=True, error=[2e-3, 1e-3])
    assert np.isinf(operation(x).error_bound).all()
    y = np.sin(sp.asarray(np.float32([1.0]), track_error=True, error=10.0))   # known argument: capped
    assert y.error_bound[0] <= abs(float(y.value[0])) + 1 + 2.0 ** -40


def test_certify_at_the_edges_of_its_tolerances_regression():
    """``rtol=inf`` made the tolerance of a zero value NaN (an exact 0 failed), ``atol=inf``
    certified infinite bounds, and an overflowing ``rtol * |value|`` certified an interval holding
    0. An entry now passes when its finite bound is within ``atol``, or the interval excludes 0 and
    the relative test holds."""
    exact = tracked([0.0, 1.0])
    assert exact.certify(rtol=np.inf) is True
    holding_zero = sp.asarray(np.float32([2.0]), track_error=True, error=3.0)    # exact in [-1, 5]
    for options in (dict(rtol=np.inf), dict(rtol=1e308), dict(rtol=1.0, atol=2.9)):
        with pytest.raises(ValueError, match=r"^certify: entry \(0,\) = 2\.0 has error bound 3\.0"):
            holding_zero.certify(**options)
    assert holding_zero.certify(atol=3.0) is True
    assert sp.asarray(np.float32([2.0]), track_error=True, error=0.5).certify(rtol=0.5) is True   # 0.75 <= 1
    unknown = tracked([1.0]) / sp.asarray(np.float32([1.0]), track_error=True, error=2.0)
    with pytest.raises(ValueError, match=r"^certify: entry \(0,\) = 1\.0 has error bound inf, above the tolerance inf"):
        unknown.certify(atol=np.inf)


def test_sum_and_mean_take_numpy_integer_axes_regression():
    x = tracked(np.arange(6).reshape(2, 3))
    for reduce in (np.sum, np.mean):
        for axis in (np.int64(1), (np.int32(0), np.int64(-1))):
            expected = reduce(x, axis=tuple(int(a) for a in np.atleast_1d(axis)))
            got = reduce(x, axis=axis)
            assert np.array_equal(got.value, expected.value) and np.array_equal(got.error_bound, expected.error_bound)
        with pytest.raises(TypeError, match=rf"^{reduce.__name__}: axis True holds a bool"):
            reduce(x, axis=True)

@pytest.mark.parametrize("operation", [
    lambda x, y: x * 1.5 + 0.25, lambda x, y: np.sqrt(x) / 3.0, lambda x, y: np.exp(-x) - y,
    lambda x, y: np.log(x * y), lambda x, y: np.maximum(x, y * 0.5), lambda x, y: -abs(np.sin(x) * np.cos(y)),
    lambda x, y: y / x, lambda x, y: x + np.float32(2.0), lambda x, y: x * np.arange(1, 5, dtype=np.float32)])
def test_blocked_operations_give_the_unblocked_bits(operation, monkeypatch):
    """Large operations run block by block into the result (scalars, broadcast bounds and exact
    operands as they are): the same values and bounds, bit for bit, as one pass over the whole."""
    from splitprec.tracking import elementwise
    data = RNG.uniform(0.5, 2, (37, 4)).astype(np.float32)
    x = sp.asarray(data.astype(np.float64) / 3, track_error=True)           # bounds of the rounding
    y = tracked(data[::-1].copy())                                           # exact: bound 0
    monkeypatch.setattr(elementwise, "BLOCK", 10 ** 9)
    whole = operation(x, y)
    monkeypatch.setattr(elementwise, "BLOCK", 7)
    blocked = operation(x, y)
    assert np.array_equal(blocked.value, whole.value)
    assert np.array_equal(blocked.error_bound, whole.error_bound)


def test_bounds_read_and_given_are_rounded_up_and_follow_the_values_memory_order_regression():
    """``ravel(order="K")`` of a tracked array whose bound was laid out in another memory order
    paired values and bounds of different entries (a finite bound 0 on an entry off by 0.5);
    ``error=`` of a long double or a Fraction was rounded to nearest float64, and
    ``relative_error_bound`` divided to nearest: each could sit below the true bound; ``certify``
    passed with a tolerance that underflowed into float64's subnormals."""
    from fractions import Fraction
    x = np.asfortranarray(np.float32([[1, 2], [3, 4]]))
    t = sp.asarray(x, dtype="bf16x9", track_error=True, error=np.asfortranarray([[0.0, 0.5], [0.0, 0.0]]))
    for r in (np.ravel(t, order="K"), np.ravel(t, order="A"), t.reshape(-1, order="A"), np.ravel(t)):
        assert np.array_equal(r.error_bound, np.where(r.value == 2, 0.5, 0.0))      # the bound given to 2
    for given in (np.longdouble(1) / 3, Fraction(1, 3), 2 ** 60 + 1):
        stored = sp.asarray(np.float32([1.0]), dtype="bf16x9", track_error=True, error=given).error_bound[0]
        assert Fraction(float(stored)) >= Fraction(given) if not isinstance(given, np.longdouble) else \
            Fraction(float(stored)) >= Fraction(*given.as_integer_ratio())
    with pytest.raises(TypeError, match="error must hold real numbers"):
        sp.asarray(np.float32([1.0]), dtype="bf16x9", track_error=True, error=np.array([3 + 4j]))
    t = sp.asarray(np.array([0.1]), dtype="bf16x9", track_error=True)
    value, rel = Fraction(float(t.value[0])), Fraction(float(t.relative_error_bound[0]))
    assert abs(value - Fraction(0.1)) <= rel * abs(value)
    tiny = sp.asarray(np.float32([2.0 ** -149]), dtype="bf16x9", track_error=True, error=3 * 2.0 ** -1074)
    with pytest.raises(ValueError, match="above the tolerance"):
        tiny.certify(rtol=2.75 * 2.0 ** -925)
