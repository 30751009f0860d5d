"""The table of split schemes: one frozen :class:`SplitDType` record per scheme, and its registry.

Names follow ``<part format>x<number of narrow products>`` (``tf32x3``, ``bf16x9``); single-term
schemes carry the bare format name (``tf32``, ``bf16``, ``fp16``). A value ``x`` of the target
precision is split into ``terms`` parts of the ``base`` format: ``hi``, ``mid``, ``lo``. Part ``i``
is stored multiplied by ``2**(i*shift)`` so that it stays in the base format's normal range, and
schemes with ``scaling == "pow2"`` (every float32 scheme) first scale each row of A and column of B
by a power of two that puts its largest magnitude into the binade ``2**scale_exponent(k)``: exact,
undone after the products, so that the parts stay out of the base format's subnormal and overflow
ranges wherever the data lies in float32's (docs/bounds.md, section 2).
A product ``A @ B`` is the sum of the narrow products ``A_i @ B_j`` over ``products``, smallest first.
Everything per-scheme (split, engines, bounds, kernel dispatch) reads these records.
The fp64-class schemes ``ozaki2_int8x<N>`` (float64 target, CRT over N int8 moduli) are
:class:`splitprec.ozaki.Ozaki2DType` records in the same registry (see splitprec/ozaki.py), and
``ozaki2_int8_adaptive`` (``precision="fp64"``) picks among them per product
(splitprec/ozaki_plan.py).

Names resolve case-insensitively, with the spellings in use elsewhere: CUTLASS's (``3xTF32``,
``9xBF16``) and the XLA/JAX ``DotAlgorithmPreset`` names (``LHS_RHS_ACCUM[_X<products>]``, as a
string or a ``jax.lax.DotAlgorithmPreset`` member): ``BF16_BF16_F32`` is ``bf16``,
``BF16_BF16_F32_X3`` ``bf16x3``, ``BF16_BF16_F32_X6`` ``bf16x6``, ``BF16_BF16_F32_X9`` ``bf16x9``,
``TF32_TF32_F32`` ``tf32``, ``TF32_TF32_F32_X3`` ``tf32x3`` and ``F16_F16_F32`` ``fp16`` (the same
parts and products; splitprec's ``fp16`` also scales rows and columns by powers of two). The presets
with no split scheme behind them (``DEFAULT``, the float8 ones, fp16/bf16 accumulation, native
``F32_F32_F32`` and ``F64_F64_F64``) are refused with the reason.
"""
import functools
from dataclasses import dataclass
from typing import Union

from ._scheme import SchemeRecord
from .formats import FORMATS, get_format
from .ozaki import SCHEMES as _OZAKI2_SCHEMES, Ozaki2DType
from .ozaki_plan import ADAPTIVE, Ozaki2AdaptiveDType

__all__ = [
    "FP32_CLASS_PRODUCT_ERROR", "FP32_CLASS_SPAN", "PRECISIONS", "SchemeLike", "SplitDType", "TARGETS",
    "cheapest", "check_precision", "dtype", "dtypes"]
__dir__ = functools.partial(sorted, __all__)       # dir() shows the public names only

FP32_CLASS_PRODUCT_ERROR = 2.0 ** -20   # 16 fp32 unit roundoffs: see docs/bounds.md, "fp32 class"
FP32_CLASS_SPAN = 126                   # binades below a row's largest value kept to split_error
_LONGEST_K = 2 ** 31                    # the longest reduction the spans are stated for


