"""sp.matmul: numpy's matmul semantics, non-finite values, errors, and a first accuracy check."""
import json
import pathlib
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, strategies as st

import splitprec as sp
from splitprec.engines.reference import tuning as reference_tuning

ALL_DTYPES = sp.dtypes("float32")
FP32_CLASS = [n for n in ALL_DTYPES if sp.dtype(n).fp32_class]
rng = np.random.default_rng(2024)
ROOT = pathlib.Path(__file__).resolve().parents[1]


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("shape_a, shape_b", [
    ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
    ((2, 1, 3, 4), (5, 4, 2)), ((0, 4), (4, 5)), ((3, 0), (0, 5)), ((3, 4), (4, 0)), ((0, 3, 4), (4, 2))])
@pytest.mark.parametrize("name", ALL_DTYPES)
def test_matmul_shapes_follow_numpy(shape_a, shape_b, name):
    a, b = randn(*shape_a), randn(*shape_b)
    c = sp.matmul(a, b, dtype=name)
    expected = np.matmul(a, b)
    assert type(c) is type(expected) and c.dtype == np.float32 and c.shape == expected.shape
    if 0 in shape_a[-1:] and c.size:
        assert not c.any()


@pytest.mark.parametrize("name", ["bf16x9", "fp16x3", "tf32x3"])
def test_matmul_ignores_strides_and_layout(name):
    base_a, base_b = randn(40, 60), randn(70, 50)
    a = base_a[::-2, 3:50]                  # negative stride, non-contiguous
    b = np.asfortranarray(base_b[10:57, ::3])
    expected = sp.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b), dtype=name)
    assert np.array_equal(sp.matmul(a, b, dtype=name), expected)


def test_bf16x9_equals_its_products_summed_exactly_when_fp32_can_hold_them():
    a = rng.integers(-8, 8, (16, 32)).astype(np.float32)
    b = rng.integers(-8, 8, (32, 8)).astype(np.float32)
    assert np.array_equal(sp.matmul(a, b, dtype="bf16x9"), a @ b)


def test_matmul_writes_into_out_and_returns_it():
    a, b = randn(5, 6), randn(6, 7)
    out = np.full((5, 7), np.nan, np.float32)
    assert sp.matmul(a, b, out=out, dtype="bf16x6") is out
    assert np.array_equal(out, sp.matmul(a, b, dtype="bf16x6"))


def test_precision_fp32_picks_the_fp32_class_scheme_measured_fastest_on_the_cpu():
    """The CPU engine's pick (tuning.json) is fp32 class and, at every matmul size of its source
    measurement, within 5% of the fastest fp32-class scheme there; the default runs it."""
    name = reference_tuning.TUNING["precision_fp32"]["scheme"]
    assert sp.dtype(name).fp32_class and reference_tuning.class_scheme("fp32") == sp.dtype(name)
    source = json.loads((ROOT / reference_tuning.TUNING["precision_fp32"]["source"]).read_text())
    sizes = {}
    for row in source["results"]:
        if row["op"] == "matmul" and row["name"] in sp.dtypes("float32") and sp.dtype(row["name"]).fp32_class:
            sizes.setdefault(row["size"], {})[row["name"]] = row["seconds"]
    sizes = {size: times for size, times in sizes.items() if name in times}
    assert len(sizes) >= 3 and all(len(times) >= 3 for times in sizes.values()), sizes
    for size, times in sizes.items():
        assert times[name] <= 1.05 * min(times.values()), (size, times)
    a, b = randn(8, 9), randn(9, 10)
    assert np.array_equal(sp.matmul(a, b, precision="fp32"), sp.matmul(a, b, dtype=name))
    assert np.array_equal(sp.matmul(a, b), sp.matmul(a, b, dtype=name))
    assert reference_tuning.class_scheme("fp64") == sp.dtype("ozaki2_int8_adaptive")


def test_float16_operands_are_widened_exactly():
    a, b = randn(4, 5).astype(np.float16), randn(5, 3)
    assert np.array_equal(sp.matmul(a, b, dtype="bf16x9"), sp.matmul(a.astype(np.float32), b, dtype="bf16x9"))


