"""splitprec on dask arrays (splitprec/dask.py), on a real two-process LocalCluster.

Products against the exact reference and within the chunked bound, equal to the documented block
algorithm done by hand (the float64 sum in k order of sp.matmul of the blocks), bit-identical across
schedulers, runs and a lost worker; SplitArray chunks split once; FFTs block by block; errors; accuracy.check.
"""
import functools
import logging
import operator
import os
import pathlib
import pickle
import re
import sys
import threading
import time

import numpy as np
import pytest
import scipy.signal as scipy_signal

from splitprec import accuracy
import splitprec as sp
from splitprec.accuracy import exact_matmul, gemm_bound
from splitprec.fft import _TRANSFORMS

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

SCHEMES = sp.dtypes("float32") + ["ozaki2_int8x14"]
FP32_CLASS = [n for n in sp.dtypes("float32") if sp.dtype(n).fp32_class]
rng = np.random.default_rng(28)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@pytest.fixture(scope="module")
def client():
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # the workers cannot import tests/
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=logging.CRITICAL) as cluster, distributed.Client(cluster) as c:
        yield c


def _operands(dtype=np.float32):
    """A (70, 150) and B (150, 40) with uneven chunks, k-chunks (50, 64, 36) on both."""
    a, b = randn(70, 150, dtype=dtype), randn(150, 40, dtype=dtype)
    return a, b, da.from_array(a, chunks=(32, (50, 64, 36))), da.from_array(b, chunks=((50, 64, 36), 24))


def _slices(sizes):
    """The slices of consecutive blocks of lengths ``sizes`` (one axis of a dask chunks tuple)."""
    ends = np.cumsum((0,) + tuple(sizes))
    return [slice(start, end) for start, end in zip(ends[:-1], ends[1:])]


def _blockwise_matmul(a, b, chunks_a, chunks_b, name):
    """docs/dask.md's algorithm by hand: block (i, j) is the float64 sum, in k-chunk order, of
    ``sp.matmul(a[i, p], b[p, j])``, rounded once to float32 (float64 schemes: the sum itself).

    Each block product is the engine's on the block, so this is what the dask layer must return
    on any BLAS; the unchunked ``sp.matmul(a, b)`` may differ in the last bits (a BLAS's order of
    summation can depend on the operands' shapes) and is compared through the bound instead."""
    target = np.dtype(sp.dtype(name).target)

    def block(rows, cols):
        partials = [sp.matmul(a[rows, ks], b[ks, cols], dtype=name).astype(np.float64) for ks in _slices(chunks_a[1])]
        return functools.reduce(operator.add, partials).astype(target)

    return np.block([[block(rows, cols) for cols in _slices(chunks_b[1])] for rows in _slices(chunks_a[0])])


# -- matmul ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SCHEMES)
def test_matmul_error_within_chunked_bound(client, name):
    target = np.dtype(sp.dtype(name).target)
    a, b, A, B = _operands(target)
    C = sp.matmul(A, B, dtype=name)
    assert C.chunks == (A.chunks[0], B.chunks[1]) and C.dtype == target
    c = client.compute(C).result()
    assert type(c) is np.ndarray and c.dtype == target
    assert np.all(np.abs(c - exact_matmul(a, b)) <= gemm_bound(a, b, name, chunks=A.chunks))


def test_matmul_is_bit_identical_across_schedulers_and_runs(client):
    a, b, A, B = _operands()
    C = sp.matmul(A, B, dtype="tf32x3")
    first = client.compute(C).result()
    for again in (client.compute(C).result(), C.compute(scheduler="sync"), C.compute(scheduler="threads")):
        assert np.array_equal(again, first)


@pytest.mark.parametrize("name", SCHEMES)
def test_matmul_is_the_float64_sum_in_k_order_of_the_block_products(name):
    target = np.dtype(sp.dtype(name).target)
    a, b, A, B = _operands(target)
    c = sp.matmul(A, B, dtype=name).compute(scheduler="sync")
    assert np.array_equal(c, _blockwise_matmul(a, b, A.chunks, B.chunks, name))


