"""Split and merge: the representation bound, exactness, range ends and non-finite values."""
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import splitprec as sp
from splitprec.split import _round_lean, _slice_max, merge, split, split_held_in
from splitprec.formats import FORMATS, is_representable, round_to

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


@given(x=arrays(np.float32, 50, elements=st.floats(width=32, min_value=2.0 ** -149, max_value=FP32_MAX)),
       sign=st.sampled_from([1, -1]), name=st.sampled_from(["bf16x9", "bf16x6"]))
@example(x=np.float32([2.0 ** -110, 1.0] + [0.0] * 48), sign=1, name="bf16x9")
def test_bf16x9_split_is_exact_within_its_span_of_the_slice_peak(x, sign, name):
    """Exact wherever the scaled value is at least 2**full_precision_floor (2**-110): every value
    within exact_span binades of the slice's largest, whatever the slice's place in the range."""
    x = sign * x
    parts = split(x, name)
    scaled = np.abs(x.astype(np.float64)) * np.exp2(-parts.exponent.astype(np.float64))
    kept = scaled >= 2.0 ** sp.dtype(name).full_precision_floor
    assert np.array_equal(merge(parts, name)[kept], x[kept])


@pytest.mark.parametrize("name", ["bf16x9", "tf32x3", "bf16x6"])
def test_split_of_tiny_values_is_exact_after_pow2_scaling_regression(name):
    """Values near and below float32's smallest normal keep every bit (the parts of a row of them
    were subnormal before every float32 scheme scaled its slices)."""
    x = np.float32([[1.2345678e-37, -3.3e-38, 1.1754944e-38, 1e-40, 1e-45]])
    d = sp.dtype(name)
    merged = merge(split(x, name, axis=-1), name).astype(np.float64)
    assert (np.abs(merged - x) <= d.split_error * np.abs(x.astype(np.float64))).all()


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_nonfinite_values_survive_the_split(name):
    x = np.float32([np.nan, np.inf, -np.inf, 1.5, -0.0])
    parts = split(x, name, axis=-1)
    merged = merge(parts, name)
    assert np.isnan(merged[0]) and merged[1] == np.inf and merged[2] == -np.inf
    assert merged[3] == np.float32(1.5) and merged[4] == 0
    assert all(np.array_equal(p[:3], [0, 0, 0]) for p in parts.terms[1:])


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_pow2_scaling_is_per_slice_along_the_axis(name):
    d = sp.dtype(name)
    a = np.float32([[1e-30, 2e-30, 0], [1e30, -3e30, 1], [FP32_MAX, 1, 0]])
    parts = split(a, name, axis=-1)
    assert parts.exponent.shape == (3, 1)
    top = d.scale_exponent(3)
    scaled_peak = np.abs(parts.terms[0]).max(axis=-1)
    assert ((scaled_peak >= 2.0 ** top) & (scaled_peak <= 2.0 ** (top + 1))).all()
    error = np.abs(merge(parts, name).astype(np.float64) - a)
    assert (error[:2, :2] <= d.split_error * np.abs(a[:2, :2])).all()   # no exponent-span loss


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


@given(bits=arrays(np.uint32, st.tuples(st.integers(1, 6), st.integers(1, 40))), name=st.sampled_from(ALL_DTYPES),
       axis=st.sampled_from([None, -1, -2]))
@example(bits=(np.float32([[1e-45, -3e-39, 2.0 ** -126, 3.4e38, -1.0, 0.0]]).view(np.uint32)), name="fp16x3", axis=-1)
@example(bits=(np.float32([[1e-45, 2.0 ** -149 * 3, 1e-38, 1.5e-39]]).view(np.uint32)), name="bf16x9", axis=None)
@settings(max_examples=60, deadline=None)
def test_split_residuals_in_float32_equal_residuals_in_float64(bits, name, axis):
    """numpy holds the residuals in float32, cupy as float32 values in float64: the same parts and
    exponents bit for bit, on any float32 bit pattern (subnormals, NaN payloads, inf included)."""
    x = bits.view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        held32, held64 = (split_held_in(x, sp.dtype(name), axis, dtype) for dtype in (np.float32, np.float64))
    for p, q in zip(held32.terms, held64.terms):
        assert p.dtype == q.dtype == np.float32
        assert np.array_equal(p.view(np.uint32), q.view(np.uint32))
    assert (held32.exponent is None and held64.exponent is None) or np.array_equal(held32.exponent, held64.exponent)


@pytest.mark.parametrize("length", [2, 3, 31, 63, 64, 200])
def test_slice_peaks_along_short_rows_equal_numpy_max(length):
    rng = np.random.default_rng(length)
    x = np.abs(rng.standard_normal((5, 3, length))).astype(np.float32) * np.float32(2.0 ** -140)
    assert np.array_equal(_slice_max(x, -1, np), x.max(axis=-1, keepdims=True))


