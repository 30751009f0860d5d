// SPDX-License-Identifier: Apache-2.0
// C = sum over (i, j) in PAIRS of A_i @ B_j * 2**-((i+j)*shift) on Hopper warpgroup tensor cores
// (wgmma.mma_async, sm_90a), the parts brought into shared memory by the Tensor Memory Accelerator.
//
// Numerics (docs/bounds.md, section 5): hi*hi accumulates in the tensor core over k-chunks of
// CHUNK_BLOCKS stages (the cuBLAS engine's chunk, growing like sqrt(k)), each chunk's partial sum
// promoted into float32 registers by one round-to-nearest add; the small products (i + j > 0)
// share a second accumulator over all of k, added once at the end (Ootomo & Yokota, arXiv
// 2203.03341, keep the large product's sum outside the tensor core the same way).
//
// Structure: a 128 x 128 block tile, two consumer warpgroups (rows 0-63 and 64-127, all columns),
// each holding three 64-value float32 accumulators per thread (chunk, small products, total), and
// one producer warpgroup that gives its registers to them; one of its threads issues every copy.
// A ring of STAGES shared-memory stages holds one 128-byte k-block of every part (TERMS x 16 KiB for
// A and for B), filled by TMA with 128-byte swizzle; a "full" mbarrier counts the bytes in, an
// "empty" one the consumer warpgroups done with it. The wgmma of stage kb are in flight while
// stage kb - 1 is released.
//
// Split tiles: the tiles from `split_from` on (the last, partial wave, or every tile of a grid
// smaller than one wave) are each computed by `pieces` blocks over consecutive whole chunks of k,
// which store their two float32 accumulators (promoted hi*hi, small products) to `partial`;
// gemm_split_sm90_pieces then adds the pieces in order, each add rounded to nearest (the bound's
// promotion model: k-chunk partial sums added in float32), and finishes the tile.
#include "common/mma.cuh"
#include "common/pow2.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

constexpr int BM = 128, BN = 128;      // block tile
constexpr int K_BYTES = 128;           // k per stage: one swizzled 128-byte row per tile row
constexpr int K_STEPS = K_BYTES / 32;  // wgmma k-steps (32 bytes of k each) per stage
constexpr int TILE_BYTES = BM * K_BYTES;   // one part's stage tile of A or of B (BM == BN)
constexpr int CONSUMERS = 256, THREADS = CONSUMERS + 128;  // two consumer warpgroups, one producer
// Block rows per raster group: the blocks that run together share A and B tiles in L2. On the H200
// at n = 8192, 8 beats 4 (by 1.5x for bf16), 12 and 16 (by 3-12%).
constexpr int GROUP_M = 8;

// Origin (row, column) of block tile `tile` of an m x n output in the raster: groups of GROUP_M block
// rows, walked column by column.
__device__ __forceinline__ int2 tile_origin(int tile, int m, int n) {
  const int tiles_m = (m + BM - 1) / BM, tiles_n = (n + BN - 1) / BN;
  const int first_row = tile / (GROUP_M * tiles_n) * GROUP_M, in_group = tile % (GROUP_M * tiles_n);
  const int rows_in_group = min(tiles_m - first_row, GROUP_M);
  return make_int2((first_row + in_group % rows_in_group) * BM, (in_group / rows_in_group) * BN);
}

// One output value: the promoted hi*hi sum plus the small products' (scaled by 2**-SMALL_SHIFT),
// one rounding, then the pow2 scaling undone (another rounding, subnormals kept).
template <unsigned PAIRS, int SMALL_SHIFT>
__device__ __forceinline__ float finish(float total, float small, const int* exponent_a, const int* exponent_b,
                                        long long row, long long col) {
  float v = PAIRS == 1u ? total : fma_keep_subnormals(small, __int_as_float((127 - SMALL_SHIFT) << 23), total);
  return exponent_a ? scale_pow2(v, exponent_a[row] + exponent_b[col]) : v;
}

template <int FMT,           // part format (PartFormat)
          int TERMS,         // parts per operand
          unsigned PAIRS,    // bit 3*i+j set: product A_i B_j is taken
          int SMALL_SHIFT,   // the products with i+j > 0 are scaled by 2**-SMALL_SHIFT (all share it)
          int STAGES>        // pipeline depth, in k-blocks