@pytest.mark.parametrize("name", ["bf16x9", "fp16x3", "ozaki2_int8x14"])
def test_matmul_of_one_k_chunk_is_splitprec_matmul_of_the_blocks(name):
    """Each output block is sp.matmul of its two blocks, bit for bit; it and the unchunked product
    are both within the unchunked bound, which the one-chunk bound equals."""
    target = sp.dtype(name).target
    a, b = randn(40, 30, dtype=target), randn(30, 20, dtype=target)
    A, B = da.from_array(a, chunks=(16, 30)), da.from_array(b, chunks=(30, 8))
    c = sp.matmul(A, B, dtype=name).compute()
    blocks = [[sp.matmul(a[rows], b[:, cols], dtype=name) for cols in _slices(B.chunks[1])]
              for rows in _slices(A.chunks[0])]
    assert np.array_equal(c, np.block(blocks))
    bound = gemm_bound(a, b, name)
    assert np.array_equal(gemm_bound(a, b, name, chunks=(30,)), bound)
    exact = exact_matmul(a, b)
    assert all(np.all(np.abs(product - exact) <= bound) for product in (c, sp.matmul(a, b, dtype=name)))


def test_matmul_sums_partial_products_in_float64_in_k_order():
    """The combination adds float32 block products in float64 and rounds once: 2**24, 1, 1 gives
    2**24 + 2 (float32 additions in that order would give 2**24)."""
    a = np.float32([[2.0 ** 24, 1, 1]])
    b = np.ones((3, 1), np.float32)
    c = sp.matmul(da.from_array(a, chunks=1), da.from_array(b, chunks=1), dtype="bf16x9").compute()
    assert c[0, 0] == np.float32(2.0 ** 24 + 2)


def test_matmul_rechunks_b_to_the_k_chunks_of_a(client):
    a, b = randn(20, 90), randn(90, 10)
    A, B = da.from_array(a, chunks=(20, (30, 60))), da.from_array(b, chunks=((45, 45), 10))
    c = client.compute(sp.matmul(A, B, dtype="bf16x6")).result()
    assert np.array_equal(c, sp.matmul(A, B.rechunk(((30, 60), 10)), dtype="bf16x6").compute())
    assert np.all(np.abs(c - exact_matmul(a, b)) <= gemm_bound(a, b, "bf16x6", chunks=(30, 60)))


def test_matmul_with_a_numpy_operand_takes_the_dask_k_chunks():
    a, b, A, B = _operands()
    assert np.array_equal(sp.matmul(A, b, dtype="bf16x9").compute(),
                          sp.matmul(A, da.from_array(b, chunks=(A.chunks[1], 40)), dtype="bf16x9").compute())
    assert np.array_equal(sp.matmul(a, B, dtype="bf16x9").compute(),
                          sp.matmul(da.from_array(a, chunks=(70, B.chunks[0])), B, dtype="bf16x9").compute())


def test_matmul_nonfinite_inputs_give_the_float64_products_pattern():
    a, b = randn(6, 12), randn(12, 5)
    a[0, 1], a[1, 10], a[2, 3], a[2, 9] = np.nan, np.inf, np.inf, -np.inf   # rows 1, 2 across k-chunks
    b[11, 4] = -np.inf
    c = sp.matmul(da.from_array(a, chunks=(3, 4)), da.from_array(b, chunks=(4, 5)), dtype="tf32x3").compute()
    with np.errstate(invalid="ignore"):
        reference = a.astype(np.float64) @ b.astype(np.float64)
    for where in (np.isnan, np.isposinf, np.isneginf):
        assert np.array_equal(where(c), where(reference))


# -- SplitArray chunks -----------------------------------------------------------------------------

def _counting_splits(monkeypatch):
    """The split calls that SplitArray caches make (their count, a list one long per call)."""
    module = sys.modules[sp.SplitArray.__module__]
    calls, split = [], module.split
    monkeypatch.setattr(module, "split", lambda *args, **kwargs: calls.append(1) or split(*args, **kwargs))
    return calls


