"""Error bounds of the split schemes' products: ``gemm_bound`` (per entry; the FFTs' normwise bounds
are in ``accuracy.fft_bounds``).

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
from splitprec.dtypes import cheapest, check_precision
from splitprec.engines.reference.tuning import class_scheme as reference_class_scheme

from . import probabilistic
from .ozaki_bound import matmul_shapes, ozaki2_gemm_bound
from splitprec import interop

from .reference import as_matrices, infinite_where_unbounded, read_operands, round_up as _round_up, vector_result

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


def _named(dtype, op):
    """``splitprec.dtype(dtype)``; its error gets a note naming the call, ``op``."""
    try:
        return splitprec.dtype(dtype)
    except (TypeError, ValueError) as err:
        err.add_note(f"raised by {op}(dtype={dtype!r})")
        raise


def _scheme(dtype, op):
    d = _named(dtype, op)
    if not _supported(d):
        raise ValueError(f"{op}: no bound is derived for scheme {d.name!r} (target {d.target}); "
                         f"bounded schemes: {', '.join(map(repr, schemes()))}")
    return d


def gamma(n, u=U32):
    """Higham's ``gamma_n = n*u / (1 - n*u)`` (Accuracy and Stability, §3.1); inf once ``n*u >= 1``."""
    return n * u / (1 - n * u) if n * u < 1 else math.inf


def _rn(n, lam):
    """Relative factor of ``n`` round-to-nearest float32 roundings on one path: ``gamma_n``, or
    for a probabilistic bound (``lam`` not None) the smaller of it and ``gamma_tilde_n(lam)``."""
    rigorous = gamma(n)
    return rigorous if lam is None else min(rigorous, probabilistic.gamma_tilde(n, lam, U32))


def check_k_block(value, name, op):
    """ValueError naming ``name`` unless ``value`` is None or a positive int (a bool is not a length)."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"{op}: {name} must be a positive int or None, got {value!r}")


def _operand(x, name, op):
    """Operand ``x`` of a float32-target product as a float32 numpy array of ndim >= 2, read as
    ``splitprec.matmul`` reads it (lists, integers, float16 and bfloat16 exactly; float64 refused)."""
    (read,), _ = interop.read(op, **{name: x})
    x = np.asarray(interop.exact(read, op, name, target="float32"))
    if x.ndim < 2:
        raise ValueError(f"{op}: {name} has shape {x.shape}; expected ndim >= 1")
    return x.astype(np.float32)


def _finite_magnitude(x):
    """``|x|`` in float64 with NaN/inf as 0 (their pattern is bounded apart)."""
    return np.where(np.isfinite(x), np.abs(x), 0).astype(np.float64)


def _pow2_scale(mag, d, axis):
    """``2**e`` per slice along ``axis``: the slice maximum lands in ``[2**s, 2**(s+1))``, ``s =
    d.scale_exponent(k)`` (the documented pow2 rule of ``splitprec.split``), 1 for all-zero slices."""
    if mag.shape[axis] == 0:
        return np.ones(mag.sum(axis=axis, keepdims=True).shape)
    peak = mag.max(axis=axis, keepdims=True)
    _, e = np.frexp(peak)
    top = d.scale_exponent(mag.shape[axis])
    return np.where(peak > 0, np.ldexp(1.0, (e - 1 - top).astype(np.int32)), 1.0)


def split_coefficients(d, top):
    """``(c, eta, split_error, rho)``: the constants of :func:`_split_terms` for elements in
    (``top``) or below the top binade; ``c[p] * |x| + eta[p] * scale`` bounds the p-th
    residual (``p <= terms``) and ``split_error * |x| + rho * scale`` the split's."""
    fmt, u, t = d.format, d.part_bound, d.terms
    c = 2 * u if top else u
    eta = [0.0]
    for p in range(t):
        eta.append(max(u * eta[-1], fmt.smallest_subnormal / 2 * 2.0 ** (-p * d.shift)))
    rescale_loss = ETA32 if d.scaling == "pow2" else 0.0     # fl32(x * 2**-e) may go subnormal
    split_error = d.split_error_toward_zero if top else d.split_error
    return [c ** p for p in range(t + 1)], eta, split_error, eta[t] + rescale_loss


