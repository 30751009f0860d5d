"""Ozaki scheme II on int8: the fp64-class scheme records ``ozaki2_int8x<N>`` and their scaling rule.

A float64 product ``A @ B`` becomes ``N`` exact int8 GEMMs, one per modulus (Ozaki, Uchino and
Imamura, arXiv 2504.08009; Uchino, Ozaki and Imamura, SC'25, arXiv 2508.03984). Each row ``i`` of
A is scaled by ``2**sigma_i`` and rounded to an integer, each column ``j`` of B by ``2**tau_j``;
the integer product ``A' B'`` is reduced modulo ``N`` pairwise coprime moduli ``m_l <= 256`` (the
symmetric residues fit in int8, their products are exact in int32), and the Chinese remainder
theorem recovers ``A' B'`` exactly, because the scaling keeps ``|A'| |B'| < M / 2`` with
``M = prod m_l``. The only errors: rounding A and B to ``A' 2**-sigma`` and ``B' 2**-tau``, and
the float64 rounding of the recovered integer (docs/bounds.md, "Ozaki scheme II").

Names are ``ozaki2_int8x<N>``, N = number of moduli = number of int8 GEMMs; registered for
N = 12..18 (``sp.dtype("ozaki2_int8x14")``, or the factory ``ozaki2_int8(moduli=14)``).
``precision="fp64"`` runs ``ozaki2_int8_adaptive``, which picks among them per product
(splitprec/ozaki_plan.py).
"""
from dataclasses import dataclass
import functools
import math

import numpy as np

from ._scheme import SchemeRecord

__all__ = [
    "CHUNK_BITS", "COUNTS", "K_BLOCK", "Ozaki2DType", "SCHEMES", "grid_bits", "ozaki2_int8",
    "scale_exponents"]
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only

COUNTS = tuple(range(12, 19))     # registered modulus counts
K_BLOCK = 65536                   # int32 holds k * 128**2 <= 2**30: products are exact per k-block
CHUNK_BITS = 39                   # CRT constants are split into 39-bit float64 chunks (see crt_constants)


def _coprime_moduli(count):
    """The ``count`` largest pairwise coprime integers <= 256, largest first (256, 255, 253, ...)."""
    moduli = []
    for m in range(256, 1, -1):
        if all(math.gcd(m, x) == 1 for x in moduli):
            moduli.append(m)
            if len(moduli) == count:
                return tuple(moduli)
    raise ValueError(f"ozaki2_int8: no {count} pairwise coprime moduli <= 256")


