"""The adaptive fp64 scheme ``ozaki2_int8_adaptive`` (``precision="fp64"``): its record and its plan.

The plan makes every entry of ``A @ B`` (float64) as accurate as DGEMM's worst-case bound
``gamma_k (|A||B|)_ij + k 2**-1075`` (docs/bounds.md, section 15), from O(n**2) passes over the
operands. Each row of A (column of B) is split into magnitude slices, ``A = A_0 + A_1 + ...``, every
entry in exactly one slice: slice ``s`` takes the entries of what is left of the row that the
Ozaki-II scheme's integers hold to a relative ``2**-R`` (``sigma + e >= R``, ``e`` the entry's
binary exponent, ``sigma`` the row's scaling; exactly where ``R >= 53``), and ``R`` is the fewest
bits for which the bound holds at this k (:func:`required_bits`). Each slice pair ``A_s B_t`` is
one fixed-count product ``ozaki2_int8x<N>`` on the rows and columns that the two slices touch
(the count ``N`` of the least int8 work; every pair's in one product of the stacked slices,
:meth:`Plan.operands`), and the pair results are added by Sum2 (Ogita, Rump and Oishi 2005). A
row (column) that would need more than ``max_slices`` slices is computed by float64 dot products
(DGEMM), and so is a product whose k is too short for any plan to meet the bound. Entries whose
rows' and columns' norms allow a result beyond float64's range are left to :func:`overflow_risk`
(float64 dot products, ``splitprec.engines.fp64``).
"""
import functools
from dataclasses import dataclass
import math

import numpy as np

from ._backend import namespace
from ._scheme import SchemeRecord
from .ozaki import SCHEMES, scale_exponents

__all__ = [
    "ADAPTIVE", "FirstSlice", "MAX_SLICES", "OVERFLOW_EXPONENT", "Ozaki2AdaptiveDType", "Plan",
    "RESCUE_EXPONENT", "U64", "gamma", "norm_exponents", "overflow_risk", "plan", "required_bits",
    "slice_levels"]
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only

U64 = 2.0 ** -53
MAX_SLICES = 4            # slices per row of A / column of B; more -> that row in float64
OVERFLOW_EXPONENT = 1024  # entries with e_i + e_j >= this may leave float64's range
RESCUE_EXPONENT = 510     # a risky row's float64 dot products run scaled to 2-norm <= 2**510


@dataclass(frozen=True, eq=False)
class Ozaki2AdaptiveDType(SchemeRecord):
    """``precision="fp64"``: the plan of this module picks slices and a modulus count per product;
    equality, hashing, pickling and ``np.dtype(d)`` (float64) as :class:`splitprec._scheme.SchemeRecord`."""

    name: str = "ozaki2_int8_adaptive"
    base: str = "int8"
    target: str = "float64"
    aliases: tuple = ("ozaki2_adaptive",)
    terms = None              # class attributes: the plan picks N and the slices per call
    products = None
    fp32_class = False
    fp64_class = True         # within DGEMM's worst-case bound on every finite input


ADAPTIVE = Ozaki2AdaptiveDType()


def gamma(n):
    """``gamma_n = n u / (1 - n u)`` for float64 (Higham, section 3.1); 0 for n <= 0."""
    return n * U64 / (1 - n * U64) if n > 0 else 0.0


def required_bits(k, pairs, total_bits):
    """The least ``R`` (``<= 53``; 53 means every slice is exact) for which slices held to
    ``2**-R``, summed over at most ``pairs`` slice pairs of an Ozaki-II scheme with ``Q_A + Q_B =
    total_bits``, keep every entry within ``gamma_k |A||B|``; None when none does (k <= 1).

    Per entry (docs/bounds.md, section 15): ``c = 2 rho + rho**2 + u (1 + 2**-50)(1 + rho)**2 +
    2**(total_bits - 110 - 2R)`` for each pair (rounding of A and B, the CRT's rounding, its tail),
    plus ``(u + gamma_(P-1)**2)(1 + c)`` for Sum2 over ``P > 1`` pairs, at most ``gamma_k``.
    """
    for bits in range(1, 54):
        rho = 0.0 if bits >= 53 else 2.0 ** -bits
        pair = 2 * rho + rho * rho + U64 * (1 + 2.0 ** -50) * (1 + rho) ** 2 + \
            2.0 ** (total_bits - 110 - 2 * bits)
        total = pair + ((U64 + gamma(pairs - 1) ** 2) * (1 + pair) if pairs > 1 else 0.0)
        if total * (1 + 2.0 ** -30) <= gamma(k):
            return bits
    return None


