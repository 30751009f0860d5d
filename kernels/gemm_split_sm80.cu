// SPDX-License-Identifier: Apache-2.0
// C = sum over (i, j) in PAIRS of A_i @ B_j * 2**-((i+j)*shift), the split GEMM of one scheme, with
// mma.sync tensor cores (sm_80 and newer) fed by a multi-stage cp.async pipeline. Target: the
// scheme's fp32-class bound of docs/bounds.md, i.e. tensor-core accumulation over k-blocks of at
// most 256 with every k-block's partial sum promoted by round-to-nearest fp32 adds
// (Ootomo & Yokota, arXiv 2203.03341; CUTLASS promotes every k-block the same way).
#include "common/pow2.cuh"
#include "common/split_mma.cuh"

template <int FMT,           // part format (PartFormat)
          int TERMS,         // parts per operand
          unsigned PAIRS,    // bit 3*i+j set: product A_i B_j is taken
          int SMALL_SHIFT,   // the products with i+j > 0 are scaled by 2**-SMALL_SHIFT (all share it)
          int MT,            // m16 tiles per warp: warp tile = 16*MT x 32
          int WARPS_M, int WARPS_N,  // warps per block along m and n; block tile = 16*MT*WARPS_M x 32*WARPS_N
          int STAGES>        // cp.async pipeline depth, in k-blocks
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32)
gemm_split_sm80(const char* a,          // parts of A: TERMS x (batch, m, k_chunks*16 bytes), K-major
                const char* b,          // parts of B transposed: TERMS x (batch, n, k_chunks*16 bytes)
                float* c,               // (batch, m, n) float32
                const int* exponent_a,  // pow2 scaling: (batch, m) and (batch, n) exponents, or null
                const int* exponent_b,
                int m, int n, int k_chunks,     // k_chunks: a multiple of BLOCK_CHUNKS
                long long a_term, long long a_batch,   // strides in bytes (a_batch 0: A broadcast)
                long long b_term, long long b_batch,
                int ea_batch, int eb_batch)      // exponent strides per batch (0: broadcast)
{
  constexpr int BM = WARPS_M * MT * 16, BN = WARPS_N * WARP_N, THREADS = WARPS_M * WARPS_N * 32;
  constexpr int STAGE_CHUNKS = TERMS * (BM + BN) * ROW_CHUNKS;   // (TERMS, BM + BN, ROW_CHUNKS)
  extern __shared__ uint4 smem[];                                // (STAGES, STAGE_CHUNKS)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const int z = blockIdx.z, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const long long row_bytes = static_cast<long long>(k_chunks) * CHUNK;
  const char* a_base = a + z * a_batch;
  const char* b_base = b + z * b_batch;

  auto load_stage = [&](int kb) {   // k-block kb into stage kb % STAGES; rows past m or n read zeros
    uint4* stage = smem + (kb % STAGES) * STAGE_CHUNKS;
    for (int idx = tid; idx < TERMS * (BM + BN) * BLOCK_CHUNKS; idx += THREADS) {
      const int t = idx / ((BM + BN) * BLOCK_CHUNKS), rest = idx % ((BM + BN) * BLOCK_CHUNKS);
      const int row = rest / BLOCK_CHUNKS, chunk = rest % BLOCK_CHUNKS;
      const bool is_a = row < BM;
      const int g = is_a ? m0 + row : n0 + row - BM;
      const bool valid = g < (is_a ? m : n);
      const char* base = is_a ? a_base + t * a_term : b_base + t * b_term;
      const char* src = valid ? base + g * row_bytes + (kb * BLOCK_CHUNKS + chunk) * CHUNK : base;
      copy_async<16>(stage + (t * (BM + BN) + row) * ROW_CHUNKS + chunk, src, valid);
    }
  };

  float total[MT][4][4] = {}, part[MT][4][4] = {};
  const int k_blocks = k_chunks / BLOCK_CHUNKS;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_blocks) load_stage(s);
    copy_async_commit();
  }
  for (int kb = 0; kb < k_blocks; ++kb) {
    copy_async_wait<STAGES - 2>();
    __syncthreads();   // stage kb is in; every warp is done with stage kb - 1, refilled next
    if (kb + STAGES - 1 < k_blocks) load_stage(kb + STAGES - 1);
    copy_async_commit();
    const uint4* stage = smem + (kb % STAGES) * STAGE_CHUNKS;
    // Numerics: the small products (i+j > 0) share one tensor-core accumulator over this k-block and
    // are promoted first; hi*hi gets its own and is promoted after them. Each promotion is one fp32
    // round-to-nearest add into `total`, so the tensor core's truncating accumulation spans one
    // k-block (64 bf16/fp16 or 32 tf32 values of k), never the whole K.
    if constexpr ((PAIRS & ~1u) != 0) {
      multiply_block<FMT, TERMS, PAIRS, true, MT, BM, BN>(stage, warp_m, warp_n, lane, part);
      promote(total, part, __int_as_float((127 - SMALL_SHIFT) << 23));
    }
    multiply_block<FMT, TERMS, PAIRS, false, MT, BM, BN>(stage, warp_m, warp_n, lane, part);
    promote(total, part, 1.0f);
  }
  copy_async_wait<0>();

  const int g = lane >> 2, q = lane & 3;   // accumulator element e sits at row g + 8*(e/2), col 2q + e%2
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = m0 + warp_m * MT * 16 + mt * 16 + g + 8 * (e / 2);
        const int col = n0 + warp_n * WARP_N + nt * 8 + 2 * q + (e % 2);
        if (row >= m || col >= n) continue;
        float v = total[mt][nt][e];
        if (exponent_a) v = scale_pow2(v, exponent_a[z * ea_batch + row] + exponent_b[z * eb_batch + col]);
        c[(static_cast<long long>(z) * m + row) * n + col] = v;
      }
}
