"""``gemm_envelope``: an upper bound of ``gemm_bound`` from one float64 product (two where both
operands carry errors), on numpy or cupy.

:func:`accuracy.gemm_bound` multiplies a bound matrix of every part by every part (a dozen float64
products for ``bf16x9``). Each of those bounds is ``alpha * |x| + beta * scale`` (section "Split"
of docs/bounds.md, the constants of :func:`accuracy.bounds.split_coefficients`), so every product
of two of them is a combination of four matrices, ``|A||B|``, ``rowsum|A| * scale_B``, ``scale_A *
colsum|B|`` and ``k * scale_A * scale_B``: the envelope computes ``w |A||B|`` as one product and the
rest as one product of inner dimension 2 (docs/tracking.md, "Matrix products"); the errors of
inexact operands ride on the same products, ``|A| (w |B| + E_B) + E_A (|B| + E_B)``, or
``(w |A| + E_A) |B|`` where only A carries them. With an
operand's top-binade constants used for all of it when one of its elements is in that binade, the
envelope is never below ``gemm_bound``
(``tests/test_tracking_bounds.py::test_gemm_envelope_is_at_least_gemm_bound``) and equals it up to
float64 rounding otherwise. Written with numpy functions only, so cupy arrays stay on the device.
"""
import math

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


def _overflow(bound, w, w_mag, g, rows, cols, scale_a, scale_b, k, magnitudes, scaled_peak):
    """Where the product may overflow float32 (its magnitude and bound reach the top), or None where
    it cannot anywhere; ``magnitudes()`` computes ``|A||B|``, only when an estimate from ``bound``
    (``w0 |A||B| <= bound``), the operands' peaks and ``scaled_peak`` (a bound on ``|A||B| /
    (s_A s_B)``) does not rule overflow out."""
    top = FP32_MAX * (1 - 2.0 ** -20)
    line_peak = (w_mag[1] * _peak(rows) * _peak(scale_b) + w_mag[2] * _peak(scale_a) * _peak(cols)
                 + w_mag[3] * k * _peak(scale_a) * _peak(scale_b)) * (1 + 2.0 ** -40)
    bound_peak = _peak(bound)
    magnitude_peak = w_mag[0] / w[0] * (1 + 2.0 ** -40) * bound_peak + line_peak
    if (1 + g) * max(magnitude_peak, scaled_peak) + bound_peak < top:
        return None
    magnitude = w_mag[0] * _round_up(magnitudes(), k) + _lines(w_mag, rows, cols, scale_a, scale_b, k)
    return (1 + g) * np.maximum(magnitude, magnitude / (scale_a * scale_b)) + bound >= top


def _lines(w, rows, cols, scale_a, scale_b, k, absolute=0.0):
    """The three outer-product terms of the four matrices (all but ``|A||B|``), weighted by ``w``,
    and ``absolute s_A s_B``: ``(w1 rowsum|A|) s_B + s_A (w2 colsum|B| + (w3 k + absolute) s_B)``,
    one product of inner dimension 2."""
    shape_a, shape_b = (np.broadcast_shapes(x.shape, s.shape) for x, s in ((rows, scale_a), (cols, scale_b)))
    left = np.concatenate([np.broadcast_to(w[1] * rows, shape_a), np.broadcast_to(scale_a, shape_a)], axis=-1)
    far = w[2] * cols + (w[3] * k + absolute) * scale_b
    right = np.concatenate([np.broadcast_to(scale_b, shape_b), np.broadcast_to(far, shape_b)], axis=-2)
    return np.matmul(left, right)


def _peak(x, reduce=np.max, empty=0.0):
    """``reduce(x)`` as a float (NaN read as inf), ``empty`` for an empty ``x``; numpy or cupy."""
    if x.size == 0:
        return empty
    peak = float(reduce(x))
    return math.inf if math.isnan(peak) else peak


def gemm_envelope(a, b, dtype, engine="cpu", *, kind="rigorous", confidence=0.999, magnitudes=None,
                  errors=None):
    """Per-entry upper bound of :func:`accuracy.gemm_bound` (module docstring), on ``a``'s device;
    with ``errors``, plus the propagated bound of operands that are themselves inexact.

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
    errors : pair of float64 arrays, optional
        ``E_A``, ``E_B`` (shapes of ``a`` and ``b``, >= 0, NaN for unknown): the computed ``a``,
        ``b`` lie within them of exact operands ``A``, ``B``; the bound then also covers
        ``|a b - A B| <= E_A (|b| + E_B) + |a| E_B``, in the same products (docs/tracking.md).

    Returns
    -------
    float64 array of shape ``(..., m, n)`` on the operands' device; inf where a row of ``a`` or
    a column of ``b`` holds NaN/inf and where the product may overflow float32, NaN where an
    error is NaN.

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
        inexact = (False, False) if errors is None else tuple(bool((e != 0).any()) for e in errors)
        errors = errors if any(inexact) else None
        k = a.shape[-1]
        pow2 = d.scaling == "pow2"
        scale_a = _pow2_scale(mag_a, d, -1) if pow2 else np.float64(1.0)
        scale_b = _pow2_scale(mag_b, d, -2) if pow2 else np.float64(1.0)
        # an element is in the top binade where its slice's peak is (same scale, monotone test)
        top_a, top_b = (m.size > 0 and bool(top_binade(m.max(axis=axis, keepdims=True), d, s).any())
                        for m, s, axis in ((mag_a, scale_a, -1), (mag_b, scale_b, -2)))
        w, w_mag, g, absolute = weights(d, k, top_a, top_b, engine, lam=lam)
        # w0 |A||B| + |A| E_B + E_A (|B| + E_B) = |A| (w0 |B| + E_B) + E_A (|B| + E_B),
        # one product where B is exact: (w0 |A| + E_A) |B|
        if inexact[0] and not inexact[1]:
            product = np.matmul(w[0] * mag_a + errors[0], mag_b)
        else:
            right = w[0] * mag_b
            if inexact[1]:
                right += errors[1]
            product = np.matmul(mag_a, right)
            if inexact[0]:
                product += np.matmul(errors[0], mag_b + errors[1])
        rows, cols = mag_a.sum(axis=-1, keepdims=True), mag_b.sum(axis=-2, keepdims=True)
        bound = product                          # the products' own buffer, added to in place
        bound += _lines(w, rows, cols, scale_a, scale_b, k, absolute)
        bound += ETA32 if pow2 else 0.0
        bound *= 1 + (2 * k + 4 * d.terms ** 2 + 18) * 2.0 ** -52           # _round_up, in place
        bound += 2.0 ** -1074
        # pow2: every |x| / s is below 2**(scale_exponent(k) + 1), so |A||B| / (s_A s_B) < k 4**(that)
        scaled_peak = k * 4.0 ** (d.scale_exponent(k) + 1) if pow2 else 0.0
        overflow = _overflow(bound, w, w_mag, g, rows, cols, scale_a, scale_b, k, lambda: np.matmul(mag_a, mag_b),
                             scaled_peak)
        bad = ~np.isfinite(a).all(axis=-1, keepdims=True) | ~np.isfinite(b).all(axis=-2, keepdims=True)
        if overflow is None and not bool(bad.any()):
            return bound
        overflow = bad if overflow is None else overflow | bad
    return np.where(overflow, np.inf, bound)
