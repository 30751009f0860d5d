// SPDX-License-Identifier: Apache-2.0
// Ozaki scheme II on int8: the moduli (the 20 largest pairwise coprime integers <= 256, largest
// first; splitprec/ozaki.py holds the same list) and the symmetric int8 residue of a float64 integer.
#pragma once

__host__ __device__ constexpr int ozaki2_modulus(int l) {
  constexpr int table[20] = {256, 255, 253, 251, 247, 241, 239, 233, 229, 227,
                             223, 217, 211, 199, 197, 193, 191, 181, 179, 173};
  return table[l];
}

// t mod m in [-floor(m/2), ceil(m/2) - 1] for an integer-valued double |t| < 2**72. Every step is
// exact: t = hi * 2**36 + lo (|hi|, |lo| < 2**36); r = hi * (2**36 mod m) + lo < 2**45 is congruent
// to t; r - m * rint(r / m) is the symmetric residue: the computed r / m is within 2**-15 of the
// exact one (m >= 173), which for odd m is at least 1/(2m) away from a half-integer; for m = 256
// the division is exact and a tie rounds to even, so +128 is moved to -128.
__device__ __forceinline__ signed char ozaki2_residue(double t, int m) {
  const double md = m, inv = 1.0 / md;
  const double pow36 = (double)((1ull << 36) % (unsigned long long)m);
  const double hi = trunc(t * 0x1p-36);
  const double r = fma(hi, pow36, t - hi * 0x1p36);
  const double s = fma(-md, rint(r * inv), r);
  return (signed char)(int)(m == 256 && s > 127.0 ? s - 256.0 : s);
}
