// SPDX-License-Identifier: Apache-2.0
// Split float32 matrices into narrow part matrices for the split GEMM: the same parts as
// splitprec.split.split (each part = residual rounded to nearest-even; a value above the format's
// largest finite value is split toward zero; pow2 schemes scale each row of A / column of B by
// 2**-exponent first), written K-major and zero-padded along K to whole 128-byte k-blocks. Row and
// part strides are arguments: the split GEMM kernels read (terms, batch, rows, K') and the cuBLAS
// engine (batch, rows, terms * K'), where a negative part stride lays B's parts out last to first.
// Each thread reads four adjacent values of a row (one 16-byte load where aligned) and writes four
// adjacent parts of an output row per part (8 bytes of bf16/fp16, 16 of tf32); the transposed
// layout goes through a shared-memory tile. Given a peak word, NaN/inf are split as zeros, and the
// peak and the flags of the rows (columns) holding them are what kernels/gemm_nonfinite_sm80.cu reads.
// Where K fits one tile (batches of small matrices), pow2 exponents are found here, not by a pass
// of kernels/scale_pow2_sm80.cu before.
#include "common/load.cuh"
#include "common/pow2.cuh"
#include "common/split.cuh"

constexpr int TILE = 64;                   // (TILE, TILE) input tile per block and step
constexpr int THREADS = 256;               // TILE / 4 threads along a tile row
constexpr int PASS_ROWS = THREADS * 4 / TILE;   // tile rows a block reads at once
constexpr int PASSES = TILE / PASS_ROWS;        // groups of four values per thread per tile

template <int FMT,        // part format (PartFormat)
          int TERMS,      // parts per value
          int SHIFT,      // part i is stored scaled by 2**(i*SHIFT)
          bool TRANSPOSE> // false: (rows, cols) -> (rows, cols_pad);  true: (rows, cols) -> (cols, rows_pad)
__global__ void __launch_bounds__(THREADS)
split_terms_sm80(const float* x,        // (batch, rows, cols) float32; finite unless `peak` is given
                 void* out,             // TERMS x (batch, out rows, out cols) parts, 4-part aligned
                 int* exponent,         // (batch, rows) or (batch, cols) when TRANSPOSE; null: none
                 int rows, int cols,    // input shape
                 int pad,               // K padded: cols_pad (A) or rows_pad (B), whole 128-byte k-blocks
                 long long row_stride,  // elements from one output row to the next (>= pad, multiple of 4)
                 long long term_stride, // elements from one part to the next (multiple of 4, may be negative)
                 unsigned* peak,        // null, or: atomicMax of |x|'s bits; NaN/inf are split as 0
                 unsigned* lines,       // with peak: (batch, rows), or (batch, cols) when TRANSPOSE, zeroed;
                                        // set nonzero where a row (column) holds NaN/inf
                 int find_exponent,     // nonzero: every output row lies in one tile (K <= TILE); the kernel
                 int emax)              //   finds its pow2 exponent (format emax) and writes it to `exponent`
{
  __shared__ float tile[TRANSPOSE ? TILE : 1][TILE + 1];   // (k, n) of B, padded against bank conflicts
  const int z = blockIdx.z, c0 = blockIdx.x * TILE;
  const int ty = threadIdx.x / (TILE / 4), tx = 4 * (threadIdx.x % (TILE / 4));   // tile row (first pass), column
  const bool aligned = rows_aligned16(x, cols);
  const float* xb = x + static_cast<long long>(z) * rows * cols;
  auto* parts = static_cast<typename PartStorage<FMT>::type*>(out);
  const int out_rows = TRANSPOSE ? cols : rows;
  const int y_extent = TRANSPOSE ? pad : rows;   // grid y covers this many, gridDim.y*TILE at a time
  unsigned largest = 0;   // of the |x| bits this thread loaded (NaN/inf bits are the largest)
  for (int r0 = blockIdx.y * TILE; r0 < y_extent; r0 += gridDim.y * TILE) {
    float v[PASSES][4];
#pragma unroll
    for (int p = 0; p < PASSES; ++p) {   // all loads first: PASSES 16-byte loads in flight per thread
      const int gr = r0 + ty + p * PASS_ROWS;
      const float4 f = gr < rows ? load4(xb + static_cast<long long>(gr) * cols, c0 + tx, cols, aligned)
                                 : make_float4(0.f, 0.f, 0.f, 0.f);
      v[p][0] = f.x, v[p][1] = f.y, v[p][2] = f.z, v[p][3] = f.w;
    }
#pragma unroll
    for (int p = 0; p < PASSES; ++p) {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const unsigned magnitude = __float_as_uint(v[p][q]) & 0x7FFFFFFFu;
        largest = max(largest, magnitude);
        if (peak && magnitude >= 0x7F800000u) {
          v[p][q] = 0.0f;
          const int line = TRANSPOSE ? c0 + tx + q : r0 + ty + p * PASS_ROWS;
          lines[static_cast<long long>(z) * (TRANSPOSE ? cols : rows) + line] = 1u;
        }
        if constexpr (TRANSPOSE) tile[ty + p * PASS_ROWS][tx + q] = v[p][q];
      }
    }
    if constexpr (TRANSPOSE) {
      __syncthreads();
#pragma unroll
      for (int p = 0; p < PASSES; ++p)   // output row: column n of the tile; four adjacent k from tile rows
#pragma unroll
        for (int q = 0; q < 4; ++q) v[p][q] = tile[tx + q][ty + p * PASS_ROWS];
      __syncthreads();   // the tile is refilled by the next step
    }
#pragma unroll
    for (int p = 0; p < PASSES; ++p) {
      // Output (orow, ocol .. ocol+3): input row orow, columns ocol..; or input column orow, rows ocol..
      const int orow = (TRANSPOSE ? c0 : r0) + ty + p * PASS_ROWS, ocol = (TRANSPOSE ? r0 : c0) + tx;
      int e = 0;
      if (find_exponent) {   // the TILE / 4 adjacent threads of this output row hold all of it
        unsigned finite = 0;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const unsigned magnitude = __float_as_uint(v[p][q]) & 0x7FFFFFFFu;
          if (magnitude < 0x7F800000u) finite = max(finite, magnitude);
        }
#pragma unroll
        for (int offset = 1; offset < TILE / 4; offset *= 2)
          finite = max(finite, __shfl_xor_sync(0xFFFFFFFFu, finite, offset));
        e = pow2_exponent(finite, emax);
        if (tx == 0 && orow < out_rows) exponent[static_cast<long long>(z) * out_rows + orow] = e;
      } else if (exponent) {
        if (orow < out_rows) e = exponent[static_cast<long long>(z) * out_rows + orow];
      }
      if (orow >= out_rows || ocol >= pad) continue;
      split4<FMT, TERMS, SHIFT>(v[p], e, parts, (static_cast<long long>(z) * out_rows + orow) * row_stride + ocol,
                                term_stride);
    }
  }
  if (peak) {   // one atomic per block: same-address atomics serialise (one per warp cost ~1 ms at n = 8192)
    __shared__ unsigned warp_largest[THREADS / 32];
    largest = __reduce_max_sync(0xFFFFFFFFu, largest);
    if (threadIdx.x % 32 == 0) warp_largest[threadIdx.x / 32] = largest;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < THREADS / 32; ++w) largest = max(largest, warp_largest[w]);
      if (largest) atomicMax(peak, largest);
    }
  }
}
