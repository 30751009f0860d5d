"""The CUDA FFT engine: the reference engine's passes on the device, and one fused kernel per step.

On Hopper, lengths 2..4096 with no prime factor above 7 in every scheme of tf32 or bf16 parts
(sub-vectors unscaled: the engines' power-of-two line scaling, ``plan.line_top``, already keeps
every value far from both ends of their float32 exponent range) or fp16 parts (power-of-two scaling
of each sub-vector and of the DFT block's columns, as ``splitprec.split.split`` scales the rows and
columns of a product) run all their passes in one
launch of ``kernels/fft_stockham_sm90.cu`` (one read and one write of the data; the same passes,
blocks, twiddles and split, each product's tensor-core chain at most 32 values of k long, 16 for
tf32, then promoted into float32); two- and three-step lengths run one launch per step (strided
loads and stores, the step twiddles applied on store). The same launches run overlap-save
convolutions (:func:`overlap_save`), cutting blocks from the input rows as they load and placing
the kept outputs as they store. Other plans run pass by pass on the GPU GEMM engine.
"""
import dataclasses
import functools
import struct
from typing import NamedTuple

import numpy as np

from ...split import split
from ..plan import LINE_MAX, dft_block, factorize, plan, real_twiddles
from ..reference.fft import Stockham
from . import gemm, launch
from .split import FORMAT_CODE, SCALE_FILE, pow2_exponents

KERNEL_FILE = "fft_stockham_sm90.cu"
NAN_FILE = "nan_lines_sm80.cu"   # the non-finite lines' fix-up, any GPU
KERNEL_THREADS = 256
# Part formats the fused kernel takes: whether it scales each sub-vector (fp16's narrow range needs
# it), and the shift between two parts.
_KERNEL_PARTS = {"tf32": (False, 0), "bf16": (False, 0), "fp16": (True, 11)}
_CTAS_PER_SM = 2                 # the kernel's __launch_bounds__; each CTA loops over line blocks
GPU_ROWS = 1 << 20               # rows per GEMM-engine call: bounds the engine's temporary parts


def kernel_supported(n, d):
    """True when the fused kernel runs a length-``n`` transform in scheme ``d`` on the current GPU:
    ``2 <= n <= 4096`` with no prime factor above 7, parts tf32, bf16 or fp16 (shift 11 between two
    parts), power-of-two scaling, Hopper (the kernel's wgmma exists there only)."""
    _, shift = _KERNEL_PARTS.get(d.base, (None, None))
    return (2 <= n <= LINE_MAX and factorize(n) is not None and d.scaling == "pow2" and shift is not None
            and (d.terms == 1 or d.shift == shift) and launch.hopper())


@functools.lru_cache(maxsize=None)
def kernel_expression(n, d):
    """The instantiation of ``fft_stockham_sm90`` for length ``n`` in scheme ``d`` (cached: one
    string per launch)."""
    pairs = sum(1 << (3 * i + j) for i, j in d.products)
    return f"fft_stockham_sm90<{FORMAT_CODE[d.base]}, {d.terms}, {pairs}u, {n}>"


def b_tiles(part, base):
    """The wgmma B operand of a zero-padded ``(32, cols)`` float32 part, as uint32 ``(cols, 32)``.

    Row ``n`` holds column ``n`` of the part (K-major: ``k`` along the row, 128 bytes: 32 tf32
    values, or 32 bf16 values (the top 16 bits) or fp16 values (exact: the part is one) and 32
    zeros); the 16-byte chunk ``c`` of row ``n`` is stored at chunk ``c ^ (n % 8)`` (128-byte swizzle).
    """
    values = np.ascontiguousarray(np.asarray(part, np.float32).T)
    bits = values.view(np.uint32)
    cols = bits.shape[0]
    if base != "tf32":
        halves = np.zeros((cols, 64), np.uint16)
        halves[:, :32] = bits >> 16 if base == "bf16" else values.astype(np.float16).view(np.uint16)
        bits = halves.view(np.uint32)
    rows = np.arange(cols)[:, None]
    tiles = np.empty((cols, 8, 4), np.uint32)
    tiles[rows, np.arange(8) ^ (rows % 8)] = bits.reshape(cols, 8, 4)
    return tiles.reshape(cols, 32)