__global__ void __launch_bounds__(THREADS, 1)
gemm_split_sm90(const __grid_constant__ TensorMap map_a,   // A's parts, as rows (below)
                const __grid_constant__ TensorMap map_b,   // B's parts (B transposed), as rows
                float* c,               // (batch, m, n) float32
                const int* exponent_a,  // pow2 scaling: (batch, m) and (batch, n) exponents, or null
                const int* exponent_b,
                int m, int n, int k_blocks, int chunk_blocks,
                int a_term_rows, int a_batch_rows,   // parts as rows of the maps: row of (term t, batch
                int b_term_rows, int b_batch_rows,   // z, r) = t * term_rows + z * batch_rows + r
                int ea_batch, int eb_batch,          // exponent strides per batch (0: broadcast)
                int z0,                              // batch index of blockIdx.y == 0
                int split_from, int pieces,          // split tiles (batch of one): blocks split_from + t * pieces
                float* partial)                      //   + p, piece p of tile split_from + t; (2, 128, 128) each
{
  constexpr int K_VALUES = K_BYTES / (FMT == FMT_TF32 ? 4 : 2);
  constexpr int STAGE_BYTES = 2 * TERMS * TILE_BYTES;     // A's parts, then B's parts
  extern __shared__ unsigned char smem[];                 // STAGES stages, 1024-byte aligned inside
  __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];
  const unsigned base = (shared_address(smem) + 1023u) & ~1023u;
  const unsigned full0 = shared_address(full), empty0 = shared_address(empty);
  const int tid = threadIdx.x, z = z0 + blockIdx.y;

  int tile = blockIdx.x, kb_begin = 0, kb_end = k_blocks;
  float* piece_sums = nullptr;
  if (tile >= split_from) {                // one piece: whole chunks [chunks * p / pieces, chunks * (p+1) / pieces)
    const int t = tile - split_from, piece = t % pieces, chunks = (k_blocks + chunk_blocks - 1) / chunk_blocks;
    tile = split_from + t / pieces;
    kb_begin = chunks * piece / pieces * chunk_blocks;
    kb_end = min(k_blocks, chunks * (piece + 1) / pieces * chunk_blocks);
    piece_sums = partial + static_cast<long long>(t) * 2 * BM * BN;
  }
  const int blocks = kb_end - kb_begin;
  const int2 origin = tile_origin(tile, m, n);
  const int m0 = origin.x, n0 = origin.y;

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      barrier_init(full0 + 8 * s, 1);
      barrier_init(empty0 + 8 * s, 2);     // one arrival per consumer warpgroup
    }
    barrier_init_fence();
  }
  __syncthreads();

  if (tid >= CONSUMERS) {                  // producer warpgroup: one thread issues every copy
    set_register_limit<false, 40>();
    if (tid == CONSUMERS) {
      for (int i = 0; i < blocks; ++i) {   // fill stage i % STAGES once both consumers are done with it
        const int s = i % STAGES, kb = kb_begin + i;
        const unsigned stage = base + s * STAGE_BYTES, bar = full0 + 8 * s;
        if (i >= STAGES) barrier_wait(empty0 + 8 * s, (i / STAGES - 1) & 1);
        barrier_arrive_expect_bytes(bar, STAGE_BYTES);
#pragma unroll
        for (int t = 0; t < TERMS; ++t) {
          tensor_load_2d(stage + t * TILE_BYTES, map_a, kb * K_VALUES, t * a_term_rows + z * a_batch_rows + m0, bar);
          tensor_load_2d(stage + (TERMS + t) * TILE_BYTES, map_b, kb * K_VALUES,
                         t * b_term_rows + z * b_batch_rows + n0, bar);
        }
      }
    }
    return;
  }

  set_register_limit<true, 232>();
  const int warpgroup = tid / 128;
  float total[64] = {}, chunk[64], small[64] = {};
  const unsigned a_rows = warpgroup * 64 * K_BYTES;    // this warpgroup's rows of an A tile
  // With two stages (three-part schemes), a consumer that holds stage i - 1 while stage i is late
  // leaves the producer nothing to fill: then it waits for i - 1's products and releases it first,
  // and it releases a stage as soon as a promotion has waited for its products. That made bf16x6
  // and bf16x9 7-10% faster; with three stages the drain costs more than it gives (fp16x3, tf32x3:
  // 1-2% slower; benchmarks/results/gemm-early-release-2026-12-01-972e1d2.log).
  constexpr bool EARLY_RELEASE = STAGES == 2;
  bool held = false;                      // stage i - 1 is not released yet
  for (int i = 0; i < blocks; ++i) {
    const int s = i % STAGES, kb = kb_begin + i;
    if (EARLY_RELEASE && held && !barrier_done(full0 + 8 * s, (i / STAGES) & 1)) {
      warpgroup_wait<0>();
      if (tid % 128 == 0) barrier_arrive(empty0 + 8 * ((i - 1) % STAGES));
      held = false;
    }
    barrier_wait(full0 + 8 * s, (i / STAGES) & 1);
    const unsigned stage = base + s * STAGE_BYTES;
    const bool chunk_start = kb % chunk_blocks == 0;
    warpgroup_fence();
#pragma unroll
    for (int step = 0; step < K_STEPS; ++step)
#pragma unroll
      for (int p = 8; p >= 0; --p) {      // bit p = pair (p / 3, p % 3)
        if (!((PAIRS >> p) & 1u)) continue;
        const unsigned long long da = swizzled_descriptor(stage + (p / 3) * TILE_BYTES + a_rows + 32 * step);
        const unsigned long long db = swizzled_descriptor(stage + (TERMS + p % 3) * TILE_BYTES + 32 * step);
        if (p == 0) wgmma_step<FMT>(chunk, da, db, !(chunk_start && step == 0));
        else wgmma_step<FMT>(small, da, db, 1);
      }
    warpgroup_commit();
    if (held) {
      warpgroup_wait<1>();                // stage i - 1's products are done: release it
      if (tid % 128 == 0) barrier_arrive(empty0 + 8 * ((i - 1) % STAGES));
    }
    held = true;
    if ((kb + 1) % chunk_blocks == 0 || i + 1 == blocks) {   // promote the chunk
      warpgroup_wait<0>();
      if (EARLY_RELEASE) {
        if (tid % 128 == 0) barrier_arrive(empty0 + 8 * s);
        held = false;
      }
      fence_registers(chunk);
#pragma unroll
      for (int i = 0; i < 64; ++i) total[i] = fma_keep_subnormals(chunk[i], 1.0f, total[i]);
    }
  }
  warpgroup_wait<0>();                    // (done at the last promotion; ptxas cannot see it)
  fence_registers(small);

  // Accumulator i of lane l in warp w of the warpgroup: row 16w + l/4 + 8*((i/2)%2), col 8*(i/4) + 2*(l%4) + i%2.
  const int lane = tid & 31, warp = (tid / 32) & 3;
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    const int r = 64 * warpgroup + 16 * warp + (lane >> 2) + 8 * ((i >> 1) & 1);
    const int q = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
    if (piece_sums) {
      piece_sums[r * BN + q] = total[i];
      piece_sums[BM * BN + r * BN + q] = small[i];
      continue;
    }
    const int row = m0 + r, col = n0 + q;
    if (row >= m || col >= n) continue;
    c[(static_cast<long long>(z) * m + row) * n + col] =
        finish<PAIRS, SMALL_SHIFT>(total[i], small[i], exponent_a, exponent_b, z * ea_batch + row, z * eb_batch + col);
  }
}

