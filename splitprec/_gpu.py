"""The GPU engine: split on the device, multiply the parts on tensor cores, combine.

Three engines run a scheme's narrow products. Tensor cores accumulate by truncation, so every
engine keeps hi*hi in its own accumulator and promotes its partial sum into float32 with
round-to-nearest adds at least every ``d.gpu_k_block(k)`` values of k, and adds the small products
(i + j > 0) before it (Ootomo & Yokota, arXiv 2203.03341). The model is
``accuracy.gemm_bound(..., engine="gpu")`` (docs/bounds.md, section 5).

- ``"sm90"``: ``kernels/gemm_split_sm90.cu`` (Hopper): TMA loads into a shared-memory ring, a
  producer warpgroup and two wgmma consumer warpgroups, hi*hi promoted in registers every
  ``cublas_chunk`` values of k and the small products in a second accumulator over all of k: one
  launch for all products, no partial sums through memory. Its operands are described to the TMA
  unit by tensor maps that ``cuTensorMapEncodeTiled`` (the CUDA driver, through ctypes) encodes,
  passed to the kernel by value.
- ``"sm80"``: ``kernels/gemm_split_sm80.cu`` (mma.sync, cp.async pipeline), promoting the small
  products and hi*hi every 128-byte k-block (64 bf16/fp16 or 32 tf32 values of k).
  Both kernels read A as (terms, batch, m, K') and B transposed as (terms, batch, n, K').
- ``"cublas"``: cuBLAS GEMMs with float32 output over parts stacked along K (A's first to last,
  B's last to first, (batch, rows, terms * K')): each group of small products with one ``i + j``
  is one GEMM over a contiguous K window, then hi*hi runs in k-chunks of ``cublas_chunk``; every
  call after the first adds into the result with ``beta = 1``, one round-to-nearest float32 add.
  Power-of-two scaling is undone by ``kernels/scale_pow2_sm80.cu``, which also finds every engine's
  row and column exponents (but where K fits one tile of the split, which finds them itself).

K' is K zero-padded to whole 128-byte k-blocks; the split (``kernels/split_terms_sm80.cu``) writes
either layout, bit for bit the parts of ``splitprec.split``, float32 subnormals kept. ``"auto"``
(``auto_engine``, measured, docs/kernels.md) runs mma.sync with 64 x 64 blocks for outputs of at
most 64 x 64; on Hopper the sm90 kernel for multi-part schemes, except bf16x6 from
``CUBLAS_MIN_WORK`` multiply-adds on with at least one wave of tiles; otherwise cuBLAS for large
products and mma.sync below.
"""
import functools
import math
from dataclasses import dataclass

import numpy as np


SPLIT_FILE = "split_terms_sm80.cu"
GEMM_FILE = "gemm_split_sm80.cu"
GEMM90_FILE = "gemm_split_sm90.cu"
SCALE_FILE = "scale_pow2_sm80.cu"
NONFINITE_FILE = "gemm_nonfinite_sm80.cu"
ENGINES = ("auto", "sm90", "sm80", "cublas")
_FORMAT_CODE = {"tf32": 0, "bf16": 1, "fp16": 2}
_ELEMENT_BYTES = {"tf32": 4, "bf16": 2, "fp16": 2}
_BLOCK_BYTES = 128         # k-block of the kernel: 8 chunks of 16 bytes
_MAX_GRID_Y = _MAX_GRID_Z = 65535   # largest grid y and z extents of a launch
_SPLIT_TILE = 64           # split_terms_sm80's (TILE, TILE) input tile per block and step
_SPLIT_GRID_Y = 128        # split blocks along y; each loops over its share of row tiles
_SM90_TILE = 128           # gemm_split_sm90's block tile (rows of A and of B per stage)


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

# Measured on the H200 by benchmarks/gemm.py (public sp.matmul, N(0,1) inputs, see docs/kernels.md):
# TFLOP/s (2*m*n*k / t) at n = 2048, 4096, 8192 and 16384, and the normwise error vs float64 at
# n = 8192. precision="fp32" on the GPU takes the fp32-class scheme of the best geometric mean.
# Products whose m and n are both at most SMALL (batches of small matrices) run the mma.sync kernel
# with 64 x 64 blocks on every GPU: at 4096 x 64^3 on the H200 it takes half the time of the wgmma
# kernel's 128 x 128 tiles, and less than cuBLAS's (benchmarks/results/gemm-stages-2026-12-01-82811d7.log).
SMALL = 64
SMALL_TILE = Tile(2, 2, 2, 2)


