"""What each scheme's bound guarantees, as a class and an exponent span: ``class_span``, ``class_label``.

The class of a scheme is that of its target's native product: "fp32" when the bound is float32
SGEMM's worst-case bound plus at most 16 float32 roundings per product (docs/bounds.md section 8),
"fp64" when it is float64 DGEMM's worst-case bound ``gamma_k |A||B|`` plus at most 16 float64
roundings per product (section 12). A scheme holds its class on every row of A and column of B whose
entries lie within its span: that many binades below the row's (column's) largest entry (zeros count
as outside it for the float32 schemes, whose bound charges every element the underflow of its parts;
the fp64 bound holds zeros exactly). The span is unlimited (``math.inf``) for the fp32-class schemes
and the adaptive fp64 scheme, finite for ``fp16x3`` (the fp16 range) and the fixed
``ozaki2_int8x<N>`` (their modulus budget), and None for the schemes below class at any span.
"""
import math

import splitprec
from splitprec.dtypes import FP32_CLASS_PRODUCT_ERROR

NATIVE_CLASS = {"float32": "fp32", "float64": "fp64"}
FP32_SPAN_MARGIN = 3       # float32 schemes: span = exact_span() - 3 (docs/bounds.md section 8)
FP64_SPAN_OFFSET = 52      # fixed Ozaki-II schemes: span = min(Q_A, Q_B) - 52 (docs/bounds.md section 12)


def class_span(scheme):
    """Binades below each row's (column's) largest entry within which ``scheme`` is of its target's
    class: ``math.inf`` (every span), an int, or None (below class at every span).

    float32 targets whose per-product error is fp32 class: ``exact_span() - 3`` (inf for
    ``fp32_class``, whose exact span covers float32's normal range): at ``exact_span()`` binades
    below the top the lowest part may be subnormal, with an underflow error up to the split
    error itself, and three binades higher an eighth of it, which the 16 roundings per product
    leave room for (fp16x3: 25). Fixed Ozaki-II schemes: ``min(Q_A, Q_B) - 52``
    where that is >= 0 (x14: 2, x18: 17), which keeps each entry's rounding within
    ``sqrt(k) (1 + 2**(1 - G) sqrt(k)) 2**(span - Q)`` of it, at most ``(k + 14) u / 2`` at every k
    (``u = 2**-53``); the adaptive scheme spends what each span needs (inf).
    """
    d = splitprec.dtype(scheme)
    if d.target == "float32":
        if d.fp32_class:
            return math.inf
        limited = d.scaling == "pow2" and d.product_error <= FP32_CLASS_PRODUCT_ERROR
        return d.exact_span() - FP32_SPAN_MARGIN if limited else None
    if not hasattr(d, "bits"):
        return math.inf if d.fp64_class else None
    span = min(d.bits) - FP64_SPAN_OFFSET
    return span if span >= 0 else None


def class_label(scheme):
    """``scheme``'s class in words: ``"fp32"``, ``"fp64"`` (every span), ``"fp32 within 25 binades"``,
    ``"fp64 within 2 binades"`` (:func:`class_span`), ``"< fp32 (16-bit split)"`` (the bits of its
    parts) or ``"< fp64"``."""
    d = splitprec.dtype(scheme)
    native, span = NATIVE_CLASS[d.target], class_span(scheme)
    if span == math.inf:
        return native
    if span is not None:
        return f"{native} within {span} binades"
    if d.target == "float32":
        return f"< fp32 ({min(24, d.terms * d.format.p)}-bit split)"
    return "< fp64"
