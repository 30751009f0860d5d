"""The case registry and generators: deterministic, well-typed, and what their names promise."""
import math

import numpy as np
import pytest

from accuracy import cases, exact_matmul

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
        assert x.dtype == (np.float32 if case.op == "gemm" else np.complex64)
    if case.op == "gemm":
        a, b = first
        assert a.shape[-1] == b.shape[-2] == case.params["k"]
    else:
        assert first[0].shape == (case.params["n"],)


def test_k_runs_from_1_to_65536():
    ks = {c.params["k"] for c in ALL if c.op == "gemm"}
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
    with pytest.raises(ValueError, match=r"^unknown case 'nope'"):
        cases.get("nope")
    assert cases.get("normal_k16").params["k"] == 16
