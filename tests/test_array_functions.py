"""numpy functions on SplitArrays: elementwise and shape functions run in float32 (numpy's results,
bit for bit), contractions run in the scheme (within accuracy.gemm_bound, and einsum equal to its
documented pairwise order), methods, views, out=, in-place functions and what is refused."""
import math

import numpy as np
import pytest

from splitprec import accuracy
import splitprec as sp

rng = np.random.default_rng(5)
X = rng.standard_normal((4, 6)).astype(np.float32)
Y = rng.standard_normal((4, 6)).astype(np.float32)
MASK = X > 0


def same(got, expected):
    """Equal values bit for bit; a float32 result must be a SplitArray (or numpy.float32 scalar)."""
    if isinstance(expected, (list, tuple)):
        return len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected))
    if getattr(expected, "dtype", None) == np.float32 and np.ndim(expected):
        if type(got) is not sp.SplitArray or got.dtype != "tf32x3":
            return False
        got = got.to_numpy()
    got = np.asarray(got)
    return got.dtype == np.asarray(expected).dtype and got.shape == np.shape(expected) and \
        np.array_equal(got, expected, equal_nan=True)


# (function, its arguments with "a"/"b" standing for the operands): numpy float32 results
FLOAT32_FUNCTIONS = [
    (np.std, ("a",), {"axis": 1}), (np.var, ("a",), {"ddof": 1}), (np.prod, ("a",), {"axis": 0}),
    (np.cumsum, ("a",), {"axis": 1}), (np.cumprod, ("a",), {}), (np.median, ("a",), {"axis": 0}),
    (np.sort, ("a",), {"axis": 0}), (np.where, (MASK, "a", "b"), {}), (np.where, (MASK, "a", 0.5), {}),
    (np.clip, ("a", -0.5, 0.5), {}), (np.round, ("a", 2), {}), (np.around, ("a",), {}),
    (np.vstack, (["a", "b"],), {}), (np.hstack, (["a", "b"],), {}), (np.concatenate, (["a", "b"],), {"axis": None}),
    (np.split, ("a", 2), {}), (np.array_split, ("a", 3, 1), {}), (np.flip, ("a",), {"axis": 1}),
    (np.pad, ("a", 1), {}), (np.pad, ("a", ((0, 1), (2, 0))), {"mode": "reflect"}), (np.diag, ("a",), {}),
    (np.diag, ("a", 1), {}), (np.trace, ("a",), {}), (np.moveaxis, ("a", 0, 1), {}),
    (np.atleast_1d, ("a",), {}), (np.atleast_2d, ("a",), {}), (np.atleast_3d, ("a",), {}),
    (np.tril, ("a",), {}), (np.triu, ("a", 1), {}), (np.roll, ("a", 2), {}), (np.tile, ("a", 2), {}),
    (np.repeat, ("a", 2, 0), {}), (np.diff, ("a",), {}), (np.abs, ("a",), {}), (np.ptp, ("a",), {}),
    (np.percentile, ("a", 30), {}), (np.nanmean, ("a",), {}), (np.fliplr, ("a",), {}), (np.rot90, ("a",), {}),
    (np.take, ("a", [0, 3]), {"axis": 1}), (np.unique, ("a",), {}), (np.maximum.reduce, ("a",), {}),
    (np.add.reduce, ("a",), {"axis": 1}), (np.add.accumulate, ("a",), {}), (np.multiply.outer, ("a", "b"), {}),
    (np.add.reduceat, ("a", [0, 2]), {"axis": 1}), (np.minimum.reduce, ("a",), {"axis": None}),
    (np.add, ("a", "b"), {"where": MASK, "out": "zeros"}), (np.multiply, ("a", "b"), {"dtype": np.float32}),
    (np.logaddexp, ("a", "b"), {}), (np.deg2rad, ("a",), {}), (np.ldexp, ("a", 3), {}),
    (np.frexp, ("a",), {}), (np.modf, ("a",), {}), (np.nextafter, ("a", "b"), {}), (np.conjugate, ("a",), {}),
    (np.linalg.solve, ("square", "a"), {}), (np.interp, ("a", np.float32([0, 1]), np.float32([2, 3])), {}),
]
OTHER_FUNCTIONS = [      # results that are not float32 arrays: numpy's, as they are
    (np.argsort, ("a",), {}), (np.nonzero, ("a",), {}), (np.any, ("a",), {}), (np.all, ("a",), {"axis": 0}),
    (np.count_nonzero, ("a",), {}), (np.searchsorted, (np.float32([-1, 0, 1]), "a"), {}),
    (np.isclose, ("a", "b"), {}), (np.greater.outer, ("a", "b"), {}), (np.logical_and, ("a", "b"), {}),
    (np.cumsum, ("a",), {"dtype": np.float64}), (np.shape, ("a",), {}), (np.argwhere, ("a",), {}),
]


