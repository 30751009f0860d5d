"""SplitArray on cupy storage: every operation stays on the GPU (result storage is cupy), products
run sp.matmul's GPU engine, sums equal the cpu ones bit for bit, interop and device errors."""
import math

import numpy as np
import pytest

import splitprec as sp
from splitprec.engines.cuda import split as cuda_split
from splitprec.split import Parts, merge, split

cupy = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

ALL_DTYPES = sp.dtypes("float32")
U = 2.0 ** -24
rng = np.random.default_rng(11)
SPECIAL = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -3e38, 2.0 ** -130])


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def on_gpu(x):
    """The cupy value of a gpu SplitArray or cupy result; fails for anything on the host."""
    if isinstance(x, sp.SplitArray):
        assert x.device == "gpu"
        x = cupy.asarray(x)                     # through __cuda_array_interface__, no copy
    assert isinstance(x, cupy.ndarray), type(x)
    return x


def assert_same(got, expected):
    """Equal float32/bool values bit for bit (NaN positions, zero signs), got on the GPU."""
    got, expected = on_gpu(got).get(), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.array_equal(got, expected, equal_nan=True)
    if got.dtype == np.float32:
        assert np.array_equal(np.signbit(got) & ~np.isnan(got),
                              np.signbit(expected) & ~np.isnan(expected))


def pair(shape, name="bf16x9"):
    x = randn(*shape)
    if x.size >= SPECIAL.size:
        x.ravel()[:SPECIAL.size] = SPECIAL
    return x, sp.asarray(x, dtype=name, device="gpu")


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_creation_on_the_gpu(name):
    x = randn(2, 3)
    for a in (sp.asarray(x, dtype=name, device="gpu"), sp.asarray(cupy.asarray(x), dtype=name),
              sp.asarray([[1.0, 2.0]], dtype=name, device="gpu"), sp.zeros((2, 3), dtype=name, device="gpu"),
              sp.ones(3, dtype=name, device="gpu"), sp.full((2, 2), -0.5, dtype=name, device="gpu"),
              sp.empty((0, 4), dtype=name, device="gpu"), sp.asarray(sp.asarray(x), dtype=name, device="gpu")):
        on_gpu(a)
        assert a.dtype.name == name
    back = sp.asarray(sp.asarray(x, dtype=name, device="gpu"), device="cpu")
    assert back.device == "cpu" and np.array_equal(back.to_numpy(), x)
    with pytest.raises(TypeError, match=r"^asarray: x has dtype float64"):
        sp.asarray(cupy.ones(3), dtype=name)
    with pytest.raises(TypeError, match=r"^asarray: x holds a value that float32 cannot hold exactly \(16777217\)"):
        sp.asarray(cupy.asarray([1, (1 << 24) + 1]), dtype=name)


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.divide, np.maximum,
                                   np.minimum, np.negative, np.absolute, np.sqrt, np.square,
                                   np.floor, np.copysign], ids=lambda u: u.__name__)
def test_exactly_rounded_ufuncs_stay_on_gpu_and_equal_numpy_float32(ufunc):
    (x, a), (y, b) = pair((5, 7), "tf32x3"), pair((7,), "bf16x9")
    operands = ((a, b), (x, y)) if ufunc.nin == 2 else ((a,), (x,))
    with np.errstate(all="ignore"):
        got, expected = ufunc(*operands[0]), ufunc(*operands[1])
    assert got.dtype.name == ("bf16x9" if ufunc.nin == 2 else "tf32x3")
    assert_same(got, expected)


def test_operators_scalars_comparisons_and_transcendentals_stay_on_gpu():
    x, a = pair((4, 6))
    with np.errstate(all="ignore"):
        assert_same(a * 0.1 + 1, x * 0.1 + 1)               # weak scalars, as numpy's
        assert_same(2 - a, 2 - x)
        assert_same(cupy.asarray(x) - a, x - x)     # cupy on the left computes it (through CAI)
        assert_same(a ** 2, x ** 2)
        assert_same(a < 0.5, x < 0.5)
        assert_same(np.isnan(a), np.isnan(x))
        for ufunc in (np.exp, np.log, np.sin, np.cos, np.tanh, np.arctan2):
            result = ufunc(*(a,) * ufunc.nin)
            on_gpu(result)
            assert result.dtype.name == "bf16x9"
        b = a.copy()
        b += 1
        b *= a
        assert_same(b, (x + 1) * x)


