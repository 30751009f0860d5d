// SPDX-License-Identifier: Apache-2.0
// Power-of-two scaling with one rounding, like numpy.ldexp on float32 (subnormal results included).
#pragma once

// x * 2**n rounded once to float32: the product is exact in float64 (|n| <= 1000 here), and the
// conversion back rounds to nearest even, subnormals kept.
__device__ __forceinline__ float scale_pow2(float x, int n) {
  if (n == 0) return x;
  const double factor = __longlong_as_double(static_cast<long long>(n + 1023) << 52);
  return __double2float_rn(static_cast<double>(x) * factor);
}