@dataclass(frozen=True, eq=False)
class Ozaki2DType(SchemeRecord):
    """One Ozaki-II scheme: ``terms`` residues per value, one int8 product ``(l, l)`` per modulus;
    equality, hashing, pickling and ``np.dtype(d)`` (float64) as :class:`splitprec._scheme.SchemeRecord`."""

    name: str
    moduli: tuple             # pairwise coprime, <= 256, largest first
    base: str = "int8"        # residues are int8; products int32
    target: str = "float64"
    scaling: str = "pow2"     # one power of two per row of A / column of B, then rounded to integers
    aliases: tuple = ()
    fp32_class = False        # class attribute: the float32 criterion does not apply
    # DGEMM's worst-case bound holds only within a span (accuracy.classes.class_span: x14 two
    # binades), as fp16x3's float32 bound does: neither is of its class on every input.
    fp64_class = False

    @property
    def terms(self):
        return len(self.moduli)

    @property
    def products(self):
        return tuple((l, l) for l in range(self.terms))

    @property
    def modulus(self):
        """``M``, the product of the moduli (a Python int)."""
        return math.prod(self.moduli)

    @property
    def bits(self):
        """``(Q_A, Q_B)``: rows of A are scaled to 2-norm <= 2**Q_A, columns of B to 2**Q_B, with
        ``Q_A + Q_B = floor(log2 M) - 2``, so ``sum |A'||B'| <= ||A'_i|| ||B'_j|| < M / 2``."""
        total = self.modulus.bit_length() - 1 - 2
        return total // 2, total - total // 2

    @property
    def chunks(self):
        """Number of 39-bit float64 chunks that hold a residue of ``M`` (3 for N <= 14, 4 up to 20)."""
        return -(-self.modulus.bit_length() // CHUNK_BITS)

    @property
    def cost(self):
        """int8 GEMMs per product (an int8 GEMM runs at about twice the bf16 rate)."""
        return self.terms

    def crt_constants(self):
        """float64 array: ``W[l, c]`` (N x chunks) then ``M[c]`` (chunks) then ``1/M``.

        ``W_l = (M/m_l) * ((M/m_l)**-1 mod m_l)`` is 1 modulo ``m_l`` and 0 modulo the others, so
        ``sum_l W_l r_l`` is congruent to the product modulo ``M``. Chunk ``c`` holds the bits
        ``[e_c, e_c + 39)`` with ``e_c = bitlen(M) - 39 (c + 1)`` (the last one every bit below),
        so every ``W[l, c] * r`` with ``|r| < 256`` and the sum of 20 of them are exact in float64.
        """
        return _crt_constants(self.moduli)


@functools.lru_cache(maxsize=None)
def _crt_constants(moduli):
    m_total = math.prod(moduli)
    weights = [(m_total // m) * pow(m_total // m, -1, m) % m_total for m in moduli]
    top = m_total.bit_length()
    count = -(-top // CHUNK_BITS)
    edges = [max(top - CHUNK_BITS * c, 0) for c in range(count + 1)]
    edges[-1] = 0

    def chunks(value):
        return [float((value >> lo << lo) - (value >> hi << hi)) for hi, lo in zip(edges, edges[1:])]

    table = [x for w in weights for x in chunks(w)] + chunks(m_total) + [1 / m_total]
    out = np.array(table, np.float64)
    out.setflags(write=False)
    return out


def ozaki2_int8(moduli=14):
    """The registered scheme ``ozaki2_int8x<moduli>`` (``ozaki2_int8(14).name == "ozaki2_int8x14"``).

    Raises
    ------
    ValueError
        A modulus count outside ``COUNTS`` (12..18).
    """
    if moduli not in COUNTS:
        raise ValueError(f"ozaki2_int8: moduli={moduli!r} is not supported; expected one of "
                         f"{', '.join(map(str, COUNTS))}")
    return SCHEMES[COUNTS.index(moduli)]


SCHEMES = tuple(Ozaki2DType(f"ozaki2_int8x{n}", _coprime_moduli(n)) for n in COUNTS)


def grid_bits(k):
    """Bits ``G`` of the grid on which the 2-norm of a slice of length ``k`` is bounded: ``k * 4**G
    < 2**52``, so the sum of the squared grid values is an exact float64 integer in any order."""
    return min(16, (52 - int(k).bit_length()) // 2)


def scale_exponents(x, bits, axis):
    """Exponent ``sigma`` of each slice of float64 ``x`` along ``axis`` (kept as a length-1 axis).

    The rule (docs/ozaki.md): with ``2**g`` the smallest power of two above the slice's largest
    finite magnitude, ``w = ceil(|x| * 2**(G - g))`` (``G = grid_bits(k)``) and ``S = sum w**2``
    (exact), ``s = 2**(g - G) * sqrt(S)`` bounds the slice's 2-norm from above; ``e`` is the
    smallest integer with ``s <= 2**e`` and ``sigma = bits - e``, so ``||x * 2**sigma||_2 <=
    2**bits``. Slices without a nonzero finite value get 0. NaN/inf count as zero. numpy or cupy.
    """
    from ._backend import namespace
    xp = namespace(x)
    if x.shape[axis] == 0:
        return xp.zeros(x.shape[:axis % x.ndim] + (1,) + x.shape[axis % x.ndim + 1:], np.int32)
    w = xp.abs(x)                         # |x|, NaN/inf as 0, then w and w**2 in place: one temporary
    xp.copyto(w, 0.0, where=~xp.isfinite(w))
    peak = w.max(axis=axis, keepdims=True)
    g = xp.frexp(peak)[1]
    grid = grid_bits(x.shape[axis])
    xp.ceil(xp.ldexp(w, (grid - g).astype(np.int32), out=w), out=w)
    total = xp.multiply(w, w, out=w).sum(axis=axis, keepdims=True)
    half = (xp.frexp(xp.maximum(total - 1, 0))[1] + 1) // 2
    return xp.where(peak > 0, bits - (g - grid + half), 0).astype(np.int32)
