"""Ozaki scheme II (``ozaki2_int8x<N>``): records, scaling rule, residues, CRT, sp.matmul, bound.

CPU: the registry and the record identities, exact residues and CRT recovery (hypothesis), the
scaling rule's norm bound, sp.matmul within ``accuracy.gemm_bound`` of ``exact_matmul`` on N(0,1),
rows and columns scaled by 2**±300, zeros, k = 1 and k beyond one int32 k-block, batches and
NaN/inf; the kernels compile with NVRTC. GPU (marked ``gpu``): the residue kernel and every
modulus product are exact, and the cupy result equals the numpy engine's bit for bit.
"""
import math
import pathlib
import re

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

import splitprec as sp
from splitprec.accuracy import exact_matmul, gemm_bound
from splitprec.accuracy.classes import class_span
from splitprec.engines.cuda import ozaki as cuda_ozaki
from splitprec.engines.reference import ozaki as reference_ozaki
from splitprec.dtypes import cheapest
from splitprec.ozaki import COUNTS, K_BLOCK, ozaki2_int8, scale_exponents

OZAKI2 = [f"ozaki2_int8x{n}" for n in COUNTS]          # the fixed-count schemes
rng = np.random.default_rng(11)


def test_registry_lists_every_count_and_the_adaptive_scheme_with_float64_target():
    assert sp.dtypes("float64") == ["ozaki2_int8_adaptive"] + OZAKI2
    assert set(sp.dtypes("float32")) | set(sp.dtypes("float64")) == set(sp.dtypes())
    d = sp.dtype("OZAKI2_INT8x14")
    assert (d.name, d.base, d.terms, d.target) == ("ozaki2_int8x14", "int8", 14, "float64")
    assert d.products == tuple((l, l) for l in range(14)) and ozaki2_int8(14) is d
    assert sp.dtype(d) is d


@pytest.mark.parametrize("name", OZAKI2)
def test_record_identities(name):
    d = sp.dtype(name)
    assert len(d.moduli) == d.terms == int(name.split("x")[1])
    assert all(2 <= m <= 256 for m in d.moduli) and list(d.moduli) == sorted(d.moduli, reverse=True)
    assert all(math.gcd(p, q) == 1 for i, p in enumerate(d.moduli) for q in d.moduli[i + 1:])
    bits_a, bits_b = d.bits
    assert 2 ** (bits_a + bits_b) <= d.modulus // 4 < 2 ** (bits_a + bits_b + 1)
    assert not d.fp64_class and not d.fp32_class          # of their class within a span only
    assert (class_span(name) is not None) == (min(d.bits) >= 53)


def test_fp64_class_and_cheapest_regression():
    """Only the adaptive scheme is fp64 class on every input (as only the float32 schemes of
    unlimited span are fp32 class); the fixed ones from x14 on are fp64 within a span."""
    assert [n for n in sp.dtypes("float64") if sp.dtype(n).fp64_class] == ["ozaki2_int8_adaptive"]
    assert [n for n in OZAKI2 if class_span(n) is not None] == [f"ozaki2_int8x{n}" for n in range(14, 19)]
    assert cheapest("fp64").name == "ozaki2_int8_adaptive" and cheapest("fp64").fp64_class


def test_kernel_moduli_table_is_the_registry_s():
    header = (pathlib.Path(__file__).parent.parent / "kernels" / "common" / "ozaki2.cuh").read_text()
    table = [int(x) for x in re.search(r"table\[20\] = \{([^}]*)\}", header).group(1).split(",")]
    assert tuple(table[:max(COUNTS)]) == sp.dtype(OZAKI2[-1]).moduli


@pytest.mark.parametrize("name", OZAKI2)
def test_crt_weights_are_one_modulo_their_modulus_and_chunks_are_exact(name):
    d = sp.dtype(name)
    consts = d.crt_constants()
    chunks = consts[:d.terms * d.chunks].reshape(d.terms, d.chunks)
    for l, m in enumerate(d.moduli):
        w = sum(int(c) for c in chunks[l])
        assert all(w % q == (1 if q == m else 0) for q in d.moduli)
        assert all(int(c) == 0 or int(c).bit_length() - (int(c) & -int(c)).bit_length() < 39 for c in chunks[l])
    assert sum(int(c) for c in consts[d.terms * d.chunks:-1]) == d.modulus


big_integers = st.integers(-(2 ** 72) + 1, 2 ** 72 - 1).map(lambda v: float(v))