def test_split_array_chunks_split_once_across_products_after_persist(monkeypatch):
    a, b, A, B = _operands()
    S = sp.asarray(A, dtype="bf16x9").persist(scheduler="sync")
    calls = _counting_splits(monkeypatch)
    results = [sp.matmul(S, B).compute(scheduler="sync") for _ in range(3)]
    assert len(calls) == S.npartitions == 9
    assert all(type(r) is sp.SplitArray and r.dtype.name == "bf16x9" for r in results)
    assert all(np.array_equal(np.asarray(r), sp.matmul(A, B, dtype="bf16x9").compute()) for r in results)


def test_split_array_chunk_keeps_its_split_when_copied_to_another_worker(monkeypatch):
    chunk = sp.asarray(randn(16, 8), dtype="fp16x3")
    b = randn(8, 4)
    expected = chunk @ b
    calls = _counting_splits(monkeypatch)
    copy = pickle.loads(pickle.dumps(chunk))
    assert np.array_equal(np.asarray(copy @ b), np.asarray(expected)) and calls == []


def test_split_array_chunks_on_the_cluster_split_once_per_chunk(client):
    """Persisted on one worker and multiplied there three times: one split per chunk."""
    a, b, A, B = _operands()
    worker = sorted(client.scheduler_info()["workers"])[0]
    S = client.persist(sp.asarray(A, dtype="tf32x3"), workers=[worker])
    distributed.wait(S)
    client.run(_install_split_counter, workers=[worker])
    for _ in range(3):
        c = client.compute(sp.matmul(S, B), workers=[worker]).result()
    assert client.run(_split_count, workers=[worker])[worker] == S.npartitions
    assert np.array_equal(np.asarray(c), sp.matmul(A, B, dtype="tf32x3").compute())


def _install_split_counter():
    module = sys.modules[sp.SplitArray.__module__]
    split = module.split
    module.split_calls = []
    module.split = lambda *args, **kwargs: module.split_calls.append(1) or split(*args, **kwargs)


def _split_count():
    return len(sys.modules[sp.SplitArray.__module__].split_calls)


def test_split_array_chunks_add_reduce_and_rechunk():
    a = randn(6, 8)
    S = sp.asarray(da.from_array(a, chunks=3), dtype="bf16x9")
    assert S.dtype == sp.dtype("bf16x9") and np.dtype(S.dtype) == np.float32
    total = (S + S).rechunk(6).compute()
    assert type(total) is sp.SplitArray and np.array_equal(np.asarray(total), a + a)


def test_dask_array_times_split_array_gives_split_array_chunks():
    """SplitArray is a registered dask chunk type: dask, not SplitArray, handles the mixed operation."""
    a = randn(4, 6)
    product = np.multiply(da.from_array(a, chunks=2), sp.asarray(a, dtype="bf16x9"))
    assert isinstance(product, da.Array)
    assert np.array_equal(np.asarray(product.compute()), a * a)


# -- FFT -------------------------------------------------------------------------------------------

_FFTS = [(sp.fft.fft, {}), (sp.fft.ifft, {"n": 12, "norm": "ortho"}), (sp.fft.rfft, {"n": 15}),
         (sp.fft.irfft, {"n": 20}), (sp.fft.fft2, {"s": (6, 8)}), (sp.fft.ifft2, {}),
         (sp.fft.fftn, {"axes": (1, 2)}), (sp.fft.ifftn, {"s": (5, 9), "norm": "forward"})]


@pytest.mark.parametrize("function, options", _FFTS, ids=lambda p: getattr(p, "__name__", ""))
def test_every_fft_on_dask_transforms_each_block_as_numpy_input(client, function, options):
    x = randn(5, 7, 10) + 1j * randn(5, 7, 10)
    x = (x.real if function is sp.fft.rfft else x).astype(np.float32 if function is sp.fft.rfft else np.complex64)
    X = da.from_array(x, chunks=(2, 7, 10))
    whole = function(x, **options, dtype="tf32x3")
    y = function(X, **options, dtype="tf32x3")
    assert y.shape == whole.shape and y.dtype == whole.dtype
    blocks = [function(x[rows], **options, dtype="tf32x3") for rows in _slices(X.chunks[0])]
    assert np.array_equal(client.compute(y).result(), np.concatenate(blocks))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shape1, shape2, axes, chunks", [
    ((2, 600), (1, 33), 1, (1, 100)), ((2, 600), (2, 100), 1, (1, (100, 250, 250))),
    ((40, 50), (5, 7), None, (15, 20)), ((300,), (301,), 0, 300)])
