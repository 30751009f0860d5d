"""float64 products of the fp64 schemes, one composition for both engines.

``ozaki2_int8x<N>`` runs the engine's fixed-count Ozaki-II product; ``ozaki2_int8_adaptive``
(``precision="fp64"``) runs the plan of ``splitprec.ozaki_plan``: one fixed-count product of the
slices stacked, which holds every slice pair's product, the pair results added by Sum2, float64
dot products for the rows and columns the plan gives them. The fixed-count product is
``splitprec.engines.reference.ozaki.matmul`` on numpy and ``splitprec.engines.cuda.ozaki.matmul``
on cupy, a float64 dot product is ``xp.matmul`` (numpy's BLAS, cuBLAS DGEMM); everything else is
elementwise numpy/cupy and indexing, the same code on both.
For every scheme: NaN/inf inputs are zeros in the products and the float64 product's NaN/inf are put
back after; entries whose rows' and columns' norms allow a result beyond float64's range are
recomputed as float64 dot products, so results beyond the range are ±inf as in DGEMM. On the GPU
the fixed-count schemes do both on the device (``cuda.ozaki.matmul(..., rescue=True)``), so the
call queues its work without waiting.

On the GPU, ``precision="fp64"`` runs cuBLAS DGEMM for products below ``DGEMM_BELOW`` cubed
multiply-adds and for plans whose int8 work costs more than one DGEMM (``DGEMM_IN_INT8_GEMMS``):
the ``fp64`` entry of ``splitprec/engines/cuda/tuning.json``. On the CPU the plan always runs: the
reference engine is the model of the arithmetic, not a fast path.
"""
import numpy as np


from .._backend import broadcast_shapes, namespace
from ..ozaki_plan import ADAPTIVE, RESCUE_EXPONENT, block_index, overflow_risk, plan
from .cuda import ozaki as cuda_ozaki
from .cuda.tuning import TUNING
from .reference import ozaki as reference_ozaki

DGEMM_BELOW = TUNING["fp64"]["dgemm_below"]
DGEMM_IN_INT8_GEMMS = TUNING["fp64"]["dgemm_in_int8_gemms"]


def two_sum(s, p):
    """``(t, e)`` with ``t = fl(s + p)`` and ``t + e = s + p`` exactly (Knuth's TwoSum)."""
    t = s + p
    z = t - s
    return t, (s - (t - z)) + (p - z)


def run_plan(p, a, b, product):
    """``a @ b`` by plan ``p`` (finite float64 ``a``, ``b``): one ``product(x, y, d)`` of the stacked
    slices (``p.operands``), which holds every slice pair's product, the pair results added by Sum2
    (each into a TwoSum accumulator, the rounding errors summed apart and added last), and float64
    dot products for ``p``'s float64 rows and columns. The first pair goes into the zero
    accumulator as ``0 + x``: TwoSum's error is +0 there (a result that overflowed is the
    rescue's, ``rescue_overflow``)."""
    xp = namespace(a, b)
    if p.everything_float64:
        return xp.matmul(a, b)
    shape = broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    total, errors = xp.zeros(shape), xp.zeros(shape)
    products = product(*p.operands(a, b), p.scheme)
    for i, (rows, cols, x_rows, y_cols) in enumerate(p.pairs()):
        block = block_index(rows, cols)
        if i == 0:
            total[block] += products[..., x_rows, y_cols]
        else:
            total[block], error = two_sum(total[block], products[..., x_rows, y_cols])
            errors[block] += error
    c = xp.add(total, errors, out=total)
    rows, cols = xp.nonzero(p.float64_rows)[0], xp.nonzero(p.float64_cols)[0]
    if rows.size:
        c[..., rows, :] = xp.matmul(a[..., rows, :], b)
    if cols.size:
        c[..., cols] = xp.matmul(a, b[..., cols])
    return c


def _dgemm_preferred(a, b):
    """GPU only: a product below the measured crossover (``DGEMM_BELOW``)."""
    batch = np.prod(broadcast_shapes(a.shape[:-2], b.shape[:-2]), dtype=float)
    return batch * a.shape[-2] * a.shape[-1] * b.shape[-1] < float(DGEMM_BELOW) ** 3


def _adaptive(a, b, product):
    """``(a @ b, the rows' and columns' norm exponents where the plan gave them, else None)``."""
    xp = namespace(a, b)
    on_gpu = xp is not np
    if on_gpu and _dgemm_preferred(a, b):
        return xp.matmul(a, b), None
    p = plan(a, b)
    if on_gpu and p.int8_gemms > (1 - p.float64_share) * DGEMM_IN_INT8_GEMMS:
        return xp.matmul(a, b), p.norm_exponents
    return run_plan(p, a, b, product), p.norm_exponents


