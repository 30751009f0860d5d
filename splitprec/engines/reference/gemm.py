"""The reference engine: a scheme's product as a sum of narrow products, on numpy or cupy arrays.

Each narrow product ``A_i @ B_j`` is exact in float32 term by term (parts have at most 11
significant bits, so a product has at most 22), so a float32 BLAS computes it with only its
accumulation rounding (round to nearest, ``u = 2**-24``). The products are then added in float32,
smallest first, each scaled back by ``2**-(i+j)*shift``, and the pow2 row/column scales are undone
last (one rounding: ±inf beyond float32's range, subnormals kept). This is the arithmetic model
the GPU kernels follow (docs/bounds.md). NaN and ±inf inputs are taken as zeros in the products
and the float64 product's non-finite pattern is put back after. Entries whose ``|A||B|`` may reach
the top of float32's range (their row and column exponents sum to ``d.overflow_exponent(k)`` or
more) are recomputed as float64 dot products rounded once to float32, ties included: ±inf where
the product is beyond the float32 range, as float32 arithmetic gives.
"""
import numpy as np

from ..._backend import namespace
from ...split import Parts, split


def narrow_matmul(parts_a, parts_b, d):
    """``sum_(i,j) in d.products  A_i @ B_j * 2**-((i+j)*d.shift)`` in float32, smallest first.

    The parts are made C-contiguous first: BLAS picks its kernel, and so its order of summation,
    by the operands' layout, and the result must not depend on the inputs' strides. Each product
    is its own BLAS call over the whole ``k`` (a call's order of summation depends on its shape),
    written into one buffer and added into the total in place: one rounding per addition, as the
    model says, and two product-sized arrays in all."""
    xp = namespace(parts_a.terms[0])
    terms_a = [xp.ascontiguousarray(t) for t in parts_a.terms]
    terms_b = [xp.ascontiguousarray(t) for t in parts_b.terms]
    total = product = None
    for i, j in d.products:
        product = xp.matmul(terms_a[i], terms_b[j], out=product)
        if (i + j) * d.shift:
            xp.ldexp(product, -(i + j) * d.shift, out=product)
        if total is None:
            total, product = product, None
        else:
            total += product
    if parts_a.exponent is not None:
        xp.ldexp(total, xp.add(parts_a.exponent, parts_b.exponent, dtype=np.int16), out=total)
    return total


def nonfinite_pattern(a, b):
    """The product's values where non-finite inputs make it NaN/inf (finite elsewhere), on numpy.

    Finite entries become their signs, so each finite sum is an integer of magnitude <= k while
    inf*0, inf-inf and NaN behave as in the float64 product (the GPU engines' fix-up kernel,
    kernels/gemm_nonfinite_sm80.cu, does the same).
    """
    return np.matmul(np.where(np.isfinite(a), np.sign(a), a), np.where(np.isfinite(b), np.sign(b), b))


def _near_top(parts_a, parts_b, c, d, k):
    """Mask of the entries whose ``|A||B|`` may reach ``2**126`` (``SplitDType.overflow_exponent``),
    and those whose narrow products overflowed anyway; None when there is none."""
    overflowed = ~np.isfinite(c)
    threshold = d.overflow_exponent(k)
    if parts_a.exponent.size and parts_b.exponent.size and \
            int(parts_a.exponent.max()) + int(parts_b.exponent.max()) >= threshold:
        overflowed |= parts_a.exponent + parts_b.exponent >= threshold
    return overflowed if overflowed.any() else None


def _recompute(a, b, c, where):
    """``c`` with the entries ``where`` (a mask) replaced by their float64 dot products rounded once
    to float32 (the products are exact in float64; ±inf beyond the float32 range)."""
    where = np.nonzero(np.broadcast_to(where, c.shape))
    batch = c.shape[:-2]
    rows = np.broadcast_to(a, batch + a.shape[-2:])[where[:-1]].astype(np.float64)
    cols = np.moveaxis(np.broadcast_to(b, batch + b.shape[-2:]), -1, -2)[where[:-2] + where[-1:]]
    c[where] = (rows * cols.astype(np.float64)).sum(axis=-1).astype(np.float32)
    return c


def _finite_parts(parts):
    """The parts of an array with its non-finite entries zeroed, from the array's own parts."""
    hi = parts.terms[0]
    return Parts((np.where(np.isfinite(hi), hi, np.float32(0)),) + parts.terms[1:], parts.exponent)


def _product(a, b, d, parts_a, parts_b):
    """``(product with NaN/inf inputs taken as zeros, whether every input is finite)`` on numpy."""
    all_finite = bool(np.isfinite(a).all()) and bool(np.isfinite(b).all())
    if not all_finite:
        parts_a, parts_b = (p if p is None else _finite_parts(p) for p in (parts_a, parts_b))
        a, b = (np.where(np.isfinite(x), x, np.float32(0)) for x in (a, b))
    parts_a = split(a, d, axis=-1) if parts_a is None else parts_a
    parts_b = split(b, d, axis=-2) if parts_b is None else parts_b
    c = narrow_matmul(parts_a, parts_b, d)
    near_top = _near_top(parts_a, parts_b, c, d, a.shape[-1])
    if near_top is not None:
        c = _recompute(a, b, c, near_top)
    return c, all_finite


def matmul(a, b, d, parts_a=None, parts_b=None):
    """``a @ b`` for float32 numpy arrays of ndim >= 2 (batch dimensions broadcast) in scheme ``d``:
    NaN/inf exactly where the float64 product has them. ``parts_a``/``parts_b``: the operands'
    split when already known (a SplitArray's cache)."""
    with np.errstate(over="ignore", invalid="ignore"):   # overflow is handled in the products
        c, all_finite = _product(a, b, d, parts_a, parts_b)
    return c if all_finite else with_nonfinite(c, a, b)


def with_nonfinite(c, a, b):
    """``c`` with the float64 product's NaN/inf where non-finite inputs put them."""
    with np.errstate(invalid="ignore"):         # inf * 0 and inf - inf are the point
        pattern = nonfinite_pattern(a, b)
    return np.where(np.isfinite(pattern), c, pattern)
