"""Rounding to narrow formats: exhaustive bf16/fp16, tf32 against its bit definition, an exact oracle."""
from fractions import Fraction
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from splitprec.formats import FORMATS, ROUNDINGS, Format, get_format, is_representable, narrow, round_to, widen

ML_DTYPES = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16,
             "fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2}


def exact_round(x, fmt, rounding, saturate=False):
    """Obviously-right oracle: round the rational value of ``x`` to ``fmt`` with Fractions."""
    if math.isnan(x) or math.isinf(x):
        if math.isinf(x) and fmt.has_inf and not saturate:
            return x
        return math.copysign(fmt.max, x) if saturate and math.isinf(x) else (x if fmt.has_inf else math.nan)
    if x == 0:
        return x
    v = abs(Fraction(x))
    e = max(math.floor(math.log2(v)), fmt.emin)
    while Fraction(2) ** e > v and e > fmt.emin:
        e -= 1
    while Fraction(2) ** (e + 1) <= v:
        e += 1
    e = max(e, fmt.emin)
    quantum = Fraction(2) ** (e - fmt.p + 1)
    n, rem = divmod(v, quantum)
    if rounding == "rz":
        up = False
    elif rem * 2 == quantum:
        up = rounding == "rna" or n % 2 == 1
    else:
        up = rem * 2 > quantum
    r = (n + up) * quantum
    if r > Fraction(fmt.max):
        r = fmt.max if saturate or rounding == "rz" else (math.inf if fmt.has_inf else math.nan)
    return math.copysign(float(r), x)


