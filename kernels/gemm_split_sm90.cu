// SPDX-License-Identifier: Apache-2.0
// C = sum over (i, j) in PAIRS of A_i @ B_j * 2**-((i+j)*shift) with Hopper warpgroup tensor cores
// (wgmma.mma_async, sm_90a): the same numerics as gemm_split_sm80.cu -- every k-block's tensor-core
// partial sum promoted by round-to-nearest float32 adds, small products before hi*hi (Ootomo &
// Yokota, arXiv 2203.03341) -- with both operands read by the tensor cores straight from shared
// memory instead of through ldmatrix and registers.
#include "common/mma.cuh"
#include "common/pow2.cuh"
#include "common/wgmma.cuh"

constexpr int CHUNK = 16;          // bytes per chunk: 8 bf16/fp16 or 4 tf32 values
constexpr int BLOCK_CHUNKS = 8;    // chunks of k per pipeline stage = one k-block (4 k-steps of 32 bytes)
constexpr int BM = 128, BN = 128;  // block tile; warpgroup w owns rows 64w .. 64w + 63, all 128 columns
constexpr int THREADS = 256;       // two warpgroups
// Shared layout of one part's tile: 8-row x 16-byte core matrices (128 contiguous bytes), the next
// one along k 144 bytes on and the next 8 rows 8 * 144 bytes on. The 16-byte gap after each core
// matrix spreads the 8 chunks of one row over all bank groups, so a warp's copy of 4 whole 128-byte
// rows (whole L2 lines) writes shared memory without conflicts.
constexpr int CORE_K_CHUNKS = 9, CORE_ROWS_CHUNKS = BLOCK_CHUNKS * CORE_K_CHUNKS;
constexpr int CORE_K_BYTES = CORE_K_CHUNKS * 16, CORE_ROWS_BYTES = CORE_ROWS_CHUNKS * 16;
constexpr int TILE_CHUNKS = (BM + BN) / 8 * CORE_ROWS_CHUNKS;   // A rows 0..BM-1, then B rows

__host__ __device__ constexpr unsigned chain_pairs(unsigned pairs, bool small) {
  return small ? pairs & ~1u : pairs & 1u;
}

__device__ __forceinline__ int chunk_index(int row, int chunk) {
  return (row >> 3) * CORE_ROWS_CHUNKS + chunk * CORE_K_CHUNKS + (row & 7);
}

// part = sum over the chain's pairs of A_i B_j over one stage's k-block (the first wgmma ignores part).
template <int FMT, unsigned CHAIN>
__device__ __forceinline__ void multiply_chain(const uint4* stage, int warpgroup, float (&part)[64]) {
  warpgroup_fence();
  fence_registers(part);
  int accumulate = 0;
#pragma unroll
  for (int step = 0; step < BLOCK_CHUNKS / 2; ++step)
#pragma unroll
    for (int p = 8; p >= 0; --p) {      // bit p = pair (p / 3, p % 3); largest i + j first
      if (!((CHAIN >> p) & 1u)) continue;
      const uint4* a = stage + (p / 3) * TILE_CHUNKS + chunk_index(64 * warpgroup, 2 * step);
      const uint4* b = stage + (p % 3) * TILE_CHUNKS + chunk_index(BM, 2 * step);
      wgmma_step<FMT>(part, matrix_descriptor<CORE_K_BYTES, CORE_ROWS_BYTES>(a),
                      matrix_descriptor<CORE_K_BYTES, CORE_ROWS_BYTES>(b), accumulate);
      accumulate = 1;
    }
  warpgroup_commit();
  warpgroup_wait_all();
  fence_registers(part);
}

template <int FMT,           // part format (PartFormat)
          int TERMS,         // parts per operand
          unsigned PAIRS,    // bit 3*i+j set: product A_i B_j is taken
          int SMALL_SHIFT,   // the products with i+j > 0 are scaled by 2**-SMALL_SHIFT (all share it)
          int STAGES>        // cp.async pipeline depth, in k-blocks
