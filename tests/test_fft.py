"""Tests of splitprec.fft: numpy.fft compatibility, accuracy against complex128 references, errors."""
import inspect
import numpy as np
import pytest
import scipy.fft as scipy_fft            # single-precision pocketfft: the float32 FFT on the CPU
import scipy.signal as scipy_signal
from hypothesis import example, given, strategies as st
from hypothesis.extra import numpy as hnp

from splitprec import accuracy
import splitprec as sp
from splitprec.engines import plan as fft_plan
from splitprec.engines.cuda import fft as cuda_fft, launch
from splitprec.engines.reference import fft as reference_fft
from splitprec import _fftconvolve
from splitprec.dtypes import cheapest


FP32_CLASS = [name for name in sp.dtypes() if sp.dtype(name).fp32_class]
ALL_DTYPES = sp.dtypes("float32")
DEFAULT = cheapest("fp32")
U32 = np.finfo(np.float32).eps / 2          # float32 unit roundoff
NORMS = [None, "backward", "ortho", "forward"]
# (splitprec function, numpy function, input kind): the whole family, for parametrized tests.
ONE_D = [(sp.fft.fft, np.fft.fft, "c"), (sp.fft.ifft, np.fft.ifft, "c"),
         (sp.fft.rfft, np.fft.rfft, "r"), (sp.fft.irfft, np.fft.irfft, "c"),
         (sp.fft.hfft, np.fft.hfft, "c"), (sp.fft.ihfft, np.fft.ihfft, "r")]
N_D = [(sp.fft.fftn, np.fft.fftn, "c"), (sp.fft.ifftn, np.fft.ifftn, "c"),
       (sp.fft.fft2, np.fft.fft2, "c"), (sp.fft.ifft2, np.fft.ifft2, "c"),
       (sp.fft.rfftn, np.fft.rfftn, "r"), (sp.fft.irfftn, np.fft.irfftn, "c"),
       (sp.fft.rfft2, np.fft.rfft2, "r"), (sp.fft.irfft2, np.fft.irfft2, "c")]
SINGLE = {np.dtype(np.float64): np.float32, np.dtype(np.complex128): np.complex64}   # numpy's dtype -> ours
FAMILY = ONE_D + N_D


def _ids(param):
    return param[0].__name__


