"""SplitArray on numpy storage: creation, attributes, views and the split cache, numpy float32
elementwise semantics (bit for bit), contractions equal to sp.matmul, compensated reductions, errors."""
import math
import operator
import re
import warnings

import numpy as np
import pytest
from hypothesis import example, given, strategies as st
from hypothesis.extra import numpy as hnp

import splitprec as sp
import splitprec.array.core as sparray
from conftest import ForeignTensor
from splitprec.array import ufuncs
from splitprec.engines.reference import gemm as reference_gemm
from splitprec.split import split

ALL_DTYPES = sp.dtypes("float32")
FLOAT_UFUNCS = sorted(ufuncs.FLOAT_UFUNCS, key=lambda u: u.__name__)
BOOL_UFUNCS = sorted(ufuncs.BOOL_UFUNCS, key=lambda u: u.__name__)
U = 2.0 ** -24
rng = np.random.default_rng(7)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def assert_same(got, expected):
    """Equal float32 (or bool) arrays, bit for bit: same dtype, shape, values, NaNs and zero signs."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.array_equal(got, expected, equal_nan=True)
    if got.dtype == np.float32:          # zero signs too (the sign of a NaN carries no meaning)
        assert np.array_equal(np.signbit(got) & ~np.isnan(got), np.signbit(expected) & ~np.isnan(expected))


# -- strategies ----------------------------------------------------------------------------------

float32s = st.floats(width=32, allow_nan=True, allow_infinity=True)
STEPS = st.sampled_from([1, 2, -1, -2])


@st.composite
def views(draw, max_dims=3):
    """(numpy float32 array, the same values as a SplitArray): a strided, maybe reversed view."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=0, max_side=5))
    base = draw(hnp.arrays(np.float32, shape, elements=float32s))
    key = tuple(slice(None, None, draw(STEPS)) for _ in shape)
    name = draw(st.sampled_from(ALL_DTYPES))
    array = sp.asarray(base, dtype=name)
    return base[key], array[key] if shape else array        # a[()] would be a numpy scalar


def counting(monkeypatch):
    """Count calls of split by SplitArrays and by sp.matmul."""
    calls = []

    def counted(x, dtype, *, axis=None):
        calls.append(axis)
        return sp_split(x, dtype, axis=axis)
    sp_split = sparray.split
    monkeypatch.setattr(sparray, "split", counted)
    monkeypatch.setattr(reference_gemm, "split", counted)
    return calls


# -- creation ------------------------------------------------------------------------------------

@pytest.mark.parametrize("data", [np.float32([[1, 2], [3, 4]]), np.float16([1.5, -2]), [1, 2.5],
                                  [[True, False]], 3, -0.25, np.int32([7, 1 << 24]),
                                  np.float32(2), float("inf")])
def test_asarray_takes_exact_data_and_copies_it(data):
    a = sp.asarray(data, dtype="tf32x3")
    expected = np.asarray(data).astype(np.float32)
    assert type(a) is sp.SplitArray and a.dtype is sp.dtype("tf32x3") and a.device == "cpu"
    assert_same(a.to_numpy(), expected)
    if isinstance(data, np.ndarray):
        data[...] = 0
        assert_same(a.to_numpy(), expected)


def test_asarray_takes_what_matmul_takes_regression():
    """bfloat16 arrays, jax arrays and torch tensors were refused, though matmul and the ffts take them."""
    ml_dtypes, jnp = pytest.importorskip("ml_dtypes"), pytest.importorskip("jax.numpy")
    x = np.float32([[1.5, -2.0], [2.0 ** -130, 3.0]])
    for data in (x.astype(ml_dtypes.bfloat16), jnp.asarray(x), jnp.asarray(x).astype(jnp.bfloat16),
                 ForeignTensor(x)):
        a = sp.asarray(data, dtype="bf16x9")
        assert type(a) is sp.SplitArray and a.dtype == "bf16x9"
        assert_same(a.to_numpy(), x)
        assert_same(np.asarray(a @ x), np.asarray(sp.matmul(data, x, dtype="bf16x9")))
    with pytest.raises(TypeError, match=r"^asarray: x has dtype float64; accepted: float32, float16 or bfloat16"):
        sp.asarray(ForeignTensor(x.astype(np.float64)))
    torch = pytest.importorskip("torch")
    assert_same(sp.asarray(torch.from_numpy(x)).to_numpy(), x)


@pytest.mark.parametrize("data, match", [
    (np.ones(3), r"^asarray: x has dtype float64; accepted: float32, float16 or bfloat16 data"),
    (np.float64(1.0), r"^asarray: x has dtype float64"),
    ([0.1, 0.5], r"^asarray: x holds a value that float32 cannot hold exactly \(0.1\)"),
    (np.int64([1, (1 << 24) + 1]), r"^asarray: x holds a value that float32 cannot hold exactly \(16777217\)"),
    ([1e300], r"^asarray: x holds a value that float32 cannot hold exactly"),
    (np.complex64([1]), r"^asarray: x has dtype complex64"),
    ("1.0", r"^asarray: x of type str is not accepted"),
])
def test_asarray_rejects_values_float32_cannot_hold(data, match):
    with pytest.raises(TypeError, match=match):
        sp.asarray(data, dtype="bf16x9")


def test_asarray_rejects_unknown_scheme_and_device():
    with pytest.raises(ValueError, match=r"^unknown split dtype 'tf32x4'; expected one of"):
        sp.asarray([1.0], dtype="tf32x4")
    with pytest.raises(ValueError, match=r"^asarray: unknown device 'tpu'; expected 'cpu' or 'gpu'"):
        sp.asarray([1.0], device="tpu")
    with pytest.raises(ValueError, match=r"^zeros: unknown device 'tpu'"):
        sp.zeros(3, device="tpu")