specials = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 1e-40])


@given(data=st.data(), name=st.sampled_from(ALL_DTYPES))
def test_nonfinite_results_exactly_where_the_float64_product_has_them(data, name):
    m, k, n = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 6)), data.draw(st.integers(1, 5))
    local = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    a = local.standard_normal((m, k)).astype(np.float32)
    b = local.standard_normal((k, n)).astype(np.float32)
    for array in (a, b):
        count = data.draw(st.integers(0, 4))
        for _ in range(count):
            idx = tuple(data.draw(st.integers(0, s - 1)) for s in array.shape)
            array[idx] = data.draw(specials)
    reference = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    c = sp.matmul(a, b, dtype=name)
    assert np.array_equal(np.isnan(c), np.isnan(reference))
    assert np.array_equal(np.isposinf(c), np.isposinf(reference))
    assert np.array_equal(np.isneginf(c), np.isneginf(reference))


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_finite_results_beyond_float32_overflow_to_signed_inf(name):
    a = np.float32([[1e30, 1.0], [-1e30, 1.0], [1e-30, 1.0]])
    b = np.float32([[1e30], [2.0]])
    assert sp.matmul(a, b, dtype=name)[:, 0].tolist()[:2] == [np.inf, -np.inf]
    assert np.isfinite(sp.matmul(a, b, dtype=name)[2, 0])


def test_overflow_recompute_handles_batches_regression():
    a = np.float32([[[1e30, 1.0]], [[-1e30, -1e30]]])
    b = np.float32([[1e30, 1.0], [2.0, 1.0]])
    c = sp.matmul(a, b, dtype="bf16x9")
    assert c[0, 0].tolist() == [np.inf, np.float32(1e30)] and c[1, 0, 0] == -np.inf


def test_inf_times_zero_is_nan():
    a = np.float32([[np.inf, 1.0]])
    b = np.float32([[0.0], [1.0]])
    assert np.isnan(sp.matmul(a, b, dtype="bf16x9")[0, 0])


def _read_only(shape):
    out = np.empty(shape, np.float32)
    out.flags.writeable = False
    return out


@pytest.mark.parametrize("call, error, message", [
    (lambda: sp.matmul(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32)), ValueError,
     r"^matmul: inner dimensions differ: a has shape \(2, 3\), b has shape \(4, 2\)"),
    (lambda: sp.matmul(np.ones((2, 2, 3), np.float32), np.ones((3, 3, 2), np.float32)), ValueError,
     r"^matmul: batch dimensions do not broadcast"),
    (lambda: sp.matmul(np.ones((2, 3)), np.ones((3, 2), np.float32)), TypeError,
     r"^matmul: a has dtype float64 and b has dtype float32; the operands' dtype picks the target"),
    (lambda: sp.matmul(np.ones((2, 3)), np.ones((3, 2), np.float32), precision="fp32"), TypeError,
     r"^matmul: a has dtype float64; scheme 'tf32x3' accepts float32, float16 or bfloat16 data"),
    (lambda: sp.matmul(np.ones((2, 3), np.float32), np.full((3, 2), 2 ** 24 + 1, np.int32), dtype="tf32x3"),
     TypeError, r"^matmul: b holds a value that float32 cannot hold exactly \(16777217\)"),
    (lambda: sp.matmul(np.ones((2, 3), np.complex64), np.ones((3, 2), np.float32)), TypeError,
     r"^matmul: a has dtype complex64"),
    (lambda: sp.matmul(np.float32(2.0), np.ones((3, 2), np.float32)), ValueError,
     r"^matmul: a is a scalar \(ndim 0\)"),
    (lambda: sp.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), dtype="tf32x4"), ValueError,
     r"^unknown split dtype 'tf32x4'; expected one of"),
    (lambda: sp.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), dtype="bf16x9",
                       precision="fp32"), ValueError, r"^matmul: give dtype or precision, not both"),
    (lambda: sp.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), precision="fp16"),
     ValueError, r"^unknown precision 'fp16'"),
    (lambda: sp.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32),
                       out=np.empty((2, 3), np.float32)), ValueError, r"^matmul: out has shape \(2, 3\); expected the result's shape \(2, 2\)"),
    (lambda: sp.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), out=np.empty((2, 2), np.int32)),
     TypeError, r"^matmul: out must be a ndarray of dtype float32 \(or one that holds it exactly\); got ndarray of dtype int32"),
    (lambda: sp.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), out=_read_only((2, 2))),
     ValueError, r"^matmul: out is read-only; expected a writable array"),
    (lambda: sp.matmul("ab", np.ones((3, 2), np.float32)), TypeError,
     r"^matmul: a of type str is not accepted; expected an array \(numpy, cupy, or any object with "
     r"__dlpack__ or __cuda_array_interface__"),
])
def test_matmul_rejects_bad_input_naming_the_argument(call, error, message):
    """Also the out= regressions: an int32 out raised ValueError (numpy: TypeError), and a
    read-only one numpy's message, which does not name out."""
    with pytest.raises(error, match=message):
        call()


