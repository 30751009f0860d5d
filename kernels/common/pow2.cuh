// SPDX-License-Identifier: Apache-2.0
// float32 arithmetic that keeps subnormals although cupy compiles every kernel with -ftz=true:
// inline PTX without .ftz is left as written. Power-of-two scaling rounds once, like numpy.ldexp.
#pragma once

__device__ __forceinline__ float sub_keep_subnormals(float a, float b) {
  float r;
  asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

__device__ __forceinline__ float fma_keep_subnormals(float a, float b, float c) {
  float r;
  asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
  return r;
}

// x * 2**n rounded once to float32: exact in float64 (|n| <= 1000 here), then rounded to nearest even
// with float32 subnormals kept.
__device__ __forceinline__ float scale_pow2(float x, int n) {
  if (n == 0) return x;
  double wide;
  float r;
  asm("cvt.f64.f32 %0, %1;" : "=d"(wide) : "f"(x));
  wide *= __longlong_as_double(static_cast<long long>(n + 1023) << 52);
  asm("cvt.rn.f32.f64 %0, %1;" : "=f"(r) : "d"(wide));
  return r;
}
