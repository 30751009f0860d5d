"""The split on the device: float32 operands into the parts the GEMM engines read.

``kernels/split_terms_sm80.cu`` writes the parts of ``splitprec.split`` bit for bit (float32
subnormals kept) in either engine layout: (terms, batch, rows, K') K-major for the kernels, or
stacked along K for cuBLAS. K' is K zero-padded to whole 128-byte k-blocks. For pow2 schemes the
row and column exponents come from ``kernels/scale_pow2_sm80.cu`` (or from the split itself where
K fits one of its tiles), which also undoes the scaling after a cuBLAS product.
"""
import math
from dataclasses import dataclass

import numpy as np

from ..._backend import broadcast_shapes
from .launch import launch

SPLIT_FILE = "split_terms_sm80.cu"
SCALE_FILE = "scale_pow2_sm80.cu"
FORMAT_CODE = {"tf32": 0, "bf16": 1, "fp16": 2}
ELEMENT_BYTES = {"tf32": 4, "bf16": 2, "fp16": 2}
BLOCK_BYTES = 128          # k-block of the kernels: 8 chunks of 16 bytes
MAX_GRID_Y = MAX_GRID_Z = 65535   # largest grid y and z extents of a launch
SPLIT_TILE = 64            # split_terms_sm80's (TILE, TILE) input tile per block and step
_SPLIT_GRID_Y = 128        # split blocks along y; each loops over its share of row tiles
_EXPONENT_WARPS = 8        # warps per block of the exponent kernels (WARPS in SCALE_FILE)
_COLUMN_SHARE = 256        # rows per block of column_peaks, at least (fewer blocks, fewer atomics)


def split_expression(d, *, transpose):
    return f"split_terms_sm80<{FORMAT_CODE[d.base]}, {d.terms}, {d.shift}, {str(transpose).lower()}>"


