"""splitprec.array_api against the Array API standard (2023.12): the required names exist, and
representative calls behave as the standard's text says, with float32 results as SplitArrays of
the operands' scheme and contractions in the scheme."""
import inspect
import math

import numpy as np
import pytest

import splitprec as sp
from conftest import ForeignTensor

xp = pytest.importorskip("splitprec.array_api")
rng = np.random.default_rng(9)

# The standard's names (2023.12), by section, float64/complex dtypes left out (module docstring).
NAMES = {
    "constants": "e inf nan newaxis pi",
    "creation": "arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones "
                "ones_like tril triu zeros zeros_like",
    "data types": "astype can_cast finfo iinfo isdtype result_type bool int8 int16 int32 int64 uint8 "
                  "uint16 uint32 uint64 float32",
    "elementwise": "abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift "
                   "bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos "
                   "cosh divide equal exp expm1 floor floor_divide greater greater_equal hypot imag "
                   "isfinite isinf isnan less less_equal log log1p log2 log10 logaddexp logical_and "
                   "logical_not logical_or logical_xor maximum minimum multiply negative not_equal "
                   "positive pow real remainder round sign signbit sin sinh square sqrt subtract tan "
                   "tanh trunc",
    "indexing": "take",
    "linear algebra": "matmul matrix_transpose tensordot vecdot",
    "manipulation": "broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat "
                    "reshape roll squeeze stack tile unstack",
    "searching": "argmax argmin nonzero searchsorted where",
    "set": "unique_all unique_counts unique_inverse unique_values",
    "sorting": "argsort sort",
    "statistical": "cumulative_sum max mean min prod std sum var",
    "utility": "all any",
    "inspection": "__array_namespace_info__",
}
LINALG = ("cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power matrix_rank "
          "matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot vector_norm")


@pytest.mark.parametrize("section", sorted(NAMES))
def test_namespace_has_the_standards_names(section):
    missing = [n for n in NAMES[section].split() if not hasattr(xp, n)]
    assert not missing
    assert xp.__array_api_version__ == "2023.12"


def test_linalg_extension_has_its_names_and_runs_contractions_in_the_scheme():
    assert not [n for n in LINALG.split() if not hasattr(xp.linalg, n)]
    x = xp.asarray(rng.standard_normal((6, 5)).astype(np.float32), dtype="tf32x3")
    y = xp.asarray(rng.standard_normal((5, 3)).astype(np.float32), dtype="tf32x3")
    expected = sp.matmul(x.to_numpy(), y.to_numpy(), dtype="tf32x3")
    for got in (xp.matmul(x, y), xp.linalg.matmul(x, y), xp.tensordot(x, y, axes=1),
                xp.linalg.tensordot(x, y, axes=([1], [0])), x @ y):
        assert type(got) is sp.SplitArray and got.dtype == "tf32x3"
        assert np.array_equal(got.to_numpy(), expected)
    dots = xp.vecdot(x, x)
    assert dots.shape == (6,) and np.array_equal(xp.linalg.vecdot(x.mT, x.mT, axis=0).to_numpy(), dots.to_numpy())
    assert np.array_equal(dots.to_numpy()[:1], sp.matmul(x.to_numpy()[:1], x.to_numpy()[:1].T, dtype="tf32x3")[0])
    assert type(xp.linalg.solve(xp.eye(3) * 2, y.mT)) is sp.SplitArray


def test_array_object_speaks_the_standard():
    x = xp.asarray([[1.0, -2.0], [3.0, 4.0]])
    assert x.__array_namespace__() is xp and x.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError, match=r"^__array_namespace__: api_version '2019.01' is not supported"):
        x.__array_namespace__(api_version="2019.01")
    assert x.dtype == xp.float32 and xp.isdtype(x.dtype, "real floating") and not xp.isdtype(x.dtype, "integral")
    assert x.device == "cpu" and x.to_device("cpu") is x and x.mT.shape == (2, 2) and x.ndim == 2
    assert float(x[0, 0]) == 1.0 and int(x[1, 1]) == 4 and bool(x[0, 1])
    assert type(x[0]) is sp.SplitArray and x[xp.asarray([True, False])].shape == (1, 2)
    assert x[xp.asarray([1, 0])].shape == (2, 2) and np.array_equal(x[xp.asarray([1, 0])][0].to_numpy(), [3.0, 4.0])