def normwise_error(c, exact):
    return float(np.linalg.norm(c - exact) / np.linalg.norm(exact))


@pytest.mark.parametrize("k", [64, 1024, 8192])
@pytest.mark.parametrize("distribution", ["normal", "uniform"])
def test_fp32_class_schemes_are_as_accurate_as_float32_matmul(k, distribution):
    from splitprec.accuracy import exact_matmul
    local = np.random.default_rng(k)
    draw = local.standard_normal if distribution == "normal" else local.random
    a = draw((256, k)).astype(np.float32)
    b = draw((k, 256)).astype(np.float32)
    exact = exact_matmul(a, b)
    native = normwise_error(a @ b, exact)
    errors = {name: normwise_error(sp.matmul(a, b, dtype=name), exact) for name in ALL_DTYPES}
    for name in FP32_CLASS:
        assert errors[name] <= 2 * native, (name, errors[name], native)
    # One narrow term keeps 11 (tf32) or 8 (bf16) bits. Measured: on N(0,1) tf32 is 900-2100x and
    # bf16 7000-17000x float32's error; on U(0,1), whose rounding errors partly cancel in the
    # positive sums, 44-380x and 350-3200x. The test keeps a factor >= 2 of margin.
    tf32_factor, bf16_factor = (400, 3000) if distribution == "normal" else (20, 150)
    assert errors["tf32"] > tf32_factor * native and errors["bf16"] > bf16_factor * native, errors


@pytest.mark.parametrize("axes, shapes", [
    ([(0, 1), (1, 0), (0, 1)], ((3, 4, 5), (2, 4, 5))),
    ([(-1, 0), (0, -1), (1, 2)], ((4, 2, 3), (4, 2, 5))),
    ([(0, 1), 0, 0], ((3, 4, 5), (4,))),
    ([0, 0, ()], ((4,), (4,))),
])
def test_matmul_takes_numpys_axes_regression(axes, shapes):
    """``sp.matmul`` had no ``axes=``; with small integers (exact products and sums) every scheme's
    result is numpy's, through ``sp.matmul``, ``np.matmul`` of a SplitArray and ``out=``."""
    a, b = (rng.integers(-8, 9, s).astype(np.float32) for s in shapes)
    expected = np.matmul(a, b, axes=axes)
    got = sp.matmul(a, b, dtype="bf16x9", axes=axes)
    assert np.shape(got) == expected.shape and np.array_equal(got, expected)
    split = sp.asarray(a, dtype="tf32x3")
    assert np.array_equal(np.asarray(np.matmul(split, b, axes=axes)), expected)
    if expected.ndim:
        out = sp.zeros(expected.shape, dtype="tf32x3")
        assert sp.matmul(split, b, axes=axes, out=out) is out and np.array_equal(out.to_numpy(), expected)


