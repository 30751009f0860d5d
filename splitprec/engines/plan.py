"""FFT plans, shared by the reference and CUDA engines so that both run the same arithmetic.

A length ``n`` runs mixed-radix Stockham passes (radices 16, 8, 4, 2 and 9, 7, 5, 3, largest
first; :func:`factorize`), in two or three steps of at most ``LINE_MAX`` ("four-step", Bailey
1990; :func:`four_step_lengths`) from ``LINE_MAX`` to ``FOUR_STEP_MAX``, or Bluestein's chirp-z
algorithm around a power-of-two plan for other prime factors. A plan holds each pass's DFT block
(``dft_block``: float64 entries rounded once to float32) and twiddles (float64, rounded to
complex64); docs/kernels.md gives the measurements behind the radix and step choices.
"""
import functools
from dataclasses import dataclass

import numpy as np

from ..split import split

RADICES = (16, 8, 4, 2)
ODD_RADICES = (9, 7, 5, 3)
LINE_MAX = 4096                  # longest length in one step (the fused kernel's FFT_ELEMENTS)
FOUR_STEP_MAX = 1 << 24          # longest length run in steps of at most LINE_MAX (two, or three)
NESTED_FROM = 1 << 23            # powers of two from here on run three steps (_power_of_two_split)


@functools.lru_cache(maxsize=256)
def four_step_lengths(n):
    """``(n1, n2)`` of the two-step plan of length ``n``, or None (a single Stockham plan); ``n1 <=
    4096``, and ``n2`` too unless it has a two-step plan of its own.

    A power of two ``4096 < n <= 2**24``: :func:`_power_of_two_split`. Other lengths in that range
    with no prime factor above 7: the split into two lengths of at most 4096 with ``n2`` nearest
    256, if there is one.
    """
    if not LINE_MAX < n <= FOUR_STEP_MAX:
        return None
    if n & (n - 1) == 0:
        return _power_of_two_split(n)
    if _single_plan(n) is None:
        return None
    splits = [(abs(np.log2(n2 / 256)), n2) for n2 in range(2, LINE_MAX + 1)
              if n % n2 == 0 and n // n2 <= LINE_MAX]
    if not splits:
        return None
    n2 = min(splits)[1]
    return n // n2, n2


def _power_of_two_split(n):
    """``(n1, n2)`` of a power of two ``4096 < n <= 2**24``: from ``NESTED_FROM`` on, ``n1 = 256``
    and ``n2`` itself two steps; below, the largest ``n2 <= min(1024, sqrt(n))`` with ``n1 <= 4096``
    where neither length is ``2 * 16**j``. Step 2 stores its lines strided (``k1 + n1 * k2``): with
    ``n2 <= 1024`` a CTA holds at least four adjacent ones, whole 32-byte sectors; step 1 loads
    them strided, and ``n1 = 4096`` would hold one (a quarter of each sector). The fastest split at
    each power of two, or within 3% of it, on the H200 (docs/kernels.md, ``benchmarks/fft_splits.py``)."""
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
    """Steps of a length-``n`` transform (1, 2 or 3), each one launch of the fused kernel."""
    lengths = four_step_lengths(n)
    return 1 if lengths is None else 1 + launches(lengths[1])


def unit_roots(num, den):
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
    f = unit_roots(np.outer(np.arange(r), np.arange(r)), r).astype(np.complex64)
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
    steps: object = None       # two-step plan: (Plan of n1, Plan of n2, complex64 twiddles (n1, n2))


@functools.lru_cache(maxsize=8)
def four_step_twiddles(n1, n2):
    """complex64 ``(n1, n2)``: ``exp(-2 pi i k1 c / (n1 n2))`` at ``[k1, c]``, float64 rounded once
    (read-only, shared by the plans of every scheme)."""
    rows = max(1, (1 << 20) // n2)                       # bounds the float64 temporaries
    table = np.concatenate([unit_roots(np.outer(np.arange(k, min(k + rows, n1)), np.arange(n2)),
                                        n1 * n2).astype(np.complex64) for k in range(0, n1, rows)])
    table.setflags(write=False)
    return table


def to_device(x, device):
    """Host array ``x`` on ``device`` ("cpu": itself; "gpu": a cupy copy)."""
    if device == "cpu":
        return x
    import cupy
    return cupy.asarray(x)


def stockham_passes(radices, d, device):
    """The passes of radices ``radices`` in scheme ``d``: DFT blocks split (cpu) or as arrays for the
    device's GEMM engine (gpu), twiddles on ``device``."""
    passes, n = [], int(np.prod(radices))
    for r in radices:
        m = n // r
        block = split(dft_block(r), d, axis=-2) if device == "cpu" else to_device(dft_block(r), device)
        twiddle = None
        if m > 1:
            roots = unit_roots(np.outer(np.arange(m), np.arange(r)), n).astype(np.complex64)
            twiddle = to_device(roots.reshape(m, 1, r), device)
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
                                  to_device(four_step_twiddles(n1, n2), device)))
    radices = factorize(n)
    if radices is not None:
        return Plan(n, stockham_passes(radices, d, device))
    m = 1 << (2 * n - 2).bit_length()
    j = np.arange(n)
    chirp = unit_roots(j * j, 2 * n)                   # exp(-pi i j^2 / n), j^2 mod 2n exact
    kernel = np.zeros(m, np.complex128)
    kernel[:n] = np.conj(chirp)
    kernel[m - n + 1:] = np.conj(chirp[1:][::-1])
    spectrum = (np.fft.fft(kernel) / m).astype(np.complex64)
    back = np.zeros(m, np.complex128)
    back[0], back[m - n + 1:] = chirp[0], chirp[1:][::-1]
    return Plan(n, (), to_device(chirp.astype(np.complex64), device), to_device(spectrum, device),
                plan(m, d, device), chirp_back=to_device(back.astype(np.complex64), device))


def line_top(p):
    """The engines scale each line so that its largest ``|Re|``, ``|Im|`` lies in ``[2**(t-1), 2**t)``,
    ``t = line_top(p)``, before running plan ``p`` (and back after): every value the plan computes is
    at most ``sqrt(2) * n`` (Bluestein: ``sqrt(2) * n * m``) times that, below float32's largest
    value, while the line's norm stays far above the subnormal range."""
    t = 127 - p.n.bit_length()
    return t if p.chirp is None else t - p.inner.n.bit_length()


@functools.lru_cache(maxsize=16)
def real_twiddles(n, device):
    """complex64 ``(n // 2 + 1,)``: ``exp(-2 pi i k / n)``, float64 rounded once."""
    return to_device(unit_roots(np.arange(n // 2 + 1), n).astype(np.complex64), device)
