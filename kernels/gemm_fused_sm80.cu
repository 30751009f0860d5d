// SPDX-License-Identifier: Apache-2.0
// C = the split GEMM of float32 A and B in one kernel, for products whose time is the data's
// movement (batches of small matrices, k <= MAX_K): each warp computes one 16*MT x 8*NT tile of
// one batch entry. It copies its rows of A and columns of B into its own shared-memory panels
// (16-byte cp.async copies where the rows allow, all in flight at once), sweeps them for their pow2
// exponents and NaN/inf, then splits each value as it reads it into mma.sync fragments (parts bit
// for bit those of splitprec.split) and multiplies them, with the numerics of gemm_split_sm80
// (small products and hi*hi in their own tensor-core accumulators, promoted by round-to-nearest
// float32 adds every 128 bytes of parts, small ones first; docs/bounds.md, section 5), so that its
// results equal that kernel's bit for bit. The epilogue undoes the scaling and recomputes, as
// gemm_nonfinite does, the entries of rows and columns holding NaN/inf and those that may reach the
// top of float32's range.
#include "common/mma.cuh"
#include "common/pow2.cuh"
#include "common/recompute.cuh"
#include "common/split.cuh"

constexpr int FUSED_WARPS = 4;     // warps per block, each on its own tile
constexpr int BLOCK_STEPS = 4;     // mma k-steps per promotion: 128 bytes of parts (32 tf32, 64 bf16/fp16)
constexpr int MAX_K = 64;          // k of at most this: the panels hold all of it
constexpr int MIN_BLOCKS = 3;      // blocks per SM the registers must allow: 12 warps to hide latency

// Panel geometry in floats, per warp: A (16 MT rows of kp + PAD_A), then B (kp rows of 8 NT + PAD_B),
// kp = k rounded up to whole mma steps. The pads make each fragment read hit 32 distinct banks
// (tf32: 8 rows x 4 adjacent k of A, 4 rows x 8 adjacent n of B; bf16/fp16 read pairs of k) and keep
// every row 16-byte aligned for cp.async. splitprec.engines.cuda.gemm_fused.warp_shared_bytes
// sizes the launch from the same numbers.
template <int FMT> struct Pads { static constexpr int A = FMT == FMT_TF32 ? 4 : 8, B = FMT == FMT_TF32 ? 8 : 4; };

// Registers of an operand fragment per part: tf32 values whole, bf16/fp16 two to a register, the
// lower k in the lower half.
template <int FMT>
__device__ __forceinline__ unsigned pack_parts(float low, float high) {
  if constexpr (FMT == FMT_TF32) return __float_as_uint(low);
  else return store_part<FMT>(low) | (static_cast<unsigned>(store_part<FMT>(high)) << 16);
}

// The maximum and the "any" over the four lanes of a quad (one row of A or column of B per quad).
__device__ __forceinline__ void quad_reduce(unsigned& peak, unsigned& special) {
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {
    peak = max(peak, __shfl_xor_sync(0xFFFFFFFFu, peak, offset));
    special |= __shfl_xor_sync(0xFFFFFFFFu, special, offset);
  }
}

template <int FMT,           // part format (PartFormat)
          int TERMS,         // parts per operand
          unsigned PAIRS,    // bit 3*i+j set: product A_i B_j is taken
          int SHIFT,         // part i is held scaled by 2**(i*SHIFT)
          int SMALL_SHIFT,   // the products with i+j > 0 are scaled by 2**-SMALL_SHIFT
          int MT, int NT>    // warp tile: MT m16 tiles x NT n8 tiles
