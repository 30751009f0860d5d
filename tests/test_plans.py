"""The plan cache of the public GPU calls (``splitprec._plans``, ``splitprec.engines.cuda.replay``)
and ``precision="fp32"``'s per-shape path, SGEMM included (``splitprec.engines.cuda.gemm.fp32_path``).

Without a GPU: the path choice against the measurements it came from, the graph's layout rule, the
plans' life cycle, the SGEMM fix-up's threshold and bound. On a GPU (marked ``gpu``): replayed calls
are bit-identical to first calls on new inputs, on other streams and after a default changes; calls
a graph cannot hold keep running directly; the SGEMM path lies within its bound with the float64
product's NaN/inf and range.
"""
import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import splitprec as sp
from splitprec import _plans
from splitprec.accuracy import gemm_bound
from splitprec.accuracy.bounds import sgemm_bound
from splitprec.accuracy.reference import exact_matmul
from splitprec.engines.cuda import gemm as cuda_gemm, replay, sgemm_small as cuda_sgemm_small
from splitprec.engines.cuda.nonfinite import FP32_MAX, sgemm_limit
from splitprec.engines.cuda.tuning import TUNING

ROOT = pathlib.Path(__file__).resolve().parents[1]
rng = np.random.default_rng(11)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- the path of precision="fp32" --------------------------------------------------------------

def _measured_shapes():
    """Per shape, the event times of each path: the rule's source, and its small-product rule's
    newer one where both measured a shape."""
    shapes = {}
    for source in (TUNING["precision_fp32"]["source"], TUNING["precision_fp32"]["small"]["source"]):
        for r in json.loads((ROOT / source).read_text())["results"]:
            shapes[r["m"], r["n"], r["k"], r["batch"]] = {}
        for r in json.loads((ROOT / source).read_text())["results"]:
            shapes[r["m"], r["n"], r["k"], r["batch"]][r["name"]] = r["event_us"]
    return shapes


def test_fp32_path_is_the_fastest_measured_path_of_every_shape():
    """Per shape of the source measurement, the chosen path is within 5% of the fastest path: the
    fp32-class schemes, sgemm_small, and SGEMM with its fix-up (``sgemm_path``, measured where it
    competes with sgemm_small; elsewhere bare SGEMM stands for it); the table covers square, batched
    and skinny."""
    shapes = _measured_shapes()
    regimes = {"square": 0, "batched": 0, "skinny": 0}
    for (m, n, k, batch), times in shapes.items():
        sgemm = "sgemm_path" if "sgemm_path" in times else "cublas_sgemm"
        candidates = {name: t for name, t in times.items() if name in (sgemm, "sgemm_small")
                      or (name in sp.dtypes("float32") and sp.dtype(name).fp32_class)}
        path = cuda_gemm.fp32_path(m, n, k, batch)
        chosen = times[sgemm if path == "sgemm" else path]
        assert chosen <= 1.05 * min(candidates.values()), ((m, n, k, batch), path, candidates)
        regimes["batched" if batch > 1 else "square" if m == n == k else "skinny"] += 1
    assert min(regimes.values()) >= 2, regimes


