"""Narrow floating-point formats and rounding to them, by bit manipulation on numpy or cupy arrays.

A format is a record of its significand bits ``p`` (the implicit bit included), exponent range and
overflow behaviour. :func:`round_to` rounds float32 or float64 arrays to a format and returns the
rounded values in the input's dtype (every value of the narrow formats is exact in float32).

Rounding modes: ``"rne"`` round to nearest, ties to even (IEEE default, ``cvt.rn``), ``"rna"``
round to nearest, ties away from zero (``cvt.rna.tf32.f32``), ``"rz"`` toward zero (``cvt.rz``).
Overflow follows IEEE 754: the nearest modes give ±inf (NaN for fp8 e4m3, which has no inf),
``"rz"`` gives the largest finite value; ``saturate=True`` clamps every mode to the finite range
(``cvt...satfinite``). Subnormals of the target are produced exactly; NaN and ±inf pass through.
"""
import functools
from dataclasses import dataclass

import numpy as np

from ._backend import namespace

__all__ = ["FORMATS", "Format", "ROUNDINGS", "get_format", "is_representable", "narrow", "round_to", "widen"]
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only

ROUNDINGS = ("rne", "rna", "rz")


@dataclass(frozen=True)
class Format:
    """A binary floating-point format: ``p`` significand bits, normal exponents ``emin..emax``."""

    name: str
    p: int          # significand bits, implicit bit included
    emin: int       # exponent of the smallest normal number
    emax: int       # exponent of the largest finite number
    max: float      # largest finite value
    has_inf: bool   # False: overflow gives NaN (fp8 e4m3)

    @property
    def eps(self):
        """Spacing of numbers in [1, 2): 2**(1-p)."""
        return 2.0 ** (1 - self.p)

    @property
    def unit_roundoff(self):
        """Relative error bound of round-to-nearest in the normal range: 2**-p."""
        return 2.0 ** -self.p

    @property
    def tiny(self):
        """Smallest positive normal number."""
        return 2.0 ** self.emin

    @property
    def smallest_subnormal(self):
        return 2.0 ** (self.emin - self.p + 1)


def _ieee(name, p, ebits):
    emax = 2 ** (ebits - 1) - 1
    return Format(name, p, 1 - emax, emax, (2 - 2.0 ** (1 - p)) * 2.0 ** emax, True)


FORMATS = {f.name: f for f in (
    _ieee("fp32", 24, 8),
    _ieee("tf32", 11, 8),
    _ieee("bf16", 8, 8),
    _ieee("fp16", 11, 5),
    Format("fp8_e4m3", 4, -6, 8, 448.0, False),
    _ieee("fp8_e5m2", 3, 5),
)}


def get_format(name):
    """The :class:`Format` called ``name``; ValueError listing the known names otherwise."""
    if isinstance(name, Format):
        return name
    try:
        return FORMATS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown format {name!r}; expected one of "
                         f"{', '.join(map(repr, sorted(FORMATS)))}") from None


def _check_input(x, rounding):
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"round_to: x has dtype {x.dtype}; expected float32 or float64")
    if rounding not in ROUNDINGS:
        raise ValueError(f"round_to: unknown rounding {rounding!r}; expected one of "
                         f"{', '.join(map(repr, ROUNDINGS))}")


def _round_significand(sig, d, rounding, xp):
    """Round the integers ``sig`` to multiples of 2**d and return the quotient (``d >= 0``)."""
    d = xp.minimum(d, 62).astype(np.uint64)
    one = np.uint64(1)
    q = sig >> d
    rem = sig - (q << d)
    half = (one << d) >> one
    if rounding == "rz":
        return q
    up = rem > half
    tie = (rem == half) & (d > 0)
    up |= tie & ((q & one) == one) if rounding == "rne" else tie
    return q + up.astype(np.uint64)


def widen(x):
    """float32 -> float64, exactly, by bit manipulation.

    A float cast would flush subnormals to zero where the device does: CuPy compiles every kernel
    with ``-ftz=true``, which flushes float32 subnormal operands and results (float64 is unaffected).
    """
    xp = namespace(x)
    bits = x.view(np.uint32).astype(np.uint64)
    biased = (bits >> np.uint64(23)) & np.uint64(0xFF)
    exponent = xp.where(biased == 0xFF, np.uint64(0x7FF), biased + np.uint64(1023 - 127))
    normal = ((bits >> np.uint64(31)) << np.uint64(63)) | (exponent << np.uint64(52)) | \
        ((bits & np.uint64(0x7FFFFF)) << np.uint64(29))
    tiny = xp.ldexp((bits & np.uint64(0x7FFFFF)).astype(np.float64), -149)   # zero or subnormal
    tiny = xp.where(bits >> np.uint64(31) == 1, -tiny, tiny)
    return xp.where(biased == 0, tiny, normal.view(np.float64))