def same(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    numbers = ~np.isnan(a)
    return np.array_equal(a, b, equal_nan=True) and \
        np.array_equal(np.signbit(a[numbers]), np.signbit(b[numbers]))


def _all_16bit_neighbourhoods(shift):
    """float32 values around every 16-bit pattern: exact, just below/at/above the midpoint, below the next."""
    high = np.arange(2 ** 16, dtype=np.uint32) << np.uint32(16)
    half = np.uint32(1 << (shift - 1))
    lows = [np.uint32(0), half - np.uint32(1), half, half + np.uint32(1), np.uint32((1 << shift) - 1)]
    return np.concatenate([(high | low).view(np.float32) for low in lows])


def test_bf16_rne_matches_ml_dtypes_on_every_encoding_and_midpoint():
    x = _all_16bit_neighbourhoods(16)
    assert same(round_to(x, "bf16"), x.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_bf16_every_encoding_is_a_fixed_point_in_every_mode():
    values = np.arange(2 ** 16, dtype=np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    for rounding in ROUNDINGS:
        assert same(round_to(values, "bf16", rounding), values)


def test_fp16_rne_matches_numpy_on_every_encoding_and_midpoint():
    values = np.arange(2 ** 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    finite = np.sort(values[np.isfinite(values)])
    nextup = np.nextafter(finite, np.float32(np.inf))
    middles = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
    probes = np.concatenate([values, middles, np.nextafter(middles, np.float32(0)),
                             np.nextafter(middles, np.float32(np.inf)), nextup,
                             np.float32([65519.0, 65520.0, 65536.0, 1e30, -1e30, 2.0 ** -25])])
    assert same(round_to(probes, "fp16"), probes.astype(np.float16).astype(np.float32))


@pytest.mark.parametrize("name", ["fp8_e4m3", "fp8_e5m2", "bf16", "fp16"])
def test_rne_matches_ml_dtypes_on_random_float32(name):
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[~np.isnan(x)]
    assert same(round_to(x, name), x.astype(ML_DTYPES[name]).astype(np.float32))


def _tf32_bits(bits, rounding):
    """tf32 rounding written as the bit operation of the hardware conversion (13 low bits dropped)."""
    bits = bits.astype(np.uint64)
    keep = np.uint64(0xFFFFE000)
    low = {"rz": np.uint64(0), "rna": np.uint64(0x1000),
           "rne": np.uint64(0xFFF) + ((bits >> np.uint64(13)) & np.uint64(1))}[rounding]
    return ((bits + low) & keep).astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_tf32_matches_its_bit_definition(rounding):
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 2 ** 32, 500_000, dtype=np.uint64).astype(np.uint32)
    specials = np.float32([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 3.4028235e38, -3.4028235e38,
                           1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, np.inf, -np.inf]).view(np.uint32)
    bits = np.concatenate([bits, specials])
    x = bits.view(np.float32)
    finite = np.isfinite(x)
    expected = _tf32_bits(bits[finite], rounding)
    assert same(round_to(x[finite], "tf32", rounding), expected)
    assert same(round_to(x[~finite], "tf32", rounding), x[~finite])


float32s = st.floats(width=32, allow_nan=True, allow_infinity=True)
float64s = st.floats(allow_nan=True, allow_infinity=True)


@given(x=st.one_of(float32s, float64s), name=st.sampled_from(sorted(FORMATS)),
       rounding=st.sampled_from(ROUNDINGS), saturate=st.booleans())
@example(x=3.4028234663852886e38, name="bf16", rounding="rne", saturate=False)
@example(x=65520.0, name="fp16", rounding="rna", saturate=False)
@example(x=464.0, name="fp8_e4m3", rounding="rne", saturate=True)
@example(x=2.0 ** -25, name="fp16", rounding="rna", saturate=False)     # tie at half the subnormal
@example(x=1 + 2.0 ** -11, name="tf32", rounding="rne", saturate=False)  # tie, rounds to even
@example(x=-1e-300, name="bf16", rounding="rne", saturate=False)        # keeps the sign of zero
def test_round_to_matches_exact_oracle(x, name, rounding, saturate):
    fmt = get_format(name)
    for dtype in (np.float32, np.float64):
        if dtype == np.float32 and np.isfinite(x) and abs(x) > 3.4028234663852886e38:
            continue
        value = np.array([x], dtype)
        got = round_to(value, fmt, rounding, saturate=saturate)
        assert got.dtype == dtype
        assert same(got, [exact_round(float(value[0]), fmt, rounding, saturate)])


def test_round_to_float64_rounds_once_not_through_float32():
    x = np.float64(1 + 2.0 ** -8 + 2.0 ** -40)         # just above a bf16 tie: must round up
    assert round_to(np.array([x]), "bf16")[0] == 1 + 2.0 ** -7
    assert np.float32(x) == 1 + 2.0 ** -8              # through float32 it would be a tie, to even


def test_format_table_identities():
    for fmt in FORMATS.values():
        assert fmt.eps == 2.0 ** (1 - fmt.p)
        assert fmt.unit_roundoff == fmt.eps / 2
        assert round_to(np.float64([fmt.max]), fmt)[0] == fmt.max
        assert is_representable(np.float64([fmt.tiny, fmt.smallest_subnormal]), fmt).all()
    for name, ml in ML_DTYPES.items():
        info = ml_dtypes.finfo(ml)
        assert FORMATS[name].max == float(info.max)
        assert FORMATS[name].tiny == float(info.smallest_normal)
        assert FORMATS[name].smallest_subnormal == float(info.smallest_subnormal)


def test_round_to_rejects_bad_arguments():
    with pytest.raises(TypeError, match=r"^round_to: x has dtype int32"):
        round_to(np.int32([1]), "bf16")
    with pytest.raises(ValueError, match=r"^round_to: unknown rounding 'rd'"):
        round_to(np.float32([1]), "bf16", "rd")
    with pytest.raises(ValueError, match=r"^unknown format 'bf8'; expected one of 'bf16'"):
        round_to(np.float32([1]), "bf8")


@pytest.mark.gpu
def test_round_to_on_cupy_matches_numpy():
    import cupy
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2 ** 32, 100_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    for name in FORMATS:
        for rounding in ROUNDINGS:
            got = round_to(cupy.asarray(x), name, rounding)
            assert isinstance(got, cupy.ndarray)
            assert same(cupy.asnumpy(got), round_to(x, name, rounding))


def _tie_patterns():
    """float32 bit patterns at and beside every rounding boundary of every exponent: each mantissa
    of one or three times a power of two, one below and one above, both signs."""
    mantissas = sorted({v & 0x7FFFFF for j in range(24)
                        for v in (1 << j, (1 << j) - 1, (1 << j) + 1, 3 << j, (3 << j) - 1, (3 << j) + 1)} | {0})
    patterns = np.array([(e << 23) | m for e in range(256) for m in mantissas], np.uint32)
    return np.concatenate([patterns, patterns | np.uint32(0x80000000)])


def test_fp16_by_numpy_conversion_equals_the_bit_rounding():
    """numpy's float32 -> float16 cast (the CPU's fast path of fp16 RNE) gives the bit-level rounding's
    patterns on every boundary, subnormal, NaN payload and inf (all 2^32 patterns agree, checked once
    outside CI), and round_to takes it there."""
    from splitprec import formats
    rng = np.random.default_rng(5)
    x = np.concatenate([_tie_patterns(), rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32)])
    x = x.view(np.float32)
    bit_level = formats._round_float32(x, formats.get_format("fp16"), "rne", False, np)
    assert np.array_equal(formats._round_float32_to_fp16(x).view(np.uint32), bit_level.view(np.uint32))
    assert np.array_equal(round_to(x, "fp16").view(np.uint32), bit_level.view(np.uint32))


@pytest.mark.parametrize("name", [*FORMATS, "p1", "p24e5"])
def test_round_to_float32_by_its_bits_equals_the_float64_rounding(name):
    """float32 input is rounded on its bit pattern; the float64 path, the exact oracle's twin above,
    gives the same bits on every boundary, subnormal, NaN payload and inf (user formats included)."""
    fmt = {"p1": Format("p1", 1, -100, 100, 2.0 ** 100, True),
           "p24e5": Format("p24e5", 24, -14, 15, (2 - 2.0 ** -23) * 2.0 ** 15, True)}.get(name, name)
    rng = np.random.default_rng(3)
    bits = np.concatenate([_tie_patterns(), rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)])
    x = bits.view(np.float32)
    with np.errstate(invalid="ignore"):
        for rounding in ROUNDINGS:
            for saturate in (False, True):
                got = round_to(x, fmt, rounding, saturate=saturate)
                expected = narrow(round_to(widen(x), fmt, rounding, saturate=saturate))
                assert np.array_equal(got.view(np.uint32), expected.view(np.uint32)), (rounding, saturate)