def test_asarray_of_a_splitarray_keeps_or_converts_it():
    a = sp.asarray([1.0, 2.0], dtype="bf16x9")
    assert sp.asarray(a) is a and sp.asarray(a, dtype="9xBF16") is a
    b = sp.asarray(a, dtype="tf32x3")
    assert b.dtype.name == "tf32x3" and b is not a and np.array_equal(b.to_numpy(), a.to_numpy())
    assert sp.asarray([1.0]).dtype == sp.dtype("bf16x6")       # the cheapest fp32-class scheme
    c = sp.SplitArray(a)
    c[0] = 5
    assert a[0] == 1 and c.dtype.name == "bf16x9"


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_creation_functions_fill_shape_and_scheme(name):
    for array, fill in ((sp.zeros((2, 3), dtype=name), 0), (sp.ones(4, dtype=name), 1),
                        (sp.full((1, 2), -2.5, dtype=name), -2.5)):
        assert array.dtype.name == name and array.device == "cpu"
        assert_same(array.to_numpy(), np.full(array.shape, fill, np.float32))
    assert sp.empty((0, 5), dtype=name).shape == (0, 5)
    with pytest.raises(TypeError, match=r"^full: fill_value holds a value that float32 cannot"):
        sp.full(3, 0.1, dtype=name)


# -- attributes, conversion, protocol ------------------------------------------------------------

def test_attributes_follow_numpy():
    x = randn(2, 3, 4)
    a = sp.asarray(x, dtype="bf16x9")
    assert (a.shape, a.ndim, a.size, len(a), a.device) == ((2, 3, 4), 3, 24, 2, "cpu")
    assert_same(a.T.to_numpy(), x.T)
    assert_same(a.mT.to_numpy(), np.swapaxes(x, -1, -2))
    assert len(a.terms) == 3 and all(t.dtype == np.float32 and t.shape == x.shape for t in a.terms)
    scale = 2.0 ** -split(x, "bf16x9").exponent.astype(np.float64)         # one power of two
    assert_same((sum(t.astype(np.float64) for t in a.terms) / scale).astype(np.float32), x)
    with pytest.raises(ValueError, match=r"^mT: the array has ndim 1"):
        a[0, 0].mT


def test_repr_and_str_show_values_scheme_and_device():
    a = sp.asarray([[1.0, 2.0], [3.0, 4.0]], dtype="bf16x9")
    assert repr(a) == "SplitArray([[1., 2.],\n            [3., 4.]], dtype=bf16x9, device=cpu)"
    assert str(a) == "[[1. 2.]\n [3. 4.]] (bf16x9, cpu)"
    assert repr(sp.zeros((0, 3), dtype="tf32")) == "SplitArray([], shape=(0, 3), dtype=tf32, device=cpu)"
    assert repr(sp.asarray(2.0, dtype="fp16x3")) == "SplitArray(2., dtype=fp16x3, device=cpu)"


def test_len_iteration_and_truth_follow_numpy():
    a = sp.asarray([[1.0, 2.0], [0.0, 4.0]], dtype="tf32x3")
    rows = list(a)
    assert len(rows) == 2 and all(type(r) is sp.SplitArray for r in rows)
    assert [float(x) for x in a[1]] == [0.0, 4.0]
    assert bool(sp.asarray([3.0])) and not bool(sp.asarray([0.0]))
    with pytest.raises(ValueError, match=r"^The truth value of an array"):
        bool(a)
    with pytest.raises(TypeError):
        len(sp.asarray(1.0))
    with pytest.raises(TypeError, match=r"^iteration over a 0-d SplitArray"):
        iter(sp.asarray(1.0))


def test_astype_copy_and_numpy_conversion():
    x = randn(3, 2)
    a = sp.asarray(x, dtype="tf32x3")
    b = a.astype("bf16x9")
    assert b.dtype.name == "bf16x9" and np.array_equal(b.to_numpy(), a.to_numpy())
    assert a.astype(np.float64).dtype == np.float64 and type(a.astype("float32")) is np.ndarray
    with pytest.raises(TypeError, match=r"^astype: unknown dtype 'tf32x4'; expected a split scheme"):
        a.astype("tf32x4")
    c = a.copy()
    c[0, 0] = 7
    assert a[0, 0] == x[0, 0]
    for host in (a.to_numpy(), a.get(), np.array(a)):
        assert type(host) is np.ndarray and host.flags.writeable and np.shares_memory(host, host)
        host[...] = 0
    assert_same(a.to_numpy(), x)
    view = np.asarray(a)
    assert not view.flags.writeable and np.array_equal(view, x)
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    assert_same(np.from_dlpack(a), x)
    assert a.__dlpack_device__() == x.__dlpack_device__()
    assert not hasattr(a, "__cuda_array_interface__")


# -- indexing, views, setitem --------------------------------------------------------------------

def test_indexing_returns_splitarrays_or_float32_scalars():
    x = randn(4, 5)
    a = sp.asarray(x, dtype="bf16x6")
    for key in [1, (slice(None), 2), (slice(1, None, 2), slice(None, None, -1)), [0, 3],
                x > 0, (np.array([0, 2]), np.array([1, 4])), (Ellipsis, None)]:
        assert type(a[key]) is sp.SplitArray and a[key].dtype.name == "bf16x6"
        assert_same(a[key].to_numpy(), x[key])
    assert type(a[1, 2]) is np.float32 and a[1, 2] == x[1, 2]
    with pytest.raises(IndexError, match=r"^__getitem__: a SplitArray is not a valid index"):
        a[sp.asarray([0])]                     # float data: numpy raises IndexError for x[x]


def test_basic_views_share_storage_and_setitem_writes_exact_data():
    a = sp.asarray(np.zeros((3, 4), np.float32), dtype="tf32x3")
    row = a[1]
    row[::2] = [1, 2]
    a[2, :] = np.float16(0.5)
    a.T[3, 0] = sp.asarray([-3.0])[0]
    expected = np.float32([[0, 0, 0, -3], [1, 0, 2, 0], [0.5] * 4])
    assert_same(a.to_numpy(), expected)
    assert_same(row.to_numpy(), expected[1])
    with pytest.raises(TypeError, match=r"^__setitem__: value holds a value that float32 cannot"):
        a[0, 0] = 0.1
    with pytest.raises(TypeError, match=r"^__setitem__: value has dtype float64"):
        a[0] = np.ones(4)


@pytest.mark.parametrize("function, args", [
    (np.reshape, ((6, 4),)), (np.transpose, ((1, 2, 0),)), (np.swapaxes, (0, 2)),
    (np.squeeze, ()), (np.expand_dims, (1,)), (np.broadcast_to, ((5, 2, 3, 4),)), (np.ravel, ())])
def test_shape_functions_match_numpy(function, args):
    x = randn(2, 3, 4)
    a = sp.asarray(x, dtype="fp16x3")
    result = function(a, *args)
    assert type(result) is sp.SplitArray and result.dtype.name == "fp16x3"
    assert_same(result.to_numpy(), function(x, *args))