__global__ void __launch_bounds__(FUSED_WARPS * 32, MIN_BLOCKS)
gemm_fused_sm80(const float* a,     // (a_batches, m, k) float32, contiguous; a_batches = batch or 1; k <= MAX_K
                const float* b,     // (b_batches, k, n)
                float* c,           // (batch, m, n)
                int m, int n, int k, long long batch, int a_batched, int b_batched,
                int emax,               // the pow2 split's emax (splitprec.engines.cuda.split.peak_emax)
                int overflow_exponent)  // SplitDType.overflow_exponent(k)
{
  constexpr int H = FMT == FMT_TF32 ? 1 : 2;      // values of k per register
  constexpr int KS = 8 * H;                       // values of k per mma step
  constexpr int ROWS = 16 * MT, COLS = 8 * NT;
  constexpr unsigned SMALL_PAIRS = PAIRS & ~1u;
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const int tiles_m = (m + ROWS - 1) / ROWS, tiles_n = (n + COLS - 1) / COLS;
  const long long item = blockIdx.x * static_cast<long long>(FUSED_WARPS) + (threadIdx.x >> 5);
  if (item >= batch * tiles_m * tiles_n) return;   // the whole warp: its shuffles stay full
  const long long z = item / (tiles_m * tiles_n);
  const int tile = static_cast<int>(item % (tiles_m * tiles_n));
  const int m0 = tile / tiles_n * ROWS, n0 = tile % tiles_n * COLS;
  const float* a_z = a + (a_batched ? z : 0) * m * static_cast<long long>(k);
  const float* b_z = b + (b_batched ? z : 0) * k * static_cast<long long>(n);
  const int steps = (k + KS - 1) / KS, kp = steps * KS;
  const int a_stride = kp + Pads<FMT>::A, b_stride = COLS + Pads<FMT>::B;
  extern __shared__ float panels[];
  float* panel_a = panels + (threadIdx.x >> 5) * (ROWS * a_stride + kp * b_stride);   // (ROWS, a_stride)
  float* panel_b = panel_a + ROWS * a_stride;                                         // (kp, b_stride)

  // The panels, zero past the edges of A and B: 16-byte copies where rows and bases allow.
  const bool vector_a = k % 4 == 0 && (reinterpret_cast<unsigned long long>(a_z) & 15) == 0;
  const bool vector_b = n % 4 == 0 && (reinterpret_cast<unsigned long long>(b_z) & 15) == 0;
  for (int i = lane; i < ROWS * (kp / 4); i += 32) {
    const int r = i / (kp / 4), kk = 4 * (i % (kp / 4));
    const float* src = a_z + static_cast<long long>(m0 + r) * k + kk;
    float* dst = panel_a + r * a_stride + kk;
    if (vector_a) copy_async<16>(dst, m0 + r < m && kk < k ? src : a_z, m0 + r < m && kk < k);
    else
      for (int j = 0; j < 4; ++j) dst[j] = m0 + r < m && kk + j < k ? src[j] : 0.0f;
  }
  for (int i = lane; i < kp * (COLS / 4); i += 32) {
    const int kk = i / (COLS / 4), col = n0 + 4 * (i % (COLS / 4));
    const float* src = b_z + static_cast<long long>(kk) * n + col;
    float* dst = panel_b + kk * b_stride + col - n0;
    if (vector_b) copy_async<16>(dst, kk < k && col < n ? src : b_z, kk < k && col < n);
    else
      for (int j = 0; j < 4; ++j) dst[j] = kk < k && col + j < n ? src[j] : 0.0f;
  }
  copy_async_commit();
  copy_async_wait<0>();
  __syncwarp();
  // Fragment geometry (PTX ISA, mma.m16n8k8 tf32 and m16n8k16 bf16/fp16): A register r, half h
  // holds row g + 8 (r & 1), k H q + h + 4H (r >> 1) of the step; B register r, half h holds
  // column g, k H q + h + 4H r.
  auto a_pair = [&](int mt, int r, int k0) {   // the H values of A register r (bf16/fp16: one 8-byte read)
    const float* at = panel_a + (mt * 16 + g + 8 * (r & 1)) * a_stride + k0 + H * q + 4 * H * (r >> 1);
    if constexpr (H == 2) return *reinterpret_cast<const float2*>(at);
    else return make_float2(*at, 0.0f);
  };
  auto b_value = [&](int nt, int r, int h, int k0) {
    return panel_b[(k0 + H * q + h + 4 * H * r) * b_stride + nt * 8 + g];
  };

  // Sweep 1: pow2 exponents (splitprec.split._pow2_exponent) and NaN/inf of this lane's rows of A
  // (m0 + mt*16 + g + 8 half) and columns of B (n0 + nt*8 + g).
  unsigned peak_a[MT][2] = {}, peak_b[NT] = {};
  unsigned special_a[MT][2] = {}, special_b[NT] = {};
  for (int s = 0; s < steps; ++s) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const float2 x = a_pair(mt, r, s * KS);
        track_magnitude(x.x, peak_a[mt][r & 1], special_a[mt][r & 1]);
        if constexpr (H == 2) track_magnitude(x.y, peak_a[mt][r & 1], special_a[mt][r & 1]);
      }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int h = 0; h < H; ++h) track_magnitude(b_value(nt, r, h, s * KS), peak_b[nt], special_b[nt]);
  }
  int exponent_a[MT][2], exponent_b[NT];
  float top_a[MT][2], top_b[NT];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      quad_reduce(peak_a[mt][half], special_a[mt][half]);
      exponent_a[mt][half] = pow2_exponent(peak_a[mt][half], emax);
      top_a[mt][half] = part_top<FMT>(exponent_a[mt][half]);
    }
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    quad_reduce(peak_b[nt], special_b[nt]);
    exponent_b[nt] = pow2_exponent(peak_b[nt], emax);
    top_b[nt] = part_top<FMT>(exponent_b[nt]);
  }

  // Sweep 2: split as loaded (NaN/inf as zeros: their entries are recomputed) and multiply.
  auto split_pair = [&](float x0, float x1, int exponent, float top, unsigned (&out)[TERMS]) {
    float p0[TERMS], p1[TERMS] = {};
    split_value<FMT, TERMS, SHIFT>(isfinite(x0) ? x0 : 0.0f, exponent, top, p0);
    if constexpr (H == 2) split_value<FMT, TERMS, SHIFT>(isfinite(x1) ? x1 : 0.0f, exponent, top, p1);
#pragma unroll
    for (int i = 0; i < TERMS; ++i) out[i] = pack_parts<FMT>(p0[i], p1[i]);
  };
  float total[MT][NT][4] = {}, small[MT][NT][4] = {}, large[MT][NT][4] = {};
  for (int s = 0; s < steps; ++s) {
    unsigned fa[MT][4][TERMS], fb[NT][2][TERMS];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const float2 x = a_pair(mt, r, s * KS);
        split_pair(x.x, x.y, exponent_a[mt][r & 1], top_a[mt][r & 1], fa[mt][r]);
      }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        split_pair(b_value(nt, r, 0, s * KS), H == 2 ? b_value(nt, r, 1, s * KS) : 0.0f,
                   exponent_b[nt], top_b[nt], fb[nt][r]);
    // gemm_split_sm80's order within a step: i from the last part down, j likewise, then tiles.
