"""The adaptive fp64 scheme ``ozaki2_int8_adaptive`` (``precision="fp64"``) and the fp64 composition.

CPU: the plan's rule (``required_bits`` against an exact evaluation), its integer steps (slices
partition each operand exactly, every slice entry is held to ``2**-R`` by its integers, the slice
pairs' modular products are exact), ``sp.matmul`` within ``accuracy.gemm_bound`` and that bound
within DGEMM's worst-case bound (hypothesis over GEMMul8's spans up to phi = 64 and float64's range
edges), normwise error within 2x numpy's float64 matmul on the harness's span cases, ±inf beyond
float64's range (every fp64 scheme), NaN/inf where the float64 product has them, batched and 1-D
operands. GPU (marked ``gpu``): the same arithmetic from cupy, and the DGEMM crossover.
"""
from fractions import Fraction
import math

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

import splitprec as sp
from splitprec.accuracy import cases, exact_matmul, gemm_bound
from splitprec.accuracy.measure import measure_gemm
from splitprec.engines import fp64
from splitprec.engines.reference import ozaki as reference_ozaki
from splitprec.ozaki import SCHEMES, scale_exponents
from splitprec import ozaki_plan
from splitprec.ozaki_plan import ADAPTIVE, FirstSlice, gamma, plan, required_bits, slice_levels

U = 2.0 ** -53
TINY = 2.0 ** -1074
FP64 = sp.dtypes("float64")
OZAKI2_FIXED = [d.name for d in SCHEMES]
rng = np.random.default_rng(26)


def span(local, shape, phi, shift=0):
    """GEMMul8's ``(U(0,1) - 0.5) exp(phi N(0,1))`` entries, times ``2**shift``."""
    return np.ldexp(cases.exponent_span(local, shape, phi, np.float64), shift)


def _exact_budget_holds(k, pairs, total_bits, bits):
    """``required_bits``'s inequality in exact rational arithmetic."""
    u = Fraction(1, 2 ** 53)
    rho = Fraction(0) if bits >= 53 else Fraction(1, 2 ** bits)
    pair = 2 * rho + rho * rho + u * (1 + Fraction(1, 2 ** 50)) * (1 + rho) ** 2 + \
        Fraction(2) ** (total_bits - 110 - 2 * bits)
    g = lambda n: n * u / (1 - n * u) if n > 0 else Fraction(0)       # noqa: E731
    total = pair + ((u + g(pairs - 1) ** 2) * (1 + pair) if pairs > 1 else 0)
    return total <= g(k)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 17, 64, 256, 600, 8192, 2 ** 20])
@pytest.mark.parametrize("d", [SCHEMES[0], SCHEMES[-1]], ids=lambda d: d.name)
def test_required_bits_is_the_least_that_meets_gamma_k(k, d):
    pairs = min(4, math.isqrt(max(k - 1, 1))) ** 2
    bits = required_bits(k, pairs, sum(d.bits))
    if k == 1:
        assert bits is None and not _exact_budget_holds(k, pairs, sum(d.bits), 53)
        return
    assert _exact_budget_holds(k, pairs, sum(d.bits), bits)
    assert bits == 1 or not _exact_budget_holds(k, pairs, sum(d.bits), bits - 1)


def _slicing(k, d):
    """``(slices per side, R)`` of ``plan`` for inner dimension k and scheme d."""
    slices = min(4, math.isqrt(max(k - 1, 1)))
    return slices, required_bits(k, slices * slices, sum(d.bits))


@given(seed=st.integers(0, 2 ** 32 - 1), phi=st.floats(0, 64), shift=st.integers(-1000, 900),
       k=st.integers(2, 80), name=st.sampled_from([d.name for d in SCHEMES]), axis=st.sampled_from([-1, -2]))
