"""NaN/inf on the device: the float64 product's non-finite pattern without a host round trip.

The operand kernels (the split, the Ozaki residues) report, as they read, each operand's peak and
the rows of A and columns of B that hold NaN/inf; ``kernels/gemm_nonfinite_sm80.cu`` then writes
NaN/inf where the float64 product has them and, for float32, recomputes as float64 dot products
the entries that may reach the top of float32's range. It returns at once when neither can occur.
``fix_sgemm`` does the same for cuBLAS SGEMM's result, from the result itself.
"""
import ctypes

import numpy as np

from ..limit import FP32_MAX
from .launch import PreparedLaunch, launch
from .split import at

NONFINITE_FILE = "gemm_nonfinite_sm80.cu"
_NONFINITE_BLOCKS = 1024      # blocks of gemm_nonfinite: few, since they usually return at once
NONFINITE_EXPRESSION = {"f": "gemm_nonfinite<float>", "d": "gemm_nonfinite<double>", "sgemm": "sgemm_nonfinite"}


def nonfinite_report(a, b):
    """``(words, for_a, for_b)``: the zeroed uint32 report that the operand kernels of ``a`` (batch or
    1, m, k) and ``b`` (batch or 1, k, n) fill and ``fix_nonfinite`` reads (A's and B's peak words,
    a flag per row of A and per column of B, then A's and B's largest norm exponents, which only the
    float64 residue kernels record), and each operand's ``(words, peak, lines)``."""
    import cupy
    lines_a = a.shape[0] * a.shape[1]
    words = cupy.zeros(4 + lines_a + b.shape[0] * b.shape[2], np.uint32)
    return words, (words, 0, 2), (words, 1, 2 + lines_a)


def norm_peak_words(report):
    """The offsets in ``report`` (of :func:`nonfinite_report`) of A's and B's largest norm exponents."""
    return report.size - 2, report.size - 1


def fix_nonfinite(a, b, c, report, exponents=(None, None), overflow_exponent=0, bits=(0, 0)):
    """Give ``c`` (batch, m, n; float32 or float64, as ``a`` and ``b``) the float64 product's NaN/inf
    where the operand kernels for ``a`` (batch or 1, m, k) and ``b`` (batch or 1, k, n) reported them
    in ``report`` (the words of ``nonfinite_report``), and recompute the entries that may overflow:
    for float32 those that may reach the top of float32's range (``exponents``: the pow2 split's
    (batch or 1, m) and (batch or 1, n) int32 exponents, whose sum reaches ``overflow_exponent``
    there, ``SplitDType.overflow_exponent(k)``) or whose narrow products overflowed; for float64
    those whose rows' and columns' 2-norms allow a result beyond the range, where the residue kernels
    recorded their norm exponents (``exponents``: their sigma, ``bits``: the scheme's Q per side).
    One launch of ``kernels/gemm_nonfinite_sm80.cu``, which returns at once when neither can occur."""
    batch, m, n = c.shape
    lines_a = a.shape[0] * m
    grid = (min(-(-c.size // 256), _NONFINITE_BLOCKS), 1, 1)
    launch(NONFINITE_FILE, NONFINITE_EXPRESSION[c.dtype.char], grid, (256, 1, 1),
           (a, b, c, report, at(report, 2), at(report, 2 + lines_a), np.int32(m), np.int32(n),
            np.int32(a.shape[-1]), np.int64(batch), np.int32(a.shape[0] > 1), np.int32(b.shape[0] > 1),
            at(exponents[0]), at(exponents[1]), np.int32(overflow_exponent),
            at(report, norm_peak_words(report)[0]), np.int32(bits[0]), np.int32(bits[1])))
    return c


def sgemm_limit(k):
    """The magnitude from which ``fix_sgemm`` recomputes an SGEMM entry of inner dimension ``k``:
    FLT_MAX (1 - (2k + 2) 2^-24) rounded down to float32, 0 (every entry) from k = 2^23 on."""
    exact = max(FP32_MAX * (1 - (2 * k + 2) * 2.0 ** -24), 0.0)
    limit = np.float32(exact)
    return limit if float(limit) <= exact else np.nextafter(limit, np.float32(0))


def sgemm_fixup(m, n, k, batch, a_batched, b_batched):
    """The prepared launch (``launch.PreparedLaunch``, called with the pointers of ``a``, ``b``,
    ``c``) of ``fix_sgemm`` for these sizes, overlapping the end of SGEMM (it waits for it)."""
    grid = (max(min(-(-batch * m * n // 1024), 4 * _NONFINITE_BLOCKS), 1), 1, 1)
    args = [ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int(m), ctypes.c_int(n),
            ctypes.c_int(k), ctypes.c_longlong(batch), ctypes.c_int(a_batched), ctypes.c_int(b_batched),
            ctypes.c_float(sgemm_limit(k))]
    return PreparedLaunch(NONFINITE_FILE, NONFINITE_EXPRESSION["sgemm"], grid, (256, 1, 1), args, overlap=True)


def fix_sgemm(a, b, c):
    """Give SGEMM's ``c`` (batch, m, n) of contiguous float32 ``a`` (batch or 1, m, k) and ``b``
    (batch or 1, k, n) the float64 product's NaN/inf and range: each entry that is NaN/inf or
    reaches ``sgemm_limit(k)`` recomputed as a float64 dot product rounded once (one launch of
    ``kernels/gemm_nonfinite_sm80.cu``'s ``sgemm_nonfinite``, which reads ``c`` once otherwise)."""
    batch, m, n = c.shape
    sgemm_fixup(m, n, a.shape[-1], batch, a.shape[0] > 1, b.shape[0] > 1)(a.data.ptr, b.data.ptr, c.data.ptr)
    return c
