"""The fused GEMM engine for batches of small matrices: ``kernels/gemm_fused_sm80.cu`` (sm_80 on).

Each warp computes one output tile of one batch entry straight from float32 A and B: a first sweep
over its rows of A and columns of B finds their pow2 exponents and NaN/inf, a second splits every
value as it loads it into mma.sync fragments and multiplies. No part matrix goes through memory, so
a product reads A and B and writes C once, where the split engines also write and read their parts;
and there is one launch, which the split's report and the NaN/inf fix-up would otherwise add to. Its
numerics are ``gemm_sm80``'s (the same parts, products, accumulation and promotions, the same
recomputed entries), so its results equal that engine's bit for bit.
"""
import ctypes

from .gemm_sm80 import pairs_mask, small_shift
from .launch import PreparedLaunch, launch
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


def _geometry(d, m, n, k, batch, a_batched, b_batched):
    """``(expression, grid, block, scalar arguments as (ctypes type, value)))`` of one launch."""
    tile = fused_tile(m, n)
    warps = batch * -(-m // (16 * tile[0])) * -(-n // (8 * tile[1]))
    scalars = ((ctypes.c_int, m), (ctypes.c_int, n), (ctypes.c_int, k), (ctypes.c_longlong, batch),
               (ctypes.c_int, int(a_batched)), (ctypes.c_int, int(b_batched)), (ctypes.c_int, int(peak_emax(d, k))),
               (ctypes.c_int, d.overflow_exponent(k)))
    return fused_expression(d, tile), (-(-warps // WARPS), 1, 1), (32 * WARPS, 1, 1), scalars


def gemm_fused(a, b, c, d):
    """``c`` (batch, m, n) = the scheme's product of contiguous float32 ``a`` (batch or 1, m, k) and
    ``b`` (batch or 1, k, n) by ``gemm_fused_sm80``, with the float64 product's NaN/inf and range."""
    batch, m, n = c.shape
    expression, grid, block, scalars = _geometry(d, m, n, a.shape[-1], batch, a.shape[0] > 1, b.shape[0] > 1)
    launch(FUSED_FILE, expression, grid, block, (a, b, c, *(kind(value) for kind, value in scalars)))
    return c


def fused_launch(d, m, n, k, batch, a_batched, b_batched):
    """``gemm_fused`` for these sizes as a ``launch.PreparedLaunch`` called with the pointers of
    ``a``, ``b``, ``c``."""
    expression, grid, block, scalars = _geometry(d, m, n, k, batch, a_batched, b_batched)
    args = [ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()] + [kind(value) for kind, value in scalars]
    return PreparedLaunch(FUSED_FILE, expression, grid, block, args)
