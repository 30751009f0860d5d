// SPDX-License-Identifier: Apache-2.0
// One k-block of a split GEMM on mma.sync tensor cores (sm_80 and newer), from parts in shared memory
// laid out (TERMS, BM + BN, ROW_CHUNKS) chunks of 16 bytes: A's rows, then B's (B transposed), each
// row one 128-byte k-block plus a chunk of padding. Shared by gemm_split_sm80.cu and gemm_small_sm80.cu.
#pragma once
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