def test_shape_methods_and_joins_match_numpy():
    x, y = randn(2, 3), randn(2, 3)
    a, b = sp.asarray(x, dtype="tf32x3"), sp.asarray(y, dtype="bf16x9")
    assert_same(a.reshape(3, 2).to_numpy(), x.reshape(3, 2))
    assert_same(a.transpose(1, 0).to_numpy(), x.T)
    assert_same(a[None].squeeze(0).to_numpy(), x)
    for function, kwargs in ((np.concatenate, {"axis": 1}), (np.stack, {"axis": 2})):
        joined = function([a, b, y], **kwargs)
        assert joined.dtype.name == "bf16x9"
        assert_same(joined.to_numpy(), function([x, y, y], **kwargs))
    assert (np.shape(a), np.ndim(a), np.size(a)) == ((2, 3), 2, 6)
    assert np.array_equal(a, x) and not np.array_equal(a, b) and np.allclose(b, y)
    assert_same(np.isclose(a, x + 1), np.isclose(x, x + 1))


# -- split once, multiply many -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["bf16x9", "tf32x3"])
def test_operands_are_split_once_and_views_give_a_copys_product(name, monkeypatch):
    """Every float32 scheme scales its slices (pow2): an operand is split once per reduction axis,
    and a view's product equals that of a copy (its slices' scales are its own)."""
    calls = counting(monkeypatch)
    a, b = sp.asarray(randn(6, 5), dtype=name), sp.asarray(randn(5, 4), dtype=name)
    first = a @ b
    assert len(calls) == 2
    for _ in range(3):
        assert_same((a @ b).to_numpy(), first.to_numpy())
        np.matmul(a, b), np.dot(a, b), np.einsum("ij,jk->ik", a, b)
    assert len(calls) == 2
    x, y = a.to_numpy(), b.to_numpy()
    assert_same((a.T.T @ b).to_numpy(), first.to_numpy())
    assert_same((a[1:] @ b[:, ::-1]).to_numpy(), sp.matmul(x[1:].copy(), y[:, ::-1].copy(), dtype=name))
    assert_same((a[:, 1:] @ b[1:]).to_numpy(), sp.matmul(x[:, 1:].copy(), y[1:].copy(), dtype=name))


def test_pow2_schemes_cache_one_split_per_reduction_axis(monkeypatch):
    a = sp.asarray(randn(5, 5), dtype="fp16x3")
    expected = sp.matmul(a.to_numpy(), a.to_numpy(), dtype="fp16x3")
    calls = counting(monkeypatch)
    for _ in range(3):
        assert_same((a @ a).to_numpy(), expected)
    assert sorted(calls) == [-2, -1]              # a as A (rows scaled) and as B (columns)


@pytest.mark.parametrize("write", [
    lambda a: a.__setitem__((0, 0), 3.0), lambda a: a.__iadd__(1), lambda a: a.T.__setitem__(1, 2),
    lambda a: a[:, 1:].__imul__(2), lambda a: np.negative(a, out=a)])
@pytest.mark.parametrize("name", ["bf16x6", "fp16x3"])
def test_writes_through_any_view_invalidate_the_cached_split(write, name, monkeypatch):
    calls = counting(monkeypatch)
    a, b = sp.asarray(randn(4, 4), dtype=name), sp.asarray(randn(4, 3), dtype=name)
    view = a[::-1]
    a @ b, view @ b
    before = len(calls)
    write(a)
    for x in (a, view):
        assert_same((x @ b).to_numpy(), sp.matmul(x.to_numpy(), b.to_numpy(), dtype=name))
    assert len(calls) > before



@pytest.mark.parametrize("call", [lambda a: np.nan_to_num(a, copy=False, posinf=1.0),
                                  lambda a: np.nan_to_num(a, False, posinf=1.0),
                                  lambda a: np.nan_to_num(a, copy=None, posinf=1.0)])
def test_nan_to_num_without_copy_drops_the_cached_split_regression(call):
    """``np.nan_to_num(a, copy=False)`` wrote a SplitArray's storage behind its split cache, so
    ``a.terms`` (and the parts a product reuses) still held the inf it replaced."""
    x = np.float32([[np.inf, 1.0, 2.0], [3.0, 4.0, 5.0]])
    a = sp.asarray(x, dtype="bf16x9")
    stale = a.terms
    assert call(a) is a
    x[0, 0] = 1.0
    assert_same(a.to_numpy(), x)
    for got, fresh in zip(a.terms, split(x, sp.dtype("bf16x9")).terms):
        assert_same(got, fresh)
    assert not np.isfinite(stale[0]).all() and np.isfinite(a.terms[0]).all()
    b = randn(3, 2)
    assert_same((a @ b).to_numpy(), sp.matmul(x, b, dtype="bf16x9"))

# -- elementwise arithmetic: numpy float32, bit for bit ------------------------------------------

@pytest.mark.parametrize("ufunc", FLOAT_UFUNCS + BOOL_UFUNCS, ids=lambda u: u.__name__)
@given(data=st.data())
def test_elementwise_results_equal_numpy_float32(ufunc, data):
    x, a = data.draw(views())
    others = [data.draw(hnp.arrays(np.float32, x.shape, elements=float32s))
              for _ in range(ufunc.nin - 1)]
    other_arrays = [sp.asarray(y, dtype=data.draw(st.sampled_from(ALL_DTYPES))) for y in others]
    with np.errstate(all="ignore"):
        expected = ufunc(x, *others)
        got = ufunc(a, *other_arrays)
    if ufunc in ufuncs.BOOL_UFUNCS:
        assert_same(got, expected)
        return
    assert_same(got.to_numpy() if type(got) is sp.SplitArray else got, expected)
    if x.ndim:
        assert got.dtype == sparray.promote(a.dtype, *[o.dtype for o in other_arrays])
    else:
        assert type(got) is np.float32


