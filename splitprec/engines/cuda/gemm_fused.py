"""The fused GEMM engine: the split done as float32 A and B are loaded, for products whose time is
the data's movement (batches of small matrices, skinny products).

No part matrix goes through memory, so a product reads A and B and writes C once, where the split
engines also write and read their parts; and there is one launch, which the split's report and the
NaN/inf fix-up would otherwise add to. Two kernels, chosen by the output's size:

- ``kernels/gemm_fused_sm80.cu`` for outputs of at most ``WARP_MAX_MN`` squared and k of at most
  ``WARP_MAX_K``: each warp computes one 16 x 16 or 32 x 32 tile of one batch entry from its own
  shared-memory copies of its rows of A and columns of B, splitting values as it reads them into
  mma.sync fragments;
- ``gemm_split_sm80_fused`` in ``kernels/gemm_split_sm80.cu`` otherwise: each block splits its
  float32 tiles into a shared-memory stage of the mma.sync engine's layout and multiplies it with
  that engine's code.

Both first sweep their rows of A and columns of B for the pow2 exponents and NaN/inf, and both have
``gemm_sm80``'s numerics (the same parts, products, accumulation order and promotions, the same
recomputed entries), so their results equal that engine's bit for bit.
"""
import ctypes

import numpy as np

from .gemm_sm80 import GEMM_FILE, Tile, pairs_mask, small_shift
from .launch import PreparedLaunch, launch
from .split import FORMAT_CODE, MAX_GRID_Z, at, peak_emax
from .tuning import TUNING

FUSED_FILE = "gemm_fused_sm80.cu"
WARPS = 4                   # FUSED_WARPS: warps per block of the warp kernel, a tile each
WARP_TILES = ((1, 2), (2, 4))    # its warp tiles (m16 tiles, n8 tiles): 16 x 16 where the output is that small
SCALARS = {"i": (np.int32, ctypes.c_int), "q": (np.int64, ctypes.c_longlong)}   # a kernel's int, long long
WARP_MAX_K = 64             # MAX_K: the warp kernel's panels hold all of k
PADS = {"tf32": (4, 8)}     # Pads<FMT>: the panels' row pads (A, B) in floats; bf16/fp16 (8, 4)
WARP_MAX_MN = TUNING["fused"]["warp_max_mn"]
TILE = Tile(*TUNING["fused"]["tile"])    # the block kernel's launch shape (its stages: 2, always)


def warp_tile(m, n):
    """The warp kernel's tile (m16 tiles, n8 tiles) for an m x n output."""
    return WARP_TILES[0] if max(m, n) <= 16 else WARP_TILES[1]


def warp_shared_bytes(d, tile, k):
    """Dynamic shared memory of the warp kernel: per warp, A's panel (16 mt rows of kp + pad) and B's
    (kp rows of 8 nt + pad), kp = k rounded up to whole mma k-steps (8 tf32, 16 bf16/fp16 values)."""
    step = 8 if d.base == "tf32" else 16
    kp = -(-k // step) * step
    pad_a, pad_b = PADS.get(d.base, (8, 4))
    return WARPS * 4 * (16 * tile[0] * (kp + pad_a) + kp * (8 * tile[1] + pad_b))


def warp_expression(d, tile):
    return (f"gemm_fused_sm80<{FORMAT_CODE[d.base]}, {d.terms}, {pairs_mask(d)}u, {d.shift}, {small_shift(d)}, "
            f"{tile[0]}, {tile[1]}>")


def block_expression(d, tile=TILE):
    return (f"gemm_split_sm80_fused<{FORMAT_CODE[d.base]}, {d.terms}, {pairs_mask(d)}u, {d.shift}, "
            f"{small_shift(d)}, {tile.mt}, {tile.warps_m}, {tile.warps_n}>")


def block_shared_bytes(d, tile=TILE):
    """Dynamic shared memory of the block kernel: two stages of (terms, BM + BN, 9 chunks of 16 B)."""
    return 2 * d.terms * (tile.block_m + 32 * tile.warps_n) * 9 * 16


def _launches(d, m, n, k, batch, a_batched, b_batched):
    """``[(file, expression, grid, block, shared bytes, batch offset, scalar arguments as (``SCALARS``
    key, value))]``: the launches of one product, a batch offset each (the block kernel's grid z holds at
    most ``MAX_GRID_Z`` entries)."""
    emax, overflow = int(peak_emax(d, k)), d.overflow_exponent(k)
    if max(m, n) <= WARP_MAX_MN and k <= WARP_MAX_K:
        tile = warp_tile(m, n)
        warps = batch * -(-m // (16 * tile[0])) * -(-n // (8 * tile[1]))
        scalars = (("i", m), ("i", n), ("i", k), ("q", batch),
                   ("i", int(a_batched)), ("i", int(b_batched)), ("i", emax),
                   ("i", overflow))
        return [(FUSED_FILE, warp_expression(d, tile), (-(-warps // WARPS), 1, 1), (32 * WARPS, 1, 1),
                 warp_shared_bytes(d, tile, k), 0, scalars)]
    grid = (-(-n // (32 * TILE.warps_n)), -(-m // TILE.block_m))
    scalars = (("i", m), ("i", n), ("i", k),
               ("q", m * k if a_batched else 0), ("q", k * n if b_batched else 0),
               ("i", emax), ("i", overflow))
    return [(GEMM_FILE, block_expression(d), grid + (min(batch - z0, MAX_GRID_Z),), (TILE.threads, 1, 1),
             block_shared_bytes(d), z0, scalars) for z0 in range(0, batch, MAX_GRID_Z)]


def gemm_fused(a, b, c, d):
    """``c`` (batch, m, n) = the scheme's product of contiguous float32 ``a`` (batch or 1, m, k) and
    ``b`` (batch or 1, k, n) by the fused kernels, with the float64 product's NaN/inf and range."""
    batch, m, n = c.shape
    k = a.shape[-1]
    a_batched, b_batched = a.shape[0] > 1, b.shape[0] > 1
    for filename, expression, grid, block, shared, z0, scalars in _launches(d, m, n, k, batch, a_batched, b_batched):
        pointers = (at(a, z0 * m * k * a_batched), at(b, z0 * k * n * b_batched), at(c, z0 * m * n))
        launch(filename, expression, grid, block, (*pointers, *(SCALARS[kind][0](value) for kind, value in scalars)),
               shared_bytes=shared)
    return c


def fused_launch(d, m, n, k, batch, a_batched, b_batched):
    """``gemm_fused`` for these sizes as one ``launch.PreparedLaunch`` called with the pointers of
    ``a``, ``b``, ``c``; None where the product takes more than one launch."""
    launches = _launches(d, m, n, k, batch, a_batched, b_batched)
    if len(launches) > 1:
        return None
    filename, expression, grid, block, shared, _, scalars = launches[0]
    args = [ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()] + [SCALARS[kind][1](value) for kind, value in scalars]
    return PreparedLaunch(filename, expression, grid, block, args, shared_bytes=shared)