def test_slices_partition_the_operand_and_hold_each_entry_to_two_to_minus_r(seed, phi, shift, k, name, axis):
    d = sp.dtype(name)
    x = span(np.random.default_rng(seed), (5, k) if axis == -1 else (k, 5), phi, shift)
    x[0, 0] = 0.0
    count, required = _slicing(k, d)
    bits = d.bits[0 if axis == -1 else 1]
    level, overfull = slice_levels(x, bits, required, axis, count)
    slices = [np.where(level == s, x, 0.0) for s in range(count)]
    full = ~np.expand_dims(overfull, axis)                            # lines the slices hold whole
    assert np.array_equal(np.where(full, sum(slices), x), x)          # exact: one slice per entry
    assert not np.any(full & (x != 0) & (level < 0))
    for piece in slices:
        sigma = scale_exponents(piece, bits, axis)
        held = np.ldexp(np.rint(np.ldexp(piece, sigma)), -sigma)
        error = np.abs(held - piece)
        assert np.all(error <= (0.0 if required >= 53 else 2.0 ** -required) * np.abs(piece))


def _slice_levels_by_the_rule(x, bits, required, axis, count):
    """slice_levels as its docstring states the rule: every slice from the remaining entries' own
    scaling, none shared."""
    level, rest = np.full(x.shape, -1, np.int8), x
    for s in range(count):
        keep = (rest != 0) & (scale_exponents(rest, bits, axis) + np.frexp(rest)[1] >= required)
        level, rest = np.where(keep, np.int8(s), level), np.where(keep, 0.0, rest)
    return level, (rest != 0).any(axis=axis)


@given(seed=st.integers(0, 2 ** 32 - 1), phi=st.floats(0, 64), k=st.integers(2, 80),
       axis=st.sampled_from([-1, -2]), zero=st.booleans())
def test_one_first_slice_serves_every_candidate_of_the_plan(seed, phi, k, axis, zero):
    """The plan's candidates share one FirstSlice per side: their levels and overfull lines are
    those of the rule applied afresh, for every scheme's bits and R."""
    x = span(np.random.default_rng(seed), (6, k) if axis == -1 else (k, 6), phi)
    if zero:
        x[...] = 0.0
    first = FirstSlice.of(x, axis)
    for d in SCHEMES:
        count, required = _slicing(k, d)
        if required is None:
            continue
        bits = d.bits[0 if axis == -1 else 1]
        got, expected = slice_levels(x, bits, required, axis, count, first), \
            _slice_levels_by_the_rule(x, bits, required, axis, count)
        assert got[0].dtype == np.int8
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])


@given(seed=st.integers(0, 2 ** 32 - 1), phi=st.floats(0, 40), k=st.integers(2, 90), batch=st.sampled_from([(), (3,)]),
       zero_rows=st.booleans())
def test_plan_is_the_least_cost_candidate_of_every_count(seed, phi, k, batch, zero_rows):
    """plan skips the counts whose least possible cost cannot beat the best found: its choice is the
    least (float64 share, int8 GEMMs) of every count's plan, the first count on a tie, as planning
    them all gives; and each skipped count's floor lies at or below its actual cost."""
    local = np.random.default_rng(seed)
    a, b = span(local, batch + (7, k), phi), span(local, batch + (k, 5), phi)
    if zero_rows:
        a[..., 2, :] = 0.0
        b[..., :, 1] = 0.0
    slices = min(4, math.isqrt(max(k - 1, 1)))
    firsts = FirstSlice.of(a, -1), FirstSlice.of(b, -2)
    every = [(i, ozaki_plan._candidate(a, b, d, slices, firsts)) for i, d in enumerate(SCHEMES)]
    every = [(i, c) for i, c in every if c is not None]
    chosen = plan(a, b)
    if not every:
        assert chosen.scheme is None
        return
    i, expected = min(every, key=lambda ic: (ic[1].float64_share, ic[1].int8_gemms, ic[0]))
    assert chosen.scheme is expected.scheme
    assert (chosen.float64_share, chosen.int8_gemms) == (expected.float64_share, expected.int8_gemms)
    np.testing.assert_array_equal(chosen.level_a, expected.level_a)
    np.testing.assert_array_equal(chosen.level_b, expected.level_b)
    for i, c in every:
        assert ozaki_plan._key_floor(a, SCHEMES[i], slices, firsts) <= (c.float64_share, c.int8_gemms)


