"""Scheme classes: each label says what the bound guarantees, and the bound keeps it within the span."""
import math

import numpy as np
import pytest

import splitprec
from splitprec.accuracy import check, exact_matmul, gemm_bound
from splitprec.accuracy.bounds import U32, gamma
from splitprec.accuracy.classes import class_label, class_span

U64 = 2.0 ** -53
SPAN_LIMITED = [name for name in splitprec.dtypes() if class_span(name) not in (None, math.inf)]


def _spanning(rng, k, span, dtype, zeros):
    """Rows of A and columns of B whose entries lie within ``span`` binades of their largest, placed
    so that small entries of A meet large ones of B (with ``zeros``: alone in B's column) and the
    other way round."""
    low = 2.0 ** -span
    a, b = np.ones((4, k)), np.ones((k, 4))
    a[0, 0], a[1, : k // 2], a[3, 1:] = low, low, low
    b[1:, 0], b[: k // 2, 1], b[0, 3] = 0 if zeros else low, low, low
    a[2] = 2.0 ** -rng.uniform(0, span, k)
    b[:, 2] = 2.0 ** -rng.uniform(0, span, k)
    a *= rng.choice([-1.0, 1.0], a.shape)
    return a.astype(dtype), b.astype(dtype)


def _worst_over_native(scheme, span):
    """Largest ``gemm_bound / ((gamma_k + 16 u) |A||B|)`` over k = 1 .. 4096 on :func:`_spanning`
    data (with zeros for the fp64 schemes), ``u`` the target's unit roundoff."""
    dtype = np.dtype(splitprec.dtype(scheme).target)
    u = U64 if dtype == np.float64 else U32
    rng, worst = np.random.default_rng(0), 0.0
    for k in (1, 2, 4, 14, 64, 1024, 4096):
        a, b = _spanning(rng, k, span, dtype, zeros=dtype == np.float64)
        magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
        worst = max(worst, float(np.max(gemm_bound(a, b, scheme) / ((gamma(k, u) * 1.01 + 16 * u) * magnitude))))
    return worst


@pytest.mark.parametrize("scheme", SPAN_LIMITED)
def test_bound_is_of_the_class_within_the_schemes_span_and_not_far_beyond(scheme):
    span = class_span(scheme)
    assert _worst_over_native(scheme, span) <= 1
    assert _worst_over_native(scheme, span + 8) > 1


def test_class_label_names_the_span_or_the_split_of_every_scheme():
    labels = {name: class_label(name) for name in splitprec.dtypes()}
    assert [name for name, label in labels.items() if label == "fp64"] == ["ozaki2_int8_adaptive"]
    assert {name for name, label in labels.items() if label == "fp32"} == {
        name for name in splitprec.dtypes("float32") if splitprec.dtype(name).fp32_class}
    assert labels["ozaki2_int8x14"] == "fp64 within 2 binades" and labels["ozaki2_int8x18"] == "fp64 within 17 binades"
    assert labels["fp16x3"] == "fp32 within 25 binades"
    assert labels["ozaki2_int8x12"] == labels["ozaki2_int8x13"] == "< fp64"
    assert labels["bf16x3"] == "< fp32 (16-bit split)" and labels["bf16"] == "< fp32 (8-bit split)"


def test_ozaki2_int8x14_is_not_labelled_fp64_on_wide_spans_where_its_error_is_order_one_regression():
    rng = np.random.default_rng(0)
    a, b = np.exp(16 * rng.standard_normal((16, 64))), np.exp(16 * rng.standard_normal((64, 16)))
    fixed, adaptive = check(a, b, ["ozaki2_int8x14", "ozaki2_int8_adaptive"]).rows
    exact = exact_matmul(a, b)
    assert np.max(np.abs(fixed.output - exact) / exact) > 0.5 and class_label("ozaki2_int8x14") != "fp64"
    assert adaptive.ratio <= 1 and class_label("ozaki2_int8_adaptive") == "fp64"     # DGEMM's worst-case bound