def block_cols(r):
    """The kernel's wgmma ``n`` for radix ``r``: ``(Re, Im)`` of ``r`` outputs, as 8, 16 or 32 columns."""
    return 8 if 2 * r <= 8 else 16 if 2 * r <= 16 else 32


def kernel_blocks(radices, d):
    """The fused kernel's DFT-block parts for passes of ``radices``: the ``d.terms`` parts of each
    distinct radix ``r`` once, in pass order, each ``(block_cols(r), 32)`` uint32 in :func:`b_tiles`
    layout, flattened and concatenated (the kernel's ``block_offset``). fp16 parts are scaled per
    column, by ``2**(emax - 1)`` for every column (each one's largest entry is ``cos 0 = 1``), which
    the kernel undoes as a constant (``Fragment::BLOCK_EXPONENT``); tf32 and bf16 parts unscaled."""
    parts = []
    scaled = _KERNEL_PARTS[d.base][0]
    for r in dict.fromkeys(radices):
        for term in split(dft_block(r), d if scaled else dataclasses.replace(d, scaling="none"), axis=-2).terms:
            part = np.zeros((32, block_cols(r)), np.float32)
            part[:2 * r, :2 * r] = term
            parts.append(b_tiles(part, d.base).reshape(-1))
    return np.concatenate(parts)


LOAD_BLOCKS, STORE_BLOCKS, REAL_BLOCKS, ROW_TABLE = 1, 2, 4, 8   # the kernel's Blocks.io flags


# The kernel's LaunchArgs, passed by value: lines, batch_stride, out_batch_stride, in_row_stride,
# out_row_stride; row_flags, all_flag; batch_lines, in_line_stride, in_elem_stride, out_line_stride,
# out_elem_stride, use_table, io, block_lines, step, pad, in_length, start, keep; scale; batch_magic =
# ceil(2**31 / batch_lines) (C layout: 116 bytes, padded to 120).
_LAUNCH_ARGS = struct.Struct("<5q2Q13ifI4x")


_LAUNCH_BYTES = np.dtype((np.void, _LAUNCH_ARGS.size))   # cupy passes a one-element array by value


class Blocks(NamedTuple):
    """Overlap-save blocks of one launch (the kernel's ``Blocks``; :func:`overlap_save`): ``io``
    (LOAD_BLOCKS: cut from ``x``'s rows as it loads; STORE_BLOCKS: kept outputs placed in ``y``'s rows
    as it stores; REAL_BLOCKS: real rows, two blocks per line; ROW_TABLE: the output factors are one
    table of ``B`` per row), block lines per row, ``step`` between blocks, ``pad`` zeros in front,
    input row length and stride, kept positions ``[start, start + keep)`` and the output row stride;
    ``row_flags``/``all_flag``: device addresses of per-row and every-row NaN flags (or 0); ``scale``
    multiplies the values loaded (a power of two: exact)."""

    io: int = 0
    lines: int = 0
    step: int = 0
    pad: int = 0
    in_length: int = 0
    in_stride: int = 0
    start: int = 0
    keep: int = 0
    out_stride: int = 0
    row_flags: int = 0
    all_flag: int = 0
    scale: float = 1.0


@functools.lru_cache(maxsize=64)
def fused_operands(n, d):
    """The fused kernel's DFT-block parts (:func:`kernel_blocks`) and its concatenated twiddle
    tables for length ``n`` in scheme ``d``, on the device (copied once)."""
    import cupy
    passes = plan(n, d, "cpu").passes
    tables = [np.asarray(step.twiddle).reshape(-1) for step in passes if step.twiddle is not None]
    twiddles = np.concatenate(tables) if tables else np.zeros(1, np.complex64)
    return cupy.asarray(kernel_blocks([step.r for step in passes], d)), cupy.asarray(twiddles)


def has_kernel(p, d):
    """True when the single-step plan ``p`` runs as one launch of the fused kernel in scheme ``d``."""
    return p.steps is None and kernel_supported(p.n, d)


