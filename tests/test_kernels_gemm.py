"""The GPU GEMM kernels (kernels/split_terms_sm80.cu, gemm_split_sm80.cu, gemm_split_sm90.cu,
gemm_fused_sm80.cu) through splitprec.engines.cuda.

Without a GPU: every kernel instantiation compiles for sm_90a and sm_80 through NVRTC from the pip
wheels. On a GPU (marked ``gpu``): the split kernel reproduces ``splitprec.split`` bit for bit, and
every scheme's product, on every GPU engine, lies within ``accuracy.bounds.gemm_bound(...,
engine="gpu")`` of the exact product, for odd, batched, broadcast, strided and empty shapes, with
NaN/inf where the CPU engine puts them.
"""
import os

import numpy as np
import pytest

import splitprec as sp
from splitprec.accuracy.bounds import gemm_bound
from splitprec.accuracy.reference import exact_matmul
from splitprec.engines.cuda import (gemm as cuda_gemm, gemm_cublas, gemm_fused, gemm_sm80, gemm_sm90, launch,
                                   split as cuda_split)
from splitprec.split import split

ALL_DTYPES = sp.dtypes("float32")
ENGINES = ("sm90", "sm80", "cublas", "fused")
rng = np.random.default_rng(5)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def _nvrtc_compile(filename, expressions, arch, appended=""):
    """(result code, log) of compiling ``expressions`` of ``kernels/<filename>`` (followed by the
    source text ``appended``) for ``sm_<arch>``."""
    from cuda.bindings import nvrtc
    import nvidia
    include = os.path.join(list(nvidia.__path__)[0], "cu13", "include")
    text = launch.source(filename) + appended
    _, program = nvrtc.nvrtcCreateProgram(text.encode(), filename.encode(), 0, [], [])
    for expression in expressions:
        nvrtc.nvrtcAddNameExpression(program, expression.encode())
    options = [launch.arch_option(arch).encode(), *(o.encode() for o in launch.OPTIONS),
               f"-I{include}".encode()]
    result, = nvrtc.nvrtcCompileProgram(program, len(options), options)
    _, size = nvrtc.nvrtcGetProgramLogSize(program)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(program, log)
    nvrtc.nvrtcDestroyProgram(program)
    return result, log.decode(errors="replace")


@pytest.mark.nvrtc
@pytest.mark.parametrize("filename, arch", [
    (filename, arch) for filename in cuda_gemm.instantiations() for arch in ("90", "80")
    if arch == "90" or filename != gemm_sm90.GEMM90_FILE])                                # wgmma: sm_90a only
def test_every_kernel_instantiation_compiles_with_nvrtc(filename, arch):
    from cuda.bindings import nvrtc     # the test extra installs it: a missing wheel fails here
    expressions = cuda_gemm.instantiations()[filename]
    result, log = _nvrtc_compile(filename, expressions, arch)
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, log


def test_instantiations_cover_every_scheme():
    listed = cuda_gemm.instantiations()
    for name in ALL_DTYPES:
        d = sp.dtype(name)
        for tile in (cuda_gemm.TILES.get(name, cuda_gemm.DEFAULT_TILE), cuda_gemm.SMALL_TILE):
            assert gemm_sm80.gemm_expression(d, tile) in listed[gemm_sm80.GEMM_FILE]
        assert gemm_sm90.gemm90_expression(d) in listed[gemm_sm90.GEMM90_FILE]


def test_cublas_groups_small_products_by_i_plus_j():
    groups = {name: gemm_cublas._diagonals(sp.dtype(name)) for name in ("bf16", "tf32x3", "fp16x3", "bf16x6", "bf16x9")}
    assert groups == {"bf16": (), "tf32x3": ((1, 0, 2),), "fp16x3": ((1, 0, 2),),
                      "bf16x6": ((2, 0, 3), (1, 0, 2)), "bf16x9": ((4, 2, 1), (3, 1, 2), (2, 0, 3), (1, 0, 2))}


