"""The output limit of a transform: no exact DFT output exceeds the sum of its inputs' moduli.

A DFT output is a sum of the inputs times unit roots, so each component of each output has a
magnitude of at most ``sum_j |x_j|`` (:func:`modulus_sum`, of the full Hermitian spectrum for
the real inverse). :func:`limit` rounds that bound up to float32, and to float32's largest value
where the bound rounds to a finite float32 (no exact output can then be ±inf); :func:`saturated`
sets each larger component, ±inf included, to the limit with its sign. A result limited so moves
only toward the exact one, so every error bound still holds, and a result a few roundings above
an exact one at the top of the range (Bluestein's chirps, a part rounded up to the next binade)
is never ±inf where the exact transform is finite. Both engines and the n-D transforms use it.
"""
import numpy as np

from .._backend import namespace
from ..formats import narrow, widen

FP32_MAX = float(np.finfo(np.float32).max)
FP32_OVERFLOW = 2.0 ** 128 - 2.0 ** 103    # the least magnitude that rounds to ±inf in float32
_SIGN, _MAGNITUDE, _INF_BITS = np.uint32(0x80000000), np.uint32(0x7FFFFFFF), np.uint32(0x7F800000)


def moduli(x):
    """float64 ``|x|`` of float32 or complex64 ``x``, from the exactly widened components (the
    hypot rounded once, to float64)."""
    xp = namespace(x)
    if x.dtype == np.complex64:
        return xp.hypot(widen(xp.ascontiguousarray(x.real)), widen(xp.ascontiguousarray(x.imag)))
    return xp.abs(widen(xp.ascontiguousarray(x)))


def modulus_sum(x, axes=(-1,), *, hermitian=False):
    """float64, ``axes`` kept as length 1: ``sum |x_j|`` of float32 or complex64 ``x`` over ``axes``,
    an upper bound (the float64 sum's rounding covered). ``hermitian``: ``x`` is the first half
    of a Hermitian spectrum of even length along the last axis, ``X_0`` and ``X_m`` counted once
    with their imaginary parts ignored, the others twice."""
    magnitude = moduli(x)
    total = magnitude.sum(axis=axes, keepdims=True)
    if hermitian:
        ends = moduli(x.real[..., ::x.shape[-1] - 1]).sum(axis=-1, keepdims=True)
        total = 2 * total - 2 * (magnitude[..., :1] + magnitude[..., -1:]) + ends
    count = int(np.prod([x.shape[a] for a in axes])) if x.ndim else 1
    return total * (1 + (count + 8) * 2.0 ** -50)           # hypot's and the sum's roundings


def limit(bound, exponent=0):
    """float32: ``bound`` (float64) rounded up, at the scale ``2**-exponent`` (``exponent``: an int or
    an int array that broadcasts with ``bound``); float32's largest value there where ``bound *
    2**exponent`` rounds to a finite float32; +inf where ``bound`` is not finite."""
    xp = namespace(bound)
    finite = bound < xp.ldexp(xp.asarray(FP32_OVERFLOW), -exponent)      # on the device of bound
    bound = xp.where(finite, xp.minimum(bound, xp.ldexp(xp.asarray(FP32_MAX), -exponent)), bound)
    rounded = narrow(bound)
    with np.errstate(over="ignore"):                     # FLT_MAX rounded up is +inf
        rounded = xp.where(widen(rounded) < bound, xp.nextafter(rounded, np.float32(np.inf)), rounded)
    return xp.where(xp.isfinite(bound), rounded, np.float32(np.inf))


def saturated(y, ceiling):
    """float32 or complex64 ``y`` with each component of magnitude above ``ceiling`` (float32, which
    broadcasts with ``y``), ±inf included, set to ``ceiling`` with its sign; NaN stays. Compared as
    bits, which no device flushes."""
    xp = namespace(y)
    pairs = y.dtype == np.complex64
    y = xp.ascontiguousarray(y)
    bits = y.view(np.float32).view(np.uint32)
    if pairs:
        bits, ceiling = bits.reshape(y.shape + (2,)), ceiling[..., None]
    top = ceiling.view(np.uint32)
    magnitude = bits & _MAGNITUDE
    limited = xp.where((magnitude > top) & (magnitude <= _INF_BITS), (bits & _SIGN) | top, bits)
    flat = y.shape[:-1] + (y.shape[-1] * (2 if pairs else 1),)
    return limited.view(np.float32).reshape(flat).view(y.dtype)
