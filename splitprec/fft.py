"""Discrete Fourier transforms whose butterflies are split-precision matrix products.

Routines (numpy.fft's names, signatures and semantics; ``i`` = inverse transform, ``r`` = transform
of real data, ``n`` = n-dimensional, ``2`` = two-dimensional)::

    fft(a, n=None, axis=-1, norm=None, out=None, *, dtype=None)       ifft(...)
    rfft(a, n=None, axis=-1, norm=None, out=None, *, dtype=None)      irfft(...)
    fftn(a, s=None, axes=None, norm=None, out=None, *, dtype=None)    ifftn(...)
    fft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, dtype=None)  ifft2(...)
    fftconvolve(in1, in2, mode="full", axes=None, *, dtype=None)      (scipy.signal's)

Shared parameters, as in numpy.fft:

- ``n`` / ``s``: length(s) of the transformed axes; the input is cropped or zero-padded at the end
  (``s[i] == -1`` or ``None`` keeps that axis' length). ``irfft``'s default ``n`` is ``2 * (m - 1)``.
- ``norm``: ``"backward"`` (default: no scaling forward, ``1/n`` inverse), ``"ortho"`` (``1/sqrt(n)``
  both ways) or ``"forward"`` (``1/n`` forward); the factor is rounded once to float32.
- ``out``: an array of the result's kind (numpy/cupy), dtype (complex64, float32 for ``irfft``) and
  shape to write into; it is returned.
- ``dtype`` (keyword-only): the split scheme, a name from :func:`splitprec.dtypes`; the default is
  ``splitprec.dtypes.cheapest("fp32")`` (``bf16x6``).

Inputs are float32 or complex64 arrays (float16 is widened exactly); float64, complex128, integer and
bool inputs raise TypeError rather than being rounded silently (convert with ``.astype``). ``rfft``
rejects complex input (numpy 2 does too). numpy arrays run on the CPU engine, cupy arrays on the GPU,
with the same arithmetic (:mod:`splitprec.engines.reference.fft` documents it: Stockham passes of radix 16, 8,
4, 2, 9, 7, 5, 3, each pass one split-precision product by the real ``2r x 2r`` DFT block; twiddles in
float64 rounded to complex64; lengths from 4097 to 2**24 in two steps of at most 4096 where they split;
Bluestein for other prime factors). ``rfft`` and ``irfft`` of even ``n`` run one complex transform
of length ``n / 2`` on the packed pairs ``x[2j] + i x[2j+1]`` and a complex64 pre- or
post-processing step (``accuracy.rfft_bound``); odd ``n`` runs the complex transform of length ``n``.

Non-finite values: a 1-D line (along a transformed axis) that holds NaN or ±inf gives NaN in every
output of that line (both components); numpy's pocketfft gives a mix of ±inf and NaN there that
depends on its factorization, so only the pattern ``isfinite(out)`` matches numpy's, not the values.
Finite inputs whose transform overflows float32 give ±inf/NaN as float32 arithmetic does.

Accuracy: ``accuracy.fft_bound(x, dtype)`` (docs/bounds.md), checked by
``tests/test_fft.py::test_fft_error_within_bound``; the fp32-class schemes stay within 2x a float32
FFT's error (scipy.fft's single-precision pocketfft on the CPU, cuFFT on the GPU; docs/kernels.md).
"""
import functools
import math
import operator

import numpy as np

from .engines import plan as fft_plan
from .engines.cuda import fft as cuda_fft
from .engines.reference import fft as reference_fft
from ._backend import is_cupy, namespace
from .dtypes import cheapest, dtype as get_dtype

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "fftn", "ifftn", "fftconvolve"]

_NORMS = {None: "backward", "backward": "backward", "ortho": "ortho", "forward": "forward"}
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _scheme(dtype, op):
    d = cheapest("fp32") if dtype is None else get_dtype(dtype)
    if d.target != "float32":
        raise ValueError(f"{op}: scheme {d.name!r} targets {d.target}; the FFT supports float32 targets")
    return d


