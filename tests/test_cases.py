"""The case registry and generators: deterministic, well-typed, and what their names promise.

float64 cases (``fp64_*``, for the ozaki2 schemes): typed float64, the families the Ozaki-II bound
depends on (spans across and within rows and columns, range edges), and ``exact_matmul`` exactly
the correctly rounded product on them (a ``fractions.Fraction`` oracle).
"""
from fractions import Fraction
import math

import numpy as np
import pytest

from splitprec.accuracy import cases, exact_matmul

ALL = cases.registry("full")


def test_levels_are_nested_and_names_unique():
    quick, ci, full = (set(c.name for c in cases.registry(level)) for level in cases.LEVELS)
    assert quick < ci < full
    assert len(full) == len(ALL)


@pytest.mark.parametrize("case", cases.registry("ci"), ids=lambda c: c.name)
def test_case_inputs_are_deterministic_and_typed(case):
    first, second = case.inputs(seed=3), case.inputs(seed=3)
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == {"gemm": np.dtype(case.target), "fft": np.complex64, "rfft": np.float32}[case.op]
    if case.op == "gemm":
        a, b = first
        assert a.shape[-1] == b.shape[-2] == case.params["k"]
    else:
        assert first[0].shape == (case.params["n"],)


def test_k_runs_from_1_to_65536():
    for target in cases.TARGETS:
        ks = {c.params["k"] for c in ALL if c.op == "gemm" and c.target == target}
        assert min(ks) == 1 and max(ks) == 65536
    assert max(c.params["k"] for c in cases.registry("ci", "gemm")) <= 4096


@pytest.mark.parametrize("cond", [1e4, 1e12, 1e24])
def test_ill_conditioned_dot_has_the_requested_condition_number(cond):
    x, y = cases.ill_conditioned_dot(np.random.default_rng(0), 64, cond)
    exact = exact_matmul(x[None, :], y[:, None])[0, 0]
    magnitude = np.abs(x.astype(np.float64)) @ np.abs(y.astype(np.float64))
    achieved = 2 * magnitude / abs(exact)
    assert cond / 1e4 < achieved < cond * 1e4


@pytest.mark.parametrize("phi", [0.5, 4, 16])
def test_exponent_span_grows_with_phi(phi):
    x = cases.exponent_span(np.random.default_rng(1), 4096, phi)
    span = np.ptp(np.log2(np.abs(x[x != 0])))
    assert span > 5 * phi


def test_range_edge_generators_hit_their_ranges():
    rng = np.random.default_rng(2)
    big, small = cases.near_max(rng, (4, 8), 8)
    assert np.all(np.abs(big) > 3.389e38) and np.all(small <= 1 / 16)
    tiny = cases.near_min_normal(rng, 1000)
    assert np.all(np.abs(tiny) < 2.0 ** -117) and np.any(np.abs(tiny) < 2.0 ** -126)
    sub = cases.subnormal(rng, 100)
    assert np.all(np.abs(sub) < 2.0 ** -126)
    assert np.isnan(cases.with_nonfinite(rng, np.ones(5, np.float32))).sum() == 1


def test_fft_signals():
    assert np.array_equal(cases.impulse(4, 2), np.complex64([0, 0, 1, 0]))
    tone = cases.tone(16, 3)
    assert np.argmax(np.abs(np.fft.fft(tone))) == 3
    assert math.isclose(np.abs(tone).max(), 1, rel_tol=1e-6)


def test_registry_rejects_unknown_level_op_and_name():
    with pytest.raises(ValueError, match=r"^registry: unknown level 'huge'"):
        cases.registry("huge")
    with pytest.raises(ValueError, match=r"^registry: unknown op 'conv'"):
        cases.registry("ci", "conv")
    with pytest.raises(ValueError,
                       match=r"^registry: unknown target 'float16'; expected one of 'float32', 'float64'"):
        cases.registry("ci", "gemm", "float16")
    with pytest.raises(ValueError, match=r"^unknown case 'nope'"):
        cases.get("nope")
    assert cases.get("normal_k16").params["k"] == 16


FP64 = cases.registry("ci", "gemm", "float64")