def test_fp32_path_takes_sgemm_below_each_threshold_only():
    below = TUNING["precision_fp32"]["sgemm_below"]
    large = 8192
    assert cuda_gemm.fp32_path(large, large, large, 1) == TUNING["precision_fp32"]["scheme"]
    assert cuda_gemm.fp32_path(below["min_mn"] - 1, large, large, 1) == "sgemm"
    assert cuda_gemm.fp32_path(large, large, below["k"] - 1, 1) == "sgemm"
    side = round(below["work"] ** (1 / 3))
    assert cuda_gemm.fp32_path(side // 2, side // 2, side // 2, 7) == "sgemm"
    small = TUNING["precision_fp32"]["small"]                        # the smallest: one float32 pass
    assert cuda_gemm.fp32_path(small["max_mn"], 1, small["max_k"], 1 << 16) == "sgemm_small"
    assert cuda_gemm.fp32_path(1, small["max_mn"], small["max_k"], 1) == "sgemm_small"
    assert cuda_gemm.fp32_path(small["max_mn"] + 1, 1, small["max_k"], 1 << 16) == "sgemm"
    assert cuda_gemm.fp32_path(small["max_mn"], 1, small["max_k"] + 1, 1 << 16) == "sgemm"
    assert max(small["max_mn"], small["max_k"]) <= cuda_sgemm_small.MAX
    assert sp.dtype(TUNING["precision_fp32"]["scheme"]).fp32_class


# ---- the SGEMM fix-up and bound ----------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 1000, 2 ** 20, 2 ** 23 - 2, 2 ** 23, 2 ** 30])
def test_sgemm_limit_is_the_largest_float32_below_the_safe_magnitude(k):
    safe = max(FP32_MAX * (1 - (2 * k + 2) * 2.0 ** -24), 0.0)
    limit = sgemm_limit(k)
    assert limit.dtype == np.float32 and float(limit) <= safe
    assert float(np.nextafter(limit, np.float32(np.inf))) > safe


def _float32_dot(a, b, order):
    """a @ b summed in float32 in ``order``: "forward", "reverse", "pairwise" or "shuffled" with one
    rounding per product and per add, or "fma" (forward, each product added exactly and rounded once)."""
    if order == "fma":
        total = np.zeros(a.shape[:-1] + b.shape[-1:], np.float32)
        for q in range(a.shape[-1]):
            exact = a[:, q, None].astype(np.float64) * b[None, q, :]         # exact in float64
            total = (total + exact).astype(np.float32)
        return total
    products = (a[..., :, :, None] * b[..., None, :, :]).astype(np.float32)       # (m, k, n), rounded
    if order == "reverse":
        products = products[..., ::-1, :]
    if order == "shuffled":
        products = products[..., np.random.default_rng(a.shape[-1]).permutation(a.shape[-1]), :]
    if order == "pairwise":
        while products.shape[-2] > 1:
            if products.shape[-2] % 2:
                products = np.concatenate([products, np.zeros_like(products[..., :1, :])], axis=-2)
            products = (products[..., 0::2, :] + products[..., 1::2, :]).astype(np.float32)
        return products[..., 0, :]
    total = np.zeros(products.shape[:-2] + products.shape[-1:], np.float32)
    for q in range(products.shape[-2]):
        total = (total + products[..., q, :]).astype(np.float32)
    return total


@given(st.integers(1, 40), st.sampled_from(["forward", "reverse", "pairwise", "shuffled", "fma"]),
       st.sampled_from([0.0, -30.0, -125.0, 60.0]), st.booleans())
def test_float32_sums_in_any_order_lie_within_the_sgemm_bound(k, order, binade, flush):
    """Float32 sums in several orders, with or without FMA, and with subnormal inputs flushed to
    zero, stay within ``sgemm_bound``; entries past float32's range have an infinite bound."""
    local = np.random.default_rng(k)
    a = (local.standard_normal((3, k)) * 2.0 ** binade).astype(np.float32)
    b = (local.standard_normal((k, 4)) * 2.0 ** local.integers(-30, 30, size=(k, 4))).astype(np.float32)
    bound = sgemm_bound(a, b)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        x, y = (np.where(np.abs(v) < 2.0 ** -126, np.float32(0), v) if flush else v for v in (a, b))
        c = _float32_dot(x, y, order).astype(np.float64)
    exact = exact_matmul(a, b)
    finite = np.isfinite(bound)
    assert (np.abs(c - exact)[finite] <= bound[finite]).all()


def test_sgemm_bound_is_infinite_exactly_where_needed():
    a, b = randn(5, 20), randn(20, 6)
    a[0, 0], a[1, :] = np.nan, np.float32(3e38)
    b[:, 2] = 0
    bound = sgemm_bound(a, b)
    assert np.isinf(bound[0]).all() and np.isinf(bound[1, [0, 1, 3, 4, 5]]).all()
    assert np.isfinite(bound[1, 2]) and np.isfinite(bound[2:]).all()
    assert (bound[2:] <= 22 * 2.0 ** -24 * np.abs(a[2:]).astype(np.float64) @ np.abs(b) + 1e-30).all()


def test_gemm_bound_of_a_precision_class():
    a, b = randn(3, 64), randn(64, 5)
    np.testing.assert_array_equal(gemm_bound(a, b, precision="fp32", engine="gpu"), sgemm_bound(a, b))
    np.testing.assert_array_equal(gemm_bound(a, b, precision="FP32"), gemm_bound(a, b, "tf32x3"))
    with pytest.raises(ValueError, match="dtype or precision, not both"):
        gemm_bound(a, b, "bf16x9", precision="fp32")
    with pytest.raises(TypeError, match="precision class"):
        gemm_bound(a, b)
    with pytest.raises(ValueError, match="unknown precision 'fp16'"):
        gemm_bound(a, b, precision="fp16")
    with pytest.raises(ValueError, match="kind='rigorous'"):
        gemm_bound(a, b, precision="fp32", engine="gpu", kind="probabilistic")


# ---- the graph's layout rule and the plans' life cycle ------------------------------------------

def test_dense_span_of_layouts():
    x = np.zeros((4, 6), np.float32)
    assert replay.dense_span(x) == (0, 96)
    assert replay.dense_span(x.T) == (0, 96)
    assert replay.dense_span(x[::-1]) == (-72, 96)
    assert replay.dense_span(x[:, :3]) is None                          # gaps
    assert replay.dense_span(np.broadcast_to(x[:1], (4, 6))) is None    # a broadcast axis
    assert replay.dense_span(x[:0]) is None
    assert replay.dense_span(np.float64(1.0).reshape(())) == (0, 8)
    assert replay.capturable([x, x.T]) and not replay.capturable([np.zeros(replay.MAX_BYTES // 4 + 1, np.float32)])


def test_plans_run_direct_launches_and_forget_the_oldest():
    calls = []
    run = lambda x: calls.append("run") or x + 1                    # noqa: E731
    direct = lambda x: (lambda y: calls.append("direct") or y + 1)  # noqa: E731
    x = np.zeros(3, np.float32)
    for key in range(_plans.MAX_PLANS + 1):
        assert _plans.how(key) == "first"
        _plans.call(key, run, (x,), direct)
    assert _plans.how(0) == "first" and _plans.how(_plans.MAX_PLANS) == "direct"
    calls.clear()
    np.testing.assert_array_equal(_plans.call(_plans.MAX_PLANS, run, (x,), direct), x + 1)
    assert calls == ["direct"]


def test_plans_keep_running_calls_a_graph_cannot_hold():
    calls = []
    run = lambda x: calls.append(1) or np.broadcast_to(x[:1], x.shape)   # noqa: E731  (not dense)
    x = np.arange(4.0)
    for _ in range(3):
        _plans.call("broadcast", run, (x,))
    assert _plans.how("broadcast") == "eager" and len(calls) == 3


def test_no_signature_without_cupy_arrays():
    assert _plans.signature("matmul", (np.zeros((2, 2)), np.zeros((2, 2))), (None, None)) is None


class _FakeArray:
    def __init__(self, shape, strides, dtype):
        self.shape, self.strides, self.dtype = shape, strides, np.dtype(dtype)


def _fake_cupy(stream):
    from types import SimpleNamespace
    cuda = SimpleNamespace(runtime=SimpleNamespace(getDevice=lambda: 0),
                           get_current_stream=lambda: SimpleNamespace(ptr=stream))
    return SimpleNamespace(ndarray=_FakeArray, cuda=cuda)


def test_signature_separates_what_decides_the_launches(monkeypatch):
    """Layouts, options, defaults, stream and thread each give their own plan (a replay fills its
    graph's operand copies, so two threads on one stream must not share one); lists of lengths or
    axes key like tuples; an unhashable option keys nothing."""
    import sys
    import threading
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(0))
    a, b = _FakeArray((4, 5), (20, 4), "float32"), _FakeArray((5, 3), (12, 4), "float32")
    key = _plans.signature("matmul", (a, b), ("bf16x9", None))
    assert key == _plans.signature("matmul", (a, b), ("bf16x9", None)) and hash(key) is not None
    assert key != _plans.signature("matmul", (a, _FakeArray((5, 3), (4, 20), "float32")), ("bf16x9", None))
    assert key != _plans.signature("matmul", (a, b), ("tf32x3", None))
    with sp.default_scheme("tf32x3"):
        assert key != _plans.signature("matmul", (a, b), ("bf16x9", None))
    others = []
    worker = threading.Thread(target=lambda: others.append(_plans.signature("matmul", (a, b), ("bf16x9", None))))
    worker.start()
    worker.join()
    assert others[0] is not None and others[0] != key
    assert _plans.signature("fft2", (a,), ([4, 5], [0, 1], None)) == _plans.signature("fft2", (a,), ((4, 5), (0, 1), None))
    assert _plans.signature("matmul", (a, b), ({"bf16x9"}, None)) is None
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(7))
    assert key != _plans.signature("matmul", (a, b), ("bf16x9", None))


# ---- on the GPU ---------------------------------------------------------------------------------

def _cupy():
    import cupy
    return cupy


def _key(a, b, dtype=None, precision=None):
    return _plans.signature("matmul", (a, b), (dtype, precision))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, precision", [("tf32x3", None), ("bf16x9", None), ("fp16x3", None),
                                              (None, "fp32"), (None, None), ("ozaki2_int8x14", None)])
