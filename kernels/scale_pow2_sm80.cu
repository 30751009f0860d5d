// SPDX-License-Identifier: Apache-2.0
// Power-of-two scaling of pow2 schemes: the exponent of each row of A and each column of B (the
// exponent of its largest finite magnitude, as splitprec.split._pow2_exponent), and the undoing of the
// scaling in a product: c[b, i, j] *= 2**(row[b, i] + col[b, j]), rounded once to float32 with
// subnormals kept (numpy.ldexp's result), in place. Magnitudes are compared as integer bits, which
// -ftz=true cannot flush.
#include "common/load.cuh"
#include "common/pow2.cuh"

constexpr int WARPS = 8;   // warps per block of the exponent kernels

// |v|'s bits when v is finite, else 0 (NaN/inf do not count towards the exponent).
__device__ __forceinline__ unsigned finite_magnitude(float v) {
  const unsigned magnitude = __float_as_uint(v) & 0x7FFFFFFFu;
  return magnitude < 0x7F800000u ? magnitude : 0u;
}

__device__ __forceinline__ unsigned finite_magnitude4(float4 v) {
  return max(max(finite_magnitude(v.x), finite_magnitude(v.y)), max(finite_magnitude(v.z), finite_magnitude(v.w)));
}

// Exponent of each row of x (rows, cols): one warp per row, 16-byte loads where aligned.
__global__ void __launch_bounds__(32 * WARPS)
row_exponents(const float* x, int* exponent, long long rows, int cols, int emax) {
  const bool aligned = rows_aligned16(x, cols);
  const int lane = threadIdx.x % 32;
  for (long long r = blockIdx.x * static_cast<long long>(WARPS) + threadIdx.x / 32; r < rows;
       r += gridDim.x * static_cast<long long>(WARPS)) {
    const float* row = x + r * cols;
    unsigned largest = 0;
#pragma unroll 4
    for (int c = 4 * lane; c < cols; c += 128) largest = max(largest, finite_magnitude4(load4(row, c, cols, aligned)));
    largest = __reduce_max_sync(0xFFFFFFFFu, largest);
    if (lane == 0) exponent[r] = pow2_exponent(largest, emax);
  }
}

// atomicMax of each column's largest finite |x| bits into peak (batch, cols), zeroed beforehand, for
// x (batch, rows, cols). A block takes 128 adjacent columns (4 per lane, coalesced) of its share of
// the rows (grid y splits them, every WARPS-th row per warp); its warps combine in shared memory.
__global__ void __launch_bounds__(32 * WARPS)
column_peaks(const float* x, unsigned* peak, int rows, int cols) {
  __shared__ uint4 warp_largest[WARPS][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, z = blockIdx.z;
  const bool aligned = rows_aligned16(x, cols);
  const float* xb = x + static_cast<long long>(z) * rows * cols;
  const int c = blockIdx.x * 128 + 4 * lane;
  uint4 largest = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll 4
  for (int r = blockIdx.y * WARPS + warp; r < rows; r += gridDim.y * WARPS) {
    const float4 v = load4(xb + static_cast<long long>(r) * cols, c, cols, aligned);
    largest = make_uint4(max(largest.x, finite_magnitude(v.x)), max(largest.y, finite_magnitude(v.y)),
                         max(largest.z, finite_magnitude(v.z)), max(largest.w, finite_magnitude(v.w)));
  }
  warp_largest[warp][lane] = largest;
  __syncthreads();
  if (threadIdx.x < 128) {
    const unsigned* columns = reinterpret_cast<const unsigned*>(warp_largest);
    unsigned m = 0;
    for (int w = 0; w < WARPS; ++w) m = max(m, columns[w * 128 + threadIdx.x]);
    const int col = blockIdx.x * 128 + threadIdx.x;
    if (m && col < cols) atomicMax(peak + static_cast<long long>(z) * cols + col, m);
  }
}

// In place: each slice's largest finite |x| bits (from column_peaks) become its exponent.
__global__ void __launch_bounds__(256)
peak_exponents(int* exponent, long long n, int emax) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += gridDim.x * 256LL)
    exponent[i] = pow2_exponent(static_cast<unsigned>(exponent[i]), emax);
}

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