def _call(function, args, kwargs):
    square = np.eye(4, dtype=np.float32) * 2 + X[:, :4] / 8
    lookup = {"a": (X, sp.asarray(X, dtype="tf32x3")), "b": (Y, sp.asarray(Y, dtype="tf32x3")),
              "square": (square, sp.asarray(square, dtype="tf32x3"))}

    def side(i):
        pick = lambda v: lookup[v][i] if isinstance(v, str) and v in lookup else v   # noqa: E731
        return [([pick(x) for x in v] if isinstance(v, list) else pick(v)) for v in args]
    expected_kwargs = dict(kwargs)
    got_kwargs = dict(kwargs)
    if kwargs.get("out") == "zeros":
        expected_kwargs["out"] = np.zeros_like(X)
        got_kwargs["out"] = sp.zeros(X.shape, dtype="tf32x3")
    with np.errstate(all="ignore"):
        return function(*side(1), **got_kwargs), function(*side(0), **expected_kwargs)


@pytest.mark.parametrize("function, args, kwargs", FLOAT32_FUNCTIONS + OTHER_FUNCTIONS,
                         ids=lambda v: getattr(v, "__name__", None) if callable(v) else "")
def test_functions_run_numpy_float32_on_the_values(function, args, kwargs):
    got, expected = _call(function, args, kwargs)
    assert same(got, expected), (got, expected)


@pytest.mark.parametrize("method, args", [
    ("std", ()), ("var", (0,)), ("prod", ()), ("cumsum", (1,)), ("any", ()), ("all", ()), ("flatten", ()),
    ("ravel", ()), ("tolist", ()), ("item", (5,)), ("clip", (0, 1)), ("round", (1,)), ("conj", ()),
    ("max", ()), ("argmin", ())])
def test_methods_match_numpys(method, args):
    a = sp.asarray(X, dtype="tf32x3")
    got, expected = getattr(a, method)(*args), getattr(X, method)(*args)
    assert same(got, expected) if not isinstance(expected, (list, float)) else got == expected
    assert (a.nbytes, a.itemsize, a.strides) == (X.nbytes, X.itemsize, X.strides)
    assert same(a.real, X.real) and same(a.imag, X.imag)


@pytest.mark.parametrize("method, args", [
    ("cumprod", (1,)), ("argsort", (0,)), ("nonzero", ()), ("take", ([0, 5],)), ("repeat", (2, 1)),
    ("diagonal", (1,)), ("trace", ()), ("reshape", ((2, -1),))])
def test_more_ndarray_methods_match_numpys_regression(method, args):
    """``a.argsort()``, ``a.take(...)``, ``a.trace()``, ... raised AttributeError."""
    a = sp.asarray(X, dtype="tf32x3")
    got, expected = getattr(a, method)(*args), getattr(X, method)(*args)
    assert same(got, expected) if not isinstance(expected, tuple) else all(map(same, got, expected))
    assert not isinstance(expected, np.ndarray) or expected.dtype != np.float32 or got.dtype == "tf32x3"


def test_sort_method_sorts_in_place_and_drops_the_cached_split_regression():
    """``a.sort()`` raised AttributeError; as ``ndarray.sort`` it sorts in place and returns None."""
    a = sp.asarray(X.copy(), dtype="bf16x9")
    before = a @ a.T                                                         # caches a's parts
    assert a.sort(axis=0) is None
    assert np.array_equal(a.to_numpy(), np.sort(X, axis=0))
    assert np.array_equal((a @ a.T).to_numpy(), sp.matmul(np.sort(X, axis=0), np.sort(X, axis=0).T, dtype="bf16x9"))
    assert not np.array_equal(before.to_numpy(), (a @ a.T).to_numpy())



def test_clip_and_tobytes_methods_match_ndarrays_regression():
    """``a.clip(0)`` raised TypeError (it called ``np.clip``, which needs both bounds) and
    ``a.tobytes()`` raised AttributeError; both follow ``ndarray``'s methods."""
    a = sp.asarray(X, dtype="tf32x3")
    assert same(a.clip(0), X.clip(0)) and same(a.clip(max=0.5), X.clip(max=0.5))
    assert a.clip(0).dtype == "tf32x3"
    out = np.zeros_like(a)
    assert a.clip(-0.5, 0.5, out=out) is out and same(out, X.clip(-0.5, 0.5))
    assert a.tobytes() == X.tobytes() and a.T.tobytes("F") == X.T.tobytes("F")
    assert a[1:, ::2].tobytes() == X[1:, ::2].tobytes()


@pytest.mark.parametrize("options", [{"dtype": np.float32}, {"casting": "same_kind"}, {"order": "F"},
                                     {"subok": False}, {"signature": "ff->f"},
                                     {"signature": (np.float32, None, np.float32)}])
@pytest.mark.parametrize("ufunc", [np.matmul, np.vecdot, np.matvec], ids=lambda u: u.__name__)
def test_contraction_ufuncs_take_options_that_keep_float32_regression(ufunc, options):
    """``np.matmul(a, b, casting="same_kind")`` (numpy's default) or ``dtype=np.float32`` raised
    TypeError; options that change nothing for a float32 result are accepted, others refused."""
    a = sp.asarray(X[:, :3], dtype="bf16x9")
    b = {np.matmul: a.T, np.vecdot: a, np.matvec: a[0]}[ufunc]
    got, expected = ufunc(a, b, **options), ufunc(a, b)
    assert got.dtype == "bf16x9" and np.array_equal(np.asarray(got), np.asarray(expected))
    with pytest.raises(TypeError, match=rf"^{ufunc.__name__}: option\(s\) dtype not supported"):
        ufunc(a, b, dtype=np.float64)
    with pytest.raises(TypeError, match=rf"^{ufunc.__name__}: option\(s\) signature not supported"):
        ufunc(a, b, signature="dd->d")