def test_indexing_views_and_setitem_stay_on_gpu():
    x, a = pair((4, 5), "fp16x3")
    for key in (1, (slice(None, None, -1), slice(1, None, 2)), x > 0, [0, 3], (Ellipsis, None)):
        gpu_key = cupy.asarray(key) if isinstance(key, (np.ndarray, list)) else key
        assert_same(a[gpu_key], x[key])
    scalar = a[1, 2]
    assert isinstance(scalar, cupy.ndarray) and scalar.ndim == 0          # no host copy
    a[0] = 3.0
    a[1, ::2] = cupy.asarray([1, 2, 4], dtype=cupy.float32)
    a[2:] = sp.asarray(np.float32([[7, 8, 9, 10, 11]]), device="gpu")
    a.T[4, 0] = -1
    x[0], x[1, ::2], x[2:], x.T[4, 0] = 3, [1, 2, 4], [[7, 8, 9, 10, 11]], -1
    assert_same(a, x)
    for function, args in ((np.reshape, ((5, 4),)), (np.transpose, ()), (np.swapaxes, (0, 1)),
                           (np.expand_dims, (0,)), (np.broadcast_to, ((2, 4, 5),)),
                           (np.concatenate, ()), (np.stack, ())):
        operand = [a, a] if function in (np.concatenate, np.stack) else a
        expected = function([x, x] if function in (np.concatenate, np.stack) else x, *args)
        assert_same(function(operand, *args), expected)


@pytest.mark.parametrize("name", ["bf16x9", "bf16x6", "tf32x3", "fp16x3", "bf16"])
@pytest.mark.parametrize("shape_a, shape_b", [((64, 48), (48, 32)), ((3, 17, 9), (3, 9, 5)),
                                              ((0, 8), (8, 4)), ((6, 0), (0, 3))])
def test_contractions_run_sp_matmul_on_the_gpu(name, shape_a, shape_b):
    a = sp.asarray(randn(*shape_a[:-2], 2 * shape_a[-2], shape_a[-1]), dtype=name, device="gpu")[..., ::-2, :]
    b = sp.asarray(randn(*shape_b), dtype=name, device="gpu")
    va, vb = cupy.ascontiguousarray(on_gpu(a)), cupy.ascontiguousarray(on_gpu(b))
    expected = sp.matmul(va, vb, dtype=name)
    assert isinstance(expected, cupy.ndarray)
    batched = a.ndim == 3
    results = [a @ b, np.matmul(a, b), sp.matmul(a, b), a @ vb,
               np.einsum("bij,bjk->bik" if batched else "ij,jk->ik", a, b),
               np.einsum("bij,bkj->bik" if batched else "ij,kj->ik", a, b.mT)]
    if not batched:
        results += [np.dot(a, b), np.tensordot(a, b, axes=1)]
    for got in results:
        assert got.dtype.name == name
        assert_same(got, expected.get())
    if not batched and a.shape[0] and b.shape[1]:
        inner = a[0] @ b[:, 0]
        assert isinstance(inner, cupy.ndarray) and inner.ndim == 0


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2)])
def test_reductions_on_gpu_equal_the_cpu_ones_bit_for_bit(axis):
    x = randn(33, 130, 5) * np.float32(1e3)
    x[0, :, 0] = np.float32([1.0] + [2 ** -25] * 128 + [-1.0])
    cpu, gpu = sp.asarray(x, dtype="tf32x3"), sp.asarray(x, dtype="tf32x3", device="gpu")
    for method in ("sum", "mean", "max", "min"):
        got = getattr(gpu, method)(axis=axis)
        assert_same(got, np.asarray(getattr(cpu, method)(axis=axis)))
    if not isinstance(axis, tuple):
        assert_same(gpu.argmax(axis=axis), cpu.argmax(axis=axis))
    norm = on_gpu(np.linalg.norm(gpu[0, :, 1])).get()
    exact = math.sqrt(math.fsum(float(v) ** 2 for v in x[0, :, 1]))
    assert abs(float(norm) - exact) <= 2 * U * exact


def test_split_cache_lives_on_gpu_and_writes_invalidate_it():
    x = randn(6, 6)                    # normal range: bf16x9's parts hold these exactly
    a = sp.asarray(x, dtype="bf16x9", device="gpu")
    parts = a._parts(a._dtype, None)
    assert all(isinstance(t, cupy.ndarray) for t in a.terms) and a._parts(a._dtype, None) is parts
    a[2, 3] = 0.5
    assert a._parts(a._dtype, None) is not parts
    x[2, 3] = 0.5
    scale = 2.0 ** -float(split(x, "bf16x9").exponent)     # terms carry the whole array's power of two
    assert_same((merge(Parts(a.terms), "bf16x9").astype(np.float64) / scale).astype(np.float32), x)


@pytest.mark.parametrize("name, shape_a, shape_b", [("fp16x3", (40, 70), (70, 50)),     # mma.sync, 64 x 64
                                                   ("tf32x3", (3, 130, 200), (200, 150)),   # B broadcast
                                                   ("bf16x6", (2048, 512), (512, 2048)),    # cuBLAS on Hopper
                                                   ("bf16x9", (300,), (300, 20))])          # a vector
