"""The FFT engine: mixed-radix Stockham passes whose butterflies are split-precision matrix products.

A length-``n`` transform is planned once per ``(n, scheme, device)`` (:func:`plan`) and run on the
last axis of a complex64 array (:func:`forward`; the inverse is ``conj(forward(conj(x)))``, exact
conjugations around the same arithmetic).

Arithmetic of one pass of radix ``r`` (``n = r * m`` at this pass):

1. the data, viewed as ``(batch, r, m, q)``, is reordered so each length-``r`` sub-vector is one row
   of a real float32 matrix ``X`` of shape ``(batch * m * q, 2r)`` holding ``Re, Im`` interleaved;
2. ``X @ D`` with ``D`` the ``2r x 2r`` real block of the ``r x r`` DFT matrix (entries computed in
   float64 and rounded once to float32; a row/column permutation of ``[[Re F, Im F], [-Im F, Re F]]``)
   is one split-precision product: on the CPU :func:`splitprec._engine.narrow_matmul` (``X`` split
   per pass, ``D`` once per plan), on the GPU the GEMM engine :func:`splitprec._gpu.matmul` (split
   on the device, tensor-core products promoted into float32); each output is a ``k = 2r`` dot
   product with float32 accumulation and the scheme's product error;
3. the outputs are multiplied by twiddles ``exp(-2 pi i j k / n)`` computed in float64 and rounded
   to complex64, in complex64 arithmetic (skipped on the last pass, where they are all 1), and
   stored transposed (Stockham autosort: no bit reversal).

Radices are 16, 8, 4, 2 for the power-of-two part and 9, 7, 5, 3 for the rest (9 while 9 divides:
half the passes of 3s), largest first. A power of two runs 16s and what is left, except that a
left 4 or 2 beside a 16 runs as 8·8 or 8·4 (:func:`_power_of_two_radices`): the radix-4 and radix-2
passes run four and eight times the tiles of a radix-16 pass on the GPU, each with the same fixed
cost, and 8·8 took 13-22% less time than 16·4 for 64, 512 and 1024 on the H200.

A length ``4096 < n <= 2**24`` with no prime factor above 7 runs in two steps ("four-step", Bailey
1990) where it splits as ``n = n1 * n2`` with both at most 4096, or, for powers of two from
``2**23`` on, as ``256 * n2`` with ``n2`` itself in two steps (:func:`four_step_lengths`: for a
power of two ``n2`` at most 1024 and ``sqrt(n)`` where it can be, else ``n2`` nearest 256); step 1 transforms
the ``n2`` strided lines ``x[n2 * j + c]`` (length ``n1``) by the passes above, multiplies output
``k1`` of line ``c`` by ``exp(-2 pi i c k1 / n)`` (float64, rounded to complex64; complex64 product);
step 2 transforms the ``n1`` contiguous lines of length ``n2`` and stores output ``k2`` of line
``k1`` at ``k1 + n1 * k2``. Its passes are those of ``n1`` then those of ``n2``, every pass but the
last followed by one twiddle product, as in a single Stockham plan (:func:`factorize`).

A size with any other prime factor runs Bluestein's chirp-z algorithm: ``X_k = w_k * sum_j (x_j w_j)
conj(w)_{k-j}`` with the chirp ``w_j = exp(-pi i j^2 / n)`` (float64, rounded to complex64), the
convolution done by two forward power-of-two transforms of length ``m >= 2n - 1`` of this same
engine, read backwards (``DFT(DFT(z))[-k] = m z[k]``), with a complex64 product by the chirp's
spectrum (computed in float64, divided by ``m``, rounded once) after the first.

On Hopper GPUs, lengths 2..4096 with no prime factor above 7 in every scheme of tf32 or bf16 parts
(no scaling) or fp16 parts (power-of-two scaling of each sub-vector and of the DFT block's columns,
as :func:`splitprec.split.split` scales the rows and columns of a product) run all their passes in
one kernel, ``kernels/fft_stockham_sm90.cu`` (one read and one write of the data; the same passes,
blocks, twiddles and split, each product's tensor-core chain at most 32 values of k long, 16 for
tf32, then promoted into float32); the four-step lengths run each step as one launch of that kernel
(strided loads and stores, the step-1 twiddles applied on store); other cases run the passes above
one by one. The same launches run overlap-save convolutions (:func:`overlap_save`): the kernel cuts
the blocks from the input rows as it loads and places the kept outputs in the output rows as it
stores.

Real input (:func:`real_forward`, :func:`real_inverse`) of even length ``n`` runs one complex
transform of length ``n / 2`` on the packed pairs ``x[2j] + i x[2j+1]``, with a complex64 step after
(or before) it; odd ``n`` runs the complex transform of length ``n``.
"""
import functools
import struct
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import _gpu, _launch
from ._backend import namespace
from ._engine import narrow_matmul
from .split import split