def narrow(x):
    """float64 -> float32 rounded to nearest even once, by bit manipulation (see :func:`widen`)."""
    xp = namespace(x)
    exact = round_to(x, "fp32")                                   # float64 values of float32
    bits = exact.view(np.uint64)
    sign = (bits >> np.uint64(63)) << np.uint64(31)
    biased = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    fraction = (bits & np.uint64((1 << 52) - 1)) >> np.uint64(29)
    nan_bit = xp.where((biased == 0x7FF) & (fraction == 0) & xp.isnan(exact), np.uint64(1 << 22), np.uint64(0))
    exponent = xp.where(biased == 0x7FF, 0xFF, xp.maximum(biased - (1023 - 127), 0)).astype(np.uint64)
    normal = sign | (exponent << np.uint64(23)) | fraction | nan_bit
    small = biased < 1023 - 126                                   # zero or float32-subnormal
    tiny = sign | xp.ldexp(xp.where(small, xp.abs(exact), 0), 149).astype(np.uint64)   # < 2**23
    return xp.where(small, tiny, normal).astype(np.uint32).view(np.float32)


def _round_float32(x, fmt, rounding, saturate, xp):
    """:func:`round_to` of float32 ``x`` by integer operations on its bits alone (no float
    arithmetic, so a device that flushes float32 subnormals gives the same bits), for formats whose
    normal range starts at or above float32's (``emin >= -126``) and ``p <= 24``.

    The target's quantum at ``x`` is ``2**drop`` float32 quanta, ``drop = 24 - p + max(emin - e, 0)``
    with ``e`` the exponent of ``x`` (-126 for float32 subnormals): ``24 - p`` for every ``x`` when
    ``emin = -126`` (tf32, bf16). While ``drop <= 23`` that quantum is a power of two of the bit
    pattern itself, so rounding the pattern rounds the value, and a carry into the exponent field
    gives the next binade; ``drop >= 24`` (a narrower exponent range, far below it) leaves 0 or
    the quantum ``2**(e+1)``.
    """
    bits = x.view(np.uint32)
    infinity, top, sign_bit = np.uint32(0x7F800000), np.float32(fmt.max).view(np.uint32), np.uint32(0x80000000)
    if fmt.emin == -126 and fmt.p >= 2:
        # The sign bit rides along: no finite value's rounding carries past the exponent field.
        rounded = _round_pattern(bits, 24 - fmt.p, rounding)
        past_top_is_inf = fmt.has_inf and int(top) + (1 << (24 - fmt.p)) == int(infinity)
    else:
        # Every step writes in place where it can: a split of fp16 parts holds a few of these
        # arrays at once, and the CPU engine's memory is the sum of them.
        magnitude = bits & np.uint32(0x7FFFFFFF)
        biased = magnitude >> np.uint32(23)
        drop = biased.astype(np.int32)                                    # e + 127, in place below
        xp.maximum(drop, 1, out=drop)
        xp.subtract(fmt.emin + 127, drop, out=drop)
        xp.maximum(drop, 0, out=drop)
        drop += 24 - fmt.p
        far = drop >= 24
        up = (drop == 24) & (biased > 0) & (rounding != "rz")
        if rounding == "rne":
            up &= (magnitude & np.uint32(0x7FFFFF)) != 0                 # above half the quantum
        del biased
        xp.minimum(drop, 23, out=drop)
        rounded = _round_pattern(magnitude, drop.view(np.uint32), rounding)
        del drop
        binade = magnitude >> np.uint32(23)                               # the next binade's pattern
        binade += np.uint32(1)
        binade <<= np.uint32(23)
        binade *= up
        xp.copyto(rounded, binade, where=far)
        del binade, far, up
        rounded |= bits & sign_bit
        past_top_is_inf = False
    # Fix-ups are masked copies, which write only where the mask holds (numpy's where costs a
    # nanosecond an element even for an empty mask), and are left out where rounding itself
    # lands on the right pattern: past the largest value comes inf's (tf32, bf16, fp32).
    if saturate or rounding == "rz":
        overflow = top
    else:
        overflow = np.float32(np.inf if fmt.has_inf else np.nan).view(np.uint32)
    if not past_top_is_inf or (saturate and rounding != "rz"):
        xp.copyto(rounded, (rounded & sign_bit) | overflow, where=(rounded & np.uint32(0x7FFFFFFF)) > top)
    if not fmt.has_inf or saturate:
        magnitude = bits & np.uint32(0x7FFFFFFF)
        xp.copyto(rounded, (bits & sign_bit) | top if saturate else np.float32(np.nan).view(np.uint32),
                  where=magnitude == infinity)
        xp.copyto(rounded, bits, where=magnitude > infinity)
    else:
        xp.copyto(rounded, bits, where=(bits & infinity) == infinity)
    return rounded.view(np.float32)


