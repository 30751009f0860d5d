"""The adversarial search: every scheme's error stays within its derived bound, on every case."""
import numpy as np
import pytest
from hypothesis import example, given, target
from hypothesis import strategies as st

from accuracy import cases, exact_dft, exact_matmul, search
from accuracy.bounds import schemes
from accuracy.measure import measure_fft, measure_gemm

SCHEMES = schemes()  # every registered scheme with a derived bound
PINNED = search.PINNED_GEMM


def _gemm_examples(test):
    for pair in PINNED.values():
        test = example(inputs=pair)(test)
    return test


@pytest.mark.parametrize("scheme", SCHEMES)
@given(inputs=search.gemm_inputs())
@_gemm_examples
def test_gemm_error_within_bound(scheme, inputs):
    ratio = search.gemm_ratio(*inputs, scheme)
    target(min(ratio, 1e6), label=f"error/bound {scheme}")
    assert ratio <= 1, f"{scheme}: error/bound = {ratio!r}"


@pytest.mark.parametrize("case", cases.registry("ci", "gemm"), ids=lambda c: c.name)
def test_registered_gemm_case_within_bound(case):
    a, b = case.inputs(seed=0)
    reference = exact_matmul(a, b)
    with np.errstate(all="ignore"):
        ratios = {s: measure_gemm(a, b, s, reference=reference, native=0.0).ratio for s in SCHEMES}
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


@pytest.mark.parametrize("case", cases.registry("ci", "fft"), ids=lambda c: c.name)
def test_registered_fft_case_within_bound(case):
    (x,) = case.inputs(seed=0)
    reference = exact_dft(x)
    ratios = {s: measure_fft(x, s, reference=reference, native=0.0).ratio for s in SCHEMES}
    assert all(r <= 1 for r in ratios.values()), f"{case.name}: fft error/bound per scheme {ratios}"


@given(inputs=search.gemm_inputs(max_k=8, max_side=3), scheme=st.sampled_from(SCHEMES))
def test_gpu_bound_is_never_below_cpu_bound(inputs, scheme):
    from accuracy import gemm_bound
    a, b = inputs
    assert np.all(gemm_bound(a, b, scheme, "gpu") >= gemm_bound(a, b, scheme, "cpu"))