RADICES = (16, 8, 4, 2)
ODD_RADICES = (9, 7, 5, 3)
KERNEL_FILE = "fft_stockham_sm90.cu"
NAN_FILE = "nan_lines_sm80.cu"   # the non-finite lines' fix-up, any GPU
KERNEL_ELEMENTS = 4096           # complex values per CTA of the kernel (FFT_ELEMENTS)
KERNEL_THREADS = 256
_FORMAT_CODE = {"tf32": 0, "bf16": 1, "fp16": 2}
# The (scaling, shift) each part format's kernel has built in.
_KERNEL_SCALING = {"tf32": ("none", 0), "bf16": ("none", 0), "fp16": ("pow2", 11)}
_CTAS_PER_SM = 2                 # the kernel's __launch_bounds__; each CTA loops over line blocks
GPU_ROWS = 1 << 20               # rows per GEMM-engine call: bounds the engine's temporary parts
FOUR_STEP_MAX = 1 << 24          # longest length run in steps of at most 4096 (two, or three)
NESTED_FROM = 1 << 23            # powers of two from here on run three steps (_power_of_two_split)


@functools.lru_cache(maxsize=256)
def four_step_lengths(n):
    """``(n1, n2)`` of the two-step plan of length ``n``, or None (a single Stockham plan); ``n1 <=
    4096``, and ``n2`` too unless it has a two-step plan of its own.

    A power of two ``4096 < n <= 2**24``: :func:`_power_of_two_split`. Other lengths in that range
    with no prime factor above 7: the split into two lengths of at most 4096 with ``n2`` nearest
    256, if there is one.
    """
    if not KERNEL_ELEMENTS < n <= FOUR_STEP_MAX:
        return None
    if n & (n - 1) == 0:
        return _power_of_two_split(n)
    if _single_plan(n) is None:
        return None
    splits = [(abs(np.log2(n2 / 256)), n2) for n2 in range(2, KERNEL_ELEMENTS + 1)
              if n % n2 == 0 and n // n2 <= KERNEL_ELEMENTS]
    if not splits:
        return None
    n2 = min(splits)[1]
    return n // n2, n2


def _power_of_two_split(n):
    """``(n1, n2)`` of a power of two ``4096 < n <= 2**24``: from ``NESTED_FROM`` on, ``n1 = 256``
    and ``n2`` itself two steps; below, the largest ``n2 <= min(1024, sqrt(n))`` with ``n1 <= 4096``
    where neither length is ``2 * 16**j``. Step 2 stores its lines strided (``k1 + n1 * k2``): with
    ``n2 <= 1024`` a CTA holds at least four adjacent ones, whole 32-byte sectors; step 1 loads
    them strided, and ``n1 = 4096`` would hold one (a quarter of each sector). Timed on the H200
    (``benchmarks/fft_splits.py``, every split, bf16x6): the fastest at each power of two or within
    3%; 2**24 as 256 * (256 * 256) takes 672 µs against 1027 as 4096 * 4096, 2**23 684 against
    797, 2**22 690 against 685 (it keeps two launches, which can place overlap-save blocks)."""
    log2n = n.bit_length() - 1
    if n >= NESTED_FROM:
        return 256, n >> 8
    e = next(e for e in range(min(10, log2n // 2), 0, -1) if log2n - e <= 12 and e % 4 != 1 and (log2n - e) % 4 != 1)
    return n >> e, 1 << e


def _single_plan(n):
    """Radices of one Stockham plan of length ``n``, largest first; None if a prime above 7 divides it."""
    radices = []
    for r in ODD_RADICES:
        while n % r == 0:
            radices.append(r)
            n //= r
    twos = (n & -n).bit_length() - 1
    n >>= twos
    return sorted(radices + _power_of_two_radices(twos), reverse=True) if n == 1 else None


def _power_of_two_radices(twos):
    """Radices of ``2**twos``: 16s and the rest, a rest of 4 or 2 beside a 16 as 8, 8 or 8, 4."""
    sixteens, rest = divmod(twos, 4)
    if sixteens and rest in (1, 2):
        return [16] * (sixteens - 1) + [8, 1 << (rest + 1)]
    return [16] * sixteens + ([1 << rest] if rest else [])


def factorize(n):
    """Radices of the passes for ``n`` in the order they run; None if ``n`` needs Bluestein."""
    lengths = four_step_lengths(n)
    return _single_plan(n) if lengths is None else factorize(lengths[0]) + factorize(lengths[1])


def launches(n):
    """Launches of the fused kernel for a length-``n`` transform (1, 2 or 3: one per step)."""
    lengths = four_step_lengths(n)
    return 1 if lengths is None else 1 + launches(lengths[1])


def _unit_roots(num, den):
    """``exp(-2 pi i num / den)`` in float64, exact at multiples of a quarter turn.

    With ``4 num = k den + rest`` (integers), the root is ``(-i)**k * exp(-i pi/2 rest/den)``; the
    cosine and sine are taken at angles of at most pi/4 (the complement's for ``rest > den/2``).
    """
    quarter, rest = np.divmod(4 * np.asarray(num, np.int64), den)
    flip = 2 * rest > den
    angle = np.pi / 2 * np.where(flip, den - rest, rest) / den
    cos, sin = np.cos(angle), np.sin(angle)
    root = np.where(flip, sin - 1j * cos, cos - 1j * sin)
    return root * np.array([1, -1j, -1, 1j])[quarter % 4]


def dft_block(r):
    """The ``2r x 2r`` float32 block with ``[x0r, x0i, x1r, ...] @ block == [y0r, y0i, ...]``, ``y = F x``."""
    f = _unit_roots(np.outer(np.arange(r), np.arange(r)), r).astype(np.complex64)
    block = np.empty((r, 2, r, 2), np.float32)          # (input j, re/im, output k, re/im)
    block[:, 0, :, 0], block[:, 0, :, 1] = f.real.T, f.imag.T
    block[:, 1, :, 0], block[:, 1, :, 1] = -f.imag.T, f.real.T
    return block.reshape(2 * r, 2 * r)


@dataclass(frozen=True)
class Pass:
    """One Stockham pass: radix, remaining length ``m``, DFT block, twiddles ``(m, 1, r)``."""

    r: int
    m: int
    block: object        # dft_block(r): its splitprec.split.Parts on the CPU, the array on the GPU
    twiddle: object      # complex64 (m, 1, r), or None on the last pass


@dataclass(frozen=True)
class Plan:
    """A planned length-``n`` transform: Stockham passes, or Bluestein around a power-of-two plan."""

    n: int
    passes: tuple
    chirp: object = None       # complex64 (n,): exp(-pi i j^2 / n)
    spectrum: object = None    # complex64 (m,): FFT_m of the conjugate chirp, divided by m
    inner: object = None       # Plan of length m
    chirp_back: object = None  # complex64 (m,): chirp[-j mod m] where that index is below n, else 0
    kernel: object = None      # (B fragments, twiddles) device arrays of the fused kernel, or None
    steps: object = None       # two-step plan: (Plan of n1, Plan of n2, complex64 twiddles (n1, n2))


def kernel_supported(n, d):
    """True when the fused kernel runs a length-``n`` transform in scheme ``d`` on the current GPU:
    ``2 <= n <= 4096`` with no prime factor above 7, parts tf32 or bf16 without scaling or fp16 with
    power-of-two scaling (and shift 11 between two parts), Hopper (the kernel's wgmma exists there
    only)."""
    scaling, shift = _KERNEL_SCALING.get(d.base, (None, None))
    return (2 <= n <= KERNEL_ELEMENTS and factorize(n) is not None and d.scaling == scaling
            and (d.terms == 1 or d.shift == shift) and _launch.hopper())


@functools.lru_cache(maxsize=None)
def kernel_expression(n, d):
    """The instantiation of ``fft_stockham_sm90`` for length ``n`` in scheme ``d`` (cached: one
    string per launch)."""
    pairs = sum(1 << (3 * i + j) for i, j in d.products)
    return f"fft_stockham_sm90<{_FORMAT_CODE[d.base]}, {d.terms}, {pairs}u, {n}>"


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
    the kernel undoes as a constant (``Fragment::BLOCK_EXPONENT``)."""
    parts = []
    for r in dict.fromkeys(radices):
        for term in split(dft_block(r), d, axis=-2).terms:
            part = np.zeros((32, block_cols(r)), np.float32)
            part[:2 * r, :2 * r] = term
            parts.append(b_tiles(part, d.base).reshape(-1))
    return np.concatenate(parts)


def _kernel_operands(passes, d):
    """The fused kernel's DFT-block parts (:func:`kernel_blocks`) and its concatenated twiddle
    tables, on the device."""
    tables = [np.asarray(step.twiddle).reshape(-1) for step in passes if step.twiddle is not None]
    twiddles = np.concatenate(tables) if tables else np.zeros(1, np.complex64)
    return _to_device(kernel_blocks([step.r for step in passes], d), "gpu"), _to_device(twiddles, "gpu")


@functools.lru_cache(maxsize=8)
def four_step_twiddles(n1, n2):
    """complex64 ``(n1, n2)``: ``exp(-2 pi i k1 c / (n1 n2))`` at ``[k1, c]``, float64 rounded once
    (read-only, shared by the plans of every scheme)."""
    rows = max(1, (1 << 20) // n2)                       # bounds the float64 temporaries
    table = np.concatenate([_unit_roots(np.outer(np.arange(k, min(k + rows, n1)), np.arange(n2)),
                                        n1 * n2).astype(np.complex64) for k in range(0, n1, rows)])
    table.setflags(write=False)
    return table


def _to_device(x, device):
    if device == "cpu":
        return x
    import cupy
    return cupy.asarray(x)


def _stockham_passes(radices, d, device):
    passes, n = [], int(np.prod(radices))
    for r in radices:
        m = n // r
        block = split(dft_block(r), d, axis=-2) if device == "cpu" else _to_device(dft_block(r), device)
        twiddle = None
        if m > 1:
            roots = _unit_roots(np.outer(np.arange(m), np.arange(r)), n).astype(np.complex64)
            twiddle = _to_device(roots.reshape(m, 1, r), device)
        passes.append(Pass(r, m, block, twiddle))
        n = m
    return tuple(passes)


@functools.lru_cache(maxsize=64)
def plan(n, d, device):
    """The plan of a length-``n`` transform in scheme ``d`` on ``device`` ("cpu" or "gpu"), cached."""
    lengths = four_step_lengths(n)
    if lengths is not None:
        n1, n2 = lengths
        return Plan(n, (), steps=(plan(n1, d, device), plan(n2, d, device),
                                  _to_device(four_step_twiddles(n1, n2), device)))
    radices = factorize(n)
    if radices is not None:
        passes = _stockham_passes(radices, d, device)
        fused = device == "gpu" and kernel_supported(n, d)
        return Plan(n, passes, kernel=_kernel_operands(_stockham_passes(radices, d, "cpu"), d) if fused
                    else None)
    m = 1 << (2 * n - 2).bit_length()
    j = np.arange(n)
    chirp = _unit_roots(j * j, 2 * n)                   # exp(-pi i j^2 / n), j^2 mod 2n exact
    kernel = np.zeros(m, np.complex128)
    kernel[:n] = np.conj(chirp)
    kernel[m - n + 1:] = np.conj(chirp[1:][::-1])
    spectrum = (np.fft.fft(kernel) / m).astype(np.complex64)
    back = np.zeros(m, np.complex128)
    back[0], back[m - n + 1:] = chirp[0], chirp[1:][::-1]
    return Plan(n, (), _to_device(chirp.astype(np.complex64), device), _to_device(spectrum, device),
                plan(m, d, device), chirp_back=_to_device(back.astype(np.complex64), device))


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
    tiles, twiddles = p.kernel
    line_blocks = -(-lines // (KERNEL_ELEMENTS // p.n))
    grid = (min(line_blocks, _CTAS_PER_SM * _launch.multiprocessors()), 1, 1)
    b = blocks
    batch_lines, in_batch, in_line, in_elem, out_batch, out_line, out_elem = layout
    args = np.frombuffer(_LAUNCH_ARGS.pack(lines, in_batch, out_batch, b.in_stride, b.out_stride, b.row_flags,
                                           b.all_flag, batch_lines, in_line, in_elem, out_line, out_elem,
                                           table is not None, b.io, b.lines, b.step, b.pad, b.in_length, b.start,
                                           b.keep, b.scale, -(-(1 << 31) // batch_lines)),
                         _LAUNCH_BYTES)
    _launch.launch(KERNEL_FILE, kernel_expression(p.n, d), grid, (KERNEL_THREADS, 1, 1),
                   (x, y, twiddles, tiles, twiddles if table is None else table, nonfinite, args),
                   shared_bytes=1024 + tiles.nbytes + 2 * KERNEL_ELEMENTS * 8)
    return y


def runs_fused(p):
    """True when plan ``p`` runs in the fused kernel: one launch, or one per step (three where the
    second step is itself two)."""
    return p.kernel is not None or (p.steps is not None and p.steps[0].kernel is not None
                                    and runs_fused(p.steps[1]))


def runs_blocks(p):
    """True when plan ``p`` runs in the fused kernel in at most two launches, which can also place
    overlap-save blocks as they store (:func:`overlap_save`)."""
    return runs_fused(p) and (p.steps is None or p.steps[1].steps is None)


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


def padded_forward(h, length, d, nonfinite=None, scale=1.0, row_flags=None):
    """The forward DFT of length ``length`` of each row of ``h`` (float32 or complex64, ``(rows, n)``,
    ``n <= length``) zero-padded and times ``scale`` (a power of two: exact); on the GPU the fused
    kernel pads and scales as it loads (a block per row). ``nonfinite``: as :func:`forward`;
    ``row_flags`` (uint32 ``(rows,)`` on the device, fused kernel only): ``row_flags[r]`` set when
    row ``r`` holds NaN or ±inf."""
    xp = namespace(h)
    rows, n = h.shape
    p = plan(length, d, "gpu" if xp is not np else "cpu")
    if xp is np or not runs_fused(p):
        taps = xp.zeros((rows, length), np.complex64)
        taps[:, :n] = h * np.float32(scale)
        return forward(taps, d, nonfinite=nonfinite)
    h = xp.ascontiguousarray(h)
    io = LOAD_BLOCKS | (REAL_BLOCKS if h.dtype == np.float32 else 0)
    return _fused(h, xp.empty((rows, length), np.complex64), p, d, rows, nonfinite,
                  blocks=Blocks(io, 1, length, 0, n, n, row_flags=0 if row_flags is None else row_flags.data.ptr,
                                scale=scale))


def _steps(x, p, d, kernel, nonfinite, times=None):
    """The two-step transform of complex64 ``x`` (batch, n1 * n2) (module docstring)."""
    xp = namespace(x)
    first, second, table = p.steps
    n1, n2, batch = first.n, second.n, x.shape[0]
    lines = xp.ascontiguousarray(x.reshape(batch, n1, n2).transpose(0, 2, 1)).reshape(-1, n1)
    z = _stockham(lines, first, d, kernel, nonfinite).reshape(batch, n2, n1).transpose(0, 2, 1) * table
    z = _stockham(xp.ascontiguousarray(z).reshape(-1, n2), second, d, kernel)
    y = xp.ascontiguousarray(z.reshape(batch, n1, n2).transpose(0, 2, 1)).reshape(batch, p.n)
    return y if times is None else y * times


def _gpu_block_product(rows, block, d):
    """``rows @ block`` by the GPU GEMM engine, in chunks of rows its launch grid can hold."""
    import cupy
    if rows.shape[0] <= GPU_ROWS:
        return _gpu.matmul(rows, block, d)
    out = cupy.empty((rows.shape[0], block.shape[1]), np.float32)
    for first in range(0, rows.shape[0], GPU_ROWS):
        out[first:first + GPU_ROWS] = _gpu.matmul(rows[first:first + GPU_ROWS], block, d)
    return out


def _stockham(x, p, d, kernel=True, nonfinite=None, times=None):
    """Forward DFT along the last axis of complex64 ``x`` (batch, n) by the passes of ``p``;
    ``nonfinite``, ``times``: as :func:`forward`."""
    xp = namespace(x)
    if kernel and runs_fused(p):
        x = xp.ascontiguousarray(x)
        return _fused(x, xp.empty_like(x), p, d, x.shape[0], nonfinite, times)
    if p.steps is not None:
        return _steps(x, p, d, kernel, nonfinite, times)
    if nonfinite is not None:
        _flag_nonfinite_kernel()(x, nonfinite)
    batch, q = x.shape[0], 1
    y = x.reshape(batch, p.n, 1)
    for step in p.passes:
        r, m = step.r, step.m
        rows = xp.ascontiguousarray(y.reshape(batch, r, m, q).transpose(0, 2, 3, 1))
        rows = rows.view(np.float32).reshape(-1, 2 * r)
        z = narrow_matmul(split(rows, d, axis=-1), step.block, d) if xp is np else \
            _gpu_block_product(rows, step.block, d)
        z = z.view(np.complex64).reshape(batch, m, q, r)
        if step.twiddle is not None:
            z = z * step.twiddle
        y = z.transpose(0, 1, 3, 2).reshape(batch, m, r * q)
        q *= r
    y = y.reshape(batch, p.n)
    return y if times is None else y * times


def forward(x, d, *, kernel=True, nonfinite=None, times=None):
    """Forward DFT along the last axis of complex64 ``x`` (any leading shape) in scheme ``d``.

    ``kernel=False`` runs the passes one by one on the GPU even where the fused kernel applies.
    ``nonfinite`` (cupy only: a uint32 device scalar, or None) gets 1 when ``x`` holds NaN or ±inf,
    found by the kernel that first reads ``x`` (the outputs of such lines are then not meaningful).
    ``times`` (complex64 ``(n,)`` of ``x``'s kind, or None) multiplies every line's outputs, in
    complex64 arithmetic; the fused kernel does it as it stores them.
    """
    xp = namespace(x)
    n = x.shape[-1]
    lines = x.reshape(-1, n)
    if lines.shape[0] == 0:
        return xp.empty(x.shape, np.complex64)
    p = plan(n, d, "gpu" if xp is not np else "cpu")
    if p.chirp is None:
        return _stockham(lines, p, d, kernel, nonfinite, times).reshape(x.shape)
    m = p.inner.n
    a = xp.zeros((lines.shape[0], m), np.complex64)
    a[:, :n] = lines * p.chirp
    # DFT_m(DFT_m(a) * spectrum)[-k] is the convolution at k (spectrum holds the 1/m): both
    # transforms are forward, the products ride on their stores, and the result is read backwards.
    z = _stockham(_stockham(a, p.inner, d, kernel, nonfinite, times=p.spectrum), p.inner, d, kernel,
                  times=p.chirp_back)
    y = xp.concatenate((z[:, :1], z[:, :m - n:-1]), axis=1)
    return (y if times is None else y * times).reshape(x.shape)


def inverse(x, d, nonfinite=None):
    """Unnormalized inverse DFT along the last axis: ``conj(forward(conj(x)))``."""
    xp = namespace(x)
    return xp.conj(forward(xp.conj(x), d, nonfinite=nonfinite))


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
        grid = min(lines, 4 * _launch.multiprocessors())
        _launch.launch(NAN_FILE, "nan_lines", (grid, 1, 1), (1024, 1, 1),
                       (floats[0], np.int32(floats[0].shape[-1]), floats[1], np.int32(floats[1].shape[-1]),
                        np.int64(lines), flag))
    return y


@functools.lru_cache(maxsize=16)
def _real_twiddles(n, device):
    """complex64 ``(n // 2 + 1,)``: ``exp(-2 pi i k / n)``, float64 rounded once."""
    return _to_device(_unit_roots(np.arange(n // 2 + 1), n).astype(np.complex64), device)


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


def real_forward(x, d, nonfinite=None):
    """The first ``n // 2 + 1`` outputs of the DFT of real float32 ``x`` (..., n).

    Even ``n``: one complex transform of half the length, ``Z = DFT_m(x[0::2] + i x[1::2])`` with
    ``m = n / 2``, then ``X_k = E_k + w^k O_k`` with ``E_k = (Z_k + conj Z_{m-k}) / 2`` and ``O_k =
    -i (Z_k - conj Z_{m-k}) / 2`` (the transforms of the even and odd samples) and ``w^k`` the
    rounded twiddle, in complex64 arithmetic. Odd ``n``: the complex transform of length ``n``.
    """
    xp = namespace(x)
    n = x.shape[-1]
    if n % 2:
        return forward(x.astype(np.complex64), d, nonfinite=nonfinite)[..., :n // 2 + 1]
    z = forward(xp.ascontiguousarray(x, dtype=np.float32).view(np.complex64), d, nonfinite=nonfinite)
    if xp is not np:
        out = xp.empty(z.shape[:-1] + (n // 2 + 1,), np.complex64)
        return _real_kernels()[0](xp.ascontiguousarray(z), _real_twiddles(n, "gpu"), np.int64(n // 2), out)
    a = np.concatenate([z, z[..., :1]], axis=-1)                       # Z_k, k = 0..m (Z_m = Z_0)
    b = np.conj(np.concatenate([z[..., :1], z[..., ::-1]], axis=-1))   # conj Z_{(m - k) mod m}
    return (a + b) * np.float32(0.5) + _real_twiddles(n, "cpu") * ((a - b) * np.complex64(-0.5j))


def real_inverse(c, n, d, nonfinite=None):
    """Real float32 ``x`` (..., n) whose DFT has first half ``c`` (..., n // 2 + 1), unnormalized;
    the imaginary parts of ``c[0]`` and (even ``n``) ``c[n // 2]`` are ignored, as numpy.fft.irfft.

    Even ``n``: ``Z_k = (X_k + conj X_{m-k}) + i w^-k (X_k - conj X_{m-k})`` for ``k < m = n / 2``
    (complex64 arithmetic), ``z`` = the unnormalized inverse DFT of length ``m`` of ``Z``, and
    ``x[2j] + i x[2j+1] = z_j``. Odd ``n``: the complex inverse of the Hermitian spectrum of length ``n``.
    """
    xp = namespace(c)
    m = n // 2
    if n % 2 == 0 and xp is not np:
        packed = xp.empty(c.shape[:-1] + (m,), np.complex64)
        _real_kernels()[1](xp.ascontiguousarray(c, dtype=np.complex64), _real_twiddles(n, "gpu"), np.int64(m), packed)
        return xp.ascontiguousarray(inverse(packed, d, nonfinite)).view(np.float32)
    c = xp.array(c, dtype=np.complex64)
    c.imag[..., 0] = 0
    if n % 2:
        full = xp.empty(c.shape[:-1] + (n,), np.complex64)
        full[..., :c.shape[-1]] = c
        full[..., c.shape[-1]:] = xp.conj(c[..., 1:])[..., ::-1]
        return inverse(full, d, nonfinite).real
    c.imag[..., m] = 0
    a, b = c[..., :m], np.conj(c[..., m:0:-1])
    z = inverse((a + b) + np.complex64(1j) * (np.conj(_real_twiddles(n, "cpu")[:m]) * (a - b)), d, nonfinite)
    return z.view(np.float32)