def norm_exponents(x, axis):
    """``e`` with ``||line||_2 <= 2**e`` for every line of float64 ``x`` along ``axis`` (kept as a
    length-1 axis; 0 for lines without a nonzero): ``-scale_exponents(x, 0, axis)``."""
    return -scale_exponents(x, 0, axis)


def overflow_risk(a, b, exponents=None):
    """``(risky, e_a, e_b)``: ``risky[..., i, j]`` where ``e_a[i] + e_b[j] >= 1024``, i.e. where the
    rows' and columns' 2-norms allow a result (or a partial sum of the Ozaki pieces) beyond float64's
    range; elsewhere every such value is below ``2**1023 (1 + 2**-10)``. ``exponents``: ``(e_a,
    e_b)`` of :func:`norm_exponents` when already known (a plan's). numpy or cupy."""
    e_a, e_b = (norm_exponents(a, -1), norm_exponents(b, -2)) if exponents is None else exponents
    return e_a + e_b >= OVERFLOW_EXPONENT, e_a, e_b


@dataclass(frozen=True)
class FirstSlice:
    """What the first slice of float64 ``x`` along ``axis`` is for every side's ``bits`` and
    ``required``: ``margin`` (int32, ``x``'s shape), each entry's ``sigma + e - bits`` (its exponent
    less its line's norm exponent, ``scale_exponents(x, 0, axis) + e``), and per line (``axis``
    dropped) the least and largest margin of its nonzero entries. The plan's candidates differ only
    in ``bits`` and ``required``, so they share one: a first slice takes the entries whose margin
    reaches ``required - bits``."""

    nonzero: object
    margin: object
    line_least: object      # int32; INT32_MAX on lines without a nonzero entry
    line_largest: object    # int32; INT32_MIN there
    scaling: object         # int32, scale_exponents(x, 0, axis): minus the lines' norm exponents

    @classmethod
    def of(cls, x, axis):
        xp = namespace(x)
        nonzero = x != 0
        scaling = scale_exponents(x, 0, axis)
        margin = xp.frexp(x)[1]
        margin += scaling
        limits = np.iinfo(np.int32)
        return cls(nonzero, margin, xp.where(nonzero, margin, limits.max).min(axis=axis),
                   xp.where(nonzero, margin, limits.min).max(axis=axis), scaling)

    def lines(self, threshold):
        """``(float64, touched)`` for a first slice at ``threshold``: bool (lines,) across the batch,
        the lines that no slice can take (no entry reaches the threshold, and what is left keeps its
        scaling), and the least number of slices the other lines touch in all (two for a line with
        entries on both sides of the threshold)."""
        nonempty = self.line_least <= self.line_largest
        float64 = _lines(nonempty & (self.line_largest < threshold))
        split = _lines(nonempty & (self.line_least < threshold) & (self.line_largest >= threshold)) & ~float64
        return float64, int((_lines(nonempty) & ~float64).sum()) + int(split.sum())


def slice_levels(x, bits, required, axis, max_slices, first=None):
    """``(level, overfull)`` for float64 ``x`` split along ``axis`` (-1: rows of A, -2: columns of
    B) for an Ozaki-II side of ``bits`` (``Q``): ``level`` (int8, ``x``'s shape) is each entry's
    slice, -1 for zeros and for entries left over; ``overfull`` (``x``'s shape with ``axis``
    dropped) marks the lines left with entries after ``max_slices`` slices.

    Slice ``s`` takes each remaining entry with ``sigma + e >= required``, ``sigma`` the remaining
    line's scaling (``scale_exponents(rest, bits, axis)``) and ``e`` the entry's exponent
    (``|x| >= 2**(e - 1)``); the slice alone has a 2-norm no larger, so the engine's own ``sigma``
    for it is no smaller and the entry's rounding to its integer grid is at most ``2**-required``
    of it (none where ``sigma + e >= 53``: ``x * 2**sigma`` is then an integer). ``first``: the
    :class:`FirstSlice` of ``x`` along ``axis``, when already known.
    """
    xp = namespace(x)
    first = FirstSlice.of(x, axis) if first is None else first
    keep = first.nonzero & (first.margin >= required - bits)
    level = xp.where(keep, np.int8(0), np.int8(-1)).astype(np.int8, copy=False)
    # The later slices, on the lines the first leaves entries on alone (each line's slices are its own):
    lines = xp.nonzero(_lines(first.line_least < required - bits))[0]
    at = (Ellipsis, lines) + ((slice(None),) if axis == -1 else ())
    rest, rest_level = xp.where(keep[at], 0.0, x[at]), level[at]
    for s in range(1, max_slices):
        if not bool((rest != 0).any()):
            break
        keep = (rest != 0) & (scale_exponents(rest, bits, axis) + xp.frexp(rest)[1] >= required)
        rest_level = xp.where(keep, np.int8(s), rest_level)
        rest = xp.where(keep, 0.0, rest)
    level[at] = rest_level
    overfull = xp.zeros(first.line_least.shape, bool)
    overfull[..., lines] = (rest != 0).any(axis=axis)
    return level, overfull