@pytest.mark.parametrize("data, kind", [([1, 2], "int64"), ([True, False], "bool"), (1.5, "float32"),
                                        ([[0.1, 2.0]], "float32")])
def test_asarray_infers_the_standards_default_dtypes(data, kind):
    x = xp.asarray(data)
    assert x.dtype == np.dtype(kind)
    assert (type(x) is sp.SplitArray) == (kind == "float32")
    if kind == "float32":
        assert x.dtype == sp.dtype("bf16x6")                                  # the default scheme
        assert np.array_equal(x.to_numpy(), np.asarray(data, dtype=np.float32))


def test_asarray_copy_and_explicit_dtypes():
    v = np.float32([1.0, 2.0])
    shared = xp.asarray(v, copy=False)
    assert np.shares_memory(np.asarray(shared), v)
    shared @ shared
    v[0] = 3.0                                                   # the owner writes: seen, not stale
    assert shared @ shared == np.float32(13.0)
    assert not np.shares_memory(np.asarray(xp.asarray(v, copy=True)), v)
    x = xp.asarray(v, dtype="bf16x9")
    assert xp.asarray(x) is x and xp.asarray(x, copy=True) is not x and xp.asarray(x, dtype=xp.float32) is not None
    with pytest.raises(TypeError, match=r"^asarray: data of dtype float64 is not held"):
        xp.asarray(np.ones(2))
    assert xp.asarray(np.float64([0.1]), dtype=xp.float32).to_numpy()[0] == np.float32(0.1)
    assert xp.asarray([1, 2], dtype=xp.int32).dtype == np.int32
    with pytest.raises(TypeError, match=r"^dtype float64 is not supported by splitprec.array_api"):
        xp.zeros(2, dtype=np.float64)


def test_creation_functions_follow_the_standard():
    assert np.array_equal(xp.arange(3).astype(np.int64), [0, 1, 2]) and xp.arange(3).dtype == xp.int64
    assert np.array_equal(xp.arange(0.0, 1.0, 0.25).to_numpy(), np.float32([0, 0.25, 0.5, 0.75]))
    assert np.array_equal(xp.linspace(0, 1, 5).to_numpy(), np.linspace(0, 1, 5).astype(np.float32))
    assert np.array_equal(xp.eye(2, 3, k=1).to_numpy(), np.eye(2, 3, k=1, dtype=np.float32))
    assert xp.full((2,), 3).dtype == xp.int64 and xp.full((2,), True).dtype == xp.bool
    assert xp.full((2,), 0.5).dtype == xp.float32 and xp.zeros((2, 2)).dtype == xp.float32
    x = xp.ones((2, 3), dtype="fp16x3")
    for like in (xp.zeros_like(x), xp.ones_like(x), xp.empty_like(x), xp.full_like(x, 2.0)):
        assert type(like) is sp.SplitArray and like.shape == (2, 3) and like.dtype == "fp16x3"
    assert xp.zeros_like(x, dtype=xp.int8).dtype == xp.int8
    g = xp.meshgrid(xp.arange(2.0), xp.arange(3.0))
    assert [a.shape for a in g] == [(3, 2), (3, 2)] and all(type(a) is sp.SplitArray for a in g)
    assert np.array_equal(xp.tril(x).to_numpy(), np.tril(np.ones((2, 3), np.float32)))
    y = xp.from_dlpack(np.float32([1.0, 2.0]))
    assert type(y) is sp.SplitArray and y.dtype == xp.float32