@given(t=st.lists(big_integers, min_size=1, max_size=20), name=st.sampled_from(OZAKI2))
@example(t=[0.0, 127.0, 128.0, -128.0, -129.0, 255.0, 256.0, float(2 ** 72 - 2 ** 31), float(-(2 ** 72) + 1)], name=OZAKI2[-1])
def test_residues_are_the_symmetric_int8_residues(t, name):
    d = sp.dtype(name)
    for m, r in zip(d.moduli, reference_ozaki.residues(np.array(t), d)):
        assert all(int(x) % m == int(y) % m and -(m // 2) <= y <= (m + 1) // 2 - 1 for x, y in zip(t, r))


def test_residues_across_blocks_keep_shape_and_values():
    """An array longer than one ``RESIDUE_BLOCK`` (and not a multiple of it), 2-D: each entry's
    residues, wherever its block ends, as Python's integers give them."""
    d = sp.dtype(OZAKI2[-1])
    rng = np.random.default_rng(3)
    t = np.ldexp(np.rint(rng.standard_normal((3, reference_ozaki.RESIDUE_BLOCK // 3 + 11)) * 2.0 ** 40),
                 rng.integers(0, 31, (3, reference_ozaki.RESIDUE_BLOCK // 3 + 11)))
    for m, r in zip(d.moduli, reference_ozaki.residues(t, d)):
        assert r.shape == t.shape and r.dtype == np.float32
        expected = [(v % m) - m * ((v % m) > (m - 1) // 2) for v in map(int, t.ravel())]
        np.testing.assert_array_equal(r.ravel(), np.float32(expected))


@given(data=st.data(), name=st.sampled_from(OZAKI2))
def test_crt_recovers_every_integer_below_three_eighths_of_m(data, name):
    d = sp.dtype(name)
    limit = 3 * d.modulus // 8
    values = data.draw(st.lists(st.integers(-limit, limit), min_size=1, max_size=8))
    r = [np.array([float(v % m - (m if (v // m) % 2 and v % m else 0)) for v in values])
         for m in d.moduli]                                       # representatives in (-m, m)
    got = reference_ozaki.crt(r, d)
    for v, c in zip(values, got):       # docs/bounds.md: u|C| + 3u|Y|, |Y| < 2**(bitlen(M) - 64.6)
        assert abs(c - v) <= 2.0 ** -53 * (1 + 2.0 ** -50) * abs(v) + 2.0 ** (d.modulus.bit_length() - 115)


@pytest.mark.parametrize("name, values", [
    ("ozaki2_int8x14", [39614081257132181988101313152, -9903520314283043300250580157,
                        -4951760157141524947556513432]),
    ("ozaki2_int8x18", [680564733841877455779597452119968057048, -680564733841877002458074677522408374377,
                        85070591730234644211214794576421137336])])
def test_crt_rounds_once_near_rounding_ties_regression(name, values):
    """Integers near a rounding tie at the bottom of a binade, where the former order
    ``(T_0 + T_1) + (T_2 + T_3)`` rounded twice and erred by more than ``u|C|`` (found by search):
    the TwoSum order gives the correctly rounded integer."""
    d = sp.dtype(name)
    r = [np.array([float(v % m - (m if (v // m) % 2 and v % m else 0)) for v in values]) for m in d.moduli]
    assert [float(c) for c in reference_ozaki.crt(r, d)] == [float(v) for v in values]


def spans(draw_rng, shape, bits):
    """N(0,1) entries whose rows are scaled by random powers of two in [-bits, bits]."""
    x = draw_rng.standard_normal(shape)
    return np.ldexp(x, draw_rng.integers(-bits, bits + 1, shape[:-1] + (1,)))


@given(seed=st.integers(0, 2 ** 32 - 1), k=st.integers(1, 300), bits=st.integers(0, 1000),
       qbits=st.integers(40, 70))
def test_scale_exponents_bound_each_rows_norm_by_a_power_of_two(seed, k, bits, qbits):
    local = np.random.default_rng(seed)
    x = spans(local, (4, k), bits) * np.where(local.random((4, k)) < 0.5, 1.0, 2.0 ** -local.integers(0, 200))
    sigma = scale_exponents(x, qbits, -1)[:, 0]
    scaled = [math.fsum(float(v) ** 2 for v in np.ldexp(np.ldexp(row, s), -qbits)) for row, s in zip(x, sigma)]
    nonzero = x.any(axis=-1)               # rows can underflow to zero; those get sigma = 0
    assert all(0.24 <= q <= 1.0 for q, keep in zip(scaled, nonzero) if keep), scaled   # in (1/4, 1]
    assert not sigma[~nonzero].any()


def _check_within_bound(a, b, name):
    c = sp.matmul(a, b, dtype=name)
    exact = exact_matmul(a, b)
    bound = gemm_bound(a, b, name)
    assert c.dtype == np.float64 and c.shape == exact.shape
    finite = np.isfinite(exact)
    assert np.array_equal(c[~finite], exact[~finite], equal_nan=True)
    assert (np.abs(c - exact)[finite] <= bound[finite]).all(), float(np.max(np.abs(c - exact) / bound))
    return c, exact, bound


CASES = {
    "normal": lambda: (rng.standard_normal((24, 200)), rng.standard_normal((200, 16))),
    "rows_2^300": lambda: (spans(rng, (12, 64), 300), spans(rng, (10, 64), 300).T),
    "span_within_rows": lambda: (rng.standard_normal((8, 50)) * np.exp2(rng.integers(-60, 60, (8, 50))),
                                 rng.standard_normal((50, 6))),
    "zeros": lambda: (np.zeros((4, 9)), rng.standard_normal((9, 5))),
    "zero_rows": lambda: (np.vstack([np.zeros((2, 9)), rng.standard_normal((3, 9))]), rng.standard_normal((9, 4))),
    "k1": lambda: (rng.standard_normal((7, 1)), rng.standard_normal((1, 5))),
    "tiny_and_huge": lambda: (np.ldexp(rng.standard_normal((4, 16)), -1060), np.ldexp(rng.standard_normal((16, 3)), 1000)),
    "subnormal_results": lambda: (np.ldexp(rng.standard_normal((4, 16)), -560), np.ldexp(rng.standard_normal((16, 3)), -500)),
    "batched": lambda: (rng.standard_normal((2, 1, 5, 12)), rng.standard_normal((3, 12, 4))),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", ["ozaki2_int8x12", "ozaki2_int8x14", "ozaki2_int8x18"])
def test_matmul_error_within_bound(case, name):
    a, b = CASES[case]()
    _check_within_bound(a, b, name)


def test_matmul_blocks_k_beyond_one_int32_block():
    k = K_BLOCK + 4464
    a = rng.standard_normal((3, k))
    b = rng.standard_normal((k, 2))
    _check_within_bound(a, b, "ozaki2_int8x14")
    ints_a, ints_b = rng.integers(-2 ** 20, 2 ** 20, (3, k)).astype(float), rng.integers(-2 ** 20, 2 ** 20, (k, 2)).astype(float)
    assert np.array_equal(sp.matmul(ints_a, ints_b, dtype="ozaki2_int8x16"), exact_matmul(ints_a, ints_b))


@given(seed=st.integers(0, 2 ** 32 - 1), m=st.integers(1, 6), k=st.integers(1, 40), n=st.integers(1, 6),
       bits=st.integers(0, 400), name=st.sampled_from(OZAKI2))
def test_matmul_error_within_bound_on_random_spans(seed, m, k, n, bits, name):
    local = np.random.default_rng(seed)
    a = spans(local, (m, k), bits) * np.where(local.random((m, k)) < 0.3, 0.0, 1.0)
    b = spans(local, (n, k), bits).T * np.exp2(local.integers(-30, 30, (k, n)))
    _check_within_bound(a, b, name)


def normwise(c, exact):
    return float(np.linalg.norm(c - exact) / np.linalg.norm(exact))


def test_fp64_class_schemes_are_dgemm_class_on_normal_inputs():
    a, b = rng.standard_normal((64, 2048)), rng.standard_normal((2048, 64))
    exact = exact_matmul(a, b)
    native = normwise(a @ b, exact)
    errors = {name: normwise(sp.matmul(a, b, dtype=name), exact) for name in OZAKI2}
    # Measured at this size: x14 ~2x, x15 ~0.2x, x13 ~30x numpy's float64 BLAS error.
    assert errors["ozaki2_int8x14"] <= 4 * native and errors["ozaki2_int8x15"] <= native, (errors, native)
    assert errors["ozaki2_int8x13"] > 4 * native, (errors, native)
    dgemm = 2048 * 2.0 ** -53 / (1 - 2048 * 2.0 ** -53) * np.abs(a) @ np.abs(b)      # gamma_k u |A||B|
    assert (gemm_bound(a, b, "ozaki2_int8x14") <= dgemm).all()


@pytest.mark.parametrize("shape_a, shape_b", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                                              ((0, 4), (4, 5)), ((3, 0), (0, 5)), ((0, 3, 4), (4, 2))])
def test_matmul_shapes_follow_numpy(shape_a, shape_b):
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    c = sp.matmul(a, b, precision="fp64")
    expected = np.matmul(a, b)
    assert type(c) is type(expected) and c.dtype == np.float64 and np.shape(c) == expected.shape
    as_matrices = sp.matmul(a.reshape(1, -1) if a.ndim == 1 else a, b.reshape(-1, 1) if b.ndim == 1 else b,
                            precision="fp64")
    assert np.array_equal(c, as_matrices.reshape(expected.shape))


def test_out_receives_the_float64_result():
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    out = np.empty((3, 2))
    assert sp.matmul(a, b, out=out, dtype="ozaki2_int8x15") is out
    assert np.array_equal(out, sp.matmul(a, b, dtype="ozaki2_int8x15"))


@pytest.mark.parametrize("call, error, message", [
    (lambda: sp.matmul(np.ones((2, 3), np.float32), np.ones((3, 2)), dtype="ozaki2_int8x14"), TypeError,
     r"^matmul: a has dtype float32; scheme 'ozaki2_int8x14' accepts float64 data, and integers, bools "
     r"and Python scalars that float64 holds exactly \(convert explicitly, e\.g\. a\.astype\(numpy\.float64\)\)"),
    (lambda: sp.matmul(np.ones((2, 3)), np.ones((3, 2), np.float16), precision="fp64"), TypeError,
     r"^matmul: b has dtype float16; scheme 'ozaki2_int8_adaptive' accepts float64"),
    (lambda: sp.matmul(np.ones((2, 3)), np.ones((3, 2)), dtype="bf16x9"), TypeError,
     r"^matmul: a has dtype float64; scheme 'bf16x9' accepts float32, float16 or bfloat16 data"),
    (lambda: sp.matmul(np.ones((2, 3)), np.ones((3, 2)), dtype="ozaki2_int8x14", out=np.empty((2, 2), np.float32)),
     TypeError, r"^matmul: out must be a ndarray of dtype float64 \(or one that holds it exactly\); got ndarray of dtype float32"),
    (lambda: sp.dtype("ozaki2_int8x11"), ValueError, r"^unknown split dtype 'ozaki2_int8x11'; expected one of"),
    (lambda: ozaki2_int8(19), ValueError, r"^ozaki2_int8: moduli=19 is not supported; expected one of 12, 13"),
    (lambda: sp.dtypes("float16"), ValueError, r"^dtypes: unknown target 'float16'; expected None"),
    (lambda: gemm_bound(np.ones((2, 3), np.float32), np.ones((3, 2)), "ozaki2_int8x14"), TypeError,
     r"^gemm_bound: a has dtype float32; the ozaki2 schemes take float64"),
    (lambda: gemm_bound(np.ones((2, 3)), np.ones((4, 2)), "ozaki2_int8x14"), ValueError,
     r"^gemm_bound: inner dimensions differ: a has shape \(2, 3\), b has shape \(4, 2\)"),
])
def test_errors_name_the_argument_and_what_is_accepted(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.nvrtc
@pytest.mark.parametrize("filename", [cuda_ozaki.RESIDUE_FILE, cuda_ozaki.CRT_FILE])
@pytest.mark.parametrize("arch", ["90", "80"])
def test_every_kernel_instantiation_compiles_with_nvrtc(filename, arch):
    from cuda.bindings import nvrtc
    from test_kernels_gemm import _nvrtc_compile
    result, log = _nvrtc_compile(filename, cuda_ozaki.instantiations()[filename], arch)
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, log


# ---- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("name", ["ozaki2_int8x12", "ozaki2_int8x14", "ozaki2_int8x18"])
def test_gpu_residues_and_every_modulus_product_are_exact(name):
    import cupy
    d = sp.dtype(name)
    a, b = spans(rng, (37, 300), 200), spans(rng, (29, 300), 200)      # b holds B's columns as rows
    a[3, 7], b[2, 5] = np.nan, -np.inf
    planes, exps = [], []
    for x, bits in ((a, d.bits[0]), (b, d.bits[1])):
        words = cupy.zeros(1 + x.shape[0], np.uint32)           # the flag, then one word per row
        p, e = cuda_ozaki._residues(cupy.asarray(x)[None], d, bits, (words, 0, 1))
        assert int(words[0]) == 0x7F800000
        np.testing.assert_array_equal(words[1:].get() != 0, ~np.isfinite(x).all(axis=1))
        clean = np.where(np.isfinite(x), x, 0.0)
        sigma = scale_exponents(clean, bits, -1)
        assert np.array_equal(e.get(), sigma[:, 0])
        expected = reference_ozaki.residues(np.rint(np.ldexp(clean, sigma)), d)
        assert np.array_equal(p.get()[0, :, :, :300], np.stack(expected).astype(np.int8))
        assert not p.get()[0, :, :, 300:].any()
        planes.append(p)
    ra, rb = (p.get()[0].astype(np.int64) for p in planes)
    for batched in (True, False):
        prod = cuda_ozaki._products(planes[0], planes[1], 1, d, batched=batched).get()[0, 0]
        for l in range(d.terms):
            assert np.array_equal(prod[l][:, :29], ra[l] @ rb[l].T)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", ["ozaki2_int8x12", "ozaki2_int8x14", "ozaki2_int8x18"])
def test_gpu_matmul_matches_the_numpy_engine(case, name):
    import cupy
    a, b = CASES[case]()
    c = sp.matmul(cupy.asarray(a), cupy.asarray(b), dtype=name)
    assert isinstance(c, cupy.ndarray) and c.dtype == np.float64
    expected, exact, bound = _check_within_bound(a, b, name)
    got = c.get()
    assert (np.abs(got - exact) <= bound).all()
    assert np.array_equal(got, expected), float(np.max(np.abs(got - expected)))


@pytest.mark.gpu
@pytest.mark.parametrize("shape_a, shape_b", [((5, K_BLOCK + 4464), (K_BLOCK + 4464, 3)), ((2, 3, 33, 20), (20, 7)),
                                              ((33, 20), (4, 20, 7)), ((1, 5), (5, 1)), ((0, 4), (4, 3)),
                                              ((3, 0), (0, 2))])
def test_gpu_matmul_blocks_batches_and_empty_shapes(shape_a, shape_b):
    import cupy
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    expected = sp.matmul(a, b, dtype="ozaki2_int8x14")
    got = sp.matmul(cupy.asarray(a), cupy.asarray(b), dtype="ozaki2_int8x14").get()
    assert np.array_equal(got, expected)


@pytest.mark.gpu
def test_gpu_nonfinite_inputs_propagate_as_in_float64():
    import cupy
    a, b = rng.standard_normal((6, 8)), rng.standard_normal((8, 5))
    a[1, 2], a[4, 0], b[3, 1] = np.inf, np.nan, -np.inf
    with np.errstate(all="ignore"):
        reference = exact_matmul(a, b)
    got = sp.matmul(cupy.asarray(a), cupy.asarray(b), precision="fp64").get()
    for test in (np.isnan, np.isposinf, np.isneginf):
        assert np.array_equal(test(got), test(reference))


def test_reference_fmod_equals_numpy_fmod_signed_zeros_included():
    rng = np.random.default_rng(11)
    x = rng.integers(-2 ** 51, 2 ** 51, 5000).astype(np.float64)
    x[:300] = -256.0 * rng.integers(0, 2 ** 20, 300)           # multiples of the modulus: -0.0
    x[300:310] = [0.0, -0.0, 255.0, -255.0, 256.0, -256.0, 2.0 ** 51, -(2.0 ** 51), 1.0, -1.0]
    for m in ozaki2_int8(18).moduli:
        assert np.array_equal(reference_ozaki._fmod(x, m).view(np.int64), np.fmod(x, m).view(np.int64))


@pytest.mark.parametrize("k", [1, 1023, 1024, 1025, 2049])
def test_reference_residue_products_by_float32_runs_are_exact(k):
    """Runs of 1024 in float32 BLAS: every partial sum an integer of at most 2**24, so the largest
    residues (-128 everywhere) give exactly the float64 product."""
    rng = np.random.default_rng(k)
    ra = rng.integers(-128, 128, (3, 4, k)).astype(np.float64)
    rb = rng.integers(-128, 128, (k, 5)).astype(np.float64)
    ra[0], rb[:, 0] = -128.0, -128.0
    assert np.array_equal(reference_ozaki._block_product(ra, rb, 0, k)[0], ra @ rb)