@given(data=st.data(), scalar=st.one_of(st.floats(allow_nan=False, width=64), st.integers(-10**6, 10**6)))
@example(data=None, scalar=0.1).via("weak Python float is rounded to float32 as numpy does")
def test_python_scalars_are_weak_as_in_numpy(data, scalar):
    x, a = (np.float32([1.5, -3, 0]), sp.asarray([1.5, -3, 0], dtype="tf32x3")) if data is None \
        else data.draw(views(max_dims=2))
    for op in (np.add, np.multiply, np.subtract, np.divide, np.maximum, np.less):
        with np.errstate(all="ignore"):
            expected, got = op(x, scalar), op(a, scalar)
            swapped_expected, swapped = op(scalar, x), op(scalar, a)
        for g, e in ((got, expected), (swapped, swapped_expected)):
            assert_same(g.to_numpy() if type(g) is sp.SplitArray else g, e)


def test_operators_and_float32_arrays_keep_the_splitarray_scheme():
    x, y = randn(3, 4), randn(4)
    a = sp.asarray(x, dtype="fp16x3")
    for got, expected in ((a + y, x + y), (y - a, y - x), (a * np.float32(2), x * 2), (a / y, x / y),
                          (a ** 2, x ** 2), (-a, -x), (abs(a), abs(x)), (+a, x)):
        assert got.dtype.name == "fp16x3"
        assert_same(got.to_numpy(), expected)
    assert_same(a < y, x < y)
    assert type(a == a) is np.ndarray


def test_promotion_picks_the_more_accurate_scheme_in_the_documented_order():
    order = ["bf16x9", "bf16x6", "tf32x3", "fp16x3", "bf16x3", "tf32", "fp16", "bf16"]
    assert sorted(ALL_DTYPES) == sorted(order)
    for i, s in enumerate(order):
        for t in order[i:]:
            assert sparray.promote(sp.dtype(s), sp.dtype(t)).name == s
            result = sp.ones(2, dtype=t) * sp.ones(2, dtype=s)
            assert result.dtype.name == s


@pytest.mark.parametrize("bad, match", [
    (lambda a: a + np.ones(3), r"^add: x2 has dtype float64; accepted: float32, float16 or bfloat16 data"),
    (lambda a: np.float64(2) * a, r"^multiply: x1 has dtype float64"),
    (lambda a: a - np.int64([1, (1 << 24) + 1, 0]), r"^subtract: x2 holds a value that float32 cannot hold exactly \(16777217\)"),
    (lambda a: a + [0.1, 0.5, 1], r"^add: x2 holds a value that float32 cannot hold exactly \(0.1\)"),
    (lambda a: a.__iadd__(sp.ones(3, dtype="bf16x9")), r"^add: the result has scheme bf16x9 but out has scheme tf32x3"),
    (lambda a: np.less(a, a, out=(a,)), r"^less: the result has dtype bool; out is a SplitArray"),
    (lambda a: np.logaddexp(a, np.ones(3)), r"^logaddexp: an argument of dtype float64 is not accepted"),
    (lambda a: np.convolve(a, a), r"^convolve: a contraction with no split-precision implementation"),
])
def test_unsupported_arithmetic_raises_typeerror(bad, match):
    with pytest.raises(TypeError, match=match):
        bad(sp.asarray([1.0, 2.0, 3.0], dtype="tf32x3"))


def test_arithmetic_takes_what_matmul_and_asarray_take_regression():
    """``S @ [list]`` was accepted and ``S + [list]`` refused: one input rule for every operand."""
    ml_dtypes, jnp = pytest.importorskip("ml_dtypes"), pytest.importorskip("jax.numpy")
    a, x = sp.asarray([[1.0, 2.0], [3.0, 4.0]], dtype="tf32x3"), np.float32([0.5, -2.0])
    for data in ([0.5, -2], np.int32([1, -2]), x.astype(ml_dtypes.bfloat16), jnp.asarray(x), ForeignTensor(x)):
        values = sp.asarray(data).to_numpy()
        assert_same((a + data).to_numpy(), a.to_numpy() + values)
        assert_same((data * a).to_numpy(), values * a.to_numpy())
        assert_same(np.asarray(a @ data), np.asarray(a @ sp.asarray(data)))


class Reflected:
    """An operand of a type SplitArrays do not know, with reflected operators."""

    def __rmatmul__(self, other):
        return "rmatmul"

    def __radd__(self, other):
        return "radd"

    def __rlt__(self, other):
        return "rlt"

    __gt__ = __rlt__


def test_operators_return_notimplemented_for_unknown_types_regression():
    """``S @ A()`` raised TypeError, where numpy's operators let ``A.__rmatmul__`` run."""
    a = sp.ones((2, 2), dtype="bf16x9")
    assert a @ Reflected() == "rmatmul" and a + Reflected() == "radd" and (a < Reflected()) == "rlt"
    b = a
    b += Reflected()
    assert b == "radd"
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for -: 'SplitArray' and 'Reflected'"):
        a - Reflected()
    assert_same(a == Reflected(), np.zeros((2, 2), bool))
    assert_same(a != object(), np.ones((2, 2), bool))


class Prioritized:
    """An operand numpy defers to (a higher ``__array_priority__``), with its own comparisons."""

    __array_priority__ = 100.0
    __hash__ = None

    def __eq__(self, other):
        return "eq"

    def __ne__(self, other):
        return "ne"

    def __lt__(self, other):
        return "lt"

    def __gt__(self, other):
        return "gt"


class UfuncsDisabled(Prioritized):
    """An operand that opts out of numpy's ufuncs (``__array_ufunc__ = None``)."""

    __array_ufunc__ = None


def test_comparisons_defer_to_unknown_types_as_numpys_regression():
    """``S == P()`` gave an array of False where a float32 ndarray's ``==`` lets ``P.__eq__`` answer:
    ``==`` and ``!=`` did not defer to unknown types as ``+``, ``@`` and ``<`` do."""
    a = sp.ones((2, 2), dtype="bf16x9")
    x = a.to_numpy()
    for other in (Prioritized(), UfuncsDisabled()):
        for compare in (operator.eq, operator.ne, operator.lt, operator.gt):
            assert compare(a, other) == compare(x, other)
    assert_same(a == Reflected(), np.zeros((2, 2), bool))   # no __eq__ of its own: elementwise unequal
    assert_same(a != None, np.ones((2, 2), bool))           # noqa: E711


