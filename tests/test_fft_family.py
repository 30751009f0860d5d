"""The rest of numpy.fft in splitprec.fft: the helpers (fftfreq, rfftfreq, fftshift, ifftshift),
next_fast_len, the Hermitian transforms' definitions, numpy 2's deprecations of ``s``, bools as
lengths, and the scipy.fft backend. The generic checks (numpy's shapes and dtypes, 2x scipy's
float32 error, out, norm, NaN lines, errors) of hfft, ihfft, rfftn, irfftn, rfft2 and irfft2 run
with the rest of the family in tests/test_fft.py."""
import os
import warnings

import numpy as np
import pytest
import scipy.fft as scipy_fft

import splitprec as sp
from splitprec.engines import plan as fft_plan

rng = np.random.default_rng(11)


def _complex(*shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


# -- helpers: numpy's values bit for bit ------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 5, 8, 1000, 1001])
@pytest.mark.parametrize("d", [1.0, 0.1, 3, np.float32(0.1)])
def test_fftfreq_and_rfftfreq_give_numpys_bits(n, d):
    for ours, theirs in ((sp.fft.fftfreq, np.fft.fftfreq), (sp.fft.rfftfreq, np.fft.rfftfreq)):
        y, ref = ours(n, d), theirs(n, d)
        assert y.dtype == ref.dtype and y.tobytes() == ref.tobytes()


@pytest.mark.parametrize("shape, axes", [((7,), None), ((4, 5), None), ((4, 5), 1), ((3, 4, 5), (0, 2)),
                                         ((4, 5), (-1, 0)), ((4, 5), ()), ((6,), (0, 0))])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int64, np.float64])
def test_fftshift_and_ifftshift_match_numpy_for_every_dtype(shape, axes, dtype):
    x = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    for ours, theirs in ((sp.fft.fftshift, np.fft.fftshift), (sp.fft.ifftshift, np.fft.ifftshift)):
        y = ours(x, axes)
        assert y.dtype == x.dtype and np.array_equal(y, theirs(x, axes))
    np.testing.assert_array_equal(sp.fft.ifftshift(sp.fft.fftshift(x, axes), axes), x)


def test_shifts_take_lists():
    assert sp.fft.fftshift([0, 1, 2, -2, -1]).tolist() == [-2, -1, 0, 1, 2]


