"""splitprec.default_scheme: setter, reader and context manager; what it applies to; per thread."""
import contextvars
import threading

import numpy as np
import pytest

import splitprec as sp

rng = np.random.default_rng(3)
BUILT_IN = {"float32": "fp32", "float64": "fp64"}


@pytest.fixture(autouse=True)
def restore_defaults():
    yield
    sp.default_scheme("fp32")
    sp.default_scheme("fp64")


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_built_in_defaults_are_the_precision_classes():
    assert sp.default_scheme() == BUILT_IN


def test_the_setter_applies_to_matmul_the_ffts_and_asarray():
    a, b = randn(16, 300), randn(300, 8)
    z = (randn(64) + 1j * randn(64)).astype(np.complex64)
    assert not np.array_equal(sp.matmul(a, b, dtype="bf16"), sp.matmul(a, b))   # the one-term scheme shows
    sp.default_scheme("bf16")
    assert sp.default_scheme() == {"float32": "bf16", "float64": "fp64"}
    np.testing.assert_array_equal(sp.matmul(a, b), sp.matmul(a, b, dtype="bf16"))
    np.testing.assert_array_equal(sp.fft.fft(z), sp.fft.fft(z, dtype="bf16"))
    np.testing.assert_array_equal(sp.fft.fftconvolve(a[0], b[:, 0]), sp.fft.fftconvolve(a[0], b[:, 0], dtype="bf16"))
    assert sp.asarray(a).dtype.name == "bf16" and sp.zeros(2).dtype.name == "bf16"
    np.testing.assert_array_equal(sp.matmul(a, b, dtype="tf32x3"), sp.matmul(a, b, dtype="tf32x3"))
    np.testing.assert_array_equal(sp.matmul(a, b, precision="fp32"), sp.matmul(a, b, dtype="tf32x3"))


def test_with_sets_the_default_for_the_block_only():
    with sp.default_scheme("BF16_BF16_F32_X9") as d:
        assert d is sp.dtype("bf16x9") and sp.asarray([1.0]).dtype.name == "bf16x9"
        with sp.default_scheme("tf32x3"):
            assert sp.default_scheme()["float32"] == "tf32x3"
        assert sp.default_scheme()["float32"] == "bf16x9"
    assert sp.default_scheme() == BUILT_IN


def test_with_restores_the_previous_default_on_an_exception():
    sp.default_scheme("tf32x3")
    with pytest.raises(RuntimeError, match="inside"):
        with sp.default_scheme("bf16x9"):
            raise RuntimeError("inside")
    assert sp.default_scheme()["float32"] == "tf32x3"


def test_float64_default_is_separate_from_the_float32_one():
    a64, b64 = rng.standard_normal((6, 50)), rng.standard_normal((50, 4))
    a, b = a64.astype(np.float32), b64.astype(np.float32)
    with sp.default_scheme("ozaki2_int8x16"):
        assert sp.default_scheme() == {"float32": "fp32", "float64": "ozaki2_int8x16"}
        np.testing.assert_array_equal(sp.matmul(a64, b64), sp.matmul(a64, b64, dtype="ozaki2_int8x16"))
        np.testing.assert_array_equal(sp.matmul(a, b), sp.matmul(a, b, dtype="tf32x3"))
        with sp.default_scheme("fp64"):
            np.testing.assert_array_equal(sp.matmul(a64, b64), sp.matmul(a64, b64, precision="fp64"))


def test_a_split_array_keeps_its_own_scheme():
    w = sp.asarray(randn(4, 4), dtype="tf32x3")
    with sp.default_scheme("bf16x9"):
        assert (w @ w).dtype.name == "tf32x3" and sp.matmul(w, w).dtype.name == "tf32x3"


def test_the_default_is_per_thread():
    seen = {}
    with sp.default_scheme("bf16x9"):
        worker = threading.Thread(target=lambda: seen.update(other=sp.default_scheme()))
        worker.start()
        worker.join()
        seen["carried"] = contextvars.copy_context().run(sp.default_scheme)
    setter = threading.Thread(target=lambda: sp.default_scheme("bf16"))
    setter.start()
    setter.join()
    assert seen == {"other": BUILT_IN, "carried": {"float32": "bf16x9", "float64": "fp64"}}
    assert sp.default_scheme() == BUILT_IN


@pytest.mark.parametrize("value, error, message", [
    ("tf32x4", ValueError, r"^default_scheme: unknown split dtype 'tf32x4'; expected one of .* \(or a precision "
                           r"class, 'fp32' or 'fp64'\)"),
    ("F64_F64_F64", ValueError, r"^default_scheme: split dtype 'F64_F64_F64' is an XLA DotAlgorithmPreset with no "
                                r"splitprec equivalent"),
    ([], TypeError, r"^default_scheme: split dtype must be a name \(str\) or SplitDType, got \[\] of type list"),
])
def test_bad_values_are_refused_and_change_nothing(value, error, message):
    with pytest.raises(error, match=message):
        sp.default_scheme(value)
    assert sp.default_scheme() == BUILT_IN


def test_the_handle_says_what_it_set():
    assert repr(sp.default_scheme("9xBF16")) == "default_scheme('bf16x9')"
    with sp.default_scheme("fp32") as precision:
        assert precision == "fp32"


def test_a_reused_or_stale_handle_runs_its_scheme_in_the_block_regression():
    """A handle entered a second time, or after the defaults changed since its call, left the
    block on whatever default was current (matmul ran another scheme), and its exit restored the
    defaults of its call, dropping a later ``default_scheme`` setting."""
    a, b = randn(16, 300), randn(300, 8)
    bf16 = sp.matmul(a, b, dtype="bf16")
    handle = sp.default_scheme("bf16")
    with handle:
        pass
    assert sp.default_scheme() == BUILT_IN
    with handle:                                       # used again
        np.testing.assert_array_equal(sp.matmul(a, b), bf16)
    assert sp.default_scheme() == BUILT_IN
    sp.default_scheme("tf32x3")
    with handle:                                       # stale: the defaults changed since its call
        with handle:
            np.testing.assert_array_equal(sp.matmul(a, b), bf16)
        np.testing.assert_array_equal(sp.matmul(a, b), bf16)
    assert sp.default_scheme() == {"float32": "tf32x3", "float64": "fp64"}