def test_mismatched_shapes_raise_valueerror():
    a = sp.zeros((2, 3), dtype="tf32x3")
    with pytest.raises(ValueError, match=r"^add: operands of shapes \(2, 3\), \(2,\) do not broadcast"):
        a + sp.zeros(2, dtype="tf32x3")
    with pytest.raises(ValueError, match=r"^add: out has shape \(3,\) but the result has shape \(2, 3\)"):
        b = sp.zeros(3, dtype="tf32x3")
        b += a
    with pytest.raises(ValueError, match=r"^matmul: inner dimensions differ"):
        a @ a


# -- contractions: sp.matmul of the materialized operands -----------------------------------------

@st.composite
def operand_pairs(draw):
    """A (b?, m, k) SplitArray view and a (b?, k, n) one, with their materialized values."""
    m, k, n = (draw(st.integers(0, 5)) for _ in range(3))
    batch = draw(st.sampled_from([(), (2,), (0,)]))
    pair = []
    for shape in (batch + (m, k), batch + (k, n)):
        steps = [draw(STEPS) for _ in shape]
        base = draw(hnp.arrays(np.float32, tuple(abs(s) * d for s, d in zip(steps, shape)),
                               elements=st.floats(-1e4, 1e4, width=32)))
        view = sp.asarray(base, dtype=draw(st.sampled_from(ALL_DTYPES)))[tuple(slice(None, None, s) for s in steps)]
        pair += [view, view.to_numpy()]
    return pair


def reference(x, y, a, b):
    return sp.matmul(x, y, dtype=sparray.promote(a.dtype, b.dtype))


@given(pair=operand_pairs())
def test_contractions_equal_sp_matmul_of_the_materialized_operands(pair):
    a, x, b, y = pair
    expected = reference(x, y, a, b)
    batched = a.ndim == 3
    for got, scheme in ((a @ y, a.dtype), (x @ b, b.dtype)):
        assert type(got) is sp.SplitArray and got.dtype == scheme
        assert_same(got.to_numpy(), sp.matmul(x, y, dtype=scheme))
    results = [a @ b, np.matmul(a, b), sp.matmul(a, b),
               np.einsum("bij,bjk->bik" if batched else "ij,jk->ik", a, b),
               np.einsum("bij,bkj->bik" if batched else "ij,kj->ik", a, b.mT)]
    if not batched:
        results += [np.dot(a, b), np.tensordot(a, b, axes=1), np.tensordot(a, b.T, axes=([1], [1]))]
    for got in results:
        assert type(got) is sp.SplitArray and got.dtype == sparray.promote(a.dtype, b.dtype)
        assert_same(got.to_numpy(), expected)


@given(pair=operand_pairs())
def test_vector_and_higher_rank_contractions_equal_sp_matmul(pair):
    a, x, b, y = pair
    if a.ndim == 3 or not a.shape[0] or not b.shape[1]:
        return
    u, v = a[0], b[:, 0]
    assert_same(np.asarray(u @ v), reference(x[0], y[:, 0], a, b))
    assert_same((a @ v).to_numpy(), reference(x, y[:, 0], a, b))
    expected = reference(np.ascontiguousarray(x.T), x, a, a)
    assert_same(np.einsum("ki,kj->ij", a, a).to_numpy(), expected)
    three = a[None].swapaxes(0, 1)                                     # (m, 1, k)
    assert_same(np.dot(three, b).to_numpy(), reference(x, y, a, b)[:, None, :])


def test_malformed_einsum_and_tensordot_raise():
    a = sp.ones((3, 3), dtype="bf16x9")
    for subscripts, operands, match in (
            ("ij,jk", (a,), r"^einsum: subscripts 'ij,jk' do not name letters for each of the 1"),
            ("ij1->i", (a,), r"^einsum: subscripts 'ij1->i' do not name letters"),
            ("ijk->i", (a,), r"^einsum: subscripts 'ijk->i' name more or fewer axes"),
            ("ij->ii", (a,), r"^einsum: output subscripts of 'ij->ii' repeat a label"),
            ("ij->k", (a,), r"^einsum: output subscripts of 'ij->k' repeat a label or name one"),
            ("...i,i->i", (sp.ones((2, 3)), sp.ones(3)), r"^einsum: '...i,i->i' has '...' in an operand")):
        with pytest.raises(ValueError, match=match):
            np.einsum(subscripts, *operands)
    with pytest.raises(ValueError, match=r"^einsum: label 'j' has lengths 3 and 2"):
        np.einsum("ij,jk->ik", a, sp.ones((2, 3), dtype="bf16x9"))
    with pytest.raises(ValueError, match=r"^tensordot: axes \(\[0, 0\], \[0, 1\]\) do not pair"):
        np.tensordot(a, a, axes=([0, 0], [0, 1]))


def test_matmul_accepts_dtype_and_out_for_splitarrays():
    x, y = randn(4, 6), randn(6, 3)
    a, b = sp.asarray(x, dtype="bf16"), sp.asarray(y, dtype="tf32")
    c = sp.matmul(a, b, dtype="bf16x9")
    assert c.dtype.name == "bf16x9"
    assert_same(c.to_numpy(), sp.matmul(x, y, dtype="bf16x9"))
    assert sp.matmul(a, b, precision="fp32").dtype.name == "tf32x3"      # the fp32 class on the CPU engine
    out = sp.zeros((4, 3), dtype="tf32")
    assert sp.matmul(a, b, out=out) is out
    assert_same(out.to_numpy(), sp.matmul(x, y, dtype="tf32"))
    with pytest.raises(TypeError, match=r"^matmul: the result has scheme bf16x9 but out has"):
        sp.matmul(a, b, out=out, dtype="bf16x9")


# -- reductions ----------------------------------------------------------------------------------

def sum_bound(x):
    """The documented bound on |sum - exact| for the float64 values x (module _array_functions)."""
    h = max(1, math.ceil(math.log2(max(len(x), 1))))
    g = lambda k: k * U / (1 - k * U)   # noqa: E731
    exact = math.fsum(x)
    return U * abs(exact) + (1 + U) ** (h + 1) * g(2 * h) * g(h) * math.fsum(abs(v) for v in x)


@given(x=hnp.arrays(np.float32, st.integers(0, 300), elements=st.floats(-1e6, 1e6, width=32)),
       cancel=st.booleans())