def top_binade(mag, d, scale):
    """Where the split rounds toward zero: the top part could round past the base format's range
    or, once unscaled, past float32's (counted for the whole top binade of either)."""
    return ((mag / scale) >= 2.0 ** d.format.emax) | (mag >= 2.0 ** 127)


def _split_terms(mag, d, scale):
    """Bounds on the parts and on the split residual of each element (section "Split").

    Returns ``(parts, residual)``: ``parts[p] >= |part_p| * 2**(-p*shift) * scale`` and
    ``residual >= |x - merged value|``, both in the units of ``x``.
    """
    top = top_binade(mag, d, scale)
    (c, eta, split_error, rho), (c_top, _, split_top, _) = split_coefficients(d, False), split_coefficients(d, True)
    res = [np.where(top, c_top[p], c[p]) * mag + eta[p] * scale for p in range(d.terms + 1)]
    parts = [res[p] + res[p + 1] for p in range(d.terms)]
    residual = np.where(top, split_top, split_error) * mag + rho * scale
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


def gemm_bound(a, b, dtype=None, engine="cpu", *, precision=None, k_block=None, small_k_block=None,
               kind="rigorous", confidence=0.999, chunks=None):
    """Per-entry bound on ``|splitprec.matmul(a, b, dtype=dtype) - a @ b|`` (exact product), or on
    ``|splitprec.matmul(a, b, precision=precision) - a @ b|``.

    Parameters
    ----------
    a, b : array_like, float32 (or float16), ndim >= 1
        Operands ``(..., m, k)`` and ``(..., k, n)``; batch dimensions broadcast, and a 1-D operand
        is a row (``a``) or a column (``b``), as in ``numpy.matmul``. float64 for the
        ``ozaki2_int8x<N>`` schemes, whose bound is :func:`accuracy.ozaki_bound.ozaki2_gemm_bound`
        (docs/bounds.md, section 12; ``engine`` and the k-block arguments do not apply).
    dtype : str or splitprec.SplitDType
        The scheme (or give ``precision``).
    engine : {"cpu", "gpu"}
        Accumulator model: float32 round-to-nearest (the reference engine) or truncating
        tensor-core accumulators over k-blocks, blocks added in float32 RN.
    precision : {"fp32", "fp64"}, keyword-only
        The bound of ``matmul``'s class pick for this shape and engine: on the GPU ``"fp32"`` runs
        float32 itself (cuBLAS SGEMM, or ``sgemm_small`` for small products) for the shapes where it
        is the fastest (``splitprec.engines.cuda.gemm.fp32_path``), whose bound is
        ``gamma_{k+1} |A||B|`` plus the subnormal terms (docs/bounds.md, section 16).
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
    numpy.ndarray of float64, shape ``(..., m, n)`` (numpy's for 1-D operands). ``inf`` where the
    result may overflow float32
    and where the exact product is NaN/inf (that pattern is checked separately, exactly).

    Raises
    ------
    TypeError, ValueError
        Non-float32 operands, 0-d or masked ones, shapes that do not multiply (inner or batch dimensions),
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
    a, b = read_operands(a, b, "gemm_bound")             # as splitprec.matmul reads them
    a, b, row, column = as_matrices(a, b, "gemm_bound")
    return vector_result(_gemm_bound(a, b, dtype, engine, precision, k_block, small_k_block, kind, confidence,
                                     chunks), row, column)


def _gemm_bound(a, b, dtype, engine, precision, k_block, small_k_block, kind, confidence, chunks):
    """:func:`gemm_bound` of operands of ndim >= 2 (or 0-d ones, refused below)."""
    op = "gemm_bound"
    if dtype is None or precision is not None:
        dtype = _class_pick(a, b, dtype, precision, engine, op)
        if dtype in FLOAT32_PATHS:
            probabilistic.check_kind(kind, confidence, op)
            if kind != "rigorous" or chunks is not None:
                raise ValueError(f"{op}: precision={precision!r} runs float32 itself for these shapes on the "
                                 "GPU, whose bound is rigorous and unchunked; expected kind='rigorous', chunks=None")
            return sgemm_bound(a, b)
    random_errors = probabilistic.check_kind(kind, confidence, op)
    if chunks is not None:
        if random_errors:
            raise ValueError(f"{op}: chunks= takes the rigorous bound only; expected kind='rigorous'")
        from .chunked import chunked_gemm_bound
        return chunked_gemm_bound(a, b, dtype, chunks, engine=engine, k_block=k_block, small_k_block=small_k_block)
    if _named(dtype, op).target == "float64":     # ozaki2_int8x<N>: float64 operands, both engines
        return ozaki2_gemm_bound(a, b, splitprec.dtype(dtype), engine)
    d = _scheme(dtype, op)
    if engine not in ENGINES:
        raise ValueError(f"{op}: unknown engine {engine!r}; expected one of 'cpu', 'gpu'")
    check_k_block(k_block, "k_block", op)
    check_k_block(small_k_block, "small_k_block", op)
    a, b = _operand(a, "a", op), _operand(b, "b", op)
    matmul_shapes(a, b, op)
    k = a.shape[-1]
    mag_a, mag_b = _finite_magnitude(a), _finite_magnitude(b)
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
    return infinite_where_unbounded(bound, overflow, a, b)


FLOAT32_PATHS = ("sgemm", "sgemm_small")    # precision="fp32"'s GPU paths that are float32 itself


def _class_pick(a, b, dtype, precision, engine, op):
    """The scheme (or a path of ``FLOAT32_PATHS``) that ``matmul(a, b, precision=precision)`` runs
    on ``engine``."""
    if dtype is not None:
        raise ValueError(f"{op}: give dtype or precision, not both (got dtype={dtype!r}, precision={precision!r})")
    if precision is None:
        raise TypeError(f"{op}: expected a scheme (dtype=...) or a precision class (precision='fp32' or 'fp64')")
    if engine not in ENGINES:
        raise ValueError(f"{op}: unknown engine {engine!r}; expected one of 'cpu', 'gpu'")
    precision = check_precision(precision)
    if precision == "fp64":
        return cheapest(precision).name
    if engine == "cpu":
        return reference_class_scheme(precision).name
    a, b = _operand(a, "a", op), _operand(b, "b", op)
    matmul_shapes(a, b, op)
    from splitprec.engines.cuda.gemm import fp32_path
    batch = math.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    return fp32_path(a.shape[-2], b.shape[-1], a.shape[-1], batch)


def sgemm_bound(a, b):
    """Per-entry bound on the error of ``precision="fp32"``'s float32 paths, cuBLAS SGEMM and
    ``sgemm_small`` (docs/bounds.md, section 16): at most 2k float32 roundings per entry in any order of summation, ``gamma_{k+1}
    |A||B|``; the subnormal inputs' products ``|A_sub||B| + |A||B_sub|`` and ``2k 2^-126`` in case
    the kernel flushes subnormal inputs or results; ``inf`` where the product may overflow (those
    entries are recomputed in float64) or is NaN/inf."""
    op = "gemm_bound"
    a, b = _operand(a, "a", op), _operand(b, "b", op)
    matmul_shapes(a, b, op)
    k = a.shape[-1]
    mag_a, mag_b = _finite_magnitude(a), _finite_magnitude(b)
    tiny = 2.0 ** -126
    magnitude = np.matmul(mag_a, mag_b)
    subnormal = np.matmul(np.where(mag_a < tiny, mag_a, 0), mag_b) + np.matmul(mag_a, np.where(mag_b < tiny, mag_b, 0))
    g = gamma(k + 1)
    bound = _round_up(g * magnitude + subnormal + 2 * k * tiny, 3 * k + 8)
    overflow = (1 + g) * magnitude + bound >= FP32_MAX * (1 - 2.0 ** -20)
    return infinite_where_unbounded(bound, overflow, a, b)


# ---- FFT (docs/bounds.md, "FFT") ------------------------------------------------------------