def test_gpu_products_split_each_operand_once(monkeypatch, name, shape_a, shape_b):
    """Products of gpu SplitArrays keep each operand's device split until it is written: the bits of
    sp.matmul on the values (NaN/inf included), no split on a repeat, one after a write."""
    x, y = randn(*shape_a), randn(*shape_b)
    x.flat[3], y.flat[5] = np.nan, -np.inf
    a, b = sp.asarray(x, dtype=name, device="gpu"), sp.asarray(y, dtype=name, device="gpu")
    splits = []
    for function in ("split_operand", "split_stacked"):
        original = getattr(cuda_split, function)
        monkeypatch.setattr(cuda_split, function, lambda *args, _f=original, **kw: splits.append(1) or _f(*args, **kw))
    expected = sp.matmul(cupy.asarray(x), cupy.asarray(y), dtype=name).get()
    splits.clear()
    assert_same(a @ b, expected)
    assert len(splits) == 2
    assert_same(a @ b, expected)
    assert_same(np.matmul(a, b), expected)
    assert len(splits) == 2                      # both splits reused
    assert_same(a @ cupy.asarray(y), expected)   # a cupy operand is split every time
    assert len(splits) == 3
    a[..., 1] = 2.0
    x[..., 1] = 2.0
    expected = sp.matmul(cupy.asarray(x), cupy.asarray(y), dtype=name).get()
    splits.clear()
    assert_same(a @ b, expected)
    assert len(splits) == 1                      # a's split made again, b's reused


@pytest.mark.parametrize("name", ["fp16x3", "bf16x6"])
def test_gpu_transposed_views_share_their_base_split(monkeypatch, name):
    """``W.T`` on one side of a product takes the split ``W`` made on the other side, and gives it."""
    w, x, y, z, q = randn(300, 200), randn(200, 50), randn(300, 40), randn(60, 300), randn(50, 200)
    w[7, 9] = np.nan
    big = sp.asarray(w, dtype=name, device="gpu")
    splits = []
    original = cuda_split.split_operand
    monkeypatch.setattr(cuda_split, "split_operand", lambda *args, **kw: splits.append(1) or original(*args, **kw))
    pairs = [(big, x, w, x), (big.T, y, w.T, y), (z, big, z, w), (q, big.T, q, w.T)]
    expected = [sp.matmul(cupy.asarray(u), cupy.asarray(v), dtype=name).get() for _, _, u, v in pairs]
    splits.clear()
    for (left, right, _, _), want in zip(pairs, expected):
        left, right = (v if isinstance(v, sp.SplitArray) else cupy.asarray(v) for v in (left, right))
        assert_same(sp.matmul(left, right), want)
    assert len(splits) == 2 + 2 + 1 + 1          # W as A, W.T as A (W's B side), then both reused


def test_interop_exports_the_gpu_value_without_copies():
    x, a = pair((3, 4))
    with pytest.raises(TypeError, match=r"^SplitArray.__array__: the data lives on the gpu"):
        np.asarray(a)
    assert type(a.get()) is np.ndarray and np.array_equal(a.get(), x, equal_nan=True)
    view = cupy.asarray(a)
    assert view.data.ptr == a.__cuda_array_interface__["data"][0]
    assert_same(cupy.from_dlpack(a), x)
    assert a.__dlpack_device__()[0] == 2                 # kDLCUDA
    assert "SplitArray(" in repr(a) and "device=gpu" in repr(a)


def test_mixing_cpu_and_gpu_raises_valueerror():
    x, a = pair((2, 3))
    cpu = sp.asarray(x)
    with pytest.raises(ValueError, match=r"^add: operands live on different devices"):
        a + cpu
    with pytest.raises(ValueError, match=r"^add: x2 lives on the cpu and the array on the gpu"):
        a + x
    with pytest.raises(ValueError, match=r"^matmul: operands live on different devices"):
        a @ cpu.T
    with pytest.raises(ValueError, match=r"^concatenate: operands live on different devices"):
        np.concatenate([a, cpu])
    with pytest.raises(ValueError, match=r"^__setitem__: value lives on the cpu and the array on the gpu"):
        a[0] = x[0]


def test_writes_through_cuda_array_interface_and_dlpack_are_detected():
    """A write through an export the GPU cannot make read-only is seen before a cached split is reused."""
    x, y = randn(64, 48), randn(48, 32)
    a, b = sp.asarray(x, dtype="bf16x9", device="gpu"), sp.asarray(y, dtype="bf16x9", device="gpu")

    def fresh():
        return sp.matmul(cupy.asarray(x), cupy.asarray(y), dtype="bf16x9").get()
    alias = cupy.asarray(a)                        # cupy ignores the interface's read-only flag
    assert a.__cuda_array_interface__["data"][1] is True
    assert_same(a @ b, fresh())
    alias[3, 4] = 2.0
    x[3, 4] = 2.0
    assert_same(a @ b, fresh())
    assert_same(a.T.T @ b, fresh())
    through_dlpack = cupy.from_dlpack(a)
    assert_same(a @ b, fresh())
    through_dlpack[0] = -1.0
    x[0] = -1.0
    assert_same(a @ b, fresh())
