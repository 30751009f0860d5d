"""accuracy.gemm_envelope, the tracked products' scheme bound: never below gemm_bound, equal to it
(up to float64 rounding) where no element is in the top binade."""
import numpy as np
import pytest

from splitprec.accuracy import gemm_bound
from splitprec.accuracy.bounds import schemes
from splitprec.accuracy.gemm_envelope import gemm_envelope

RNG = np.random.default_rng(3)


def _operands(span, top):
    a = (RNG.standard_normal((2, 5, 9)) * 2.0 ** RNG.integers(-span, span + 1, (2, 5, 9))).astype(np.float32)
    b = (RNG.standard_normal((9, 4)) * 2.0 ** RNG.integers(-20, 21, (9, 4))).astype(np.float32)
    if top:
        a[0, 0, 0] = np.float32(3e38)
    return a, b


@pytest.mark.parametrize("scheme", schemes())
@pytest.mark.parametrize("engine", ["cpu", "gpu"])
@pytest.mark.parametrize("kind", ["rigorous", "probabilistic"])
@pytest.mark.parametrize("span, top", [(0, False), (60, False), (120, True)])
def test_gemm_envelope_is_at_least_gemm_bound(scheme, engine, kind, span, top):
    a, b = _operands(span, top)
    envelope, bound = gemm_envelope(a, b, scheme, engine, kind=kind), gemm_bound(a, b, scheme, engine, kind=kind)
    assert (envelope >= bound).all()
    if not top:
        assert (envelope <= bound * (1 + 2.0 ** -30)).all()


def test_gemm_envelope_is_infinite_on_rows_and_columns_with_nan_or_inf():
    a, b = _operands(0, False)
    a[0, 1, 2], b[3, 2] = np.nan, np.inf
    envelope = gemm_envelope(a, b, "bf16x9")
    assert np.isinf(envelope[0, 1]).all() and np.isinf(envelope[:, :, 2]).all()
    assert np.isfinite(envelope[1, :, :2]).all()



def _tracked_operands(rng, span):
    a = (rng.standard_normal((3, 40, 70)) * 2.0 ** rng.integers(-span, span + 1, (3, 40, 70))).astype(np.float32)
    b = (rng.standard_normal((70, 30)) * 2.0 ** rng.integers(-span, span + 1, (70, 30))).astype(np.float32)
    e_a = np.abs(a).astype(np.float64) * 2.0 ** -20 * rng.uniform(0, 1, a.shape)
    e_b = np.abs(b).astype(np.float64) * 2.0 ** -22 * rng.uniform(0, 1, b.shape)
    return a, b, e_a, e_b


@pytest.mark.parametrize("scheme", ["bf16x9", "tf32x3", "fp16x3", "bf16"])
@pytest.mark.parametrize("span", [0, 30, 60])
@pytest.mark.parametrize("inexact", [(True, True), (True, False), (False, True), (False, False)])
def test_envelope_with_errors_is_gemm_bound_plus_the_propagated_bound(scheme, span, inexact):
    """With errors, the envelope covers gemm_bound plus E_A (|B| + E_B) + |A| E_B (float64 products)
    and exceeds that sum by float64 rounding only."""
    a, b, e_a, e_b = _tracked_operands(np.random.default_rng(span), span)
    e_a, e_b = e_a if inexact[0] else np.zeros_like(e_a), e_b if inexact[1] else np.zeros_like(e_b)
    ma, mb = np.abs(a).astype(np.float64), np.abs(b).astype(np.float64)
    expected = gemm_bound(a, b, scheme) + np.matmul(e_a, mb + e_b) + np.matmul(ma, e_b)
    envelope = gemm_envelope(a, b, scheme, errors=(e_a, e_b))
    assert (envelope >= expected * (1 - 2.0 ** -40)).all() and (envelope <= expected * (1 + 2.0 ** -30)).all()


def test_unknown_errors_give_unknown_bounds():
    a, b, e_a, e_b = _tracked_operands(np.random.default_rng(2), 0)
    e_a[1, 2, 3] = np.nan
    bound = gemm_envelope(a, b, "bf16x9", errors=(e_a, e_b))
    assert np.isnan(bound[1, 2]).all() and np.isfinite(np.delete(bound, 2, axis=1)).all()


@pytest.mark.parametrize("scheme", ["bf16x9", "fp16x3", "tf32x3"])
@pytest.mark.parametrize("span, top", [(0, False), (60, False), (120, True)])
def test_envelope_skips_the_magnitude_product_only_where_nothing_can_overflow(scheme, span, top, monkeypatch):
    """Where its estimate (the bound, the peaks and the pow2 rule's ceiling on |A||B| / (s_A s_B))
    rules overflow out, the envelope skips |A||B|; the result is the one that computes it always."""
    from splitprec.accuracy import gemm_envelope as module
    a, b = _operands(span, top)
    skipped = module.gemm_envelope(a, b, scheme, errors=(np.abs(a) * 2.0 ** -20, np.zeros(b.shape)))
    monkeypatch.setattr(module, "_peak", lambda *args: np.inf)      # the estimate never rules out
    always = module.gemm_envelope(a, b, scheme, errors=(np.abs(a) * 2.0 ** -20, np.zeros(b.shape)))
    monkeypatch.undo()
    np.testing.assert_array_equal(skipped, always)
