"""Split and merge: the representation bound, exactness, range ends and non-finite values."""
import numpy as np
import pytest
from hypothesis import example, given, strategies as st
from hypothesis.extra.numpy import arrays

import splitprec as sp
from splitprec.split import merge, split
from splitprec.formats import is_representable

ALL_DTYPES = sp.dtypes("float32")
FP32_MAX = float(np.finfo(np.float32).max)


def representation_error_bound(d, x, exponent):
    """Documented bound: max(split_error*|x|, 2**e * underflow_error); toward zero above the top."""
    x = np.abs(x.astype(np.float64))
    scale = 1.0 if exponent is None else np.exp2(exponent.astype(np.float64))
    relative = np.where(x / scale > d.format.max, d.split_error_toward_zero, d.split_error)
    return np.maximum(relative * x, scale * d.underflow_error)


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@given(x=arrays(np.float32, st.integers(1, 40), elements=finite32), name=st.sampled_from(ALL_DTYPES))
@example(x=np.float32([FP32_MAX, -FP32_MAX, 3.3895e38]), name="bf16x3")
@example(x=np.float32([FP32_MAX, 1.0]), name="fp16")
@example(x=np.float32([1e-40, 2.0 ** -120 * 1.2345, 1e-45]), name="bf16x9")
@example(x=np.float32([1 + 2.0 ** -11 + 2.0 ** -23]), name="tf32x3")
def test_merge_split_within_the_representation_bound(x, name):
    d = sp.dtype(name)
    parts = split(x, d)
    error = np.abs(merge(parts, d).astype(np.float64) - x)
    assert (error <= representation_error_bound(d, x, parts.exponent)).all()


@given(x=arrays(np.float32, st.integers(1, 40), elements=finite32), name=st.sampled_from(ALL_DTYPES))
@example(x=np.float32([FP32_MAX, -FP32_MAX]), name="bf16")
@example(x=np.float32([FP32_MAX, 65504.0]), name="fp16x3")
def test_split_of_finite_values_is_finite_and_in_the_base_format(x, name):
    d = sp.dtype(name)
    parts = split(x, d)
    for part in parts.terms:
        assert part.dtype == np.float32 and np.isfinite(part).all()
        assert is_representable(part, d.format).all()
    assert np.isfinite(merge(parts, d)).all()


@given(x=arrays(np.float32, 50, elements=st.floats(width=32, min_value=2.0 ** -110,
                                                      max_value=FP32_MAX)), sign=st.sampled_from([1, -1]))
def test_bf16x9_split_is_exact_down_to_2_pow_minus_110(x, sign):
    x = sign * x
    for name in ("bf16x9", "bf16x6"):
        assert np.array_equal(merge(split(x, name), name), x)


def test_bf16x9_split_of_tiny_values_degrades_by_at_most_half_a_bf16_subnormal():
    x = np.float32([1.2345678e-37, -3.3e-38, 1.1754944e-38, 1e-40])
    error = np.abs(merge(split(x, "bf16x9"), "bf16x9").astype(np.float64) - x)
    assert error.max() > 0                                   # it does lose bits down there ...
    assert (error <= 2.0 ** -134).all()                      # ... but no more than documented


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_nonfinite_values_survive_the_split(name):
    x = np.float32([np.nan, np.inf, -np.inf, 1.5, -0.0])
    parts = split(x, name, axis=-1)
    merged = merge(parts, name)
    assert np.isnan(merged[0]) and merged[1] == np.inf and merged[2] == -np.inf
    assert merged[3] == np.float32(1.5) and merged[4] == 0
    assert all(np.array_equal(p[:3], [0, 0, 0]) for p in parts.terms[1:])


def test_pow2_scaling_is_per_slice_along_the_axis():
    a = np.float32([[1e-30, 2e-30], [1e30, -3e30]])
    parts = split(a, "fp16x3", axis=-1)
    assert parts.exponent.shape == (2, 1)
    scaled_peak = np.abs(parts.terms[0]).max(axis=-1)
    assert ((scaled_peak >= 2.0 ** 14) & (scaled_peak <= 2.0 ** 15)).all()
    error = np.abs(merge(parts, "fp16x3").astype(np.float64) - a)
    assert (error <= sp.dtype("fp16x3").split_error * np.abs(a)).all()   # no exponent-span loss


def test_split_rejects_float64():
    with pytest.raises(TypeError, match=r"^split: x has dtype float64; tf32x3 splits float32"):
        split(np.zeros(3), "tf32x3")


@pytest.mark.gpu
@pytest.mark.parametrize("name", ALL_DTYPES)
def test_split_on_cupy_equals_numpy_subnormals_included_regression(name):
    import cupy                                   # cupy flushes float32 subnormals in its kernels
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((64, 33)) * np.exp2(rng.integers(-149, 128, (64, 33)))).astype(np.float32)
    x[0, :4] = [1e-45, -3e-39, np.nan, -np.inf]
    cpu, gpu = split(x, name, axis=-1), split(cupy.asarray(x), name, axis=-1)
    for p, q in zip(cpu.terms, gpu.terms):
        assert np.array_equal(p.view(np.uint32), cupy.asnumpy(q).view(np.uint32))
    assert np.array_equal(merge(cpu, name), cupy.asnumpy(merge(gpu, name)), equal_nan=True)