@pytest.mark.parametrize("call, error, message", [
    (lambda: sp.fft.fftfreq(0), ValueError, r"^fftfreq: n must be >= 1, got 0"),
    (lambda: sp.fft.rfftfreq(True), TypeError, r"^rfftfreq: n must be an integer, got True \(a bool is not a length\)"),
    (lambda: sp.fft.fftfreq(2.5), TypeError, r"^fftfreq: n must be an integer, got 2\.5"),
    (lambda: sp.fft.fftfreq(4, device="tpu"), ValueError, r"^fftfreq: unknown device 'tpu'; expected None, 'cpu' "
                                                          r"or 'gpu'"),
    (lambda: sp.fft.fftshift(np.ones((2, 3)), axes=2), np.exceptions.AxisError, r"^fftshift: axis 2 is out of bounds"),
    (lambda: sp.fft.next_fast_len(-3), ValueError, r"^next_fast_len: target must be >= 0, got -3"),
    (lambda: sp.fft.next_fast_len(np.True_), TypeError, r"^next_fast_len: target must be an integer"),
])
def test_helpers_reject_bad_arguments_naming_them(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.gpu
def test_gpu_helpers_give_numpys_bits_on_cupy():
    cp = pytest.importorskip("cupy")
    for n in (7, 1024):
        assert sp.fft.fftfreq(n, 0.1, device="gpu").get().tobytes() == np.fft.fftfreq(n, 0.1).tobytes()
        assert sp.fft.rfftfreq(n, device="gpu").get().tobytes() == np.fft.rfftfreq(n).tobytes()
    x = cp.arange(12.0).reshape(3, 4)
    assert isinstance(sp.fft.fftshift(x), cp.ndarray)
    np.testing.assert_array_equal(sp.fft.fftshift(x).get(), np.fft.fftshift(x.get()))


# -- next_fast_len --------------------------------------------------------------------------------

def _seven_smooth(m):
    for p in (2, 3, 5, 7):
        while m % p == 0:
            m //= p
    return m == 1


def test_next_fast_len_is_the_smallest_length_without_bluestein():
    for target in range(1, 2500):
        fast = sp.fft.next_fast_len(target)
        assert fast >= target and _seven_smooth(fast)
        assert not any(_seven_smooth(m) for m in range(target, fast))
        assert fft_plan.factorize(fast) is not None          # the engine's own plan: no Bluestein
        assert all(fft_plan.factorize(m) is None for m in range(target, fast))


def test_next_fast_len_real_is_even_and_large_targets_are_quick():
    for target in range(2, 1500):
        fast = sp.fft.next_fast_len(target, real=True)
        assert fast % 2 == 0 and _seven_smooth(fast)
        assert not any(_seven_smooth(m) and m % 2 == 0 for m in range(target, fast))
    assert sp.fft.next_fast_len(1, real=True) == 1
    assert sp.fft.next_fast_len(0) == sp.fft.next_fast_len(0, real=True) == 0      # scipy's
    with pytest.raises(ValueError, match="target must be >= 0"):
        sp.fft.next_fast_len(-1)
    big = 2 ** 60 + 1
    fast = sp.fft.next_fast_len(big)
    assert big <= fast < 2 ** 61 and _seven_smooth(fast)


# -- the Hermitian transforms and the n-D real ones, by their definitions ----------------------------

def test_hfft_is_irfft_of_the_conjugate_with_the_opposite_norm():
    a = _complex(3, 9)
    for norm, opposite in ((None, "forward"), ("ortho", "ortho"), ("forward", "backward")):
        np.testing.assert_array_equal(sp.fft.hfft(a, 16, norm=norm), sp.fft.irfft(a.conj(), 16, norm=opposite))
        x = a.real.copy()
        np.testing.assert_array_equal(sp.fft.ihfft(x, norm=norm), sp.fft.rfft(x, norm=opposite).conj())


def test_rfftn_and_irfftn_are_their_1d_transforms_in_numpys_order():
    x = rng.standard_normal((4, 6, 10)).astype(np.float32)
    np.testing.assert_array_equal(sp.fft.rfftn(x), sp.fft.fft(sp.fft.fft(sp.fft.rfft(x), axis=1), axis=0))
    c = sp.fft.rfftn(x)
    np.testing.assert_array_equal(sp.fft.irfftn(c, axes=(0, 1, 2)),
                                  sp.fft.irfft(sp.fft.ifft(sp.fft.ifft(c, axis=0), axis=1), 10))
    np.testing.assert_array_equal(sp.fft.rfft2(x), sp.fft.rfftn(x, axes=(1, 2)))


def test_ihfft_and_rfftn_reject_complex_and_empty_axes():
    with pytest.raises(TypeError, match=r"^ihfft: a has dtype complex64; accepted: float32"):
        sp.fft.ihfft(_complex(4))
    with pytest.raises(ValueError, match=r"^rfftn: axes is empty; expected at least one axis"):
        sp.fft.rfftn(np.ones((2, 2), np.float32), axes=())


@pytest.mark.parametrize("name", ["fftn", "ifftn", "fft2", "ifft2"])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_empty_axes_return_the_input_as_numpy_and_scipy_do_regression(name, dtype):
    """``axes=()`` transforms nothing: numpy and scipy return the input, dtype included (a float32
    input came back complex64); here a copy, also when written into ``out``."""
    import scipy.fft
    x = (np.arange(6).reshape(2, 3) * (1 + 1j if dtype == np.complex64 else 1)).astype(dtype)
    got = getattr(sp.fft, name)(x, axes=())
    for reference in (getattr(np.fft, name)(x, axes=()), getattr(scipy.fft, name)(x, axes=())):
        assert got.dtype == reference.dtype and np.array_equal(got, reference)
    assert not np.shares_memory(got, x)
    out = np.zeros((2, 3), np.complex64)
    assert getattr(sp.fft, name)(x, axes=(), out=out) is out and np.array_equal(out, x)


# -- numpy 2's deprecations of s, and bools --------------------------------------------------------

@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_s_without_axes_warns_like_numpy_and_points_at_the_caller(name):
    x = _complex(3, 4, 6) if name in ("ifftn", "irfftn", "fftn") else rng.standard_normal((3, 4, 6)).astype(np.float32)
    with pytest.warns(DeprecationWarning, match=r"^`axes` should not be `None` if `s` is not `None` \(deprecated in "
                                                r"NumPy 2\.0; splitprec follows numpy\): \w+ transforms the last 2 "
                                                r"axes; pass axes=\(-2, -1\)") as record:
        y = getattr(sp.fft, name)(x, s=(4, 4))
    assert record[0].filename == __file__
    with pytest.warns(DeprecationWarning, match=r"^`axes` should not be `None`"):
        assert y.shape == getattr(np.fft, name)(x, s=(4, 4)).shape


@pytest.mark.parametrize("name", ["fftn", "irfftn", "rfft2", "irfft2"])
def test_none_in_s_warns_like_numpy_and_takes_the_1d_default(name):
    x = _complex(4, 6) if "irfft" in name or name == "fftn" else rng.standard_normal((4, 6)).astype(np.float32)
    with pytest.warns(DeprecationWarning, match=r"^Passing an array containing `None` values to `s` is deprecated "
                                                r"in NumPy 2\.0: \w+ takes None as the 1-D transform's default"):
        y = getattr(sp.fft, name)(x, s=(None, None), axes=(0, 1))
    with pytest.warns(DeprecationWarning, match=r"^Passing an array containing `None` values to `s`"):
        ref = getattr(np.fft, name)(x, s=(None, None), axes=(0, 1))
    assert y.shape == ref.shape
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(sp.fft, name)(x, s=(-1, 5), axes=(0, 1)).shape == getattr(np.fft, name)(x, s=(-1, 5),
                                                                                               axes=(0, 1)).shape
        sp.fft.fft2(x.astype(np.complex64), s=(4, 4))                 # fft2's axes are given: no warning


@pytest.mark.parametrize("call", [lambda x: sp.fft.fft(x, n=True), lambda x: sp.fft.irfft(x, n=np.True_),
                                  lambda x: sp.fft.hfft(x, n=False)], ids=["fft", "irfft", "hfft"])
def test_a_bool_n_is_refused_as_numpy_does(call):
    x = _complex(8)
    with pytest.raises(TypeError, match=r"^\w+: n must be an integer, got (np\.)?(True|False)_? \(a bool is not a "
                                        r"length\)"):
        call(x)
    with pytest.raises(TypeError):
        np.fft.fft(x, n=True)


def test_a_bool_in_s_is_refused():
    with pytest.raises(TypeError, match=r"^fftn: s must be an integer, got True \(a bool is not a length\)"):
        sp.fft.fftn(_complex(4, 4), s=(True, 4), axes=(0, 1))


@pytest.mark.parametrize("name", ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "rfftn", "irfft2", "irfftn"])
def test_minus_one_in_s_on_an_empty_axis_is_numpys_valueerror_regression(name):
    """``fft2(zeros((0, 4)), s=(-1, 4))`` raised ZeroDivisionError from the norm factor; ``-1`` keeps
    the axis' length, 0 here, which numpy refuses with ValueError."""
    x = np.zeros((0, 4), np.float32 if name.startswith("rfft") else np.complex64)
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        getattr(np.fft, name)(x, s=(-1, 4), axes=(0, 1))
    with pytest.raises(ValueError, match=rf"^Invalid number of FFT data points \(0\) specified for {name}"):
        getattr(sp.fft, name)(x, s=(-1, 4), axes=(0, 1))