def test_fftconvolve_on_dask_within_twice_float32_fftconvolve(mode, shape1, shape2, axes, chunks):
    """Chunked convolved axes run by overlap (one filter or one per row; 2-D, both axes chunked);
    a kernel longer than in1 along an axis that is one chunk runs as one transform."""
    in1, in2 = randn(*shape1), randn(*shape2)
    if mode == "valid" and shape2[-1] > shape1[-1]:
        return
    reference = scipy_signal.convolve(in1.astype(np.float64), in2.astype(np.float64), mode=mode, method="direct")
    if axes == 1:
        reference = np.stack([np.convolve(r1, r2, mode) for r1, r2 in zip(
            in1.astype(np.float64), np.broadcast_to(in2, (2, shape2[1])).astype(np.float64))])
    y = sp.fft.fftconvolve(da.from_array(in1, chunks=chunks), in2, mode=mode, axes=axes, dtype="bf16x6")
    y = y.compute(scheduler="sync")
    assert y.shape == reference.shape and y.dtype == np.float32
    error = np.linalg.norm(y - reference) / np.linalg.norm(reference)
    error_float32 = np.linalg.norm(scipy_signal.fftconvolve(in1, in2, mode=mode, axes=axes) - reference) / \
        np.linalg.norm(reference)
    assert error <= 2 * error_float32


# -- the scheme of a graph ------------------------------------------------------------------------

_REAL_INPUT = ("rfft", "ihfft", "rfft2", "rfftn", "fftconvolve")


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
@pytest.mark.parametrize("name", _TRANSFORMS + ("fftconvolve",))
def test_dask_graph_runs_the_default_scheme_it_was_built_under_regression(name, scheduler):
    """A dask fft built inside ``with sp.default_scheme("bf16"):`` ran, when computed outside the
    block, the default of the computing context (the outer one on the synchronous scheduler, the
    built-in one in worker threads and processes): the tasks resolved ``dtype=None`` themselves.
    Each block is now bit for bit the numpy call on it inside the block, and not the outer default's."""
    function = getattr(sp.fft, name)
    x = randn(4, 6, 8) if name in _REAL_INPUT else \
        (randn(4, 6, 8) + 1j * randn(4, 6, 8)).astype(np.complex64)
    args = (randn(1, 3, 3),) if name == "fftconvolve" else ()
    options = {"axes": (1, 2)} if name[-1] in "2n" or name == "fftconvolve" else {}
    X = da.from_array(x, chunks=(2, 6, 8))

    def blocks():
        return np.concatenate([function(x[rows], *args, **options) for rows in _slices(X.chunks[0])])

    with sp.default_scheme("bf16"):                     # outside: the fp32 class's bf16x6
        y, expected = function(X, *args, **options), blocks()
    assert np.array_equal(y.compute(scheduler=scheduler), expected) and not np.array_equal(expected, blocks())


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
@pytest.mark.parametrize("scheme, dtype", [("bf16", np.float32), ("ozaki2_int8x14", np.float64)])
def test_dask_matmul_and_asarray_run_the_default_scheme_they_were_built_under_regression(scheme, dtype, scheduler):
    """The same for ``sp.matmul`` (float32 and float64 defaults; one k-chunk, so each output block
    is ``sp.matmul`` of its blocks bit for bit) and the scheme of ``sp.asarray``'s SplitArray chunks."""
    a, b = randn(40, 30, dtype=dtype), randn(30, 20, dtype=dtype)
    A = da.from_array(a, chunks=(16, 30))

    def blocks():
        return np.concatenate([sp.matmul(a[rows], b) for rows in _slices(A.chunks[0])])

    with sp.default_scheme(scheme):
        graph, expected, S = sp.matmul(A, b), blocks(), sp.asarray(A) if dtype == np.float32 else None
    assert np.array_equal(graph.compute(scheduler=scheduler), expected) and not np.array_equal(expected, blocks())
    if S is not None:
        assert S.dtype == scheme and S.compute(scheduler=scheduler).dtype == scheme


