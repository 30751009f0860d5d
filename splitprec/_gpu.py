"""The GPU engine: split on the device, multiply the parts on tensor cores, combine.

Three engines run a scheme's narrow products. Tensor cores accumulate by truncation, so every
engine keeps hi*hi in its own accumulator, promotes its partial sum into float32 with
round-to-nearest adds at least every 512 values of k, and adds the small products (i + j > 0),
which share one accumulator, before it (Ootomo & Yokota, arXiv 2203.03341). The model is
``accuracy.gemm_bound(..., engine="gpu")`` (docs/bounds.md, section 5).

- ``"sm90"``: ``kernels/gemm_split_sm90.cu`` (wgmma from shared memory, Hopper), and ``"sm80"``:
  ``kernels/gemm_split_sm80.cu`` (mma.sync); both with a cp.async pipeline, promoting the small
  products and hi*hi every 128-byte k-block (64 bf16/fp16 or 32 tf32 values of k), one launch for
  all products, float32 subnormals kept. ``"auto"`` takes sm90 for multi-part schemes on compute
  capability 9.0, sm80 otherwise.
- ``"cublas"``: cuBLAS GEMMs with float32 output: the small products as one GEMM over their
  stacked K (2**-shift smaller, so their truncating chain costs 2**-shift less), then hi*hi over
  k-chunks of ``_CUBLAS_CHUNK`` with ``beta = 1``, so each chunk is added with a round-to-nearest
  float32 add. Faster than the kernels from about 8192^3 on (tf32x3: 65.7 against 34.8 TFLOP/s,
  benchmarks/results/gemm-2026-11-30-72fbe8f.json) and slower below, but not the default: its
  scaling and final additions run in CuPy kernels, which flush float32 subnormals, and the
  accuracy report saw that break the bound on tiny inputs.

Parts are written once by ``kernels/split_terms_sm80.cu``: A as (terms, batch, m, K') and B
transposed as (terms, batch, n, K'), K' = K zero-padded to whole k-blocks.
"""
from dataclasses import dataclass

import numpy as np


SPLIT_FILE = "split_terms_sm80.cu"
GEMM_FILE = "gemm_split_sm80.cu"
GEMM90_FILE = "gemm_split_sm90.cu"
ENGINES = ("auto", "sm90", "sm80", "cublas")
_FORMAT_CODE = {"tf32": 0, "bf16": 1, "fp16": 2}
_ELEMENT_BYTES = {"tf32": 4, "bf16": 2, "fp16": 2}
_BLOCK_BYTES = 128         # k-block of the kernel: 8 chunks of 16 bytes
_MAX_GRID_Y = _MAX_GRID_Z = 65535   # largest grid y and z extents of a launch


@dataclass(frozen=True)
class Tile:
    """Launch shape of ``gemm_split_sm80``: m16 tiles per warp (warp tile 16*mt x 32), warps along
    m and n, pipeline stages."""

    mt: int = 4
    warps_m: int = 2
    warps_n: int = 4
    stages: int = 2

    @property
    def block_m(self):
        return 16 * self.mt * self.warps_m

    @property
    def threads(self):
        return 32 * self.warps_m * self.warps_n


DEFAULT_TILE = Tile()
# Fastest tile per scheme on the H200 at n = 8192 (benchmarks/gemm.py --sweep times every candidate;
# these come from benchmarks/results/gemm-2026-11-30-4ee2c87.json's run, "tiles").
TILES = {"bf16": Tile(2, 4, 2, 3), "bf16x3": Tile(4, 2, 4, 3), "bf16x6": Tile(4, 2, 4, 2),
         "bf16x9": Tile(4, 2, 4, 2), "fp16": Tile(2, 4, 2, 2), "fp16x3": Tile(4, 2, 4, 3),
         "tf32": Tile(2, 2, 4, 4), "tf32x3": Tile(4, 2, 4, 3)}

# Measured on the H200, n = 8192, N(0,1) inputs: (GEMM TFLOP/s counted as 2*m*n*k, normwise error
# vs float64), from benchmarks/results/gemm-<date>-<sha>.json (see docs/kernels.md). precision="fp32"
# on the GPU takes the fastest fp32-class scheme of this table.
MEASURED = {"tf32x3": (32.18, 4.26e-07), "bf16x6": (41.01, 2.95e-07), "bf16x9": (37.19, 2.95e-07)}
MEASURED_SOURCE = "benchmarks/results/gemm-2026-11-30-72ecd78.json"   # cuBLAS SGEMM: 49.01, 1.62e-06