@given(seed=st.integers(0, 2 ** 32 - 1), phi=st.floats(0, 12), k=st.integers(2, 60))
def test_every_slice_pair_product_is_exact_modulo_each_modulus(seed, phi, k):
    local = np.random.default_rng(seed)
    a, b = span(local, (3, k), phi), span(local, (k, 4), phi)
    p = plan(a, b)
    d = p.scheme
    for x, y, _, _ in p.pieces(a, b):
        ints_x = np.rint(np.ldexp(x, scale_exponents(x, d.bits[0], -1)))
        ints_y = np.rint(np.ldexp(y, scale_exponents(y, d.bits[1], -2)))
        products = reference_ozaki._modular_products(reference_ozaki.residues(ints_x, d),
                                                     reference_ozaki.residues(ints_y, d), d)
        exact = [[sum(int(p_) * int(q) for p_, q in zip(row, col)) for col in ints_y.T] for row in ints_x]
        for m, got in zip(d.moduli, products):
            assert all(int(g) % m == e % m for g_row, e_row in zip(got, exact) for g, e in zip(g_row, e_row))


def _check(a, b, engine="cpu"):
    """``sp.matmul(a, b, precision="fp64")`` within its bound, and the bound within DGEMM's."""
    c = sp.matmul(a, b, precision="fp64")
    with np.errstate(all="ignore"):
        exact = exact_matmul(a, b)
    bound = gemm_bound(a, b, ADAPTIVE, engine)
    finite = np.isfinite(exact)
    assert c.dtype == np.float64 and c.shape == exact.shape
    assert np.array_equal(c[~finite & ~np.isfinite(bound)], exact[~finite & ~np.isfinite(bound)], equal_nan=True)
    assert np.all(np.abs(c - exact)[finite] <= bound[finite]), float(np.max(np.abs(c - exact)[finite] / bound[finite]))
    k = a.shape[-1]
    with np.errstate(all="ignore"):
        magnitude = np.abs(np.where(np.isfinite(a), a, 0)) @ np.abs(np.where(np.isfinite(b), b, 0))
    # DGEMM's worst case gamma_k |A||B| + k 2**-1075, plus the reference's own rounding u|A||B|,
    # as evaluated in float64 (the bound's roundings, its per-pair allowance for subnormal terms).
    dgemm = (gamma(k) + U) * magnitude * (1 + (k + 64) * 2.0 ** -52) + 16 * (3 * k + 16) * TINY
    where = np.isfinite(bound) & (magnitude < 2.0 ** 1000)
    assert np.all(bound[where] <= dgemm[where]), float(np.max(bound[where] / dgemm[where]))
    return c, exact


@given(seed=st.integers(0, 2 ** 32 - 1), m=st.integers(1, 5), k=st.integers(1, 80), n=st.integers(1, 5),
       phi=st.one_of(st.floats(0, 10), st.floats(0, 64)),
       shifts=st.tuples(st.integers(-1070, 1000), st.integers(-1070, 1000)),
       sparse=st.floats(0, 0.9))
@example(seed=1, m=4, k=64, n=4, phi=16.0, shifts=(0, 0), sparse=0.0)
@example(seed=2, m=3, k=40, n=3, phi=64.0, shifts=(900, 100), sparse=0.5)
@example(seed=3, m=3, k=40, n=3, phi=4.0, shifts=(-600, -470), sparse=0.0)
@example(seed=4, m=2, k=3, n=2, phi=0.0, shifts=(1020, 0), sparse=0.0)
def test_adaptive_error_within_bound_on_spans_and_range_edges(seed, m, k, n, phi, shifts, sparse):
    local = np.random.default_rng(seed)
    a, b = span(local, (m, k), phi, shifts[0]), span(local, (k, n), phi, shifts[1])
    a[local.random(a.shape) < sparse] = 0.0
    _check(a, b)
    _check(a, b, "gpu")


@pytest.mark.parametrize("case", [c for c in cases.registry("full", "gemm", "float64")
                                  if c.name.startswith(("fp64_span", "fp64_scaled", "fp64_row_span"))],
                         ids=lambda c: c.name)
def test_normwise_error_within_twice_dgemm_on_span_cases(case):
    a, b = case.inputs(seed=0)
    measured = measure_gemm(a, b, ADAPTIVE.name)
    assert measured.ratio <= 1
    assert measured.normwise <= 2 * measured.native, (measured.normwise, measured.native)