@example(x=np.float32([1, 2 ** -24, 2 ** -24, -1] * 5), cancel=False)
def test_sum_within_the_compensated_bound(x, cancel):
    if cancel:                       # ill-conditioned: x and -x nearly cancel
        x = np.concatenate([x, -x[::-1] * np.float32(1 + 2 ** -20)])
    got = sp.asarray(x, dtype="bf16x6").sum()
    exact = math.fsum(x.astype(np.float64))
    assert type(got) is np.float32 and abs(float(got) - exact) <= sum_bound(x.astype(np.float64))


def test_sum_beats_pairwise_float32_on_cancellation():
    x = np.float32([1.0] + [2 ** -25] * 4096 + [-1.0])        # exact sum 2**-13
    assert sp.asarray(x).sum() == np.float32(2 ** -13) and np.sum(x) != np.float32(2 ** -13)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (2, 0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_follow_numpy_shapes_and_are_exact_or_bounded(axis, keepdims):
    x = randn(3, 0, 4) if axis == (0, 2) else randn(3, 5, 4)
    a = sp.asarray(x, dtype="tf32x3")
    for method in ("sum", "mean", "max", "min"):
        if method in ("max", "min") and x.size == 0 and axis != (0, 2):
            continue
        expected = getattr(np, method)(x.astype(np.float64), axis=axis, keepdims=keepdims)
        got = np.asarray(getattr(a, method)(axis=axis, keepdims=keepdims))
        assert got.shape == np.shape(expected) and got.dtype == np.float32
        tolerance = 0 if method in ("max", "min") else 2 * U * np.abs(expected) + 1e-30
        assert np.all(np.abs(got - expected) <= tolerance)
    if axis is None or isinstance(axis, int):
        assert np.array_equal(a.argmax(axis=axis), np.argmax(x, axis=axis))
        assert np.array_equal(np.argmin(a, axis=axis), np.argmin(x, axis=axis))


def test_reductions_propagate_nonfinite_values_and_handle_empty_input():
    a = sp.asarray([[1.0, np.inf], [np.inf, -np.inf]], dtype="bf16x9")
    with pytest.warns(RuntimeWarning, match="^invalid value encountered in sum"):   # inf - inf
        assert_same(a.sum(axis=1).to_numpy(), np.float32([np.inf, np.nan]))
    assert_same(np.linalg.norm(a, axis=1).to_numpy(), np.float32([np.inf, np.inf]))
    assert sp.zeros((0,)).sum() == 0 and np.isnan(sp.asarray([np.nan, 1.0]).max())
    big = sp.full(4, 2.0 ** 126)                  # squares overflow float32, the norm does not
    with np.errstate(over="ignore"):
        assert big.sum() == np.float32(np.inf) and np.linalg.norm(big) == np.float32(2.0 ** 127)
    assert np.linalg.norm(big * 2) == np.float32(np.inf)
    with pytest.raises(ValueError, match=r"^sum: axis \(1, -1\) repeats an axis"):
        a.sum(axis=(1, -1))


def test_sum_axis_out_of_range_is_numpys_axis_error_regression():
    a = sp.ones((2, 3))
    for reduce in (np.sum, np.mean, sp.SplitArray.sum):
        with pytest.raises(np.exceptions.AxisError, match=r"axis 2 is out of bounds for array of dimension 2"):
            reduce(a, axis=2)


@pytest.mark.parametrize("reduce", [np.sum, np.mean], ids=["sum", "mean"])
def test_sum_and_mean_take_numpys_dtype_where_and_out_regression(reduce):
    """``np.sum`` and ``.sum`` refused ``dtype=`` (float64 too), ``where=`` and ``out=``."""
    x = np.float32([[1.5, -2.0, 3.0], [2.0 ** -30, 4.0, 2.0 ** 30]])
    a = sp.asarray(x, dtype="bf16x9")
    wide = reduce(a, axis=1, dtype=np.float64)
    assert type(wide) is np.ndarray and wide.dtype == np.float64
    assert np.array_equal(wide, reduce(x.astype(np.float64), axis=1))
    mask = np.array([[True, False, True], [False, True, True]])
    masked = reduce(a, axis=1, where=mask)
    assert type(masked) is sp.SplitArray and masked.dtype == "bf16x9"
    assert_same(masked.to_numpy(), reduce(x.astype(np.float64), axis=1, where=mask).astype(np.float32))
    into = sp.zeros(2, dtype="bf16x9")
    assert reduce(a, axis=1, out=into) is into and np.array_equal(into.to_numpy(), reduce(a, axis=1).to_numpy())
    plain = np.zeros(2, np.float64)
    assert reduce(a, axis=1, out=plain) is plain and np.array_equal(plain, reduce(a, axis=1).to_numpy())
    assert reduce(a, dtype=a.dtype) == reduce(a) and a.sum(dtype=np.float64) == x.astype(np.float64).sum()
    readonly = np.zeros(2, np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match=rf"^{reduce.__name__}: out is read-only"):
        reduce(a, axis=1, out=readonly)


@pytest.mark.parametrize("reduce", [np.sum, np.mean], ids=["sum", "mean"])
def test_sum_and_mean_cast_into_a_numpy_out_of_any_dtype_as_numpy_does_regression(reduce):
    """``np.sum(a, out=int32_array)`` raised TypeError; numpy's reductions cast their result into
    ``out`` unsafely (``np.add(x, x, out=int32_array)``, an elementwise ufunc, raises instead)."""
    x = np.float32([[1.5, -2.0, 3.0], [0.25, 4.0, -7.5]])          # sums and means exact in float32
    a = sp.asarray(x, dtype="bf16x9")
    for dtype in (np.int32, np.int8, np.bool_, np.float16, np.complex64):
        into, expected = np.zeros(2, dtype), reduce(x, axis=1, out=np.zeros(2, dtype))
        assert reduce(a, axis=1, out=into) is into and into.dtype == dtype and np.array_equal(into, expected)
    with pytest.raises(ValueError, match=rf"^{reduce.__name__}: out has shape \(1, 2\); expected the result's shape \(2,\)"):
        reduce(a, axis=1, out=np.zeros((1, 2), np.float32))
    with pytest.raises(TypeError, match=rf"^{reduce.__name__}: out is a list; expected a SplitArray or a numpy"):
        reduce(a, axis=1, out=[0, 0])


def test_max_and_min_take_numpys_where_initial_and_out_regression():
    """``np.max(a, where=m, initial=v)`` and ``np.max(a, axis=0, out=x)`` raised "option(s) ... not
    supported"; they are numpy's on the float32 values, errors included."""
    x = randn(3, 4)
    a, mask = sp.asarray(x, dtype="bf16x9"), x > 0
    for reduce in (np.max, np.min, np.amax, np.amin):
        for kwargs in ({"axis": 0, "where": mask, "initial": -np.inf}, {"where": mask, "initial": 0.5},
                       {"initial": 5}, {"axis": 1, "keepdims": True, "where": mask[:, :1], "initial": np.float32(1)}):
            got, expected = reduce(a, **kwargs), reduce(x, **kwargs)
            assert type(got) is (sp.SplitArray if np.ndim(expected) else np.float32)
            assert_same(np.asarray(got), expected)
        for dtype in (np.float32, np.int32):                  # numpy's own casting rule for out
            into = np.zeros(4, dtype)
            assert reduce(a, axis=0, out=into) is into and np.array_equal(into, reduce(x, axis=0, out=np.zeros(4, dtype)))
        into = sp.zeros(4, dtype="bf16x9")
        assert reduce(a, 0, into) is into and np.array_equal(into.to_numpy(), reduce(x, axis=0))
        for data, kwargs in ((x, {"axis": 1, "where": mask}), (x[:0], {"axis": 0}), (x[:0], {"axis": 0, "where": True})):
            with pytest.raises(ValueError) as numpys:
                reduce(data, **kwargs)
            with pytest.raises(ValueError, match=f"^{re.escape(str(numpys.value))}$"):
                reduce(sp.asarray(data, dtype="bf16x9"), **kwargs)
        assert_same(reduce(sp.asarray(x[:0]), axis=0, where=True, initial=2.0).to_numpy(), np.full(4, 2, np.float32))


def test_sum_initial_is_one_more_term_of_the_compensated_sum():
    a = sp.asarray([2.0 ** 24, 1.0], dtype="tf32x3")
    assert a.sum(initial=1.0) == np.float32(2.0 ** 24 + 2) and np.sum(a, initial=-(2.0 ** 24)) == 1.0


def test_sum_initial_takes_a_python_float_as_an_operator_does_regression():
    """``np.sum(a, initial=0.1)`` raised TypeError where ``a + 0.1`` and numpy take the Python float
    as a weak float32 scalar (NEP 50); a float64 array or numpy scalar is still refused."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = sp.asarray(x)
    assert np.sum(a, initial=0.1) == np.sum(x, initial=0.1) == np.float32(66.1)
    assert_same(np.sum(a, axis=0, initial=2 ** 40 + 1).to_numpy(), np.sum(x, axis=0, initial=2 ** 40 + 1))
    with pytest.raises(TypeError, match="initial has dtype float64"):
        np.sum(a, initial=np.float64(0.1))


@pytest.mark.parametrize("line", [[3e38, 3e38, -3e38, -3e38], [3e38, -1.0, 3e38, -3e38, -3e38, 2.0, 0.5],
                                  [-3.4e38, -3.4e38, 3.4e38, 3.0e38, 7.0],
                                  [-(2.0 ** 126 + 3 * 2.0 ** 103), float(np.finfo(np.float32).max)]])
def test_sum_of_finite_values_whose_partial_sums_overflow_is_their_sum_regression(line):
    """``np.sum([3e38, 3e38, -3e38, -3e38])`` gave NaN with an "invalid value" warning: the pairwise
    partial sums passed float32's range. The exact sum of those finite values is in range: the sum
    is it rounded once, with no warning, and a mean is that over n."""
    x = np.float32(line)
    exact = math.fsum(map(float, x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.sum(sp.asarray(x)) == np.float32(exact)
        assert np.mean(sp.asarray(x)) == np.float32(exact / len(x))
        assert_same(np.sum(sp.asarray(np.stack([x, x[::-1]])), axis=1).to_numpy(), np.float32([exact, exact]))


def test_sum_past_the_range_after_an_overflowing_partial_sum_is_inf_regression():
    with pytest.warns(RuntimeWarning, match="overflow encountered in sum"):
        assert np.sum(sp.asarray(np.float32([3e38, 3e38, -1e38, 3e38]))) == np.inf


@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"where": False}])
def test_empty_mean_warns_both_of_numpys_warnings_regression(kwargs):
    """An empty ``mean`` gave only "Mean of empty slice." (numpy 2 drops the period) and not the
    "invalid value encountered in divide" of numpy's 0 / 0, which ``np.errstate`` controls."""
    x = np.zeros((0, 3), np.float32) if "where" not in kwargs else np.ones((2, 3), np.float32)
    a = sp.asarray(x)
    for data in (x, a):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert np.isnan(np.mean(data, **kwargs)).all()
        assert [str(w.message) for w in caught] == ["Mean of empty slice", "invalid value encountered in divide"]
    with np.errstate(invalid="raise"), pytest.warns(RuntimeWarning, match="^Mean of empty slice$"), \
            pytest.raises(FloatingPointError, match="invalid value encountered in divide"):
        np.mean(a, **kwargs)


@pytest.mark.parametrize("reduce", [np.sum, np.mean])
@pytest.mark.parametrize("axis", [True, (0, np.True_)])
def test_sum_and_mean_refuse_a_bool_axis_as_numpy_regression(reduce, axis):
    """``np.sum(a, axis=True)`` summed over axis 1; numpy raises TypeError for a bool axis."""
    with pytest.raises(TypeError):
        reduce(np.ones((2, 3), np.float32), axis=axis)
    with pytest.raises(TypeError, match=rf"^{reduce.__name__}: axis .*True.* holds a bool; expected None, an integer"):
        reduce(sp.ones((2, 3)), axis=axis)


def test_empty_mean_and_overflowing_sum_warn_as_numpy_regression():
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert np.isnan(sp.zeros((0,)).mean())
    big = sp.full(2, 2.0 ** 127)
    with pytest.warns(RuntimeWarning, match="overflow encountered in sum"):
        assert big.sum() == np.inf
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow encountered in mean"):
        big.mean()
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert big.sum() == np.inf and sp.asarray([np.inf, 1.0]).sum() == np.inf



@pytest.mark.parametrize("reduce", [np.sum, np.mean], ids=["sum", "mean"])
def test_sum_and_mean_report_inf_minus_inf_as_numpy_regression(reduce):
    """A sum meeting ``inf - inf`` gave NaN silently; numpy reports "invalid value" (errstate's
    ``invalid``). An empty mean's 0/0 is reported once, by the division, as numpy's."""
    x = np.float32([np.inf, -np.inf, 1.0])
    with pytest.warns(RuntimeWarning, match="^invalid value encountered"):
        expected = reduce(x)
    with pytest.warns(RuntimeWarning, match=f"^invalid value encountered in {reduce.__name__}"):
        assert_same(reduce(sp.asarray(x)), expected)
    with pytest.warns(RuntimeWarning, match=f"^invalid value encountered in {reduce.__name__}"):
        assert_same(reduce(sp.asarray(np.stack([x, x + 1])), axis=1).to_numpy(), np.float32([np.nan] * 2))
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="^invalid value"):
        reduce(sp.asarray(x))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(reduce(sp.asarray(x)))
        assert np.isnan(reduce(sp.asarray([np.nan, 1.0])))               # a NaN in: nothing to report
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        reduce(sp.asarray(np.float32([[1.0], [2.0]])), axis=0, where=np.array([[False], [False]]))
    assert sum("invalid value" in str(w.message) for w in record) == (reduce is np.mean)