@pytest.mark.parametrize("shape_a, shape_b", [((64, 64), (64, 64)), ((5, 40, 33), (33, 20)), ((300,), (300, 7)),
                                              ((3, 1, 16, 9), (4, 9, 16)), ((1030, 70), (70, 2050)),
                                              ((6, 16, 12), (6, 12, 8)), ((24,), (24, 20))])      # fused
def test_replayed_matmul_is_bit_identical_to_a_first_call(dtype, precision, shape_a, shape_b):
    cupy = _cupy()
    wide = dtype is not None and sp.dtype(dtype).target == "float64"
    make = lambda shape: cupy.asarray(rng.standard_normal(shape).astype(np.float64 if wide else np.float32))  # noqa: E731
    for round_ in range(4):
        a, b = make(shape_a), make(shape_b)
        if round_ == 3:
            a[..., 0] = np.nan
        c = sp.matmul(a, b, dtype=dtype, precision=precision)
        how = _plans.how(_key(a, b, dtype, precision))
        _plans.clear()
        expected = sp.matmul(a, b, dtype=dtype, precision=precision)      # a first call: no plan
        np.testing.assert_array_equal(cupy.asnumpy(c), cupy.asnumpy(expected))
        assert c.shape == expected.shape and c.dtype == expected.dtype and c.strides == expected.strides
        for _ in range(round_):                                           # back to the plan's state
            sp.matmul(a, b, dtype=dtype, precision=precision)
    if wide:
        return
    broadcast = len(shape_a) > 2 and len(shape_b) > 2 and shape_a[:-2] != shape_b[:-2]
    m, k, n = (shape_a[-2] if len(shape_a) > 1 else 1), shape_a[-1], (shape_b[-1] if len(shape_b) > 1 else 1)
    batch = int(np.prod(np.broadcast_shapes(shape_a[:-2], shape_b[:-2])))
    path = cuda_gemm.fp32_path(m, n, k, batch) if dtype is None else None
    one_launch = path == "sgemm_small" or (
        path is None and max(m, n) <= cuda_gemm.FUSED["max_mn"] and k <= cuda_gemm.FUSED["max_k"])
    if path == "sgemm":
        assert how == ("eager" if broadcast else "direct"), how           # SGEMM: its own launches
    elif one_launch and not broadcast:
        assert how == "direct", how                                       # sgemm_small's or the fused engine's launch
    elif replay.capturable((a, b, c)):
        assert how == "graph", (how, _plans.reason(_key(a, b, dtype, precision)))