def fastest(precision):
    """The fastest measured scheme of ``precision`` class on the GPU (``dtypes.cheapest`` if none)."""
    from .dtypes import cheapest, dtype
    if precision != "fp32":
        return cheapest(precision)
    measured = [dtype(name) for name in MEASURED if dtype(name).fp32_class]
    if not measured:
        return cheapest(precision)
    return max(measured, key=lambda d: MEASURED[d.name][0])


def _pairs_mask(d):
    return sum(1 << (3 * i + j) for i, j in d.products)


def _small_shift(d):
    """The one power-of-two exponent of every small product (the kernel scales them together)."""
    shifts = {(i + j) * d.shift for i, j in d.products if i + j > 0}
    if len(shifts) > 1:
        raise ValueError(f"gemm_split_sm80: scheme {d.name!r} scales its small products by "
                         f"different powers of two {sorted(shifts)}; expected one")
    return shifts.pop() if shifts else 0


def split_expression(d, *, transpose):
    return f"split_terms_sm80<{_FORMAT_CODE[d.base]}, {d.terms}, {d.shift}, {str(transpose).lower()}>"


def gemm_expression(d, tile=DEFAULT_TILE):
    return (f"gemm_split_sm80<{_FORMAT_CODE[d.base]}, {d.terms}, {_pairs_mask(d)}u, {_small_shift(d)}, "
            f"{tile.mt}, {tile.warps_m}, {tile.warps_n}, {tile.stages}>")


def _sm90_stages(d):
    return {1: 4, 2: 3, 3: 2}[d.terms]      # (terms * 32 KiB) per stage, at most 192 KiB in all


def gemm90_expression(d):
    return (f"gemm_split_sm90<{_FORMAT_CODE[d.base]}, {d.terms}, {_pairs_mask(d)}u, {_small_shift(d)}, "
            f"{_sm90_stages(d)}>")


def instantiations():
    """Every kernel instantiation the engine launches (each scheme with its tile), ``{file: [names]}``."""
    from .dtypes import dtype, dtypes
    schemes = [dtype(name) for name in dtypes() if dtype(name).base in _FORMAT_CODE]
    return {SPLIT_FILE: sorted({split_expression(d, transpose=t) for d in schemes for t in (False, True)}),
            GEMM_FILE: sorted({gemm_expression(d, TILES.get(d.name, DEFAULT_TILE)) for d in schemes}),
            GEMM90_FILE: sorted({gemm90_expression(d) for d in schemes})}