// The split tiles of gemm_split_sm90 (a batch of one): block t adds the `pieces` partial sums of tile
// split_from + t in order, each add rounded to nearest with subnormals kept, and stores the tile.
template <unsigned PAIRS, int SMALL_SHIFT>
__global__ void __launch_bounds__(256)
gemm_split_sm90_pieces(const float* partial, float* c, const int* exponent_a, const int* exponent_b, int m, int n,
                       int split_from, int pieces) {
  const int2 origin = tile_origin(split_from + blockIdx.x, m, n);
  const float* sums = partial + static_cast<long long>(blockIdx.x) * pieces * 2 * BM * BN;
  for (int e = threadIdx.x; e < BM * BN; e += blockDim.x) {
    const int row = origin.x + e / BN, col = origin.y + e % BN;
    if (row >= m || col >= n) continue;
    float total = 0.0f, small = 0.0f;
    for (int p = 0; p < pieces; ++p) {
      total = fma_keep_subnormals(sums[2 * p * BM * BN + e], 1.0f, total);
      small = fma_keep_subnormals(sums[(2 * p + 1) * BM * BN + e], 1.0f, small);
    }
    c[static_cast<long long>(row) * n + col] =
        finish<PAIRS, SMALL_SHIFT>(total, small, exponent_a, exponent_b, row, col);
  }
}