# -- errors ----------------------------------------------------------------------------------------

class ndarray(np.ndarray):
    """Stands for cupy's array type (its module is cupy's), where cupy is absent."""


ndarray.__module__ = "cupy._core.core"


def _fake_cupy(x, chunks):
    return da.from_array(x, chunks=chunks, meta=np.empty((0,) * x.ndim, x.dtype).view(ndarray))


def test_matmul_rejects_numpy_and_cupy_chunks_mixed():
    a, b, A, B = _operands()
    with pytest.raises(ValueError, match=r"^matmul: a has numpy chunks \(cpu\) and b has cupy chunks "
                                         r"\(gpu\); expected chunks on one device"):
        sp.matmul(A, _fake_cupy(b, 50))


def test_matmul_rejects_unknown_chunk_types():
    a, b, A, B = _operands()
    with pytest.raises(TypeError, match=r"^matmul: b has chunks of type numpy\.ma\.MaskedArray; expected "
                                        r"numpy, cupy or SplitArray chunks$"):
        sp.matmul(A, da.ma.masked_array(B))


@pytest.mark.parametrize("make, error, message", [
    (lambda A, B: sp.matmul(A[None], B), ValueError,
     r"^matmul: dask operands must be 2-D, \(m, k\) and \(k, n\); got a of shape \(1, 70, 150\)"),
    (lambda A, B: sp.matmul(A, B[1:]), ValueError,
     r"^matmul: inner dimensions differ: a has shape \(70, 150\), b has shape \(149, 40\)$"),
    (lambda A, B: sp.matmul(A.astype(np.float64), B, dtype="tf32x3"), TypeError,
     r"^matmul: a has dtype float64; scheme 'tf32x3' accepts float32, float16 or bfloat16"),
    (lambda A, B: sp.matmul(A, B, out=np.empty((70, 40), np.float32)), TypeError,
     r"^matmul: out is not supported for dask operands; expected out=None$"),
    (lambda A, B: sp.matmul(A, [[1.0]]), TypeError, r"^matmul: b must be a dask, numpy or cupy array, got list$"),
    (lambda A, B: sp.matmul(A, B, dtype="tf32x4"), ValueError, r"^unknown split dtype 'tf32x4'"),
    (lambda A, B: sp.matmul(sp.asarray(A), B, dtype="ozaki2_int8x14"), TypeError,
     r"^matmul: a has dtype float32; scheme 'ozaki2_int8x14' accepts float64"),
])
def test_matmul_on_dask_rejects_bad_input(make, error, message):
    a, b, A, B = _operands()
    with pytest.raises(error, match=message):
        make(A, B)


@pytest.mark.parametrize("function", [f for f, _ in _FFTS], ids=lambda f: f.__name__)
def test_every_fft_rejects_a_chunked_transformed_axis(function):
    """The 1-D family along axis 0 (chunks (2, 2)), the n-D family over the last axes (chunks (4, 4))."""
    one_d = function in (sp.fft.fft, sp.fft.ifft, sp.fft.rfft, sp.fft.irfft)
    axis, chunks = (0, (2, 2)) if one_d else (1, (4, 4))
    x = da.from_array(np.zeros((4, 8), np.float32 if function is sp.fft.rfft else np.complex64),
                      chunks=(2, 8) if one_d else (4, 4))
    kwargs = {"axis": 0} if one_d else {"axes": (0, 1)} if function in (sp.fft.fftn, sp.fft.ifftn) else {}
    with pytest.raises(ValueError, match=re.escape(
            f"{function.__name__}: a has 2 chunks along axis {axis} ({chunks}); a transformed axis must be "
            f"one chunk (rechunk, e.g. a.rechunk({{{axis}: -1}}))")):
        function(x, **kwargs)