def test_reshape_method_takes_copy_as_numpys_regression():
    """``a.reshape(shape, copy=...)`` (numpy >= 2.1) raised TypeError."""
    a = sp.asarray(X, dtype="tf32x3")
    copied = a.reshape((X.size,), copy=True)
    assert same(copied, X.reshape(-1)) and not np.shares_memory(np.asarray(copied), np.asarray(a))
    assert np.shares_memory(np.asarray(a.reshape(X.size, copy=False)), np.asarray(a))
    with pytest.raises(ValueError, match=r"^reshape: copy=False but shape \(\d+,\) of an array of shape"):
        a.T.reshape(X.size, copy=False)


def test_like_functions_keep_the_scheme_or_take_the_given_one():
    a = sp.asarray(X, dtype="fp16x3")
    for got, fill in ((np.zeros_like(a), 0), (np.ones_like(a), 1), (np.full_like(a, -2.5), -2.5)):
        assert type(got) is sp.SplitArray and got.dtype == "fp16x3" and np.array_equal(got.to_numpy(), np.full_like(X, fill))
    assert np.empty_like(a, shape=(2,)).shape == (2,) and np.zeros_like(a, dtype="bf16x9").dtype == "bf16x9"
    assert np.zeros_like(a, dtype=np.float32).dtype == "fp16x3"
    assert type(np.zeros_like(a, dtype=np.int32)) is np.ndarray and np.zeros_like(a, dtype=np.int32).dtype == np.int32
    with pytest.raises(TypeError, match=r"^full_like: fill_value holds a value that float32 cannot hold"):
        np.full_like(a, 0.1)


def test_view_results_share_storage_and_copies_of_other_arrays_do_not():
    a = sp.asarray(X.copy(), dtype="bf16x9")
    flipped, b = np.flip(a, axis=0), sp.asarray(Y[:, :4], dtype="bf16x9")
    a.T @ b                                               # caches the split of a
    assert np.shares_memory(np.asarray(flipped), np.asarray(a))
    flipped[0, 0] = 4.0                                   # a[-1, 0]: the cached split of a is stale
    assert a[-1, 0] == 4.0
    assert np.array_equal(np.asarray(a.T @ b), sp.matmul(a.to_numpy().T, b.to_numpy(), dtype="bf16x9"))
    assert np.atleast_2d(a) is a
    plain = X.copy()
    joined = np.broadcast_arrays(a, plain[:1])
    assert type(joined[1]) is sp.SplitArray and not np.shares_memory(np.asarray(joined[1]), plain)
    assert np.broadcast_arrays(a, plain)[1] is plain            # numpy returns an input as it is


def test_out_and_in_place_functions_refuse_rounding():
    a = sp.asarray(X.copy(), dtype="tf32x3")
    out = sp.zeros(X.shape, dtype="tf32x3")
    assert np.clip(a, 0, 1, out=out) is out and np.array_equal(out.to_numpy(), np.clip(X, 0, 1))
    np.copyto(a, 2)
    np.put(a, [0, 1], [0.5, 0.25])
    np.putmask(a, MASK, sp.asarray(Y, dtype="tf32x3"))
    expected = np.full_like(X, 2)
    expected.flat[:2] = [0.5, 0.25]
    np.putmask(expected, MASK, Y)
    assert np.array_equal(a.to_numpy(), expected)
    with pytest.raises(TypeError, match=r"^put: the written values holds a value that float32 cannot hold exactly \(0.1\)"):
        np.put(a, [0], [0.1])
    with pytest.raises(TypeError, match=r"^copyto: an argument of dtype float64 is not accepted"):
        np.copyto(a, X.astype(np.float64))
    with pytest.raises(TypeError, match=r"^cumsum: the result has dtype float64; out is a SplitArray"):
        np.cumsum(a, dtype=np.float64, out=out)
    with pytest.raises(TypeError, match=r"^add: the result has scheme bf16x9 but out has scheme tf32x3"):
        np.add(a, sp.asarray(Y, dtype="bf16x9"), out=out, where=MASK)
    np.add.at(a, [0, 0], 1)
    assert a[0, 0] == expected[0, 0] + 2


INTEGERS = np.arange(-3, 3, dtype=np.int32)


@pytest.mark.parametrize("call", [
    lambda a: np.where(a > 0, a, INTEGERS), lambda a: np.concatenate([a, INTEGERS]),
    lambda a: np.stack([a, INTEGERS]), lambda a: np.clip(a, INTEGERS, 2), lambda a: np.where(a > 0, a, np.int64(7)),
    lambda a: np.heaviside(a, INTEGERS), lambda a: np.logaddexp(a, np.abs(INTEGERS).astype(np.uint32)),
    lambda a: np.fmax(a, INTEGERS.astype(np.int64)),
], ids=["where", "concatenate", "stack", "clip", "where-scalar", "heaviside", "logaddexp", "fmax"])
def test_integer_arguments_follow_the_input_rule_instead_of_promoting_regression(call):
    """``np.where(a > 0, a, int32_array)`` (and ``concatenate``, ``stack``, ``clip``, ufuncs that
    numpy runs as is) returned a float64 ndarray, where ``a + int32_array`` is a SplitArray: integer
    data that float32 holds exactly is float32 data, as everywhere else."""
    got, expected = call(sp.asarray(X[0], dtype="tf32x3")), call(X[0])     # numpy's: float64
    assert type(got) is sp.SplitArray and got.dtype == "tf32x3" and expected.dtype == np.float64
    assert np.allclose(got.to_numpy(), expected, rtol=2 ** -23, atol=0)


