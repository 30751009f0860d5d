"""The numpy engine's Ozaki-II steps give the bits of the plain formulation they replace.

The engine keeps its residues as int8 and its reduced products as int16, recovers them by a
float64 BLAS product over the moduli, and reduces by a multiplication with a reciprocal rounded
up: each must equal, bit for bit, float32 residues, float64 CRT inputs and numpy's fmod.
"""
import numpy as np
import pytest

from splitprec.engines.reference import ozaki as reference_ozaki
from splitprec.ozaki import SCHEMES, ozaki2_int8


def bits(x):
    return np.asarray(x).view(np.uint64)


@pytest.mark.parametrize("d", [SCHEMES[0], SCHEMES[-1]], ids=lambda d: d.name)
def test_int8_residues_equal_the_float32_ones(d):
    local = np.random.default_rng(7)
    t = np.ldexp(np.rint(local.standard_normal((3, reference_ozaki.RESIDUE_BLOCK + 17)) * 2.0 ** 40),
                 local.integers(0, 31, (3, reference_ozaki.RESIDUE_BLOCK + 17)))
    narrow, wide = reference_ozaki.residues(t, d, np.int8), reference_ozaki.residues(t, d)
    assert narrow.dtype == np.int8 and narrow.shape == (d.terms,) + t.shape
    np.testing.assert_array_equal(narrow, wide)


@pytest.mark.parametrize("d", SCHEMES, ids=lambda d: d.name)
def test_crt_of_int16_products_equals_crt_of_signed_float64_ones(d):
    """Zeros lose their sign in int16: the CRT's result does not depend on it (nor on the order of
    its exact chunk sums)."""
    local = np.random.default_rng(d.terms)
    size = reference_ozaki.RESIDUE_BLOCK + 123
    products = np.stack([np.where(local.random(size) < 0.6, 0, local.integers(1 - m, m, size)) for m in d.moduli])
    signed = [np.where((r == 0) & (local.random(size) < 0.5), -0.0, r.astype(np.float64)) for r in products]
    expected = reference_ozaki.crt(signed, d)
    assert np.array_equal(bits(reference_ozaki.crt(products.astype(np.int16), d)), bits(expected))
    assert not np.signbit(expected[(products == 0).all(axis=0)]).any()


def test_fmod_by_a_reciprocal_rounded_up_equals_numpy_fmod_at_every_quotient_edge():
    """``x = q m + f`` for the extreme remainders f, quotients up to ``2**51 / m``: float outputs
    bit for bit (signed zeros included), int16 outputs by value."""
    local = np.random.default_rng(13)
    for m in ozaki2_int8(18).moduli:
        q = np.concatenate([local.integers(0, 2 ** 51 // m, 400), [0, 1, 2 ** 51 // m - 1]]).astype(np.float64)
        x = np.concatenate([q * m + f for f in (0.0, 1.0, m - 1.0, -1.0)])
        x = np.concatenate([x, -x])
        x = x[np.abs(x) <= 2.0 ** 51]
        expected = np.fmod(x, m)
        assert np.array_equal(bits(reference_ozaki._fmod(x, m)), bits(expected))
        np.testing.assert_array_equal(reference_ozaki._fmod(x, m, out=np.empty(x.shape, np.int16)), expected)