def test_dask_matmul_rejects_out_with_the_type_fft_and_tracked_arrays_use_regression():
    """``out=`` with dask operands raised ValueError from ``matmul`` and TypeError from every FFT
    (and from tracked arrays): the same mistake now gets the same type."""
    a, b, A, B = _operands()
    out = np.empty((A.shape[0], B.shape[1]), np.float32)
    with pytest.raises(TypeError, match=r"^matmul: out is not supported for dask operands; expected out=None$"):
        sp.matmul(A, B, out=out)
    with pytest.raises(TypeError, match=r"^fft: out is not supported for dask arrays; expected out=None$"):
        sp.fft.fft(A.rechunk({1: -1}), out=np.empty(A.shape, np.complex64))


def test_fft_on_dask_rejects_out_and_checks_like_numpy_input():
    x = da.from_array(np.zeros((4, 8), np.complex64), chunks=(2, 8))
    with pytest.raises(TypeError, match=r"^fft: out is not supported for dask arrays; expected out=None$"):
        sp.fft.fft(x, out=np.empty((4, 8), np.complex64))
    with pytest.raises(TypeError, match=r"^fft: a has dtype float64"):
        sp.fft.fft(x.astype(np.float64))
    with pytest.raises(ValueError, match=r"^Invalid norm value 'sideways'"):
        sp.fft.fft(x, norm="sideways")


def test_fftconvolve_rejects_a_kernel_longer_than_a_chunk():
    x = da.from_array(np.zeros(100, np.float32), chunks=(40, 40, 20))
    with pytest.raises(ValueError, match=re.escape(
            "fftconvolve: in2 has length 21 along axis 0, longer than in1's shortest chunk there (20); a "
            "chunked axis is convolved by overlap only with a kernel no longer than every chunk")):
        sp.fft.fftconvolve(x, np.ones(21, np.float32))


def test_fftconvolve_rejects_mixed_devices_and_a_dask_kernel():
    x = da.from_array(np.zeros(100, np.float32), chunks=50)
    with pytest.raises(ValueError, match=r"^fftconvolve: in1 has cupy chunks \(gpu\) and in2 is a numpy array; "
                                         r"expected the kernel on the chunks' device$"):
        sp.fft.fftconvolve(_fake_cupy(np.zeros(100, np.float32), 50), np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"^fftconvolve: with dask arrays, in1 must be the dask array and in2 "
                                        r"\(the kernel\) a numpy or cupy array; got Array and Array$"):
        sp.fft.fftconvolve(x, x[:3])


# -- bound and accuracy.check ----------------------------------------------------------------------

@pytest.mark.parametrize("chunks, message", [
    ((50, 60), r"^gemm_bound: chunks \(50, 60\) sum to 110, but the inner dimension is k = 150"),
    ((50, -1, 101), r"^gemm_bound: chunks must be a positive int, a tuple of k-chunk sizes or a dask chunks"),
    (0, r"^gemm_bound: chunks must be a positive int")])
def test_chunked_bound_rejects_chunks_that_do_not_cover_k(chunks, message):
    a, b, A, B = _operands()
    with pytest.raises(ValueError, match=message):
        gemm_bound(a, b, "bf16x9", chunks=chunks)


def test_chunked_bound_takes_int_and_dask_chunks_alike():
    a, b, A, B = _operands()
    same = gemm_bound(a, b, "tf32x3", chunks=(64, 64, 22))
    assert np.array_equal(gemm_bound(a, b, "tf32x3", chunks=64), same)
    assert np.array_equal(gemm_bound(a, b, "tf32x3", chunks=((70,), (64, 64, 22))), same)


def test_check_of_dask_operands_uses_sampled_exact_entries(monkeypatch):
    a, b = randn(100, 300), randn(300, 90)
    A, B = da.from_array(a, chunks=(50, 100)), da.from_array(b, chunks=(100, 45))
    shapes = []
    exact = accuracy.measure.exact_matmul
    monkeypatch.setattr(accuracy.measure, "exact_matmul", lambda x, y: shapes.append((x.shape, y.shape)) or exact(x, y))
    result = accuracy.check(A, B, ["bf16x9", "tf32", "fp16x3"])
    assert shapes == [((32, 300), (300, 32))]
    assert [r.scheme for r in result.rows] == ["bf16x9", "tf32", "fp16x3"]
    assert all(r.ratio <= 1 for r in result.rows) and result.shape == ((100, 300), (300, 90))
    assert result.rows[1].normwise > 100 * result.rows[0].normwise       # tf32 is no fp32-class scheme


