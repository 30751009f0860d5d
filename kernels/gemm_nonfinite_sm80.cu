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
//  - float32: where 2 k max|A| max|B| may reach 2**125, recomputes every other entry that may
//    reach the top of float32's range (its pow2 row and column exponents sum to at least
//    `overflow_exponent`, SplitDType.overflow_exponent) or that overflowed, as a float64 dot product
//    rounded once to float32, ties to even: finite if the product is, else the product's signed inf;
//  - float64 (the fixed Ozaki-II schemes' rescue, splitprec.engines.fp64.rescue_overflow): where the
//    residue kernels' largest row and column 2-norm exponents (norm_peaks, biased by 2048) sum to
//    at least 1024, recomputes every entry whose own row and column exponents do (from the residue
//    exponents sigma = bits - e) as a float64 dot product: the plain one where it stays finite, else
//    the dot of the row and column scaled to 2-norms <= 2**510, scaled back (±inf beyond the range).

#include "common/chain.cuh"
#include "common/recompute.cuh"

// a: (a_batches, m, k), b: (b_batches, k, n), c: (batch, m, n) of T, contiguous; a_batches and
// b_batches are batch or 1 (broadcast). peaks[0], peaks[1]: the largest |A| and |B| bits;
// lines_a (a_batches, m) and lines_b (b_batches, n): nonzero where a row of A / column of B holds
// NaN/inf; exponent_a (a_batches, m), exponent_b (b_batches, n): the float32 split's pow2 exponents,
// or the float64 residues' sigma (null for neither); norm_peaks (float64): the two biased largest
// norm exponents, zero where the residue kernels did not record them; bits_a, bits_b: the float64
// scheme's Q of A and of B.
template <typename T>
__global__ void __launch_bounds__(256)
gemm_nonfinite(const T* a, const T* b, T* c, const unsigned* peaks, const unsigned* lines_a,
               const unsigned* lines_b, int m, int n, int k, long long batch, int a_batched, int b_batched,
               const int* exponent_a, const int* exponent_b, int overflow_exponent,
               const unsigned* norm_peaks, int bits_a, int bits_b) {
  const unsigned peak_a = peaks[0], peak_b = peaks[1];
  const bool special = max(peak_a, peak_b) >= 0x7F800000u;
  bool overflow;
  if constexpr (sizeof(T) == 4) {
    const double largest_a = widen_keep_subnormals(__uint_as_float(min(peak_a, 0x7F7FFFFFu)));
    const double largest_b = widen_keep_subnormals(__uint_as_float(min(peak_b, 0x7F7FFFFFu)));
    // An entry flagged by the exponents has k |A|_row,max |B|_col,max >= 2**124 (docs/bounds.md, section 7).
    overflow = 2.0 * k * largest_a * largest_b >= 0x1p125;
  } else {
    overflow = norm_peaks && norm_peaks[0] && norm_peaks[1] &&
               static_cast<int>(norm_peaks[0]) + static_cast<int>(norm_peaks[1]) - 4096 >= 1024;
  }
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
      c[e] = sign_pattern(row, col, k, n);
    } else if constexpr (sizeof(T) == 4) {
      if (!overflow) continue;
      const bool near_top = exponent_a && exponent_a[za * m + i] + exponent_b[zb * n + j] >= overflow_exponent;
      if (!near_top && isfinite(c[e])) continue;
      c[e] = dot_rounded(row, col, k, n);
    } else {
      if (!overflow) continue;
      const int norm_a = bits_a - exponent_a[za * m + i], norm_b = bits_b - exponent_b[zb * n + j];
      if (norm_a + norm_b < 1024) continue;
      double dot = 0.0;
      for (int q = 0; q < k; ++q) dot = fma(row[q], col[static_cast<long long>(q) * n], dot);
      if (!isfinite(dot)) {
        const int s = max(norm_a - 510, 0), t = max(norm_b - 510, 0);
        dot = 0.0;
        for (int q = 0; q < k; ++q)
          dot = fma(ldexp(row[q], -s), ldexp(col[static_cast<long long>(q) * n], -t), dot);
        dot = ldexp(dot, s + t);
      }
      c[e] = dot;
    }
  }
}

// cuBLAS SGEMM's result c (batch, m, n) of a (a_batches, m, k), b (b_batches, k, n), all float32 and
// contiguous, given the float64 product's NaN/inf and range: every entry that is NaN/inf or whose
// magnitude reaches `limit` is recomputed as a float64 dot product rounded once to float32. An
// entry that passed through no overflow erred by at most 2k roundings of values below FLT_MAX, so
// one below limit = FLT_MAX (1 - (2k + 2) 2^-24) has a finite product; a NaN/inf input makes every
// entry of its row or column NaN/inf in SGEMM (inf stays inf or becomes NaN), so it is recomputed.
// c is read as float4 (cupy's allocations are 256-byte aligned), its last size % 4 entries singly.
__device__ __forceinline__ void sgemm_recompute(const float* a, const float* b, float* c, long long e, int m,
                                                int n, int k, int a_batched, int b_batched) {
  const long long z = e / (static_cast<long long>(m) * n);
  const int i = static_cast<int>(e / n % m), j = static_cast<int>(e % n);
  const float* row = a + ((a_batched ? z : 0) * m + i) * k;
  const float* col = b + (b_batched ? z : 0) * k * n + j;
  c[e] = dot_rounded(row, col, k, n);
}

__device__ __forceinline__ unsigned magnitude_bits(float x) { return __float_as_uint(x) & 0x7FFFFFFFu; }

__global__ void __launch_bounds__(256)
sgemm_nonfinite(const float* a, const float* b, float* c, int m, int n, int k, long long batch,
                int a_batched, int b_batched, float limit) {
  wait_for_previous_kernel();                          // SGEMM's, when launched to overlap it
  const unsigned top = __float_as_uint(limit);          // bits: no flush, NaN's are the largest
  const long long entries = batch * m * n, quads = entries / 4;
  const long long first = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const long long stride = gridDim.x * static_cast<long long>(blockDim.x);
  for (long long q = first; q < quads; q += stride) {
    const float4 v = reinterpret_cast<const float4*>(c)[q];
    const float lane[4] = {v.x, v.y, v.z, v.w};
    if (max(max(magnitude_bits(v.x), magnitude_bits(v.y)), max(magnitude_bits(v.z), magnitude_bits(v.w))) < top)
      continue;
    for (int r = 0; r < 4; ++r)
      if (magnitude_bits(lane[r]) >= top) sgemm_recompute(a, b, c, 4 * q + r, m, n, k, a_batched, b_batched);
  }
  for (long long e = 4 * quads + first; e < entries; e += stride)
    if (magnitude_bits(c[e]) >= top) sgemm_recompute(a, b, c, e, m, n, k, a_batched, b_batched);
}