def test_integer_arguments_float32_cannot_hold_are_refused_naming_the_value_regression():
    a = sp.asarray(X[0], dtype="tf32x3")
    with pytest.raises(TypeError, match=r"^where: numpy promoted the result to float64 \(integer data, or Python "
                                        r"numbers in a list\), and it holds a value float32 cannot hold exactly "
                                        r"\(1099511627777.0\)"):
        np.where(a > 0, a, np.int64(2 ** 40 + 1))
    with pytest.raises(TypeError, match=r"^logaddexp: x2 holds a value that float32 cannot hold exactly"):
        np.logaddexp(a, np.full(6, 2 ** 30 + 1, np.int64))
    assert np.ldexp(a, INTEGERS).dtype == "tf32x3"                   # an int exponent stays an int


def test_fft_of_a_splitarray_runs_in_its_scheme_and_contractions_without_one_are_refused():
    a = sp.asarray(X, dtype="bf16x9")
    assert np.array_equal(np.fft.fft(a, axis=0), sp.fft.fft(X, axis=0, dtype="bf16x9"))
    assert np.array_equal(np.fft.rfft(a), sp.fft.rfft(X, dtype="bf16x9"))
    assert np.array_equal(np.fft.fftshift(a).to_numpy(), np.fft.fftshift(X))
    for refused in (lambda: np.kron(a, a), lambda: np.convolve(a[0], a[1]), lambda: np.cov(a),
                    lambda: np.correlate(a[0], a[1])):
        with pytest.raises(TypeError, match=r"a contraction with no split-precision implementation"):
            refused()
    with pytest.raises(TypeError, match=r"^where: an argument of dtype float64 is not accepted"):
        np.where(MASK, a, X.astype(np.float64))
    with pytest.raises(TypeError, match=r"^std: out is a numpy scalar \(float64\); expected an array"):
        np.std(a, out=np.float64(1))


# -- contractions ------------------------------------------------------------------------------------

def exact(subscripts, *operands):
    return np.einsum(subscripts, *[np.asarray(o, np.float64) for o in operands])


def within_gemm_bound(got, a2, b2, name, shape):
    """|got - a2 @ b2 (exact)| <= accuracy.gemm_bound(a2, b2, name), entries reshaped to ``shape``."""
    bound = accuracy.gemm_bound(a2, b2, name).reshape(shape)
    error = np.abs(np.asarray(got, np.float64) - (a2.astype(np.float64) @ b2.astype(np.float64)).reshape(shape))
    return bool(np.all(error <= bound))


@pytest.mark.parametrize("name", ["bf16x9", "tf32x3", "bf16", "fp16x3"])
def test_contractions_within_gemm_bound(name):
    a, b, v, w = (rng.standard_normal(s).astype(np.float32) for s in ((5, 7), (7, 3), (7,), (5,)))
    A, B, V, W = (sp.asarray(x, dtype=name) for x in (a, b, v, w))
    cases = [
        (np.dot(A, B), a, b, (5, 3)), (np.dot(A, V), a, v[:, None], (5,)), (np.inner(A, B.T), a, b, (5, 3)),
        (np.vdot(V, V), v[None], v[:, None], ()), (np.outer(W, V), w[:, None], v[None], (5, 7)),
        (np.tensordot(A, B, axes=([1], [0])), a, b, (5, 3)),
        (np.einsum("ij,jk->ki", A, B).T, a, b, (5, 3)), (np.vecdot(A, A), a[:1], a[:1].T, None),
        (np.matvec(A, V), a, v[:, None], (5,)), (np.vecmat(W, A), w[None], a, (7,)),
        (np.linalg.matmul(A, B), a, b, (5, 3)), (np.linalg.vecdot(A.T, A.T, axis=0), a[:1], a[:1].T, None),
    ]
    for got, a2, b2, shape in cases:
        got = np.asarray(got)
        if shape is None:            # vecdot: check the first entry
            got, shape = got.reshape(-1)[:1], (1,)
        assert a2.shape[0] * b2.shape[1] == math.prod(shape)
        assert within_gemm_bound(got, a2, b2, name, shape)
    assert type(np.einsum("ij,jk->ki", A, B)) is sp.SplitArray and np.einsum("ij,jk->ki", A, B).dtype == name


