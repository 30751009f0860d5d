"""The rounding model of tracked operations: constants and the step that rounds a bound up.

Every elementwise result is a float32 (complex64) value correctly rounded from a real number ``r``
(the float32 operation itself, or a float64 evaluation rounded once), so ``|value - r| <= U|value|
+ ETA`` (``U = 2**-24``; ``ETA = 2**-150``, half the subnormal spacing; docs/tracking.md, "Rounding").
A bound is computed in float64 from non-negative terms by sums, products and quotients, at most
``ROUNDINGS`` roundings deep, each of relative error ``2**-53``; :func:`rounded_up` multiplies by
``UP``, which covers them, so that the stored float64 bound is never below the real one. Every
rounding step adds ``ETA``, so no bound of a rounded result is below ``2**-150`` and float64
products of two bounds (``>= 2**-300``) never underflow.

Inside the layer a NaN bound means "unknown" (from ``inf * 0`` and the like): NaN propagates
through every rule (sums, products, ``maximum``, comparisons that pick inf) and is read as inf
(``TrackedArray.error_bound``). A NaN or infinite value always has a NaN or infinite bound: inputs
are given one (:mod:`splitprec.tracking.inputs`), rounding terms ``U |value|`` are one, and the
products and FFTs set it (:func:`unknown_where_not_finite`).
"""
import numpy as np

from ..formats import widen

U = 2.0 ** -24                 # float32 round to nearest
ETA = 2.0 ** -150              # float32 subnormal rounding (absolute)
ROUNDINGS = 30
UP = 1 + 2.0 ** -48            # (1 + 2**-48)(1 - 2**-53) >= (1 + 2**-53)**ROUNDINGS
LIBM = 2.0 ** -46              # float64 exp, log, sin, cos, hypot: relative error (<= 64 ulp)
SQRT2 = 1.4142135623730951 * (1 + 2.0 ** -52)      # sqrt(2), rounded up


def magnitude(v, xp, out=None):
    """``|v|`` of a float32 or complex64 array as float64 (exact for float32; on the GPU widened
    bit by bit, since cupy's float32 casts flush subnormals); a new array, or ``out`` (``v``'s shape)."""
    if out is not None and v.dtype == np.float32 and xp is np:
        return np.absolute(v, out=out)                        # exact, widened as it is written
    if v.dtype == np.complex64:
        r = xp.abs(v.astype(np.complex128) if xp is np else widen(v.real.copy()) + 1j * widen(v.imag.copy()))
    else:
        r = v.astype(np.float64) if xp is np else widen(v)
        xp.abs(r, out=r)
    if out is None:
        return r
    out[...] = r
    return out


def rounding_error(value, xp, relative=U, out=None):
    """``relative * |value| + ETA`` (``SQRT2 * ETA`` for complex values): a bound on the rounding
    of ``value`` from the real result (module docstring); a new float64 array, or ``out``."""
    r = magnitude(value, xp, out)
    r *= relative
    r += ETA * SQRT2 if value.dtype == np.complex64 else ETA
    return r


def rounded_up(bound, xp):
    """``bound`` (float64, from at most ``ROUNDINGS`` roundings) times ``UP``."""
    return xp.multiply(bound, UP)


def unknown_where_not_finite(bound, value, xp):
    """``bound`` with NaN (unknown) where ``value`` is NaN or infinite (overflow, NaN inputs)."""
    finite = xp.isfinite(value)
    return bound if bool(finite.all()) else xp.where(finite, bound, np.nan)


def readable(bound, xp):
    """``bound`` as the caller reads it: a new array, unknown (NaN) entries as inf."""
    return xp.where(xp.isnan(bound), np.inf, bound)
