"""Exact references: the correctly rounded float64 value of a matrix product and of a DFT.

``exact_matmul`` sums the products exactly with integer digits: every operand is cut into
``_DIGIT_BITS``-bit integer digits on a power-of-two grid per row of A and per column of B, each
pair of digit matrices is multiplied by a float64 BLAS matmul whose result is an integer below
2**53 (hence exact), the results are added into int64 digit accumulators, carries are propagated,
and the final sum is rounded once to float64 (round to nearest, ties to even). No order of
summation, cancellation or exponent span affects the result.

``exact_dft`` evaluates the DFT sum with the input as exact integers and twiddle factors computed
by mpmath in a local context at ``_DFT_BITS`` bits, summed in Python integers.
"""
import math

import mpmath
import numpy as np

from splitprec._backend import is_dask
from splitprec import interop
from splitprec.interop import unmasked

_DIGIT_BITS = 20                      # W: digit width; 2*W + log2(_K_BLOCK) <= 53 keeps digit products exact
_K_BLOCK = 2 ** (53 - 2 * _DIGIT_BITS)  # 8192: longest inner dimension one digit matmul may sum
_WINDOW_BITS = 3 * _DIGIT_BITS + 1     # 61 bits gathered for the final rounding (needs >= 55)
_DFT_BITS = 160                        # twiddle precision of exact_dft (>= 113 required)


def _significand_bits(dtype):
    return 24 if dtype == np.float32 else 53


def read_operands(a, b, op, default="float32"):
    """``a``, ``b`` as numpy arrays, read as ``splitprec.matmul`` reads its operands
    (:mod:`splitprec.interop`: lists, integers, bfloat16 and DLPack objects taken exactly, nothing
    rounded; a TypeError naming the operand otherwise), each in the target its dtype asks for
    (float32 or float64), data that asks for none (integers, Python numbers) in ``default``; dask
    arrays as they are."""
    if is_dask(a) or is_dask(b):
        return a, b
    read, _ = interop.read(op, a=a, b=b)
    return tuple(np.asarray(interop.exact(x, op, name, target=interop.target_of(x) or default))
                 for x, name in zip(read, "ab"))


def as_matrices(a, b, op):
    """``(a, b, row, column)``: the operands of a product as numpy arrays (masked arrays refused,
    dask arrays as they are), a 1-D ``a`` made a row and a 1-D ``b`` a column, as numpy's matmul
    takes them, and whether each was made so (:func:`vector_result` takes the axes out again).
    Inner dimensions of a vector that differ raise ValueError naming the shapes as given, not the
    promoted ones (``(1, 5)`` for a ``(5,)`` that the caller never wrote)."""
    a, b = (x if is_dask(x) else np.asarray(unmasked(x, op, name)) for x, name in ((a, "a"), (b, "b")))
    row, column = a.ndim == 1, b.ndim == 1
    if (row or column) and min(a.ndim, b.ndim) >= 1 and a.shape[-1] != b.shape[-1 if column else -2]:
        raise ValueError(f"{op}: inner dimensions differ: a has shape {a.shape}, b has shape {b.shape}")
    return (a[None, :] if row else a), (b[:, None] if column else b), row, column


def vector_result(c, row, column):
    """The product ``c`` of :func:`as_matrices`' operands without the axes added to 1-D ones."""
    c = c[..., 0] if column else c
    return c if not row else c[..., 0] if column else c[..., 0, :]


def _as_float(x, name, op):
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"{op}: {name} has dtype {x.dtype}; expected float16, float32 or float64")
    if x.ndim < 2:
        raise ValueError(f"{op}: {name} has shape {x.shape}; expected ndim >= 1")
    return x