def test_fftconvolve_with_empty_axes_raises_like_scipy():
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match=r"^fftconvolve: when provided, axes cannot be empty"):
        sp.fft.fftconvolve(x, x, axes=[])
    with pytest.raises(ValueError, match="axes cannot be empty"):
        import scipy.signal
        scipy.signal.fftconvolve(x, x, axes=[])


# -- the scipy.fft backend --------------------------------------------------------------------------

SCIPY_CALLS = [(name, kind) for name, kind in [
    ("fft", "c"), ("ifft", "c"), ("rfft", "r"), ("irfft", "c"), ("hfft", "c"), ("ihfft", "r"), ("fft2", "c"),
    ("ifft2", "c"), ("rfft2", "r"), ("irfft2", "c"), ("fftn", "c"), ("ifftn", "c"), ("rfftn", "r"), ("irfftn", "c")]]


@pytest.mark.parametrize("name, kind", SCIPY_CALLS)
def test_scipy_backend_runs_float32_and_complex64_here(name, kind):
    x = _complex(4, 8) if kind == "c" else rng.standard_normal((4, 8)).astype(np.float32)
    with scipy_fft.set_backend(sp.fft, only=True):
        y = getattr(scipy_fft, name)(x, norm="ortho")
    np.testing.assert_array_equal(y, getattr(sp.fft, name)(x, norm="ortho"))