def test_einsum_runs_the_documented_pairwise_order_and_exact_gathers():
    a, b, c = (sp.asarray(rng.standard_normal(s).astype(np.float32), dtype="bf16x6") for s in ((4, 4), (4, 5), (5, 3)))
    t = sp.asarray(rng.standard_normal((2, 4, 4)).astype(np.float32), dtype="bf16x6")
    x = a.to_numpy()
    diagonal = sp.asarray(np.diagonal(x).copy(), dtype="bf16x6")
    pairs = [
        (np.einsum("ij,jk,kl->il", a, b, c), (a @ b) @ c),
        (np.einsum("ij,jk,kl->li", a, b, c), ((a @ b) @ c).T),
        (np.einsum("ii,ij->j", a, b), diagonal @ b),                                  # a trace gather
        (np.einsum("ii->i", a), diagonal), (np.einsum("ii", a), diagonal.sum()), (np.einsum("ji", a), a.T),
        (np.einsum("...ij,...jk->...ik", t, a), t @ a), (np.einsum("bii->bi", t), sp.asarray(np.diagonal(t.to_numpy(), 0, 1, 2).copy(), dtype="bf16x6")),
        (np.einsum("ij,kj->ik", a, b.T), a @ b), (np.einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b),
        (np.einsum("ij->", a), a.sum()), (np.einsum("i,i", diagonal, diagonal), diagonal @ diagonal),
        (np.einsum("ij,jk", a, b, optimize=True), a @ b), (np.einsum("bij,jk->bik", t, b), t @ b),
        (np.linalg.multi_dot([diagonal, a, b]), (diagonal @ a) @ b),                  # least work first
        (np.linalg.multi_dot([b.T, b, b.T]), b.T @ (b @ b.T)),
        (np.linalg.matrix_power(a, 5), a @ ((a @ a) @ (a @ a))), (np.linalg.matrix_power(a, 1), a),
        (np.linalg.matrix_power(a, 0), sp.asarray(np.eye(4, dtype=np.float32), dtype="bf16x6")),
    ]
    for got, expected in pairs:
        assert np.array_equal(np.asarray(got), np.asarray(expected)), (got, expected)
    reference = exact("ij,jk,kl->il", a, b, c)
    assert np.allclose(np.asarray(pairs[0][0]), reference, rtol=1e-5, atol=1e-5)
    out = sp.zeros((4, 3), dtype="bf16x6")
    assert np.einsum("ij,jk,kl->il", a, b, c, out=out) is out and np.array_equal(out.to_numpy(), np.asarray(pairs[0][1]))


def test_contractions_broadcast_and_return_scalars_like_numpy():
    a = sp.asarray(rng.standard_normal((3, 1, 4)).astype(np.float32), dtype="tf32x3")
    b = sp.asarray(rng.standard_normal((2, 4)).astype(np.float32), dtype="tf32x3")
    got = np.vecdot(a, b)
    assert got.shape == (3, 2)
    assert np.array_equal(np.asarray(got), np.asarray(np.einsum("...i,...i->...", a, b)))
    assert type(np.vdot(b, b)) is np.float32 and type(np.einsum("ij,ij", b, b)) is np.float32
    assert np.einsum("i,i->i", sp.ones(1), sp.ones(3)).shape == (3,)


def test_device_check_sees_arrays_inside_lists_regression():
    """``np.concatenate([gpu, cpu])`` is checked for mixed devices before the call: the check finds
    the arrays inside its list argument (it saw only top-level arrays, and cupy raised first)."""
    from splitprec.array.fallback import _arrays
    x, y, z = np.zeros(1, np.float32), np.ones(2, np.float32), np.ones(3, np.float32)
    assert [a.size for a in _arrays(([x, (y,)], z, 3.0))] == [1, 2, 3]


def test_numpy_fft_of_a_splitarray_gives_float32_results_as_splitarrays_regression():
    """``np.fft.irfft(a)`` and ``np.fft.hfft(a)`` gave numpy arrays (the transforms skipped the rule that
    wraps float32 results), and an ``out=`` SplitArray was written past its split cache."""
    a, v = sp.asarray(X, dtype="bf16x9"), np.ones(10, np.float32)
    for numpy_fft, ours in ((np.fft.irfft, sp.fft.irfft), (np.fft.hfft, sp.fft.hfft),
                            (np.fft.irfft2, sp.fft.irfft2), (np.fft.irfftn, sp.fft.irfftn)):
        got = numpy_fft(a)
        assert type(got) is sp.SplitArray and got.dtype == "bf16x9"
        assert np.array_equal(got.to_numpy(), ours(X, dtype="bf16x9"))
    out = sp.zeros((4, 10), dtype="bf16x9")
    out @ v                                                  # caches the split of zeros
    assert np.fft.irfft(a, out=out) is out
    assert np.array_equal(np.asarray(out @ v), sp.matmul(sp.fft.irfft(X, dtype="bf16x9"), v, dtype="bf16x9"))
    assert type(np.fft.rfft(a)) is np.ndarray                # complex64: no SplitArray holds it
    with pytest.raises(TypeError, match=r"^fft.fft: the result has dtype complex64; out is a SplitArray"):
        np.fft.fft(a, out=sp.zeros(X.shape, dtype="bf16x9"))