@pytest.mark.gpu
def test_replays_read_the_operands_of_each_call_and_return_fresh_results():
    cupy = _cupy()
    a, b = cupy.asarray(randn(96, 80)), cupy.asarray(randn(80, 72))          # beyond the fused engine's sizes
    results = [sp.matmul(a, b, dtype="bf16x6") for _ in range(3)]
    assert _plans.how(_key(a, b, "bf16x6")) == "graph"
    a *= 2
    doubled = sp.matmul(a, b, dtype="bf16x6")
    assert len({r.data.ptr for r in results + [doubled]}) == 4
    np.testing.assert_array_equal(cupy.asnumpy(doubled), 2 * cupy.asnumpy(results[0]))
    np.testing.assert_array_equal(cupy.asnumpy(results[2]), cupy.asnumpy(results[0]))


@pytest.mark.gpu
def test_plans_follow_the_stream_and_the_defaults():
    cupy = _cupy()
    a, b = cupy.asarray(randn(96, 96)), cupy.asarray(randn(96, 96))          # beyond the fused engine's sizes
    plain = [sp.matmul(a, b) for _ in range(3)]
    with cupy.cuda.Stream(non_blocking=True) as stream:
        on_stream = [sp.matmul(a, b) for _ in range(3)]
        host = on_stream[-1].get(stream=stream)
    np.testing.assert_array_equal(host, cupy.asnumpy(plain[-1]))
    with sp.default_scheme("bf16x9"):
        replayed = [sp.matmul(a, b) for _ in range(3)]
        assert _plans.how(_key(a, b)) == "graph"
    np.testing.assert_array_equal(cupy.asnumpy(replayed[-1]), cupy.asnumpy(sp.matmul(a, b, dtype="bf16x9")))