def test_scipy_backend_takes_scipys_positional_arguments_and_s_rule():
    x = rng.standard_normal((3, 6, 8)).astype(np.float32)
    with scipy_fft.set_backend(sp.fft, only=True), warnings.catch_warnings():
        warnings.simplefilter("error")                   # scipy's s without axes: the last axes, no warning
        np.testing.assert_array_equal(scipy_fft.rfft(x, 10, 1, "forward", False, 2), sp.fft.rfft(x, 10, 1, "forward"))
        np.testing.assert_array_equal(scipy_fft.fftn(x, s=(4, 4)), sp.fft.fftn(x, s=(4, 4), axes=(-2, -1)))


@pytest.mark.parametrize("workers, error, match", [
    (0, ValueError, r"^fft: workers=0 is out of range; expected a positive int"),
    (-(os.cpu_count() or 1) - 1, ValueError, r"^fft: workers=-\d+ is out of range"),
    (1.5, TypeError, r"^fft: workers must be an int, got 1.5"),
    (np.float64(2.0), TypeError, r"^fft: workers must be an int, got .* of type float64$"),
    ("1", TypeError, r"^fft: workers must be an int, got '1'"),
    (False, ValueError, r"^fft: workers=False is out of range"),
    (np.False_, ValueError, r"^fft: workers=\S*False\S* is out of range"),
])
def test_scipy_backend_checks_workers_as_scipy_regression(workers, error, match):
    """``workers=0`` was accepted silently; scipy raises ValueError."""
    x = np.ones(8, np.complex64)
    with pytest.raises(error):
        scipy_fft.fft(x, workers=workers)                                   # scipy's own rule
    with scipy_fft.set_backend(sp.fft, only=True), pytest.raises(error, match=match):
        scipy_fft.fft(x, workers=workers)
    with scipy_fft.set_backend(sp.fft, only=True):
        np.testing.assert_array_equal(scipy_fft.fft(x, workers=-1), sp.fft.fft(x))


@pytest.mark.parametrize("workers", [True, np.True_, np.int64(2), np.uint8(1), -1])
def test_scipy_backend_takes_the_workers_scipy_takes_regression(workers):
    """``workers=True`` raised TypeError; scipy takes bools as ints (True is 1)."""
    x = np.ones(8, np.complex64)
    scipy_fft.fft(x, workers=workers)                                       # scipy's own rule: accepted
    with scipy_fft.set_backend(sp.fft, only=True):
        np.testing.assert_array_equal(scipy_fft.fft(x, workers=workers), sp.fft.fft(x))