@pytest.mark.parametrize("axes, shapes", [([(0, 1), (0, 1), (0, 1)], ((4, 3), (3, 2))), ([(1, 0), (0, 1), (1, 0)], ((3, 4), (3, 2))),
                                         ([0, 0, ()], ((4,), (4,))), (None, ((4, 3), (3, 2)))])
def test_numpy_operands_with_axes_written_into_a_splitarray_out_regression(axes, shapes):
    """``np.matmul(ndarray, ndarray, axes=..., out=SplitArray)`` raised "min() arg is an empty
    sequence" (the moved operands had no scheme to promote), and ``sp.matmul`` refused the
    SplitArray ``out`` that ``np.matmul`` took; both write it in its scheme."""
    a, b = (rng.integers(-8, 9, s).astype(np.float32) for s in shapes)
    kwargs = {} if axes is None else {"axes": axes}
    expected = np.matmul(a, b, **kwargs)
    for call in (np.matmul, sp.matmul):
        out = sp.zeros(expected.shape, dtype="tf32x3")
        assert call(a, b, out=out, **kwargs) is out and np.array_equal(out.to_numpy(), expected)
        assert out.dtype == "tf32x3"


def test_matmul_rejects_bad_axes_naming_them():
    a = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match=r"^matmul: axes=\[\(0, 1\), \(0, 1\)\] is not a list of an entry for a, b and the result"):
        sp.matmul(a, a, axes=[(0, 1), (0, 1)])
    with pytest.raises(ValueError, match=r"^matmul: axes entry \(0,\) for b names 1 axes; expected 2"):
        sp.matmul(a, a, axes=[(0, 1), 0, (0, 1)])
    with pytest.raises(np.exceptions.AxisError):
        sp.matmul(a, a, axes=[(0, 2), (0, 1), (0, 1)])


@pytest.mark.parametrize("axes, error, message", [
    ([(0, 2), (0, 1), (0, 1)], np.exceptions.AxisError, r"^matmul: axes entry for a: axis 2 is out of bounds"),
    ([(0, 1), (0, 1), (-3, 1)], np.exceptions.AxisError, r"^matmul: axes entry for the result: axis -3 is out of bounds"),
    ([(0, 1), (1, -1), (0, 1)], ValueError, r"^matmul: axes entry \(1, -1\) for b repeats an axis; expected distinct"),
])
def test_matmul_axes_out_of_range_or_repeated_name_matmul_regression(axes, error, message):
    """An axis out of range or repeated in ``axes=`` raised numpy's ``moveaxis`` errors
    (``destination: axis 5 ...``, ``repeated axis in `source` argument``), which name neither
    ``matmul`` nor the operand."""
    a = np.ones((2, 2), np.float32)
    with pytest.raises(error, match=message):
        sp.matmul(a, a, axes=axes)


@pytest.mark.parametrize("axes", [
    [(True, False), (0, 1), (0, 1)],        # a bool is no axis: (1, 0) transposed a silently
    [(0, 1), (0, 1), (np.True_, 0)],
    [(0.0, 1), (0, 1), (0, 1)], [None, (0, 1), (0, 1)], [(0, 1), (0, 1), "01"], "abc", 3,
])
def test_matmul_axes_of_the_wrong_kind_raise_typeerror_naming_axes_regression(axes):
    """Bools in ``axes=`` were taken as 0 and 1 (a square ``a`` came out transposed, as numpy's
    TypeError says it should not); floats, None and strs raised Python's errors naming neither
    ``matmul`` nor ``axes``, and a non-list ``axes`` a ValueError (numpy: TypeError)."""
    a = np.arange(9, dtype=np.float32).reshape(3, 3)
    with pytest.raises(TypeError):
        np.matmul(a, a, axes=axes)
    with pytest.raises(TypeError, match=r"^matmul: axes"):
        sp.matmul(a, a, axes=axes)
    with pytest.raises(TypeError, match=r"^matmul: axes"):
        np.matmul(sp.asarray(a, dtype="bf16x9"), a, axes=axes)


