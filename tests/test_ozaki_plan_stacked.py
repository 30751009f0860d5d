"""The adaptive product's plan run as one fixed-count product of the stacked slices (not one per
slice pair), the first pair added into the zero accumulator directly: the bits of the per-pair
products with TwoSum on every pair.
"""
import numpy as np
from hypothesis import given, strategies as st

import splitprec as sp
from splitprec.accuracy import cases
from splitprec.engines import fp64
from splitprec.engines.reference import ozaki as reference_ozaki
from splitprec.ozaki_plan import plan


def span(local, shape, phi):
    """GEMMul8's ``(U(0,1) - 0.5) exp(phi N(0,1))`` entries."""
    return cases.exponent_span(local, shape, phi, np.float64)


def bits(x):
    return np.asarray(x).view(np.uint64)


def _pair_by_pair(p, a, b):
    """``run_plan``'s result computed as the plan defines it: each slice pair's own product, every
    pair added by TwoSum, the float64 rows and columns by float64 dot products."""
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    total, errors = np.zeros(shape), np.zeros(shape)
    for s, rows in enumerate(p.rows):
        for t, cols in enumerate(p.cols):
            if rows.size and cols.size:
                x = np.where(p.level_a == s, a, 0.0)[..., rows, :]
                y = np.where(p.level_b == t, b, 0.0)[..., cols]
                block = (Ellipsis, rows[:, None], cols[None, :])
                total[block], error = fp64.two_sum(total[block], reference_ozaki.matmul(x, y, p.scheme))
                errors[block] += error
    c = total + errors
    rows, cols = np.nonzero(p.float64_rows)[0], np.nonzero(p.float64_cols)[0]
    c[..., rows, :] = np.matmul(a[..., rows, :], b)
    c[..., cols] = np.matmul(a, b[..., cols])
    return c


@given(seed=st.integers(0, 2 ** 32 - 1), phi=st.floats(0, 40), k=st.integers(2, 70),
       batch=st.sampled_from([(), (2,)]), zero_rows=st.booleans())
def test_stacked_plan_product_equals_each_pair_product_bit_for_bit(seed, phi, k, batch, zero_rows):
    local = np.random.default_rng(seed)
    a, b = span(local, batch + (9, k), phi), span(local, (k, 7), phi)
    if zero_rows:
        a[..., 3, :], b[:, 2] = 0.0, 0.0
    p = plan(a, b)
    if p.everything_float64:
        return
    got = fp64.run_plan(p, a, b, reference_ozaki.matmul)
    assert np.array_equal(bits(got), bits(_pair_by_pair(p, a, b)))


def test_adaptive_product_calls_the_fixed_count_engine_once(monkeypatch):
    """Every slice pair in one product: each operand's residues are computed once."""
    calls = []
    engine = reference_ozaki.matmul
    monkeypatch.setattr(reference_ozaki, "matmul", lambda x, y, d: calls.append(d) or engine(x, y, d))
    local = np.random.default_rng(5)
    a, b = span(local, (40, 300), 8), span(local, (300, 30), 8)
    assert all(lines.size for lines in plan(a, b).rows + plan(a, b).cols)     # four slices per side
    sp.matmul(a, b, precision="fp64")
    assert len(calls) == 1