def test_numpy_operands_written_into_a_splitarray_out_take_its_scheme_regression():
    """``np.matmul(ndarray, ndarray, out=SplitArray)`` raised ``min() arg is an empty sequence``."""
    x = np.float32([[1.0, 2.0], [3.0, 4.0]])
    for call, expected in ((lambda out: np.matmul(x, x, out=out), sp.matmul(x, x, dtype="tf32x3")),
                           (lambda out: np.add(x, x, out=out), x + x),
                           (lambda out: np.einsum("ij,jk->ik", x, x, out=out), sp.matmul(x, x, dtype="tf32x3")),
                           (lambda out: np.linalg.multi_dot([x, x], out=out), sp.matmul(x, x, dtype="tf32x3")),
                           (lambda out: np.sum(np.stack([x, x]), axis=0, out=out), x + x)):
        out = sp.zeros((2, 2), dtype="tf32x3")
        assert call(out) is out and out.dtype == "tf32x3"
        assert np.array_equal(out.to_numpy(), expected)


def test_a_read_only_splitarray_out_is_refused_naming_out_regression():
    memory = np.ones(3, np.float32)
    memory.flags.writeable = False
    out = sp.array_api.asarray(memory, copy=False)
    for call in (lambda: np.add(out, out, out=out), lambda: np.sum(np.ones((2, 3), np.float32), axis=0, out=out)):
        with pytest.raises(ValueError, match=r"^(add|sum): out is read-only"):
            call()


def test_a_read_only_numpy_out_is_refused_naming_out_regression():
    """numpy ufuncs and functions on SplitArrays gave numpy's "output array is read-only", which
    does not name ``out``; ``sp.matmul`` and ``np.sum`` named it."""
    a = sp.asarray(X, dtype="tf32x3")
    out = np.zeros(X.shape, np.float32)
    out.flags.writeable = False
    for op, call in (("add", lambda: np.add(a, a, out=out)), ("sqrt", lambda: np.sqrt(a, out=out)),
                     ("multiply", lambda: np.multiply(a, 2, out=out)), ("cumsum", lambda: np.cumsum(a, axis=0, out=out)),
                     ("cumsum", lambda: np.cumsum(a, 0, None, out)), ("clip", lambda: np.clip(a, 0, 1, out=out)),
                     ("add.accumulate", lambda: np.add.accumulate(a, out=out)),
                     ("max", lambda: np.max(a, axis=0, out=out[0])), ("sum", lambda: np.sum(a, axis=0, out=out[0])),
                     ("sum", lambda: np.sum(a, axis=0, dtype=np.float64, out=out[0])),
                     ("matmul", lambda: sp.matmul(X, np.eye(6, dtype=np.float32), out=out))):
        with pytest.raises(ValueError, match=rf"^{op}: out is read-only; expected a writable array"):
            call()
    assert not out.any()


def test_a_splitarray_out_given_by_position_is_seen_by_the_split_cache_regression():
    """``np.cumsum(a, 0, None, out)`` wrote the SplitArray ``out``'s storage directly: its cached split
    stayed, and ``out @ v`` used the old values."""
    a, v = sp.asarray(X, dtype="bf16x9"), np.ones(6, np.float32)
    for call, expected in ((lambda out: np.cumsum(a, 0, None, out), np.cumsum(X, 0)),
                           (lambda out: np.clip(a, 0, 1, out), np.clip(X, 0, 1)),
                           (lambda out: np.round(a, 1, out), np.round(X, 1))):
        out = sp.zeros(X.shape, dtype="bf16x9")
        out @ v                                              # caches the split of zeros
        assert call(out) is out and np.array_equal(out.to_numpy(), expected)
        assert np.array_equal(np.asarray(out @ v), sp.matmul(expected, v, dtype="bf16x9"))
    with pytest.raises(TypeError, match=r"^cumsum: the result has dtype float64; out is a SplitArray"):
        np.cumsum(a, 0, np.float64, sp.zeros(X.shape, dtype="bf16x9"))


def test_overwrite_input_leaves_a_splitarray_unwritten_regression():
    """``np.median(a, overwrite_input=True)`` reordered ``a``'s storage in place, its split left stale."""
    v = np.ones(6, np.float32)
    for call in (lambda a: np.median(a, overwrite_input=True), lambda a: np.percentile(a, 30, None, None, True),
                 lambda a: np.quantile(a, 0.3, axis=1, overwrite_input=True)):
        a = sp.asarray(X, dtype="bf16x9")
        a @ v
        assert np.array_equal(np.asarray(call(a)), call(X.copy()))
        assert np.array_equal(a.to_numpy(), X) and np.array_equal(np.asarray(a @ v), sp.matmul(X, v, dtype="bf16x9"))


def test_dot_and_outer_take_out_as_matmul_does_regression():
    """``np.dot(x, y, out=s)`` raised "option(s) out not supported" while ``np.matmul`` took it."""
    a, b = sp.asarray(X, dtype="tf32x3"), sp.asarray(Y.T, dtype="tf32x3")
    for operands in ((a, b), (X, Y.T), (a[0], b[:, 0]), (a, b[:, 0])):
        expected = np.asarray(sp.matmul(*operands, dtype="tf32x3"))
        out = sp.zeros(expected.shape, dtype="tf32x3")
        assert np.dot(*operands, out=out) is out and np.array_equal(out.to_numpy(), expected)
    out = sp.zeros(X.shape, dtype="tf32x3")
    assert np.dot(a, 2, out=out) is out and np.array_equal(out.to_numpy(), X * 2)
    into = sp.zeros((6, 4), dtype="tf32x3")
    assert np.outer(a[0], b[0], out=into) is into and np.array_equal(into.to_numpy(), np.outer(a[0], b[0]).to_numpy())
    for call in (np.dot, np.matmul):
        with pytest.raises(TypeError, match=rf"^{call.__name__}: out must be a SplitArray, got list"):
            call(a, b, out=[0.0])