def _operand(a, op, *, real, name="a"):
    """``a`` as a float32 (``real``) or complex64 numpy/cupy array, or a TypeError naming it."""
    if not (isinstance(a, np.ndarray) or is_cupy(a)):
        a = np.asarray(a)
    accepted = (np.float16, np.float32) if real else (np.float16, np.float32, np.complex64)
    if a.dtype not in accepted:
        kinds = "float32 (or float16)" if real else "float32, complex64 (or float16)"
        raise TypeError(f"{op}: {name} has dtype {a.dtype}; accepted: {kinds}; nothing is rounded "
                        f"silently (convert explicitly, e.g. {name}.astype(numpy.complex64))")
    return a.astype(np.float32 if real else np.complex64, copy=False)


def _axis(axis, ndim, op):
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{op}: axis must be an integer, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim, msg_prefix=op)
    return axis % ndim


def _length(n, default, op):
    n = default if n is None else operator.index(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified for {op}; "
                         "expected an integer >= 1")
    return n


def _norm_factor(norm, n, inverse):
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or "forward"')
    norm = _SWAP[_NORMS[norm]] if inverse else _NORMS[norm]
    return {"backward": 1.0, "ortho": 1 / np.sqrt(n), "forward": 1.0 / n}[norm]


def _resize(x, n, xp):
    """Crop or zero-pad the last axis of ``x`` to ``n``."""
    if x.shape[-1] >= n:
        return x[..., :n]
    padded = xp.zeros(x.shape[:-1] + (n,), x.dtype)
    padded[..., :x.shape[-1]] = x
    return padded


