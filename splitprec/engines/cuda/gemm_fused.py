"""The fused GEMM engine for batches of small matrices: ``kernels/gemm_fused_sm80.cu`` (sm_80 on).

Each warp computes one output tile of one batch entry straight from float32 A and B: a first sweep
over its rows of A and columns of B finds their pow2 exponents and NaN/inf, a second splits every
value as it loads it into mma.sync fragments and multiplies. No part matrix goes through memory, so
a product reads A and B and writes C once, where the split engines also write and read their parts;
and there is one launch, which the split's report and the NaN/inf fix-up would otherwise add to. Its
numerics are ``gemm_sm80``'s (the same parts, products, accumulation and promotions, the same
recomputed entries), so its results equal that engine's bit for bit.
"""
import numpy as np

from .gemm_sm80 import pairs_mask, small_shift
from .launch import launch
from .split import FORMAT_CODE, peak_emax

FUSED_FILE = "gemm_fused_sm80.cu"
WARPS = 4                   # FUSED_WARPS: warps per block, a tile each
TILES = ((1, 2), (2, 4))    # warp tiles (m16 tiles, n8 tiles): 16 x 16 for outputs that small, else 32 x 32


def fused_tile(m, n):
    """The warp tile (m16 tiles, n8 tiles) for an m x n output."""
    return TILES[0] if max(m, n) <= 16 else TILES[1]


def fused_expression(d, tile):
    return (f"gemm_fused_sm80<{FORMAT_CODE[d.base]}, {d.terms}, {pairs_mask(d)}u, {d.shift}, {small_shift(d)}, "
            f"{tile[0]}, {tile[1]}>")


def gemm_fused(a, b, c, d):
    """``c`` (batch, m, n) = the scheme's product of contiguous float32 ``a`` (batch or 1, m, k) and
    ``b`` (batch or 1, k, n) by ``gemm_fused_sm80``, with the float64 product's NaN/inf and range."""
    batch, m, n = c.shape
    k = a.shape[-1]
    tile = fused_tile(m, n)
    warps = batch * -(-m // (16 * tile[0])) * -(-n // (8 * tile[1]))
    launch(FUSED_FILE, fused_expression(d, tile), (-(-warps // WARPS), 1, 1), (32 * WARPS, 1, 1),
           (a, b, c, np.int32(m), np.int32(n), np.int32(k), np.int64(batch), np.int32(a.shape[0] > 1),
            np.int32(b.shape[0] > 1), peak_emax(d, k), np.int32(d.overflow_exponent(k))))
    return c