def auto_tile(d, m, n):
    """The mma.sync kernel's launch shape for an (m, n) output under ``"auto"``."""
    return SMALL_TILE if max(m, n) <= SMALL else TILES.get(d.name, DEFAULT_TILE)


MEASURED = {"tf32x3": ((62.06, 91.87, 108.56, 111.91), 1.24e-06),
            "bf16x6": ((56.74, 91.1, 98.84, 107.19), 9.98e-07),
            "bf16x9": ((48.41, 64.73, 72.06, 75.12), 1.01e-06)}
MEASURED_SOURCE = "benchmarks/results/gemm-2026-12-01-6dc3e99.json"   # cuBLAS SGEMM at 8192: 51.0, 1.62e-06


def fastest(precision):
    """The fastest measured scheme of ``precision`` class on the GPU (``dtypes.cheapest`` if none)."""
    from .dtypes import cheapest, dtype
    if precision != "fp32":
        return cheapest(precision)
    measured = [dtype(name) for name in MEASURED if dtype(name).fp32_class]
    if not measured:
        return cheapest(precision)
    return max(measured, key=lambda d: math.prod(MEASURED[d.name][0]))


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
    return {1: 6, 2: 3, 3: 2}[d.terms]      # (terms * 32 KiB) per stage, at most 192 KiB in all


def _sm90_shared_bytes(d):
    return _sm90_stages(d) * d.terms * 2 * _SM90_TILE * _BLOCK_BYTES + 1024   # + 1024-byte alignment


def gemm90_expression(d):
    return (f"gemm_split_sm90<{_FORMAT_CODE[d.base]}, {d.terms}, {_pairs_mask(d)}u, {_small_shift(d)}, "
            f"{_sm90_stages(d)}>")


def pieces_expression(d):
    return f"gemm_split_sm90_pieces<{_pairs_mask(d)}u, {_small_shift(d)}>"


def instantiations():
    """Every kernel instantiation the engine launches (each scheme with its tile), ``{file: [names]}``."""
    from .dtypes import dtype, dtypes
    schemes = [dtype(name) for name in dtypes() if dtype(name).base in _FORMAT_CODE]
    return {SPLIT_FILE: sorted({split_expression(d, transpose=t) for d in schemes for t in (False, True)}),
            GEMM_FILE: sorted({gemm_expression(d, tile) for d in schemes
                               for tile in (TILES.get(d.name, DEFAULT_TILE), SMALL_TILE)}),
            GEMM90_FILE: sorted({gemm90_expression(d) for d in schemes} | {pieces_expression(d) for d in schemes}),
            SCALE_FILE: ["row_exponents", "column_peaks", "peak_exponents", "scale_rows_cols"],
            NONFINITE_FILE: sorted(_NONFINITE_EXPRESSION.values())}


