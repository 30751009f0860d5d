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