def test_reductions_follow_every_errstate_mode_regression(capsys):
    """``np.errstate(over="call")`` (also "print", "log") was ignored by ``sum``: only "warn" and
    "raise" reported. Each mode now does what numpy's own ufuncs do."""
    big = sp.full(2, 2.0 ** 127)
    calls = []

    class Log:
        def write(self, message):
            calls.append(message)
    with np.errstate(over="call", call=lambda kind, flag: calls.append((kind, flag))):
        assert big.sum() == np.inf
    with np.errstate(over="log", call=Log()):
        assert big.mean() == np.inf
    assert calls == [("overflow", 2), "Warning: overflow encountered in mean\n"]
    with np.errstate(over="print"):
        big.sum()
    assert capsys.readouterr().err == "Warning: overflow encountered in sum\n"

@given(x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=2, max_side=40),
                    elements=st.floats(-2.0 ** 100, 2.0 ** 100, width=32)))
@example(x=np.float32([[3e-30, 4e-30]]))
@example(x=np.float32([[3e30, 4e30]]))
def test_norm_within_two_units_of_roundoff(x):
    got = np.asarray(np.linalg.norm(sp.asarray(x)))
    exact = math.sqrt(math.fsum(float(v) ** 2 for v in x.ravel()))
    assert abs(float(got) - exact) <= (2 * U + 1e-12) * exact + 1e-44
    ax = x.ndim - 1
    assert_same(np.asarray(np.linalg.norm(sp.asarray(x), ord=np.inf, axis=ax)),
                np.linalg.norm(x, ord=np.inf, axis=ax))