def _round_float32_to_fp16(x):
    """:func:`round_to` of float32 numpy ``x`` to fp16, ties to even, unsaturated: numpy's IEEE
    conversion (the same bits as :func:`_round_float32`, in two passes instead of a dozen), with
    NaN inputs kept bit for bit as the bit-level rounding keeps them."""
    with np.errstate(over="ignore"):              # past fp16's range: inf, as the rounding says
        rounded = x.astype(np.float16).astype(np.float32)
    np.copyto(rounded, x, where=np.isnan(x))
    return rounded


def _round_pattern(magnitude, drop, rounding):
    """The float32 magnitude bit patterns ``magnitude`` rounded to multiples of ``2**drop`` float32
    quanta (``drop``: an int ``<= 22``, or a uint32 array of ``magnitude``'s shape ``<= 23``): RN-even
    adds ``half - 1`` and the last kept bit, RN-away ``half``, and the dropped bits are cleared."""
    one = np.uint32(1)
    if not isinstance(drop, int):
        if rounding == "rz":
            rounded = magnitude >> drop
        else:
            carry = one << drop
            carry >>= one                                                 # half the quantum
            if rounding == "rne":      # plus the last kept bit (at drop = 23, the implicit bit), less one
                kept = magnitude >> drop
                kept &= one
                kept |= (drop == 23) & (magnitude >= np.uint32(0x800000))
                some = drop > 0
                kept &= some
                carry += kept
                del kept                                                  # held arrays: memory
                carry -= some
            rounded = carry
            rounded += magnitude
            rounded >>= drop
        rounded <<= drop
        return rounded
    if drop == 0:
        return magnitude.copy()
    half, mask = np.uint32(1 << (drop - 1)), np.uint32((1 << 32) - (1 << drop))
    if rounding == "rz":
        return magnitude & mask
    if rounding == "rna":
        rounded = magnitude + half
    else:
        rounded = magnitude >> np.uint32(drop)
        rounded &= one
        rounded += half - one
        rounded += magnitude
    rounded &= mask
    return rounded


def round_to(x, fmt, rounding="rne", *, saturate=False):
    """Round ``x`` (float32 or float64, numpy or cupy) to ``fmt``; the result keeps ``x``'s dtype.

    The value is rounded once, directly from ``x`` (no double rounding through float32), and
    float32 subnormals are kept on every device (see :func:`widen`).
    """
    fmt = get_format(fmt)
    xp = namespace(x)
    x = xp.asarray(x)
    _check_input(x, rounding)
    if x.dtype == np.float32 and fmt.emin >= -126 and fmt.p <= 24:
        if xp is np and fmt.name == "fp16" and rounding == "rne" and not saturate:
            return _round_float32_to_fp16(x)
        return _round_float32(x, fmt, rounding, saturate, xp)
    wide = widen(x) if x.dtype == np.float32 else x
    bits = wide.view(np.uint64)
    negative = (bits >> np.uint64(63)) == 1
    biased = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    fraction = xp.where(biased == 0x7FF, np.uint64(0), bits & np.uint64((1 << 52) - 1))
    biased = xp.where(biased == 0x7FF, 0, biased)                 # non-finite: patched in at the end
    exponent = xp.maximum(biased, 1) - 1023                      # float64 subnormals: exponent -1022
    sig = fraction | ((biased > 0).astype(np.uint64) << np.uint64(52))
    # The target's quantum is 2**(max(exponent, emin) - p + 1); float64's is 2**(exponent - 52).
    drop = 52 - (fmt.p - 1) + xp.maximum(fmt.emin - exponent, 0)
    q = _round_significand(sig, drop, rounding, xp)
    magnitude = xp.ldexp(q.astype(np.float64), (exponent - 52 + drop).astype(np.int32))
    if saturate or rounding == "rz":
        overflow_value = fmt.max
    else:
        overflow_value = np.inf if fmt.has_inf else np.nan
    magnitude = xp.where(magnitude > fmt.max, overflow_value, magnitude)
    rounded = xp.where(negative, -magnitude, magnitude)
    rounded = xp.where(xp.isfinite(wide), rounded, wide)
    if not fmt.has_inf:
        rounded = xp.where(xp.isinf(wide), fmt.max * xp.sign(wide) if saturate else np.nan, rounded)
    elif saturate:
        rounded = xp.where(xp.isinf(wide), xp.sign(wide) * fmt.max, rounded)
    return narrow(rounded) if x.dtype == np.float32 else rounded


def is_representable(x, fmt):
    """True where ``x`` is exactly a value of ``fmt`` (NaN counts as representable)."""
    xp = namespace(x)
    r = round_to(x, fmt, "rz", saturate=False)
    return (r == x) | xp.isnan(x) | (xp.isinf(x) & get_format(fmt).has_inf)
