"""Split target-precision arrays into narrow parts (hi, mid, lo) and merge them back.

``split(x, dtype, axis=...)`` returns :class:`Parts`: the parts as float32 arrays whose values lie in
the scheme's base format, and for ``pow2`` schemes an int32 exponent per slice along ``axis`` (the
reduction axis of a matrix product: ``-1`` for A, ``-2`` for B; None: one for the whole array).
Then ``x ~= 2**exponent * sum_i parts[i] * 2**(-i*shift)``, to the scheme's ``split_error``. The
exponent puts the slice's largest finite magnitude into ``[2**s, 2**(s+1))``, ``s =
dtype.scale_exponent(k)`` with ``k`` the slice's length: up from the subnormal range, down from the
top of float32's, so that small values keep their lower parts and no product of two slices overflows.

Each part is the residual so far rounded to the base format; the residual ``r - part`` is exact in
float32, so the only loss is the last residual. A finite value whose top part would round past
the base format's range, or past float32's once the pow2 scale is undone, is split toward zero
instead: no finite input gives an infinite part or merges to infinity. NaN and ±inf go to the top part unchanged (lower
parts are 0), so the merged value is NaN/inf exactly where the input is.
"""
import functools
from dataclasses import dataclass

import numpy as np

from ._backend import namespace
from .dtypes import dtype as get_dtype
from .formats import FORMATS, narrow, round_to, widen

__all__ = ["FOLD_BELOW", "SPLIT_BLOCK", "Parts", "merge", "split", "split_held_in"]
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only

_FP32_MAX = FORMATS["fp32"].max


@dataclass(frozen=True)
class Parts:
    """The split of one array: ``terms`` (float32 parts) and ``exponent`` (int32 or None)."""

    terms: tuple
    exponent: object = None


FOLD_BELOW = 64     # slices along the last axis this short take their maximum by halving


def _slice_max(magnitude, axis, xp):
    """The largest of ``magnitude`` per slice along ``axis`` (keepdims; zero for empty slices).

    Slices along the last axis shorter than ``FOLD_BELOW`` are folded in halves, elementwise:
    numpy's reduction runs one short loop per slice there, several times slower."""
    length = magnitude.shape[axis]
    if not length:
        return xp.zeros_like(magnitude.sum(axis=axis, keepdims=True))
    if length >= FOLD_BELOW or axis not in (-1, magnitude.ndim - 1):
        return magnitude.max(axis=axis, keepdims=True)
    while magnitude.shape[-1] > 1:
        half = magnitude.shape[-1] // 2
        folded = xp.maximum(magnitude[..., :half], magnitude[..., half:2 * half])
        if magnitude.shape[-1] % 2:
            folded[..., :1] = xp.maximum(folded[..., :1], magnitude[..., -1:])
        magnitude = folded
    return magnitude


def _peak(residual, axis, xp):
    """The largest magnitude of each slice along ``axis`` (None: of the whole array), keepdims."""
    magnitude = xp.abs(residual)
    if axis is None:
        return magnitude.max(keepdims=True) if magnitude.size else xp.zeros((1,) * magnitude.ndim, magnitude.dtype)
    return _slice_max(magnitude, axis, xp)


def _pow2_exponent(peak, top):
    """Per-slice power of two that puts the slice's largest magnitude ``peak`` in [2**top, 2**(top+1))."""
    xp = namespace(peak)
    _, e = xp.frexp(peak)                                  # peak = f * 2**e, f in [0.5, 1)
    return xp.where(peak > 0, e - 1 - top, 0).astype(np.int32)


def split(x, dtype, *, axis=None):
    """Split float32 ``x`` into the parts of ``dtype``; ``axis`` is the slice of pow2 scaling.

    Every step is exact in float32 but the rounding of each part, so the residuals are held in
    float32 where float32 arithmetic keeps subnormals (numpy) and a residual scaled by
    ``2**(i*shift)`` stays in float32's range (pow2 scaling, or no shift), and as float32 values in
    float64 elsewhere (cupy flushes subnormals; see ``formats.widen``): the same bits either way.
    """
    d = get_dtype(dtype)
    xp = namespace(x)
    if x.dtype != np.float32:
        raise TypeError(f"split: x has dtype {x.dtype}; {d.name} splits float32 values")
    in_float32 = xp is np and (d.scaling == "pow2" or not d.shift)
    return split_held_in(x, d, axis, np.float32 if in_float32 else np.float64)


