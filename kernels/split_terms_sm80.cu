// SPDX-License-Identifier: Apache-2.0
// Split float32 matrices into narrow part matrices for the split GEMM: the same parts as
// splitprec.split.split (each part = residual rounded to nearest-even; a value above the format's
// largest finite value is split toward zero; pow2 schemes scale each row of A / column of B by
// 2**-exponent first), written K-major and zero-padded along K to whole 128-byte k-blocks. Row and
// part strides are arguments: the split GEMM kernels read (terms, batch, rows, K') and the cuBLAS
// engine (batch, rows, terms * K'), where a negative part stride lays B's parts out last to first.
#include "common/pow2.cuh"
#include "common/split.cuh"

constexpr int TILE = 32;   // (TILE, TILE) input tile staged through shared memory for the transpose

// Parts of one (scaled) value into out[term * term_stride + index].
template <int FMT, int TERMS, int SHIFT>
__device__ __forceinline__ void split_value(float x, int exponent, typename PartStorage<FMT>::type* out,
                                            long long index, long long term_stride) {
  float residual = scale_pow2(x, -exponent);
  float top = format_max<FMT>();
  if (exponent > 0)   // |part 0| must also stay below float32's max once 2**exponent is undone
    top = fminf(top, round_part<FMT>(static_cast<float>(ldexp(3.4028234663852886e38, -exponent)), true));
  const bool saturated = fabsf(residual) > top;
#pragma unroll
  for (int i = 0; i < TERMS; ++i) {
    const float part = round_part<FMT>(scale_pow2(residual, i * SHIFT), saturated);
    residual = sub_keep_subnormals(residual, scale_pow2(part, -i * SHIFT));   // exact in float32
    out[i * term_stride + index] = store_part<FMT>(part);
  }
}

template <int FMT,        // part format (PartFormat)
          int TERMS,      // parts per value
          int SHIFT,      // part i is stored scaled by 2**(i*SHIFT)
          bool TRANSPOSE> // false: (rows, cols) -> (rows, cols_pad);  true: (rows, cols) -> (cols, rows_pad)
__global__ void __launch_bounds__(TILE * 8)
split_terms_sm80(const float* x,        // (batch, rows, cols) float32; finite unless `peak` is given
                 void* out,             // TERMS x (batch, out rows, out cols) parts
                 const int* exponent,   // (batch, rows) or (batch, cols) when TRANSPOSE; null: none
                 int rows, int cols,    // input shape
                 int pad,               // K padded: cols_pad (A) or rows_pad (B), whole 128-byte k-blocks
                 long long row_stride,  // elements from one output row to the next (>= pad)
                 long long term_stride, // elements from one part to the next (may be negative)
                 unsigned* peak)        // null, or: atomicMax of |x|'s bits; NaN/inf are split as 0
{
  __shared__ float tile[TILE][TILE + 1];  // (TILE rows, TILE cols) of x, padded against bank conflicts
  const int z = blockIdx.z, c0 = blockIdx.x * TILE;
  const float* xb = x + static_cast<long long>(z) * rows * cols;
  auto* parts = static_cast<typename PartStorage<FMT>::type*>(out);
  const int out_rows = TRANSPOSE ? cols : rows, out_cols = pad;
  const int y_extent = TRANSPOSE ? pad : rows;   // grid y covers this many, gridDim.y*TILE at a time
  unsigned largest = 0;   // of the |x| bits this thread loaded (NaN/inf bits are the largest)
  for (int r0 = blockIdx.y * TILE; r0 < y_extent; r0 += gridDim.y * TILE) {
    for (int r = threadIdx.y; r < TILE; r += blockDim.y) {
      const int gr = r0 + r, gc = c0 + threadIdx.x;
      float v = (gr < rows && gc < cols) ? xb[static_cast<long long>(gr) * cols + gc] : 0.0f;
      const unsigned magnitude = __float_as_uint(v) & 0x7FFFFFFFu;
      largest = max(largest, magnitude);
      if (peak && magnitude >= 0x7F800000u) v = 0.0f;
      tile[r][threadIdx.x] = v;
    }
    __syncthreads();
    for (int r = threadIdx.y; r < TILE; r += blockDim.y) {
      // Output element (orow, ocol) is input (orow, ocol), or input (ocol, orow) when transposing.
      const int orow = (TRANSPOSE ? c0 : r0) + r, ocol = (TRANSPOSE ? r0 : c0) + threadIdx.x;
      if (orow >= out_rows || ocol >= out_cols) continue;
      const float v = TRANSPOSE ? tile[threadIdx.x][r] : tile[r][threadIdx.x];
      const int e = exponent ? exponent[static_cast<long long>(z) * out_rows + orow] : 0;
      split_value<FMT, TERMS, SHIFT>(v, e, parts, (static_cast<long long>(z) * out_rows + orow) * row_stride + ocol,
                                     term_stride);
    }
    __syncthreads();   // the tile is refilled by the next row block
  }
  if (peak) {   // one atomic per block: same-address atomics serialise (one per warp cost ~1 ms at n = 8192)
    __shared__ unsigned warp_largest[8];
    largest = __reduce_max_sync(0xFFFFFFFFu, largest);
    if (threadIdx.x == 0) warp_largest[threadIdx.y] = largest;
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
      for (int w = 1; w < blockDim.y; ++w) largest = max(largest, warp_largest[w]);
      if (largest) atomicMax(peak, largest);
    }
  }
}
