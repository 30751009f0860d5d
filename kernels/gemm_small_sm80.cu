// SPDX-License-Identifier: Apache-2.0
// The split GEMM of one small product per block, split included: for outputs of at most 64 x 64 and
// k of at most SMALL_K (batches of small matrices), where the separate exponent and split passes
// would read both inputs twice more and write their parts. Each block loads its A (m x k) and B
// (k x n) as float32 into shared memory, finds the pow2 exponents of A's rows and B's columns there,
// and per 128-byte k-block splits both into parts exactly as split_terms_sm80.cu does and multiplies
// them exactly as gemm_split_sm80.cu does with 64 x 64 blocks (small products, then hi*hi, each
// promoted by one round-to-nearest add; eight warps of 16 x 32 here, four of 32 x 32 there, which
// changes no element's sums): the same bits as the two-pass path.
#include "common/load.cuh"
#include "common/split.cuh"
#include "common/split_mma.cuh"

constexpr int SMALL_MN = 64;                  // largest m and n (one 64 x 64 block tile per product)
constexpr int SMALL_K = 128;                  // largest k (both operands held as float32)
constexpr int SMALL_THREADS = 256;            // 4 x 2 warps of 16 x 32

// |v|'s bits when v is finite, else 0 (NaN/inf do not count towards the exponent).
__device__ __forceinline__ unsigned finite_bits(float v) {
  const unsigned magnitude = __float_as_uint(v) & 0x7FFFFFFFu;
  return magnitude < 0x7F800000u ? magnitude : 0u;
}

// x (rows, cols) float32 into held (64, stride) by asynchronous copies, zeros past the edges: 16 bytes
// at a time where every row of x starts 16-byte aligned, else 4.
__device__ __forceinline__ void hold_async(const float* x, int rows, int cols, int held_cols, int stride,
                                           float* held) {
  if (rows_aligned16(x, cols)) {
    for (int idx = threadIdx.x; idx < rows * held_cols / 4; idx += SMALL_THREADS) {
      const int r = idx / (held_cols / 4), q = 4 * (idx % (held_cols / 4));
      copy_async<16>(held + r * stride + q, x + static_cast<long long>(r) * cols + min(q, cols - 4), q < cols);
    }
  } else {
    for (int idx = threadIdx.x; idx < rows * held_cols; idx += SMALL_THREADS) {
      const int r = idx / held_cols, q = idx % held_cols;
      copy_async<4>(held + r * stride + q, x + static_cast<long long>(r) * cols + min(q, cols - 1), q < cols);
    }
  }
}

// NaN/inf among held (rows, cols) become zeros and, with `lines`, flag their row (A) or column (B,
// held k-major); returns the largest |x| bits seen (NaN/inf included).
template <bool COLUMNS>
__device__ __forceinline__ unsigned clear_nonfinite(float* held, int rows, int cols, int stride,
                                                    unsigned* lines) {
  unsigned largest = 0;
  for (int r = threadIdx.x / 32; r < rows; r += SMALL_THREADS / 32)   // a warp per row, no divisions
    for (int q = threadIdx.x % 32; q < cols; q += 32) {
      float& v = held[r * stride + q];
      const unsigned magnitude = __float_as_uint(v) & 0x7FFFFFFFu;
      largest = max(largest, magnitude);
      if (magnitude >= 0x7F800000u) {
        v = 0.0f;
        if (lines) lines[COLUMNS ? q : r] = 1u;
      }
    }
  return largest;
}

template <int FMT,           // part format (PartFormat)
          int TERMS,         // parts per operand
          unsigned PAIRS,    // bit 3*i+j set: product A_i B_j is taken
          int SMALL_SHIFT,   // the products with i+j > 0 are scaled by 2**-SMALL_SHIFT
          int SHIFT,         // part i is stored scaled by 2**(i*SHIFT)
          bool POW2>         // rows of A and columns of B scaled by powers of two first
