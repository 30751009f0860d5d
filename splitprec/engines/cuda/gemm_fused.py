"""The fused GEMM engine for batches of small products: ``kernels/gemm_fused_sm80.cu`` (sm_80 on).

Each warp computes one 16 x 16 or 32 x 32 output tile of one batch entry straight from float32 A
and B: it copies its rows of A and columns of B (k of at most ``MAX_K``) into its own
shared-memory panels, sweeps them for their pow2 exponents and NaN/inf, then splits each value as
it reads it into mma.sync fragments and multiplies. No part matrix goes through memory, so a
product reads A and B and writes C once, where the split engines also write and read their parts,
and there is one launch, where the split's report and the NaN/inf fix-up add three. Its numerics
are ``gemm_sm80``'s (the same parts, products, accumulation order and promotions, the same
recomputed entries), so its results equal that engine's bit for bit.
"""
import ctypes

import numpy as np

from .gemm_sm80 import pairs_mask, small_shift
from .launch import PreparedLaunch, launch
from .split import FORMAT_CODE, peak_emax

FUSED_FILE = "gemm_fused_sm80.cu"
WARPS = 4                   # FUSED_WARPS: warps per block, a tile each
MAX_K = 64                  # MAX_K: the panels hold all of k
TILES = ((1, 2), (2, 4))    # warp tiles (m16 tiles, n8 tiles): 16 x 16 where the output is that small
PADS = {"tf32": (4, 8)}     # Pads<FMT>: the panels' row pads (A, B) in floats; bf16/fp16 (8, 4)
SCALARS = {"i": (np.int32, ctypes.c_int), "q": (np.int64, ctypes.c_longlong)}   # a kernel's int, long long


def fused_tile(m, n):
    """The warp tile (m16 tiles, n8 tiles) for an m x n output."""
    return TILES[0] if max(m, n) <= 16 else TILES[1]


def fused_expression(d, tile):
    return (f"gemm_fused_sm80<{FORMAT_CODE[d.base]}, {d.terms}, {pairs_mask(d)}u, {d.shift}, {small_shift(d)}, "
            f"{tile[0]}, {tile[1]}>")


def shared_bytes(d, tile, k):
    """Dynamic shared memory of a block: per warp, A's panel (16 mt rows of kp + pad) and B's (kp rows
    of 8 nt + pad), kp = k rounded up to whole mma k-steps (8 tf32, 16 bf16/fp16 values)."""
    step = 8 if d.base == "tf32" else 16
    kp = -(-k // step) * step
    pad_a, pad_b = PADS.get(d.base, (8, 4))
    return WARPS * 4 * (16 * tile[0] * (kp + pad_a) + kp * (8 * tile[1] + pad_b))


def _launch_shape(d, m, n, k, batch, a_batched, b_batched):
    """``(expression, grid, block, shared bytes, scalar arguments as (SCALARS key, value))`` of a product."""
    if k > MAX_K:
        raise ValueError(f"gemm_fused: k = {k} is beyond the fused engine's panels; expected k <= {MAX_K}")
    tile = fused_tile(m, n)
    warps = batch * -(-m // (16 * tile[0])) * -(-n // (8 * tile[1]))
    scalars = (("i", m), ("i", n), ("i", k), ("q", batch), ("i", int(a_batched)), ("i", int(b_batched)),
               ("i", int(peak_emax(d, k))), ("i", d.overflow_exponent(k)))
    return fused_expression(d, tile), (-(-warps // WARPS), 1, 1), (32 * WARPS, 1, 1), shared_bytes(d, tile, k), scalars


def gemm_fused(a, b, c, d):
    """``c`` (batch, m, n) = the scheme's product of contiguous float32 ``a`` (batch or 1, m, k) and
    ``b`` (batch or 1, k, n), k <= ``MAX_K``, with the float64 product's NaN/inf and range."""
    batch, m, n = c.shape
    expression, grid, block, shared, scalars = _launch_shape(d, m, n, a.shape[-1], batch, a.shape[0] > 1,
                                                             b.shape[0] > 1)
    launch(FUSED_FILE, expression, grid, block, (a, b, c, *(SCALARS[kind][0](value) for kind, value in scalars)),
           shared_bytes=shared)
    return c


def fused_launch(d, m, n, k, batch, a_batched, b_batched):
    """``gemm_fused`` for these sizes as a ``launch.PreparedLaunch`` called with the pointers of ``a``,
    ``b``, ``c``."""
    expression, grid, block, shared, scalars = _launch_shape(d, m, n, k, batch, a_batched, b_batched)
    args = [ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()] + [SCALARS[kind][1](value) for kind, value in scalars]
    return PreparedLaunch(FUSED_FILE, expression, grid, block, args, shared_bytes=shared)