@dataclass(frozen=True, eq=False)
class SplitDType(SchemeRecord):
    """One split-precision scheme (see the module docstring for the meaning of each field);
    equality, hashing, pickling and ``np.dtype(d)`` (float32) as :class:`splitprec._scheme.SchemeRecord`."""

    name: str
    base: str                 # narrow part format, a key of splitprec.formats.FORMATS
    terms: int                # number of parts per value
    products: tuple           # (i, j) part pairs multiplied, ordered smallest first
    shift: int = 0            # part i is stored scaled by 2**(i*shift)
    scaling: str = "pow2"     # "none" | "pow2": power-of-two row (A) / column (B) scaling
    rounding: str = "rne"     # rounding of every part
    target: str = "float32"   # precision the scheme emulates
    aliases: tuple = ()       # other spellings users know (matched case-insensitively)

    @property
    def format(self):
        return get_format(self.base)

    @property
    def split_error(self):
        """Relative representation bound ``|x - merge(split(x))| <= split_error * |x|``, normal range."""
        p = self.format.p
        residual_bits = 24 - self.terms * p       # bits of a float32 significand left after the parts
        return 0.0 if residual_bits <= 0 else 2.0 ** -(self.terms * p)

    @property
    def split_error_toward_zero(self):
        """The bound for values split toward zero (those whose top part would overflow)."""
        return 0.0 if self.terms * self.format.p >= 24 else 2.0 ** (self.terms * (1 - self.format.p))

    @property
    def underflow_error(self):
        """Absolute split error once the lowest part falls below the base format's normal range.

        Half the base format's subnormal spacing, at the lowest part's scale, in units of the
        (pow2-scaled) value: ``|x - merge(split(x))| <= max(split_error*|x|, 2**e * underflow_error)``.
        """
        fmt = self.format
        return fmt.smallest_subnormal / 2 * 2.0 ** (-(self.terms - 1) * self.shift)

    @property
    def part_bound(self):
        """``u`` with ``|part_i| <= u**i * (1 + u) * |x|`` for unscaled parts: the base's unit roundoff."""
        return self.format.unit_roundoff

    @property
    def product_error(self):
        """Relative error of one product ``a*b`` from the split and the dropped products, normal range."""
        u, s, t = self.part_bound, self.split_error, self.terms
        taken = set(self.products)
        # |part_i| <= u**i (1 + u) |x|; |sum of parts| <= (1 + s) |x|  (docs/bounds.md, "split").
        dropped = (1 + u) ** 2 * sum(u ** (i + j) for i in range(t) for j in range(t)
                                     if (i, j) not in taken)
        return dropped + 2 * s * (1 + s) + s * s

    def scale_exponent(self, k):
        """``e`` such that the pow2 split puts each slice's largest magnitude into ``[2**e, 2**(e+1))``,
        for products of inner dimension ``k``: as high as the base format allows (``emax - 1``) while
        ``k`` products of two such slices stay below ``2**126``, so that no partial sum overflows
        float32: ``min(emax - 1, (124 - bitlen(k)) // 2)`` (fp16: 14; tf32, bf16: 61 at k = 1, 55 at
        k = 4096)."""
        return min(self.format.emax - 1, (124 - max(int(k), 1).bit_length()) // 2)

    def overflow_exponent(self, k):
        """The least ``e_a + e_b`` (row and column exponents of the pow2 split) of an entry whose
        ``|A||B|`` may reach ``2**126``: below it ``k * 2**(e_a + e_b + 2 * scale_exponent(k) + 2) <
        2**126``, so the product neither overflows nor nears float32's largest value; at or above it
        the engines recompute the entry as a float64 dot product rounded once."""
        return 125 - 2 * self.scale_exponent(k) - max(int(k), 1).bit_length()

    @property
    def full_precision_floor(self):
        """The least scaled magnitude ``2**f`` whose lowest part is a normal number of the base format:
        values at or above it keep ``split_error``, values below lose bits to underflow."""
        fmt = self.format
        return fmt.emin + (self.terms - 1) * (fmt.p - self.shift)

    def exact_span(self, k=_LONGEST_K):
        """Binades below a slice's largest magnitude within which every value keeps ``split_error``
        (for products of inner dimension ``k``): ``scale_exponent(k) - full_precision_floor``."""
        return self.scale_exponent(k) - self.full_precision_floor

    @property
    def cost(self):
        """Narrow-GEMM work relative to one bf16 GEMM (tf32 runs at half the bf16 rate)."""
        return len(self.products) * (2 if self.base == "tf32" else 1)

    @property
    def fp32_class(self):
        """True when the bound is within 16 fp32 unit roundoffs per product of ``|A||B|`` for every
        element within ``FP32_CLASS_SPAN`` binades (float32's normal range) of its row's (column's)
        largest, at every k up to 2**31 (docs/bounds.md, section 8)."""
        return self.target == "float32" and self.scaling == "pow2" and \
            self.product_error <= FP32_CLASS_PRODUCT_ERROR and self.exact_span() >= FP32_CLASS_SPAN


# What a ``dtype=`` parameter takes: a name, a record, a jax.lax.DotAlgorithmPreset, or None.
SchemeLike = Union[str, SplitDType, Ozaki2DType, Ozaki2AdaptiveDType, None]


def _all_pairs_up_to(terms, level):
    """Part pairs with ``i + j <= level``, smallest (largest ``i + j``) first."""
    pairs = [(i, j) for i in range(terms) for j in range(terms) if i + j <= level]
    return tuple(sorted(pairs, key=lambda ij: (-(ij[0] + ij[1]), -ij[0])))


_SCHEMES = (
    SplitDType("tf32", "tf32", 1, ((0, 0),), aliases=("tf32_tf32_f32",)),
    SplitDType("bf16", "bf16", 1, ((0, 0),), aliases=("bf16_bf16_f32",)),
    SplitDType("fp16", "fp16", 1, ((0, 0),), aliases=("f16_f16_f32",)),
    SplitDType("tf32x3", "tf32", 2, _all_pairs_up_to(2, 1), aliases=("3xtf32", "tf32_tf32_f32_x3")),
    SplitDType("bf16x3", "bf16", 2, _all_pairs_up_to(2, 1),
               aliases=("3xbf16", "2xbf16", "bf16_bf16_f32_x3")),
    SplitDType("bf16x6", "bf16", 3, _all_pairs_up_to(3, 2), aliases=("6xbf16", "bf16_bf16_f32_x6")),
    SplitDType("bf16x9", "bf16", 3, _all_pairs_up_to(3, 4), aliases=("9xbf16", "bf16_bf16_f32_x9")),
    SplitDType("fp16x3", "fp16", 2, _all_pairs_up_to(2, 1), shift=11,
               aliases=("3xfp16",)),
)
_REGISTRY = {d.name: d for d in _SCHEMES + _OZAKI2_SCHEMES + (ADAPTIVE,)}
_LOOKUP = {alias: d for d in _REGISTRY.values() for alias in (d.name, *d.aliases)}
# XLA DotAlgorithmPresets that name no split scheme, and why (lower case, as looked up).
_UNMATCHED_PRESETS = {
    "default": "it leaves the algorithm to the compiler",
    **{f"any_f8_any_f8_{accum}": "its products are float8, and splitprec has no float8 parts"
       for accum in ("f32", "f32_fast_accum", "any", "any_fast_accum")},
    "f16_f16_f16": "it accumulates in fp16; splitprec accumulates in float32",
    "bf16_bf16_bf16": "it accumulates in bf16; splitprec accumulates in float32",
    "f32_f32_f32": "it means native float32 products (numpy.matmul, cupy.matmul)",
    "f64_f64_f64": "it means native float64 products; the fp64-class schemes are ozaki2_int8x<N>",
}
TARGETS = ("float32", "float64")
PRECISIONS = ("fp32", "fp64")
assert all(d.base in FORMATS for d in _SCHEMES)


def dtypes(target=None):
    """Names of all registered schemes, sorted; ``target="float32"`` or ``"float64"`` keeps one class.

    Raises
    ------
    ValueError
        An unknown ``target``.
    TypeError
        A ``target`` that is not a str.
    """
    if target is not None and not isinstance(target, str):
        raise TypeError(f"dtypes: target must be None or a str, got {target!r} of type {type(target).__name__}")
    if target is not None and target not in TARGETS:
        raise ValueError(f"dtypes: unknown target {target!r}; expected None, 'float32' or 'float64'")
    return sorted(n for n, d in _REGISTRY.items() if target in (None, d.target))


def dtype(name):
    """The :class:`SplitDType` for ``name`` (case-insensitive; ``3xTF32``, ``BF16x9`` etc. resolve).

    Raises
    ------
    ValueError
        If no scheme has that name.
    TypeError
        If ``name`` is neither a string nor a SplitDType.
    """
    if isinstance(name, SchemeRecord):
        return name
    if type(name).__name__ == "DotAlgorithmPreset":       # jax.lax's enum, without importing jax
        name = name.name
    if not isinstance(name, str):
        raise TypeError(f"split dtype must be a name (str) or SplitDType, got {name!r} of type "
                        f"{type(name).__name__}")
    expected = f"expected one of {', '.join(map(repr, dtypes()))}"
    if name.lower() in _UNMATCHED_PRESETS:
        raise ValueError(f"split dtype {name!r} is an XLA DotAlgorithmPreset with no splitprec "
                         f"equivalent: {_UNMATCHED_PRESETS[name.lower()]}; {expected}")
    try:
        return _LOOKUP[name.lower()]
    except KeyError:
        raise ValueError(f"unknown split dtype {name!r}; {expected}") from None


def check_precision(precision):
    """``"fp32"`` or ``"fp64"`` for ``precision`` in any case (as scheme names are matched); a
    TypeError or ValueError naming it otherwise (checked before any lookup, so unhashable values
    get the same clear message)."""
    if not isinstance(precision, str):
        raise TypeError(f"precision must be 'fp32' or 'fp64' (a str), got {precision!r} of type "
                        f"{type(precision).__name__}")
    if precision.lower() not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; expected 'fp32' or 'fp64' (in any case)")
    return precision.lower()


def cheapest(precision):
    """The cheapest scheme of ``precision`` class: ``"fp32"`` (ties broken by the smaller error) or
    ``"fp64"``: ``ozaki2_int8_adaptive``, which picks moduli, slices or float64 per product so that
    every input gets DGEMM's worst-case bound (docs/ozaki.md)."""
    return _cheapest(check_precision(precision))


@functools.lru_cache(maxsize=None)
def _cheapest(precision):
    if precision == "fp64":
        return ADAPTIVE
    return min((d for d in _SCHEMES if d.fp32_class), key=lambda d: (d.cost, d.product_error))