# -- docs/dask.md ----------------------------------------------------------------------------------

def test_docs_dask_example_runs():
    page = (pathlib.Path(__file__).parents[1] / "docs" / "dask.md").read_text()
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    assert len(code.strip().splitlines()) <= 10
    exec(compile(code, "docs/dask.md", "exec"), {})


# -- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fp16x3", "bf16x9", "ozaki2_int8x14"])
def test_cupy_chunks_within_chunked_gpu_bound_and_split_array_chunks_agree(name):
    import cupy
    target = sp.dtype(name).target
    a, b, A, B = _operands(target)
    A, B = A.map_blocks(cupy.asarray), B.map_blocks(cupy.asarray)
    C = sp.matmul(A, B, dtype=name)
    c = cupy.asnumpy(C.compute(scheduler="sync"))
    assert np.all(np.abs(c - exact_matmul(a, b)) <= gemm_bound(a, b, name, "gpu", chunks=A.chunks))
    assert np.array_equal(cupy.asnumpy(C.compute(scheduler="threads")), c)
    if target == "float32":
        S = sp.asarray(A, dtype=name).persist(scheduler="sync")
        assert np.array_equal(sp.matmul(S, B).compute(scheduler="sync").get(), c)


@pytest.fixture(scope="module")
def gpu_client():
    """A one-worker cluster whose worker owns GPU 0: dask-cuda's LocalCUDACluster where it imports,
    else a distributed worker process (not the default client: the CPU tests' sync computes stay)."""
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        from dask_cuda import LocalCUDACluster
        cluster = LocalCUDACluster(n_workers=1, threads_per_worker=1, dashboard_address=":0",
                                   silence_logs=logging.CRITICAL)
    except ImportError:
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                           dashboard_address=":0", silence_logs=logging.CRITICAL)
    with cluster, distributed.Client(cluster, set_as_default=False) as c:
        yield c


def _on_gpu(x, chunks):
    """numpy ``x`` as a dask array of cupy chunks ``chunks``, made on the worker that runs them."""
    import cupy
    return da.from_array(x, chunks=chunks).map_blocks(cupy.asarray)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fp16x3", "tf32x3", "bf16x9"])
def test_gpu_worker_product_is_one_gpu_matmul_where_k_is_one_chunk(gpu_client, name):
    """cupy chunks on the GPU worker, k one chunk: each output block is one block product, the
    one-GPU sp.matmul's entries bit for bit (both run the same engine at these shapes)."""
    import cupy
    a, b = randn(256, 384), randn(384, 192)
    c = gpu_client.compute(sp.matmul(_on_gpu(a, (128, 384)), _on_gpu(b, (384, 96)), dtype=name)).result()
    assert isinstance(c, cupy.ndarray)
    assert np.array_equal(c.get(), sp.matmul(cupy.asarray(a), cupy.asarray(b), dtype=name).get())


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fp16x3", "bf16x9", "ozaki2_int8x14"])
def test_gpu_worker_product_with_chunked_k_within_the_chunked_bound_and_sampled_exact(gpu_client, name):
    """k in three chunks: within the chunked GPU bound everywhere, accuracy.check's sampled exact
    entries within it too, and the threaded scheduler's result equal to the worker's."""
    import dask
    target = sp.dtype(name).target
    a, b = randn(200, 300, dtype=target), randn(300, 120, dtype=target)
    A, B = _on_gpu(a, (100, (128, 100, 72))), _on_gpu(b, ((128, 100, 72), 64))
    c = gpu_client.compute(sp.matmul(A, B, dtype=name)).result().get()
    assert np.all(np.abs(c - exact_matmul(a, b)) <= gemm_bound(a, b, name, "gpu", chunks=A.chunks))
    with dask.config.set(scheduler=gpu_client.get):
        row = accuracy.check(A, B, [name], engine="gpu").rows[0]
    assert row.ratio <= 1
    assert np.array_equal(sp.matmul(A, B, dtype=name).compute(scheduler="threads").get(), c)


