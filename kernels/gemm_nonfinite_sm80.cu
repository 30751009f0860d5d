// SPDX-License-Identifier: Apache-2.0
// The float64 product's NaN/inf for a split GEMM (float32) or an Ozaki-II one (float64), without a
// host round trip. The operand kernels multiply NaN/inf inputs as zeros, raise the peaks of |A| and
// |B| as float32 bits (NaN/inf bits are the largest; the float64 engine reports only whether an
// operand holds NaN/inf, as inf's bits) and flag the rows of A and columns of B that hold NaN/inf.
// Then this kernel, which returns at once when the peaks show neither NaN/inf nor a possible
// overflow (the usual case):
//  - gives each entry of a flagged row or column its value from the signs of the inputs (finite ->
//    sign, NaN/inf kept): a sum of integers of magnitude <= k, so its NaN/inf are exactly the
//    product's (inf * 0 and inf - inf are NaN), and it is never finite, since a NaN/inf input meets
//    a sign or a zero;
//  - float32 only: where 2 k max|A| max|B| may pass float32's largest value, recomputes every other
//    non-finite entry (a narrow product or partial sum that overflowed) as a float64 dot product
//    rounded to float32: finite if the product is, else the product's signed inf.

// x if it is NaN/inf, else its sign (0 for zeros).
template <typename T>
__device__ __forceinline__ T sign_or_special(T x) {
  return isfinite(x) ? static_cast<T>((x > T(0)) - (x < T(0))) : x;
}

// a: (a_batches, m, k), b: (b_batches, k, n), c: (batch, m, n) of T, contiguous; a_batches and
// b_batches are batch or 1 (broadcast). peaks[0], peaks[1]: the largest |A| and |B| bits;
// lines_a (a_batches, m) and lines_b (b_batches, n): nonzero where a row of A / column of B holds
// NaN/inf.
template <typename T>
__global__ void __launch_bounds__(256)
gemm_nonfinite(const T* a, const T* b, T* c, const unsigned* peaks, const unsigned* lines_a,
               const unsigned* lines_b, int m, int n, int k, long long batch, int a_batched, int b_batched) {
  const unsigned peak_a = peaks[0], peak_b = peaks[1];
  const bool special = max(peak_a, peak_b) >= 0x7F800000u;
  const double largest_a = __uint_as_float(min(peak_a, 0x7F7FFFFFu));
  const double largest_b = __uint_as_float(min(peak_b, 0x7F7FFFFFu));
  const bool overflow = sizeof(T) == 4 && 2.0 * k * largest_a * largest_b >= 3.4028234663852886e38;
  if (!special && !overflow) return;
  const long long entries = batch * m * n;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < entries;
       e += gridDim.x * static_cast<long long>(blockDim.x)) {
    const long long z = e / (static_cast<long long>(m) * n);
    const int i = static_cast<int>(e / n % m), j = static_cast<int>(e % n);
    const long long za = a_batched ? z : 0, zb = b_batched ? z : 0;
    const T* row = a + (za * m + i) * k;
    const T* col = b + zb * k * n + j;
    if (special && (lines_a[za * m + i] | lines_b[zb * n + j])) {
      T pattern = 0;
      for (int q = 0; q < k; ++q)
        pattern += sign_or_special(row[q]) * sign_or_special(col[static_cast<long long>(q) * n]);
      c[e] = pattern;
    } else if constexpr (sizeof(T) == 4) {
      if (!overflow || isfinite(c[e])) continue;
      double dot = 0.0;
      for (int q = 0; q < k; ++q)
        dot = fma(static_cast<double>(row[q]), static_cast<double>(col[static_cast<long long>(q) * n]), dot);
      float rounded;   // one rounding, float32 subnormals kept (cupy compiles with -ftz=true)
      asm("cvt.rn.f32.f64 %0, %1;" : "=f"(rounded) : "d"(dot));
      c[e] = rounded;
    }
  }
}