def test_like_functions_take_the_standards_parameters_regression():
    """``full_like(x, fill_value=2.0)`` raised, ``full_like(x)`` gave NaNs, ``zeros_like(x, 5.0)`` 5s."""
    x = xp.ones((2, 3), dtype="bf16x9")
    full = xp.full_like(x, fill_value=2.0)
    assert type(full) is sp.SplitArray and full.dtype == "bf16x9" and np.array_equal(full.to_numpy(), np.full((2, 3), 2.0))
    with pytest.raises(TypeError, match=r"full_like\(\) missing 1 required positional argument: 'fill_value'"):
        xp.full_like(x)
    for like in (xp.zeros_like, xp.ones_like, xp.empty_like):
        with pytest.raises(TypeError, match=r"takes 1 positional argument but 2 were given"):
            like(x, 5.0)
    with pytest.raises(TypeError, match=r"full_like\(\) missing 1 required positional argument: 'fill_value'"):
        np.full_like(x)
    with pytest.raises(TypeError, match=r"^Cannot interpret '5.0' as a data type"):
        np.zeros_like(x, 5.0)


def test_clip_takes_the_standards_min_and_max_regression():
    x = xp.asarray(np.float32([-2.0, 0.5, 3.0]), dtype="tf32x3")
    got = xp.clip(x, min=-1.0, max=1.0)
    assert type(got) is sp.SplitArray and got.dtype == "tf32x3"
    assert np.array_equal(got.to_numpy(), np.float32([-1.0, 0.5, 1.0]))
    assert np.array_equal(xp.clip(x).to_numpy(), x.to_numpy()) and np.array_equal(xp.clip(x, max=0.0).to_numpy(), [-2, 0, 0])
    assert list(inspect.signature(xp.clip).parameters) == ["x", "min", "max"]


@pytest.mark.parametrize("name", ["sum", "prod", "cumulative_sum"])
def test_reductions_with_a_float32_dtype_give_splitarrays_regression(name):
    """``sum``, ``prod`` and ``cumulative_sum`` with ``dtype=`` gave numpy arrays."""
    reduce = getattr(xp, name)
    data = np.int64([[1, 2, 3], [4, 5, 6]])
    x, s = xp.asarray(data), xp.asarray(data.astype(np.float32), dtype="fp16x3")
    default = xp.asarray([1.0]).dtype
    for operand, dtype, scheme in ((x, xp.float32, default), (x, "bf16x9", "bf16x9"), (s, xp.float32, "fp16x3"),
                                   (s, s.dtype, "fp16x3"), (s, "tf32x3", "tf32x3")):
        got = reduce(operand, axis=1, dtype=dtype)
        assert type(got) is sp.SplitArray and got.dtype.name == str(scheme)
        assert np.array_equal(got.to_numpy(), getattr(np, name)(data, axis=1).astype(np.float32))
    assert type(reduce(x, axis=1, dtype=xp.int32)) is np.ndarray


def test_asarray_of_a_foreign_tensor_reads_it_through_dlpack_regression():
    """``xp.asarray(torch_tensor)`` failed with "Cannot interpret 'torch.float32' as a data type"."""
    data = np.float32([[1.0, 2.0], [3.0, 4.0]])
    for tensor in (ForeignTensor(data), ForeignTensor(np.int32([1, 2]))):
        got = xp.asarray(tensor)
        expected = tensor._array
        assert np.array_equal(np.asarray(got), expected)
        assert (type(got) is sp.SplitArray) == (expected.dtype == np.float32)
    torch = pytest.importorskip("torch")
    assert type(xp.asarray(torch.ones(2))) is sp.SplitArray