@pytest.mark.gpu
def test_calls_that_read_the_device_back_run_directly():
    """The adaptive fp64 plan reads the data's exponents back: its capture fails and it runs as before."""
    cupy = _cupy()
    a, b = (cupy.asarray(rng.standard_normal((40, 40))) for _ in range(2))
    results = [sp.matmul(a, b, precision="fp64") for _ in range(3)]
    assert _plans.how(_key(a, b, precision="fp64")) == "eager"
    exact = exact_matmul(cupy.asnumpy(a), cupy.asnumpy(b))
    bound = gemm_bound(cupy.asnumpy(a), cupy.asnumpy(b), "ozaki2_int8_adaptive", engine="gpu")
    for c in results:
        assert (np.abs(cupy.asnumpy(c) - exact) <= bound).all()


@pytest.mark.gpu
@pytest.mark.parametrize("call, shape", [("fft", (16, 1024)), ("ifft", (3, 100)), ("rfft", (8, 96)),
                                         ("irfft", (4, 65)), ("fft2", (32, 48)), ("rfftn", (6, 8, 10))])
def test_replayed_fft_is_bit_identical_to_a_first_call(call, shape):
    cupy = _cupy()
    fn = getattr(sp.fft, call)
    real = call in ("rfft", "rfftn")
    for _ in range(3):
        x = rng.standard_normal(shape).astype(np.float32)
        x = cupy.asarray(x if real else x + 1j * rng.standard_normal(shape).astype(np.float32))
        y = fn(x, dtype="bf16x6")
        _plans.clear()
        np.testing.assert_array_equal(cupy.asnumpy(y), cupy.asnumpy(fn(x, dtype="bf16x6")))
        fn(x, dtype="bf16x6")
        fn(x, dtype="bf16x6")
    assert [_plans.how(key) for key in list(_plans._PLANS)] == ["graph"]


@pytest.mark.gpu
@pytest.mark.parametrize("shape_a, shape_b", [((67, 300), (300, 45)), ((4, 30, 50), (50, 20)), ((2, 1000), (1000, 3)),
                                              ((2, 64, 64), (1, 64, 64))])
def test_precision_fp32_sgemm_path_within_bound(shape_a, shape_b):
    cupy = _cupy()
    a, b = randn(*shape_a), randn(*shape_b)
    a[..., 1, :] *= np.float32(2.0 ** -130 / 4)              # subnormal inputs
    b[..., :, 2] *= np.float32(2.0 ** 100)
    c = cupy.asnumpy(cuda_gemm.matmul_fp32(cupy.asarray(a), cupy.asarray(b)))
    bound = gemm_bound(a, b, precision="fp32", engine="gpu")
    assert (np.abs(c - exact_matmul(a, b)) <= bound).all()


