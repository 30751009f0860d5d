"""Error bounds of the split schemes: ``gemm_bound`` (per entry), ``fft_bound`` and ``rfft_bound`` (normwise).

Rigorous by default; ``kind="probabilistic"`` gives Higham & Mary's sqrt(n) treatment of the
round-to-nearest accumulation (``accuracy.probabilistic``, docs/bounds.md section 13). Every
formula here is derived in docs/bounds.md; the section names quoted in comments refer to it.
All quantities are computed in float64 from ``|A|``, ``|B|`` and the scheme's fields
(``splitprec.dtype(name)``), and the result is inflated by a few float64 roundings so that it is
an upper bound of the true one (section "Rounding the bound up").
"""
import math

import numpy as np

import splitprec

from . import probabilistic
from .ozaki_bound import matmul_shapes, ozaki2_gemm_bound
from .reference import _nonfinite_pattern

U32 = 2.0 ** -24                    # unit roundoff of float32 round-to-nearest
U_TRUNCATE = 2.0 ** -23             # one-sided error of a truncating (tensor-core) add
FP32_MAX = float(np.finfo(np.float32).max)
ETA32 = 2.0 ** -150                 # half the float32 subnormal spacing
ENGINES = ("cpu", "gpu")


def schemes():
    """Registered schemes this module bounds: float32 targets split into floating-point parts."""
    return [name for name in splitprec.dtypes() if _supported(splitprec.dtype(name))]


def _supported(d):
    return d.target == "float32" and getattr(d.format, "p", None) is not None


def _scheme(dtype, op):
    d = splitprec.dtype(dtype)
    if not _supported(d):
        raise ValueError(f"{op}: no bound is derived for scheme {d.name!r} (target {d.target}); "
                         f"bounded schemes: {', '.join(map(repr, schemes()))}")
    return d


def gamma(n, u=U32):
    """Higham's ``gamma_n = n*u / (1 - n*u)`` (Accuracy and Stability, §3.1); inf once ``n*u >= 1``."""
    return n * u / (1 - n * u) if n * u < 1 else math.inf


def _round_up(bound, terms):
    """Inflate a float64 sum of ``terms`` non-negative float64 roundings into an upper bound."""
    return np.nextafter(bound * (1 + (terms + 8) * 2.0 ** -52), np.inf)


def _rn(n, lam):
    """Relative factor of ``n`` round-to-nearest float32 roundings on one path: ``gamma_n``, or
    for a probabilistic bound (``lam`` not None) the smaller of it and ``gamma_tilde_n(lam)``."""
    rigorous = gamma(n)
    return rigorous if lam is None else min(rigorous, probabilistic.gamma_tilde(n, lam, U32))


def _operand(x, name, op):
    x = np.asarray(x)
    if x.dtype not in (np.float16, np.float32):
        raise TypeError(f"{op}: {name} has dtype {x.dtype}; expected float32 or float16")
    if x.ndim < 2:
        raise ValueError(f"{op}: {name} has shape {x.shape}; expected ndim >= 2 (..., rows, cols)")
    return x.astype(np.float32)


def _pow2_scale(mag, d, axis):
    """``2**e`` per slice along ``axis``: the slice maximum lands in ``[2**s, 2**(s+1))``, ``s =
    d.scale_exponent(k)`` (the documented pow2 rule of ``splitprec.split``), 1 for all-zero slices."""
    if mag.shape[axis] == 0:
        return np.ones(mag.sum(axis=axis, keepdims=True).shape)
    peak = mag.max(axis=axis, keepdims=True)
    _, e = np.frexp(peak)
    top = d.scale_exponent(mag.shape[axis])
    return np.where(peak > 0, np.ldexp(1.0, (e - 1 - top).astype(np.int32)), 1.0)