def _lines(mask):
    """bool (lines,): a line marked in any batch entry of ``mask`` (batch..., lines)."""
    return mask.reshape(-1, mask.shape[-1]).any(axis=0)


@dataclass(frozen=True)
class Plan:
    """What the adaptive scheme runs for one product (see the module docstring).

    ``scheme``: the fixed-count Ozaki-II scheme of the pairs (None: every entry in float64);
    ``required``: R; ``level_a``/``level_b``: each entry's slice; ``rows[s]``/``cols[t]``: index
    arrays of the rows of A (columns of B) that slice s (t) touches; ``float64_rows`` /
    ``float64_cols``: bool masks of the rows (columns) computed by float64 dot products;
    ``int8_gemms``: int8 GEMMs of the pairs in units of full-size ones; ``float64_share``: the
    share of the output that float64 dot products compute; ``norm_exponents``: ``(e_a, e_b)`` of
    :func:`norm_exponents` for A and B, which the first slices give.
    """

    scheme: object
    required: int
    level_a: object
    level_b: object
    rows: tuple
    cols: tuple
    float64_rows: object
    float64_cols: object
    int8_gemms: float
    float64_share: float
    norm_exponents: tuple

    def operands(self, a, b):
        """``(x, y)``: each slice ``A_s`` on the rows it touches, stacked along the rows, and each
        ``B_t`` on its columns, stacked along the columns (the order of :meth:`pairs`). One
        fixed-count product ``x @ y`` holds every pair's product: each of its entries is computed
        from its own row of ``x`` and column of ``y`` alone."""
        return _stacked(a, self.level_a, self.rows, -2), _stacked(b, self.level_b, self.cols, -1)

    def pairs(self):
        """``(rows, cols, x_rows, y_cols)`` for every slice pair with a nonempty output, in the order
        the pair results are summed (s, then t): the output's rows and columns, and the slices of
        :meth:`operands`' rows and columns that hold them."""
        for rows, x_start in zip(self.rows, _starts(self.rows)):
            for cols, y_start in zip(self.cols, _starts(self.cols)):
                if rows.size and cols.size:
                    yield rows, cols, slice(x_start, x_start + rows.size), slice(y_start, y_start + cols.size)

    def pieces(self, a, b):
        """``(A_s rows, B_t columns, rows, cols)`` for every slice pair with a nonempty output,
        in the order of :meth:`pairs`."""
        x, y = self.operands(a, b)
        for rows, cols, x_rows, y_cols in self.pairs():
            yield x[..., x_rows, :], y[..., y_cols], rows, cols

    @property
    def everything_float64(self):
        return self.scheme is None or bool(self.float64_rows.all()) or bool(self.float64_cols.all())


def _starts(lines):
    """Where each slice's lines (``lines[s]``, index arrays) start in the stacked operand."""
    return [sum(index.size for index in lines[:s]) for s in range(len(lines))]


def block_index(rows, cols):
    """The index of the block ``rows`` x ``cols`` (sorted, distinct index arrays) of a (..., m, n)
    array, with a slice for each that is one contiguous range (a view where indexing would copy)."""
    rows, cols = _range(rows), _range(cols)
    if isinstance(rows, slice) or isinstance(cols, slice):
        return Ellipsis, rows, cols
    return Ellipsis, rows[:, None], cols[None, :]


def _range(lines):
    """The sorted, distinct indices ``lines`` as a slice where they are one contiguous range."""
    if lines.size and int(lines[-1]) - int(lines[0]) + 1 == lines.size:
        return slice(int(lines[0]), int(lines[0]) + lines.size)
    return lines


def _stacked(x, level, lines, axis):
    """Slice ``s`` of ``x`` (its entries of level ``s``, zeros elsewhere) on ``lines[s]`` (indices
    along ``axis``: -2 rows, -1 columns), for every ``s``, stacked along ``axis``."""
    xp = namespace(x)
    shape = list(x.shape)
    shape[axis] = sum(index.size for index in lines)
    out = xp.empty(tuple(shape))
    tail = (slice(None),) if axis == -2 else ()
    for s, (index, start) in enumerate(zip(lines, _starts(lines))):
        if index.size:
            at = (Ellipsis, _range(index)) + tail
            part = out[(Ellipsis, slice(start, start + index.size)) + tail]
            xp.copyto(part, x[at])
            xp.copyto(part, 0.0, where=level[at] != s)
    return out