def rescue_overflow(a, b, c, exponents=None):
    """``c`` with the entries that ``overflow_risk`` marks recomputed as float64 dot products of
    finite ``a``, ``b``: the plain dot where it stays finite (no product or partial sum overflowed:
    DGEMM's bound holds), else the dot of the rows and columns scaled to 2-norms <= 2**510 (no
    partial sum can overflow) scaled back, which is ±inf beyond float64's range. ``exponents``:
    the rows' and columns' norm exponents when already known."""
    xp = namespace(a, b)
    risky, e_a, e_b = overflow_risk(a, b, exponents)
    if not bool(risky.any()):
        return c
    rows = xp.nonzero(risky.any(axis=-1).reshape(-1, risky.shape[-2]).any(axis=0))[0]
    cols = xp.nonzero(risky.any(axis=-2).reshape(-1, risky.shape[-1]).any(axis=0))[0]
    x, y = a[..., rows, :], b[..., cols]
    s = xp.maximum(e_a[..., rows, :] - RESCUE_EXPONENT, 0)
    t = xp.maximum(e_b[..., cols] - RESCUE_EXPONENT, 0)
    plain = xp.matmul(x, y)
    scaled = xp.ldexp(xp.matmul(xp.ldexp(x, -s), xp.ldexp(y, -t)), s + t)
    block = (Ellipsis, rows[:, None], cols[None, :])
    c[block] = xp.where(risky[block], xp.where(xp.isfinite(plain), plain, scaled), c[block])
    return c


def with_nonfinite(c, a, b):
    """``c`` with the float64 product's NaN/inf where NaN/inf inputs put them: the product of the
    finite entries' signs and the non-finite entries (inf * 0 and inf - inf give NaN there, each
    finite sum is an integer of magnitude <= k), over the rows of ``a`` and columns of ``b`` that
    hold a non-finite entry."""
    xp = namespace(a, b)
    bad_a, bad_b = ~xp.isfinite(a), ~xp.isfinite(b)
    signs_a, signs_b = xp.where(bad_a, a, xp.sign(a)), xp.where(bad_b, b, xp.sign(b))
    rows = xp.nonzero(bad_a.any(axis=-1).reshape(-1, a.shape[-2]).any(axis=0))[0]
    cols = xp.nonzero(bad_b.any(axis=-2).reshape(-1, b.shape[-1]).any(axis=0))[0]
    if rows.size:
        pattern = xp.matmul(signs_a[..., rows, :], signs_b)
        c[..., rows, :] = xp.where(xp.isfinite(pattern), c[..., rows, :], pattern)
    if cols.size:
        pattern = xp.matmul(signs_a, signs_b[..., cols])
        c[..., cols] = xp.where(xp.isfinite(pattern), c[..., cols], pattern)
    return c


def matmul(a, b, d):
    """``a @ b`` for float64 numpy or cupy arrays of ndim >= 2 (batch dimensions broadcast) in the
    fp64 scheme ``d`` (``ozaki2_int8x<N>`` or ``ozaki2_int8_adaptive``): NaN/inf exactly where the
    float64 product has them from NaN/inf inputs, ±inf where a result is beyond float64's range.

    Accuracy: ``accuracy.gemm_bound(a, b, d)``, checked by
    ``tests/test_ozaki.py::test_matmul_error_within_bound`` and
    ``tests/test_fp64.py::test_adaptive_error_within_bound_on_spans_and_range_edges``.
    """
    xp = namespace(a, b)
    shape = broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    if 0 in shape or a.shape[-1] == 0:
        return xp.zeros(shape)
    if xp is not np and d != ADAPTIVE:      # NaN/inf and the rescue on the device: no host wait
        return cuda_ozaki.matmul(a, b, d, rescue=True)
    finite = bool(xp.isfinite(a).all()) and bool(xp.isfinite(b).all())
    clean_a, clean_b = (x if finite else xp.where(xp.isfinite(x), x, 0.0) for x in (a, b))
    product = (reference_ozaki if xp is np else cuda_ozaki).matmul
    with np.errstate(over="ignore", invalid="ignore"):     # overflow is what the rescue is for
        if d == ADAPTIVE:
            c, exponents = _adaptive(clean_a, clean_b, product)
        else:
            c, exponents = product(clean_a, clean_b, d), None
        c = rescue_overflow(clean_a, clean_b, c, exponents)
        return c if finite else with_nonfinite(c, a, b)