def padded_k(k, d):
    """K rounded up to whole k-blocks of the kernels (``BLOCK_BYTES`` bytes of parts)."""
    per_block = BLOCK_BYTES // ELEMENT_BYTES[d.base]
    return -(-k // per_block) * per_block


def at(x, offset=0):
    """Device address of element ``offset`` of cupy ``x`` (C order), 0 for None: a kernel argument
    without the host cost of a cupy view."""
    return 0 if x is None else x.data.ptr + offset * x.itemsize


def peak_emax(d, k):
    """The kernels' ``emax`` argument for products of inner dimension ``k`` in scheme ``d``: exponents
    put a slice's largest magnitude into ``[2**(emax-1), 2**emax)``, i.e. ``d.scale_exponent(k) + 1``
    (the rule of ``splitprec.split``; fp16: the format's own emax)."""
    return np.int32(d.scale_exponent(k) + 1)


def pow2_exponents(x, emax, axis):
    """Per-slice pow2 exponents of float32 ``x`` (batch, rows, cols) along ``axis``: (batch, rows) int32
    for -1, (batch, cols) for -2.

    ``splitprec.split._pow2_exponent`` (``peak = f * 2**e``, f in [0.5, 1), exponent ``e - emax``,
    0 for an all-zero slice; NaN/inf ignored) from the integer bits of each slice's largest finite
    magnitude: rows by one warp each, columns by blocks of 128 adjacent columns that ``atomicMax``
    their share of the rows into a zeroed buffer, then turned into exponents in place.
    """
    import cupy
    batch, rows, cols = x.shape
    threads = (32 * _EXPONENT_WARPS, 1, 1)
    if axis == -1:
        exponent = cupy.empty((batch, rows), np.int32)
        launch(SCALE_FILE, "row_exponents", (min(-(-exponent.size // _EXPONENT_WARPS), 1 << 16), 1, 1), threads,
               (x, exponent, np.int64(exponent.size), np.int32(cols), emax))
        return exponent
    exponent = cupy.zeros((batch, cols), np.int32)
    grid = (-(-cols // 128), min(-(-rows // _COLUMN_SHARE), MAX_GRID_Y))
    for z0 in range(0, batch, MAX_GRID_Z):
        z1 = min(batch, z0 + MAX_GRID_Z)
        launch(SCALE_FILE, "column_peaks", grid + (z1 - z0,), threads,
               (at(x, z0 * rows * cols), at(exponent, z0 * cols), np.int32(rows), np.int32(cols)))
    launch(SCALE_FILE, "peak_exponents", (min(-(-exponent.size // 256), 1 << 16), 1, 1), (256, 1, 1),
           (exponent, np.int64(exponent.size), emax))
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
    a pass of ``pow2_exponents`` first. With
    ``report = (words, peak, lines)`` (a zeroed uint32 cupy array and two indices into it: one word,
    and one per output row across the batch from ``lines`` on) the kernel raises the peak word to
    the largest ``|x|`` bits it reads (NaN/inf included), splits NaN/inf as zeros and sets the line
    words of the output rows (rows of A, columns of B) that hold one."""
    import cupy
    batch, rows, cols = x.shape
    out_rows = cols if transpose else rows
    pow2 = d.scaling == "pow2"
    k = rows if transpose else cols
    emax = peak_emax(d, k)
    find = pow2 and k <= SPLIT_TILE
    if find:
        exponent = cupy.empty((batch, out_rows), np.int32)
    elif pow2:
        exponent = pow2_exponents(x, emax, -2 if transpose else -1)
    else:
        exponent = None
    grid = (-(-(cols if transpose else pad) // SPLIT_TILE),
            min(-(-(pad if transpose else rows) // SPLIT_TILE), _SPLIT_GRID_Y), 1)   # the kernel loops over y
    for z0 in range(0, batch, MAX_GRID_Z):
        z1 = min(batch, z0 + MAX_GRID_Z)
        launch(SPLIT_FILE, split_expression(d, transpose=transpose), grid[:2] + (z1 - z0,), (256, 1, 1),
               (at(x, z0 * rows * cols), at(out, z0 * out_rows * row_stride), at(exponent, z0 * out_rows),
                np.int32(rows), np.int32(cols), np.int32(pad), np.int64(row_stride), np.int64(term_stride),
                *((0, 0) if report is None else
                  (at(report[0], report[1]), at(report[0], report[2] + z0 * out_rows))),
                np.int32(find), emax))
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
        for offset, start, count in ((peak, 0, 1), (first, 1, lines)):
            cupy.cuda.runtime.memcpyAsync(at(target, offset), at(words, start), 4 * count,
                                          cupy.cuda.runtime.memcpyDeviceToDevice, stream)
    return operand


def unscale(c, pa, pb):
    """Undo pow2 scaling in place: ``c *= 2**(row + col)``, one rounding, subnormals kept."""
    batch, m, n = c.shape
    rows = batch * m
    launch(SCALE_FILE, "scale_rows_cols", (min(rows, 1 << 16), 1, 1), (256, 1, 1),
           (c, pa.exponent, pb.exponent, np.int32(m), np.int32(n), np.int64(rows),
            np.int32(m if pa.exponent.shape[0] == batch else 0),
            np.int32(n if pb.exponent.shape[0] == batch else 0)))
    return c


def product_shape(a, b):
    """``(batch shape, batch size, m, k, n)`` of ``a @ b`` (batch dimensions broadcast)."""
    batch_shape = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return batch_shape, math.prod(batch_shape), a.shape[-2], a.shape[-1], b.shape[-1]


def flatten_batch(x, batch_shape, batch):
    """``x`` as a C-contiguous (batch or 1, rows, cols) array (copies only when it must)."""
    import cupy
    own = math.prod(x.shape[:-2])
    if own not in (1, batch):
        x = cupy.broadcast_to(x, batch_shape + x.shape[-2:])
        own = batch
    return cupy.ascontiguousarray(x.reshape((own,) + x.shape[-2:]))