def test_norm_rejects_unsupported_orders():
    with pytest.raises(ValueError, match=r"^norm: ord=2 over 3 axes; expected ord=None, or an axis naming one"):
        np.linalg.norm(sp.ones((2, 2, 2)), ord=2)
    with pytest.raises(ValueError, match=r"^Invalid norm order for matrices"):         # numpy's own
        np.linalg.norm(sp.ones((2, 2)), ord=0)
    with pytest.raises(ValueError, match=r"^vector_norm: invalid norm order 'fro' for vectors"):
        np.linalg.vector_norm(sp.ones(2), ord="fro")


@pytest.mark.parametrize("ord", [1, -1, 2, -2, np.inf, -np.inf, "nuc"])
@pytest.mark.parametrize("axis", [None, (0, 2), (2, 0)])
def test_norm_takes_the_matrix_orders_matrix_norm_takes_regression(ord, axis):
    """``np.linalg.norm(S, ord=2)`` of a matrix raised TypeError while ``matrix_norm`` ran it;
    both now run numpy's float32 routine, over the axes in the order given."""
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    a = sp.asarray(x, dtype="bf16x9")
    x, a = (x[0], a[0]) if axis is None else (x, a)
    got = np.linalg.norm(a, ord=ord, axis=axis, keepdims=True)
    assert isinstance(got, sp.SplitArray) and got.dtype == "bf16x9"
    assert_same(got.to_numpy(), np.linalg.norm(x, ord=ord, axis=axis, keepdims=True))
    if axis is None:
        assert_same(np.asarray(np.linalg.matrix_norm(a, ord=ord)), np.linalg.matrix_norm(x, ord=ord))


@given(x=hnp.arrays(np.float32, st.integers(1, 30), elements=st.floats(-2.0 ** 100, 2.0 ** 100, width=32)),
       ord=st.sampled_from([3, 0.5, -1, -2.5, 7]))
@example(x=np.float32([3e38, 3e38, 1.0]), ord=3)
@example(x=np.float32([1e-40, 2e-40]), ord=-1)
def test_vector_norm_of_any_order_within_one_rounding_regression(x, ord):
    """The Array API standard takes any int or float ``ord`` (3, 0.5 and -1 were refused)."""
    import mpmath
    ctx = mpmath.MPContext()
    ctx.prec = 200
    magnitudes = [ctx.mpf(float(abs(v))) for v in x]
    exact = 0.0 if ord < 0 and not all(magnitudes) else \
        float(ctx.fsum(m ** ord for m in magnitudes) ** (ctx.mpf(1) / ord))
    got = float(np.linalg.vector_norm(sp.asarray(x), ord=ord))
    assert abs(got - exact) <= (U + x.size * 2.0 ** -50) * exact + 2.0 ** -150 or (exact > 3.4e38 and got == np.inf)
    assert float(sp.array_api.linalg.vector_norm(sp.asarray(x), ord=ord)) == got


def test_vector_norm_orders_zero_and_specials_follow_numpy_regression():
    x = np.float32([[0.0, -2.0, 3.0, 0.0], [np.inf, 1.0, 2.0, 0.5], [np.nan, 1.0, 0.0, 1.0]])
    a = sp.asarray(x)
    for ord in (0, 3, -1, 0.5, np.inf, -np.inf):
        with np.errstate(divide="ignore"):
            expected = np.linalg.vector_norm(x.astype(np.float64), ord=ord, axis=1).astype(np.float32)
        assert_same(np.linalg.vector_norm(a, ord=ord, axis=1).to_numpy(), expected)
        assert_same(np.linalg.norm(a, ord=ord, axis=1).to_numpy(), expected)
