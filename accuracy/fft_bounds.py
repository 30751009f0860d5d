"""Normwise error bounds of ``splitprec.fft``: ``fft_bound`` and ``rfft_bound``.

Each pass of radix ``r`` is a ``k = 2r`` split product bounded as in :mod:`accuracy.bounds` (the
same accumulation model), plus the float64-derived twiddles and, since every transform scales each
line by a power of two, that scaling and the norm factor (docs/bounds.md, "FFT", "Power-of-two
line scaling"; section 13 for ``kind="probabilistic"``).
"""
import functools
import math

import numpy as np
from splitprec.interop import unmasked

from . import probabilistic
from .bounds import ENGINES, ETA32, FP32_MAX, U32, _accumulation, _round_up, _scheme, check_k_block, gamma

_TWIDDLE64 = 2.0 ** -48     # |fl64(cos/sin(-2 pi t / n)) - exact| (angle and libm rounding)
_ODD_RADICES = (9, 7, 5, 3)
_STEP, _TWO_STEPS_MAX = 4096, 2 ** 24    # longest transform of one step; longest in steps
_NESTED_FROM = 2 ** 23                     # powers of two from here on: n1 = 256, n2 in two steps


def fft_radices(n):
    """Radices of splitprec.fft's passes for length ``n``, in the order they run; None: Bluestein.

    Stockham passes take the largest radices first (powers of two: 16s, a 16 and a 2 or 4 left as
    8, 4 or 8, 8); ``4096 < n <= 2**24`` runs two steps where
    :func:`fft_two_steps` splits it, ``n1 = n / n2`` then ``n2``, each by its own passes, the
    twiddles ``exp(-2 pi i c k1 / n)`` between them (section "FFT", two steps).
    """
    radices, rest = [], n
    for r in _ODD_RADICES:
        while rest % r == 0:
            radices.append(r)
            rest //= r
    twos = 0
    while rest % 2 == 0:
        twos, rest = twos + 1, rest // 2
    power = [16] * (twos // 4) + ([2 ** (twos % 4)] if twos % 4 else [])
    if twos >= 4 and twos % 4 in (1, 2):       # a 16 and a 2 or 4 run as 8, 4 or 8, 8
        power = power[:-2] + [8, 2 ** (twos % 4 + 1)]
    radices += power
    if rest != 1:
        return None
    steps = fft_two_steps(n)
    return sorted(radices, reverse=True) if steps is None else fft_radices(steps[0]) + fft_radices(steps[1])


def fft_two_steps(n):
    """``(n1, n2)`` of a length ``4096 < n <= 2**24`` with no prime factor above 7 run in two steps,
    else None. A power of two: from 2**23 on ``n1 = 256`` (``n2`` itself two steps), below the largest
    ``n2 <= min(1024, sqrt(n))`` with ``n1 <= 4096`` and neither length ``2 * 16**j``. Others: both at
    most 4096, ``n2`` nearest 256 (None if no such split: one plan)."""
    if not _STEP < n <= _TWO_STEPS_MAX:
        return None
    if n & (n - 1) == 0:
        if n >= _NESTED_FROM:
            return 256, n // 256
        fits = [n2 for n2 in (2 ** e for e in range(1, 11)) if n2 * n2 <= n and n // n2 <= _STEP
                and all(np.log2(m) % 4 != 1 for m in (n2, n // n2))]
        return n // max(fits), max(fits)
    splits = sorted((abs(np.log2(n2 / 256)), n2) for n2 in range(2, _STEP + 1) if n % n2 == 0 and n // n2 <= _STEP)
    return (n // splits[0][1], splits[0][1]) if splits else None


@functools.lru_cache(maxsize=None)
def _dft_block_norm(r):
    """``|| |D| ||_2`` of the float32-rounded real 2r x 2r DFT block, rounded up."""
    angle = -2 * np.pi * (np.outer(np.arange(r), np.arange(r)) % r) / r
    c = np.abs(np.cos(angle).astype(np.float32)).astype(np.float64)
    s = np.abs(np.sin(angle).astype(np.float32)).astype(np.float64)
    return float(np.linalg.norm(np.block([[c, s], [s, c]]), 2)) * (1 + 2.0 ** -40)


def _root_error():
    """Relative error of ``w_hat = fl32(fl64(w))`` for a root of unity ``w``: the float32 rounding
    and twice ``_TWIDDLE64`` (both parts)."""
    return U32 + 2 * _TWIDDLE64


def _product_error():
    """Relative error of one complex64 product, ``sqrt(2) * gamma_2`` (Higham §3.6, Lemma 3.5)."""
    return math.sqrt(2) * gamma(2)


def _twiddle_error():
    """Relative error of ``fl32(w_hat * z)`` against ``w * z`` for ``|w| = 1`` (Higham §3.6)."""
    e_w = _root_error()
    return e_w + (1 + e_w) * _product_error()


def _fft_pass(d, r, n, engine, k_block, lam):
    """``(eta, absolute)`` of one radix-``r`` pass of a length-``n`` transform (section "FFT pass"):
    on the GPU, whose fused kernel leaves tf32 and bf16 sub-vectors unscaled, the larger of the
    scaled and the unscaled sub-vector models; ``lam`` as in :func:`_accumulation`."""
    if engine == "gpu" and d.base != "fp16":
        scaled = _fft_pass_model(d, r, n, engine, k_block, True, lam)
        unscaled = _fft_pass_model(d, r, n, engine, k_block, False, lam)
        return max(scaled[0], unscaled[0]), max(scaled[1], unscaled[1])
    return _fft_pass_model(d, r, n, engine, k_block, d.scaling == "pow2", lam)


def _fft_pass_model(d, r, n, engine, k_block, pow2, lam):
    """``(eta, absolute)`` of one pass whose sub-vectors are split with (``pow2``) or without scaling."""
    u, s, t = d.part_bound, d.split_error, d.terms
    fmt = d.format
    taken = set(d.products)
    pi = [(1 + u) * u ** p for p in range(t)]
    g_big, g_small, acc_abs = _accumulation(d, 2 * r, engine, k_block, k_block, lam)
    g = max(g_big, g_small)
    weight = {(p, q): (g if (p, q) in taken else 1.0) for p in range(t) for q in range(t)}
    rel = 2 * s + s * s + sum(pi[p] * pi[q] * w for (p, q), w in weight.items() if (p, q) not in taken)
    rel += g * sum(pi[p] * pi[q] for p, q in taken)
    norm_d = _dft_block_norm(r)
    eta_t = d.underflow_error
    eta_b = fmt.smallest_subnormal / 2
    sum_pi = sum(pi[p] * w for (p, q), w in weight.items())
    sum_one = sum(weight.values())
    f = 2.0 ** -d.scale_exponent(2 * r) if pow2 else 1.0   # sigma <= f * (row or column max)
    b = (eta_t + (ETA32 if pow2 else 0.0)) * f
    alpha = b * (1 + s) + 2 * eta_b * f * sum_pi
    beta = b * b + 4 * eta_b * eta_b * f * f * sum_one + acc_abs * f * f
    mm = ((rel + U32) * norm_d + 4 * _TWIDDLE64 * r + 2 * r * alpha) / math.sqrt(r)
    if pow2:
        mm += (norm_d * math.sqrt(2) * alpha + 2 * r * math.sqrt(2 * r) * beta) / math.sqrt(r)
        absolute = math.sqrt(2 * n) * ETA32
    else:
        absolute = (norm_d * alpha + 2 * r * beta) * math.sqrt(2 * n)
    return mm, absolute


def _stockham_bound(d, radices, engine, k_block, lam):
    """``(rel, absolute)`` of the Stockham transform with these radices (section "FFT"); a pure
    function of its arguments, computed once per transform (every line of a batch shares it)."""
    return _stockham_model(d, tuple(radices), engine, k_block, lam)


@functools.lru_cache(maxsize=256)
def _stockham_model(d, radices, engine, k_block, lam):
    n = int(np.prod(radices))
    rel, absolute, twiddle = 0.0, 0.0, _twiddle_error()
    for i, r in enumerate(radices):
        mm, a = _fft_pass(d, r, n, engine, k_block, lam)
        last = i == len(radices) - 1
        eta = (1 + mm) * (1 + (0.0 if last else twiddle)) - 1
        a = a * (1 + twiddle) + (0.0 if last else 4 * ETA32 * math.sqrt(n))
        absolute = absolute * math.sqrt(r) * (1 + eta) + a
        rel = (1 + rel) * (1 + eta) - 1
    return rel, absolute


def _bluestein_bound(d, n, norm_x, engine, k_block, lam):
    """Relative normwise bound of the Bluestein path for length ``n`` (section "Bluestein")."""
    m = 1 << (2 * n - 2).bit_length()
    rel_m, abs_m = _stockham_bound(d, fft_radices(m), engine, k_block, lam)
    j = np.arange(n)
    chirp = np.exp(-1j * np.pi * ((j * j) % (2 * n)) / n)
    kernel = np.zeros(m, np.complex128)
    kernel[:n] = np.conj(chirp)
    kernel[m - n + 1:] = np.conj(chirp[1:][::-1])
    spectrum = (np.fft.fft(kernel) / m).astype(np.complex64)
    delta = 16 * math.log2(m) * 2.0 ** -53 * math.sqrt((2 * n - 1) / m)   # float64 FFT error
    s_max = float(np.abs(spectrum).max()) * (1 + U32)
    e_tw, e_w, mul = _twiddle_error(), _root_error(), _product_error()
    rm, x = math.sqrt(m), norm_x
    err_a = e_tw * x + 4 * ETA32 * math.sqrt(n)
    err_v = rm * err_a + rel_m * rm * (x + err_a) + abs_m
    err_w = (mul * s_max * (rm * x + err_v) + s_max * err_v
             + (U32 * s_max + delta) * (1 + U32) * rm * x + 4 * ETA32 * rm)
    norm_w = (s_max * (1 + U32) + delta) * rm * x + err_w
    err_z = rm * err_w + rel_m * rm * norm_w + abs_m
    y = math.sqrt(n) * x
    err = mul * (1 + e_w) * (y + err_z) + (1 + e_w) * err_z + e_w * y + 4 * ETA32 * math.sqrt(n)
    return err / y


def _signal(x, op, accepted, kinds):
    """``x`` as an array of an ``accepted`` dtype with a non-empty last axis, else TypeError /
    ValueError naming it (the FFTs' own rule: nothing is converted silently)."""
    x = np.asarray(unmasked(x, op, "x"))
    if x.dtype not in accepted:
        raise TypeError(f"{op}: x has dtype {x.dtype}; accepted: {kinds}; nothing is rounded "
                        f"silently (convert explicitly, as splitprec.fft requires)")
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"{op}: x has shape {x.shape}; expected a non-empty last axis")
    return x


_NORMS = {None: "backward", "backward": "backward", "ortho": "ortho", "forward": "forward"}


def _norm_factor(norm, n, inverse, op):
    """``(c, e_c)``: the exact norm factor of ``splitprec.fft`` and the relative error of its float32
    rounding (``1/n`` and ``1/sqrt(n)`` are formed in float64 and rounded once to float32)."""
    if not (norm is None or isinstance(norm, str)) or norm not in _NORMS:
        raise ValueError(f"{op}: unknown norm {norm!r}; expected None, 'backward', 'ortho' or 'forward'")
    kind = _NORMS[norm]
    if kind == "ortho":
        return 1 / math.sqrt(n), U32 + 3 * 2.0 ** -53
    if (kind == "forward") != inverse:
        return 1 / n, U32 + 2.0 ** -53
    return 1.0, 0.0


def _line_scale_top(n):
    """A lower bound of the ``t`` with which the engines scale a line of the transforms of length ``n``
    (its largest ``|Re|``, ``|Im|`` into ``[2**(t-1), 2**t)``: docs/bounds.md, "Power-of-two line
    scaling"), real transforms' half-length plans and Bluestein's inner length included."""
    inner = 0 if fft_radices(n) is not None else (1 << (2 * n - 2).bit_length()).bit_length()
    return 127 - n.bit_length() - inner - 3


def fft_bound(x, dtype, engine="cpu", *, k_block=256, norm=None, inverse=False, kind="rigorous",
              confidence=0.999):
    """Normwise bound on ``||splitprec.fft.fft(x, dtype=dtype, norm=norm) - c DFT(x)||_2 / ||c DFT(x)||_2``.

    Parameters
    ----------
    x : array_like, complex64 or float32, shape ``(..., n)``
        The signal(s); the transform runs along the last axis.
    dtype : str or splitprec.SplitDType
        The scheme.
    engine : {"cpu", "gpu"}
        Accumulator model of the DFT-block products, as in :func:`gemm_bound`.
    k_block : int, keyword-only
        As ``k_block`` and ``small_k_block`` of :func:`gemm_bound`, for each pass's DFT-block
        products (``k = 2r`` for radix ``r``); positive.
    norm : {None, "backward", "ortho", "forward"}, keyword-only
        numpy's normalization; ``c`` is its factor (``1/n``, ``1/sqrt(n)`` or 1).
    inverse : bool, keyword-only
        The bound of ``splitprec.fft.ifft`` (``c`` times the conjugate transform) instead.
    kind, confidence : keyword-only
        As in :func:`gemm_bound`: ``kind="probabilistic"`` bounds each line with probability at
        least ``confidence`` under Higham & Mary's model; only the round-to-nearest accumulation
        of each pass's DFT-block products gets the sqrt (docs/bounds.md, section 13), so on short
        radices it is close to the rigorous bound.

    Returns
    -------
    float for 1-D ``x``, else a float64 array of shape ``x.shape[:-1]`` (one bound per line);
    inf for a line holding NaN/inf or whose transform may overflow float32, 0 for a zero line.

    Raises
    ------
    TypeError
        ``x`` of another dtype (float64, complex128, integers); ``inverse`` not a bool.
    ValueError
        A 0-d ``x`` or an empty last axis; unknown scheme, engine, norm or kind; ``k_block`` not a
        positive int; confidence outside (0, 1).

    Accuracy: derived in docs/bounds.md ("FFT", after Higham ch. 24); checked by
    ``tests/test_search.py::test_fft_error_within_bound`` and ``tests/test_range.py``.

    Examples
    --------
    >>> import numpy as np
    >>> bool(fft_bound(np.ones(64, np.complex64), "bf16x9") < 1e-4)    # radix 16, then 4
    True
    """
    op = "fft_bound"
    d, random_errors = _options(dtype, engine, k_block, kind, confidence, op)
    x = _signal(x, op, (np.float16, np.float32, np.complex64), "float32, complex64 (or float16)")
    n = x.shape[-1]
    if not isinstance(inverse, (bool, np.bool_)):
        raise TypeError(f"{op}: inverse must be a bool, got {inverse!r} of type {type(inverse).__name__}")
    factor = _norm_factor(norm, n, inverse, "fft_bound")
    lines = x.reshape(-1, n).astype(np.complex128)
    lam = _fft_lam(d, n, confidence) if random_errors else None
    out = np.array([_line_bound(d, line, engine, k_block, factor, lam) for line in lines])
    return float(out[0]) if x.ndim == 1 else out.reshape(x.shape[:-1])


def _options(dtype, engine, k_block, kind, confidence, op):
    """``(scheme, kind is probabilistic)`` once every option is checked; errors name ``op``, the
    public function called (``rfft_bound`` runs ``fft_bound``)."""
    random_errors = probabilistic.check_kind(kind, confidence, op)
    d = _scheme(dtype, op)
    if engine not in ENGINES:
        raise ValueError(f"{op}: unknown engine {engine!r}; expected one of 'cpu', 'gpu'")
    check_k_block(k_block, "k_block", op)
    return d, random_errors


def _fft_lam(d, n, confidence):
    """``lam`` of a length-``n`` line: a union over every product term of every pass's dot
    products (``4 n |S| sum(radices)``; Bluestein: two transforms of length ``m``)."""
    radices = fft_radices(n)
    if radices is None:
        m = 1 << (2 * n - 2).bit_length()
        count = 2 * 4 * m * len(d.products) * sum(fft_radices(m))
    else:
        count = 4 * n * len(d.products) * sum(radices)
    return probabilistic.lam(confidence, count, U32)


def rfft_bound(x, dtype, engine="cpu", *, k_block=256, norm=None, kind="rigorous", confidence=0.999):
    """Normwise bound on ``||splitprec.fft.rfft(x, dtype=dtype, norm=norm) - rfft(x)||_2 / ||rfft(x)||_2``.

    Parameters
    ----------
    x : array_like, float32, shape ``(..., n)``
        Real signal(s); the transform runs along the last axis.
    dtype, engine, k_block, norm, kind, confidence
        As in :func:`fft_bound`.

    Returns
    -------
    float for 1-D ``x``, else one bound per line, as :func:`fft_bound`.

    Raises
    ------
    TypeError, ValueError
        As :func:`fft_bound` (complex input is refused too).

    Accuracy: even ``n`` runs one complex transform of the ``n/2`` packed pairs ``x[2j] + i x[2j+1]``
    (:func:`fft_bound` of them, times ``sqrt(2)``) and a complex64 post-processing step; odd ``n``
    the complex transform of length ``n`` (``sqrt(2)`` times its bound: the first half of a real
    signal's spectrum holds at least half its energy). Derived in docs/bounds.md ("Real input");
    checked by ``tests/test_fft.py::test_rfft_error_within_bound``.

    Examples
    --------
    >>> import numpy as np
    >>> bool(rfft_bound(np.ones(64, np.float32), "bf16x9") < 1e-4)
    True
    """
    op = "rfft_bound"
    _options(dtype, engine, k_block, kind, confidence, op)
    x = _signal(x, op, (np.float16, np.float32), "float32 (or float16)").astype(np.float32)
    n = x.shape[-1]
    c, e_c = _norm_factor(norm, n, False, op)
    options = dict(k_block=k_block, kind=kind, confidence=confidence)
    if n % 2:
        return math.sqrt(2) * fft_bound(x.astype(np.complex64), dtype, engine, norm=norm, **options)
    beta = np.asarray(fft_bound(np.ascontiguousarray(x).view(np.complex64), dtype, engine, **options))
    e_w, mul = _root_error(), _product_error()
    post = U32 + (1 + e_w) * (U32 + (1 + U32) * mul) + e_w * (1 + U32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x64 = x.astype(np.float64)
        norm_x = np.linalg.norm(x64, axis=-1) * (1 - 2.0 ** -40)
        peak = np.abs(x64).max(axis=-1)
        scaled_norm = norm_x * 2.0 ** (_line_scale_top(n // 2) - 1) / peak     # the post-processing's scale
        underflow = np.where(norm_x > 0, 8 * math.sqrt(2) * ETA32 / scaled_norm, 0.0)
        bound = (math.sqrt(2) * beta + math.sqrt(2) * (1 + beta) * post + U32) / (1 - U32) + underflow
        bound = _normalized(bound, c, e_c, n, norm_x, scaled_norm / math.sqrt(2))
        overflow = c * n * peak * 4 >= FP32_MAX
    bound = np.where(np.isfinite(beta) & np.isfinite(norm_x) & ~overflow, _round_up(bound, 16), math.inf)
    bound = np.where(norm_x == 0, 0.0, bound)
    return float(bound) if x.ndim == 1 else bound


def _normalized(bound, c, e_c, n, norm_x, scaled_norm):
    """The bound of the transform at the lines' power-of-two scale (``bound``, relative; a line of
    norm ``scaled_norm`` there, ``norm_x`` unscaled) once its outputs are multiplied by the float32
    norm factor ``fl32(c)`` there (relative ``e_c``, one rounding each, ``eta_32`` at that scale) and
    scaled back (one rounding, ``eta_32`` in the result's units) (docs/bounds.md, "Power-of-two line
    scaling"): ``||y|| = c sqrt(n) ||x||``."""
    if c != 1.0:
        bound = (1 + bound) * (1 + e_c) * (1 + U32) - 1 + math.sqrt(2) * ETA32 / (c * scaled_norm)
    return bound + math.sqrt(2) * ETA32 / (c * norm_x)


def _line_bound(d, line, engine, k_block, factor, lam):
    """The bound of one line: the transform at the line's power-of-two scale (where its norm is at
    least ``scaled``), the input's rounding to that scale, the norm factor and the scaling back."""
    n = line.size
    c, e_c = factor
    if not np.isfinite(line).all():
        return math.inf
    norm_x = float(np.linalg.norm(line)) * (1 - 2.0 ** -40)
    if norm_x == 0:
        return 0.0
    peak = float(max(np.abs(line.real).max(), np.abs(line.imag).max()))
    if c * math.sqrt(2) * n * peak * (1 + 2.0 ** -10) >= FP32_MAX:
        return math.inf                                   # an output may be beyond float32's range
    scaled = norm_x * 2.0 ** (_line_scale_top(n) - 1) / peak
    rounding = math.sqrt(2 * n) * ETA32 / scaled           # x * 2**-s rounded to float32 once
    if n == 1:
        bound = rounding
    elif fft_radices(n) is None:
        bound = _bluestein_bound(d, n, scaled, engine, k_block, lam) + rounding
    else:
        rel, absolute = _stockham_bound(d, fft_radices(n), engine, k_block, lam)
        bound = rel + absolute / (math.sqrt(n) * scaled) + rounding * (1 + rel)
    return float(_round_up(_normalized(bound, c, e_c, n, norm_x, scaled), 64))