@given(bits=arrays(np.uint32, st.tuples(st.integers(1, 5), st.integers(1, 9), st.integers(1, 40))),
       name=st.sampled_from(ALL_DTYPES), axis=st.sampled_from([None, -1, -2]), block=st.integers(1, 64))
@example(bits=(np.float32([[[1e-45, -3e-39, 2.0 ** -126, 3.4e38, -1.0, 0.0, np.inf, np.nan]]]).view(np.uint32)),
         name="fp16x3", axis=-1, block=1)
@settings(max_examples=60, deadline=None)
def test_split_in_blocks_gives_the_parts_of_the_whole_array(bits, name, axis, block):
    """numpy's split runs its elementwise steps in blocks (along the leading axis, or along the slice
    axis of a single slice): any block size gives the parts of one pass over the whole array, bit for
    bit, on any float32 bit pattern, for every layout of slices."""
    from splitprec import split as split_module
    x = bits.view(np.float32)
    for shape in (x.shape, (1, x.size), (x.size, 1)):
        y = x.reshape(shape)
        with np.errstate(invalid="ignore", over="ignore"):
            saved, split_module.SPLIT_BLOCK = split_module.SPLIT_BLOCK, block
            try:
                blocked = split(y, name, axis=axis)
            finally:
                split_module.SPLIT_BLOCK = saved
            whole = split(y, name, axis=axis)
        for p, q in zip(blocked.terms, whole.terms):
            assert np.array_equal(p.view(np.uint32), q.view(np.uint32))
        assert (blocked.exponent is None and whole.exponent is None) or np.array_equal(blocked.exponent, whole.exponent)


@given(significands=arrays(np.int32, st.tuples(st.integers(1, 4), st.integers(1, 50)),
                           elements=st.integers(-(2 ** 24) + 1, 2 ** 24 - 1)),
       exponents=arrays(np.int32, st.tuples(st.integers(1, 4), st.integers(1, 50)), elements=st.integers(-172, 103)),
       span=st.sampled_from([0, 4, 30, 300]), name=st.sampled_from(ALL_DTYPES),
       axis=st.sampled_from([None, -1, -2]), block=st.integers(1, 64))
@settings(max_examples=80, deadline=None)
def test_lean_split_of_finite_values_equals_the_general_split(significands, exponents, span, name, axis, block):
    """Finite inputs that need no saturation take the lean split (bit patterns, residuals kept
    scaled): the parts of the general one bit for bit, at any block size, with values over 0, a
    few, tens and all binades of float32 (subnormals and signed zeros included)."""
    from splitprec import split as split_module
    shape = tuple(min(a, b) for a, b in zip(significands.shape, exponents.shape))
    m, e = significands[:shape[0], :shape[1]], exponents[:shape[0], :shape[1]]
    x = np.ldexp(m.astype(np.float64), np.clip(e % (span + 1) - span // 2, -172, 103)).astype(np.float32)
    x[m % 7 == 3] *= -0.0
    saved, split_module.SPLIT_BLOCK = split_module.SPLIT_BLOCK, block
    try:
        lean = split(x, name, axis=axis)
    finally:
        split_module.SPLIT_BLOCK = saved
    general = split_held_in(x, sp.dtype(name), axis, np.float64)
    for p, q in zip(lean.terms, general.terms):
        assert np.array_equal(p.view(np.uint32), q.view(np.uint32))


@pytest.mark.parametrize("name", ["fp16", "bf16", "tf32"])
def test_lean_rounding_equals_round_to_on_ties_and_the_subnormal_edge(name):
    """Every float32 pattern of a dense sample of the format's range, its ties (half a quantum
    above a representable value, both parities) and the patterns around its smallest normal:
    ``_round_lean`` gives ``round_to``'s bits, signs of zeros included."""
    fmt = FORMATS[name]
    top = int(np.float32(fmt.max).view(np.uint32))
    drop = 24 - fmt.p
    ties = (np.arange(0, top >> drop, 97, dtype=np.uint32) << np.uint32(drop)) | np.uint32(1 << (drop - 1))
    tiny = int(np.float32(2.0 ** fmt.emin).view(np.uint32))
    edge = np.arange(max(tiny - 2 ** 16, 0), tiny + 2 ** 16, dtype=np.uint32)
    subnormal_ties = (np.arange(0, 2 ** 11, dtype=np.float64) + 0.5) * fmt.smallest_subnormal
    bits = np.concatenate([np.arange(0, top, 4099, dtype=np.uint32), ties, ties + np.uint32(1), ties - np.uint32(1),
                           edge, subnormal_ties.astype(np.float32).view(np.uint32)])
    bits = bits[bits <= top]
    x = np.concatenate([bits, bits | np.uint32(0x80000000)]).view(np.float32)
    out = np.empty_like(x)
    _round_lean(x, fmt, out)
    assert np.array_equal(out.view(np.uint32), round_to(x, fmt).view(np.uint32))
