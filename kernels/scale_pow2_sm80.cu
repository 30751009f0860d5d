// SPDX-License-Identifier: Apache-2.0
// Undo the power-of-two row/column scaling of a split product: c[b, i, j] *= 2**(row[b, i] + col[b, j]),
// rounded once to float32 with subnormals kept (numpy.ldexp's result), in place.
#include "common/pow2.cuh"

__global__ void __launch_bounds__(256)
scale_rows_cols(float* c,               // (batch, m, n) float32
                const int* row,         // (batch or 1, m) exponents of A's rows
                const int* col,         // (batch or 1, n) exponents of B's columns
                int m, int n, long long rows,       // rows = batch * m
                int row_batch_stride, int col_batch_stride)   // 0 for an exponent shared by the batch
{
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long b = r / m;
    const int e = row[b * row_batch_stride + r % m];
    const int* col_b = col + b * col_batch_stride;
    float* out = c + r * n;
    for (int j = threadIdx.x; j < n; j += blockDim.x) out[j] = scale_pow2(out[j], e + col_b[j]);
  }
}