def _split_terms(mag, d, scale):
    """Bounds on the parts and on the split residual of each element (section "Split").

    Returns ``(parts, residual)``: ``parts[p] >= |part_p| * 2**(-p*shift) * scale`` and
    ``residual >= |x - merged value|``, both in the units of ``x``.
    """
    fmt, u, t = d.format, d.part_bound, d.terms
    # Split toward zero where the top part could round past the base format's range or, once
    # unscaled, past float32's: counted for the whole top binade of either.
    top = ((mag / scale) >= 2.0 ** fmt.emax) | (mag >= 2.0 ** 127)
    c = np.where(top, 2 * u, u)
    split_error = np.where(top, d.split_error_toward_zero, d.split_error)
    eta_base = fmt.smallest_subnormal / 2
    eta = [0.0]
    for p in range(t):
        eta.append(max(u * eta[-1], eta_base * 2.0 ** (-p * d.shift)))
    rescale_loss = ETA32 if d.scaling == "pow2" else 0.0     # fl32(x * 2**-e) may go subnormal
    res = [c ** p * mag + eta[p] * scale for p in range(t + 1)]
    parts = [res[p] + res[p + 1] for p in range(t)]
    residual = split_error * mag + (eta[t] + rescale_loss) * scale
    return parts, residual


SHORTEST_BLOCK = 32        # GPU engines promote after at least 32 values of k (docs/bounds.md, section 5)