def test_matmul_axes_naming_too_few_core_axes_raise_axiserror_as_numpy_regression():
    """An entry naming the wrong number of core axes raised a plain ValueError where numpy raises
    ``AxisError`` (a ValueError and IndexError), which ``except AxisError`` code expects."""
    a = np.ones((2, 2), np.float32)
    with pytest.raises(np.exceptions.AxisError):
        np.matmul(a, a, axes=[(0, 1), (0, 1), (0,)])
    with pytest.raises(np.exceptions.AxisError, match=r"^matmul: axes entry \(0,\) for the result names 1 axes"):
        sp.matmul(a, a, axes=[(0, 1), (0, 1), (0,)])


@pytest.mark.parametrize("name", ["bf16x6", "tf32x3", "ozaki2_int8x14"])
def test_matmul_reads_ndarray_subclasses_as_plain_arrays_regression(name):
    """``numpy.matrix`` operands of float32 schemes failed inside the split (``matrix.max`` takes
    no ``keepdims``); a subclass is now read as its plain ndarray, with the same bits."""
    target = sp.dtype(name).dtype
    a, b = randn(3, 4).astype(target), randn(4, 2).astype(target)
    c = sp.matmul(np.asmatrix(a), np.asmatrix(b), dtype=name)
    assert type(c) is np.ndarray and np.array_equal(c, sp.matmul(a, b, dtype=name))
    assert np.array_equal(sp.matmul(np.asmatrix(a), b[:, 0], dtype=name), sp.matmul(a, b[:, 0], dtype=name))


@pytest.mark.parametrize("spelling", ["fp32", "FP64"])
def test_dtype_naming_a_precision_class_points_to_precision_regression(spelling):
    """``dtype="fp32"`` (a spelling ``default_scheme`` takes) was refused as an unknown scheme whose
    message listed the scheme names only; it now names ``dtype`` and ``precision=``."""
    a = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match=rf"^matmul: dtype='{spelling}' is a precision class, not a scheme; "
                                         rf"expected precision='{spelling.lower()}'"):
        sp.matmul(a, a, dtype=spelling)


@pytest.mark.parametrize("precision", ["FP32", "Fp64", "fp32"])
def test_precision_is_case_insensitive_as_scheme_names_regression(precision):
    """``precision="FP64"`` was refused while scheme names resolve in any case."""
    lower = precision.lower()
    x = np.eye(2, dtype=np.float32 if lower == "fp32" else np.float64)
    np.testing.assert_array_equal(sp.matmul(x, x, precision=precision), sp.matmul(x, x, precision=lower))
    with sp.default_scheme(precision) as chosen:
        assert chosen == lower and sp.default_scheme()["float32" if lower == "fp32" else "float64"] == lower


def _peak_bytes(fn):
    """Bytes numpy holds at the peak of ``fn()`` beyond what it held before (tracemalloc)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name", ["bf16x6", "bf16x9", "tf32x3", "bf16x3", "fp16x3"])
def test_matmul_cpu_engine_memory_within_4x_numpy_regression(name):
    """The CPU engine held 11.5x numpy's memory (inputs included): products now go into one reused
    buffer, the unscaling runs in place and the split's temporaries are float32. fp16x3 held 4.8x:
    the fp16 rounding now works in place and the last part is scaled in the spent residual."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    sp.matmul(a, b, dtype=name)
    inputs = a.nbytes + b.nbytes
    assert inputs + _peak_bytes(lambda: sp.matmul(a, b, dtype=name)) <= 4 * (inputs + _peak_bytes(lambda: a @ b))


def test_vector_product_memory_grows_linearly_in_k_regression():
    rng = np.random.default_rng(1)
    peaks = []
    for k in (2 ** 14, 2 ** 16):
        a, b = rng.standard_normal((1, k)).astype(np.float32), rng.standard_normal((k, 1)).astype(np.float32)
        sp.matmul(a, b, dtype="bf16x9")
        peaks.append(_peak_bytes(lambda: sp.matmul(a, b, dtype="bf16x9")) / (a.nbytes + b.nbytes))
    assert peaks[1] <= 1.05 * peaks[0] and peaks[1] <= 5