def _launch_lines(x, y, p, d, lines, layout, table=None, nonfinite=None, blocks=Blocks()):
    """One launch of the fused kernel: ``lines`` transforms of length ``p.n`` from ``x`` into ``y``;
    ``nonfinite`` (a uint32 device scalar, or None) gets 1 when ``x`` holds NaN or ±inf.

    ``layout = (lines per batch, input batch, line and element strides, output batch, line and
    element strides)``: element ``j`` of line ``(b, c)`` is read at ``b * batch_stride + c *
    line_stride + j * element_stride`` of the input's strides and written there of the output's;
    ``table`` (complex64, indexed by
    the output offset within the batch) multiplies the outputs on store; ``blocks`` cuts
    overlap-save blocks from ``x`` and/or places the kept outputs in ``y`` instead.
    """
    tiles, twiddles = fused_operands(p.n, d)
    line_blocks = -(-lines // (LINE_MAX // p.n))
    grid = (min(line_blocks, _CTAS_PER_SM * launch.multiprocessors()), 1, 1)
    b = blocks
    batch_lines, in_batch, in_line, in_elem, out_batch, out_line, out_elem = layout
    args = np.frombuffer(_LAUNCH_ARGS.pack(lines, in_batch, out_batch, b.in_stride, b.out_stride, b.row_flags,
                                           b.all_flag, batch_lines, in_line, in_elem, out_line, out_elem,
                                           table is not None, b.io, b.lines, b.step, b.pad, b.in_length, b.start,
                                           b.keep, b.scale, -(-(1 << 31) // batch_lines)),
                         _LAUNCH_BYTES)
    launch.launch(KERNEL_FILE, kernel_expression(p.n, d), grid, (KERNEL_THREADS, 1, 1),
                   (x, y, twiddles, tiles, twiddles if table is None else table, nonfinite, args),
                   shared_bytes=1024 + tiles.nbytes + 2 * LINE_MAX * 8)
    return y


def runs_fused(p, d):
    """True when plan ``p`` runs in the fused kernel in scheme ``d``: one launch, or one per step
    (three where the second step is itself two)."""
    return has_kernel(p, d) or (p.steps is not None and has_kernel(p.steps[0], d) and runs_fused(p.steps[1], d))


def runs_blocks(p, d):
    """True when plan ``p`` runs in the fused kernel in at most two launches, which can also place
    overlap-save blocks as they store (:func:`overlap_save`)."""
    return runs_fused(p, d) and (p.steps is None or p.steps[1].steps is None)


def _fused(x, y, p, d, lines, nonfinite=None, times=None, blocks=Blocks()):
    """``lines`` forward DFTs of length ``p.n`` from ``x`` into ``y`` (complex64, ``(lines, n)``
    unless ``blocks`` cut or place them) by the fused kernel, outputs times ``times`` as it stores
    them, when given. A two-step plan is one launch per step: the first reads ``x`` (and cuts the
    blocks), the second writes ``y`` (and places them, and applies ``times``); a second step of two
    steps is :func:`_nested_second` (``blocks`` may only cut: :func:`runs_blocks`)."""
    import cupy
    n = p.n
    if p.steps is None:
        return _launch_lines(x, y, p, d, lines, (1, n, 0, 1, n, 0, 1), times, nonfinite, blocks)
    first, second, table = p.steps
    n1, n2 = first.n, second.n
    z = y if second.steps is not None else cupy.empty((lines, n), np.complex64)
    _launch_lines(x, z, first, d, lines * n2, (n2, n, 1, n2, n, 1, n2), table, nonfinite,
                  blocks._replace(io=blocks.io & ~(STORE_BLOCKS | ROW_TABLE)))
    if second.steps is not None:
        return _nested_second(y, p, d, lines, times)
    return _launch_lines(z, y, second, d, lines * n1, (n1, n, n2, 1, n, 1, n1), times, None,
                         blocks._replace(io=blocks.io & ~LOAD_BLOCKS))


def _nested_second(y, p, d, lines, times):
    """Step 2 of ``p`` (``n = n1 * n2``) where ``n2 = a * b`` is itself two steps, in place on ``y``
    (``(lines, n1, n2)``, step 1's output): its ``lines * n1`` rows by the fused kernel's two
    launches, the second storing output ``ka + a * kb`` of row ``(l, k1)`` at ``y[l, k1 + n1 * (ka
    + a * kb)]``. That launch's lines are ``(ka, k1)``, ``k1`` fastest, so a CTA stores adjacent
    outputs, one launch per ``l`` (the offset is no single stride of ``(l, ka)``); ``times``, if
    given, is a product of its own."""
    import cupy
    n1, (inner_first, inner_second, inner_table) = p.steps[0].n, p.steps[1].steps
    n2, a, b = p.steps[1].n, inner_first.n, inner_second.n
    z = _launch_lines(y, cupy.empty_like(y), inner_first, d, lines * n1 * b, (b, n2, 1, b, n2, 1, b),
                      inner_table)
    for row in range(lines):
        _launch_lines(z[row], y[row], inner_second, d, n1 * a, (n1, b, n2, 1, n1, 1, n1 * a))
    if times is not None:
        y *= times
    return y


def overlap_save(x, spectrum, pad, start, keep, d, flags):
    """Positions ``[start, start + keep)`` of the linear convolutions of the rows of ``x`` (cupy,
    ``(rows, n)`` contiguous, float32 or complex64) with a filter of ``pad + 1`` taps whose DFT of
    length ``B``, divided by ``B``, is ``spectrum`` (complex64 ``(B,)``, or ``(rows, B)``: one filter
    per row), by overlap-save in the
    fused kernel: blocks of ``B`` values ``step = B - pad`` apart (``x`` zero-padded by ``pad`` in
    front), real rows two blocks per line as Re and Im; the first transform cuts them as it loads
    and multiplies by ``spectrum`` as it stores, the second (the circular convolution read
    backwards, ``DFT(DFT(z))[-j] = B z[j]``) places each block's last ``step`` outputs as it stores.
    ``flags`` (uint32 ``(rows + 1,)``, zeros but for ``flags[0]``, the filter's NaN/inf flag, and
    with one filter per row the flags its rows set): the first transform sets ``flags[1 + r]`` when
    row ``r`` holds NaN or ±inf, and the second writes such rows, or all when ``flags[0]`` is set, as
    NaN, as one transform of the whole row would.
    """
    import cupy
    length = spectrum.shape[-1]
    p = plan(length, d, "gpu")
    rows, n = x.shape
    step = length - pad
    blocks = -(-(start + keep) // step)                  # the blocks that hold the positions kept
    real = x.dtype == np.float32
    lines = -(-blocks // 2) if real else blocks
    geometry = Blocks(REAL_BLOCKS if real else 0, lines, step, pad, n, n, start, keep, keep,
                      flags.data.ptr + flags.itemsize, flags.data.ptr)
    per_row = ROW_TABLE if spectrum.ndim == 2 else 0
    y = _fused(x, cupy.empty((rows * lines, length), np.complex64), p, d, rows * lines, times=spectrum.reshape(-1),
               blocks=geometry._replace(io=geometry.io | LOAD_BLOCKS | per_row))
    return _fused(y, cupy.empty((rows, keep), x.dtype), p, d, rows * lines,
                  blocks=geometry._replace(io=geometry.io | STORE_BLOCKS))


def _gpu_block_product(rows, block, d):
    """``rows @ block`` by the GPU GEMM engine, in chunks of rows its launch grid can hold."""
    import cupy
    if rows.shape[0] <= GPU_ROWS:
        return gemm.matmul(rows, block, d)
    out = cupy.empty((rows.shape[0], block.shape[1]), np.float32)
    for first in range(0, rows.shape[0], GPU_ROWS):
        out[first:first + GPU_ROWS] = gemm.matmul(rows[first:first + GPU_ROWS], block, d)
    return out


@functools.lru_cache(maxsize=None)
def _flag_nonfinite_kernel():
    """cupy kernel ``(x, flag)``: sets ``flag`` to 1 where complex64 ``x`` holds NaN or ±inf."""
    import cupy
    return cupy.ElementwiseKernel(
        "complex64 x", "raw uint32 flag",
        "if (!isfinite(x.real()) || !isfinite(x.imag())) atomicOr(&flag[0], 1u);", "splitprec_flag_nonfinite")


def nan_flagged_lines(x, y, flag):
    """``y`` (cupy, contiguous) with its lines set to NaN where the line of ``x`` (the transform's
    input) holds NaN or ±inf, checked on the device only when the transform raised ``flag``: no host
    round trip, so finite input costs one near-empty launch. Every path keeps lines independent, so
    the other lines are already right."""
    import cupy
    x, y = cupy.ascontiguousarray(x), cupy.ascontiguousarray(y)
    lines = y.size // y.shape[-1] if y.size else 0
    if lines:
        floats = [a.view(np.float32) if a.dtype.kind == "c" else a for a in (x, y)]
        grid = min(lines, 4 * launch.multiprocessors())
        launch.launch(NAN_FILE, "nan_lines", (grid, 1, 1), (1024, 1, 1),
                       (floats[0], np.int32(floats[0].shape[-1]), floats[1], np.int32(floats[1].shape[-1]),
                        np.int64(lines), flag))
    return y


# The complex64 arithmetic of real_forward / real_inverse for cupy, one pass each, operation for
# operation the numpy expressions there (no contraction: every product and sum rounded once).
_UNPACK = """
const long long line = i / (m + 1), k = i % (m + 1);
const complex<float> a = z[line * m + k % m], c = z[line * m + (m - k) % m];
const float br = c.real(), bi = -c.imag();
const float er = __fmul_rn(__fadd_rn(a.real(), br), 0.5f), ei = __fmul_rn(__fadd_rn(a.imag(), bi), 0.5f);
const float o_r = __fmul_rn(__fsub_rn(a.imag(), bi), 0.5f), o_i = -__fmul_rn(__fsub_rn(a.real(), br), 0.5f);
const float wr = w[k].real(), wi = w[k].imag();
X = complex<float>(__fadd_rn(er, __fsub_rn(__fmul_rn(wr, o_r), __fmul_rn(wi, o_i))),
                   __fadd_rn(ei, __fadd_rn(__fmul_rn(wr, o_i), __fmul_rn(wi, o_r))));
"""


_PACK = """
const long long line = i / m, k = i % m;
const complex<float> a = c[line * (m + 1) + k], x = c[line * (m + 1) + m - k];
const float ar = a.real(), br = x.real();   // X_0's and X_m's imaginary parts: 0, NaN if not finite
const float ai = k == 0 ? __fmul_rn(a.imag(), 0.f) : a.imag(), bi = k == 0 ? __fmul_rn(x.imag(), 0.f) : -x.imag();
const float tr = __fsub_rn(ar, br), ti = __fsub_rn(ai, bi), wr = w[k].real(), wi = -w[k].imag();
const float qr = __fsub_rn(__fmul_rn(wr, tr), __fmul_rn(wi, ti)), qi = __fadd_rn(__fmul_rn(wr, ti), __fmul_rn(wi, tr));
Z = complex<float>(__fsub_rn(__fadd_rn(ar, br), qi), __fadd_rn(__fadd_rn(ai, bi), qr));
"""


@functools.lru_cache(maxsize=None)
def _real_kernels():
    """(unpack, pack): cupy kernels of the real transforms' post- and pre-processing."""
    import cupy
    return (cupy.ElementwiseKernel("raw complex64 z, raw complex64 w, int64 m", "complex64 X", _UNPACK,
                                   "splitprec_rfft_unpack"),
            cupy.ElementwiseKernel("raw complex64 c, raw complex64 w, int64 m", "complex64 Z", _PACK,
                                   "splitprec_irfft_pack"))


class CudaStockham(Stockham):
    """The reference algorithm on cupy arrays: whole plans in the fused kernel where it applies
    (unless ``fused=False``), otherwise pass by pass with the GPU GEMM engine's products."""

    device = "gpu"

    def __init__(self, fused=True):
        self.fused = fused

    def block_product(self, rows, step, d):
        return _gpu_block_product(rows, step.block, d)

    def line_exponents(self, lines, top):
        """The reference engine's, from the integer bits of each line (``row_exponents`` of
        ``kernels/scale_pow2_sm80.cu``, which -ftz cannot flush)."""
        flat = lines.view(np.float32)
        return pow2_exponents(flat[None], np.int32(top), -1).reshape(-1, 1)

    def scale_lines(self, lines, exponent):
        """The reference engine's, by ``scale_rows_cols`` of ``kernels/scale_pow2_sm80.cu`` on a copy
        (one rounding per component, subnormals kept)."""
        import cupy
        flat = cupy.array(lines.view(np.float32), order="C")
        rows, cols = flat.shape
        launch.launch(SCALE_FILE, "scale_rows_cols", (min(rows, 1 << 16), 1, 1), (256, 1, 1),
                      (flat, cupy.ascontiguousarray(exponent, dtype=np.int32), cupy.zeros(cols, np.int32),
                       np.int32(rows), np.int32(cols), np.int64(rows), np.int32(0), np.int32(0)))
        return flat.view(lines.dtype)

    def conjugate(self, x):
        """The reference engine's, as a flip of each imaginary part's sign bit: cupy's ``conj``
        compiles with -ftz and flushes subnormal imaginary parts."""
        import cupy
        y = cupy.array(x, dtype=np.complex64, order="C")
        y.view(np.uint32)[..., 1::2] ^= np.uint32(1 << 31)
        return y

    def flag_nonfinite(self, x, nonfinite):
        if nonfinite is not None:
            _flag_nonfinite_kernel()(x, nonfinite)

    def lines(self, x, p, d, nonfinite=None, times=None):
        if self.fused and runs_fused(p, d):
            import cupy
            x = cupy.ascontiguousarray(x)
            return _fused(x, cupy.empty_like(x), p, d, x.shape[0], nonfinite, times)
        return super().lines(x, p, d, nonfinite, times)

    def unpack(self, z, n):
        import cupy
        out = cupy.empty(z.shape[:-1] + (n // 2 + 1,), np.complex64)
        return _real_kernels()[0](cupy.ascontiguousarray(z), real_twiddles(n, "gpu"), np.int64(n // 2), out)

    def pack(self, c, n):
        import cupy
        packed = cupy.empty(c.shape[:-1] + (n // 2,), np.complex64)
        return _real_kernels()[1](cupy.ascontiguousarray(c, dtype=np.complex64), real_twiddles(n, "gpu"),
                                  np.int64(n // 2), packed)

    def padded_forward(self, h, length, d, nonfinite=None, scale=1.0, row_flags=None):
        """As the reference engine's; the fused kernel pads and scales as it loads (a block per
        row), and sets ``row_flags[r]`` (uint32 ``(rows,)`` on the device, fused kernel only) when
        row ``r`` holds NaN or ±inf."""
        p = plan(length, d, "gpu")
        if not (self.fused and runs_fused(p, d)):
            return super().padded_forward(h, length, d, nonfinite, scale)
        import cupy
        rows, n = h.shape
        h = cupy.ascontiguousarray(h)
        io = LOAD_BLOCKS | (REAL_BLOCKS if h.dtype == np.float32 else 0)
        return _fused(h, cupy.empty((rows, length), np.complex64), p, d, rows, nonfinite,
                      blocks=Blocks(io, 1, length, 0, n, n, row_flags=0 if row_flags is None else row_flags.data.ptr,
                                    scale=scale))


ENGINE = CudaStockham()
PASSES = CudaStockham(fused=False)      # pass by pass even where the fused kernel applies


def forward(x, d, *, nonfinite=None, times=None, factor=1.0, kernel=True):
    """The reference engine's ``forward`` on the GPU; ``kernel=False`` runs the passes one by one
    even where the fused kernel applies. ``nonfinite``: a uint32 device scalar set to 1 when ``x``
    holds NaN or ±inf, by the kernel that first reads it."""
    return (ENGINE if kernel else PASSES).forward(x, d, nonfinite=nonfinite, times=times, factor=factor)


inverse, real_forward, real_inverse, padded_forward, conjugate = (
    ENGINE.inverse, ENGINE.real_forward, ENGINE.real_inverse, ENGINE.padded_forward, ENGINE.conjugate)