def padded_k(k, d):
    """K rounded up to whole k-blocks of the kernels (``_BLOCK_BYTES`` bytes of parts)."""
    per_block = _BLOCK_BYTES // _ELEMENT_BYTES[d.base]
    return -(-k // per_block) * per_block


def _pow2_exponent_bits(x, fmt, axis):
    """``splitprec.split._pow2_exponent`` computed on the bit patterns of finite float32 ``x``.

    cupy compiles its elementwise kernels with -ftz=true, so ``abs``/``max``/``frexp`` on float32
    would flush subnormal slices to zero; integer maxima and float64 keep them.
    """
    import cupy
    magnitude = x.view(np.int32) & np.int32(0x7FFFFFFF)
    if magnitude.shape[axis] == 0:
        return cupy.zeros(magnitude.sum(axis=axis, keepdims=True).shape, np.int32)
    peak = magnitude.max(axis=axis, keepdims=True)
    biased, fraction = peak >> 23, peak & np.int32(0x7FFFFF)
    _, sub_e = cupy.frexp(fraction.astype(np.float64))            # subnormal: peak = fraction * 2**-149
    e = cupy.where(biased > 0, biased - 126, sub_e - 149)          # peak = f * 2**e, f in [0.5, 1)
    return cupy.where(peak > 0, e - fmt.emax, 0).astype(np.int32)


@dataclass(frozen=True)
class Operand:
    """Split operand: ``parts`` (terms, batch, rows, K') K-major; ``exponent`` (batch, rows) or None."""

    parts: object
    exponent: object


def split_operand(x, d, *, transpose, pad):
    """Parts of ``x`` (batch, rows, cols) float32, finite, C-contiguous; B is given with transpose=True.

    Accuracy: the parts equal ``splitprec.split.split(x, d, axis=...)`` bit for bit, checked by
    ``tests/test_kernels_gemm.py::test_split_kernel_matches_split``.
    """
    import cupy
    from ._launch import launch
    batch, rows, cols = x.shape
    out_rows = cols if transpose else rows
    storage = np.float32 if d.base == "tf32" else np.uint16
    parts = cupy.empty((d.terms, batch, out_rows, pad), storage)
    exponent = None
    if d.scaling == "pow2":
        exponent = _pow2_exponent_bits(x, d.format, -2 if transpose else -1)
        exponent = cupy.ascontiguousarray(exponent.reshape(batch, out_rows))
    grid = (-(-(cols if transpose else pad) // 32),
            min(-(-(pad if transpose else rows) // 32), _MAX_GRID_Y), batch)   # the kernel loops over y
    for z0 in range(0, batch, _MAX_GRID_Z):
        z1 = min(batch, z0 + _MAX_GRID_Z)
        launch(SPLIT_FILE, split_expression(d, transpose=transpose), grid[:2] + (z1 - z0,), (32, 8, 1),
               (x[z0:z1], parts[:, z0:z1], None if exponent is None else exponent[z0:z1],
                np.int32(rows), np.int32(cols), np.int32(pad), np.int64(parts[0].size)))
    return Operand(parts, exponent)


SHARED_LIMIT = 227 * 1024    # dynamic shared memory per block on sm_80 / sm_90


def fits(d, tile):
    """True when ``tile``'s pipeline for scheme ``d`` fits in one block's shared memory."""
    return _shared_bytes(d, tile) <= SHARED_LIMIT


def _shared_bytes(d, tile):
    rows = tile.block_m + 32 * tile.warps_n
    return tile.stages * d.terms * rows * 9 * 16        # (stages, terms, BM + BN, 9 chunks of 16 B)


def _gemm_rawkernel(pa, pb, c, d, tile, *, wgmma):
    """``c`` (batch, m, n) = the scheme's product of split operands, by ``gemm_split_sm90`` (wgmma)
    or ``gemm_split_sm80`` (mma.sync)."""
    from ._launch import launch
    batch, m, n = c.shape
    k_chunks = pa.parts.shape[-1] * _ELEMENT_BYTES[d.base] // 16
    item = pa.parts.itemsize
    strides = []
    for op in (pa, pb):
        shared = op.parts.shape[1] == 1 and batch > 1          # one operand for every batch entry
        strides += [op.parts[0].size * item, 0 if shared else op.parts[0, 0].size * item]
    exp_strides = [0 if op.exponent is None or op.exponent.shape[0] == 1 else op.exponent.shape[1]
                   for op in (pa, pb)]
    if wgmma:
        expression, grid, threads = gemm90_expression(d), (-(-n // 128), -(-m // 128)), 256
        shared = _sm90_stages(d) * d.terms * 32 * 8 * 144    # (stages, terms, 32 row groups, 8 x 144 B)
    else:
        expression, threads, shared = gemm_expression(d, tile), tile.threads, _shared_bytes(d, tile)
        grid = (-(-n // (32 * tile.warps_n)), -(-m // tile.block_m))
    for z0 in range(0, batch, _MAX_GRID_Z):
        z1 = min(batch, z0 + _MAX_GRID_Z)
        sl = [slice(z0, z1) if s else slice(None) for s in strides[1::2]]
        es = [slice(z0, z1) if s else slice(None) for s in exp_strides]
        args = (pa.parts[:, sl[0]], pb.parts[:, sl[1]], c[z0:z1],
                None if pa.exponent is None else pa.exponent[es[0]],
                None if pb.exponent is None else pb.exponent[es[1]],
                np.int32(m), np.int32(n), np.int32(k_chunks),
                *(np.int64(s) for s in strides), *(np.int32(s) for s in exp_strides))
        launch(GEMM90_FILE if wgmma else GEMM_FILE, expression, grid + (z1 - z0,), (threads, 1, 1), args,
               shared_bytes=shared)
    return c


_CUDA_TYPE = {"tf32": 0, "bf16": 14, "fp16": 2}            # CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F
_CUBLAS_COMPUTE = {"tf32": 77, "bf16": 68, "fp16": 68}     # COMPUTE_32F_FAST_TF32, COMPUTE_32F
# k of hi*hi per cuBLAS call (its truncating chain): the error grows in proportion to it, and these
# keep the fp32-class schemes at 0.3-0.4x cuBLAS SGEMM's error (benchmarks/gemm_chunks.py, H200).
_CUBLAS_CHUNK = {"tf32": 256, "bf16": 512, "fp16": 512}


def _stack(op, pairs_side, chunk):
    """Parts of the small products laid out (batch, rows, K'/chunk, products, chunk): one k-chunk of
    every small product is one contiguous stacked block of K."""
    import cupy
    parts = op.parts[list(pairs_side)]                          # (P, batch, rows, K')
    p, batch, rows, kp = parts.shape
    blocks = parts.reshape(p, batch, rows, kp // chunk, chunk)
    return cupy.ascontiguousarray(blocks.transpose(1, 2, 3, 0, 4))


def _cublas_accumulate(c, a, b, k_total, lda, step, d):
    """``c += a_chunk @ b_chunk`` for every k-chunk, beta = 1: one round-to-nearest add per chunk.

    ``a`` holds B's parts (n rows) and ``b`` A's parts (m rows): column-major C^T = B^T A^T is the
    row-major C. ``step`` = (elements of k per chunk, element offset between chunks).
    """
    from cupy import cuda
    from cupy_backends.cuda.libs import cublas
    batch, m, n = c.shape
    one = np.ones(1, np.float32)
    handle = cuda.device.get_cublas_handle()
    kind, offset = step
    item = a.itemsize
    a_batch = 0 if a.shape[0] == 1 and batch > 1 else a[0].size
    b_batch = 0 if b.shape[0] == 1 and batch > 1 else b[0].size
    for first in range(0, k_total, kind):
        kc = min(kind, k_total - first)
        shift = first // kind * offset * item
        cublas.gemmStridedBatchedEx(
            handle, 1, 0, n, m, kc, one.ctypes.data,
            a.data.ptr + shift, _CUDA_TYPE[d.base], lda, a_batch,
            b.data.ptr + shift, _CUDA_TYPE[d.base], lda, b_batch, one.ctypes.data,
            c.data.ptr, 0, n, m * n, batch, _CUBLAS_COMPUTE[d.base], -1)


def _gemm_cublas(pa, pb, c, d, chunk=None):
    """The scheme's product by cuBLAS: the small products as one GEMM over their stacked K (they
    are 2**-shift smaller, so their truncating chain costs 2**-shift less), then hi*hi over
    k-chunks of ``chunk`` promoted with beta = 1, added last."""
    import cupy
    kp = pa.parts.shape[-1]
    small = [(i, j) for i, j in d.products if i + j > 0]
    c[...] = 0
    if small:
        stacked_a = _stack(pa, [i for i, _ in small], kp)
        stacked_b = _stack(pb, [j for _, j in small], kp)
        width = len(small) * kp
        _cublas_accumulate(c, stacked_b, stacked_a, width, width, (width, width), d)
        c *= np.float32(2.0 ** -_small_shift(d))
    big = cupy.zeros_like(c)
    chunk = chunk or _CUBLAS_CHUNK[d.base]
    _cublas_accumulate(big, pb.parts[0], pa.parts[0], kp, kp, (chunk, chunk), d)
    c += big
    return c


def matmul(a, b, d, *, engine="auto", tile=None):
    """``a @ b`` (cupy float32, finite, ndim >= 2, batch dimensions broadcast) in scheme ``d``.

    Accuracy: ``accuracy.gemm_bound(a, b, d, engine="gpu")``, checked by
    ``tests/test_kernels_gemm.py::test_gpu_matmul_error_within_bound``.
    """
    import cupy
    batch_shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    batch = int(np.prod(batch_shape, dtype=np.int64))
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if batch == 0 or m == 0 or n == 0 or k == 0:
        return cupy.zeros(batch_shape + (m, n), np.float32)
    if engine not in ENGINES:
        raise ValueError(f"matmul: unknown GPU engine {engine!r}; expected one of {ENGINES}")
    if engine == "auto":    # measured at n = 8192 (benchmarks/gemm_profile.py): wgmma wins with 2-3 parts
        engine = "sm90" if cupy.cuda.Device().compute_capability == "90" and d.terms > 1 else "sm80"
    pad = padded_k(k, d)
    pa = split_operand(_flatten(a, batch_shape, batch), d, transpose=False, pad=pad)
    pb = split_operand(_flatten(b, batch_shape, batch), d, transpose=True, pad=pad)
    c = cupy.empty((batch, m, n), np.float32)
    if engine == "cublas":
        _gemm_cublas(pa, pb, c, d)
    else:
        _gemm_rawkernel(pa, pb, c, d, tile or TILES.get(d.name, DEFAULT_TILE), wgmma=engine == "sm90")
    if pa.exponent is not None and engine == "cublas":
        c = cupy.ldexp(c, pa.exponent[:, :, None] + pb.exponent[:, None, :]).astype(np.float32)
    return c.reshape(batch_shape + (m, n))


def _flatten(x, batch_shape, batch):
    """``x`` as a C-contiguous (batch or 1, rows, cols) array (copies only when it must)."""
    import cupy
    own = int(np.prod(x.shape[:-2], dtype=np.int64))
    if own not in (1, batch):
        x = cupy.broadcast_to(x, batch_shape + x.shape[-2:])
        own = batch
    return cupy.ascontiguousarray(x.reshape((own,) + x.shape[-2:]))