@pytest.mark.parametrize("name", ["fft2", "fftn", "rfft2", "rfftn", "irfft2", "irfftn"])
def test_scipy_backend_follows_scipys_s_and_axes_rules_regression(name):
    """Under the backend a scalar ``s``/``axes`` raised a bare TypeError, ``fft2(x, s=(3,))``
    transformed only the last axis (scipy raises ValueError), and repeated axes ran (scipy refuses)."""
    x = _complex(4, 6) if name.startswith("i") else rng.standard_normal((4, 6)).astype(np.float32)
    run = getattr(scipy_fft, name)
    with scipy_fft.set_backend(sp.fft, only=True):
        np.testing.assert_array_equal(run(x, s=4, axes=0), getattr(sp.fft, name)(x, s=(4,), axes=(0,)))
        np.testing.assert_array_equal(run(x, axes=1), getattr(sp.fft, name)(x, axes=(1,)))
        with pytest.raises(ValueError, match=rf"^{name}: axes=\(0, -2\) repeats an axis; expected unique axes"):
            run(x, axes=(0, -2))
        with pytest.raises(ValueError):
            run(x, s=(3,)) if name.endswith("2") else run(x, s=(3,), axes=(0, 1))
    with pytest.raises(ValueError, match="all axes must be unique"):
        run(x, axes=(0, -2))                                                 # scipy's own rule
    if name.endswith("2"):
        with pytest.raises(ValueError, match="have to be of the same length"):
            run(x, s=(3,))


@pytest.mark.parametrize("name", ["fftn", "ifft2", "rfftn", "irfft2"])
@pytest.mark.parametrize("key, value", [("s", (2.0, 3)), ("s", (None, 3)), ("axes", (0.0, 1))])
def test_scipy_backend_refuses_non_integer_s_and_axes_as_scipy_regression(name, key, value):
    """Under the backend ``s=(2.0, 3)`` or ``axes=(0.0, 1)`` raised TypeError and ``s=(None, 3)`` ran
    with numpy's deprecated default; scipy raises ValueError for each."""
    x = _complex(4, 6) if name.startswith("i") else rng.standard_normal((4, 6)).astype(np.float32)
    run = getattr(scipy_fft, name)
    with pytest.raises(ValueError):
        run(x, **{key: value})                                               # scipy's own rule
    with scipy_fft.set_backend(sp.fft, only=True), pytest.raises(
            ValueError, match=rf"^{name}: {key}=\({value[0]}, \d\) is not a sequence of integers"):
        run(x, **{key: value})
    with scipy_fft.set_backend(sp.fft, only=True):                           # integers of any kind run
        np.testing.assert_array_equal(run(x, s=np.int64([2, 3]), axes=[np.int8(0), 1]),
                                      getattr(sp.fft, name)(x, s=(2, 3), axes=(0, 1)))


@pytest.mark.parametrize("call", [
    lambda: scipy_fft.fft(np.ones(8)),                                       # float64
    lambda: scipy_fft.fft([1.0, 2.0]),                                       # a list
    lambda: scipy_fft.rfft(np.ones(8, np.complex64)),                        # complex to a real transform
    lambda: scipy_fft.fft(np.ones(8, np.float32), plan=object()),            # a plan
    lambda: scipy_fft.dct(np.ones(8, np.float32)),                           # a transform splitprec lacks
    lambda: scipy_fft.fft(np.ones(8, np.float16)),                           # float16
], ids=["float64", "list", "complex-rfft", "plan", "dct", "float16"])
def test_scipy_backend_defers_what_it_does_not_run(call):
    with scipy_fft.set_backend(sp.fft, only=True), pytest.raises(Exception, match="No selected backends had an "
                                                                                  "implementation"):
        call()


def test_scipy_backend_falls_back_to_scipy():
    x = np.linspace(0, 1, 16)
    with scipy_fft.set_backend(sp.fft):
        y = scipy_fft.fft(x)
    assert y.dtype == np.complex128 and np.array_equal(y, scipy_fft.fft(x))
