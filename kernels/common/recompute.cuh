// SPDX-License-Identifier: Apache-2.0
// One entry of a float32 product recomputed from its row of A and column of B: the float64
// product's NaN/inf from the signs of the inputs, or the float64 dot product rounded once. Signs and
// float64 operands come from the bits: cupy compiles with -ftz=true, which would flush a subnormal
// before a comparison or a conversion (and turn inf * subnormal into inf * 0 = NaN).
#pragma once

// x if it is NaN/inf, else its sign (0 for zeros), from the bits.
__device__ __forceinline__ float sign_or_special(float x) {
  const unsigned magnitude = __float_as_uint(x) & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) return x;
  return magnitude == 0u ? 0.0f : (__float_as_uint(x) >> 31 ? -1.0f : 1.0f);
}

__device__ __forceinline__ double sign_or_special(double x) {
  return isfinite(x) ? static_cast<double>((x > 0.0) - (x < 0.0)) : x;
}

// float32 -> float64 exactly, subnormals kept (PTX without .ftz).
__device__ __forceinline__ double widen_keep_subnormals(float x) {
  double wide;
  asm("cvt.f64.f32 %0, %1;" : "=d"(wide) : "f"(x));
  return wide;
}

// Sum over q of sign_or_special(row[q]) * sign_or_special(col[q * n]): a sum of integers of
// magnitude <= k whose NaN/inf are exactly the product's (inf * 0 and inf - inf are NaN), never
// finite where a NaN/inf input meets the row or column.
template <typename T>
__device__ __noinline__ T sign_pattern(const T* row, const T* col, int k, long long n) {
  T pattern = 0;
  for (int q = 0; q < k; ++q) pattern += sign_or_special(row[q]) * sign_or_special(col[q * n]);
  return pattern;
}

// The float64 dot product of row[0 .. k) and col[0, n, .. (k-1) n] rounded once to float32, ties to
// even, float32 subnormals kept: finite if the product is, else its signed inf.
__device__ __noinline__ float dot_rounded(const float* row, const float* col, int k, long long n) {
  double dot = 0.0;
  for (int q = 0; q < k; ++q) dot = fma(widen_keep_subnormals(row[q]), widen_keep_subnormals(col[q * n]), dot);
  float rounded;
  asm("cvt.rn.f32.f64 %0, %1;" : "=f"(rounded) : "d"(dot));
  return rounded;
}
