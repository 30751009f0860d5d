// SPDX-License-Identifier: Apache-2.0
// Ozaki scheme II on int8: the moduli (the 20 largest pairwise coprime integers <= 256, largest
// first; splitprec/ozaki.py holds the same list) and the symmetric int8 residue of a float64 integer.
#pragma once

__host__ __device__ constexpr int ozaki2_modulus(int l) {
  constexpr int table[20] = {256, 255, 253, 251, 247, 241, 239, 233, 229, 227,
                             223, 217, 211, 199, 197, 193, 191, 181, 179, 173};
  return table[l];
}

// t mod m in [-floor(m/2), ceil(m/2) - 1] for an integer-valued double |t| < 2**84. Every step is
// exact: t = hi * 2**32 + lo, each reduced by m * rint(x / m) (|x| < 2**52, so the quotient is off
// by at most one and the remainder below 2m), recombined with 2**32 mod m (|sum| < 2**17), reduced.
__device__ __forceinline__ signed char ozaki2_residue(double t, int m) {
  const double md = m, inv = 1.0 / md;
  const double pow32 = (double)((1ull << 32) % (unsigned long long)m);
  const double hi = trunc(t * 0x1p-32);
  const double lo = t - hi * 0x1p32;
  double r = (hi - md * rint(hi * inv)) * pow32 + (lo - md * rint(lo * inv));
  r -= md * rint(r * inv);
  if (r > (m - 1) / 2) r -= md;
  return (signed char)(int)r;
}