def test_vector_norm_of_an_empty_vector_and_asarray_of_bfloat16_scalars_regression():
    """``vector_norm(empty, ord=inf)`` raised "zero-size array" where numpy gives 0; ``xp.asarray`` of a
    list of bfloat16 scalars raised TypeError where ``sp.asarray`` widens them exactly."""
    assert xp.linalg.vector_norm(xp.asarray(np.zeros(0, np.float32)), ord=math.inf) == 0.0
    assert np.array_equal(np.asarray(np.linalg.norm(sp.zeros((2, 0)), np.inf, axis=-1)), np.zeros(2, np.float32))
    with pytest.raises(ValueError):                                       # numpy's too: no identity
        xp.linalg.vector_norm(xp.asarray(np.zeros(0, np.float32)), ord=-math.inf)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    scalars = list(np.array([1.5, -2.0 ** -133], ml_dtypes.bfloat16))
    assert np.array_equal(xp.asarray(scalars).to_numpy(), sp.asarray(scalars).to_numpy())


def test_asarray_takes_bfloat16_as_sp_asarray_does_regression():
    """``xp.asarray`` of bfloat16 data raised "dtype bfloat16 is not supported by splitprec.array_api"
    while ``sp.asarray`` widened it exactly, as both do float16."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    data = np.array([1.5, -2.0**-133, 3.0e38, np.inf], dtype=ml_dtypes.bfloat16)   # subnormal, near max
    for x in (data, ForeignTensor(data), np.float16([1.5, -2.0**-24])):
        got = xp.asarray(x)
        expected = sp.asarray(getattr(x, "_array", x))
        assert type(got) is sp.SplitArray and got.dtype == expected.dtype
        assert np.array_equal(got.to_numpy(), expected.to_numpy())
    assert np.array_equal(xp.asarray(data).to_numpy(), data.astype(np.float32))       # exact widening
    assert xp.asarray(data, dtype="bf16x9").dtype == "bf16x9"
    with pytest.raises(ValueError, match=r"^asarray: copy=False but the result needs a copy"):
        xp.asarray(data, copy=False)
    jnp = pytest.importorskip("jax.numpy")
    assert np.array_equal(xp.asarray(jnp.asarray(data)).to_numpy(), data.astype(np.float32))


def test_dtype_functions_follow_the_standard():
    x = xp.asarray([1.0], dtype="bf16x9")
    assert xp.finfo(x).eps == np.finfo(np.float32).eps and xp.finfo(xp.float32).bits == 32
    assert xp.iinfo(xp.int8).max == 127
    assert xp.result_type(x, xp.float32) == "bf16x9" and xp.result_type(xp.int8, xp.int16) == xp.int16
    assert xp.result_type(x, xp.asarray([1.0], dtype="tf32x3")) == "bf16x9"
    with pytest.raises(TypeError, match=r"^result_type: .* promote to float64"):
        xp.result_type(x, xp.int64)
    assert xp.can_cast(xp.int8, xp.int16) and not xp.can_cast(xp.float32, xp.int8)
    assert xp.isdtype(xp.int8, ("signed integer", "bool")) and xp.isdtype(xp.bool, "bool")
    assert xp.astype(x, xp.float32, copy=False) is x and xp.astype(x, "tf32x3").dtype == "tf32x3"
    assert xp.astype(x, xp.int32).dtype == xp.int32 and xp.astype(xp.asarray([2]), xp.float32).dtype == xp.float32
    info = xp.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == xp.float32 and info.default_device() == "cpu"
    assert "cpu" in info.devices() and set(info.dtypes(kind="real floating")) == {"float32"}
    assert info.capabilities()["boolean indexing"]


def test_inspection_refuses_unknown_kinds_and_devices_regression():
    """``dtypes(kind="bogus")`` gave ``{}`` and an unknown device was taken; numpy's info raises
    ValueError for both."""
    info = xp.__array_namespace_info__()
    with pytest.raises(ValueError, match=r"^dtypes: unknown kind 'bogus'; expected one of 'bool', "):
        info.dtypes(kind=("bool", "bogus"))
    with pytest.raises(ValueError, match=r"^default_dtypes: unknown device 'tpu'; expected None or one of 'cpu'"):
        info.default_dtypes(device="tpu")
    with pytest.raises(ValueError, match=r"^dtypes: unknown device 'tpu'"):
        info.dtypes(device="tpu")
    assert info.dtypes(device="cpu", kind="complex floating") == {}
    assert list(info.dtypes(kind=("bool", "unsigned integer"))) == ["bool", "uint8", "uint16", "uint32", "uint64"]


def test_result_type_names_a_splitarrays_dtype_in_its_error_regression():
    """The refusal printed ``<class 'numpy.float32'>`` for a SplitArray operand."""
    with pytest.raises(TypeError, match=r"^result_type: float32, int32 promote to float64, which "):
        xp.result_type(xp.asarray([1.0]), xp.asarray([1], dtype=xp.int32))


def test_elementwise_statistical_and_manipulation_functions_return_splitarrays_of_the_scheme():
    x = xp.asarray(rng.standard_normal((3, 4)).astype(np.float32), dtype="bf16x6")
    values = x.to_numpy()
    with np.errstate(all="ignore"):
        for name in ("abs", "acos", "exp", "sqrt", "round", "trunc", "sign", "square", "positive"):
            got = getattr(xp, name)(x)
            assert type(got) is sp.SplitArray and got.dtype == "bf16x6"
            assert np.array_equal(got.to_numpy(), getattr(np, name)(values), equal_nan=True)
    assert np.array_equal(xp.pow(x, 2.0).to_numpy(), values ** 2)
    assert np.array_equal(xp.clip(x, min=-0.5, max=0.5).to_numpy(), np.clip(values, -0.5, 0.5))
    assert np.array_equal(xp.std(x, axis=0, correction=1).to_numpy(), np.std(values, axis=0, ddof=1))
    assert np.array_equal(xp.cumulative_sum(x, axis=1, include_initial=True).to_numpy(),
                          np.cumulative_sum(values, axis=1, include_initial=True))
    assert np.array_equal(xp.permute_dims(x, (1, 0)).to_numpy(), values.T)
    assert np.array_equal(xp.concat([x, x], axis=None).to_numpy(), np.concat([values, values], axis=None))
    assert [u.shape for u in xp.unstack(x)] == [(4,)] * 3
    assert np.array_equal(xp.reshape(x, (4, 3), copy=True).to_numpy(), values.reshape(4, 3))
    with pytest.raises(ValueError, match=r"^reshape: copy=False"):
        xp.reshape(x.mT, (12,), copy=False)
    assert np.array_equal(xp.take(x, xp.asarray([2, 0]), axis=1).to_numpy(), values[:, [2, 0]])
    assert np.array_equal(xp.where(x > 0, x, 0.0).to_numpy(), np.where(values > 0, values, 0))
    assert xp.isnan(x).dtype == xp.bool and xp.argmax(x, axis=1).dtype == np.int64
    unique = xp.unique_counts(xp.asarray([1.0, 1.0, 2.0]))
    assert np.array_equal(unique.values.to_numpy(), [1.0, 2.0]) and np.array_equal(unique.counts, [2, 1])


@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_with_descending_and_stable(descending):
    values = np.float32([[3, 1, 2, 1, 3], [0, 0, -1, 5, 5]])
    x = xp.asarray(values)
    order = np.argsort(-values if descending else values, axis=1, stable=True)
    assert np.array_equal(xp.argsort(x, axis=1, descending=descending), order)
    assert np.array_equal(xp.sort(x, axis=1, descending=descending).to_numpy(),
                          np.take_along_axis(values, order, axis=1))


def test_asarray_copy_false_refuses_a_conversion_that_copies_regression():
    """``xp.asarray(x, dtype=xp.int32, copy=False)`` of a SplitArray returned a copy; the standard
    asks for ValueError when ``copy=False`` cannot be honoured."""
    x = xp.asarray([1.0, 2.0])
    with pytest.raises(ValueError, match=r"^asarray: copy=False but dtype int32 needs a copy"):
        xp.asarray(x, dtype=xp.int32, copy=False)
    assert np.array_equal(xp.asarray(x, dtype=xp.int32), [1, 2]) and xp.asarray(x, copy=False) is x


def test_isdtype_refuses_a_kind_that_is_no_kind_regression():
    """``xp.isdtype(x.dtype, 3)`` raised AttributeError from inside numpy."""
    x = xp.asarray([1.0])
    with pytest.raises(TypeError, match=r"^isdtype: kind 3 of type int is not a kind"):
        xp.isdtype(x.dtype, 3)
    assert xp.isdtype(x.dtype, xp.float32) and xp.isdtype(x.dtype, ("integral", x.dtype))


def test_like_functions_given_float32_keep_the_scheme_as_astype_regression():
    """``empty_like(x, dtype=float32)`` (and zeros/ones/full) gave the default scheme where
    ``astype(x, float32)`` keeps ``x``'s: float32 is the scheme's own target."""
    x = xp.asarray(np.ones(3, np.float32), dtype="bf16x9")
    assert xp.astype(x, xp.float32).dtype == "bf16x9"
    for like in (xp.empty_like, xp.zeros_like, xp.ones_like, lambda a, dtype: xp.full_like(a, 2.0, dtype=dtype)):
        assert like(x, dtype=xp.float32).dtype == "bf16x9" and like(x, dtype="tf32x3").dtype == "tf32x3"


def test_arange_with_a_float_stop_of_zero_is_float32_regression():
    """``arange(0, 0.0, 1)`` and ``arange(3, 0.0, -1)`` gave int64: ``stop or 0`` read a float zero
    stop as the int 0; a Python float among start, stop, step gives the default float dtype."""
    assert xp.arange(0, 0.0, 1).dtype == xp.arange(0, -0.0).dtype == xp.arange(0, 1.0).dtype == xp.float32
    assert np.array_equal(xp.arange(3, 0.0, -1).to_numpy(), np.float32([3, 2, 1]))
    assert xp.arange(5).dtype == xp.int64 and xp.arange(2, 5).dtype == xp.int64


def test_vecdot_core_axes_do_not_broadcast_and_zero_broadcasts_against_one_regression():
    """``vecdot(ones(1), ones(2))`` gave 2.0 (the contracted axis broadcast as a batch axis would),
    and ``vecdot(ones((0, 3)), ones((1, 3)))`` raised where numpy gives shape (0,)."""
    for call in (lambda: xp.vecdot(xp.ones(1), xp.ones(2)),
                 lambda: xp.linalg.vecdot(xp.ones((2, 1)), xp.ones((1, 2)), axis=0),
                 lambda: np.matvec(sp.ones((2, 1)), sp.ones(3)), lambda: np.vecmat(sp.ones(3), sp.ones((1, 2)))):
        with pytest.raises(ValueError, match=r"core axes do not broadcast"):
            call()
    for shapes in (((0, 3), (1, 3)), ((1, 0), (0, 0)), ((2, 1, 3), (4, 3))):
        expected = np.vecdot(*(np.ones(s, np.float32) for s in shapes))
        assert xp.vecdot(*(xp.ones(s) for s in shapes)).shape == expected.shape
    assert np.einsum("ij,ij->i", sp.ones((0, 3)), sp.ones((1, 3))).shape == (0,)


def test_outer_is_each_product_rounded_once_with_its_sign_of_zero_regression():
    """``linalg.outer([0.], [-1.])`` gave +0: the product ran as a one-term sum in the scheme, which
    starts from +0 (and, in bf16x6, drops its small parts' products); an outer product has no sum."""
    x = np.float32([0.0, -0.0, 3e38, 1e-30, 1.1, np.nan])
    y = np.float32([-1.0, 2.0, 1e-20, 1.3, np.inf])
    expected = np.outer(x, y)
    for name in ("bf16x6", "bf16x9", "tf32x3", "bf16"):
        with np.errstate(all="ignore"):
            got = np.outer(sp.asarray(x, dtype=name), y)
        assert got.dtype == name and np.array_equal(got.to_numpy().view(np.uint32), expected.view(np.uint32))
    assert np.signbit(xp.linalg.outer(xp.asarray([0.0]), xp.asarray([-1.0])).to_numpy()).all()