def _candidate(a, b, d, slices, firsts):
    """The plan of the fixed-count scheme ``d`` with at most ``slices`` slices per side, or None
    (``firsts``: the :class:`FirstSlice` of ``a`` and of ``b``)."""
    xp = namespace(a, b)
    required = required_bits(a.shape[-1], slices * slices, sum(d.bits))
    if required is None:
        return None
    level_a, overfull_a = slice_levels(a, d.bits[0], required, -1, slices, firsts[0])
    level_b, overfull_b = slice_levels(b, d.bits[1], required, -2, slices, firsts[1])
    float64_rows, float64_cols = _lines(overfull_a), _lines(overfull_b)
    rows = tuple(xp.nonzero(_lines((level_a == s).any(axis=-1)) & ~float64_rows)[0] for s in range(slices))
    cols = tuple(xp.nonzero(_lines((level_b == t).any(axis=-2)) & ~float64_cols)[0] for t in range(slices))
    m, n = a.shape[-2], b.shape[-1]
    r64, c64 = int(float64_rows.sum()), int(float64_cols.sum())
    gemms = sum(d.terms * r.size * c.size for r in rows for c in cols) / (m * n)
    share = (r64 * n + m * c64 - r64 * c64) / (m * n)
    return Plan(d, required, level_a, level_b, rows, cols, float64_rows, float64_cols, gemms, share,
                _norm_exponents(firsts))


def plan(a, b, max_slices=MAX_SLICES):
    """The plan for float64 ``a`` (..., m, k) @ ``b`` (..., k, n), finite, m, n, k >= 1, numpy or
    cupy: of the registered modulus counts, the one that leaves the least output to float64 dot
    products and, among those, needs the fewest int8 GEMMs. At most ``min(max_slices,
    isqrt(k - 1))`` slices per side, so that a result sums at most ``k - 1`` pairs. A count whose
    least possible cost (:func:`_key_floor`) cannot beat the best plan found is not planned.

    Accuracy: ``accuracy.gemm_bound(a, b, "ozaki2_int8_adaptive")``, within DGEMM's worst-case
    bound; checked by ``tests/test_fp64.py::test_adaptive_error_within_bound_on_spans_and_range_edges``.
    """
    xp = namespace(a, b)
    m, n = a.shape[-2], b.shape[-1]
    slices = max(1, min(max_slices, math.isqrt(max(a.shape[-1] - 1, 1))))
    firsts = FirstSlice.of(a, -1), FirstSlice.of(b, -2)
    floors = sorted((floor, i) for i, floor in enumerate(_key_floor(a, d, slices, firsts) for d in SCHEMES)
                    if floor is not None)
    best, best_key = None, None
    for floor, i in floors:               # by the least key each can have: the rest cannot beat the best
        if best_key is not None and floor + (i,) >= best_key:
            break
        candidate = _candidate(a, b, SCHEMES[i], slices, firsts)
        key = (candidate.float64_share, candidate.int8_gemms, i)
        if best_key is None or key < best_key:
            best, best_key = candidate, key
    if best is None:
        return Plan(None, 0, None, None, (), (), xp.ones(m, bool), xp.ones(n, bool), 0.0, 1.0,
                    _norm_exponents(firsts))
    return best


def _norm_exponents(firsts):
    """``(e_a, e_b)`` of :func:`norm_exponents` from the first slices of A and B."""
    return tuple(-first.scaling for first in firsts)


def _key_floor(a, d, slices, firsts):
    """A lower bound on ``(float64_share, int8_gemms)`` of scheme ``d``'s plan from the first slices
    alone (None where no plan of ``d`` meets the bound): its float64 lines include those no slice can
    take, and if no other line is float64, every other line is touched by a slice at least once,
    twice where its entries lie on both sides of the first slice's threshold."""
    required = required_bits(a.shape[-1], slices * slices, sum(d.bits))
    if required is None:
        return None
    (rows64, touched_a), (cols64, touched_b) = (first.lines(required - bits) for first, bits in zip(firsts, d.bits))
    m, n = rows64.size, cols64.size
    r64, c64 = int(rows64.sum()), int(cols64.sum())
    return (r64 * n + m * c64 - r64 * c64) / (m * n), d.terms * touched_a * touched_b / (m * n)