def test_fp64_cases_are_gemm_cases_of_the_float64_target_named_fp64():
    assert FP64 and all(c.name.startswith("fp64_") and c.op == "gemm" for c in FP64)
    named_fp64 = {c.name for c in ALL if c.name.startswith("fp64_")}
    assert {c.name for c in ALL if c.target == "float64"} == named_fp64
    assert not cases.registry("full", "fft", "float64")
    families = {"normal", "uniform", "span", "scaled_rows", "scaled_entries", "row_span", "cancel",
                "near_max", "huge_times_tiny", "near_min_normal", "tiny_times_tiny", "subnormal",
                "subnormal_results", "zeros", "nonfinite", "rectangular", "batched", "broadcast"}
    assert all(any(c.name.startswith(f"fp64_{f}_") for c in FP64) for f in families)
    assert {c.name for c in cases.registry("quick", target="float64")} < {c.name for c in FP64}


def _log2_spread(x, axis):
    e = np.frexp(np.where(x == 0, np.nan, x))[1].astype(float)
    return np.nanmax(e, axis=axis) - np.nanmin(e, axis=axis)


def test_exponent_spans_across_and_within_rows():
    rng = np.random.default_rng(4)
    across = cases.scaled_rows(rng, (64, 32), 300)
    within = cases.scaled_entries(rng, (64, 32), 300)
    row_exponents = np.frexp(np.abs(across).max(axis=1))[1]
    assert np.ptp(row_exponents) > 400 and _log2_spread(across, 1).max() < 20
    assert _log2_spread(within, 1).min() > 300
    columns = cases.scaled_rows(rng, (32, 64), 300, axis=-2)
    assert np.ptp(np.frexp(np.abs(columns).max(axis=0))[1]) > 400 and _log2_spread(columns, 0).max() < 20
    assert across.dtype == within.dtype == np.float64


def test_float64_range_edge_generators_hit_their_ranges():
    rng = np.random.default_rng(5)
    big, small = cases.near_max(rng, (4, 8), 8, np.float64)
    assert big.dtype == np.float64 and np.all(np.abs(big) > 2.0 ** 1023) and np.all(small <= 1 / 16)
    assert np.isfinite(exact_matmul(big, small)).all()
    tiny = cases.near_min_normal(rng, 1000, np.float64)
    assert np.all(np.abs(tiny) < 2.0 ** -1014) and np.any(np.abs(tiny) < 2.0 ** -1022)
    sub = cases.subnormal(rng, 100, np.float64)
    assert np.all((np.abs(sub) < 2.0 ** -1022) & (sub == np.ldexp(np.rint(np.ldexp(sub, 1074)), -1074)))
    a, b = cases.get("fp64_subnormal_results_k16").inputs()
    c = exact_matmul(a, b)
    assert np.all(np.abs(c) < 2.0 ** -1022) and np.count_nonzero(c) > c.size // 2


@pytest.mark.parametrize("cond", [1e8, 1e20, 1e40])
def test_float64_ill_conditioned_dot_has_the_requested_condition_number(cond):
    x, y = cases.ill_conditioned_dot(np.random.default_rng(0), 64, cond, np.float64)
    assert x.dtype == y.dtype == np.float64
    exact = sum(Fraction(float(p)) * Fraction(float(q)) for p, q in zip(x, y))
    magnitude = sum(abs(Fraction(float(p)) * Fraction(float(q))) for p, q in zip(x, y))
    achieved = float(2 * magnitude / abs(exact))
    assert cond / 1e4 < achieved < cond * 1e4


def _fraction_product(a, b, i, j):
    """The float64 nearest to the exact ``a[i] @ b[:, j]`` (one rounding, subnormals included;
    ±inf beyond float64's range)."""
    exact = sum(Fraction(float(p)) * Fraction(float(q)) for p, q in zip(a[i], b[:, j]))
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


@pytest.mark.parametrize("case", FP64, ids=lambda c: c.name)
def test_exact_matmul_is_the_correctly_rounded_product_on_fp64_cases(case):
    a, b = case.inputs(seed=0)
    with np.errstate(all="ignore"):
        c = exact_matmul(a, b)
    a2, b2 = a.reshape((-1,) + a.shape[-2:])[0], b.reshape((-1,) + b.shape[-2:])[0]
    c2 = c.reshape((-1,) + c.shape[-2:])[0]
    finite_a, finite_b = np.isfinite(a2).all(axis=1), np.isfinite(b2).all(axis=0)
    side = 8 if case.params["k"] <= 256 else 2
    rows = [i for i in range(min(side, a2.shape[0])) if finite_a[i]]
    cols = [j for j in range(min(side, b2.shape[1])) if finite_b[j]]
    assert rows and cols
    for i in rows:
        for j in cols:
            assert c2[i, j] == _fraction_product(a2, b2, i, j), (i, j)