def test_adaptive_path_spends_slices_moduli_or_float64_as_the_span_needs():
    local = np.random.default_rng(0)
    normal = plan(local.standard_normal((16, 256)), local.standard_normal((256, 16)))
    assert normal.float64_share == 0 and normal.scheme.terms >= 14 and len(normal.rows[0]) == 16
    wide = span(local, (16, 256), 4), span(local, (256, 16), 4)
    sliced = plan(*wide)
    assert sliced.float64_share == 0 and sum(r.size > 0 for r in sliced.rows) >= 2
    assert plan(span(local, (16, 256), 64), span(local, (256, 16), 64)).everything_float64
    assert plan(local.standard_normal((3, 1)), local.standard_normal((1, 3))).everything_float64   # k = 1


@pytest.mark.parametrize("name", FP64)
def test_results_beyond_float64_range_are_inf_regression(name):
    a, b = np.array([[2.0 ** 1000, 2.0 ** 500]]), np.array([[2.0 ** -1000], [2.0 ** 600]])
    assert sp.matmul(a, b, dtype=name)[0, 0] == np.inf
    assert sp.matmul(-a, b, dtype=name)[0, 0] == -np.inf
    edge = cases.registry("full", "gemm", "float64")
    for case in [c for c in edge if c.name in ("fp64_beyond_range_k2", "fp64_span_near_max_k64")]:
        x, y = case.inputs(seed=0)
        exact = exact_matmul(x, y)
        got = sp.matmul(x, y, dtype=name)
        for test in (np.isposinf, np.isneginf):
            assert np.array_equal(test(got), test(exact))


@pytest.mark.parametrize("name", FP64)
def test_partial_sums_past_the_range_give_the_finite_result(name):
    a = np.array([[0.75, 0.75, -0.75]]) * np.finfo(np.float64).max
    b = np.ones((3, 1))
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.isfinite(a @ b).all()                          # float64 BLAS overflows here
    assert sp.matmul(a, b, dtype=name)[0, 0] == exact_matmul(a, b)[0, 0]


specials = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 1e-310, 1e300, 2.0 ** 1020])


@pytest.mark.parametrize("scheme", ["ozaki2_int8_adaptive", "ozaki2_int8x14"])
@given(data=st.data())
def test_nonfinite_results_exactly_where_the_float64_product_has_them(scheme, data):
    m, k, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 6)), data.draw(st.integers(1, 4))
    local = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    a, b = span(local, (m, k), data.draw(st.floats(0, 16))), local.standard_normal((k, n))
    for array in (a, b):
        for _ in range(data.draw(st.integers(0, 3))):
            array[tuple(data.draw(st.integers(0, s - 1)) for s in array.shape)] = data.draw(specials)
    with np.errstate(all="ignore"):
        reference = exact_matmul(a, b)
    c = sp.matmul(a, b, dtype=scheme)
    for test in (np.isnan, np.isposinf, np.isneginf):
        assert np.array_equal(test(c), test(reference))


@pytest.mark.parametrize("shape_a, shape_b", [((2, 3, 40), (40, 5)), ((2, 1, 4, 30), (3, 30, 2)), ((30,), (30, 4)),
                                              ((3, 30), (30,)), ((30,), (30,)), ((0, 4), (4, 3)), ((2, 0), (0, 3))])
def test_batched_and_one_d_operands_follow_numpy(shape_a, shape_b):
    local = np.random.default_rng(1)
    a, b = span(local, shape_a, 4), span(local, shape_b, 4)
    c = sp.matmul(a, b, precision="fp64")
    assert type(c) is type(np.matmul(a, b)) and c.dtype == np.float64 and c.shape == np.matmul(a, b).shape
    if c.size:
        _check(a.reshape((1,) * (a.ndim == 1) + a.shape), b.reshape(b.shape + (1,) * (b.ndim == 1)))


def test_two_sum_is_exact():
    s, p = rng.standard_normal(1000) * 2.0 ** rng.integers(-60, 60, 1000), rng.standard_normal(1000)
    t, e = fp64.two_sum(s, p)
    assert all(Fraction(float(x)) + Fraction(float(y)) == Fraction(float(q)) + Fraction(float(r))
               for x, y, q, r in zip(s, p, t, e))


