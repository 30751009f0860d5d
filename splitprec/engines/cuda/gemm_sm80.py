"""The mma.sync GEMM engine (any GPU from sm_80): ``kernels/gemm_split_sm80.cu``.

A cp.async pipeline feeds mma.sync tensor-core products of the split operands (A as (terms, batch,
m, K'), B transposed as (terms, batch, n, K')); hi*hi and the small products are promoted into
float32 with round-to-nearest adds every 128-byte k-block (64 bf16/fp16 or 32 tf32 values of k),
the small products added first (docs/bounds.md, section 5).
"""
from dataclasses import dataclass

import numpy as np

from .launch import launch
from .split import BLOCK_BYTES, ELEMENT_BYTES, FORMAT_CODE, MAX_GRID_Z, at

GEMM_FILE = "gemm_split_sm80.cu"
SHARED_LIMIT = 227 * 1024    # dynamic shared memory per block on sm_80 / sm_90


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


def pairs_mask(d):
    return sum(1 << (3 * i + j) for i, j in d.products)


def small_shift(d):
    """The one power-of-two exponent of every small product (the kernel scales them together)."""
    shifts = {(i + j) * d.shift for i, j in d.products if i + j > 0}
    if len(shifts) > 1:
        raise ValueError(f"gemm_split_sm80: scheme {d.name!r} scales its small products by "
                         f"different powers of two {sorted(shifts)}; expected one")
    return shifts.pop() if shifts else 0


def gemm_expression(d, tile):
    return (f"gemm_split_sm80<{FORMAT_CODE[d.base]}, {d.terms}, {pairs_mask(d)}u, {small_shift(d)}, "
            f"{tile.mt}, {tile.warps_m}, {tile.warps_n}, {tile.stages}>")


def fits(d, tile):
    """True when ``tile``'s pipeline for scheme ``d`` fits in one block's shared memory."""
    return _shared_bytes(d, tile) <= SHARED_LIMIT


def _shared_bytes(d, tile, k_blocks=None):
    """Shared memory of ``tile``'s pipeline; with ``k_blocks``, of the stages a product with that
    many k-blocks fills (fewer than ``tile.stages`` for short k: more blocks fit on an SM)."""
    rows = tile.block_m + 32 * tile.warps_n
    stages = tile.stages if k_blocks is None else min(tile.stages, k_blocks)
    return stages * d.terms * rows * 9 * 16        # (stages, terms, BM + BN, 9 chunks of 16 B)


def batch_args(pa, pb, batch):
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


def gemm_sm80(pa, pb, c, d, tile):
    """``c`` (batch, m, n) = the scheme's product of split operands by ``gemm_split_sm80`` (mma.sync)."""
    batch, m, n = c.shape
    k_bytes = pa.parts.shape[-1] * ELEMENT_BYTES[d.base]
    k_chunks = k_bytes // 16
    strides, exp_strides = batch_args(pa, pb, batch)
    grid = (-(-n // (32 * tile.warps_n)), -(-m // tile.block_m))
    for z0 in range(0, batch, MAX_GRID_Z):
        z1 = min(batch, z0 + MAX_GRID_Z)
        args = (pa.parts.data.ptr + z0 * strides[1], pb.parts.data.ptr + z0 * strides[3], at(c, z0 * m * n),
                at(pa.exponent, z0 * exp_strides[0]), at(pb.exponent, z0 * exp_strides[1]),
                np.int32(m), np.int32(n), np.int32(k_chunks),
                *(np.int64(s) for s in strides), *(np.int32(s) for s in exp_strides))
        launch(GEMM_FILE, gemm_expression(d, tile), grid + (z1 - z0,), (tile.threads, 1, 1), args,
               shared_bytes=_shared_bytes(d, tile, k_bytes // BLOCK_BYTES))
    return c
