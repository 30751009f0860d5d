"""The adversarial search: every scheme's error stays within its derived bound, on every case.

float32-target schemes on float32 inputs (``gemm_inputs``, the float32 cases, FFT signals); the
fp64 schemes ``ozaki2_int8x<N>`` on float64 inputs (``gemm64_inputs``, the ``fp64_*`` cases).
"""
import numpy as np
import pytest
from hypothesis import example, given, target
from hypothesis import strategies as st

from splitprec.accuracy import cases, exact_matmul, search
from splitprec.accuracy.bounds import schemes
from splitprec.accuracy.measure import exact_spectrum, gemm_schemes, measure_fft, measure_gemm

SCHEMES = schemes()  # every registered scheme with a derived bound
PINNED = search.PINNED_GEMM


def _pinned(pairs):
    """Decorator: every pinned hard input as an explicit hypothesis example."""
    def decorate(test):
        for pair in pairs.values():
            test = example(inputs=pair)(test)
        return test
    return decorate


def _assert_gemm_within_bound(scheme, inputs):
    ratio = search.gemm_ratio(*inputs, scheme)
    target(min(ratio, 1e6), label=f"error/bound {scheme}")
    assert ratio <= 1, f"{scheme}: error/bound = {ratio!r}"


@pytest.mark.parametrize("scheme", SCHEMES)
@given(inputs=search.gemm_inputs())
@_pinned(PINNED)
def test_gemm_error_within_bound(scheme, inputs):
    _assert_gemm_within_bound(scheme, inputs)


@pytest.mark.parametrize("case", cases.registry("ci", "gemm", "float32"), ids=lambda c: c.name)
def test_registered_gemm_case_within_bound(case):
    _assert_case_within_bound(case, SCHEMES)


def _assert_case_within_bound(case, schemes):
    a, b = case.inputs(seed=0)
    reference = exact_matmul(a, b)
    with np.errstate(all="ignore"):
        ratios = {s: measure_gemm(a, b, s, reference=reference, native=0.0, probabilistic=False).ratio for s in schemes}
    assert all(r <= 1 for r in ratios.values()), f"{case.name}: error/bound per scheme {ratios}"


@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_cases_reach_a_visible_fraction_of_the_bound(name):
    a, b = PINNED[name]
    worst = max(search.gemm_ratio(a, b, s) for s in SCHEMES)
    assert 0 <= worst <= 1


def test_single_term_tie_is_close_to_its_bound():
    """A round-to-even tie in both factors is the worst case of a one-term product: the bound
    must be nearly attained there (it is tight, not just valid)."""
    a, b = PINNED["bf16_tie_k1"]
    assert 0.9 < search.gemm_ratio(a, b, "bf16") <= 1


fft_schemes = pytest.mark.parametrize("scheme", SCHEMES)


@fft_schemes
@given(x=search.fft_inputs())
@example(x=cases.impulse(16, 3))
@example(x=cases.tone(60, 7))
@example(x=cases.complex_normal(np.random.default_rng(0), 97))
def test_fft_error_within_bound(scheme, x):
    ratio = search.fft_ratio(x, scheme)
    target(min(ratio, 1e6), label=f"fft error/bound {scheme}")
    assert ratio <= 1, f"{scheme}: fft error/bound = {ratio!r}"


@pytest.mark.parametrize("case", cases.registry("ci", "fft") + cases.registry("full", "rfft"),
                         ids=lambda c: c.name)
def test_registered_fft_case_within_bound(case):
    """Every complex (fft_bound) and real (rfft_bound) signal of the registry, on every scheme."""
    (x,) = case.inputs(seed=0)
    reference = exact_spectrum(x, case.op)
    ratios = {s: measure_fft(x, s, op=case.op, reference=reference, native=0.0, probabilistic=False).ratio for s in SCHEMES}
    assert all(r <= 1 for r in ratios.values()), f"{case.name}: {case.op} error/bound per scheme {ratios}"


@given(inputs=search.gemm_inputs(max_k=8, max_side=3), scheme=st.sampled_from(SCHEMES))
def test_gpu_bound_is_never_below_cpu_bound(inputs, scheme):
    from splitprec.accuracy import gemm_bound
    a, b = inputs
    assert np.all(gemm_bound(a, b, scheme, "gpu") >= gemm_bound(a, b, scheme, "cpu"))


# ---- fp64 schemes (ozaki2_int8x<N>, float64 operands) ------------------------------------------

FP64_SCHEMES = gemm_schemes("float64")
PINNED64 = search.PINNED_GEMM64


@pytest.mark.parametrize("scheme", FP64_SCHEMES)
@given(inputs=search.gemm64_inputs())
@_pinned(PINNED64)
def test_fp64_gemm_error_within_bound(scheme, inputs):
    _assert_gemm_within_bound(scheme, inputs)


def test_fp64_strategy_draws_float64_operands_that_multiply():
    from hypothesis import find
    found = find(search.gemm64_inputs(), lambda ab: ab[0].shape[-1] >= 3 and not np.isfinite(ab[0]).all())
    a, b = found
    assert a.dtype == b.dtype == np.float64 and a.shape[-1] == b.shape[0]


@pytest.mark.parametrize("case", cases.registry("full", "gemm", "float64"), ids=lambda c: c.name)
def test_registered_fp64_case_within_bound(case):
    """Every float64 case of the registry, the full level's k = 65536 included."""
    _assert_case_within_bound(case, FP64_SCHEMES)


def test_ozaki_grid_ties_nearly_attain_the_bound():
    """A value halfway on an Ozaki-II scheme's integer grid is its worst case (k = 1): the bound
    must be nearly attained there, for x12 and x13 at k = 1 and x14 on a small entry of a row."""
    assert 0.95 < search.gemm_ratio(*PINNED64["x12_grid_tie_k1"], "ozaki2_int8x12") <= 1
    assert 0.8 < search.gemm_ratio(*PINNED64["x13_grid_tie_k1"], "ozaki2_int8x13") <= 1
    assert 0.95 < search.gemm_ratio(*PINNED64["small_entry_tie_k2"], "ozaki2_int8x14") <= 1
    assert search.gemm_ratio(*PINNED64["x12_grid_tie_k1"], "ozaki2_int8x14") == 0   # 54 bits: exact


def test_grid_ties_are_halfway_on_the_scaling_grid():
    from splitprec.ozaki import scale_exponents
    x = search.grid_ties(np.random.default_rng(0), (4, 32), 54)
    t = np.ldexp(x, scale_exponents(x, 54, -1))
    small = np.abs(t) < 2.0 ** 50                       # float64 holds the half there
    assert small.sum() > 0 and np.all(t[small] - np.floor(t[small]) == 0.5)