def _grid(x, axis, p):
    """Per-slice exponent ``g`` (multiple of 2**0) with every value an integer multiple of 2**g,
    and the number of ``_DIGIT_BITS`` digits that cover the slice."""
    mag = np.abs(x)
    _, e = np.frexp(mag)                                     # mag < 2**e, bits at >= 2**(e - p)
    floor_bit = -1074 if p == 53 else -149
    low = np.where(mag > 0, e - p, np.iinfo(np.int32).max).min(axis=axis, keepdims=True)
    high = e.max(axis=axis, keepdims=True)
    g = np.maximum(np.where(low == np.iinfo(np.int32).max, 0, low), floor_bit)
    count = -(-(np.maximum(high - g, 1)) // _DIGIT_BITS)
    return g.astype(np.int64), int(count.max()) if count.size else 1


def _digits(x, g, count):
    """Signed integer digits ``d_c`` (float64) with ``x = sum_c d_c * 2**(g + c*W)``, exactly."""
    mag = np.abs(x).astype(np.float64)
    sign = np.sign(x).astype(np.float64)
    out = []
    for c in range(count):
        with np.errstate(over="ignore"):                      # 2**1024 and up: inf, as meant
            upper = np.ldexp(1.0, np.minimum(g + (c + 1) * _DIGIT_BITS, 1100).astype(np.int32))
        rem = np.fmod(mag, upper)                             # exact; fmod(x, inf) == x
        out.append(sign * np.floor(np.ldexp(rem, (-(g + c * _DIGIT_BITS)).astype(np.int32))))
    return out


def _normalize(acc):
    """Propagate carries so digits 0..S-2 lie in [0, 2**W); the top digit carries the sign."""
    mask = (1 << _DIGIT_BITS) - 1
    for s in range(len(acc) - 1):
        carry = acc[s] >> _DIGIT_BITS
        acc[s] &= mask
        acc[s + 1] += carry


def _round_digits(acc, base):
    """float64 of ``sum_s acc[s] * 2**(base + s*W)``, rounded once to nearest even."""
    _normalize(acc)
    negative = acc[-1] < 0
    acc = np.where(negative, -acc, acc)
    _normalize(acc)
    nonzero = acc != 0
    slots = len(acc)
    top = slots - 1 - np.argmax(nonzero[::-1], axis=0)
    padded = np.concatenate([np.zeros((4,) + acc.shape[1:], np.int64), acc])
    lower_nonzero = np.logical_or.accumulate(np.concatenate(
        [np.zeros((4,) + acc.shape[1:], bool), nonzero]), axis=0)
    pick = lambda arr, offset: np.take_along_axis(arr, (top + 4 - offset)[None], axis=0)[0]
    d0, d1, d2, d3 = (pick(padded, i) for i in range(4))
    _, bits = np.frexp(d0.astype(np.float64))
    bits = np.maximum(bits, 1)                                          # all-zero entries
    shift = (_WINDOW_BITS - 2 * _DIGIT_BITS - bits).astype(np.int64)     # in [1, W]
    window = ((d0 << 2 * _DIGIT_BITS) | (d1 << _DIGIT_BITS) | d2) << shift
    window |= d3 >> (_DIGIT_BITS - shift)
    sticky = ((d3 & ((1 << (_DIGIT_BITS - shift)) - 1)) != 0) | pick(lower_nonzero, 4)
    rounded = (window << 1) | sticky                                    # 62 bits, sticky last
    exponent = base + (top - 2) * _DIGIT_BITS - shift - 1
    value = np.ldexp(rounded.astype(np.float64), np.clip(exponent, -2000, 2000).astype(np.int32))
    value = np.where(exponent < -1074 - 9, _round_subnormal(rounded, exponent), value)
    value = np.where(nonzero.any(axis=0), value, 0.0)
    return np.where(negative, -value, value)


def _round_subnormal(rounded, exponent):
    """``rounded * 2**exponent`` rounded once on float64's subnormal grid ``2**-1074`` (RN-even),
    for 62-bit ``rounded`` whose 53-bit rounding would fall below that grid (no double rounding)."""
    s = np.clip(-1074 - exponent, 1, 63)
    q = rounded >> s
    rem = rounded - (q << s)
    half = np.int64(1) << (s - 1)
    up = (rem > half) | ((rem == half) & (q & 1 == 1))
    return np.ldexp((q + up).astype(np.float64), -1074)


def _exact_product(a, b, p):
    """Correctly rounded float64 ``a @ b`` for finite float arrays of ndim >= 2 (broadcast batch)."""
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    if a.shape[-1] == 0:
        return np.zeros(shape)
    ga, ca = _grid(a, -1, p)
    gb, cb = _grid(b, -2, p)
    acc = np.zeros((ca + cb + 3,) + shape, np.int64)
    for start in range(0, a.shape[-1], _K_BLOCK):
        da = _digits(a[..., start:start + _K_BLOCK], ga, ca)
        db = _digits(b[..., start:start + _K_BLOCK, :], gb, cb)
        for c, dc in enumerate(da):
            if not dc.any():
                continue
            for d, dd in enumerate(db):
                if dd.any():
                    acc[c + d] += np.matmul(dc, dd).astype(np.int64)
        _normalize(acc)
    return _round_digits(acc, np.broadcast_to(ga + gb, shape))


def _nonfinite_pattern(a, b):
    """float64 product of the signs of finite entries and the non-finite entries themselves."""
    fa, fb = np.isfinite(a), np.isfinite(b)
    if fa.all() and fb.all():
        return None
    with np.errstate(invalid="ignore"):                   # inf * 0 and inf - inf: NaN, as meant
        return np.matmul(np.where(fa, np.sign(a), a).astype(np.float64),
                         np.where(fb, np.sign(b), b).astype(np.float64))


def round_up(bound, terms):
    """Inflate a float64 sum of ``terms`` non-negative float64 roundings into an upper bound: the
    factor covers them and this product's own rounding (two more units of 2**-52), the added
    2**-1074 a subnormal product's."""
    return bound * (1 + (terms + 10) * 2.0 ** -52) + 2.0 ** -1074


def infinite_where_unbounded(bound, overflow, a, b):
    """``bound`` with inf where ``overflow`` marks a possible overflow and where the exact product of
    ``a`` and ``b`` is NaN/inf (that pattern is checked apart, exactly)."""
    pattern = _nonfinite_pattern(a, b)
    return np.where(overflow if pattern is None else overflow | ~np.isfinite(pattern), np.inf, bound)


def exact_matmul(a, b):
    """The exact product ``a @ b``, correctly rounded to float64.

    Parameters
    ----------
    a, b : array_like, float16, float32 or float64, ndim >= 1
        Operands ``(..., m, k)`` and ``(..., k, n)``; batch dimensions broadcast, and a 1-D operand
        is a row (``a``) or a column (``b``) whose axis leaves the result, as in ``numpy.matmul``.

    Returns
    -------
    numpy.ndarray of float64, shape ``(..., m, n)`` (numpy's for 1-D operands): each entry is the exact sum of the exact
    products rounded once to nearest (ties to even). Where the float64 product of the inputs is
    NaN or infinite because an input is, the result holds that NaN/inf (``inf * 0`` is NaN).
    For float64 inputs an exact result beyond float64's range becomes inf, and one in float64's
    subnormal range is rounded once on the subnormal grid.

    Raises
    ------
    TypeError
        Inputs that are not float16/32/64.
    ValueError
        0-d inputs, inner dimensions that differ, batch dimensions that do not broadcast.

    Accuracy: exact up to the final rounding; checked against ``math.fsum`` and
    ``fractions.Fraction`` by ``tests/test_reference.py``.

    Examples
    --------
    >>> import numpy as np
    >>> exact_matmul(np.float32([[1e8, 1, -1e8]]), np.float32([[1], [1], [1]]))
    array([[1.]])
    """
    a, b, row, column = as_matrices(a, b, "exact_matmul")
    return vector_result(_exact_matmul(_as_float(a, "a", "exact_matmul"), _as_float(b, "b", "exact_matmul")),
                         row, column)


def _exact_matmul(a, b):
    """:func:`exact_matmul` of float32/float64 arrays of ndim >= 2."""
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"exact_matmul: inner dimensions differ: a has shape {a.shape}, "
                         f"b has shape {b.shape}")
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"exact_matmul: batch dimensions do not broadcast: a has shape {a.shape}, "
                         f"b has shape {b.shape}") from None
    p = max(_significand_bits(a.dtype), _significand_bits(b.dtype))
    clean_a = np.where(np.isfinite(a), a, 0).astype(np.float64)
    clean_b = np.where(np.isfinite(b), b, 0).astype(np.float64)
    c = _exact_product(clean_a, clean_b, p)
    pattern = _nonfinite_pattern(a, b)
    return c if pattern is None else np.where(np.isfinite(pattern), c, pattern)