SPLIT_BLOCK = 1 << 16    # numpy: entries per block of the elementwise steps (their temporaries stay this small)


def split_held_in(x, d, axis, residual_dtype):
    """:func:`split` of float32 ``x`` in scheme ``d`` with the residuals held in ``residual_dtype``
    (float32 or float64: the same parts, bit for bit; float32 needs IEEE subnormals). On numpy the
    elementwise steps after the slices' exponents run in blocks along the leading axis (along the
    slice axis for a single slice, e.g. a vector), into the parts' own arrays: the same arithmetic,
    entry by entry, with temporaries of one block."""
    xp = namespace(x)
    held = residual_dtype == np.float64
    all_finite = bool(xp.isfinite(x).all())
    clean = x if all_finite else xp.where(xp.isfinite(x), x, np.float32(0))
    peak = _peak(widen(clean) if held else clean, axis, xp)
    del clean
    exponent = None
    if d.scaling == "pow2":
        exponent = _pow2_exponent(peak, d.scale_exponent(1 if axis is None else x.shape[axis]))
        if axis is None:
            exponent = exponent.reshape(())
        peak = xp.ldexp(peak, -exponent)           # exact: the scaled peak is a normal number
    # Values whose top part could round past the base format or, once unscaled, past float32 are
    # split toward zero: their parts then sum to at most |x|.
    fmt = d.format
    top = fmt.max if exponent is None else \
        xp.minimum(fmt.max, round_to(xp.ldexp(np.float64(_FP32_MAX), -exponent), fmt, "rz")).astype(residual_dtype)
    saturating = bool((peak > top).any())
    lean = xp is np and not held and all_finite and not saturating and _lean_format(d)
    if xp is not np or x.ndim == 0 or (x.size <= SPLIT_BLOCK and not lean):
        return Parts(tuple(_parts(x, all_finite, d, held, exponent, top, saturating)), exponent)
    split_axis = x.ndim - 1 if axis is None else axis % x.ndim
    along = 0 if split_axis and x.shape[0] > 1 else split_axis     # contiguous blocks where the slices allow
    terms = [np.empty(x.shape, np.float32) for _ in range(d.terms)]
    step = max(1, SPLIT_BLOCK * x.shape[along] // max(x.size, 1))
    scratch = np.empty(x[(slice(None),) * along + (slice(0, step),)].shape, np.float32) if lean else None
    for start in range(0, x.shape[along], step):
        block = (slice(None),) * along + (slice(start, start + step),)
        per_slice = [v if np.ndim(v) == 0 or v.shape[along] == 1 else v[block] for v in (exponent, top)]
        if lean:
            residual = scratch[(slice(None),) * along + (slice(0, min(step, x.shape[along] - start)),)]
            _lean_parts(x[block], d, per_slice[0], [term[block] for term in terms], residual)
            continue
        for term, part in zip(terms, _parts(x[block], all_finite, d, held, *per_slice, saturating)):
            term[block] = part
    return Parts(tuple(terms), exponent)


def _lean_format(d):
    """True where :func:`_lean_parts` gives ``d``'s parts: rounding to nearest even into a format
    narrower than float32 whose normal range starts within float32's (tf32, bf16, fp16)."""
    return d.rounding == "rne" and d.format.emin >= -126 and d.format.p < 24


def _lean_parts(x, d, exponent, terms, residual):
    """:func:`_parts` of finite float32 numpy ``x`` whose parts need no saturation, written into
    ``terms`` (float32 arrays of ``x``'s shape, as is the scratch array ``residual``), in about
    seven passes a part instead of twenty.

    The residual is kept scaled as the next part is stored, ``r_(i+1) = (r_i - part_i) 2**shift``:
    ``r_i - part_i`` is exact (the part is ``r_i`` rounded), and so is the power-of-two scaling
    in float32's range, which makes it the same value as the unscaled residual scaled up, bit for
    bit. Finite values below ``top`` round to at most ``top``, so no fix-up is needed."""
    if exponent is None:
        np.copyto(residual, x)
    else:
        np.ldexp(x, -exponent, out=residual)
    scale = np.float32(2.0 ** d.shift)
    for i, term in enumerate(terms):
        _round_lean(residual, d.format, term)
        if i + 1 < len(terms):
            residual -= term
            if d.shift:
                residual *= scale


def _parts(x, all_finite, d, held, exponent, top, saturating):
    """The parts of float32 ``x`` given its slices' ``exponent`` (broadcast along the slice axis) and
    saturation threshold ``top`` (:func:`split_held_in`), residuals float64 where ``held``."""
    xp = namespace(x)
    fmt = d.format
    finite = None if all_finite else xp.isfinite(x)
    residual = x if all_finite else xp.where(finite, x, np.float32(0))
    residual = widen(residual) if held else residual
    if exponent is not None:
        residual = round_to(xp.ldexp(residual, -exponent), "fp32") if held else xp.ldexp(residual, -exponent)
    saturated = xp.abs(residual) > top if saturating else None
    terms = []
    for i in range(d.terms):
        last = i + 1 == d.terms            # the residual is spent: its buffer takes the scaled copy
        scaled = xp.ldexp(residual, i * d.shift, out=residual if last and residual is not x else None) \
            if i * d.shift else residual
        part = round_to(scaled, fmt, d.rounding)
        if saturating:
            part = xp.where(saturated, round_to(scaled, fmt, "rz"), part)
        if i + 1 < d.terms:
            if residual is x:
                residual = residual.copy()
            residual -= xp.ldexp(part, -i * d.shift) if i * d.shift else part               # exact
        terms.append(narrow(part) if held else part)
    if not all_finite:
        terms[0] = xp.where(finite, terms[0], x)
    return terms


def merge(parts, dtype):
    """The float32 value of ``parts``: the parts summed exactly (in float64) and rounded once."""
    d = get_dtype(dtype)
    xp = namespace(parts.terms[0])
    total = xp.zeros(parts.terms[0].shape, np.float64)
    for i, part in reversed(list(enumerate(parts.terms))):
        total = total + xp.ldexp(widen(part), -i * d.shift)
    if parts.exponent is not None:
        total = xp.ldexp(total, parts.exponent)
    return narrow(total)


def _round_lean(x, fmt, out):
    """Finite float32 numpy ``x`` within ``fmt``'s range rounded to nearest even into ``out``
    (:func:`formats.round_to`'s bits): the significand cut to ``fmt.p`` bits on the bit pattern
    (every float32 value for tf32 and bf16, the normal range for fp16), and values below the
    normal range rounded to the subnormal quantum ``2**(emin - p + 1)`` by adding and subtracting
    ``1.5 * 2**(emin - p + 24)``, whose float32 quantum it is, with ``x``'s sign; several times
    faster than numpy's float16 conversion."""
    drop = 24 - fmt.p
    bits, rounded = x.view(np.uint32), out.view(np.uint32)
    np.right_shift(bits, np.uint32(drop), out=rounded)            # + half - 1 + the last kept bit
    rounded &= np.uint32(1)
    rounded += np.uint32((1 << (drop - 1)) - 1)
    rounded += bits
    rounded &= np.uint32((1 << 32) - (1 << drop))
    if fmt.emin == -126:
        return
    grid = np.float32(1.5 * 2.0 ** (fmt.emin - fmt.p + 24))
    subnormal = np.less(np.abs(x), np.float32(2.0 ** fmt.emin))
    fixed = x + grid
    fixed -= grid
    np.copysign(fixed, x, out=fixed)                               # -0 where x rounds to zero
    np.copyto(out, fixed, where=subnormal)
