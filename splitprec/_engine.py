"""The reference engine: a scheme's product as a sum of narrow products, on numpy or cupy arrays.

Each narrow product ``A_i @ B_j`` is exact in float32 term by term (parts have at most 11
significant bits, so a product has at most 22), so a float32 BLAS computes it with only its
accumulation rounding (round to nearest, ``u = 2**-24``). The products are then added in float32,
smallest first, each scaled back by ``2**-(i+j)*shift``, and the pow2 row/column scales are undone
last. This is the arithmetic model the GPU kernels follow (docs/bounds.md).
"""
import numpy as np

from ._backend import namespace


def narrow_matmul(parts_a, parts_b, d):
    """``sum_(i,j) in d.products  A_i @ B_j * 2**-((i+j)*d.shift)`` in float32, smallest first.

    The parts are made C-contiguous first: BLAS picks its kernel, and so its order of summation,
    by the operands' layout, and the result must not depend on the inputs' strides."""
    xp = namespace(parts_a.terms[0])
    terms_a = [xp.ascontiguousarray(t) for t in parts_a.terms]
    terms_b = [xp.ascontiguousarray(t) for t in parts_b.terms]
    total = None
    for i, j in d.products:
        product = xp.matmul(terms_a[i], terms_b[j])
        if (i + j) * d.shift:
            product = xp.ldexp(product, -(i + j) * d.shift).astype(np.float32)
        total = product if total is None else total + product
    if parts_a.exponent is not None:
        total = xp.ldexp(total, parts_a.exponent + parts_b.exponent).astype(np.float32)
    return total