@given(st.integers(1, 64), st.integers(1, 64), st.integers(1, 64))
def test_sgemm_small_layout_fits_its_block(m, n, k):
    """``sgemm_small``'s launch: a thread per 4 x 4 tile of C, at most 256 threads, two buffers within
    the budget unless one product alone exceeds it (then one product per block), and within the
    227 KiB an SM gives one block."""
    group, threads, shared = cuda_sgemm_small.layout(m, n, k)
    per_product = -(-m // 4) * -(-n // 4)
    assert group >= 1 and threads == group * per_product and threads <= cuda_sgemm_small.THREADS
    assert shared <= cuda_sgemm_small.SHARED_BUDGET or group == 1
    assert shared <= 227 * 1024
    stride_a = -(-(-(-k // 4) * 4) // 8) * 8 + 4
    assert stride_a % 8 == 4 and shared % 16 == 0        # rows 16-byte aligned, neighbours on other banks


def test_sgemm_small_refuses_products_past_its_size():
    with pytest.raises(ValueError, match="expected each <= 64"):
        cuda_sgemm_small.small_launch(65, 8, 8, 1, False, False)


def _fma_float32(x, y, z):
    """``fma(x, y, z)`` of float32 arrays, rounded once to float32 (ties to even, subnormals kept):
    ``x y`` is exact in float64, their sum's float64 rounding error is recovered exactly (TwoSum),
    and it decides the one case float32(float64 sum) can get wrong, a sum that rounded onto a
    float32 midpoint."""
    p = x.astype(np.float64) * y
    s = p + z
    t = s - p
    error = (p - (s - t)) + (z - t)
    r = s.astype(np.float32)
    other = np.nextafter(r, np.where(s > r, np.float32(np.inf), np.float32(-np.inf)))
    midpoint = (r.astype(np.float64) + other) / 2 == s
    up, down = np.maximum(r, other), np.minimum(r, other)
    return np.where(midpoint & (error > 0), up, np.where(midpoint & (error < 0), down, r))


def _sequential_fma_matmul(a, b):
    """float32 ``a @ b`` with one FMA per term in k order from +0 (broadcast batches), as sgemm_small."""
    a, b = np.broadcast_arrays(a[..., :, :, None], b[..., None, :, :])      # (..., m, k, n)
    c = np.zeros(a.shape[:-3] + (a.shape[-3], a.shape[-1]), np.float32)
    for q in range(a.shape[-2]):
        c = _fma_float32(a[..., :, q, :], b[..., q, :], c)
    return c


@pytest.mark.gpu
@pytest.mark.parametrize("shape_a, shape_b", [((3, 5, 9), (3, 9, 7)), ((4, 16, 16), (16, 12)), ((1, 64), (64, 64)),
                                              ((64, 64, 64), (64, 64, 64)), ((2, 3, 33, 2), (1, 2, 61))])
def test_gpu_sgemm_small_is_a_float32_fma_chain_bit_for_bit(shape_a, shape_b):
    """``precision="fp32"`` on small products runs ``sgemm_small``: each entry the float32 FMA chain
    over k in order (vector and scalar copies, broadcast batches, subnormal inputs and products),
    the same bits on every call."""
    cupy = _cupy()
    a, b = randn(*shape_a), randn(*shape_b)
    a[..., 0, :] *= np.float32(2.0 ** -140)
    b[..., :, 1] *= np.float32(2.0 ** -20)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    assert cuda_gemm.fp32_path(m, n, k, 2) == "sgemm_small"
    expected = _sequential_fma_matmul(a, b)
    for _ in range(3):
        c = cupy.asnumpy(sp.matmul(cupy.asarray(a), cupy.asarray(b), precision="fp32"))
        np.testing.assert_array_equal(c.view(np.uint32), expected.view(np.uint32))


def test_fma_float32_rounds_once():
    """The reference FMA of the test above against exact rational arithmetic, midpoints included."""
    from fractions import Fraction
    local = np.random.default_rng(5)
    x = local.standard_normal(4000).astype(np.float32)
    y = local.standard_normal(4000).astype(np.float32)
    z = (local.standard_normal(4000) * 2.0 ** local.integers(-40, 40, 4000)).astype(np.float32)
    x[:3], y[:3], z[:3] = 1 + 2.0 ** -23, 1 + 2.0 ** -23, -1.0      # exact 2^-22 + 2^-46
    x[3], y[3], z[3] = 1 + 2.0 ** -23, 1 - 2.0 ** -23, 2.0 ** 24 + 2   # 2^24 + 3 - 2^-46: float64 rounds it onto a midpoint
    got = _fma_float32(x, y, z)
    assert got[3] == 2.0 ** 24 + 2 and np.float32(float(x[3]) * float(y[3]) + float(z[3])) == 2.0 ** 24 + 4
    for i in range(len(x)):
        exact = Fraction(float(x[i])) * Fraction(float(y[i])) + Fraction(float(z[i]))
        below = np.float32(float(exact))
        neighbours = [below, np.nextafter(below, np.float32(np.inf)), np.nextafter(below, np.float32(-np.inf))]
        best = min(neighbours, key=lambda v: (abs(Fraction(float(v)) - exact), int(v.view(np.uint32)) & 1))
        assert got[i] == best, (i, x[i], y[i], z[i])


@pytest.mark.gpu
def test_gpu_precision_fp32_within_bound(monkeypatch):
    """Every path of ``precision="fp32"`` (sgemm_small, SGEMM, and the scheme where the table takes
    it) within ``gemm_bound(..., precision="fp32", engine="gpu")``, with the float64 product's NaN/inf
    and range."""
    cupy = _cupy()
    none = {"max_mn": 0, "max_k": 0}
    for small, below, path in ((TUNING["precision_fp32"]["small"], TUNING["precision_fp32"]["sgemm_below"], "sgemm_small"),
                               (none, TUNING["precision_fp32"]["sgemm_below"], "sgemm"),
                               (none, {"min_mn": 0, "k": 0, "work": 0}, cuda_gemm.FP32_SCHEME)):
        monkeypatch.setattr(cuda_gemm, "SMALL_FP32", small)
        monkeypatch.setattr(cuda_gemm, "SGEMM_BELOW", below)
        assert cuda_gemm.fp32_path(30, 20, 50, 2) == path
        a, b = randn(2, 30, 50), randn(1, 50, 20)
        a[1, 3, 4], a[0, 7, 0], b[0, 2, 9] = -np.inf, np.nan, np.inf
        a[0, 11, :], b[0, 11, 5] = 0.0, 0.0
        a[0, 11, 11] = np.inf                                       # inf * 0 only: NaN
        a[1, 20, :2], b[0, :2, 17] = (3e38, -3e38), (3e38, 3e38)    # products overflow; exact: 0
        a[1, 21, :2] = (3e38, 3e38)                                 # partial sums overflow; exact 1.8e77: +inf
        a[1, 22, :3], b[0, :3, 18] = (3e38, 3e38, -3e38), (1.0, 1.0, 1.0)     # exact 3e38: finite
        b[0, 2:, 17] = 0.0
        b[0, 3:, 18] = 0.0
        c = cupy.asnumpy(cuda_gemm.matmul_fp32(cupy.asarray(a), cupy.asarray(b)))
        with np.errstate(invalid="ignore", over="ignore"):
            exact = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
        for special in (np.isnan, np.isposinf, np.isneginf):
            np.testing.assert_array_equal(special(c), special(exact))
        assert c[1, 20, 17] == 0.0 and c[1, 21, 17] == np.inf and c[1, 22, 18] == np.float32(3e38)
        bound = gemm_bound(a, b, precision="fp32", engine="gpu")
        finite = np.isfinite(bound)
        assert (np.abs(c - exact_matmul(a, b))[finite] <= bound[finite]).all()