@pytest.mark.parametrize("hopper", [False, True])
def test_auto_engine_choices(hopper, monkeypatch):
    monkeypatch.setattr(launch, "hopper", lambda: hopper)
    monkeypatch.setattr(launch, "multiprocessors", lambda: 132)
    d, two = sp.dtype("bf16x6"), sp.dtype("fp16x3")
    large = cuda_gemm.CUBLAS_MIN_WORK
    assert cuda_gemm.auto_engine(d, 2048, 2048, large // 2048 ** 2, 1) == "cublas"
    assert cuda_gemm.auto_engine(d, 65, 64, 64, large // 64 ** 3 + 1) == "cublas"
    fused = cuda_gemm.FUSED["max_mn"], cuda_gemm.FUSED["max_k"]
    assert cuda_gemm.auto_engine(d, fused[0], fused[0], fused[1], large) == "fused"      # small products
    assert cuda_gemm.auto_engine(d, fused[0], fused[0], fused[1] + 1, 1) == "sm80"
    assert cuda_gemm.auto_engine(d, 64, 64, 64, large // 64 ** 3 + 1) == "sm80"          # small outputs
    assert cuda_gemm.auto_engine(d, 128, 8192, 8192, 1) == ("sm90" if hopper else "cublas")   # 64 tiles
    assert cuda_gemm.auto_engine(d, 2048, 2048, 64, 1) == ("sm90" if hopper else "sm80")
    assert cuda_gemm.auto_engine(two, 2048, 2048, large // 2048 ** 2, 1) == ("sm90" if hopper else "cublas")
    three = sp.dtype("bf16x9")
    assert cuda_gemm.auto_engine(three, 2048, 2048, large // 2048 ** 2, 1) == ("sm90" if hopper else "cublas")
    assert cuda_gemm.auto_engine(sp.dtype("bf16"), 2048, 2048, 64, 1) == "sm80"
    assert cuda_gemm.auto_tile(d, 64, 3) == cuda_gemm.SMALL_TILE and cuda_gemm.auto_tile(d, 64, 65) == cuda_gemm.TILES["bf16x6"]


def test_short_products_reserve_only_the_stages_they_fill():
    d = sp.dtype("fp16x3")
    tile = cuda_gemm.SMALL_TILE
    one_stage = gemm_sm80._shared_bytes(d, tile) // tile.stages
    assert gemm_sm80._shared_bytes(d, tile, 1) == one_stage
    assert gemm_sm80._shared_bytes(d, tile, 100) == gemm_sm80._shared_bytes(d, tile) == tile.stages * one_stage


def test_gpu_bound_defaults_to_the_engines_longest_hi_block():
    a, b = randn(8, 3000), randn(3000, 5)
    for name in ("tf32x3", "bf16x9", "fp16x3"):
        d = sp.dtype(name)
        assert sp.linalg.gpu_k_block(name, 3000) == gemm_cublas.cublas_chunk(d, 3000)
        np.testing.assert_array_equal(gemm_bound(a, b, name, engine="gpu"),
                                      gemm_bound(a, b, name, engine="gpu", k_block=sp.linalg.gpu_k_block(d, 3000)))
        assert (gemm_bound(a, b, name, engine="gpu") > gemm_bound(a, b, name, engine="gpu", k_block=32)).all()


@pytest.mark.parametrize("k, chunks", [(1, (32, 64, 64)), (1000, (128, 256, 256)), (1024, (128, 512, 256)),
                                       (8192, (512, 1024, 1024)), (16384, (512, 2048, 1024))])
def test_cublas_chunk_grows_like_sqrt_k_from_the_kernels_block(k, chunks):
    assert tuple(gemm_cublas.cublas_chunk(sp.dtype(name), k) for name in ("tf32x3", "bf16x6", "fp16x3")) == chunks
    for name in ("tf32", "bf16", "fp16"):                   # one part: one chain over all of k
        d = sp.dtype(name)
        assert gemm_cublas.cublas_chunk(d, k) >= cuda_split.padded_k(k, d)


def _skip_without(engine):
    import cupy
    if engine == "sm90" and cupy.cuda.Device().compute_capability != "90":
        pytest.skip("gemm_split_sm90 needs compute capability 9.0")


def _k_for(engine, k):
    """``k``, or for the fused engine at most the k its panels hold."""
    return min(k, gemm_fused.MAX_K) if engine == "fused" else k


def _within_gpu_bound(c, a, b, name):
    """Assert |c - exact| <= gemm_bound(engine="gpu") entrywise; NaN/inf exactly where exact has them."""
    exact = exact_matmul(a, b)
    bound = gemm_bound(a, b, name, engine="gpu")
    c = np.asarray(c, np.float64)
    finite = np.isfinite(exact)
    np.testing.assert_array_equal(np.isnan(c), np.isnan(exact))
    np.testing.assert_array_equal(c[~finite & ~np.isnan(exact)], exact[~finite & ~np.isnan(exact)])
    error = np.abs(c - exact)[finite]
    assert (error <= bound[finite]).all(), (name, float((error / bound[finite]).max()))


@pytest.mark.gpu
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ALL_DTYPES)
@pytest.mark.parametrize("m, k, n", [(67, 300, 45), (128, 64, 64), (1, 1000, 3), (130, 33, 70)])
def test_gpu_matmul_error_within_bound(m, k, n, name, engine):
    import cupy
    _skip_without(engine)
    k = _k_for(engine, k)
    a, b = randn(m, k), randn(k, n)
    c = cuda_gemm.matmul(cupy.asarray(a), cupy.asarray(b), sp.dtype(name), engine=engine)
    _within_gpu_bound(cupy.asnumpy(c), a, b, name)


@pytest.mark.gpu
@pytest.mark.parametrize("min_work", [0, 2 ** 62], ids=["cublas", "kernels"])
@pytest.mark.parametrize("name", ALL_DTYPES)
def test_gpu_matmul_edge_values_within_bound(name, min_work, monkeypatch):
    """Huge, subnormal, zero and tie rows through ``sp.matmul`` on each engine "auto" may take:
    subnormal results survive the cuBLAS epilogue's additions and the pow2 unscaling."""
    import cupy
    monkeypatch.setattr(cuda_gemm, "CUBLAS_MIN_WORK", min_work)
    a, b = _edge_values((40, 300)), randn(300, 36)
    b[:, 1] *= np.float32(2.0 ** -100)                     # subnormal results from normal inputs
    c = sp.matmul(cupy.asarray(a), cupy.asarray(b), dtype=name)
    _within_gpu_bound(cupy.asnumpy(c), a, b, name)


@pytest.mark.gpu
@pytest.mark.parametrize("engine", ENGINES)
def test_gpu_matmul_runs_on_the_current_stream(engine):
    import cupy
    _skip_without(engine)
    k = _k_for(engine, 500)
    a, b = randn(300, k), randn(k, 200)
    expected = cupy.asnumpy(cuda_gemm.matmul(cupy.asarray(a), cupy.asarray(b), sp.dtype("bf16x6"), engine=engine))
    with cupy.cuda.Stream(non_blocking=True) as stream:
        a_gpu, b_gpu = cupy.asarray(a), cupy.asarray(b)
        c = cuda_gemm.matmul(a_gpu, b_gpu, sp.dtype("bf16x6"), engine=engine)
        host = c.get(stream=stream)
    np.testing.assert_array_equal(host, expected)


@pytest.mark.gpu
@pytest.mark.parametrize("engine", ENGINES)
def test_gpu_checked_matmul_flags_lines_beyond_the_grid_z_limit(engine):
    """A batch longer than one launch's grid z: the split's second launch flags its own lines."""
    import cupy
    _skip_without(engine)
    a, b = randn(66000, 2, 3), randn(3, 2)
    a[65600, 1, 2] = np.nan
    c = cupy.asnumpy(cuda_gemm.matmul(cupy.asarray(a), cupy.asarray(b), sp.dtype("fp16x3"), engine=engine, checked=True))
    nan = np.zeros(c.shape, bool)
    nan[65600, 1] = True
    np.testing.assert_array_equal(np.isnan(c), nan)


@pytest.mark.gpu
@pytest.mark.parametrize("name, engine", [("fp16x3", e) for e in ENGINES] + [("ozaki2_int8x14", None)])
def test_public_gpu_matmul_returns_without_waiting_for_the_device(name, engine, monkeypatch):
    """``sp.matmul`` queues its work like ``cupy.matmul``: it returns while the stream is still busy
    with a kernel queued before it, and its result is right once the stream is done."""
    import cupy
    _skip_without(engine)
    monkeypatch.setattr(cuda_gemm, "auto_engine", lambda *shape: engine)
    sleep = cupy.RawKernel(r'''extern "C" __global__ void sleep_ms(int ms) {
        for (int i = 0; i < ms; ++i) __nanosleep(1000000); }''', "sleep_ms")
    k = _k_for(engine, 500)
    a, b = randn(300, k), randn(k, 200)
    if sp.dtype(name).target == "float64":
        a, b = a.astype(np.float64), b.astype(np.float64)
    a[3, 4] = np.nan
    expected = cupy.asnumpy(sp.matmul(cupy.asarray(a), cupy.asarray(b), dtype=name))
    with cupy.cuda.Stream(non_blocking=True) as stream:
        a_gpu, b_gpu = cupy.asarray(a), cupy.asarray(b)
        stream.synchronize()
        sleep((1,), (1,), (np.int32(1000),))
        c = sp.matmul(a_gpu, b_gpu, dtype=name)
        assert not stream.done
        host = c.get(stream=stream)
    np.testing.assert_array_equal(host, expected)
    assert np.isnan(host[3]).all() and np.isfinite(np.delete(host, 3, axis=0)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["bf16", "tf32x3", "bf16x9", "fp16x3"])
def test_cublas_engine_many_short_chunks_within_bound(name):
    import cupy
    a, b = randn(2, 67, 700), randn(2, 700, 45)
    c = cuda_gemm.matmul(cupy.asarray(a), cupy.asarray(b), sp.dtype(name), engine="cublas", chunk=128)
    _within_gpu_bound(cupy.asnumpy(c), a, b, name)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ALL_DTYPES)
def test_gpu_matmul_agrees_with_cpu_engine(name):
    import cupy
    a, b = randn(96, 520), randn(520, 80)
    c_gpu = cupy.asnumpy(sp.matmul(cupy.asarray(a), cupy.asarray(b), dtype=name))
    c_cpu = sp.matmul(a, b, dtype=name)
    slack = gemm_bound(a, b, name, engine="gpu") + gemm_bound(a, b, name, engine="cpu")
    assert (np.abs(c_gpu.astype(np.float64) - c_cpu) <= slack).all()


def _edge_values(shape):
    """N(0,1) with rows of huge, tiny (subnormal) and zero values, and values on rounding ties."""
    x = randn(*shape)
    x[..., 0, :] = np.clip(x[..., 0, :], -4, 4) * np.float32(3e38 / 4)   # huge, never past float32's max
    x[..., 1, :] *= np.float32(1e-39)
    x[..., 2, :] = 0
    x[..., 3, :] = np.float32(1 + 2.0 ** -8)          # a bf16 tie
    x[..., 4, :] = np.finfo(np.float32).max
    return x


def test_split_tiles_fill_the_idle_sms_of_the_last_wave():
    assert gemm_sm90.split_tiles(4096, 8, 1, 132) == (4092, 8)          # n = 8192: 4 tiles in 8 pieces
    assert gemm_sm90.split_tiles(64, 8, 1, 132) == (0, 2)               # fewer tiles than SMs
    assert gemm_sm90.split_tiles(256, 8, 1, 132) == (256, 1)            # a last wave of 124: no idle SMs to fill
    assert gemm_sm90.split_tiles(4096, 1, 1, 132) == (4096, 1)          # one chunk of k: nothing to split
    assert gemm_sm90.split_tiles(4096, 8, 2, 132) == (4096, 1)          # batches are not split


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fp16x3", "tf32x3", "bf16x6", "bf16x9"])
def test_sm90_split_tiles_within_bound(name):
    """A last wave of three tiles, and a grid of three tiles with huge and subnormal rows, each tile
    run as pieces over whole k-chunks and added by gemm_split_sm90_pieces."""
    import cupy
    _skip_without("sm90")
    d, k = sp.dtype(name), 2048
    chunks = -(-cuda_split.padded_k(k, d) // gemm_cublas.cublas_chunk(d, k))
    sms = launch.multiprocessors()
    assert gemm_sm90.split_tiles(sms + 3, chunks, 1, sms)[1] > 1 and gemm_sm90.split_tiles(3, chunks, 1, sms)[1] > 1
    a, b = randn(128, k), randn(k, 128 * (sms + 3))
    c = cupy.asnumpy(cuda_gemm.matmul(cupy.asarray(a), cupy.asarray(b), d, engine="sm90"))
    _within_gpu_bound(c[:, -512:], a, b[:, -512:], name)        # three split tiles and one whole one
    a, b = _edge_values((100, k)), randn(k, 300)                # checked: overflowed entries recomputed
    c = cupy.asnumpy(cuda_gemm.matmul(cupy.asarray(a), cupy.asarray(b), d, engine="sm90", checked=True))
    _within_gpu_bound(c, a, b, name)


def _as_kernel_layout(stacked, terms, transpose):
    """cuBLAS engine parts (batch, rows, terms * K'), B's last to first, as (terms, batch, rows, K')."""
    batch, rows, width = stacked.shape
    parts = np.moveaxis(stacked.reshape(batch, rows, terms, width // terms), 2, 0)
    return parts[::-1] if transpose else parts


def _on_device(x, offset):
    """cupy copy of ``x`` starting ``offset`` float32 past an allocation's (16-byte aligned) start."""
    import cupy
    return cupy.asarray(np.concatenate([np.zeros(offset, np.float32), x.ravel()]))[offset:].reshape(x.shape)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ALL_DTYPES)
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("layout", ["kernels", "stacked"])
@pytest.mark.parametrize("shape, offset", [((2, 37, 45), 0), ((3, 70, 64), 0), ((3, 132, 260), 0), ((3, 132, 260), 1)],
                         ids=["odd", "one-tile-k", "aligned", "misaligned"])   # scalar, 16-byte, 16-byte, scalar loads
def test_split_kernel_matches_split(name, transpose, layout, shape, offset):
    """Parts and pow2 exponents bit for bit; with K within one split tile ("odd", "one-tile-k") the
    split kernel finds the exponents itself."""
    import cupy
    d = sp.dtype(name)
    x = _edge_values(shape)
    x = np.swapaxes(x, -1, -2).copy() if transpose else x   # the edge rows become edge columns of B
    pad = cuda_split.padded_k(x.shape[-2] if transpose else x.shape[-1], d)
    splitter = cuda_split.split_operand if layout == "kernels" else cuda_split.split_stacked
    op = splitter(_on_device(x, offset), d, transpose=transpose, pad=pad)
    ref = split(x, d, axis=-2 if transpose else -1)
    parts = cupy.asnumpy(op.parts)
    if layout == "stacked":
        parts = _as_kernel_layout(parts, d.terms, transpose)
    if d.base == "bf16":
        parts = (parts.astype(np.uint32) << 16).view(np.float32)
    elif d.base == "fp16":
        parts = parts.view(np.float16).astype(np.float32)
    for t in range(d.terms):
        expected = np.swapaxes(ref.terms[t], -1, -2) if transpose else ref.terms[t]
        k = expected.shape[-1]
        np.testing.assert_array_equal(parts[t, ..., :k].view(np.uint32), expected.view(np.uint32))
        assert not parts[t, ..., k:].any()
    if ref.exponent is not None:
        np.testing.assert_array_equal(cupy.asnumpy(op.exponent), ref.exponent.reshape(op.exponent.shape))


@pytest.mark.gpu
@pytest.mark.parametrize("splitter", ["split_operand", "split_stacked"])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("name, cols", [("bf16x6", 40), ("fp16x3", 40), ("tf32x3", 43)])
def test_split_kernel_reports_peak_and_nonfinite_lines_and_zeroes_nonfinite(splitter, transpose, name, cols):
    import cupy
    d = sp.dtype(name)
    x = randn(3, 70, cols)
    x[1, 5, 7] = np.float32(-3e38)
    lines_shape = (3, cols if transpose else 70)
    words = cupy.zeros(1 + lines_shape[0] * lines_shape[1], np.uint32)      # the peak, then the lines
    peak, lines = words[:1], words[1:].reshape(lines_shape)
    pad = cuda_split.padded_k(x.shape[-2] if transpose else x.shape[-1], d)
    getattr(cuda_split, splitter)(cupy.asarray(x), d, transpose=transpose, pad=pad, report=(words, 0, 1))
    assert int(peak.get()[0]) == np.float32(3e38).view(np.uint32)
    assert not lines.any()
    x[2, 9, 1], x[0, 0, 0], x[0, 69, cols - 1] = np.nan, -np.inf, np.inf
    clean = np.where(np.isfinite(x), x, np.float32(0))
    peak[...] = 0
    op = getattr(cuda_split, splitter)(cupy.asarray(x), d, transpose=transpose, pad=pad, report=(words, 0, 1))
    ref = getattr(cuda_split, splitter)(cupy.asarray(clean), d, transpose=transpose, pad=pad)
    assert int(peak.get()[0]) > 0x7F800000                      # a NaN's bits: the largest
    expected = np.zeros(lines_shape, bool)
    for z, r, c in ((2, 9, 1), (0, 0, 0), (0, 69, cols - 1)):
        expected[z, c if transpose else r] = True
    np.testing.assert_array_equal(cupy.asnumpy(lines) != 0, expected)
    cupy.testing.assert_array_equal(op.parts, ref.parts)
    if d.scaling == "pow2":                                     # NaN/inf take no part in the exponents
        cupy.testing.assert_array_equal(op.exponent, ref.exponent)


@pytest.mark.gpu
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["fp16x3", "bf16x6", "tf32x3"])
def test_gpu_checked_matmul_has_the_float64_products_nonfinite_and_overflow(engine, name):
    import cupy
    _skip_without(engine)
    d = sp.dtype(name)
    a, b = randn(2, 30, 50), randn(1, 50, 20)
    a[1, 3, 4], a[0, 7, 0], b[0, 2, 9] = -np.inf, np.nan, np.inf
    b[0, 11, 5] = 0.0
    a[0, 11, :] = 0.0
    a[0, 11, 11] = np.inf                                       # inf * 0 only: NaN
    a[1, 20, :2], b[0, :2, 17] = (1e30, -1e30), (1e30, 1e30)    # narrow products overflow; exact: 0
    a[1, 21, :2] = (1e30, 1.0)                                  # beyond float32: +inf
    b[0, 2:, 17] = 0.0
    c = cupy.asnumpy(cuda_gemm.matmul(cupy.asarray(a), cupy.asarray(b), d, engine=engine, checked=True))
    with np.errstate(invalid="ignore", over="ignore"):
        exact = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    for special in (np.isnan, np.isposinf, np.isneginf):
        np.testing.assert_array_equal(special(c), special(exact))
    assert c[1, 20, 17] == 0.0 and c[1, 21, 17] == np.inf
    clean = [np.where(np.isfinite(x), x, np.float32(0)) for x in (a, b)]
    finite = np.isfinite(exact)
    finite[1, 20:22, 17] = False
    unchecked = cupy.asnumpy(cuda_gemm.matmul(*(cupy.asarray(x) for x in clean), d, engine=engine))
    np.testing.assert_array_equal(c[finite], unchecked[finite])


def _fused_cases():
    """(A, B) pairs for the fused engine: odd sizes around its tiles and k-blocks, broadcast batches,
    edge-value rows (huge, subnormal, zero, ties, FLT_MAX), NaN/inf, rows whose narrow products
    overflow, and a batch longer than one launch's grid z."""
    edge = _edge_values((3, 20, 60))
    special = randn(4, 16, 16)
    special[1, 3, 4], special[2, 0, 9], special[3, 7, 7] = np.nan, np.inf, -np.inf
    huge = randn(2, 30, 40)
    huge[1, 5, :2] = (1e30, -1e30)
    huge_b = randn(1, 40, 9)
    huge_b[0, :2, 3] = (1e30, 1e30)
    return [(randn(1, 1, 1), randn(1, 1, 1)), (randn(7, 5, 3), randn(7, 3, 9)), (randn(64, 16, 16), randn(64, 16, 16)),
            (randn(5, 33, 61), randn(1, 61, 47)), (randn(1, 64, 64), randn(9, 64, 64)), (edge, randn(3, 60, 24)),
            (randn(3, 24, 60), np.swapaxes(edge, 1, 2).copy()), (special, randn(4, 16, 16)), (huge, huge_b),
            (randn(66000, 2, 3), randn(66000, 3, 2))]                     # beyond one launch's grid z


def test_fused_engine_takes_k_its_panels_hold():
    d = sp.dtype("tf32x3")
    expression, grid, block, shared, _ = gemm_fused._launch_shape(d, 40, 9, gemm_fused.MAX_K, 3, True, False)
    assert grid == (-(-3 * 2 // gemm_fused.WARPS), 1, 1) and block == (32 * gemm_fused.WARPS, 1, 1)
    assert shared == gemm_fused.WARPS * 4 * (32 * (64 + 4) + 64 * (32 + 8))      # panels of a 32 x 32 tile
    assert gemm_fused._launch_shape(sp.dtype("fp16x3"), 16, 16, 17, 1, True, True)[3] == \
        gemm_fused.WARPS * 4 * (16 * (32 + 8) + 32 * (16 + 4))                      # k to whole 16-value steps
    with pytest.raises(ValueError, match="k = 65 is beyond the fused engine's panels; expected k <= 64"):
        gemm_fused._launch_shape(d, 8, 8, gemm_fused.MAX_K + 1, 1, True, True)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["tf32x3", "fp16x3", "bf16x6", "bf16x9", "tf32", "bf16", "fp16", "bf16x3"])
def test_gpu_fused_engine_equals_the_mma_sync_engine_bit_for_bit(name):
    """The fused kernel splits as it loads, with the numerics of gemm_split_sm80: the same float32
    bits as that engine's checked product on every case, NaN/inf included, and the same bits again
    on a second call (no atomics, a fixed order)."""
    import cupy
    d = sp.dtype(name)
    for a, b in _fused_cases():
        a_gpu, b_gpu = cupy.asarray(a), cupy.asarray(b)
        fused = cupy.asnumpy(cuda_gemm.matmul(a_gpu, b_gpu, d, engine="fused"))
        split = cupy.asnumpy(cuda_gemm.matmul(a_gpu, b_gpu, d, engine="sm80", tile=cuda_gemm.SMALL_TILE, checked=True))
        np.testing.assert_array_equal(fused.view(np.uint32), split.view(np.uint32), err_msg=f"{name} {a.shape} {b.shape}")
        again = cupy.asnumpy(cuda_gemm.matmul(a_gpu, b_gpu, d, engine="fused"))
        np.testing.assert_array_equal(again.view(np.uint32), fused.view(np.uint32))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["tf32x3", "fp16x3", "bf16x9"])
def test_gpu_fused_engine_within_bound_on_edge_values(name):
    import cupy
    for a, b in _fused_cases()[4:7]:
        c = cuda_gemm.matmul(cupy.asarray(a), cupy.asarray(b), sp.dtype(name), engine="fused")
        _within_gpu_bound(cupy.asnumpy(c), a, b, name)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["bf16x6", "fp16x3"])
def test_split_kernel_beyond_the_grid_y_limit_regression(name):
    import cupy
    rows = 65535 * 32 + 77                     # more row tiles than one launch's grid y holds
    x = cupy.asarray(randn(rows, 5))
    d = sp.dtype(name)
    op = cuda_split.split_operand(x[None], d, transpose=False, pad=cuda_split.padded_k(5, d))
    tail = cupy.asnumpy(x[-40:])
    ref = split(tail, d, axis=-1)
    parts = cupy.asnumpy(op.parts[:, 0, -40:, :5])
    parts = (parts.astype(np.uint32) << 16).view(np.float32) if d.base == "bf16" else \
        parts.view(np.float16).astype(np.float32)
    for t in range(d.terms):
        np.testing.assert_array_equal(parts[t], ref.terms[t])


@pytest.mark.gpu
@pytest.mark.parametrize("min_work", [0, 2 ** 62], ids=["cublas", "kernels"])
@pytest.mark.parametrize("name", ["tf32x3", "bf16x9", "fp16x3"])
def test_gpu_matmul_nonfinite_like_cpu(name, min_work, monkeypatch):
    import cupy
    monkeypatch.setattr(cuda_gemm, "CUBLAS_MIN_WORK", min_work)
    a, b = randn(20, 40), randn(40, 24)
    a[3, 5], a[7, 0], b[2, 9], b[11, 4] = np.nan, np.inf, -np.inf, np.inf
    c_gpu = cupy.asnumpy(sp.matmul(cupy.asarray(a), cupy.asarray(b), dtype=name))
    c_cpu = sp.matmul(a, b, dtype=name)
    np.testing.assert_array_equal(np.isnan(c_gpu), np.isnan(c_cpu))
    np.testing.assert_array_equal(np.isposinf(c_gpu), np.isposinf(c_cpu))
    np.testing.assert_array_equal(np.isneginf(c_gpu), np.isneginf(c_cpu))


@pytest.mark.gpu
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["tf32x3", "bf16x6", "fp16x3"])
@pytest.mark.parametrize("shape_a, shape_b", [
    ((3, 1, 40, 50), (2, 50, 30)), ((5, 33, 20), (20, 17)), ((20,), (4, 20, 9)),
    ((66000, 2, 3), (66000, 3, 2))])
def test_gpu_matmul_batched_shapes_within_bound(shape_a, shape_b, name, engine):
    import cupy
    _skip_without(engine)
    a, b = randn(*shape_a), randn(*shape_b)
    a2 = a[None, :] if a.ndim == 1 else a
    c = cuda_gemm.matmul(cupy.asarray(a2), cupy.asarray(b), sp.dtype(name), engine=engine)
    _within_gpu_bound(cupy.asnumpy(c), a2, b, name)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["bf16x9", "fp16x3"])
def test_gpu_matmul_strided_inputs_within_bound(name):
    import cupy
    big_a, big_b = randn(2, 90, 140), randn(60, 140)
    a, b = big_a[:, ::-2, 1::2], big_b.T[::2, 3:40]              # negative and non-unit strides
    c = sp.matmul(cupy.asarray(big_a)[:, ::-2, 1::2], cupy.asarray(big_b).T[::2, 3:40], dtype=name)
    _within_gpu_bound(cupy.asnumpy(c), np.ascontiguousarray(a), np.ascontiguousarray(b), name)


@pytest.mark.gpu
@pytest.mark.parametrize("shape_a, shape_b", [((0, 4), (4, 5)), ((3, 0), (0, 5)), ((3, 4), (4, 0)),
                                              ((0, 3, 4), (4, 2))])
def test_gpu_matmul_zero_size_dims_give_zeros(shape_a, shape_b):
    import cupy
    c = sp.matmul(cupy.zeros(shape_a, np.float32), cupy.ones(shape_b, np.float32), dtype="bf16x9")
    assert c.shape == np.matmul(np.zeros(shape_a), np.zeros(shape_b)).shape and not c.any()


@pytest.mark.gpu
def test_gpu_precision_fp32_runs_the_path_of_the_shape(monkeypatch):
    """``precision="fp32"`` is cuBLAS SGEMM (pedantic float32) where ``fp32_path`` says so, the
    named scheme elsewhere, bit for bit."""
    import cupy
    a, b = cupy.asarray(randn(40, 96)), cupy.asarray(randn(96, 24))
    assert cuda_gemm.fp32_path(40, 24, 96, 1) == "sgemm"
    c = cupy.empty((1, 40, 24), np.float32)
    cupy.testing.assert_array_equal(sp.matmul(a, b, precision="fp32"), gemm_cublas.sgemm(a[None], b[None], c)[0])
    monkeypatch.setattr(cuda_gemm, "SGEMM_BELOW", {"min_mn": 0, "k": 0, "work": 0})
    sp._plans.clear()                   # the plan of the first call holds its path
    cupy.testing.assert_array_equal(sp.matmul(a, b, precision="fp32"), sp.matmul(a, b, dtype=cuda_gemm.FP32_SCHEME))


def test_launch_config_structures_have_the_cuda_driver_layout():
    """``cuLaunchKernelEx`` reads CUlaunchConfig and CUlaunchAttribute by the driver's layout
    (cuda.h: three grid and three block dimensions, the shared bytes, the stream at offset 32, the
    attribute pointer and count; an attribute's 64-byte value union at offset 8)."""
    import ctypes
    config, attribute = launch._LaunchConfig, launch._LaunchAttribute
    assert [getattr(config, name).offset for name in ("grid", "block", "shared_bytes", "stream", "attributes",
                                                       "attribute_count")] == [0, 12, 24, 32, 40, 48]
    assert ctypes.sizeof(config) == 56
    assert (attribute.value.offset, ctypes.sizeof(attribute)) == (8, 72)