def padded_k(k, d):
    """K rounded up to whole k-blocks of the kernels (``_BLOCK_BYTES`` bytes of parts)."""
    per_block = _BLOCK_BYTES // _ELEMENT_BYTES[d.base]
    return -(-k // per_block) * per_block


_EXPONENT_WARPS = 8            # warps per block of the exponent kernels (WARPS in SCALE_FILE)
_COLUMN_SHARE = 256            # rows per block of column_peaks, at least (fewer blocks, fewer atomics)


def _at(x, offset=0):
    """Device address of element ``offset`` of cupy ``x`` (C order), 0 for None: a kernel argument
    without the host cost of a cupy view."""
    return 0 if x is None else x.data.ptr + offset * x.itemsize


def _pow2_exponents(x, fmt, axis):
    """Per-slice pow2 exponents of float32 ``x`` (batch, rows, cols) along ``axis``: (batch, rows) int32
    for -1, (batch, cols) for -2.

    ``splitprec.split._pow2_exponent`` (``peak = f * 2**e``, f in [0.5, 1), exponent ``e - emax``,
    0 for an all-zero slice; NaN/inf ignored) from the integer bits of each slice's largest finite
    magnitude: rows by one warp each, columns by blocks of 128 adjacent columns that ``atomicMax``
    their share of the rows into a zeroed buffer, then turned into exponents in place.
    """
    import cupy
    from ._launch import launch
    batch, rows, cols = x.shape
    threads = (32 * _EXPONENT_WARPS, 1, 1)
    if axis == -1:
        exponent = cupy.empty((batch, rows), np.int32)
        launch(SCALE_FILE, "row_exponents", (min(-(-exponent.size // _EXPONENT_WARPS), 1 << 16), 1, 1), threads,
               (x, exponent, np.int64(exponent.size), np.int32(cols), np.int32(fmt.emax)))
        return exponent
    exponent = cupy.zeros((batch, cols), np.int32)
    grid = (-(-cols // 128), min(-(-rows // _COLUMN_SHARE), _MAX_GRID_Y))
    for z0 in range(0, batch, _MAX_GRID_Z):
        z1 = min(batch, z0 + _MAX_GRID_Z)
        launch(SCALE_FILE, "column_peaks", grid + (z1 - z0,), threads,
               (_at(x, z0 * rows * cols), _at(exponent, z0 * cols), np.int32(rows), np.int32(cols)))
    launch(SCALE_FILE, "peak_exponents", (min(-(-exponent.size // 256), 1 << 16), 1, 1), (256, 1, 1),
           (exponent, np.int64(exponent.size), np.int32(fmt.emax)))
    return exponent


@dataclass(frozen=True)
class Operand:
    """Split operand: ``parts`` in the layout of the engine that reads it; ``exponent`` (batch, rows)
    or None."""

    parts: object
    exponent: object


def _split_into(x, d, out, *, transpose, pad, row_stride, term_stride, report):
    """Write the parts of ``x`` (batch, rows, cols) into flat ``out``: part i of output row r, k-column
    c at ``out[i * term_stride + r * row_stride + c]`` (rows counted across the batch). Returns the
    output rows' pow2 exponents for pow2 schemes ((batch, output rows) int32; else None): found by
    the split kernel itself where K fits one of its tiles (every output row in one block), else by
    a pass of ``_pow2_exponents`` first. With
    ``report = (words, peak, lines)`` (a zeroed uint32 cupy array and two indices into it: one word,
    and one per output row across the batch from ``lines`` on) the kernel raises the peak word to
    the largest ``|x|`` bits it reads (NaN/inf included), splits NaN/inf as zeros and sets the line
    words of the output rows (rows of A, columns of B) that hold one."""
    import cupy
    from ._launch import launch
    batch, rows, cols = x.shape
    out_rows = cols if transpose else rows
    pow2 = d.scaling == "pow2"
    find = pow2 and (rows if transpose else cols) <= _SPLIT_TILE
    if find:
        exponent = cupy.empty((batch, out_rows), np.int32)
    elif pow2:
        exponent = _pow2_exponents(x, d.format, -2 if transpose else -1)
    else:
        exponent = None
    grid = (-(-(cols if transpose else pad) // _SPLIT_TILE),
            min(-(-(pad if transpose else rows) // _SPLIT_TILE), _SPLIT_GRID_Y), 1)   # the kernel loops over y
    for z0 in range(0, batch, _MAX_GRID_Z):
        z1 = min(batch, z0 + _MAX_GRID_Z)
        launch(SPLIT_FILE, split_expression(d, transpose=transpose), grid[:2] + (z1 - z0,), (256, 1, 1),
               (_at(x, z0 * rows * cols), _at(out, z0 * out_rows * row_stride), _at(exponent, z0 * out_rows),
                np.int32(rows), np.int32(cols), np.int32(pad), np.int64(row_stride), np.int64(term_stride),
                *((0, 0) if report is None else
                  (_at(report[0], report[1]), _at(report[0], report[2] + z0 * out_rows))),
                np.int32(find), np.int32(d.format.emax)))
    return exponent


def split_operand(x, d, *, transpose, pad, report=None):
    """Parts of ``x`` (batch, rows, cols) float32, finite, C-contiguous, for the split GEMM kernels:
    (terms, batch, rows, K') K-major; B is given with transpose=True.

    Accuracy: the parts equal ``splitprec.split.split(x, d, axis=...)`` bit for bit, checked by
    ``tests/test_kernels_gemm.py::test_split_kernel_matches_split``.
    """
    import cupy
    batch, rows, cols = x.shape
    parts = cupy.empty((d.terms, batch, cols if transpose else rows, pad), _storage(d))
    exponent = _split_into(x, d, parts.reshape(-1), transpose=transpose, pad=pad, row_stride=pad,
                           term_stride=parts.size // d.terms, report=report)
    return Operand(parts, exponent)


def split_stacked(x, d, *, transpose, pad, report=None):
    """Parts of ``x`` for the cuBLAS engine: (batch, rows, terms * K'), one row holding its parts side by
    side along K, A's (transpose=False) first to last and B's last to first, so that every group of
    products with one ``i + j`` is one contiguous K window of both operands. The same parts as
    :func:`split_operand`."""
    import cupy
    batch, rows, cols = x.shape
    stacked = cupy.empty((batch, cols if transpose else rows, d.terms * pad), _storage(d))
    flat = stacked.reshape(-1)
    exponent = _split_into(x, d, flat[(d.terms - 1) * pad:] if transpose else flat, transpose=transpose,
                           pad=pad, row_stride=d.terms * pad, term_stride=-pad if transpose else pad, report=report)
    return Operand(stacked, exponent)


def _storage(d):
    return np.float32 if d.base == "tf32" else np.uint16


SHARED_LIMIT = 227 * 1024    # dynamic shared memory per block on sm_80 / sm_90


def fits(d, tile):
    """True when ``tile``'s pipeline for scheme ``d`` fits in one block's shared memory."""
    return _shared_bytes(d, tile) <= SHARED_LIMIT


def _shared_bytes(d, tile, k_blocks=None):
    """Shared memory of ``tile``'s pipeline; with ``k_blocks``, of the stages a product with that
    many k-blocks fills (fewer than ``tile.stages`` for short k: more blocks fit on an SM)."""
    rows = tile.block_m + 32 * tile.warps_n
    stages = tile.stages if k_blocks is None else min(tile.stages, k_blocks)
    return stages * d.terms * rows * 9 * 16        # (stages, terms, BM + BN, 9 chunks of 16 B)


def _batch_args(pa, pb, batch):
    """Per operand: (parts' byte strides per term and per batch entry, 0 when one entry serves every
    batch entry) and the exponent strides per batch entry."""
    strides, exp_strides = [], []
    for op in (pa, pb):
        item = op.parts.itemsize
        shared = op.parts.shape[1] == 1 and batch > 1
        strides += [op.parts.size // op.parts.shape[0] * item,
                    0 if shared else op.parts.shape[-2] * op.parts.shape[-1] * item]
        exp_strides.append(0 if op.exponent is None or op.exponent.shape[0] == 1 else op.exponent.shape[1])
    return strides, exp_strides


def _gemm_sm80(pa, pb, c, d, tile):
    """``c`` (batch, m, n) = the scheme's product of split operands by ``gemm_split_sm80`` (mma.sync)."""
    from ._launch import launch
    batch, m, n = c.shape
    k_bytes = pa.parts.shape[-1] * _ELEMENT_BYTES[d.base]
    k_chunks = k_bytes // 16
    strides, exp_strides = _batch_args(pa, pb, batch)
    grid = (-(-n // (32 * tile.warps_n)), -(-m // tile.block_m))
    for z0 in range(0, batch, _MAX_GRID_Z):
        z1 = min(batch, z0 + _MAX_GRID_Z)
        args = (pa.parts.data.ptr + z0 * strides[1], pb.parts.data.ptr + z0 * strides[3], _at(c, z0 * m * n),
                _at(pa.exponent, z0 * exp_strides[0]), _at(pb.exponent, z0 * exp_strides[1]),
                np.int32(m), np.int32(n), np.int32(k_chunks),
                *(np.int64(s) for s in strides), *(np.int32(s) for s in exp_strides))
        launch(GEMM_FILE, gemm_expression(d, tile), grid + (z1 - z0,), (tile.threads, 1, 1), args,
               shared_bytes=_shared_bytes(d, tile, k_bytes // _BLOCK_BYTES))
    return c


@functools.lru_cache(maxsize=None)
def _encode_tiled():
    """The CUDA driver's ``cuTensorMapEncodeTiled``, through ctypes (the driver library is present
    wherever a kernel runs; cupy does not wrap this call)."""
    import ctypes
    function = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
    u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
    function.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p,
                         u32p, u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int)
    function.restype = ctypes.c_int
    return function


_TMA_UINT16, _TMA_UINT32, _TMA_SWIZZLE_128B, _TMA_L2_256B = 1, 2, 3, 3   # CUtensorMap* enum values
_TENSOR_MAP = np.dtype((np.void, 128))                                    # CUtensorMap's bytes


def _tensor_map(parts):
    """The TMA map of ``parts`` (terms, batch, rows, K') viewed as (terms * batch * rows, K'): boxes of
    128 rows x 128 bytes, 128-byte swizzle; a one-element numpy array, which cupy passes to the
    kernel by value (a ``__grid_constant__`` parameter: no copy to the device, no wait)."""
    return _encoded_map(parts.data.ptr, parts.shape[-1], parts.size // parts.shape[-1], parts.itemsize)


@functools.lru_cache(maxsize=256)
def _encoded_map(address, width, rows, item):
    """The tensor map of ``rows`` x ``width`` elements of ``item`` bytes at device ``address``
    (cached: cupy's pool gives a repeated shape the same addresses)."""
    import ctypes
    host = np.zeros(2 * _TENSOR_MAP.itemsize, np.uint8)
    out = host[-host.ctypes.data % 64:][:_TENSOR_MAP.itemsize]          # the driver wants 64-byte alignment
    dims = (ctypes.c_uint64 * 2)(width, rows)
    row_bytes = (ctypes.c_uint64 * 1)(width * item)
    box = (ctypes.c_uint32 * 2)(_BLOCK_BYTES // item, _SM90_TILE)
    unit = (ctypes.c_uint32 * 2)(1, 1)
    code = _encode_tiled()(out.ctypes.data, _TMA_UINT16 if item == 2 else _TMA_UINT32, 2, address,
                           dims, row_bytes, box, unit, 0, _TMA_SWIZZLE_128B, _TMA_L2_256B, 0)
    if code:
        raise RuntimeError(f"gemm_split_sm90: cuTensorMapEncodeTiled failed with CUresult {code}")
    return out.view(_TENSOR_MAP)


def split_tiles(tiles, chunks, batch, sms):
    """``(split_from, pieces)`` of the sm90 kernel: with one batch entry, the tiles of the last,
    partial wave over ``sms`` SMs (every tile when there are fewer than ``sms``) run as ``pieces``
    blocks each, over whole k-chunks, when that fills idle SMs; ``(tiles, 1)``: no tile is split."""
    tail = tiles % sms
    pieces = min(chunks, sms // tail) if tail and batch == 1 else 1
    return (tiles - tail, pieces) if pieces > 1 else (tiles, 1)


def _gemm_sm90(pa, pb, c, d, chunk):
    """``c`` (batch, m, n) = the scheme's product of split operands by ``gemm_split_sm90`` (TMA and
    wgmma), hi*hi promoted every ``chunk`` values of k; a last, partial wave split along k
    (``split_tiles``), its pieces added by ``gemm_split_sm90_pieces``."""
    import cupy
    from ._launch import launch, multiprocessors
    batch, m, n = c.shape
    maps = (_tensor_map(pa.parts), _tensor_map(pb.parts))
    per_block = _BLOCK_BYTES // _ELEMENT_BYTES[d.base]
    k_blocks, chunk_blocks = pa.parts.shape[-1] // per_block, max(1, chunk // per_block)
    rows = []
    for op, size in ((pa, m), (pb, n)):
        rows += [op.parts.shape[1] * size, 0 if op.parts.shape[1] == 1 else size]
    _, exp_strides = _batch_args(pa, pb, batch)
    tiles = -(-m // _SM90_TILE) * -(-n // _SM90_TILE)
    split_from, pieces = split_tiles(tiles, -(-k_blocks // chunk_blocks), batch, multiprocessors())
    partial = None if pieces == 1 else cupy.empty(((tiles - split_from) * pieces, 2, _SM90_TILE, _SM90_TILE),
                                                  np.float32)
    for z0 in range(0, batch, _MAX_GRID_Y):
        args = (*maps, c, pa.exponent, pb.exponent, np.int32(m), np.int32(n), np.int32(k_blocks),
                np.int32(chunk_blocks), *(np.int32(r) for r in rows), *(np.int32(s) for s in exp_strides),
                np.int32(z0), np.int32(split_from), np.int32(pieces), partial)
        launch(GEMM90_FILE, gemm90_expression(d), (split_from + (tiles - split_from) * pieces,
                                                   min(batch - z0, _MAX_GRID_Y), 1), (384, 1, 1), args,
               shared_bytes=_sm90_shared_bytes(d))
    if partial is not None:
        launch(GEMM90_FILE, pieces_expression(d), (tiles - split_from, 1, 1), (256, 1, 1),
               (partial, c, pa.exponent, pb.exponent, np.int32(m), np.int32(n), np.int32(split_from),
                np.int32(pieces)))
    return c


_CUDA_TYPE = {"tf32": 0, "bf16": 14, "fp16": 2}            # CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F
_CUBLAS_COMPUTE = {"tf32": 77, "bf16": 68, "fp16": 68}     # COMPUTE_32F_FAST_TF32, COMPUTE_32F
# hi*hi's truncating chain costs error in proportion to its length: on N(0,1) data about 1.0e-6
# (bf16 parts) and 1.3e-6 (fp16) per 1024 values of k, 1.2e-6 (tf32) per 512, whatever k is
# (benchmarks/gemm_chunks.py, H200), while cuBLAS SGEMM's error grows like sqrt(k): 5.7e-7 at
# k = 1024, 1.6e-6 at 8192, 2.3e-6 at 16384. A chunk of the largest power of two below
# factor * sqrt(k) keeps every scheme's error at or below SGEMM's for every k.
_CHUNK_PER_SQRT_K = {"tf32": 6, "bf16": 16, "fp16": 12}


def cublas_chunk(d, k):
    """k of hi*hi per cuBLAS call (one truncating chain) for products of inner dimension ``k``; all
    of k for one-part schemes, whose error the part's rounding dominates (2^-8 or 2^-11 per input).
    At least the kernels' k-block, so it is the longest chain of any engine: ``d.gpu_k_block(k)``."""
    block = _BLOCK_BYTES // _ELEMENT_BYTES[d.base]
    if d.terms == 1:
        return max(block, 1 << (k - 1).bit_length())
    return 1 << int(math.log2(max(_CHUNK_PER_SQRT_K[d.base] * math.sqrt(k), block)))


@functools.lru_cache(maxsize=None)
def _diagonals(d):
    """The small products grouped by ``s = i + j``, smallest first: ``(s, first i, count)``. With A's
    parts stacked first to last and B's last to first, each group is one K window of both."""
    groups = {}
    for i, j in d.products:
        if i + j:
            groups.setdefault(i + j, []).append(i)
    out = []
    for s in sorted(groups, reverse=True):
        first = min(groups[s])
        if sorted(groups[s]) != list(range(first, first + len(groups[s]))):
            raise ValueError(f"cublas engine: scheme {d.name!r} takes products {d.products}; each i + j "
                             f"must take a contiguous range of i")
        out.append((s, first, len(groups[s])))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def _host_scalars(alpha, beta):
    """(alpha, beta) as float32 host memory that lives as long as the process (cuBLAS reads it
    during the call)."""
    return np.array([alpha, beta], np.float32)


def _cublas_gemm(handle, c, pa, pb, d, *, a_col, b_col, k, alpha, beta):
    """``c = alpha * A[..., a_col:a_col+k] @ B[..., b_col:b_col+k]^T + beta * c`` by one
    ``cublasGemmStridedBatchedEx`` on stacked operands (float32 output: beta = 1 is one
    round-to-nearest add). Column-major C^T = B A^T is the row-major C."""
    from cupy_backends.cuda.libs import cublas
    batch, m, n = c.shape
    a, b = pa.parts, pb.parts
    ld, item = a.shape[-1], a.itemsize
    scalars = _host_scalars(alpha, beta).ctypes.data
    cublas.gemmStridedBatchedEx(
        handle, 1, 0, n, m, k, scalars,
        b.data.ptr + b_col * item, _CUDA_TYPE[d.base], ld, 0 if b.shape[0] < batch else b[0].size,
        a.data.ptr + a_col * item, _CUDA_TYPE[d.base], ld, 0 if a.shape[0] < batch else a[0].size,
        scalars + 4, c.data.ptr, 0, n, m * n, batch, _CUBLAS_COMPUTE[d.base], -1)


def _gemm_cublas(pa, pb, c, d, chunk):
    """The scheme's product of stacked operands by cuBLAS: each group of small products with one
    ``i + j`` as one GEMM over its stacked K (smallest first, scaled by 2**-(i+j)*shift), then hi*hi
    in k-chunks of ``chunk``; each call after the first adds its chain to ``c`` with one
    round-to-nearest add (beta = 1)."""
    from cupy import cuda
    from cupy_backends.cuda.libs import cublas
    handle = cuda.device.get_cublas_handle()
    cublas.setStream(handle, cuda.get_current_stream().ptr)     # the stream the split ran on
    kp = pa.parts.shape[-1] // d.terms
    calls = [(first * kp, (d.terms - 1 - s + first) * kp, count * kp, 2.0 ** (-s * d.shift))
             for s, first, count in _diagonals(d)]
    calls += [(k0, (d.terms - 1) * kp + k0, min(chunk, kp - k0), 1.0) for k0 in range(0, kp, chunk)]
    for index, (a_col, b_col, k, alpha) in enumerate(calls):
        _cublas_gemm(handle, c, pa, pb, d, a_col=a_col, b_col=b_col, k=k, alpha=alpha, beta=float(index > 0))
    return c


def _unscale(c, pa, pb):
    """Undo pow2 scaling in place: ``c *= 2**(row + col)``, one rounding, subnormals kept."""
    from ._launch import launch
    batch, m, n = c.shape
    rows = batch * m
    launch(SCALE_FILE, "scale_rows_cols", (min(rows, 1 << 16), 1, 1), (256, 1, 1),
           (c, pa.exponent, pb.exponent, np.int32(m), np.int32(n), np.int64(rows),
            np.int32(m if pa.exponent.shape[0] == batch else 0),
            np.int32(n if pb.exponent.shape[0] == batch else 0)))
    return c


# Products of at least this many multiply-adds (m*n*k*batch) run on the cuBLAS engine under "auto",
# except multi-part schemes on Hopper (but CUBLAS_LARGE); below it the kernels' single launch wins
# (benchmarks/gemm.py on the H200, see docs/kernels.md).
CUBLAS_MIN_WORK = 2 ** 31
# Multi-part schemes whose large products run faster on the cuBLAS engine than on the sm90 kernel
# (n = 8192, median of three rounds: bf16x6 98.0 against 95.4 TFLOP/s; bf16x9 68.1 against 73.8;
# benchmarks/results/gemm-2026-12-01-6dc3e99.json).
CUBLAS_LARGE = frozenset({"bf16x6"})


def auto_engine(d, m, n, k, batch):
    """The engine ``"auto"`` runs. mma.sync with 64 x 64 blocks for outputs of at most ``SMALL`` x
    ``SMALL``. On compute capability 9.0 the sm90 kernel for multi-part schemes, but for the large
    products (``CUBLAS_MIN_WORK`` multiply-adds and at least as many output tiles as SMs) of the
    ``CUBLAS_LARGE`` schemes. Otherwise cuBLAS for large products and mma.sync for the rest."""
    from . import _launch
    if max(m, n) <= SMALL:
        return "sm80"
    large = m * n * k * batch >= CUBLAS_MIN_WORK
    wave = -(-m // _SM90_TILE) * -(-n // _SM90_TILE) * batch >= _launch.multiprocessors()
    if d.terms > 1 and _launch.hopper() and not (large and wave and d.name in CUBLAS_LARGE):
        return "sm90"
    return "cublas" if large else "sm80"


_NONFINITE_BLOCKS = 1024      # blocks of gemm_nonfinite: few, since they usually return at once
_NONFINITE_EXPRESSION = {"f": "gemm_nonfinite<float>", "d": "gemm_nonfinite<double>"}


def nonfinite_report(a, b):
    """``(words, for_a, for_b)``: the zeroed uint32 report that the operand kernels of ``a`` (batch or
    1, m, k) and ``b`` (batch or 1, k, n) fill and ``fix_nonfinite`` reads (A's and B's peak words,
    then a flag per row of A and per column of B), and each operand's ``(words, peak, lines)``."""
    import cupy
    lines_a = a.shape[0] * a.shape[1]
    words = cupy.zeros(2 + lines_a + b.shape[0] * b.shape[2], np.uint32)
    return words, (words, 0, 2), (words, 1, 2 + lines_a)


def fix_nonfinite(a, b, c, report):
    """Give ``c`` (batch, m, n; float32 or float64, as ``a`` and ``b``) the float64 product's NaN/inf
    where the operand kernels for ``a`` (batch or 1, m, k) and ``b`` (batch or 1, k, n) reported them
    in ``report`` (the words of ``nonfinite_report``), and for float32 recompute
    entries whose narrow products overflowed: one launch of ``kernels/gemm_nonfinite_sm80.cu``,
    which returns at once when neither can occur."""
    from ._launch import launch
    batch, m, n = c.shape
    lines_a = a.shape[0] * m
    grid = (min(-(-c.size // 256), _NONFINITE_BLOCKS), 1, 1)
    launch(NONFINITE_FILE, _NONFINITE_EXPRESSION[c.dtype.char], grid, (256, 1, 1),
           (a, b, c, report, _at(report, 2), _at(report, 2 + lines_a), np.int32(m), np.int32(n),
            np.int32(a.shape[-1]), np.int64(batch), np.int32(a.shape[0] > 1), np.int32(b.shape[0] > 1)))
    return c


def matmul(a, b, d, *, engine="auto", tile=None, chunk=None, checked=False, caches=(None, None)):
    """``a @ b`` (cupy float32, ndim >= 2, batch dimensions broadcast) in scheme ``d``, queued on the
    current stream with no host wait.

    ``tile``: the mma.sync kernel's launch shape; ``chunk``: the hi*hi k-chunk of the cuBLAS and
    sm90 engines (default ``cublas_chunk(d, k)``). Without ``checked`` the inputs must be finite.
    ``checked=True`` (the public call): NaN/inf in the result exactly where the float64 product has
    them, and entries whose narrow products overflow recomputed as float64 dot products, all on the
    device (the split reports NaN/inf and peaks as it reads; ``kernels/gemm_nonfinite_sm80.cu``).
    ``caches``: per operand None or a ``cache(key, make)`` (``SplitArray._cached``) that keeps its
    split operand (``cached_split``).

    Accuracy: ``accuracy.gemm_bound(a, b, d, engine="gpu")``, checked by
    ``tests/test_kernels_gemm.py::test_gpu_matmul_error_within_bound``.
    """
    import cupy
    batch_shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    batch = math.prod(batch_shape)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if batch == 0 or m == 0 or n == 0 or k == 0:
        return cupy.zeros(batch_shape + (m, n), np.float32)
    if engine not in ENGINES:
        raise ValueError(f"matmul: unknown GPU engine {engine!r}; expected one of {ENGINES}")
    if engine == "auto":
        engine = auto_engine(d, m, n, k, batch)
    pad = padded_k(k, d)
    a, b = flatten_batch(a, batch_shape, batch), flatten_batch(b, batch_shape, batch)
    report, for_a, for_b = nonfinite_report(a, b) if checked else (None, None, None)
    stacked = engine == "cublas"
    pa = cached_split(a, d, stacked=stacked, transpose=False, pad=pad, report=for_a, cache=caches[0])
    pb = cached_split(b, d, stacked=stacked, transpose=True, pad=pad, report=for_b, cache=caches[1])
    c = cupy.empty((batch, m, n), np.float32)
    if engine == "cublas":
        _gemm_cublas(pa, pb, c, d, chunk or cublas_chunk(d, k))
        if pa.exponent is not None:
            _unscale(c, pa, pb)
    elif engine == "sm90":
        _gemm_sm90(pa, pb, c, d, chunk or cublas_chunk(d, k))
    else:
        _gemm_sm80(pa, pb, c, d, tile or auto_tile(d, m, n))
    if checked:
        fix_nonfinite(a, b, c, report)
    return c.reshape(batch_shape + (m, n))


def cached_split(x, d, *, stacked, transpose, pad, report, cache):
    """The operand of ``split_stacked`` (``stacked``) or ``split_operand``; with ``cache`` made once
    per scheme, layout, side and shape (with its own NaN/inf report words, which each call copies
    into ``report``) and reused. ``split_operand``'s parts of a matrix on one side of a product are
    its transpose's on the other side (rows and exponents alike), so a 2-D operand also names that
    key for a transposed view to share with its base."""
    splitter = split_stacked if stacked else split_operand
    if cache is None:
        return splitter(x, d, transpose=transpose, pad=pad, report=report)
    import cupy
    lines = x.shape[0] * x.shape[2 if transpose else 1]

    def make():
        words = cupy.zeros(1 + lines, np.uint32)            # the peak, then a flag per output row
        return splitter(x, d, transpose=transpose, pad=pad, report=(words, 0, 1)), words

    def key(side, shape):
        return "gpu", d.name, stacked, side, pad, shape

    other_side = None if stacked or x.shape[0] != 1 else key(not transpose, (1, x.shape[2], x.shape[1]))
    operand, words = cache(key(transpose, x.shape), make, other_side)
    if report is not None:
        target, peak, first = report
        stream = cupy.cuda.get_current_stream().ptr
        for at, start, count in ((peak, 0, 1), (first, 1, lines)):
            cupy.cuda.runtime.memcpyAsync(_at(target, at), _at(words, start), 4 * count,
                                          cupy.cuda.runtime.memcpyDeviceToDevice, stream)
    return operand


def flatten_batch(x, batch_shape, batch):
    """``x`` as a C-contiguous (batch or 1, rows, cols) array (copies only when it must)."""
    import cupy
    own = math.prod(x.shape[:-2])
    if own not in (1, batch):
        x = cupy.broadcast_to(x, batch_shape + x.shape[-2:])
        own = batch
    return cupy.ascontiguousarray(x.reshape((own,) + x.shape[-2:]))
