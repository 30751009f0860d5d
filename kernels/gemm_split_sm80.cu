// SPDX-License-Identifier: Apache-2.0
// C = sum over (i, j) in PAIRS of A_i @ B_j * 2**-((i+j)*shift), the split GEMM of one scheme, with
// mma.sync tensor cores (sm_80 and newer) fed by a multi-stage cp.async pipeline. Target: the
// scheme's fp32-class bound of docs/bounds.md, i.e. tensor-core accumulation over k-blocks of at
// most 256 with every k-block's partial sum promoted by round-to-nearest fp32 adds
// (Ootomo & Yokota, arXiv 2203.03341; CUTLASS promotes every k-block the same way).
#include "common/mma.cuh"
#include "common/pow2.cuh"

constexpr int CHUNK = 16;          // bytes per shared-memory chunk: 8 bf16/fp16 or 4 tf32 values
constexpr int BLOCK_CHUNKS = 8;    // chunks of k per pipeline stage = one k-block (4 mma k-steps)
constexpr int ROW_CHUNKS = 9;      // chunks per shared-memory row: 8 + 1 of padding, so the 8 rows
                                   // an ldmatrix reads fall in 8 different 16-byte bank groups
constexpr int WARP_N = 32;         // warp tile: MT m16 tiles x 4 n8 tiles

typedef unsigned Fragment[4];

// A fragments (registers a0..a3 of each m16 tile) of part t for one k-step (32 bytes of k): ldmatrix
// matrices (rows 0-7, chunk 0), (rows 8-15, chunk 0), (rows 0-7, chunk 1), (rows 8-15, chunk 1).
template <int MT, int BM, int BN>
__device__ __forceinline__ void load_a(const uint4* stage, int t, int step, int warp_m, int lane,
                                       Fragment (&a)[MT]) {
  const uint4* tile_a = stage + t * (BM + BN) * ROW_CHUNKS;   // (BM, ROW_CHUNKS)
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    const int row = warp_m * MT * 16 + mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
    load_matrix_x4(a[mt], tile_a + row * ROW_CHUNKS + 2 * step + (lane >> 4));
  }
}

// B fragments (b0, b1 of four n8 tiles) of part t for one k-step: ldmatrix matrices (n 0-7, chunk 0),
// (n 0-7, chunk 1), (n 8-15, chunk 0), (n 8-15, chunk 1), twice.
template <int BM, int BN>
__device__ __forceinline__ void load_b(const uint4* stage, int t, int step, int warp_n, int lane,
                                       Fragment (&b)[2]) {
  const uint4* tile_b = stage + t * (BM + BN) * ROW_CHUNKS + BM * ROW_CHUNKS;   // (BN, ROW_CHUNKS)
#pragma unroll
  for (int np = 0; np < 2; ++np) {
    const int row = warp_n * WARP_N + np * 16 + (lane & 7) + (lane >> 4) * 8;
    load_matrix_x4(b[np], tile_b + row * ROW_CHUNKS + 2 * step + ((lane >> 3) & 1));
  }
}

// Parts of A (a_side) or of B used by the selected pairs (bit 3*i+j of pairs), as a bit mask.
__host__ __device__ constexpr unsigned parts_used(unsigned pairs, bool a_side) {
  unsigned used = 0;
  for (int p = 0; p < 9; ++p)
    if ((pairs >> p) & 1u) used |= 1u << (a_side ? p / 3 : p % 3);
  return used;
}

// The pairs of PAIRS with SMALL == (i + j > 0).
__host__ __device__ constexpr unsigned select_pairs(unsigned pairs, bool small) {
  return small ? pairs & ~1u : pairs & 1u;
}

// part[mt][nt] += A_i B_j over one stage's k-block for every pair with SMALL == (i + j > 0). B's
// fragments of the k-step stay in registers; A's are loaded one part at a time.
template <int FMT, int TERMS, unsigned PAIRS, bool SMALL, int MT, int BM, int BN>
__device__ __forceinline__ void multiply_block(const uint4* stage, int warp_m, int warp_n, int lane,
                                               float (&part)[MT][4][4]) {
  constexpr unsigned CHAIN = select_pairs(PAIRS, SMALL);
  constexpr unsigned USE_A = parts_used(CHAIN, true), USE_B = parts_used(CHAIN, false);
#pragma unroll
  for (int step = 0; step < BLOCK_CHUNKS / 2; ++step) {
    Fragment b[TERMS][2];
#pragma unroll
    for (int j = 0; j < TERMS; ++j)
      if ((USE_B >> j) & 1u) load_b<BM, BN>(stage, j, step, warp_n, lane, b[j]);
#pragma unroll
    for (int i = TERMS - 1; i >= 0; --i) {
      if (!((USE_A >> i) & 1u)) continue;
      Fragment a[MT];
      load_a<MT, BM, BN>(stage, i, step, warp_m, lane, a);
#pragma unroll
      for (int j = TERMS - 1; j >= 0; --j) {
        if (!((CHAIN >> (3 * i + j)) & 1u)) continue;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) mma_step<FMT>(part[mt][nt], a[mt], &b[j][nt / 2][2 * (nt % 2)]);
      }
    }
  }
}

// total += part * scale with one rounding (scale is a power of two), then part = 0.
template <int MT>
__device__ __forceinline__ void promote(float (&total)[MT][4][4], float (&part)[MT][4][4], float scale) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        total[mt][nt][e] = fma_keep_subnormals(part[mt][nt][e], scale, total[mt][nt][e]);
        part[mt][nt][e] = 0.0f;
      }
}

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