def _accumulation(d, k, engine, k_block, small_k_block, lam=None):
    """``(g_big, g_small, absolute)``: relative factors on ``|A_0||B_0|`` and on the small products'
    ``sum |A_p||B_q|``, and the absolute term (scaled units). ``lam`` not None: the probabilistic
    factors of section 13 (only round-to-nearest roundings get the sqrt; truncation stays linear)."""
    n = len(d.products)
    if engine == "cpu":
        g = (1 + gamma(k)) * (1 + gamma(n - 1)) - 1
        g = g if lam is None else min(g, _rn(k + n - 1, lam))
        absolute = sum(k * 4 * ETA32 * 2.0 ** (-(p + q) * d.shift) + (ETA32 if d.shift else 0)
                       for p, q in d.products)
        return g, g, absolute * (1 + gamma(n - 1))
    blocks = -(-k // SHORTEST_BLOCK)
    # 2 truncations per product and k: an mma of q products aligns q + 1 addends to the largest
    # and drops its low bits, up to (q + 1) * 2**-23 of that addend (docs/bounds.md, section 5).
    # hi*hi runs in its own chain of k-blocks of at most k_block, the small products share one
    # chain of k-blocks of at most small_k_block; blocks are at least SHORTEST_BLOCK long, and
    # every promotion and the final additions round to nearest.
    def chain(products, block):
        return (1 + gamma(2 * products * min(k, block), U_TRUNCATE)) * (1 + _rn(n * (blocks + 1), lam)) - 1
    return chain(1, k_block), chain(n - 1, small_k_block), 4 * (2 * n * k + n * (blocks + 1)) * 2 * ETA32


def gemm_bound(a, b, dtype, engine="cpu", *, k_block=None, small_k_block=None, kind="rigorous",
               confidence=0.999, chunks=None):
    """Per-entry bound on ``|splitprec.matmul(a, b, dtype=dtype) - a @ b|`` (exact product).

    Parameters
    ----------
    a, b : array_like, float32 (or float16), ndim >= 2
        Operands ``(..., m, k)`` and ``(..., k, n)``; batch dimensions broadcast. float64 for the
        ``ozaki2_int8x<N>`` schemes, whose bound is :func:`accuracy.ozaki_bound.ozaki2_gemm_bound`
        (docs/bounds.md, section 12; ``engine`` and the k-block arguments do not apply).
    dtype : str or splitprec.SplitDType
        The scheme.
    engine : {"cpu", "gpu"}
        Accumulator model: float32 round-to-nearest (the reference engine) or truncating
        tensor-core accumulators over k-blocks, blocks added in float32 RN.
    k_block : int or None, keyword-only
        Longest run of k of hi*hi that the GPU engine accumulates in the tensor core before
        promoting; None: the longest of splitprec's GPU engines for this scheme
        (``splitprec.linalg.gpu_k_block(dtype, k)``, which grows like sqrt(k): at k = 8192, 512 for
        tf32 parts and 1024 for bf16 and fp16).
    small_k_block : int or None, keyword-only
        The same for the chain shared by the small products (i + j > 0); None: all of k (the
        cuBLAS engine runs them as one GEMM and the Hopper kernel as one accumulator; the mma.sync
        kernel promotes them every k-block).
    kind : {"rigorous", "probabilistic"}, keyword-only
        "rigorous" (default) holds for every input. "probabilistic" holds for each entry with
        probability at least ``confidence`` under Higham & Mary's model of independent, mean-zero
        round-to-nearest errors: the accumulation's roundings get ``lam sqrt(n) u`` instead of
        ``n u``; split residuals, dropped products, underflow and the tensor cores' truncation
        within a k-block keep their rigorous terms. No guarantee on adversarial data
        (docs/bounds.md, section 13). For ``ozaki2_int8x<N>`` both kinds are the same bound.
    confidence : float in (0, 1), keyword-only
        Probability per entry of the probabilistic bound (ignored when ``kind="rigorous"``).
    chunks : int, tuple of int or dask chunks tuple, keyword-only
        The bound of the product computed in these k-chunks and summed (``splitprec.matmul`` of
        dask arrays, whose chunks of ``a`` may be passed as they are):
        :func:`accuracy.chunked.chunked_gemm_bound` (docs/bounds.md, section 14).

    Returns
    -------
    numpy.ndarray of float64, shape ``(..., m, n)``. ``inf`` where the result may overflow float32
    and where the exact product is NaN/inf (that pattern is checked separately, exactly).

    Raises
    ------
    TypeError, ValueError
        Non-float32 operands, ndim < 2, shapes that do not multiply (inner or batch dimensions),
        unknown scheme, engine or kind, a confidence outside (0, 1).

    Accuracy: derived in docs/bounds.md ("GEMM"); checked by ``tests/test_bounds.py`` and the
    adversarial search ``tests/test_search.py::test_gemm_error_within_bound``.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.ones((1, 4), np.float32); b = np.ones((4, 1), np.float32)
    >>> bound = gemm_bound(a, b, "bf16x9")[0, 0]      # |A||B| = 4: about 12 float32 roundings
    >>> bool(10 * 2**-24 < bound / 4 < 16 * 2**-24)
    True
    >>> a = np.ones((1, 4096), np.float32); b = np.ones((4096, 1), np.float32)
    >>> rigorous = gemm_bound(a, b, "bf16x9")[0, 0]
    >>> bool(gemm_bound(a, b, "bf16x9", kind="probabilistic")[0, 0] < rigorous / 10)
    True
    """
    op = "gemm_bound"
    random_errors = probabilistic.check_kind(kind, confidence, op)
    if chunks is not None:
        if random_errors:
            raise ValueError(f"{op}: chunks= takes the rigorous bound only; expected kind='rigorous'")
        from .chunked import chunked_gemm_bound
        return chunked_gemm_bound(a, b, dtype, chunks, engine=engine, k_block=k_block, small_k_block=small_k_block)
    if splitprec.dtype(dtype).target == "float64":     # ozaki2_int8x<N>: float64 operands, both engines
        return ozaki2_gemm_bound(a, b, splitprec.dtype(dtype), engine)
    d = _scheme(dtype, op)
    if engine not in ENGINES:
        raise ValueError(f"{op}: unknown engine {engine!r}; expected one of 'cpu', 'gpu'")
    if k_block is not None and (not isinstance(k_block, int) or k_block < 1):
        raise ValueError(f"{op}: k_block must be a positive int or None, got {k_block!r}")
    if small_k_block is not None and (not isinstance(small_k_block, int) or small_k_block < 1):
        raise ValueError(f"{op}: small_k_block must be a positive int or None, got {small_k_block!r}")
    a, b = _operand(a, "a", op), _operand(b, "b", op)
    matmul_shapes(a, b, op)
    k = a.shape[-1]
    mag_a = np.where(np.isfinite(a), np.abs(a), 0).astype(np.float64)
    mag_b = np.where(np.isfinite(b), np.abs(b), 0).astype(np.float64)
    pow2 = d.scaling == "pow2"
    scale_a = _pow2_scale(mag_a, d, -1) if pow2 else np.ones(a.shape[:-1] + (1,))
    scale_b = _pow2_scale(mag_b, d, -2) if pow2 else np.ones(b.shape[:-2] + (1, b.shape[-1]))
    parts_a, res_a = _split_terms(mag_a, d, scale_a)
    parts_b, res_b = _split_terms(mag_b, d, scale_b)
    taken = set(d.products)
    dropped = [(p, q) for p in range(d.terms) for q in range(d.terms) if (p, q) not in taken]
    representation = (np.matmul(mag_a, res_b) + np.matmul(res_a, mag_b) + np.matmul(res_a, res_b)
                      + sum(np.matmul(parts_a[p], parts_b[q]) for p, q in dropped))
    big = np.matmul(parts_a[0], parts_b[0])
    small = sum((np.matmul(parts_a[p], parts_b[q]) for p, q in d.products if p + q), np.zeros_like(big))
    magnitude = big + small
    lam = probabilistic.lam(confidence, len(d.products) * k, U32) if random_errors else None
    g_big, g_small, absolute = _accumulation(d, k, engine, k_block or splitprec.linalg.gpu_k_block(d, k),
                                             max(k, 1) if small_k_block is None else small_k_block, lam)
    g = max(g_big, g_small)
    sigma = scale_a * scale_b
    bound = representation + g_big * big + g_small * small + absolute * sigma + (ETA32 if pow2 else 0.0)
    bound = _round_up(bound, k + 4 * d.terms ** 2)
    overflow = (1 + g) * np.maximum(magnitude, magnitude / sigma) + bound >= FP32_MAX * (1 - 2.0 ** -20)
    pattern = _nonfinite_pattern(a, b)
    return np.where(overflow if pattern is None else overflow | ~np.isfinite(pattern), np.inf, bound)


# ---- FFT (docs/bounds.md, "FFT") ------------------------------------------------------------

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
    """``(rel, absolute)`` of the Stockham transform with these radices (section "FFT")."""
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
    x = np.asarray(x)
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
    if norm not in _NORMS:
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
        ``x`` of another dtype (float64, complex128, integers).
    ValueError
        A 0-d ``x`` or an empty last axis; unknown scheme, engine or kind; confidence outside (0, 1).

    Accuracy: derived in docs/bounds.md ("FFT", after Higham ch. 24); checked by
    ``tests/test_search.py::test_fft_error_within_bound`` and ``tests/test_range.py``.

    Examples
    --------
    >>> import numpy as np
    >>> bool(fft_bound(np.ones(64, np.complex64), "bf16x9") < 1e-4)    # radix 16, then 4
    True
    """
    op = "fft_bound"
    random_errors = probabilistic.check_kind(kind, confidence, op)
    d = _scheme(dtype, op)
    if engine not in ENGINES:
        raise ValueError(f"{op}: unknown engine {engine!r}; expected one of 'cpu', 'gpu'")
    x = _signal(x, op, (np.float16, np.float32, np.complex64), "float32, complex64 (or float16)")
    n = x.shape[-1]
    factor = _norm_factor(norm, n, inverse, "fft_bound")
    lines = x.reshape(-1, n).astype(np.complex128)
    lam = _fft_lam(d, n, confidence) if random_errors else None
    out = np.array([_line_bound(d, line, engine, k_block, factor, lam) for line in lines])
    return float(out[0]) if x.ndim == 1 else out.reshape(x.shape[:-1])


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
    probabilistic.check_kind(kind, confidence, op)
    x = _signal(x, op, (np.float16, np.float32), "float32 (or float16)").astype(np.float32)
    n = x.shape[-1]
    options = dict(k_block=k_block, kind=kind, confidence=confidence)
    if n % 2:
        return math.sqrt(2) * fft_bound(x.astype(np.complex64), dtype, engine, norm=norm, **options)
    c, e_c = _norm_factor(norm, n, False, "rfft_bound")
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
