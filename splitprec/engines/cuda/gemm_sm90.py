"""The Hopper GEMM engine: ``kernels/gemm_split_sm90.cu`` (sm_90a).

TMA loads the split operands into a shared-memory ring; a producer warpgroup and two wgmma consumer
warpgroups run every product of the scheme in one launch, hi*hi promoted into float32 in registers
every ``chunk`` values of k and the small products in a second accumulator over all of k, so no
partial sum goes through memory. The operands are described to the TMA unit by tensor maps that
``cuTensorMapEncodeTiled`` (the CUDA driver, through ctypes) encodes, passed to the kernel by value.
"""
import functools

import numpy as np

from .gemm_sm80 import batch_args, pairs_mask, small_shift
from . import launch
from .split import BLOCK_BYTES, ELEMENT_BYTES, FORMAT_CODE, MAX_GRID_Y

GEMM90_FILE = "gemm_split_sm90.cu"
TILE = 128                 # the kernel's block tile (rows of A and of B per stage)


def _sm90_stages(d):
    return {1: 6, 2: 3, 3: 2}[d.terms]      # (terms * 32 KiB) per stage, at most 192 KiB in all


def _sm90_shared_bytes(d):
    return _sm90_stages(d) * d.terms * 2 * TILE * BLOCK_BYTES + 1024   # + 1024-byte alignment


def gemm90_expression(d):
    return (f"gemm_split_sm90<{FORMAT_CODE[d.base]}, {d.terms}, {pairs_mask(d)}u, {small_shift(d)}, "
            f"{_sm90_stages(d)}>")


def pieces_expression(d):
    return f"gemm_split_sm90_pieces<{pairs_mask(d)}u, {small_shift(d)}>"


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
    box = (ctypes.c_uint32 * 2)(BLOCK_BYTES // item, TILE)
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


def gemm_sm90(pa, pb, c, d, chunk):
    """``c`` (batch, m, n) = the scheme's product of split operands by ``gemm_split_sm90`` (TMA and
    wgmma), hi*hi promoted every ``chunk`` values of k; a last, partial wave split along k
    (``split_tiles``), its pieces added by ``gemm_split_sm90_pieces``."""
    import cupy
    batch, m, n = c.shape
    maps = (_tensor_map(pa.parts), _tensor_map(pb.parts))
    per_block = BLOCK_BYTES // ELEMENT_BYTES[d.base]
    k_blocks, chunk_blocks = pa.parts.shape[-1] // per_block, max(1, chunk // per_block)
    rows = []
    for op, size in ((pa, m), (pb, n)):
        rows += [op.parts.shape[1] * size, 0 if op.parts.shape[1] == 1 else size]
    _, exp_strides = batch_args(pa, pb, batch)
    tiles = -(-m // TILE) * -(-n // TILE)
    split_from, pieces = split_tiles(tiles, -(-k_blocks // chunk_blocks), batch, launch.multiprocessors())
    partial = None if pieces == 1 else cupy.empty(((tiles - split_from) * pieces, 2, TILE, TILE),
                                                  np.float32)
    for z0 in range(0, batch, MAX_GRID_Y):
        args = (*maps, c, pa.exponent, pb.exponent, np.int32(m), np.int32(n), np.int32(k_blocks),
                np.int32(chunk_blocks), *(np.int32(r) for r in rows), *(np.int32(s) for s in exp_strides),
                np.int32(z0), np.int32(split_from), np.int32(pieces), partial)
        launch.launch(GEMM90_FILE, gemm90_expression(d), (split_from + (tiles - split_from) * pieces,
                                                   min(batch - z0, MAX_GRID_Y), 1), (384, 1, 1), args,
               shared_bytes=_sm90_shared_bytes(d))
    if partial is not None:
        launch.launch(GEMM90_FILE, pieces_expression(d), (tiles - split_from, 1, 1), (256, 1, 1),
               (partial, c, pa.exponent, pb.exponent, np.int32(m), np.int32(n), np.int32(split_from),
                np.int32(pieces)))
    return c