def test_crossover_is_read_from_the_tuning_table():
    from splitprec.engines.cuda.tuning import TUNING
    entry = TUNING["fp64"]
    assert entry["source"] is None and "not yet measured" in entry["about"].lower()
    assert (fp64.DGEMM_BELOW, fp64.DGEMM_IN_INT8_GEMMS) == (entry["dgemm_below"], entry["dgemm_in_int8_gemms"])


# ---- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("phi", [0, 1, 4, 8])
def test_gpu_adaptive_plan_returns_the_numpy_engine_s_bits(phi, monkeypatch):
    import cupy
    monkeypatch.setattr(fp64, "DGEMM_BELOW", 0)
    monkeypatch.setattr(fp64, "DGEMM_IN_INT8_GEMMS", np.inf)
    local = np.random.default_rng(phi)
    a, b = span(local, (33, 200), phi), span(local, (200, 17), phi)
    expected = sp.matmul(a, b, precision="fp64")
    got = sp.matmul(cupy.asarray(a), cupy.asarray(b), precision="fp64")
    assert isinstance(got, cupy.ndarray)
    if plan(a, b).float64_share == 0:
        assert np.array_equal(got.get(), expected)
    exact = exact_matmul(a, b)
    assert np.all(np.abs(got.get() - exact) <= gemm_bound(a, b, ADAPTIVE, "gpu"))


@pytest.mark.gpu
def test_gpu_runs_dgemm_below_the_crossover():
    import cupy
    a, b = cupy.asarray(rng.standard_normal((64, 64))), cupy.asarray(rng.standard_normal((64, 64)))
    assert cupy.array_equal(sp.matmul(a, b, precision="fp64"), cupy.matmul(a, b))


@pytest.mark.gpu
@pytest.mark.parametrize("name", FP64)
def test_gpu_overflow_and_nonfinite_as_in_float64(name):
    import cupy
    a, b = np.array([[2.0 ** 1000, 2.0 ** 500], [1.0, np.inf]]), np.array([[2.0 ** -1000, 0.0], [2.0 ** 600, 1.0]])
    with np.errstate(all="ignore"):
        reference = exact_matmul(a, b)
    got = sp.matmul(cupy.asarray(a), cupy.asarray(b), dtype=name).get()
    for test in (np.isnan, np.isposinf, np.isneginf):
        assert np.array_equal(test(got), test(reference))


def _benchmark():
    pytest.importorskip("cupy")
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "gemm_fp64.py"
    spec = importlib.util.spec_from_file_location("gemm_fp64", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_samples_errors_against_the_exact_product_and_tabulates():
    bench = _benchmark()
    a, b = bench.operands(np, 0, 48, 4.0)
    assert a.shape == b.shape == (48, 48) and a.dtype == np.float64 and np.ptp(np.log2(np.abs(a))) > 20
    rows, cols = np.arange(0, 48, 5), np.arange(3, 48, 7)
    c = sp.matmul(a, b, dtype="ozaki2_int8x14")
    normwise, ratio = bench.sampled_error(a, b, c, rows, cols, "ozaki2_int8x14")
    exact = exact_matmul(a[rows], b[:, cols])
    assert normwise == np.linalg.norm(c[rows][:, cols] - exact) / np.linalg.norm(exact) and 0 < ratio <= 1
    assert bench.sampled_error(a, b, a @ b, rows, cols)[1] <= 1            # DGEMM within its worst case
    assert bench.sampled_error(a, b, 2 * (a @ b), rows, cols)[1] > 1
    records = [{"n": 48, "inputs": "span", "phi": 4.0, "name": name, "tflops": t, "rel_error": e}
               for name, t, e in (("cublas_dgemm", 50.0, 1e-16), ("precision_fp64", 75.0, 5e-17))]
    assert "| 48 | phi = 4 | precision_fp64 | 75.0 | 1.50 | 5.0e-17 | 0.5 |" in bench.table(records)
    assert [name for name, _, _ in bench.rows_of(None)] == ["cublas_dgemm", "precision_fp64"] + OZAKI2_FIXED