def _signal(shape, kind, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == "r":
        return x
    return (x + 1j * rng.standard_normal(shape).astype(np.float32)).astype(np.complex64)


def _rel(y, ref):
    ref = np.asarray(ref, np.complex128)
    return float(np.linalg.norm(np.asarray(y, np.complex128) - ref) / np.linalg.norm(ref))


def _fft_bound(x, d, engine="cpu"):
    """``accuracy.fft_bound``: normwise, per line."""
    return accuracy.fft_bound(x, d, engine)


# -- numpy compatibility: shapes, dtypes, norms, n/s, axes, out -------------------------------

@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("family", ONE_D, ids=_ids)
@pytest.mark.parametrize("n", [None, 1, 5, 8, 12, 17])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_every_1d_fft_matches_numpy(family, n, axis, norm):
    ours, theirs, kind = family
    x = _signal((6, 10), kind)
    y, ref = ours(x, n=n, axis=axis, norm=norm), theirs(x.astype(np.complex128 if kind == "c" else
                                                               np.float64), n=n, axis=axis, norm=norm)
    assert y.shape == ref.shape and y.dtype == SINGLE[ref.dtype]
    err_float32 = _rel(getattr(scipy_fft, ours.__name__)(x, n=n, axis=axis, norm=norm), ref)
    assert _rel(y, ref) <= 2 * err_float32 or _rel(y, ref) == 0


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("family", N_D, ids=_ids)
@pytest.mark.parametrize("s, axes", [(None, None), ((3, 8), None), (None, (0, 2)), ((5, -1), (2, 0)),
                                     ((4,), (-2,))])
@pytest.mark.filterwarnings("ignore:`axes` should not be `None`:DeprecationWarning")
def test_every_nd_fft_matches_numpy(family, s, axes, norm):
    ours, theirs, kind = family
    if ours.__name__.endswith("2") and axes is None and s is not None:
        axes = (-2, -1)
    x = _signal((4, 6, 5), kind, seed=1)
    kwargs = {"s": s, "norm": norm} | ({} if axes is None else {"axes": axes})
    y, ref = ours(x, **kwargs), theirs(x.astype(np.complex128 if kind == "c" else np.float64), **kwargs)
    assert y.shape == ref.shape and y.dtype == SINGLE[ref.dtype]
    err_float32 = _rel(getattr(scipy_fft, ours.__name__)(x, **kwargs), ref)
    assert _rel(y, ref) <= 2 * err_float32


def test_fftn_with_a_repeated_axis_transforms_it_twice():
    x = _signal((4, 6), "c")
    np.testing.assert_array_equal(sp.fft.fftn(x, axes=(1, 1)), sp.fft.fft(sp.fft.fft(x, axis=1), axis=1))
    assert sp.fft.fftn(x, axes=(1, 1)).shape == np.fft.fftn(x, axes=(1, 1)).shape


@pytest.mark.parametrize("family", FAMILY, ids=_ids)
def test_every_fft_honours_out(family):
    ours, _, kind = family
    x = _signal((3, 8), kind)
    expected = ours(x)
    out = np.empty_like(expected)
    assert ours(x, out=out) is out
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("family", FAMILY, ids=_ids)
def test_every_fft_rejects_out_with_wrong_shape(family):
    ours, _, kind = family
    x = _signal((3, 8), kind)
    wrong = np.empty((3, 7), ours(x).dtype)
    with pytest.raises(ValueError, match=rf"^{ours.__name__}: out has shape \(3, 7\)"):
        ours(x, out=wrong)


@pytest.mark.parametrize("family", FAMILY, ids=_ids)
def test_every_fft_rejects_out_with_wrong_dtype(family):
    ours, _, kind = family
    x = _signal((3, 8), kind)
    with pytest.raises(TypeError, match=rf"^{ours.__name__}: out must be a ndarray of dtype"):
        ours(x, out=np.empty(ours(x).shape, np.int32))
    wide = np.empty(ours(x).shape, np.complex128 if ours(x).dtype.kind == "c" else np.float64)
    assert ours(x, out=wide) is wide and np.array_equal(wide, ours(x))       # held exactly, as numpy's


@pytest.mark.parametrize("family", FAMILY, ids=_ids)
def test_every_fft_rejects_a_read_only_out_naming_it_regression(family):
    ours, _, kind = family
    x = _signal((3, 8), kind)
    out = np.empty_like(ours(x))
    out.flags.writeable = False
    with pytest.raises(ValueError, match=rf"^{ours.__name__}: out is read-only; expected a writable array"):
        ours(x, out=out)


@pytest.mark.parametrize("family", FAMILY, ids=_ids)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_fft_accepts_every_float32_scheme(family, dtype):
    ours, theirs, kind = family
    x = _signal((2, 12), kind)
    y = ours(x, dtype=dtype)
    assert y.shape == theirs(x).shape and np.isfinite(y).all()


@pytest.mark.parametrize("family", FAMILY, ids=_ids)
def test_every_fft_handles_zero_size_batch(family):
    ours, theirs, kind = family
    x = _signal((0, 4, 8), kind)
    kwargs = {"axes": (1, 2)} if family in N_D else {}
    assert ours(x, **kwargs).shape == theirs(x, **kwargs).shape


def test_fft_of_float16_input_widens_exactly():
    x = np.float16([1, 2, 0.5, -3])
    np.testing.assert_array_equal(sp.fft.fft(x), sp.fft.fft(x.astype(np.float32)))


def test_fft_keeps_strided_and_reversed_views():
    x = _signal((8, 64), "c")
    view = x[::-2, ::3]
    np.testing.assert_array_equal(sp.fft.fft(view), sp.fft.fft(np.ascontiguousarray(view)))


def test_irfft_ignores_imaginary_part_of_dc_and_nyquist():
    c = _signal((9,), "c")
    n = 16
    ref = np.fft.irfft(c.astype(np.complex128), n)
    assert _rel(sp.fft.irfft(c, n), ref) <= 2 * _rel(scipy_fft.irfft(c, n), ref)


# -- errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("family", ONE_D, ids=_ids)
@pytest.mark.parametrize("n", [0, -3])
def test_every_1d_fft_rejects_n_below_one(family, n):
    ours, _, kind = family
    with pytest.raises(ValueError, match=r"^Invalid number of FFT data points"):
        ours(_signal((4,), kind), n=n)


@pytest.mark.parametrize("family", FAMILY, ids=_ids)
def test_every_fft_rejects_unknown_norm(family):
    ours, _, kind = family
    with pytest.raises(ValueError, match=r"^Invalid norm value 'unitary'"):
        ours(_signal((2, 4), kind), norm="unitary")


@pytest.mark.parametrize("family", ONE_D, ids=_ids)
def test_every_1d_fft_rejects_axis_out_of_range(family):
    ours, _, kind = family
    with pytest.raises(np.exceptions.AxisError, match=rf"^{ours.__name__}: axis 2 is out of bounds"):
        ours(_signal((2, 4), kind), axis=2)


@pytest.mark.parametrize("family", N_D, ids=_ids)
def test_every_nd_fft_rejects_s_and_axes_of_different_lengths(family):
    ours, _, kind = family
    with pytest.raises(ValueError, match=rf"^{ours.__name__}: s and axes have different lengths"):
        ours(_signal((2, 4, 4), kind), s=(4, 4, 4), axes=(0, 1))


@pytest.mark.parametrize("family", FAMILY, ids=_ids)
@pytest.mark.parametrize("bad", [np.float64, np.complex128])
def test_every_fft_rejects_float64_input(family, bad):
    ours, _, _ = family
    with pytest.raises(TypeError, match=rf"^{ours.__name__}: a has dtype {np.dtype(bad)}"):
        ours(np.ones((2, 4), bad))


def test_rfft_rejects_complex_input():
    with pytest.raises(TypeError, match=r"^rfft: a has dtype complex64; accepted: float32"):
        sp.fft.rfft(_signal((4,), "c"))


def test_fft_rejects_unknown_scheme():
    with pytest.raises(ValueError, match=r"^unknown split dtype 'tf32x4'"):
        sp.fft.fft(_signal((4,), "c"), dtype="tf32x4")


def test_fft_rejects_scalar_input():
    with pytest.raises(np.exceptions.AxisError, match=r"^fft: axis -1 is out of bounds"):
        sp.fft.fft(np.complex64(1))


def test_fft_rejects_non_integer_n():
    with pytest.raises(TypeError):
        sp.fft.fft(_signal((4,), "c"), n=2.5)


# -- non-finite values ------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILY, ids=_ids)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_every_fft_nonfinite_pattern_matches_numpy(family, value):
    ours, theirs, kind = family
    x = _signal((5, 4, 12), kind, seed=3)
    x[1, 2, 5] = value
    x[3, 0, 0] = value
    with np.errstate(invalid="ignore", over="ignore"):
        ref = theirs(x)
    y = ours(x)
    np.testing.assert_array_equal(np.isfinite(y), np.isfinite(ref))
    assert np.isnan(y[~np.isfinite(y)]).all()


@pytest.mark.parametrize("n", [16, 105, 1009])
def test_fft_nan_makes_its_line_nan(n):
    x = _signal((3, n), "c")
    x[1, n // 2] = complex(np.nan, 0)
    y = sp.fft.fft(x)
    assert np.isnan(y[1].real).all() and np.isnan(y[1].imag).all() and np.isfinite(y[[0, 2]]).all()


# -- accuracy against complex128 references ---------------------------------------------------

def _accuracy_case(n, seed=0):
    x = _signal((max(1, 2 ** 13 // n), n), "c", seed)
    return x, np.fft.fft(x.astype(np.complex128))


SIZES = [2 ** e for e in range(4, 17)] + [105, 1000, 1009, 4095]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FP32_CLASS)
def test_fft_error_within_twice_float32_fft(n, dtype):
    x, ref = _accuracy_case(n)
    assert _rel(sp.fft.fft(x, dtype=dtype), ref) <= 2 * _rel(scipy_fft.fft(x), ref)


@pytest.mark.parametrize("n, dtype", [(2 ** 20, DEFAULT), (2 ** 21, sp.dtype("tf32x3"))])
def test_large_fft_error_within_twice_float32_fft(n, dtype):
    x, ref = _accuracy_case(n)
    assert _rel(sp.fft.fft(x, dtype=dtype), ref) <= 2 * _rel(scipy_fft.fft(x), ref)


@pytest.mark.parametrize("n", [2 ** 4, 2 ** 10, 2 ** 13, 2 ** 16, 1000, 1009, 4095])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_fft_error_within_bound(n, dtype):
    x, ref = _accuracy_case(n, seed=1)
    x, ref = x[:4], ref[:4]
    per_line = np.linalg.norm(sp.fft.fft(x, dtype=dtype) - ref, axis=-1) / np.linalg.norm(ref, axis=-1)
    assert (per_line <= _fft_bound(x, dtype)).all()


@pytest.mark.parametrize("n", [2, 3, 16, 100, 1024, 1025, 4096, 2 ** 14, 2018])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_rfft_error_within_bound(n, dtype):
    x = _signal((3, n), "r", seed=n)
    x[1] *= np.float32(2.0) ** (np.arange(n) % 61 - 30)      # wide dynamic range
    ref = np.fft.rfft(x.astype(np.float64))
    assert (_per_line_error(sp.fft.rfft(x, dtype=dtype), ref) <= accuracy.rfft_bound(x, dtype)).all()


@pytest.mark.parametrize("n", [2, 6, 64, 1000])
def test_real_transforms_of_even_length_run_the_half_length_complex_transform(n, monkeypatch):
    """rfft of even n is the length-n/2 transform of the packed pairs, then the post-processing:
    with an exact inner transform it matches the complex128 rfft to float32 rounding."""
    x = _signal((n,), "r", seed=3)
    exact = lambda z, d, **_: np.fft.fft(z.astype(np.complex128)).astype(np.complex64)   # noqa: E731
    monkeypatch.setattr(reference_fft.ENGINE, "forward", exact)
    y = reference_fft.real_forward(x, sp.dtype(DEFAULT))
    back = reference_fft.real_inverse(np.fft.rfft(x.astype(np.float64)).astype(np.complex64), n, sp.dtype(DEFAULT))
    ref = np.fft.rfft(x.astype(np.float64))
    assert _rel(y, ref) <= 16 * U32
    assert _rel(back, n * x) <= 16 * U32          # unnormalized inverse: n times the signal


def test_rfft_bound_rejects_complex_and_handles_zero_and_nan():
    with pytest.raises(TypeError, match=r"^rfft_bound: x has dtype complex64"):
        accuracy.rfft_bound(np.ones(4, np.complex64), DEFAULT)
    assert accuracy.rfft_bound(np.zeros(8, np.float32), DEFAULT) == 0
    assert accuracy.rfft_bound(np.float32([1, np.nan, 0, 0]), DEFAULT) == np.inf


@pytest.mark.parametrize("n", [7, 16, 60])
def test_fft_matches_exact_dft(n):
    x = _signal((n,), "c", seed=2)
    exact = np.asarray(accuracy.exact_dft(x), np.complex128)
    assert _rel(sp.fft.fft(x), exact) <= 2 * _rel(scipy_fft.fft(x), exact)


def test_dft_block_is_the_dft_matrix():
    for r in fft_plan.RADICES + fft_plan.ODD_RADICES:
        x = _signal((r,), "c", seed=r)
        naive = np.exp(-2j * np.pi * np.outer(np.arange(r), np.arange(r)) / r) @ x.astype(np.complex128)
        y = (x.view(np.float32).astype(np.float64) @ fft_plan.dft_block(r)).view(np.complex128)
        assert _rel(y, naive) <= 2 * _rel(scipy_fft.fft(x), naive)


@pytest.mark.parametrize("n, radices", [(4096, [16, 16, 16]), (2 ** 13, [16, 8, 8, 8]),
                                        (2 ** 22, [16, 16, 16, 16, 8, 8]), (2 ** 24, [16] * 6), (2 ** 25, [16] * 5 + [8, 4]),
                                        (1000, [8, 5, 5, 5]), (105, [7, 5, 3]), (1009, None), (2187, [9, 9, 9, 3]),
                                        (100000, [16, 5, 5, 5, 5, 5, 2]), (3 * 2 ** 12, [16, 3, 16, 16])])
def test_factorize_takes_largest_radices_first_and_two_steps_in_order(n, radices):
    assert fft_plan.factorize(n) == radices


@pytest.mark.parametrize("n, lengths", [(4096, None), (2 ** 13, (128, 64)), (2 ** 14, (128, 128)),
                                        (2 ** 17, (1024, 128)), (2 ** 20, (1024, 1024)), (2 ** 21, (2048, 1024)),
                                        (2 ** 22, (4096, 1024)), (2 ** 23, (256, 32768)), (2 ** 24, (256, 65536)),
                                        (2 ** 25, None),
                                        (3 * 2 ** 12, (48, 256)), (100000, (400, 250)), (44100, (175, 252)),
                                        (9 * 2 ** 20, (4096, 2304)), (3 ** 15, None), (1009 * 4096, None)])
def test_four_step_lengths_fit_the_kernel(n, lengths):
    """Powers of two with n2 <= min(1024, sqrt n) and no radix-2 pass where they can, from 2**23 on
    256 and a two-step n2; other lengths into two of at most 4096 with n2 nearest 256, none where no
    such split exists (3**15) or a prime above 7 divides n (Bluestein)."""
    assert fft_plan.four_step_lengths(n) == lengths


@pytest.mark.parametrize("n", [2 ** 13, 2 ** 14, 2 ** 21, 6000])
def test_four_step_decomposition_is_exact_in_complex128(n):
    """F_n x = [F_n2 along c of (T * F_n1 along j of x[n2 j + c])][k1, k2] at k1 + n1 k2, with the
    plan's twiddles T before their rounding to complex64: exact up to float64 rounding."""
    n1, n2 = fft_plan.four_step_lengths(n)
    roots = fft_plan.unit_roots(np.outer(np.arange(n1), np.arange(n2)), n)
    np.testing.assert_array_equal(fft_plan.four_step_twiddles(n1, n2), roots.astype(np.complex64))
    x = _signal((n,), "c", seed=11).astype(np.complex128)
    z = np.fft.fft(np.fft.fft(x.reshape(n1, n2), axis=0) * roots, axis=1)
    assert _rel(z.T.reshape(n), np.fft.fft(x)) < 1e-14


def test_four_step_plan_runs_its_two_steps():
    """The length-2**13 transform is, bit for bit, the length-128 transforms of the strided lines,
    the complex64 twiddle product, then the length-64 transforms, stored transposed."""
    d, (n1, n2) = sp.dtype(DEFAULT), fft_plan.four_step_lengths(2 ** 13)
    x = _signal((3, n1 * n2), "c", seed=12)
    z = reference_fft.forward(np.ascontiguousarray(x.reshape(3, n1, n2).transpose(0, 2, 1)), d)
    z = z.transpose(0, 2, 1) * fft_plan.four_step_twiddles(n1, n2)
    y = reference_fft.forward(np.ascontiguousarray(z), d).transpose(0, 2, 1).reshape(3, n1 * n2)
    np.testing.assert_array_equal(reference_fft.forward(x, d), y)


# -- properties ------------------------------------------------------------------------------

_values = st.floats(-1e3, 1e3, width=32, allow_subnormal=False)
# Interleaved (Re, Im) of two signals of one length n (8, 12, 30, 64 or the prime 97: Bluestein).
_pairs = st.sampled_from([8, 12, 30, 64, 97]).flatmap(
    lambda n: hnp.arrays(np.float32, 4 * n, elements=_values))
_IMPULSE = np.zeros(128, np.float32)
_IMPULSE[0] = 1
_WIDE_RANGE = np.float32(2.0 ** np.arange(-60, 68, 2)[:64]) * np.tile(np.float32([1, -1]), 32)
_TONE = np.float32(np.cos(2 * np.pi * 5 * np.arange(60) / 30))


def _halves(v):
    """The two complex64 signals held by ``v``."""
    half = v.size // 2
    return v[:half].view(np.complex64), v[half:].view(np.complex64)


@given(_pairs)
@example(_IMPULSE)
@example(_WIDE_RANGE)
def test_fft_is_linear_within_bound(v):
    x, y = _halves(v)
    total = (x + y).astype(np.complex64)
    lhs, rhs = sp.fft.fft(total), sp.fft.fft(x) + sp.fft.fft(y)
    # Each transform within its bound, plus the float32 rounding of x + y and of F(x) + F(y).
    tol = sum(_fft_bound(w, DEFAULT) * np.linalg.norm(np.fft.fft(w.astype(np.complex128)))
              for w in (total, x, y)) + 2 * U32 * np.linalg.norm(rhs.astype(np.complex128))
    assert np.linalg.norm(lhs.astype(np.complex128) - rhs) <= tol


@given(_pairs)
@example(_TONE)
@example(_WIDE_RANGE)
def test_fft_satisfies_parseval_within_bound(v):
    x, _ = _halves(v)
    energy = np.linalg.norm(x.astype(np.complex128))
    # The bound, plus the rounding of 1/sqrt(n) and of the scaling product.
    tol = (_fft_bound(x, DEFAULT) + 2 * U32) * energy
    assert abs(np.linalg.norm(sp.fft.fft(x, norm="ortho").astype(np.complex128)) - energy) <= tol


@given(_pairs)
@example(_IMPULSE)
@example(_WIDE_RANGE)
def test_ifft_inverts_fft_within_bound(v):
    x, _ = _halves(v)
    spectrum = sp.fft.fft(x)
    back = sp.fft.ifft(spectrum)
    forward, inverse = _fft_bound(x, DEFAULT), _fft_bound(spectrum, DEFAULT)
    energy = np.linalg.norm(x.astype(np.complex128))
    # ifft = conj(fft(conj(.))) / n: the inverse's bound applies to the computed spectrum.
    tol = (forward + inverse * (1 + forward) + 2 * U32) * energy
    assert np.linalg.norm(back - x.astype(np.complex128)) <= tol


@given(st.sampled_from([2, 8, 12, 30, 64, 194]).flatmap(lambda n: hnp.arrays(np.float32, n, elements=_values)))
@example(_IMPULSE)
@example(_WIDE_RANGE)
def test_rfft_property_within_bound(x):
    ref = np.fft.rfft(x.astype(np.float64))
    err = np.linalg.norm(sp.fft.rfft(x) - ref)
    assert err <= accuracy.rfft_bound(x, DEFAULT) * np.linalg.norm(ref)


def test_unit_roots_are_exact_at_quarter_turns():
    for n in (4, 8, 16, 12, 20):
        roots = fft_plan.unit_roots(np.arange(0, 3 * n, n // 4), n)
        np.testing.assert_array_equal(roots, np.tile([1, -1j, -1, 1j], 3))


# -- fftconvolve ----------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("kind", ["r", "c"])
@pytest.mark.parametrize("shapes, axes", [(((50,), (9,)), None), (((9,), (50,)), None),
                                          (((4, 40), (1, 7)), -1), (((6, 7), (3, 4)), None),
                                          (((3, 20), (3, 1009)), 1), (((1, 40), (3, 7)), -1)])
def test_fftconvolve_matches_scipy(shapes, axes, kind, mode):
    in1, in2 = _signal(shapes[0], kind, seed=4), _signal(shapes[1], kind, seed=5)
    ref = scipy_signal.fftconvolve(in1.astype(np.complex128), in2.astype(np.complex128), mode, axes)
    y = sp.fft.fftconvolve(in1, in2, mode, axes)
    assert y.shape == ref.shape and y.dtype == (np.float32 if kind == "r" else np.complex64)
    err_float32 = _rel(scipy_signal.fftconvolve(in1, in2, mode, axes), ref)
    assert _rel(y, ref) <= 2 * err_float32


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shapes, axes", [(((5, 1), (3, 4)), None), (((1, 5), (3, 1)), None), (((4, 1), (1, 4)), None),
                                          (((5, 1), (3, 4)), 0), (((1, 6), (2, 3)), (0, 1)), (((1,), (4,)), None)])
def test_fftconvolve_broadcasts_length_one_axes_as_scipy_regression(shapes, axes, mode):
    """``mode="valid"`` refused ``(5, 1)`` with ``(3, 4)`` ("one must be at least as large as the other
    in every convolved axis"): scipy convolves no axis of length 1 in either input, it broadcasts it."""
    in1, in2 = (np.arange(1, np.prod(s) + 1, dtype=np.float32).reshape(s) for s in shapes)
    ref = scipy_signal.fftconvolve(in1.astype(np.float64), in2.astype(np.float64), mode, axes)
    y = sp.fft.fftconvolve(in1, in2, mode, axes)
    assert y.shape == ref.shape and np.allclose(y, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("n1, n2", [(4096, 129), (10000, 1000)])
def test_fftconvolve_error_within_twice_float32_fftconvolve(n1, n2):
    in1, in2 = _signal((n1,), "r", seed=6), _signal((n2,), "r", seed=7)
    ref = np.convolve(in1.astype(np.float64), in2.astype(np.float64))
    err_float32 = _rel(scipy_signal.fftconvolve(in1, in2), ref)
    for dtype in FP32_CLASS:
        assert _rel(sp.fft.fftconvolve(in1, in2, dtype=dtype), ref) <= 2 * err_float32


@pytest.mark.parametrize("n_long, n_short, length", [
    (4096, 129, 2048), (10000, 1000, 4096), (65536, 5, 16), (2 ** 16, 1025, 4096), (2 ** 24, 65, 256),
    (2 ** 22, 4097, 65536), (2 ** 26, 2 ** 21 + 1, 2 ** 22), (2 ** 26, 2 ** 22 + 2, None), (1000, 300, None),
    (100, 1, None)])
def test_block_length_has_the_least_work_per_kept_output(n_long, n_short, length):
    """One launch beats two steps unless it keeps little of each block; past 4096 the longer two-step
    blocks keep more of each (4097 taps: 2^16, where three quarters kept would give 2^14);
    lengths that do not fit twice, of three launches (2^23 and up: they cannot place blocks), or a
    single tap, take no blocks."""
    assert _fftconvolve._block_length(n_long, n_short) == length


_BLOCK_SHAPES = [(((3, 5000), (1, 300)), -1), (((3, 5000), (3, 300)), -1), (((5000, 2), (300, 1)), 0),
                 (((1, 300), (2, 5000)), 1)]


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("kind", ["r", "c"])
@pytest.mark.parametrize("shapes, axis", _BLOCK_SHAPES)
def test_fftconvolve_overlap_save_matches_scipy(shapes, axis, kind, mode):
    """Long inputs with short ones run in overlap-save blocks (one filter or one per row, either
    input the longer, any axis), real inputs two blocks per complex transform."""
    in1, in2 = _signal(shapes[0], kind, seed=10), _signal(shapes[1], kind, seed=11)
    assert _fftconvolve._block_length(max(in1.shape[axis], in2.shape[axis]), min(in1.shape[axis], in2.shape[axis]))
    wide = np.complex128 if kind == "c" else np.float64
    ref = scipy_signal.fftconvolve(in1.astype(wide), in2.astype(wide), mode, axes=axis)
    y = sp.fft.fftconvolve(in1, in2, mode, axes=axis)
    assert y.shape == ref.shape and y.dtype == (np.float32 if kind == "r" else np.complex64)
    assert _rel(y, ref) <= 2 * _rel(scipy_signal.fftconvolve(in1, in2, mode, axes=axis), ref)


_ANY_LENGTHS = dict(n_long=st.integers(40, 3000), n_short=st.integers(1, 300), kind=st.sampled_from("rc"),
                    mode=st.sampled_from(["full", "same", "valid"]), seed=st.integers(0, 2 ** 16))


def _check_fftconvolve_within_twice_scipy_float32(n_long, n_short, kind, mode, seed, to_device=np.asarray):
    """The shape and dtype of scipy's result, and at most twice its float32 error plus one float32
    rounding of ||in1|| ||in2||, which bounds every output (Cauchy-Schwarz): a few outputs ('valid'
    of equal lengths) are single dot products, whose relative errors are samples of cancellation, not
    norms."""
    in1, in2 = _signal((2, n_long), kind, seed=seed), _signal((1, min(n_short, n_long)), kind, seed=seed + 1)
    wide = np.complex128 if kind == "c" else np.float64
    ref = scipy_signal.fftconvolve(in1.astype(wide), in2.astype(wide), mode, axes=-1)
    y = sp.fft.fftconvolve(to_device(in1), to_device(in2), mode, axes=-1)
    assert y.shape == ref.shape and y.dtype == (np.float32 if kind == "r" else np.complex64)
    y = y.get() if hasattr(y, "get") else y
    scale = np.linalg.norm(in1.astype(wide)) * np.linalg.norm(in2.astype(wide)) / np.linalg.norm(ref)
    assert _rel(y, ref) <= 2 * _rel(scipy_signal.fftconvolve(in1, in2, mode, axes=-1), ref) + 2.0 ** -24 * scale


@given(**_ANY_LENGTHS)
def test_fftconvolve_either_path_within_twice_scipy_float32(n_long, n_short, kind, mode, seed):
    """Any lengths, so overlap-save (short filters), one whole-length transform (the rest) and a
    product (one tap) all run (:func:`_check_fftconvolve_within_twice_scipy_float32`)."""
    _check_fftconvolve_within_twice_scipy_float32(n_long, n_short, kind, mode, seed)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_fftconvolve_one_tap_is_the_product_as_scipy(mode):
    """scipy convolves no axis where an input has length 1: the result is the product, exact up to
    one rounding, and an inf stays where it is."""
    in1, in2 = _signal((3, 50), "c", seed=16), np.complex64([[0.75 - 0.5j]])
    in1[1, 7] = np.inf
    np.testing.assert_array_equal(sp.fft.fftconvolve(in1, in2, mode, axes=-1),
                                  scipy_signal.fftconvolve(in1, in2, mode, axes=-1))


@pytest.mark.parametrize("kind", ["r", "c"])
@pytest.mark.parametrize("n1, n2", [(40, 3), (5000, 300), (100, 60)])
@pytest.mark.parametrize("e1, e2", [(0, 40), (40, 0), (-70, -70), (-140, 0), (64, 56)])
def test_fftconvolve_of_any_scale_within_twice_float32_regression(n1, n2, e1, e2, kind):
    """Overlap-save multiplied each block's transform, at the engine's line scale near float32's top,
    by the filter's spectrum, which overflowed to NaN for a filter above 1 (``e2 = 40``); products of
    small inputs' spectra fell into the subnormals (``-70``: 1e-5 relative error). The inputs of
    ``2**e`` times unit data must give scipy's float64 result within twice scipy's float32 error on
    the unit data (what the scaling cannot change), wherever the result is in float32's range."""
    x, h = _signal((n1,), kind, seed=n1), _signal((n2,), kind, seed=n2)
    xs, hs = np.ldexp(x.view(np.float32), e1).view(x.dtype), np.ldexp(h.view(np.float32), e2).view(h.dtype)
    wide = np.complex128 if kind == "c" else np.float64
    ref = scipy_signal.fftconvolve(xs.astype(wide), hs.astype(wide))
    unit = [np.ldexp(v.view(np.float32), -e).view(v.dtype) for v, e in ((xs, e1), (hs, e2))]  # exact: scaled up
    unit_ref = scipy_signal.fftconvolve(*(v.astype(wide) for v in unit))
    scale = np.linalg.norm(unit[0].astype(wide)) * np.linalg.norm(unit[1].astype(wide)) / np.linalg.norm(unit_ref)
    bound = 2 * _rel(scipy_signal.fftconvolve(*unit), unit_ref) + 2.0 ** -24 * scale
    assert _rel(sp.fft.fftconvolve(xs, hs), ref) <= bound + (2.0 ** -149 * np.sqrt(ref.size) / np.linalg.norm(ref))


def test_fftconvolve_overlap_save_nonfinite_rows_like_scipy():
    in1, in2 = _signal((3, 5000), "r", seed=12), _signal((1, 300), "r", seed=13)
    in1[1, 777] = np.nan
    with np.errstate(invalid="ignore"):
        y, ref = sp.fft.fftconvolve(in1, in2, axes=-1), scipy_signal.fftconvolve(in1, in2, axes=-1)
        assert (np.isnan(y) == np.isnan(ref)).all() and np.isnan(y[1]).all() and np.isfinite(y[[0, 2]]).all()
        in2[0, 3] = np.inf
        assert np.isnan(sp.fft.fftconvolve(in1, in2, axes=-1)).all()


@pytest.mark.parametrize("n, scheme, gpu, length", [
    (1000, "bf16x6", False, 1000), (1000, "bf16x6", True, 1024), (1000, "fp16x3", True, 1024),
    (11, "bf16x6", True, 16), (5, "bf16x6", True, 5), (2 ** 24 + 1, "tf32x3", True, 16796160)])
def test_fftconvolve_length_is_a_fused_power_of_two_on_the_gpu(n, scheme, gpu, length, monkeypatch):
    xp = object() if gpu else np              # any namespace other than numpy means the GPU
    monkeypatch.setattr(launch, "hopper", lambda: True)   # where the fused kernel runs
    assert _fftconvolve._conv_length(n, sp.dtype(scheme), xp) == length


@pytest.mark.gpu
def test_gpu_fftconvolve_within_twice_cupyx_error():
    import cupy
    import cupyx.scipy.signal
    in1, in2 = (cupy.asarray(_signal((4, n), "r", seed=n)) for n in (3000, 700))
    ref = cupyx.scipy.signal.fftconvolve(in1.astype(np.float64), in2.astype(np.float64), axes=-1)
    err = lambda y: float(cupy.linalg.norm(y - ref) / cupy.linalg.norm(ref))   # noqa: E731
    assert err(sp.fft.fftconvolve(in1, in2, axes=-1)) <= 2 * err(cupyx.scipy.signal.fftconvolve(in1, in2, axes=-1))


def test_fftconvolve_rejects_unknown_mode():
    with pytest.raises(ValueError, match=r"^fftconvolve: acceptable mode flags are"):
        sp.fft.fftconvolve(np.ones(3, np.float32), np.ones(2, np.float32), "wrap")


def test_fftconvolve_rejects_different_ndim():
    with pytest.raises(ValueError, match=r"^fftconvolve: in1 and in2 should have the same dimensionality"):
        sp.fft.fftconvolve(np.ones((2, 3), np.float32), np.ones(2, np.float32))


def test_fftconvolve_rejects_valid_mode_without_a_larger_input():
    with pytest.raises(ValueError, match=r"^fftconvolve: for 'valid' mode, one must be at least"):
        sp.fft.fftconvolve(np.ones((2, 5), np.float32), np.ones((4, 3), np.float32), "valid")


def test_fftconvolve_rejects_float64():
    with pytest.raises(TypeError, match=r"^fftconvolve: in1 has dtype float64"):
        sp.fft.fftconvolve(np.ones(3), np.ones(2, np.float32))


# -- GPU kernel and GPU engine -------------------------------------------------------------------

@pytest.mark.nvrtc
def test_every_fft_kernel_instantiation_compiles_with_nvrtc():
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    from test_kernels_gemm import _nvrtc_compile
    # Every part format, part count and radix appears; lengths with partial tiles and odd ones too.
    cases = [("tf32", 16), ("bf16", 16), ("bf16x3", 32), ("tf32x3", 64), ("bf16x6", 128),
             ("bf16x9", 4096), ("tf32x3", 4096), ("bf16x6", 512), ("bf16x6", 1000), ("tf32x3", 105),
             ("bf16x9", 2187), ("tf32", 2401), ("bf16", 6), ("tf32x3", 3600), ("fp16x3", 4096),
             ("fp16x3", 1000), ("fp16x3", 2), ("fp16", 256)]
    expressions = [cuda_fft.kernel_expression(n, sp.dtype(name)) for name, n in cases]
    result, log = _nvrtc_compile(cuda_fft.KERNEL_FILE, expressions, "90")
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, log


@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["90", "80"])
def test_nan_lines_kernel_compiles_with_nvrtc(arch):
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    from test_kernels_gemm import _nvrtc_compile
    result, log = _nvrtc_compile(cuda_fft.NAN_FILE, ["nan_lines"], arch)
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, log


@pytest.mark.nvrtc
def test_kernel_plans_every_length_as_the_host_does():
    """The kernel's compile-time plan (Radices, block_offset, twiddle_offset) is the host's for every
    length 2..4096 with no prime factor above 7: the same radices in order, each pass's DFT-block
    parts where kernel_blocks puts them and its twiddle table where _kernel_operands concatenates
    it; checked by static_assert in an NVRTC compile."""
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    from test_kernels_gemm import _nvrtc_compile
    d = sp.dtype("bf16x6")
    asserts = []
    for n in range(2, 4097):
        radices = fft_plan.factorize(n)
        if radices is None:
            continue
        starts, offset = {}, 0
        for r in dict.fromkeys(radices):
            starts[r] = offset
            offset += d.terms * 128 * cuda_fft.block_cols(r)
        assert offset == 4 * cuda_fft.kernel_blocks(radices, d).size
        tables = [step.twiddle.size if step.twiddle is not None else 0
                  for step in fft_plan.stockham_passes(radices, d, "cpu")]
        asserts.append(f"static_assert(pass_count({n}) == {len(radices)} && "
                       f"block_offset({n}, {d.terms}, {len(radices)}) == {offset});")
        asserts += [f"static_assert(radix({n}, {i}) == {r} && block_offset({n}, {d.terms}, {i}) == {starts[r]} && "
                    f"twiddle_offset({n}, {i}) == {sum(tables[:i])});" for i, r in enumerate(radices)]
    assert len(asserts) > 1000
    result, log = _nvrtc_compile(cuda_fft.KERNEL_FILE, [], "90", "\n".join(asserts) + "\n")
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, log


@pytest.mark.parametrize("base", ["tf32", "bf16", "fp16"])
@pytest.mark.parametrize("cols", [32, 16, 8])
def test_b_tiles_hold_the_part_k_major_with_128_byte_swizzle(base, cols):
    """Every entry of the (32, cols) part once; row n holds column n along k, and its 16-byte chunk c
    sits at chunk c ^ (n % 8) (bf16: the top 16 bits, fp16: its own bits; k 32..63 zero)."""
    bits = ((np.arange(32 * cols, dtype=np.uint32) + 0x3C00) << 16).reshape(32, cols)   # distinct bf16 values
    if base == "fp16":                                                                  # distinct fp16 values
        bits = (np.arange(32 * cols, dtype=np.float32) + 1).reshape(32, cols).view(np.uint32)
    tiles = cuda_fft.b_tiles(bits.view(np.float32), base)
    assert tiles.shape == (cols, 32) and tiles.dtype == np.uint32
    n, k = 5, 21
    if base == "tf32":
        assert tiles[n, ((k // 4) ^ (n % 8)) * 4 + k % 4] == bits[k, n]
        values = tiles.reshape(-1)
    else:
        halves = tiles.view(np.uint16)
        half = np.float32(bits.view(np.float32)[k, n]).astype(np.float16).view(np.uint16) if base == "fp16" else \
            bits[k, n] >> 16
        assert halves[n, ((k // 8) ^ (n % 8)) * 8 + k % 8] == half
        assert np.count_nonzero(halves) == bits.size
        nonzero = halves[halves != 0]
        values = nonzero.view(np.float16).astype(np.float32).view(np.uint32) if base == "fp16" else \
            nonzero.astype(np.uint32) << 16
    np.testing.assert_array_equal(np.sort(values), np.sort(bits.reshape(-1)))


def _unswizzled(tiles, base):
    """The (32, cols) float32 part that b_tiles laid out as ``tiles`` (cols, 32)."""
    rows = np.arange(tiles.shape[0])[:, None]
    bits = tiles.reshape(-1, 8, 4)[rows, np.arange(8) ^ (rows % 8)].reshape(tiles.shape)
    if base == "bf16":
        bits = bits.view(np.uint16)[:, :32].astype(np.uint32) << 16
    if base == "fp16":
        bits = bits.view(np.float16)[:, :32].astype(np.float32).view(np.uint32)
    return np.ascontiguousarray(bits.T).view(np.float32)


@pytest.mark.parametrize("n, distinct", [(4096, [16]), (2048, [16, 8]), (1000, [8, 5]), (3600, [16, 9, 5]),
                                         (105, [7, 5, 3]), (2, [2])])
@pytest.mark.parametrize("dtype", ["tf32x3", "bf16x9", "fp16x3"])
def test_kernel_blocks_hold_each_distinct_radix_once_in_pass_order(n, distinct, dtype):
    """The kernel finds a pass's DFT-block parts by its radix's place among the distinct radices
    (block_offset): each radix's parts once, (block_cols(r), 32) uint32 each, in pass order, summing
    to the radix's DFT block (exactly for bf16x9's three parts; fp16 parts times 2**(-11 i - 14),
    the kernel's Fragment::BLOCK_EXPONENT; tf32 and bf16 parts unscaled) and zero outside it."""
    d = sp.dtype(dtype)
    blocks = cuda_fft.kernel_blocks(fft_plan.factorize(n), d)
    offset = 0
    for r in distinct:
        cols = 8 if r <= 4 else 16 if r <= 8 else 32
        total = np.zeros((32, cols))
        for i in range(d.terms):
            scale = 2.0 ** (-i * d.shift + (1 - d.format.emax)) if d.base == "fp16" else 1.0
            total += scale * _unswizzled(blocks[offset:offset + 32 * cols].reshape(cols, 32), d.base)
            offset += 32 * cols
        block = fft_plan.dft_block(r)
        np.testing.assert_allclose(total[:2 * r, :2 * r], block, rtol=0, atol=0 if dtype == "bf16x9" else 2 ** -21)
        total[:2 * r, :2 * r] = 0
        assert not total.any()
    assert offset == blocks.size


def _cupy():
    return pytest.importorskip("cupy")


def _per_line_error(y, ref):
    return np.linalg.norm(y - ref, axis=-1) / np.linalg.norm(ref, axis=-1)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [32, 8192, 2 ** 18, 2018])
@pytest.mark.parametrize("dtype", FP32_CLASS)
def test_gpu_real_transforms_within_bound_and_twice_cufft(n, dtype):
    cp = _cupy()
    x = _signal((4, n), "r", seed=5)
    ref = np.fft.rfft(x.astype(np.float64))
    y = sp.fft.rfft(cp.asarray(x), dtype=dtype).get()
    assert (_per_line_error(y, ref) <= accuracy.rfft_bound(x, dtype, engine="gpu")).all()
    assert _rel(y, ref) <= 2 * _rel(cp.fft.rfft(cp.asarray(x)).get(), ref)
    spectrum = ref.astype(np.complex64)
    back = sp.fft.irfft(cp.asarray(spectrum), n, dtype=dtype).get()
    exact = np.fft.irfft(spectrum.astype(np.complex128), n)
    assert _rel(back, exact) <= 2 * _rel(cp.fft.irfft(cp.asarray(spectrum), n).get(), exact)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [16, 512, 4096, 2 ** 13, 2 ** 17, 2 ** 22, 2 ** 24, 1009, 4095, 1000, 2187, 100000])
@pytest.mark.parametrize("dtype", FP32_CLASS)
@pytest.mark.parametrize("kernel", [True, False], ids=["fused", "passes"])
def test_gpu_fft_error_within_bound_and_twice_cufft(n, dtype, kernel):
    cp = _cupy()
    x = _signal((max(1, 2 ** 16 // n), n), "c")
    ref = np.fft.fft(x.astype(np.complex128))
    y = cuda_fft.forward(cp.asarray(x), sp.dtype(dtype), kernel=kernel).get()
    assert (_per_line_error(y[:4], ref[:4]) <= _fft_bound(x[:4], dtype, engine="gpu")).all()
    ratio = _rel(y, ref) / _rel(cp.fft.fft(cp.asarray(x)).get(), ref)
    if (n, dtype, kernel) == (4095, "tf32x3", False):
        # Measured exception of the passes engine (2.5x: two length-8192 transforms through the
        # GEMM engine); the default (fused) engine meets 2x at this size.
        assert ratio <= 3
    else:
        assert ratio <= 2


@pytest.mark.gpu
@pytest.mark.parametrize("n", [64, 4096, 2 ** 13, 1000])
@pytest.mark.parametrize("dtype", accuracy.bounds.schemes())
def test_gpu_every_scheme_within_bound(n, dtype):
    """Every bounded scheme, one-part ones included (whose fused kernel has no small products),
    through the public complex and real transforms: one step, two steps, radices 8 and 5."""
    cp = _cupy()
    x = _signal((4, n), "c", seed=21)
    y = sp.fft.fft(cp.asarray(x), dtype=dtype).get()
    assert (_per_line_error(y, np.fft.fft(x.astype(np.complex128))) <= _fft_bound(x, dtype, engine="gpu")).all()
    r = x.real.copy()
    y = sp.fft.rfft(cp.asarray(r), dtype=dtype).get()
    assert (_per_line_error(y, np.fft.rfft(r.astype(np.float64))) <= accuracy.rfft_bound(r, dtype, engine="gpu")).all()


@pytest.mark.gpu
@pytest.mark.parametrize("n", [2 ** 13, 2 ** 14, 2 ** 15, 2 ** 16, 2 ** 17, 2 ** 18])
@pytest.mark.parametrize("dtype", ["tf32x3", DEFAULT])
def test_gpu_two_step_kernel_agrees_with_cpu_engine(n, dtype):
    """Both steps fused (strided lines, twiddles on store) against the CPU engine's same plan: the
    difference stays within the sum of both engines' bounds, line by line."""
    cp = _cupy()
    x = _signal((2, n), "c", seed=13)
    ref = np.fft.fft(x.astype(np.complex128))
    y_gpu = cuda_fft.forward(cp.asarray(x), sp.dtype(dtype)).get()
    y_cpu = reference_fft.forward(x, sp.dtype(dtype))
    tol = _fft_bound(x, dtype, engine="gpu") + _fft_bound(x, dtype)
    assert (_per_line_error(y_gpu, y_cpu) * np.linalg.norm(y_cpu, axis=-1)
            <= tol * np.linalg.norm(ref, axis=-1)).all()
    assert cuda_fft.has_kernel(fft_plan.plan(n, sp.dtype(dtype), "gpu").steps[0], sp.dtype(dtype))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [2, 6, 105, 1000, 2187, 2401, 3600, 4000, 6000, 3 * 2 ** 12, 44100, 100000])
@pytest.mark.parametrize("dtype", ["tf32x3", DEFAULT, "bf16", "fp16x3"])
def test_gpu_mixed_radix_kernel_agrees_with_cpu_engine(n, dtype):
    """Lengths with factors 3, 5, 7 run every pass in the fused kernel (whole lines per CTA, the
    last tile of sub-vectors partial, odd lengths value by value; above 4096 two launches whose
    batches of lines straddle line blocks) and agree with the CPU engine's same plan within the sum
    of both engines' bounds, line by line."""
    cp = _cupy()
    d = sp.dtype(dtype)
    assert cuda_fft.runs_fused(fft_plan.plan(n, d, "gpu"), d)
    x = _signal((4096 // n + 3, n), "c", seed=17)      # a partial last line block
    ref = np.fft.fft(x.astype(np.complex128))
    y_gpu = cuda_fft.forward(cp.asarray(x), d).get()
    y_cpu = reference_fft.forward(x, d)
    tol = _fft_bound(x, dtype, engine="gpu") + _fft_bound(x, dtype)
    assert (_per_line_error(y_gpu, y_cpu) * np.linalg.norm(y_cpu, axis=-1)
            <= tol * np.linalg.norm(ref, axis=-1)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("family", FAMILY, ids=_ids)
def test_gpu_every_fft_agrees_with_cpu_engine(family):
    cp = _cupy()
    ours, theirs, kind = family
    x = _signal((8, 6, 64), kind)
    y_gpu, y_cpu = ours(cp.asarray(x)), ours(x)
    assert isinstance(y_gpu, cp.ndarray) and y_gpu.shape == y_cpu.shape and y_gpu.dtype == y_cpu.dtype
    ref = theirs(x.astype(np.complex128 if kind == "c" else np.float64))
    anchor = getattr(cp.fft, ours.__name__)(cp.asarray(x)).get()
    assert _rel(y_gpu.get(), y_cpu) <= 2 * _rel(anchor, ref)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["r", "c"])
@pytest.mark.parametrize("shapes, axis", _BLOCK_SHAPES)
def test_gpu_fftconvolve_overlap_save_within_twice_cupyx(shapes, axis, kind):
    cp = _cupy()
    cupyx_signal = pytest.importorskip("cupyx.scipy.signal")
    in1, in2 = _signal(shapes[0], kind, seed=14), _signal(shapes[1], kind, seed=15)
    (in1 if in1.size > in2.size else in2)[-1, 0] = np.nan  # its row comes out NaN, the first does not
    wide = np.complex128 if kind == "c" else np.float64
    with np.errstate(invalid="ignore"):
        ref = scipy_signal.fftconvolve(in1.astype(wide), in2.astype(wide), axes=axis)
    y = sp.fft.fftconvolve(cp.asarray(in1), cp.asarray(in2), axes=axis).get()
    anchor = cupyx_signal.fftconvolve(cp.asarray(in1), cp.asarray(in2), axes=axis).get()
    assert (np.isnan(y) == np.isnan(ref)).all()
    finite = ~np.isnan(ref)
    assert _rel(y[finite], ref[finite]) <= 2 * _rel(anchor[finite], ref[finite])
    (in2 if in1.size > in2.size else in1)[0, 0] = np.inf   # the filter's first row: its rows NaN too
    with np.errstate(invalid="ignore"):
        ref = scipy_signal.fftconvolve(in1.astype(wide), in2.astype(wide), axes=axis)
    y = sp.fft.fftconvolve(cp.asarray(in1), cp.asarray(in2), axes=axis).get()
    assert (np.isnan(y) == np.isnan(ref)).all() and np.isnan(ref).any()


@pytest.mark.gpu
@given(**_ANY_LENGTHS)
def test_gpu_fftconvolve_either_path_within_twice_scipy_float32(n_long, n_short, kind, mode, seed):
    """The same on the GPU: the fused overlap-save (kept outputs placed by the kernel, every mode), one
    fused transform of the whole length, or the product."""
    _check_fftconvolve_within_twice_scipy_float32(n_long, n_short, kind, mode, seed, _cupy().asarray)


def _overlap_save_case(n, taps, filters, mode, kind, seed):
    """Three rows of ``n`` and ``filters`` rows of ``taps`` on the GPU, and the kept range
    ``(start, keep)`` of ``mode``."""
    cp = _cupy()
    x, h = cp.asarray(_signal((3, n), kind, seed=seed)), cp.asarray(_signal((filters, taps), kind, seed=seed + 1))
    full = n + taps - 1
    keep = {"full": full, "same": n, "valid": n - taps + 1}[mode]
    return x, h, (full - keep) // 2, keep


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["r", "c"])
@pytest.mark.parametrize("n, taps, length, mode", [
    (5000, 300, 1024, "full"), (5000, 300, 2048, "same"), (5000, 300, 4096, "valid"), (40000, 1500, 8192, "same"),
    (40000, 3000, 16384, "full"), (40000, 3000, 16384, "valid")])
def test_gpu_overlap_save_kernel_cuts_and_places_blocks_as_the_arrays_do(n, taps, length, mode, kind):
    """The fused overlap-save (blocks cut as the kernel loads, kept outputs placed as it stores) gives
    the bits of the same transforms on blocks cut and placed by array operations, for one launch per
    transform (B <= 4096) and two (B = 8192, 16384); a row with NaN comes out NaN (its flag set), and
    every row when the filter's flag is set."""
    cp = _cupy()
    d = sp.dtype(DEFAULT)
    x, h, start, keep = _overlap_save_case(n, taps, 1, mode, kind, seed=16)
    spectrum = _fftconvolve._block_spectrum(h, length, d)
    ref = _fftconvolve._overlap_save_arrays(x, spectrum, (3,), taps, start + keep, real=kind == "r", d=d, flag=None,
                                      one_filter=True)[..., start:start + keep]
    flags = cp.zeros(4, np.uint32)
    y = cuda_fft.overlap_save(x, spectrum.reshape(length), taps - 1, start, keep, d, flags)
    assert y.shape == (3, keep) and y.dtype == x.dtype and not flags.any()
    cp.testing.assert_array_equal(y, ref)
    x[2, n // 2] = np.nan
    y = cuda_fft.overlap_save(x, spectrum.reshape(length), taps - 1, start, keep, d, flags)
    assert flags.get().tolist() == [0, 0, 0, 1] and cp.isnan(y[2]).all()
    cp.testing.assert_array_equal(y[:2], ref[:2])
    flags[:] = cp.asarray([1, 0, 0, 0], np.uint32)
    assert cp.isnan(cuda_fft.overlap_save(x, spectrum.reshape(length), taps - 1, start, keep, d, flags)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["r", "c"])
@pytest.mark.parametrize("n, taps, length, mode", [(5000, 300, 1024, "same"), (40000, 3000, 16384, "full")])
def test_gpu_overlap_save_kernel_takes_one_filter_per_row(n, taps, length, mode, kind):
    """One filter per row (ROW_TABLE: row r's blocks times row r's spectrum, one launch per transform
    and two): the bits of each row convolved alone; a filter row with ±inf makes its row NaN only."""
    cp = _cupy()
    d = sp.dtype(DEFAULT)
    x, h, start, keep = _overlap_save_case(n, taps, 3, mode, kind, seed=18)
    flags = cp.zeros(4, np.uint32)
    spectrum = cuda_fft.padded_forward(h, length, d, scale=1 / length, row_flags=flags[1:])
    assert not flags.any()
    y = cuda_fft.overlap_save(x, spectrum, taps - 1, start, keep, d, flags)
    for r in range(3):
        alone = cuda_fft.overlap_save(x[r:r + 1], spectrum[r], taps - 1, start, keep, d, cp.zeros(2, np.uint32))
        cp.testing.assert_array_equal(y[r], alone[0])
    h[1, taps // 2] = np.inf
    spectrum = cuda_fft.padded_forward(h, length, d, scale=1 / length, row_flags=flags[1:])
    assert flags.get().tolist() == [0, 0, 1, 0]
    y = cuda_fft.overlap_save(x, spectrum, taps - 1, start, keep, d, flags)
    assert cp.isnan(y[1]).all() and not cp.isnan(y[[0, 2]]).any()


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["r", "c"])
@pytest.mark.parametrize("n, length", [(300, 2048), (1500, 8192)])
def test_gpu_padded_forward_pads_as_it_loads(n, length, kind):
    """The kernel's zero padding and power-of-two scale on load give the bits of the transform of a
    zero-padded copy, then scaled; NaN in a row sets the flag."""
    cp = _cupy()
    d = sp.dtype(DEFAULT)
    h = cp.asarray(_signal((2, n), kind, seed=18))
    taps = cp.zeros((2, length), np.complex64)
    taps[:, :n] = h
    flag = cp.zeros(1, np.uint32)
    y = cuda_fft.padded_forward(h, length, d, flag, scale=1 / length)
    cp.testing.assert_array_equal(y, cuda_fft.forward(taps, d) / np.float32(length))
    assert not flag.any()
    h[1, 0] = np.inf
    cuda_fft.padded_forward(h, length, d, flag)
    assert flag.any()


@pytest.mark.gpu
def test_gpu_fftconvolve_within_twice_cupyx():
    cp = _cupy()
    cupyx_signal = pytest.importorskip("cupyx.scipy.signal")
    in1, in2 = _signal((16, 5000), "r", seed=8), _signal((1, 300), "r", seed=9)
    ref = scipy_signal.fftconvolve(in1.astype(np.float64), in2.astype(np.float64), "same", axes=-1)
    y = sp.fft.fftconvolve(cp.asarray(in1), cp.asarray(in2), "same", axes=-1)
    anchor = cupyx_signal.fftconvolve(cp.asarray(in1), cp.asarray(in2), "same", axes=-1)
    assert y.dtype == np.float32 and _rel(y.get(), ref) <= 2 * _rel(anchor.get(), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [16, 256, 4096, 1000, 105])
def test_gpu_fused_kernel_gives_the_same_bits_for_unaligned_lines(n):
    """Line blocks 16-byte aligned move as float4, others value by value: the same transform."""
    cp = _cupy()
    x = _signal((5 * 4096 // n + 3, n), "c")          # a partial last line block too
    flat = cp.zeros(x.size + 1, np.complex64)
    flat[1:] = cp.asarray(x).reshape(-1)
    unaligned = flat[1:].reshape(x.shape)              # 8 bytes past a 16-byte boundary
    d = sp.dtype(DEFAULT)
    cp.testing.assert_array_equal(cuda_fft.forward(unaligned, d), cuda_fft.forward(cp.asarray(x), d))


@pytest.fixture
def passes_only(monkeypatch):
    """While the fixture lives the GPU runs the passes engine (no fused kernel)."""
    monkeypatch.setattr(cuda_fft, "kernel_supported", lambda n, d: False)


@pytest.mark.gpu
@pytest.mark.parametrize("family", ONE_D, ids=_ids)
@pytest.mark.parametrize("n, dtype, fused", [
    (1024, DEFAULT, True), (105, DEFAULT, True), (2 ** 13, DEFAULT, True), (6000, DEFAULT, True),
    (3 * 2 ** 12, DEFAULT, True), (1000, "fp16x3", True), (1009, DEFAULT, True), (1000, DEFAULT, False)])
# fused (2; 3, 5, 7), two steps (2; 2, 3, 5; 2, 3), scaled parts, Bluestein, the passes engine
def test_gpu_nonfinite_lines_match_the_cpu_engine(family, n, dtype, fused, request):
    """The kernels flag NaN/inf as they read it; flagged lines come out NaN as on the CPU."""
    cp = _cupy()
    if not fused:
        request.getfixturevalue("passes_only")
    ours, _, kind = family
    x = _signal((3, n), kind)
    x[1, 7] = np.inf
    if kind == "c":
        x[2, 0] = complex(1, np.nan)          # the first value's imaginary part (irfft's DC)
    y_gpu, y_cpu = ours(cp.asarray(x), dtype=dtype).get(), ours(x, dtype=dtype)
    np.testing.assert_array_equal(np.isnan(y_gpu), np.isnan(y_cpu))
    assert np.isfinite(y_gpu[0]).all() and np.isnan(y_gpu[1]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("n", [16, 4096, 1000, 2 ** 16])
@pytest.mark.parametrize("dtype", ["fp16x3", "fp16"])
def test_gpu_fp16_kernel_scales_each_sub_vector(n, dtype):
    """fp16 parts hold 5 exponent bits: the fused kernel scales each sub-vector by its own power of
    two, so lines 1e-30 and 1e30 in size, and a line whose halves differ by 1e20, keep the scheme's
    error bound and agree with the CPU engine's same plan."""
    cp = _cupy()
    d = sp.dtype(dtype)
    assert cuda_fft.runs_fused(fft_plan.plan(n, d, "gpu"), d)
    x = _signal((4, n), "c", seed=29)
    x[0] *= np.float32(1e-30)
    x[1] *= np.float32(1e30)
    x[2, n // 2:] *= np.float32(1e-20)
    ref = np.fft.fft(x.astype(np.complex128))
    y_gpu = cuda_fft.forward(cp.asarray(x), d).get()
    y_cpu = reference_fft.forward(x, d).astype(np.complex128)     # norms of 1e30-sized lines
    assert np.isfinite(y_gpu).all()
    assert (_per_line_error(y_gpu, ref) <= _fft_bound(x, dtype, engine="gpu")).all()
    tol = _fft_bound(x, dtype, engine="gpu") + _fft_bound(x, dtype)
    assert (np.linalg.norm(y_gpu - y_cpu, axis=-1) <= tol * np.linalg.norm(ref, axis=-1)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("n, axis", [(1024, -1), (1024, 0), (12288, 0), (2 ** 23, -1)])
# one launch, a strided axis, two launches, three launches
def test_gpu_fft_nan_makes_its_line_nan(n, axis):
    """The fix-up after the transform sets the flagged lines only, whatever the plan and the axis."""
    cp = _cupy()
    x = cp.asarray(_signal((3, n), "c"))
    x[1, n - 7] = np.nan
    if axis == 0:
        x = x.T
    y = sp.fft.fft(x, axis=axis)
    y = (y.T if axis == 0 else y).get()
    assert np.isnan(y[1].real).all() and np.isnan(y[1].imag).all() and np.isfinite(y[[0, 2]]).all()


SHARED_FFT_FUNCTIONS = ("forward", "inverse", "real_forward", "real_inverse", "padded_forward", "conjugate")


def _takes_every_parameter_of(reference, cuda):
    """Whether ``cuda`` accepts every call that ``reference`` accepts: the reference's parameters
    first, in order, with its kinds and defaults, and any further ones optional."""
    ref = list(inspect.signature(reference).parameters.values())
    own = list(inspect.signature(cuda).parameters.values())
    positional = [p for p in ref if p.kind is not p.KEYWORD_ONLY]
    if [(p.name, p.kind, p.default) for p in own[:len(positional)]] != [(p.name, p.kind, p.default) for p in positional]:
        return False
    by_name = {p.name: p for p in own}
    keywords = [p for p in ref if p.kind is p.KEYWORD_ONLY]
    return (all(p.name in by_name and by_name[p.name].default == p.default for p in keywords)
            and all(p.default is not p.empty for p in own[len(positional):] if p.name not in {q.name for q in keywords}))


@pytest.mark.parametrize("name", SHARED_FFT_FUNCTIONS)
def test_cuda_fft_functions_take_every_argument_the_reference_engine_takes(name):
    # _fft_lines calls whichever engine holds the array: a keyword only one engine takes breaks the other.
    assert _takes_every_parameter_of(getattr(reference_fft, name), getattr(cuda_fft, name)), name


def test_cuda_stockham_overrides_take_every_argument_of_the_reference_methods():
    from splitprec.engines.cuda.fft import CudaStockham
    from splitprec.engines.reference.fft import Stockham
    overrides = [name for name, member in vars(CudaStockham).items()
                 if callable(member) and not name.startswith("__") and hasattr(Stockham, name)]
    assert {"lines", "conjugate", "padded_forward", "block_product"} <= set(overrides)
    for name in overrides:
        assert _takes_every_parameter_of(getattr(Stockham, name), getattr(CudaStockham, name)), name


def test_the_parity_check_sees_a_missing_keyword():
    def reference(x, d, *, nonfinite=None, factor=1.0):
        pass

    def lacking(x, d, *, nonfinite=None):
        pass

    def extra_required(x, d, extra, *, nonfinite=None, factor=1.0):
        pass

    def extended(x, d, *, nonfinite=None, factor=1.0, kernel=True):
        pass
    assert not _takes_every_parameter_of(reference, lacking)
    assert not _takes_every_parameter_of(reference, extra_required)
    assert _takes_every_parameter_of(reference, extended)
