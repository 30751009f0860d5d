"""``gemm_envelope``: an upper bound of ``gemm_bound`` from one float64 product, on numpy or cupy.

:func:`accuracy.gemm_bound` multiplies a bound matrix of every part by every part (a dozen float64
products for ``bf16x9``). Each of those bounds is ``alpha * |x| + beta * scale`` (section "Split"
of docs/bounds.md, the constants of :func:`accuracy.bounds.split_coefficients`), so every product
of two of them is a combination of four matrices, ``|A||B|``, ``rowsum|A| * scale_B``, ``scale_A *
colsum|B|`` and ``k * scale_A * scale_B``: the envelope computes ``|A||B|`` once and the rest as outer
products (docs/tracking.md, "Matrix products"). With an operand's top-binade constants used for
all of it when one of its elements is in that binade, the envelope is never below ``gemm_bound``
(``tests/test_tracking_bounds.py::test_gemm_envelope_is_at_least_gemm_bound``) and equals it up to
float64 rounding otherwise. Written with numpy functions only, so cupy arrays stay on the device.
"""
import numpy as np

import splitprec

from . import probabilistic
from .bounds import (ETA32, FP32_MAX, U32, _accumulation, _pow2_scale, _round_up, _scheme,
                     split_coefficients, top_binade)

_COEFFICIENT_SLACK = 1 + 2.0 ** -40      # the scalar weights below take a few float64 roundings


def _pair(x, y):
    """Weights of ``(alpha_x |A| + beta_x s_A)(alpha_y |B| + beta_y s_B)`` on the four matrices."""
    return np.array([x[0] * y[0], x[0] * y[1], x[1] * y[0], x[1] * y[1]])


def _operand_terms(d, top):
    """``(parts, residual)`` as ``(alpha, beta)`` pairs (``beta`` multiplies the scale)."""
    c, eta, split_error, rho = split_coefficients(d, top)
    parts = [(c[p] + c[p + 1], eta[p] + eta[p + 1]) for p in range(d.terms)]
    return parts, (split_error, rho)


def weights(d, k, top_a, top_b, engine="cpu", *, k_block=None, lam=None):
    """``(bound weights, magnitude weights, g, absolute)``: 4-vectors of weights on ``|A||B|``,
    ``rowsum|A| s_B``, ``s_A colsum|B|``, ``k s_A s_B``, the largest accumulation factor and the
    absolute term of section 4 / 5 (``lam``: the probabilistic factors of section 13)."""
    (parts_a, res_a), (parts_b, res_b) = _operand_terms(d, top_a), _operand_terms(d, top_b)
    taken = set(d.products)
    dropped = [(p, q) for p in range(d.terms) for q in range(d.terms) if (p, q) not in taken]
    one = (1.0, 0.0)
    representation = (_pair(one, res_b) + _pair(res_a, one) + _pair(res_a, res_b)
                      + sum((_pair(parts_a[p], parts_b[q]) for p, q in dropped), np.zeros(4)))
    big = _pair(parts_a[0], parts_b[0])
    small = sum((_pair(parts_a[p], parts_b[q]) for p, q in d.products if p + q), np.zeros(4))
    g_big, g_small, absolute = _accumulation(d, k, engine, k_block or splitprec.linalg.gpu_k_block(d, k),
                                             max(k, 1), lam)
    bound = (representation + g_big * big + g_small * small) * _COEFFICIENT_SLACK
    return bound, (big + small) * _COEFFICIENT_SLACK, max(g_big, g_small), absolute


def _combine(w, m, rows, cols, scale_a, scale_b, k):
    return w[0] * m + w[1] * (rows * scale_b) + w[2] * (scale_a * cols) + (w[3] * k) * (scale_a * scale_b)


def gemm_envelope(a, b, dtype, engine="cpu", *, kind="rigorous", confidence=0.999, magnitudes=None):
    """Per-entry upper bound of :func:`accuracy.gemm_bound` (module docstring), on ``a``'s device.

    Parameters
    ----------
    a, b : numpy or cupy arrays, float32, shapes ``(..., m, k)`` and ``(..., k, n)``
        The operands (batch dimensions broadcast).
    dtype : str or splitprec.SplitDType
        A float32-target scheme with floating-point parts.
    engine, kind, confidence
        As in :func:`accuracy.gemm_bound` (the engine's default ``k_block``).
    magnitudes : pair of float64 arrays, optional
        ``|a|`` and ``|b|`` with non-finite entries as 0, when the caller already has them.

    Returns
    -------
    float64 array of shape ``(..., m, n)`` on the operands' device; inf where a row of ``a`` or
    a column of ``b`` holds NaN/inf and where the product may overflow float32.

    Accuracy: ``>= gemm_bound(a, b, dtype, engine, kind=kind)``, checked by
    ``tests/test_tracking_bounds.py::test_gemm_envelope_is_at_least_gemm_bound``.

    Examples
    --------
    >>> import numpy as np
    >>> from splitprec.accuracy import gemm_bound
    >>> a = np.ones((1, 4), np.float32); b = np.ones((4, 1), np.float32)
    >>> bool(gemm_bound(a, b, "bf16x9")[0, 0] <= gemm_envelope(a, b, "bf16x9")[0, 0] < 1.001 * gemm_bound(a, b, "bf16x9")[0, 0])
    True
    """
    d = _scheme(dtype, "gemm_envelope")
    lam = probabilistic.lam(confidence, len(d.products) * a.shape[-1], U32) \
        if probabilistic.check_kind(kind, confidence, "gemm_envelope") else None
    with np.errstate(invalid="ignore", over="ignore"):
        mag_a, mag_b = magnitudes if magnitudes is not None else \
            [np.where(np.isfinite(x), np.abs(x), 0).astype(np.float64) for x in (a, b)]
        k = a.shape[-1]
        pow2 = d.scaling == "pow2"
        scale_a = _pow2_scale(mag_a, d, -1) if pow2 else np.float64(1.0)
        scale_b = _pow2_scale(mag_b, d, -2) if pow2 else np.float64(1.0)
        top_a, top_b = (bool(top_binade(m, d, s).any()) for m, s in ((mag_a, scale_a), (mag_b, scale_b)))
        w, w_mag, g, absolute = weights(d, k, top_a, top_b, engine, lam=lam)
        m = np.matmul(mag_a, mag_b)
        rows, cols = mag_a.sum(axis=-1, keepdims=True), mag_b.sum(axis=-2, keepdims=True)
        sigma = scale_a * scale_b
        bound = _combine(w, m, rows, cols, scale_a, scale_b, k) + absolute * sigma + (ETA32 if pow2 else 0.0)
        bound = _round_up(bound, k + 4 * d.terms ** 2 + 8)
        magnitude = _combine(w_mag, m, rows, cols, scale_a, scale_b, k)
        overflow = (1 + g) * np.maximum(magnitude, magnitude / sigma) + bound >= FP32_MAX * (1 - 2.0 ** -20)
        bad = ~np.isfinite(a).all(axis=-1, keepdims=True) | ~np.isfinite(b).all(axis=-2, keepdims=True)
    return np.where(overflow | bad, np.inf, bound)
