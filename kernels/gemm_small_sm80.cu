// SPDX-License-Identifier: Apache-2.0
// The split GEMM of one small product per block, split included: for outputs of at most 64 x 64 and
// k of at most SMALL_K (batches of small matrices), where the separate exponent and split passes
// would read both inputs twice more and write their parts. Each block loads its A (m x k) and B
// (k x n) as float32 into shared memory, finds the pow2 exponents of A's rows and B's columns there,
// and per 128-byte k-block splits both into parts exactly as split_terms_sm80.cu does and multiplies
// them exactly as gemm_split_sm80.cu does with 64 x 64 blocks (small products, then hi*hi, each
// promoted by one round-to-nearest add): the same bits as the two-pass path.
#include "common/load.cuh"
#include "common/split.cuh"
#include "common/split_mma.cuh"

constexpr int SMALL_MN = 64;                  // largest m and n (one 64 x 64 block tile per product)
constexpr int SMALL_K = 128;                  // largest k (both operands held as float32)
constexpr int SMALL_THREADS = 128;            // 2 x 2 warps of 32 x 32

// |v|'s bits when v is finite, else 0 (NaN/inf do not count towards the exponent).
__device__ __forceinline__ unsigned finite_bits(float v) {
  const unsigned magnitude = __float_as_uint(v) & 0x7FFFFFFFu;
  return magnitude < 0x7F800000u ? magnitude : 0u;
}

// Rows r < 64, k values [0, k_pad), of x (rows, k), or of x^T for x (k, rows), into held[r * stride]:
// zeros past the edges; NaN/inf read as zero and, with `lines`, flagged. Returns the largest |x| bits
// read (NaN/inf included).
template <bool TRANSPOSE>
__device__ __forceinline__ unsigned hold(const float* x, int rows, int k, int k_pad, int stride, float* held,
                                         unsigned* lines) {
  unsigned largest = 0;
  for (int idx = threadIdx.x; idx < SMALL_MN * k_pad; idx += SMALL_THREADS) {
    // A: consecutive threads read consecutive k of a row; B (k, n): consecutive n of a k-row.
    const int r = TRANSPOSE ? idx % SMALL_MN : idx / k_pad, q = TRANSPOSE ? idx / SMALL_MN : idx % k_pad;
    const long long at = TRANSPOSE ? static_cast<long long>(q) * rows + r : static_cast<long long>(r) * k + q;
    float v = r < rows && q < k ? x[at] : 0.0f;
    const unsigned magnitude = __float_as_uint(v) & 0x7FFFFFFFu;
    largest = max(largest, magnitude);
    if (magnitude >= 0x7F800000u) {
      v = 0.0f;
      if (lines) lines[r] = 1u;
    }
    held[r * stride + q] = v;
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
  constexpr int MT = 2, WARPS_N = 2, BM = SMALL_MN, BN = SMALL_MN;
  constexpr int STAGE_CHUNKS = TERMS * (BM + BN) * ROW_CHUNKS;
  typedef typename PartStorage<FMT>::type Part;
  constexpr int ROW_PARTS = ROW_CHUNKS * CHUNK / sizeof(Part), TERM_PARTS = (BM + BN) * ROW_PARTS;
  extern __shared__ uint4 smem[];       // parts (STAGE_CHUNKS), then A and B^T held as (64, stride) floats
  __shared__ int exponent[BM + BN];
  __shared__ unsigned block_largest[2];
  const int k_blocks = (k + K_VALUES - 1) / K_VALUES, k_pad = k_blocks * K_VALUES;
  const int stride = k_pad + 4;         // floats per held row: 16-byte aligned, banks shifted
  float* held_a = reinterpret_cast<float*>(smem + STAGE_CHUNKS);
  float* held_b = held_a + SMALL_MN * stride;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const long long z = blockIdx.x, za = a_batched ? z : 0, zb = b_batched ? z : 0;

  if (tid < 2) block_largest[tid] = 0u;
  __syncthreads();
  unsigned* lines_a = report ? report + 2 + za * m : nullptr;
  unsigned* lines_b = report ? report + 2 + (a_batched ? gridDim.x : 1) * m + zb * n : nullptr;
  const unsigned largest_a = __reduce_max_sync(0xFFFFFFFFu,
                                               hold<false>(a + za * m * k, m, k, k_pad, stride, held_a, lines_a));
  const unsigned largest_b = __reduce_max_sync(0xFFFFFFFFu,
                                               hold<true>(b + zb * k * n, n, k, k_pad, stride, held_b, lines_b));
  if (report && lane == 0) {   // one global atomic per block and operand, below
    atomicMax(block_largest, largest_a);
    atomicMax(block_largest + 1, largest_b);
  }
  __syncthreads();
  if (report && tid < 2 && block_largest[tid]) atomicMax(report + tid, block_largest[tid]);
  if (tid < BM + BN) {   // one row of A or of B^T per thread
    int e = 0;
    if constexpr (POW2) {
      const float* row = (tid < BM ? held_a : held_b) + (tid % SMALL_MN) * stride;
      unsigned peak = 0;
      for (int q = 0; q < k_pad; ++q) peak = max(peak, finite_bits(row[q]));
      e = pow2_exponent(peak, emax);
    }
    exponent[tid] = e;
  }
  __syncthreads();

  float total[MT][4][4] = {}, part[MT][4][4] = {};
  Part* parts = reinterpret_cast<Part*>(smem);
  for (int kb = 0; kb < k_blocks; ++kb) {
    for (int unit = tid; unit < (BM + BN) * K_VALUES / 4; unit += SMALL_THREADS) {   // four values each
      const int row = unit / (K_VALUES / 4), q = 4 * (unit % (K_VALUES / 4));
      const float* held = (row < BM ? held_a : held_b) + (row % SMALL_MN) * stride + kb * K_VALUES + q;
      const float4 v = *reinterpret_cast<const float4*>(held);
      const float x[4] = {v.x, v.y, v.z, v.w};
      split4<FMT, TERMS, SHIFT>(x, exponent[row], parts, row * ROW_PARTS + q, TERM_PARTS);
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