#pragma unroll
    for (int i = TERMS - 1; i >= 0; --i)
#pragma unroll
      for (int j = TERMS - 1; j >= 0; --j) {
        if (!((PAIRS >> (3 * i + j)) & 1u)) continue;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const unsigned fa_i[4] = {fa[mt][0][i], fa[mt][1][i], fa[mt][2][i], fa[mt][3][i]};
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            const unsigned fb_j[2] = {fb[nt][0][j], fb[nt][1][j]};
            mma_step<FMT>(i + j > 0 ? small[mt][nt] : large[mt][nt], fa_i, fb_j);
          }
        }
      }
    if (s % BLOCK_STEPS == BLOCK_STEPS - 1 || s == steps - 1) {   // promote: small products first
      const float small_scale = __int_as_float((127 - SMALL_SHIFT) << 23);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            if constexpr (SMALL_PAIRS != 0)
              total[mt][nt][e] = fma_keep_subnormals(small[mt][nt][e], small_scale, total[mt][nt][e]);
            total[mt][nt][e] = fma_keep_subnormals(large[mt][nt][e], 1.0f, total[mt][nt][e]);
            small[mt][nt][e] = large[mt][nt][e] = 0.0f;
          }
    }
  }

  // Epilogue: accumulator element e sits at row g + 8 (e / 2), column 2q + e % 2 of its m16 x n8
  // tile; the column's exponent and NaN/inf flag come from the lanes whose g is that column.
  float* c_z = c + z * m * static_cast<long long>(n);
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    int col_exponent[2];
    unsigned col_special[2];
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      col_exponent[p] = __shfl_sync(0xFFFFFFFFu, exponent_b[nt], 4 * (2 * q + p));
      col_special[p] = __shfl_sync(0xFFFFFFFFu, special_b[nt], 4 * (2 * q + p));
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = m0 + mt * 16 + g + 8 * (e / 2), col = n0 + nt * 8 + 2 * q + e % 2;
        if (row >= m || col >= n) continue;
        const int exponent = exponent_a[mt][e / 2] + col_exponent[e % 2];
        float v = scale_pow2(total[mt][nt][e], exponent);
        const float* a_row = a_z + static_cast<long long>(row) * k;
        if (special_a[mt][e / 2] | col_special[e % 2]) v = sign_pattern(a_row, b_z + col, k, n);
        else if (exponent >= overflow_exponent || !isfinite(v)) v = dot_rounded(a_row, b_z + col, k, n);
        c_z[static_cast<long long>(row) * n + col] = v;
      }
  }
}
