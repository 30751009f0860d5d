"""Convolution by FFTs (``scipy.signal.fftconvolve``) with the split-precision transforms.

Along one axis, a long input with a short one runs by overlap-save in power-of-two blocks (on the
GPU cut and placed by the fused kernel); other convolutions run one transform of the whole padded
length per input (:func:`fftconvolve`).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from ._fft_lines import engine
from .engines import plan as fft_plan
from .engines.cuda import fft as cuda_fft
from ._backend import namespace
from ._fft_helpers import next_fast_len
from ._fft_lines import axis_index, nan_where, nonfinite_lines, operand, scheme, transform
from .dtypes import SchemeLike
from .formats import widen
from .interop import Array, ArrayLike, read

_MODES = ("full", "same", "valid")


def _conv_length(n, d, xp):
    """The transform length of a linear convolution of length ``n``: on the GPU the next power of
    two where the fused kernels run it, else :func:`splitprec.fft.next_fast_len` (no Bluestein pass)."""
    power = 1 << (n - 1).bit_length()
    if xp is not np and 16 <= power <= fft_plan.FOUR_STEP_MAX and cuda_fft.kernel_supported(16, d):
        return power
    return next_fast_len(n)


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
        bad = nonfinite_lines(xp.broadcast_to(x, batch + (n_x,)), xp) | nonfinite_lines(
            xp.broadcast_to(h, batch + (n_h,)), xp)
        out = nan_where(bad, out, xp)
    return xp.moveaxis(out, -1, axis)


def _block_spectrum(h, length, d, nonfinite=None):
    """The DFT of length ``length`` of the taps ``h`` (last axis, zero-padded), divided by ``length``
    (exact: a power of two); ``nonfinite``: as :func:`splitprec.engines.cuda.fft.forward`."""
    spectrum = engine(namespace(h)).padded_forward(h.reshape(-1, h.shape[-1]), length, d, nonfinite, scale=1 / length)
    return spectrum.reshape(h.shape[:-1] + (length,))


def _overlap_save_arrays(x, spectrum, batch, n_h, end, *, real, d, flag, one_filter):
    """The convolution's first ``end`` (or more) positions by :func:`_overlap_save`'s blocks, cut and
    placed by array operations (``x``'s convolved axis last, ``spectrum`` that of the filter)."""
    xp = namespace(x)
    forward = engine(xp).forward
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


def _scaled(x, exponent):
    """``x`` (float32 or complex64) times ``2**exponent`` (an int32 0-d array on ``x``'s device), each
    component rounded once, subnormals kept: the engine's line scaling, on rows of up to 1024
    components (one GPU block each) that share the exponent."""
    xp = namespace(x)
    flat = xp.ascontiguousarray(x).reshape(-1).view(np.float32)
    rows = flat.reshape(-1, math.gcd(flat.size, 1024))
    exponents = xp.ascontiguousarray(xp.broadcast_to(exponent, (rows.shape[0], 1)))
    return engine(xp).ENGINE.scale_lines(rows, exponents).reshape(-1).view(x.dtype).reshape(x.shape)


def _unit_scaled(x):
    """``(x * 2**-e, e)``, exact: ``x`` scaled by a power of two so that its largest finite ``|Re|``,
    ``|Im|`` lies in ``[1/2, 1)`` (``e = 0`` for zeros); ``e`` a 0-d int32 array on ``x``'s device.

    The convolution then runs in mid-range whatever the inputs' scales, and its result is scaled back
    once: unscaled, overlap-save multiplied each block's transform (at the engine's line scale, near
    float32's top) by the filter's spectrum, which overflowed to NaN for filters above 1 in magnitude
    (``fftconvolve(ones(40), [1e10, 1, 1])``), and products of small inputs' spectra fell into the
    subnormals (``1e-20`` inputs lost four digits). The peak is found in float64 (exactly widened):
    cupy's float32 kernels flush subnormals."""
    xp = namespace(x)
    wide = xp.abs(widen(xp.ascontiguousarray(x).reshape(-1).view(np.float32)))
    peak = xp.where(xp.isfinite(wide), wide, 0.0).max()
    _, e = xp.frexp(peak)
    e = xp.where(peak > 0, e, 0).astype(np.int32)
    return _scaled(x, -e), e


def _conv_axes(in1, in2, mode, axes, op):
    """scipy.signal.fftconvolve's checks of ``mode``, dimensions and ``axes``; the sorted axes."""
    if mode not in _MODES:
        raise ValueError(f"{op}: acceptable mode flags are 'valid', 'same', or 'full'; got {mode!r}")
    if in1.ndim != in2.ndim:
        raise ValueError(f"{op}: in1 and in2 should have the same dimensionality; got shapes "
                         f"{in1.shape} and {in2.shape}")
    axes = range(in1.ndim) if axes is None else [axes] if np.ndim(axes) == 0 else axes
    if len(axes) == 0:
        raise ValueError(f"{op}: when provided, axes cannot be empty; expected None (every axis), an "
                         "integer or a non-empty sequence of integers")
    axes = [axis_index(ax, in1.ndim, op) for ax in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: all axes must be unique; got {axes!r}")
    for ax in set(range(in1.ndim)) - set(axes):
        if in1.shape[ax] != in2.shape[ax] and 1 not in (in1.shape[ax], in2.shape[ax]):
            raise ValueError(f"{op}: incompatible shapes for in1 and in2: {in1.shape} and "
                             f"{in2.shape} (axis {ax} is not convolved, so it must broadcast)")
    # an axis of length 1 in either input is not convolved but broadcast, as scipy does (its 'valid'
    # length is then the broadcast one, and it takes no part in 'valid's ordering of the inputs)
    return sorted(ax for ax in axes if 1 not in (in1.shape[ax], in2.shape[ax]))


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
        x = transform(x, n, axis, norm="backward", inverse=False, kind=kind, d=d)
    return x


def _inverse_spectrum(y, lengths, axes, *, real, d):
    kinds = ["c2c"] * (len(axes) - 1) + ["c2r" if real else "c2c"]
    for n, axis, kind in zip(lengths, axes, kinds):
        y = transform(y, n, axis, norm="backward", inverse=True, kind=kind, d=d)
    return y


def fftconvolve(in1: ArrayLike, in2: ArrayLike, mode: str = "full", axes: int | Sequence[int] | None = None, *,
                dtype: SchemeLike = None) -> Array:
    """Convolution by FFTs (``scipy.signal.fftconvolve``) with the split-precision transforms.

    Parameters
    ----------
    in1, in2 : arrays (numpy, cupy, or any DLPack object) or nested lists, same ndim
        float32 or complex64 (float16, bfloat16, integers and Python numbers as in
        :mod:`splitprec.interop`); axes not in ``axes`` must be equal or 1 (they broadcast).
    mode : {"full", "same", "valid"}
        ``full``: every overlap (length ``n1 + n2 - 1``); ``same``: centred, ``in1``'s shape;
        ``valid``: only full overlaps (``max - min + 1``; the inputs swap if ``in2`` is larger).
    axes : int or non-empty sequence of int, optional
        Axes to convolve over (default: all).
    dtype : str or SplitDType, optional
        Scheme, as in :mod:`splitprec.fft`'s docstring.

    Returns
    -------
    float32 when both inputs are real, else complex64; of the inputs' kind (numpy, cupy, or their
    library through DLPack). Along
    one axis, a long input with a short one (at least twice the block) runs by overlap-save in
    power-of-two blocks of at least 2x the shorter length (:func:`_block_length`,
    :func:`_overlap_save`; on the GPU with one filter, cut and placed by the fused kernel with no
    host synchronisation). Otherwise the transforms run at lengths >= ``n1 + n2 - 1``: on the GPU
    powers of two up to 2^24 (the fused kernels), elsewhere lengths with no prime factor above 7;
    real inputs through ``rfft``/``irfft`` on the last convolved axis.

    Raises
    ------
    TypeError
        float64/complex128 inputs, integers float32 cannot hold.
    ValueError
        Unknown mode, different ndim, non-broadcasting batch axes, empty or repeated axes, 'valid'
        with neither input larger in every axis.

    Accuracy: normwise, within 2x scipy.signal.fftconvolve's float32 error (plus one float32
    rounding of ``||in1|| ||in2||`` where a few outputs are single dot products), checked by
    ``tests/test_fft.py::test_fftconvolve_error_within_twice_float32_fftconvolve`` and, for any
    lengths, ``test_fftconvolve_either_path_within_twice_scipy_float32``; at any scale (each input is
    scaled exactly by a power of two to a peak in ``[1/2, 1)`` first, the result back once, so only
    results beyond float32's range or in its subnormals differ from the unit-scale ones) by
    ``test_fftconvolve_of_any_scale_within_twice_float32_regression``. One tap per convolved axis is
    the product itself, as in scipy.

    Examples
    --------
    >>> import numpy as np, splitprec as sp
    >>> sp.fft.fftconvolve(np.float32([1, 2, 3, 4]), np.float32([1, 1]))
    array([1., 3., 5., 7., 4.], dtype=float32)
    """
    op = "fftconvolve"
    d = scheme(dtype, op)
    (in1, in2), back = read(op, in1=in1, in2=in2)
    real = not any(x.array.dtype.kind == "c" for x in (in1, in2))
    in1, in2 = (operand(x, op, real=real, name=name) for x, name in ((in1, "in1"), (in2, "in2")))
    return back(_convolve(in1, in2, mode, axes, real=real, d=d, op=op))


def _convolve(in1, in2, mode, axes, *, real, d, op):
    """:func:`fftconvolve` of checked numpy/cupy arrays."""
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
    cut = {}                                                           # axes the convolution kept already
    if all(1 in (in1.shape[ax], in2.shape[ax]) for ax in axes):   # one tap per axis: the product, as
        y = in1 * in2                                              # scipy (it convolves no such axis)
    else:
        (in1, e1), (in2, e2) = _unit_scaled(in1), _unit_scaled(in2)
        long, short = sorted((in1, in2), key=lambda x: -x.shape[axes[0]])   # along the first convolved axis
        if len(axes) == 1 and (block := _block_length(long.shape[axes[0]], short.shape[axes[0]])):
            ax = axes[0]
            y = _overlap_save(long, short, ax, block, (full[0] - keep[ax]) // 2, keep[ax], real=real, d=d)
            cut = {ax: keep[ax]}
        else:
            lengths = [_conv_length(n, d, xp) for n in full]
            product = _spectrum(in1, lengths, axes, real=real, d=d) * _spectrum(in2, lengths, axes, real=real, d=d)
            y = _inverse_spectrum(product, lengths, axes, real=real, d=d)
        y = _scaled(y, e1 + e2)
    whole = dict(enumerate(y.shape)) | dict(zip(axes, full)) | cut
    index = tuple(slice((whole[ax] - keep[ax]) // 2, (whole[ax] - keep[ax]) // 2 + keep[ax]) if ax in keep
                  else slice(None) for ax in range(y.ndim))
    return xp.ascontiguousarray(y[index])
