// SPDX-License-Identifier: Apache-2.0
// float32 arithmetic that keeps subnormals although cupy compiles every kernel with -ftz=true:
// inline PTX without .ftz is left as written. Power-of-two scaling rounds once, like numpy.ldexp,
// and its exponents come from integer bits (splitprec.split._pow2_exponent).
#pragma once

__device__ __forceinline__ float sub_keep_subnormals(float a, float b) {
  float r;
  asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

__device__ __forceinline__ float mul_keep_subnormals(float a, float b) {
  float r;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

__device__ __forceinline__ float fma_keep_subnormals(float a, float b, float c) {
  float r;
  asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
  return r;
}

// x * 2**n rounded once to float32 with subnormals kept: one float32 product where 2**n is a normal
// float32, else exact in float64 (|n| <= 1000 here), then rounded to nearest even.
__device__ __forceinline__ float scale_pow2(float x, int n) {
  if (n >= -126 && n <= 127) return mul_keep_subnormals(x, __int_as_float((n + 127) << 23));
  double wide;
  float r;
  asm("cvt.f64.f32 %0, %1;" : "=d"(wide) : "f"(x));
  wide *= __longlong_as_double(static_cast<long long>(n + 1023) << 52);
  asm("cvt.rn.f32.f64 %0, %1;" : "=f"(r) : "d"(wide));
  return r;
}

// Exponent of a slice whose largest finite magnitude has bits `peak`: with peak = f * 2**e, f in
// [0.5, 1), e - emax; 0 for an all-zero slice.
__device__ __forceinline__ int pow2_exponent(unsigned peak, int emax) {
  if (peak == 0) return 0;
  const int e = (peak >> 23) ? static_cast<int>(peak >> 23) - 126 : 32 - __clz(peak & 0x7FFFFFu) - 149;
  return e - emax;
}
