// SPDX-License-Identifier: Apache-2.0
// float32 arrays added in float64 in their order and rounded once to float32, in one pass over
// memory: the combination of a blocked product's k-chunk partials (splitprec/dask.py). The build
// flushes float32 subnormals (-ftz=true), so float32 values are widened and rounded by their bits
// and float64 arithmetic; no float32 operation touches a subnormal.

// The float64 value of float32 bits ``u``, exactly (subnormals, signed zeros, inf and NaN kept).
__device__ __forceinline__ double widened(unsigned u) {
  const unsigned biased = (u >> 23) & 0xFFu, fraction = u & 0x7FFFFFu;
  if (biased == 0u) {
    const double tiny = (double)fraction * 0x1p-149;
    return (u >> 31) ? -tiny : tiny;
  }
  const unsigned long long exponent = biased == 0xFFu ? 0x7FFull : biased + (1023u - 127u);
  return __longlong_as_double((unsigned long long)(u >> 31) << 63 | exponent << 52 |
                              (unsigned long long)fraction << 29);
}

// The float32 bits of ``x`` rounded once to nearest even: subnormal results by the integer count
// of 2^-149, overflow to ±inf; NaN keeps its sign and leading payload bits (quiet where they vanish).
__device__ __forceinline__ unsigned narrowed(double x) {
  const unsigned long long bits = __double_as_longlong(x);
  const unsigned sign = (unsigned)(bits >> 63) << 31;
  if (isnan(x)) {
    const unsigned fraction = (unsigned)((bits & ((1ull << 52) - 1)) >> 29);
    return sign | 0x7F800000u | fraction | (fraction == 0u ? 0x400000u : 0u);
  }
  const double magnitude = fabs(x);
  if (magnitude < 0x1p-126) return sign | (unsigned)rint(magnitude * 0x1p149);   // <= 2^23: 2^-126
  return __float_as_uint(__double2float_rn(x));                                  // normal or ±inf
}

// out[i] = float32(parts[0][i] + parts[1][i] + ... + parts[count - 1][i]), the sum in float64 from
// the left; ``parts``: ``count`` device pointers to n float32 values each (as bits). ``aligned``:
// every pointer is 16-byte aligned, so each thread loads four values of a part at once.
__device__ __forceinline__ uint4 sum4(const unsigned* const* parts, int count, long long q) {
  uint4 v = reinterpret_cast<const uint4*>(parts[0])[q];
  double t0 = widened(v.x), t1 = widened(v.y), t2 = widened(v.z), t3 = widened(v.w);
  for (int p = 1; p < count; ++p) {
    v = reinterpret_cast<const uint4*>(parts[p])[q];
    t0 += widened(v.x), t1 += widened(v.y), t2 += widened(v.z), t3 += widened(v.w);
  }
  return make_uint4(narrowed(t0), narrowed(t1), narrowed(t2), narrowed(t3));
}

__global__ void __launch_bounds__(256)
float64_sum(const unsigned* const* parts, int count, unsigned* out, long long n, int aligned) {
  const long long stride = 256ll * gridDim.x, first = blockIdx.x * 256ll + threadIdx.x;
  const long long quads = aligned ? n / 4 : 0;
  for (long long q = first; q < quads; q += stride) reinterpret_cast<uint4*>(out)[q] = sum4(parts, count, q);
  for (long long i = 4 * quads + first; i < n; i += stride) {
    double total = widened(parts[0][i]);
    for (int p = 1; p < count; ++p) total += widened(parts[p][i]);
    out[i] = narrowed(total);
  }
}