@pytest.mark.parametrize("call, shape", [
    (lambda a, out: np.matmul(a, a.T, out=out), (4, 4)), (lambda a, out: np.dot(a, a.T, out=out), (4, 4)),
    (lambda a, out: a.__matmul__(a.T) if out is None else np.matmul(a, a.T, out), (4, 4)),
    (lambda a, out: np.einsum("ij,kj->ik", a, a, out=out), (4, 4)), (lambda a, out: np.vecdot(a, a, out=out), (4,)),
    (lambda a, out: np.outer(a[0], a[1], out=out), (6, 6))])
def test_contractions_write_a_float32_numpy_out_as_numpy_does_regression(call, shape):
    """``np.matmul(s, t, out=ndarray)`` raised TypeError ("out must be a SplitArray") though numpy's
    ufuncs and reductions of SplitArrays write numpy outs; now the float32 result is stored there,
    or in a float64 out (exactly, as numpy's), and a dtype that would round it is refused."""
    a = sp.asarray(X, dtype="tf32x3")
    out = np.full(shape, np.nan, np.float32)
    assert call(a, out) is out and np.array_equal(out, np.asarray(call(a, None)))
    wide = np.zeros(shape)
    assert call(a, wide) is wide and np.array_equal(wide, out)
    with pytest.raises(TypeError, match=r"^\w+: out has dtype float16; expected float32, the result's dtype"):
        call(a, np.zeros(shape, np.float16))
    with pytest.raises(ValueError, match=r"^\w+: out has shape \(1,\) but the result has shape"):
        call(a, np.zeros(1, np.float32))
    out.flags.writeable = False
    with pytest.raises(ValueError, match=r"^\w+: out is read-only; expected a writable array"):
        call(a, out)
        with pytest.raises(ValueError, match=rf"^{call.__name__}: out has shape \(4, 3\) but the result has shape \(4, 4\)"):
            call(a, b, out=sp.zeros((4, 3), dtype="tf32x3"))
        with pytest.raises(TypeError, match=rf"^{call.__name__}: the result has scheme tf32x3 but out has scheme bf16x9"):
            call(a, b, out=sp.zeros((4, 4), dtype="bf16x9"))


@pytest.mark.parametrize("call, message", [
    (lambda a, x: np.dot(a, x[0, 0]), r"^dot: b has dtype float64"),
    (lambda a, x: np.inner(x[0, 0], a), r"^inner: a has dtype float64"),
    (lambda a, x: np.tensordot(a, x.T, 1), r"^tensordot: b has dtype float64"),
    (lambda a, x: np.einsum("ij,kj", a, x), r"^einsum: operands\[1\] has dtype float64"),
    (lambda a, x: np.linalg.multi_dot([a, x.T, a]), r"^multi_dot: arrays\[1\] has dtype float64"),
    (lambda a, x: np.vecdot(a, x), r"^vecdot: x2 has dtype float64"),
    (lambda a, x: np.matvec(a, x[0]), r"^matvec: x2 has dtype float64"),
    (lambda a, x: np.vdot(x, a), r"^vdot: a has dtype float64"),
])
def test_contractions_refuse_float64_naming_the_argument_regression(call, message):
    """A float64 operand was refused as "an operand" (or, for ``dot`` with a 0-d operand, by
    ``multiply`` as ``x2``): the error now names the contraction and numpy's argument name."""
    with pytest.raises(TypeError, match=message):
        call(sp.asarray(X, dtype="tf32x3"), X.astype(np.float64))


@pytest.mark.parametrize("call, error, message", [
    (lambda a: np.matvec(a[0], a[0]), ValueError, r"^matvec: subscripts '\.\.\.ij,\.\.\.j->\.\.\.i' name more"),
    (lambda a: np.einsum("ii", a), ValueError, r"^einsum: label 'i' repeats within an operand of shape \(4, 6\)"),
    (lambda a: np.vecdot(a[0, 0], a), ValueError, r"^vecdot: x1 is a scalar \(ndim 0\)"),
    (lambda a: np.vecdot(a, a, axis=2), np.exceptions.AxisError, r"^vecdot: axis of x1: axis 2 is out of bounds"),
    (lambda a: np.linalg.matrix_power(a[:, :4], 2.0), TypeError, r"^matrix_power: n is 2\.0 of type float; expected an integer"),
    (lambda a: np.matmul(a, a, axes=[(0, 1), (1, 0), (0, 2)]), np.exceptions.AxisError,
     r"^matmul: axes entry for the result: axis 2 is out of bounds"),
    (lambda a: np.matmul(a, a, axes=[(0, 0), (1, 0), (0, 1)]), ValueError, r"^matmul: axes entry \(0, 0\) for a repeats"),
])
def test_contraction_shape_errors_name_the_contraction_regression(call, error, message):
    """These raised errors that named ``einsum`` (for ``matvec``), numpy's internals (``source: axis
    -1 ...``, ``repeated axis in `source` argument``, einsum's "collapsing index") or none at all
    (``unsupported operand type(s) for &``)."""
    with pytest.raises(error, match=message):
        call(sp.asarray(X, dtype="tf32x3"))