def _twiddles(n, bits):
    """Integers ``round(2**bits * exp(-2j*pi*t/n))`` for t < n, as (cos, sin) lists (mpmath)."""
    ctx = mpmath.MPContext()
    ctx.prec = bits + 20
    scale = ctx.ldexp(1, bits)
    cos = [int(ctx.nint(ctx.cospi(ctx.mpf(2 * t) / n) * scale)) for t in range(n)]
    sin = [int(ctx.nint(-ctx.sinpi(ctx.mpf(2 * t) / n) * scale)) for t in range(n)]
    return cos, sin


def _integers(x):
    """Python-int numerators ``N`` and a common exponent ``g`` with ``x = N * 2**g`` exactly."""
    x = np.asarray(x, np.float64)
    _, e = np.frexp(np.abs(x))
    nz = x != 0
    g = int(max((e[nz] - 53).min(), -1074)) if nz.any() else 0
    return [int(v) for v in np.ldexp(x, -g)] if x.size else [], g


def exact_dft(x):
    """The DFT ``X[f] = sum_t x[t] exp(-2j*pi*f*t/N)`` of a 1-D signal to ~``_DFT_BITS`` bits.

    Parameters
    ----------
    x : array_like, real or complex (float16/32/64, complex64/128), ndim 1, length N >= 1

    Returns
    -------
    numpy.ndarray of complex128: each part is the float64 nearest to a sum whose only error is the
    rounding of the twiddle factors to 160 bits (absolute ``<= N * 2**-160 * sum|x|``).

    Raises
    ------
    ValueError
        ``x`` not 1-D, empty, or holding NaN/inf.
    TypeError
        Integer or other non-float input.

    Accuracy: O(N**2) Python-integer operations; checked against numpy's complex128 FFT and
    exact small cases by ``tests/test_reference.py``. For N beyond a few thousand, compare with
    ``numpy.fft.fft`` of the complex128 input (relative error ~1e-16 * log2 N) instead.

    Examples
    --------
    >>> exact_dft([1.0, 0.0, 0.0, 0.0])
    array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    x = np.asarray(unmasked(x, "exact_dft", "x"))
    if x.dtype.kind not in "fc":
        raise TypeError(f"exact_dft: x has dtype {x.dtype}; expected a real or complex float array")
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"exact_dft: x has shape {x.shape}; expected a non-empty 1-D signal")
    if not np.isfinite(x).all():
        raise ValueError("exact_dft: x holds NaN or inf; expected finite values")
    n = x.size
    re, g_re = _integers(x.real.astype(np.float64))
    im, g_im = _integers(np.imag(x).astype(np.float64))
    g = min(g_re, g_im)
    re = [v << (g_re - g) for v in re]
    im = [v << (g_im - g) for v in im]
    cos, sin = _twiddles(n, _DFT_BITS)
    out = np.empty(n, np.complex128)
    for f in range(n):
        sr = si = 0
        for t in range(n):
            w = (f * t) % n
            sr += re[t] * cos[w] - im[t] * sin[w]
            si += re[t] * sin[w] + im[t] * cos[w]
        out[f] = complex(_ldexp_int(sr, g - _DFT_BITS), _ldexp_int(si, g - _DFT_BITS))
    return out


def _ldexp_int(n, e):
    """``n * 2**e`` for a Python int ``n``, rounded once to float64."""
    if n == 0:
        return 0.0
    if e >= 0:
        return float(n << e)
    return n / (1 << -e) if -e < 2000 else math.ldexp(n / (1 << 1000), e + 1000)