@pytest.mark.gpu
def test_gpu_worker_fft_transforms_each_block_as_a_cupy_array(gpu_client):
    import cupy
    x = (randn(96, 256) + 1j * randn(96, 256)).astype(np.complex64)
    y = gpu_client.compute(sp.fft.fft(_on_gpu(x, (32, 256)), dtype="bf16x6")).result().get()
    blocks = [sp.fft.fft(cupy.asarray(x[rows]), dtype="bf16x6").get() for rows in _slices((32, 32, 32))]
    assert np.array_equal(y, np.concatenate(blocks))
    exact = np.fft.fft(x.astype(np.complex128))
    errors = np.linalg.norm(y - exact, axis=-1) / np.linalg.norm(exact, axis=-1)
    assert np.all(errors <= accuracy.fft_bound(x, "bf16x6", "gpu"))


@pytest.mark.gpu
def test_gpu_block_values_are_read_without_the_cuda_array_interface():
    """A block product's SplitArray result is read as its value: consuming its
    ``__cuda_array_interface__`` would mark it exported and make cupy wait for the device."""
    import cupy
    from splitprec import dask as dask_layer
    x = sp.asarray(cupy.ones((4, 4), np.float32), dtype="fp16x3")
    assert dask_layer._values(x) is x._value and not x._storage.exported


@pytest.mark.gpu
def test_gpu_chunks_get_the_cpu_chunks_errors():
    """Each bad call on cupy chunks raises what it raises on numpy chunks, word for word."""
    x = randn(8, 16)
    calls = [lambda X: sp.fft.fft(X),                                        # a chunked transformed axis
             lambda X: sp.fft.fft(X.rechunk({1: -1}), dtype="ozaki2_int8x14"),  # a scheme the FFT lacks
             lambda X: sp.matmul(X, X.T, dtype="int4x2"),                      # no such scheme
             lambda X: sp.matmul(X.astype(np.float64), X.T, dtype="fp16x3"),   # float64 in a float32 scheme
             lambda X: sp.matmul(X, X[:, :3]),                                 # inner dimensions differ
             lambda X: sp.matmul(X, X.T, out=X)]
    for call in calls:
        raised = []
        for X in (da.from_array(x, chunks=(4, 8)), _on_gpu(x, (4, 8))):
            with pytest.raises((TypeError, ValueError)) as info:
                call(X)
            raised.append((info.type, str(info.value)))
        assert raised[0] == raised[1]
    with pytest.raises(ValueError, match=r"^matmul: a has numpy chunks \(cpu\) and b has cupy chunks \(gpu\); "
                                         r"expected chunks on one device"):
        sp.matmul(da.from_array(x, chunks=4), _on_gpu(x.T.copy(), 4))
    with pytest.raises(ValueError, match=r"^fftconvolve: in1 has cupy chunks \(gpu\) and in2 is a numpy array"):
        sp.fft.fftconvolve(_on_gpu(x, 4), np.ones(3, np.float32))


# -- a lost worker (last: it restarts a worker of the module's cluster) ----------------------------

def _exit_soon():
    """End this worker process a moment after returning (its nanny starts a new one)."""
    threading.Timer(0.01, os._exit, (1,)).start()


def _slowly(block):
    time.sleep(0.05)
    return block


def test_matmul_survives_a_lost_worker_bit_identical(client):
    """One worker process dies (os._exit) while the product runs, once it holds results; its tasks
    run again and the result is bit-identical to an undisturbed run."""
    a, b = randn(128, 256), randn(256, 64)
    A, B = da.from_array(a, chunks=64), da.from_array(b, chunks=64)
    expected = sp.matmul(A, B, dtype="bf16x9").compute(scheduler="sync")
    future = client.compute(sp.matmul(A.map_blocks(_slowly), B, dtype="bf16x9"))
    deadline = time.monotonic() + 30
    while True:
        held = client.run_on_scheduler(lambda dask_scheduler: {
            w: len(s.has_what) for w, s in dask_scheduler.workers.items()})
        victim = max(held, key=held.get)
        if held[victim] >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert held[victim] >= 2 and not future.done()
    client.run(_exit_soon, workers=[victim])
    assert np.array_equal(future.result(timeout=60), expected)
    assert victim not in client.scheduler_info()["workers"]