def test_linalg_outer_refuses_arrays_that_are_not_1d_regression():
    """``np.linalg.outer`` (the standard's ``outer``) flattened 2-D operands as ``np.outer`` does;
    numpy's refuses them, and so does it now, while ``np.outer`` still flattens."""
    a = sp.asarray(X, dtype="tf32x3")
    with pytest.raises(ValueError, match=r"^outer: x1 has shape \(4, 6\) and x2 has shape \(6,\); expected 1-D"):
        np.linalg.outer(a, a[0])
    assert np.array_equal(np.asarray(np.linalg.outer(a[0], a[1])), np.asarray(np.outer(a[0], a[1])))
    assert np.outer(a, a[0]).shape == (24, 6)


def test_multi_dot_of_two_arrays_is_dot_and_tensordot_takes_numpy_integer_axes_regression():
    """``multi_dot`` of two arrays refused N-D operands where numpy's runs ``dot``; ``tensordot``
    with ``axes=numpy.int64(1)`` raised "'numpy.int64' object is not iterable"."""
    a = sp.asarray(rng.standard_normal((2, 4, 6)).astype(np.float32), dtype="tf32x3")
    b = sp.asarray(Y.T, dtype="tf32x3")
    got = np.linalg.multi_dot([a, b])
    assert got.shape == np.dot(a.to_numpy(), Y.T).shape == (2, 4, 4)
    assert np.array_equal(np.asarray(got), np.asarray(np.dot(a, b)))
    assert np.array_equal(np.asarray(np.tensordot(a, b, axes=np.int64(1))), np.asarray(np.tensordot(a, b, axes=1)))


@pytest.mark.parametrize("call, expected", [
    (lambda a: np.concatenate([a, [0.5]]), np.float32([1, 2, 3, 0.5])),
    (lambda a: np.where(a > 1, a, [0.5, 1.0, 2.0]), np.float32([0.5, 2, 3])),
    (lambda a: np.clip(a, [0.0, 0.0, 0.0], 2), np.float32([1, 2, 2])),
    (lambda a: divmod(a, [1.0, 2.0, 2.0])[1], np.float32([0, 0, 1])),
    (lambda a: np.add(a, [0.5, 1, 2], out=a.copy(), where=np.array([1, 0, 1], bool)), np.float32([1.5, 2, 5])),
])
def test_lists_beside_a_splitarray_follow_the_input_rule_everywhere_regression(call, expected):
    """Lists reached numpy as float64 data outside plain arithmetic: ``np.concatenate([a, [0.5]])``
    and ``divmod(a, [1., 2., 2.])`` gave float64 ndarrays, and ``np.add(a, [0.1] * 3, out=f32)``
    rounded 0.1 silently, where ``a + [0.1]`` raises TypeError."""
    got = call(sp.asarray(np.float32([1, 2, 3]), dtype="bf16x9"))
    assert type(got) is sp.SplitArray and got.dtype == "bf16x9" and np.array_equal(got.to_numpy(), expected)


def test_inexact_lists_and_complex_scalars_beside_a_splitarray_are_refused_regression():
    a = sp.asarray(np.float32([1, 2, 3]), dtype="bf16x9")
    for call in (lambda: np.logaddexp(a, [0.1] * 3), lambda: np.add(a, [0.1] * 3, out=np.empty(3, np.float32)),
                 lambda: np.concatenate([a, [0.1]]), lambda: np.add(a, 1j, out=np.empty(3, np.complex64))):
        with pytest.raises(TypeError, match=r"float32 cannot hold exactly|has dtype complex128"):
            call()


def test_astype_fill_sort_format_and_reduction_dtypes_follow_ndarray_regression():
    """``astype`` refused numpy's ``casting``/``order``; ``format(0-d, ".2f")`` raised; ``fill`` took a
    sequence; ``sort(axis=None)`` worked on 1-D and failed obscurely on 2-D; ``sum(dtype="bf16x9")``
    refused the scheme's name that ``astype`` takes; a 0-d ``== None`` was a 0-d array."""
    a = sp.asarray(np.float32([3, 1, 2]), dtype="bf16x9")
    assert a.astype(np.float64, casting="safe").dtype == np.float64 and a.astype("tf32x3", order="F").dtype == "tf32x3"
    with pytest.raises(TypeError, match="according to the rule 'safe'"):
        a.astype(np.float16, casting="safe")
    assert format(sp.asarray(np.float32(1.5)), ".2f") == format(np.asarray(np.float32(1.5)), ".2f") == "1.50"
    with pytest.raises(TypeError, match="unsupported format string"):
        format(a, ".2f")
    with pytest.raises(ValueError, match="expected a scalar"):
        a.fill([1.0])
    with pytest.raises(TypeError, match="sort: axis=None"):
        a.sort(axis=None)
    assert a.sum(dtype="bf16x9") == a.sum(dtype=sp.dtype("bf16x9")) == 6 and a.mean(dtype="tf32x3") == 2
    assert (sp.asarray(np.float32(1.5)) == None) is np.False_          # noqa: E711