__global__ void __launch_bounds__(SMALL_THREADS)
gemm_small_sm80(const float* a,         // (a_batches, m, k) float32
                const float* b,         // (b_batches, k, n) float32
                float* c,               // (batch, m, n) float32; block z computes c[z]
                int m, int n, int k,    // m, n <= SMALL_MN, k <= SMALL_K
                int a_batched, int b_batched,   // 0: one matrix serves every batch entry
                int emax,               // pow2: the part format's largest exponent
                unsigned* report)       // null, or the split's report: peaks of |A| and |B|, then
{                                       // flags of A's rows (a_batches, m) and B's columns (b_batches, n)
  constexpr int K_VALUES = BLOCK_CHUNKS * CHUNK / (FMT == FMT_TF32 ? 4 : 2);   // k per k-block
  constexpr int MT = 1, WARPS_N = 2, BM = SMALL_MN, BN = SMALL_MN;
  constexpr int STAGE_CHUNKS = TERMS * (BM + BN) * ROW_CHUNKS;
  typedef typename PartStorage<FMT>::type Part;
  constexpr int ROW_PARTS = ROW_CHUNKS * CHUNK / sizeof(Part), TERM_PARTS = (BM + BN) * ROW_PARTS;
  extern __shared__ uint4 smem[];       // parts (STAGE_CHUNKS), then A (64, k_pad + 4), B (k_pad, 68) floats
  __shared__ int exponent[BM + BN];
  __shared__ unsigned block_largest[2];
  const int k_blocks = (k + K_VALUES - 1) / K_VALUES, k_pad = k_blocks * K_VALUES;
  const int stride_a = k_pad + 4, stride_b = SMALL_MN + 4;   // 16-byte aligned rows
  float* held_a = reinterpret_cast<float*>(smem + STAGE_CHUNKS);
  float* held_b = held_a + SMALL_MN * stride_a;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const long long z = blockIdx.x, za = a_batched ? z : 0, zb = b_batched ? z : 0;

  // Rows of A past m and of B past k are zeros (the copies zero the columns past the edges).
  for (int idx = tid; idx < (SMALL_MN - m) * stride_a; idx += SMALL_THREADS) held_a[m * stride_a + idx] = 0.0f;
  for (int idx = tid; idx < (k_pad - k) * stride_b; idx += SMALL_THREADS) held_b[k * stride_b + idx] = 0.0f;
  if (tid < 2) block_largest[tid] = 0u;
  __syncthreads();
  hold_async(a + za * m * k, m, k, k_pad, stride_a, held_a);
  hold_async(b + zb * k * n, k, n, SMALL_MN, stride_b, held_b);
  copy_async_commit();
  copy_async_wait<0>();
  __syncthreads();
  unsigned* lines_a = report ? report + 2 + za * m : nullptr;
  unsigned* lines_b = report ? report + 2 + (a_batched ? gridDim.x : 1) * m + zb * n : nullptr;
  const unsigned largest_a = __reduce_max_sync(0xFFFFFFFFu,
                                               clear_nonfinite<false>(held_a, m, k, stride_a, lines_a));
  const unsigned largest_b = __reduce_max_sync(0xFFFFFFFFu,
                                               clear_nonfinite<true>(held_b, k, n, stride_b, lines_b));
  if (report && lane == 0) {   // one global atomic per block and operand, below
    atomicMax(block_largest, largest_a);
    atomicMax(block_largest + 1, largest_b);
  }
  __syncthreads();
  if (report && tid < 2 && block_largest[tid]) atomicMax(report + tid, block_largest[tid]);
  if constexpr (POW2) {   // exponents of A's rows (a warp per row) and B's columns (a thread each)
    for (int r = warp; r < BM; r += SMALL_THREADS / 32) {
      unsigned peak = 0;
      for (int q = lane; q < k_pad; q += 32) peak = max(peak, finite_bits(held_a[r * stride_a + q]));
      peak = __reduce_max_sync(0xFFFFFFFFu, peak);
      if (lane == 0) exponent[r] = pow2_exponent(peak, emax);
    }
    if (tid < BN) {
      unsigned peak = 0;
      for (int q = 0; q < k_pad; ++q) peak = max(peak, finite_bits(held_b[q * stride_b + tid]));
      exponent[BM + tid] = pow2_exponent(peak, emax);
    }
  } else if (tid < BM + BN) {
    exponent[tid] = 0;
  }
  __syncthreads();

  float total[MT][4][4] = {}, part[MT][4][4] = {};
  Part* parts = reinterpret_cast<Part*>(smem);
  for (int kb = 0; kb < k_blocks; ++kb) {
    for (int unit = tid; unit < BM * K_VALUES / 4; unit += SMALL_THREADS) {   // A: four values of a row
      const int row = unit / (K_VALUES / 4), q = 4 * (unit % (K_VALUES / 4));
      const float4 v = *reinterpret_cast<const float4*>(held_a + row * stride_a + kb * K_VALUES + q);
      const float x[4] = {v.x, v.y, v.z, v.w};
      split4<FMT, TERMS, SHIFT>(x, exponent[row], parts, row * ROW_PARTS + q, TERM_PARTS);
    }
    for (int unit = tid; unit < BN * K_VALUES / 4; unit += SMALL_THREADS) {   // B: four k of a column
      const int col = unit % BN, q = 4 * (unit / BN);
      const float* held = held_b + (kb * K_VALUES + q) * stride_b + col;
      const float x[4] = {held[0], held[stride_b], held[2 * stride_b], held[3 * stride_b]};
      split4<FMT, TERMS, SHIFT>(x, exponent[BM + col], parts, (BM + col) * ROW_PARTS + q, TERM_PARTS);
    }
    __syncthreads();
    if constexpr ((PAIRS & ~1u) != 0) {
      multiply_block<FMT, TERMS, PAIRS, true, MT, BM, BN>(smem, warp_m, warp_n, lane, part);
      promote(total, part, __int_as_float((127 - SMALL_SHIFT) << 23));
    }
    multiply_block<FMT, TERMS, PAIRS, false, MT, BM, BN>(smem, warp_m, warp_n, lane, part);
    promote(total, part, 1.0f);
    __syncthreads();   // the parts of the next k-block overwrite these
  }

  const int g = lane >> 2, q = lane & 3;   // accumulator element e sits at row g + 8*(e/2), col 2q + e%2
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = warp_m * MT * 16 + mt * 16 + g + 8 * (e / 2);
        const int col = warp_n * WARP_N + nt * 8 + 2 * q + (e % 2);
        if (row >= m || col >= n) continue;
        float v = total[mt][nt][e];
        if constexpr (POW2) v = scale_pow2(v, exponent[row] + exponent[BM + col]);
        c[(z * m + row) * n + col] = v;
      }
}