__global__ void __launch_bounds__(THREADS, 1)
gemm_split_sm90(const char* a,          // parts of A: TERMS x (batch, m, k_chunks*16 bytes), K-major
                const char* b,          // parts of B transposed: TERMS x (batch, n, k_chunks*16 bytes)
                float* c,               // (batch, m, n) float32
                const int* exponent_a,  // pow2 scaling: (batch, m) and (batch, n) exponents, or null
                const int* exponent_b,
                int m, int n, int k_chunks,     // k_chunks: a multiple of BLOCK_CHUNKS
                long long a_term, long long a_batch,   // strides in bytes (a_batch 0: A broadcast)
                long long b_term, long long b_batch,
                int ea_batch, int eb_batch)      // exponent strides per batch (0: broadcast)
{
  constexpr int STAGE_CHUNKS = TERMS * TILE_CHUNKS;   // (TERMS, TILE_CHUNKS)
  extern __shared__ uint4 smem[];                     // (STAGES, STAGE_CHUNKS)
  const int tid = threadIdx.x, warpgroup = tid / 128;
  const int z = blockIdx.z, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const long long row_bytes = static_cast<long long>(k_chunks) * CHUNK;
  const char* a_base = a + z * a_batch;
  const char* b_base = b + z * b_batch;

  auto load_stage = [&](int kb) {   // 8 consecutive threads copy one 128-byte row of the k-block
    uint4* stage = smem + (kb % STAGES) * STAGE_CHUNKS;
    for (int idx = tid; idx < TERMS * (BM + BN) * BLOCK_CHUNKS; idx += THREADS) {
      const int t = idx / ((BM + BN) * BLOCK_CHUNKS), rest = idx % ((BM + BN) * BLOCK_CHUNKS);
      const int row = rest / BLOCK_CHUNKS, chunk = rest % BLOCK_CHUNKS;
      const bool is_a = row < BM;
      const int g = is_a ? m0 + row : n0 + row - BM;
      const bool valid = g < (is_a ? m : n);
      const char* base = is_a ? a_base + t * a_term : b_base + t * b_term;
      const char* src = valid ? base + g * row_bytes + (kb * BLOCK_CHUNKS + chunk) * CHUNK : base;
      copy_async_16(stage + t * TILE_CHUNKS + chunk_index(row, chunk), src, valid);
    }
  };

  float total[64] = {}, part[64];
  const int k_blocks = k_chunks / BLOCK_CHUNKS;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_blocks) load_stage(s);
    copy_async_commit();
  }
  for (int kb = 0; kb < k_blocks; ++kb) {
    copy_async_wait<STAGES - 2>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // cp.async data -> wgmma
    __syncthreads();
    if (kb + STAGES - 1 < k_blocks) load_stage(kb + STAGES - 1);
    copy_async_commit();
    const uint4* stage = smem + (kb % STAGES) * STAGE_CHUNKS;
    // Numerics as in gemm_split_sm80.cu: the small products share one accumulator over this k-block
    // and are added to `total` first, hi*hi after them, each with a round-to-nearest fp32 add.
    if constexpr (chain_pairs(PAIRS, true) != 0) {
      multiply_chain<FMT, chain_pairs(PAIRS, true)>(stage, warpgroup, part);
      const float scale = __int_as_float((127 - SMALL_SHIFT) << 23);
#pragma unroll
      for (int i = 0; i < 64; ++i) total[i] = fma_keep_subnormals(part[i], scale, total[i]);
    }
    multiply_chain<FMT, chain_pairs(PAIRS, false)>(stage, warpgroup, part);
#pragma unroll
    for (int i = 0; i < 64; ++i) total[i] = fma_keep_subnormals(part[i], 1.0f, total[i]);
  }
  copy_async_wait<0>();

  // Accumulator i of lane l in warp w of the warpgroup: row 16w + l/4 + 8*((i/2)%2), col 8*(i/4) + 2*(l%4) + i%2.
  const int lane = tid & 31, warp = (tid / 32) & 3;
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    const int row = m0 + 64 * warpgroup + 16 * warp + (lane >> 2) + 8 * ((i >> 1) & 1);
    const int col = n0 + 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
    if (row >= m || col >= n) continue;
    float v = total[i];
    if (exponent_a) v = scale_pow2(v, exponent_a[z * ea_batch + row] + exponent_b[z * eb_batch + col]);
    c[(static_cast<long long>(z) * m + row) * n + col] = v;
  }
}