def _nonfinite_lines(x, xp):
    """Mask ``(..., 1)`` of the lines of ``x`` that hold NaN or ±inf.

    Lines of ``2**16`` values or more are reduced in up to 1024 pieces first: a reduction along the
    last axis runs one GPU block per output, which takes milliseconds for one line of ``2**24``.
    """
    n = x.shape[-1]
    pieces = math.gcd(n, 1024) if n >= 1 << 16 else 1
    finite = xp.isfinite(x).reshape(x.shape[:-1] + (pieces, n // pieces)).all(axis=-1)
    return ~finite.all(axis=-1, keepdims=True)


def _nan_where(bad, y, xp):
    """``y`` with NaN (NaN + NaN i for complex) in the lines that ``bad`` marks."""
    return xp.where(bad, y.dtype.type(complex(np.nan, np.nan) if y.dtype.kind == "c" else np.nan), y)


def _without_ignored_parts(c, n, xp):
    """A copy of the half spectrum ``c`` with the imaginary parts that ``irfft`` ignores (bin 0's and,
    for even ``n``, bin ``n // 2``'s) zeroed, so that NaN/inf there does not make the line NaN (numpy
    ignores them whatever their value)."""
    c = xp.array(c, dtype=np.complex64, order="C")
    pairs = c.view(np.float32)
    pairs[..., 1] = 0
    if n % 2 == 0:
        pairs[..., n + 1] = 0
    return c


def _engine(xp):
    """The FFT engine of arrays of module ``xp``: the reference engine for numpy, CUDA for cupy."""
    return reference_fft if xp is np else cuda_fft


def _line(x, n, *, kind, inverse, d, factor, nonfinite=None):
    """The 1-D transform of the last axis of ``x`` (already resized) times the norm ``factor``, which
    the engine applies at its power-of-two line scale; ``nonfinite``: as
    :func:`splitprec.engines.cuda.fft.forward`."""
    engine = _engine(namespace(x))
    if kind == "c2r":
        return engine.real_inverse(x, n, d, nonfinite, factor)
    if kind == "r2c":
        return engine.real_forward(x, d, nonfinite, factor)
    if inverse:
        return engine.inverse(x, d, nonfinite, factor)
    return engine.forward(x, d, nonfinite=nonfinite, factor=factor)


def _transform(x, n, axis, *, norm, inverse, kind, d):
    """One 1-D transform along ``axis`` of a validated array (``kind``: c2c, r2c, c2r).

    A line holding NaN or ±inf comes out all NaN. On the GPU the kernel that first reads the data
    flags NaN/inf and a fix-up launch sets those lines after the transform, so the call never waits
    for the device; on the CPU non-finite lines are found first, transformed as zeros and set to NaN.
    """
    xp = namespace(x)
    x = _resize(xp.moveaxis(x, axis, -1), n // 2 + 1 if kind == "c2r" else n, xp)
    if kind == "c2r":
        x = _without_ignored_parts(x, n, xp)
    factor = _norm_factor(norm, n, inverse)
    if xp is not np:
        x = xp.ascontiguousarray(x)
        flag = xp.zeros(1, np.uint32)
        y = _line(x, n, kind=kind, inverse=inverse, d=d, factor=factor, nonfinite=flag)
        y = cuda_fft.nan_flagged_lines(x, y, flag)
    else:
        bad = _nonfinite_lines(x, xp)
        any_bad = bool(bad.any())
        y = _line(xp.where(bad, x.dtype.type(0), x) if any_bad else x, n, kind=kind, inverse=inverse, d=d,
                  factor=factor)
        if any_bad:
            y = _nan_where(bad, y, xp)
    return xp.moveaxis(y, -1, axis)


def _write(y, out, op):
    if out is None:
        return y
    if type(out) is not type(y) or out.dtype != y.dtype:
        raise TypeError(f"{op}: out must be a {type(y).__name__} of dtype {y.dtype}; got "
                        f"{type(out).__name__} of dtype {getattr(out, 'dtype', None)}")
    if out.shape != y.shape:
        raise ValueError(f"{op}: out has shape {out.shape}; expected the result's shape {y.shape}")
    out[...] = y
    return out


def _raw_fft(a, n, axis, *, norm, out, dtype, inverse, kind, op):
    d = _scheme(dtype, op)
    a = _operand(a, op, real=kind == "r2c")
    if a.ndim == 0:
        raise np.exceptions.AxisError(axis, 0, msg_prefix=op)
    axis = _axis(axis, a.ndim, op)
    default = 2 * (a.shape[axis] - 1) if kind == "c2r" else a.shape[axis]
    n = _length(n, default, op)
    _norm_factor(norm, n, inverse)
    return _write(_transform(a, n, axis, norm=norm, inverse=inverse, kind=kind, d=d), out, op)


def _nd_args(a, s, axes, op):
    """numpy's ``(s, axes)`` defaults: all axes (or the last ``len(s)``); ``-1``/None keeps a length."""
    if axes is None:
        axes = range(a.ndim) if s is None else range(-len(s), 0)
    axes = [_axis(ax, a.ndim, op) for ax in axes]
    s = [a.shape[ax] for ax in axes] if s is None else list(s)
    if len(s) != len(axes):
        raise ValueError(f"{op}: s and axes have different lengths: s={s!r}, axes={axes!r}")
    return [a.shape[ax] if length in (-1, None) else _length(length, None, op)
            for length, ax in zip(s, axes)], axes


def _raw_fftn(a, s, axes, *, norm, out, dtype, inverse, op):
    d = _scheme(dtype, op)
    a = _operand(a, op, real=False)
    s, axes = _nd_args(a, s, axes, op)
    for n in s:
        _norm_factor(norm, n, inverse)
    for n, axis in reversed(list(zip(s, axes))):
        a = _transform(a, n, axis, norm=norm, inverse=inverse, kind="c2c", d=d)
    return _write(a, out, op)


def fft(a, n=None, axis=-1, norm=None, out=None, *, dtype=None):
    """1-D discrete Fourier transform (``numpy.fft.fft``) in a split-precision scheme.

    Parameters
    ----------
    a : numpy.ndarray or cupy.ndarray, complex64 or float32
        Input; see the module docstring for ``n``, ``axis``, ``norm``, ``out``, ``dtype``.

    Returns
    -------
    complex64 array of the input's kind, the transformed axis of length ``n``.

    Raises
    ------
    TypeError
        float64/complex128/integer input, non-integer ``n`` or ``axis``, ``out`` of another dtype.
    ValueError
        ``n < 1``, unknown ``norm`` or scheme, ``out`` of another shape.
    numpy.exceptions.AxisError
        ``axis`` out of range (a ValueError and an IndexError).

    Accuracy: ``accuracy.fft_bound(x, dtype)``, checked by
    ``tests/test_fft.py::test_fft_error_within_bound``.

    Examples
    --------
    >>> import numpy as np, splitprec as sp
    >>> sp.fft.fft(np.complex64([0, 1, 0, 0]))
    array([ 1.+0.j,  0.-1.j, -1.+0.j,  0.+1.j], dtype=complex64)
    """
    return _raw_fft(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=False, kind="c2c", op="fft")


def ifft(a, n=None, axis=-1, norm=None, out=None, *, dtype=None):
    """1-D inverse transform (``numpy.fft.ifft``); parameters and accuracy as :func:`fft`."""
    return _raw_fft(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=True, kind="c2c", op="ifft")


def rfft(a, n=None, axis=-1, norm=None, out=None, *, dtype=None):
    """1-D transform of real float32 input (``numpy.fft.rfft``): ``n // 2 + 1`` complex64 outputs."""
    return _raw_fft(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=False, kind="r2c", op="rfft")


def irfft(a, n=None, axis=-1, norm=None, out=None, *, dtype=None):
    """Inverse of :func:`rfft` (``numpy.fft.irfft``): float32 output of length ``n``."""
    return _raw_fft(a, n, axis, norm=norm, out=out, dtype=dtype, inverse=True, kind="c2r", op="irfft")


def fftn(a, s=None, axes=None, norm=None, out=None, *, dtype=None):
    """N-D transform (``numpy.fft.fftn``): 1-D transforms over ``axes``, last axis first."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=False, op="fftn")


def ifftn(a, s=None, axes=None, norm=None, out=None, *, dtype=None):
    """N-D inverse transform (``numpy.fft.ifftn``)."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=True, op="ifftn")


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, dtype=None):
    """2-D transform (``numpy.fft.fft2``): :func:`fftn` over the last two axes."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=False, op="fft2")


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, dtype=None):
    """2-D inverse transform (``numpy.fft.ifft2``)."""
    return _raw_fftn(a, s, axes, norm=norm, out=out, dtype=dtype, inverse=True, op="ifft2")



_MODES = ("full", "same", "valid")


def _conv_length(n, d, xp):
    """The transform length of a linear convolution of length ``n``: on the GPU the next power of
    two where the fused kernels run it, else the smallest length >= ``n`` with no prime factor above
    7 (no Bluestein pass)."""
    power = 1 << (n - 1).bit_length()
    if xp is not np and 16 <= power <= fft_plan.FOUR_STEP_MAX and cuda_fft.kernel_supported(16, d):
        return power
    while fft_plan.factorize(n) is None:
        n += 1
    return n


@functools.lru_cache(maxsize=256)
def _block_length(n_long, n_short):
    """The overlap-save block length for a convolution of lengths ``n_long >= n_short`` along one axis,
    or None (one transform of it all): of the powers of two ``B >= 16`` that keep at least half of each
    block (``B >= 2 (n_short - 1)``) and fit twice in the convolution, the one with the least work
    per kept output, ``(passes + I/O) * B / (B - n_short + 1)``, where one launch's read and write
    count as one pass and a two-step length's two launches (strided) as 4.5 (H200 timings of the
    fused kernel); lengths of three launches, which cannot place the blocks, are not taken."""
    if n_short < 2:
        return None
    full, best = n_long + n_short - 1, None
    length = max(16, 1 << (2 * (n_short - 1) - 1).bit_length())
    while length <= fft_plan.FOUR_STEP_MAX and fft_plan.launches(length) <= 2 and 2 * length <= full:
        passes = len(fft_plan.factorize(length)) + (1 if fft_plan.launches(length) == 1 else 4.5)
        work = passes * length / (length - n_short + 1)
        best = min(best or (work, length), (work, length))
        length *= 2
    return best and best[1]


def _overlap_save(x, h, axis, length, start, keep, *, real, d):
    """Positions ``[start, start + keep)`` of the full linear convolution of ``x`` with the shorter
    ``h`` along ``axis``, by overlap-save.

    ``x``, zero-padded by ``n_h - 1`` in front, is cut into blocks of ``length`` values ``step =
    length - (n_h - 1)`` apart; each block's transform is multiplied by that of ``h`` (zero-padded,
    divided by ``length``: exact) and transformed again, which gives the circular convolution read
    backwards (``DFT(DFT(z))[-j] = length * z[j]``), whose last ``step`` values are the linear one.
    Real inputs pack two blocks per complex line, as real and imaginary parts (``h`` is real, so
    their convolutions stay apart). One filter for every row, or one per row of ``x``, runs in the
    fused kernel where it applies (:func:`splitprec.engines.cuda.fft.overlap_save`: the blocks are cut as
    they load and placed as they store); otherwise array operations cut and place them. Rows (of
    the broadcast batch) with NaN or ±inf in ``x`` or ``h`` come out NaN, as from one transform of
    the whole length.
    """
    xp = namespace(x, h)
    x, h = xp.moveaxis(x, axis, -1), xp.moveaxis(h, axis, -1)
    n_x, n_h = x.shape[-1], h.shape[-1]
    one_filter = all(n == 1 for n in h.shape[:-1])         # then x's batch is the batch
    per_row = not one_filter and h.shape[:-1] == x.shape[:-1]
    if xp is not np and (one_filter or per_row) and cuda_fft.runs_blocks(fft_plan.plan(length, d, "gpu"), d):
        rows = xp.ascontiguousarray(x).reshape(-1, n_x)
        flags = xp.zeros(rows.shape[0] + 1, np.uint32)         # the filter's, then one per row
        taps = h.reshape(-1, n_h)
        spectrum = cuda_fft.padded_forward(taps, length, d, None if per_row else flags[:1], 1 / length,
                                          flags[1:] if per_row else None)
        out = cuda_fft.overlap_save(rows, spectrum if per_row else spectrum.reshape(length), n_h - 1, start,
                                    keep, d, flags)
        return xp.moveaxis(out.reshape(x.shape[:-1] + (keep,)), -1, axis)
    batch = np.broadcast_shapes(x.shape[:-1], h.shape[:-1])
    flag = xp.zeros(1, np.uint32) if xp is not np else None   # NaN or ±inf read from h or x
    spectrum = _block_spectrum(h, length, d, flag)
    out = _overlap_save_arrays(x, spectrum, batch, n_h, start + keep, real=real, d=d, flag=flag,
                               one_filter=one_filter)[..., start:start + keep]
    if flag is None or int(flag.get()[0]):
        bad = _nonfinite_lines(xp.broadcast_to(x, batch + (n_x,)), xp) | _nonfinite_lines(
            xp.broadcast_to(h, batch + (n_h,)), xp)
        out = _nan_where(bad, out, xp)
    return xp.moveaxis(out, -1, axis)


def _block_spectrum(h, length, d, nonfinite=None):
    """The DFT of length ``length`` of the taps ``h`` (last axis, zero-padded), divided by ``length``
    (exact: a power of two); ``nonfinite``: as :func:`splitprec.engines.cuda.fft.forward`."""
    spectrum = _engine(namespace(h)).padded_forward(h.reshape(-1, h.shape[-1]), length, d, nonfinite, scale=1 / length)
    return spectrum.reshape(h.shape[:-1] + (length,))


def _overlap_save_arrays(x, spectrum, batch, n_h, end, *, real, d, flag, one_filter):
    """The convolution's first ``end`` (or more) positions by :func:`_overlap_save`'s blocks, cut and
    placed by array operations (``x``'s convolved axis last, ``spectrum`` that of the filter)."""
    xp = namespace(x)
    forward = _engine(xp).forward
    length = spectrum.shape[-1]
    step = length - (n_h - 1)
    blocks = -(-end // step)
    blocks += blocks % 2 if real else 0
    padded = xp.zeros(batch + (max((blocks - 1) * step + length, n_h - 1 + x.shape[-1]),), x.dtype)
    padded[..., n_h - 1:n_h - 1 + x.shape[-1]] = x
    item = padded.itemsize
    cut = xp.lib.stride_tricks.as_strided(padded, batch + (blocks, length),
                                          padded.strides[:-1] + (step * item, item))
    if real:                                        # block 2p + i*(block 2p + 1)
        lines = xp.stack((cut[..., 0::2, :], cut[..., 1::2, :]), axis=-1).view(np.complex64)[..., 0]
    else:
        lines = xp.ascontiguousarray(cut)
    if one_filter:                                  # multiplied on store where the kernel runs
        y = forward(lines.reshape(-1, length), d, nonfinite=flag, times=spectrum.reshape(length))
        y = y.reshape(lines.shape)
    else:
        y = forward(lines.reshape(-1, length), d, nonfinite=flag).reshape(lines.shape)
        y = y * spectrum[..., None, :]
    kept = forward(y.reshape(-1, length), d).reshape(y.shape)[..., ::-1][..., n_h - 2:length - 1]
    if real:
        kept = xp.stack((kept.real, kept.imag), axis=-2)
    return kept.reshape(batch + (-1,))


def _conv_axes(in1, in2, mode, axes, op):
    """scipy.signal.fftconvolve's checks of ``mode``, dimensions and ``axes``; the sorted axes."""
    if mode not in _MODES:
        raise ValueError(f"{op}: acceptable mode flags are 'valid', 'same', or 'full'; got {mode!r}")
    if in1.ndim != in2.ndim:
        raise ValueError(f"{op}: in1 and in2 should have the same dimensionality; got shapes "
                         f"{in1.shape} and {in2.shape}")
    axes = range(in1.ndim) if axes is None else [axes] if np.ndim(axes) == 0 else axes
    axes = [_axis(ax, in1.ndim, op) for ax in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: all axes must be unique; got {axes!r}")
    for ax in set(range(in1.ndim)) - set(axes):
        if in1.shape[ax] != in2.shape[ax] and 1 not in (in1.shape[ax], in2.shape[ax]):
            raise ValueError(f"{op}: incompatible shapes for in1 and in2: {in1.shape} and "
                             f"{in2.shape} (axis {ax} is not convolved, so it must broadcast)")
    return sorted(axes)


def _valid_order(in1, in2, axes, op):
    """``(in1, in2)``, swapped when ``in2`` is the larger in every axis (scipy's 'valid' rule)."""
    if all(in1.shape[ax] >= in2.shape[ax] for ax in axes):
        return in1, in2
    if all(in2.shape[ax] >= in1.shape[ax] for ax in axes):
        return in2, in1
    raise ValueError(f"{op}: for 'valid' mode, one must be at least as large as the other in every "
                     f"convolved axis; got shapes {in1.shape} and {in2.shape}")


def _spectrum(x, lengths, axes, *, real, d):
    kinds = ["c2c"] * (len(axes) - 1) + ["r2c" if real else "c2c"]
    for n, axis, kind in reversed(list(zip(lengths, axes, kinds))):
        x = _transform(x, n, axis, norm="backward", inverse=False, kind=kind, d=d)
    return x


def _inverse_spectrum(y, lengths, axes, *, real, d):
    kinds = ["c2c"] * (len(axes) - 1) + ["c2r" if real else "c2c"]
    for n, axis, kind in zip(lengths, axes, kinds):
        y = _transform(y, n, axis, norm="backward", inverse=True, kind=kind, d=d)
    return y


def fftconvolve(in1, in2, mode="full", axes=None, *, dtype=None):
    """Convolution by FFTs (``scipy.signal.fftconvolve``) with the split-precision transforms.

    Parameters
    ----------
    in1, in2 : numpy.ndarray or cupy.ndarray, float32 or complex64, same ndim
        Inputs; axes not in ``axes`` must be equal or 1 (they broadcast).
    mode : {"full", "same", "valid"}
        ``full``: every overlap (length ``n1 + n2 - 1``); ``same``: centred, ``in1``'s shape;
        ``valid``: only full overlaps (``max - min + 1``; the inputs swap if ``in2`` is larger).
    axes : int or sequence of int, optional
        Axes to convolve over (default: all).
    dtype : str or SplitDType, optional
        Scheme, as in the module docstring.

    Returns
    -------
    float32 when both inputs are real, else complex64; same kind (numpy/cupy) as the inputs. Along
    one axis, a long input with a short one (at least twice the block) runs by overlap-save in
    power-of-two blocks of at least 2x the shorter length (:func:`_block_length`,
    :func:`_overlap_save`; on the GPU with one filter, cut and placed by the fused kernel with no
    host synchronisation). Otherwise the transforms run at lengths >= ``n1 + n2 - 1``: on the GPU
    powers of two up to 2^24 (the fused kernels), elsewhere lengths with no prime factor above 7;
    real inputs through ``rfft``/``irfft`` on the last convolved axis.

    Raises
    ------
    TypeError
        float64/complex128/integer inputs.
    ValueError
        Unknown mode, different ndim, non-broadcasting batch axes, repeated axes, 'valid' with
        neither input larger in every axis.

    Accuracy: normwise, within 2x scipy.signal.fftconvolve's float32 error (plus one float32
    rounding of ``||in1|| ||in2||`` where a few outputs are single dot products), checked by
    ``tests/test_fft.py::test_fftconvolve_error_within_twice_float32_fftconvolve`` and, for any
    lengths, ``test_fftconvolve_either_path_within_twice_scipy_float32``. One tap per convolved
    axis is the product itself, as in scipy.

    Examples
    --------
    >>> import numpy as np, splitprec as sp
    >>> sp.fft.fftconvolve(np.float32([1, 2, 3, 4]), np.float32([1, 1]))
    array([1., 3., 5., 7., 4.], dtype=float32)
    """
    op = "fftconvolve"
    d = _scheme(dtype, op)
    real = all((x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype).kind == "f" for x in (in1, in2))
    in1, in2 = (_operand(x, op, real=real, name=name) for x, name in ((in1, "in1"), (in2, "in2")))
    xp = namespace(in1, in2)
    if in1.ndim == in2.ndim == 0:
        return in1 * in2
    axes = _conv_axes(in1, in2, mode, axes, op)
    if in1.size == 0 or in2.size == 0:
        return xp.zeros((0,), in1.dtype)
    shape1 = in1.shape
    if mode == "valid":
        in1, in2 = _valid_order(in1, in2, axes, op)
    full = [in1.shape[ax] + in2.shape[ax] - 1 for ax in axes]
    # Lengths kept, centred in the full convolution (the front of y's axes): scipy's 'same' keeps in1's
    # shape on every axis, the broadcast ones too.
    keep = dict(enumerate(shape1)) if mode == "same" else dict(zip(axes, full if mode == "full" else [
        in1.shape[ax] - in2.shape[ax] + 1 for ax in axes]))
    long, short = sorted((in1, in2), key=lambda x: -x.shape[axes[0]])   # along the first convolved axis
    cut = {}                                                           # axes the convolution kept already
    if all(1 in (in1.shape[ax], in2.shape[ax]) for ax in axes):   # one tap per axis: the product, as
        y = in1 * in2                                              # scipy (it convolves no such axis)
    elif len(axes) == 1 and (block := _block_length(long.shape[axes[0]], short.shape[axes[0]])):
        ax = axes[0]
        y = _overlap_save(long, short, ax, block, (full[0] - keep[ax]) // 2, keep[ax], real=real, d=d)
        cut = {ax: keep[ax]}
    else:
        lengths = [_conv_length(n, d, xp) for n in full]
        product = _spectrum(in1, lengths, axes, real=real, d=d) * _spectrum(in2, lengths, axes, real=real, d=d)
        y = _inverse_spectrum(product, lengths, axes, real=real, d=d)
    whole = dict(enumerate(y.shape)) | dict(zip(axes, full)) | cut
    index = tuple(slice((whole[ax] - keep[ax]) // 2, (whole[ax] - keep[ax]) // 2 + keep[ax]) if ax in keep
                  else slice(None) for ax in range(y.ndim))
    return xp.ascontiguousarray(y[index])
