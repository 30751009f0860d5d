// SPDX-License-Identifier: Apache-2.0
// Ozaki scheme II, result side: from the int32 products of the residues (one per modulus and
// k-block), the integer C with |C| < M/2 by the Chinese remainder theorem, rounded to float64 and
// scaled by 2**-(sigma_i + tau_j). Every step is exact in float64 except the sum of the low chunks,
// the last two additions and the scaling (docs/bounds.md, "Ozaki scheme II"); the operations are
// those of splitprec.engines.reference.ozaki.crt, so the result equals the numpy engine's bit for bit.
#include "common/ozaki2.cuh"

template <int N,   // number of moduli
          int C>   // 39-bit chunks of the CRT constants (3 or 4)
__global__ void __launch_bounds__(256)
ozaki2_crt_sm80(const int* __restrict__ prod,       // (blocks, batch, N, m, ldc) int32 products
                double* __restrict__ out,            // (batch, m, n) float64
                const int* __restrict__ row_exp,     // (batch or 1, m) sigma of A's rows
                const int* __restrict__ col_exp,     // (batch or 1, n) tau of B's columns
                const double* __restrict__ consts,   // W (N x C), M chunks (C), 1/M
                int m, int n, int rows,              // rows = batch * m; one thread per column j
                int ldc,                             // row stride of prod, >= n
                int blocks, long long block_stride,  // k-blocks; batch * N * m * ldc
                int row_batch_stride, int col_batch_stride)   // m or n; 0 when shared
{
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  for (int row = blockIdx.y; row < rows; row += gridDim.y) {
    const int b = row / m, i = row - b * m;
    int acc[N];
#pragma unroll
    for (int l = 0; l < N; ++l)                 // N independent loads in flight per thread
      acc[l] = prod[((long long)b * N + l) * m * ldc + (long long)i * ldc + j];
    for (int blk = 1; blk < blocks; ++blk) {
#pragma unroll
      for (int l = 0; l < N; ++l)
        acc[l] = acc[l] % ozaki2_modulus(l) +
                 prod[blk * block_stride + ((long long)b * N + l) * m * ldc + (long long)i * ldc + j] %
                     ozaki2_modulus(l);       // |acc| < 2 * 256 after each block
    }
    double s[C];
#pragma unroll
    for (int c = 0; c < C; ++c) s[c] = 0.0;
#pragma unroll
    for (int l = 0; l < N; ++l) {
      const double r = (double)(acc[l] % ozaki2_modulus(l));
#pragma unroll
      for (int c = 0; c < C; ++c) s[c] += consts[l * C + c] * r;     // exact: < 2**52 on the chunk's grid
    }
    const double q = rint((s[0] + s[1]) * consts[N * C + C]);      // the multiple of M to remove
    double t[C];
#pragma unroll
    for (int c = 0; c < C; ++c) t[c] = s[c] - q * consts[N * C + c];   // exact
    const double low = C > 3 ? t[2] + t[3 % C] : (C > 2 ? t[2 % C] : 0.0);
    const double high = t[0] + t[1];                                   // TwoSum: high + err = t0 + t1
    const double z = high - t[0];
    const double err = (t[0] - (high - z)) + (t[1] - z);
    const double value = high + (err + low);                           // one rounding but the low chunks'
    out[(long long)row * n + j] =
        ldexp(value, -(row_exp[b * row_batch_stride + i] + col_exp[b * col_batch_stride + j]));
  }
}
