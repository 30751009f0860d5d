// SPDX-License-Identifier: Apache-2.0
// Batched forward complex FFT of length N = 2**LOG2N (16 <= N <= 4096) in one trip through global
// memory: the CTA keeps FFT_ELEMENTS complex values in shared memory and runs every Stockham pass of
// splitprec/_fft_engine.py there (radix 16, then 8/4/2): the pass's sub-vectors times the real
// 2r x 2r DFT block as a split-precision product on tensor cores (mma.sync), then the twiddles.
// Lines are read and written with strides, and an optional table multiplies the outputs on store:
// one launch is one step of the engine's two-step (four-step) transforms of length up to 2**24.
// Target: the engine's arithmetic and accuracy.fft_bound(x, dtype, engine="gpu") (docs/kernels.md).
#include "common/split.cuh"

constexpr int FFT_ELEMENTS = 4096;   // complex values per CTA: FFT_ELEMENTS / N whole lines
constexpr int FFT_WARPS = 8;
constexpr int BLOCK_DIM = 32;        // DFT blocks are stored zero-padded to (BLOCK_DIM, BLOCK_DIM)

template <int FMT> struct Fragment {
  static constexpr int ELEMS = FMT == FMT_TF32 ? 1 : 2;   // k values per 32-bit operand register
  static constexpr int KSTEP = 8 * ELEMS;                  // k of one mma (m16n8k8 / m16n8k16)
  // B registers of one DFT-block part, pre-packed per lane (splitprec._fft_engine.b_fragments):
  // (BLOCK_DIM / 8 n-tiles, BLOCK_DIM / KSTEP k-steps, 32 lanes) of uint2.
  static constexpr int KSTEPS_MAX = BLOCK_DIM / KSTEP;
  static constexpr int PART_REGS = (BLOCK_DIM / 8) * KSTEPS_MAX * 32;
};

// Two adjacent k values of one operand register (tf32 uses `lo` alone).
template <int FMT>
__device__ __forceinline__ unsigned pack(float lo, float hi) {
  if constexpr (FMT == FMT_TF32) return __float_as_uint(lo);
  else return static_cast<unsigned>(store_part<FMT>(lo)) |
              (static_cast<unsigned>(store_part<FMT>(hi)) << 16);
}

// Shared-memory slot of complex value i: bits 2-3 XORed with bits 4-5 and 8-9, so that the eight
// rows of an mma fragment, which sit 16 or 256 values apart in some passes, hit different banks.
__device__ __forceinline__ int swizzle(int i) { return i ^ ((((i >> 4) ^ (i >> 8)) & 3) << 2); }

// The complex64 product a * b (float32 operations, as the engine's complex64 product).
__device__ __forceinline__ float2 complex_mul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// Local line and element of the i-th value a CTA moves between global and shared memory (i runs
// over FFT_ELEMENTS in thread order). Elements fastest when a line is contiguous in global memory;
// lines fastest when adjacent lines are adjacent values (a strided step): each warp then moves
// min(lines, 4) lines x 8 elements, whole 32-byte sectors, two lanes per shared-memory bank.
template <int LOG2N>
__device__ __forceinline__ void io_slot(int i, bool lines_fast, int& line, int& elem) {
  constexpr int LOG2L = 12 - LOG2N;                         // FFT_ELEMENTS = 2**12
  constexpr int LOG2Q = LOG2L < 2 ? LOG2L : 2;
  if (!lines_fast) {
    line = i >> LOG2N;
    elem = i & ((1 << LOG2N) - 1);
    return;
  }
  const int rest = i >> (LOG2Q + 3);
  line = ((rest & ((1 << (LOG2L - LOG2Q)) - 1)) << LOG2Q) | (i & ((1 << LOG2Q) - 1));
  elem = ((rest >> (LOG2L - LOG2Q)) << 3) | ((i >> LOG2Q) & 7);
}

// Where the lines of one launch lie: line g is (b, c) = (g / 2**log2_lines, g % 2**log2_lines) and
// its element j sits at b * batch_stride + c * line_stride + j * elem_stride.
struct LineLayout {
  int log2_lines;
  long long batch_stride;
  int line_stride, elem_stride;
  __device__ __forceinline__ bool lines_fast() const { return log2_lines > 0 && line_stride == 1; }
  __device__ __forceinline__ int within(long long g, int j) const {   // offset inside the batch
    return static_cast<int>(g & ((1 << log2_lines) - 1)) * line_stride + j * elem_stride;
  }
  __device__ __forceinline__ long long batch(long long g) const { return (g >> log2_lines) * batch_stride; }
};

// Parts of x as splitprec.split makes them (shift 0, no scaling): part i rounds the residual left
// by parts 0..i-1, and each residual is exact in float32.
template <int FMT, int TERMS>
__device__ __forceinline__ void split_value(float x, float (&part)[TERMS]) {
#pragma unroll
  for (int i = 0; i < TERMS; ++i) {
    part[i] = round_part<FMT>(x, false);
    x -= part[i];
  }
}

// One radix-R pass from `src` to `dst` (both (FFT_ELEMENTS,) complex in shared memory, swizzled).
// The line state is (n_p, q) with q = 2**log2q = N / n_p and m = n_p / R: sub-vector s = j2*q + c
// holds elements j1 at j1*(N/R) + s; output k1 goes to j2*(R*q) + k1*q + c, times
// twiddle[j2*R + k1] when m > 1.
template <int FMT, int TERMS, unsigned PAIRS, int N, int R>
__device__ void stockham_pass(const float2* src, float2* dst, int m, int log2q, const float2* twiddle,
                              const uint2* fragments, int warp, int lane) {
  using F = Fragment<FMT>;
  constexpr int KSTEPS = (2 * R + F::KSTEP - 1) / F::KSTEP;
  constexpr int NTILES = (2 * R + 7) / 8;
  constexpr int SUB = N / R;                                // sub-vectors per line
  const int g = lane >> 2, t = lane & 3;                    // mma groupID, thread in group
  for (int tile = warp; tile < FFT_ELEMENTS / R / 16; tile += FFT_WARPS) {
    unsigned a[TERMS][KSTEPS][4];                           // A fragments of every part
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = tile * 16 + g + 8 * (i & 1);
        const int base = (row / SUB) * N + row % SUB;
        float part[2][TERMS];
#pragma unroll
        for (int h = 0; h < F::ELEMS; ++h) {
          const int col = ks * F::KSTEP + F::ELEMS * t + 4 * F::ELEMS * (i >> 1) + h;
          const float2 v = col < 2 * R ? src[swizzle(base + (col >> 1) * SUB)] : make_float2(0.f, 0.f);
          split_value<FMT, TERMS>((col & 1) ? v.y : v.x, part[h]);
        }
#pragma unroll
        for (int p = 0; p < TERMS; ++p) a[p][ks][i] = pack<FMT>(part[0][p], part[F::ELEMS - 1][p]);
      }
#pragma unroll
    for (int nt = 0; nt < NTILES; ++nt) {
      // Small products (i + j > 0) share one accumulator, hi*hi has its own; each k-step starts
      // both at zero and its tensor-core sums are promoted with round-to-nearest float32 adds.
      float small[4] = {0.f, 0.f, 0.f, 0.f}, big[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        unsigned b[TERMS][2];
#pragma unroll
        for (int p = 0; p < TERMS; ++p) {                  // one coalesced 8-byte load per part
          const uint2 f = fragments[p * F::PART_REGS + (nt * F::KSTEPS_MAX + ks) * 32 + lane];
          b[p][0] = f.x;
          b[p][1] = f.y;
        }
        float s[4] = {0.f, 0.f, 0.f, 0.f}, hh[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int i = TERMS - 1; i >= 0; --i)               // smallest products first
#pragma unroll
          for (int j = TERMS - 1; j >= 0; --j)
            if (i + j > 0 && ((PAIRS >> (3 * i + j)) & 1u)) mma_step<FMT>(s, a[i][ks], b[j]);
        mma_step<FMT>(hh, a[0][ks], b[0]);
#pragma unroll
        for (int e = 0; e < 4; ++e) { small[e] += s[e]; big[e] += hh[e]; }
      }
      const int k1 = nt * 4 + t;                            // output (Re, Im) = columns 2k1, 2k1+1
      if (k1 >= R) continue;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = tile * 16 + g + 8 * half, s = row % SUB;
        const int j2 = s >> log2q, c = s & ((1 << log2q) - 1);
        float2 z = make_float2(small[2 * half] + big[2 * half], small[2 * half + 1] + big[2 * half + 1]);
        if (m > 1) z = complex_mul(z, twiddle[j2 * R + k1]);
        dst[swizzle((row / SUB) * N + ((j2 * R + k1) << log2q) + c)] = z;
      }
    }
  }
}

// x, y: the lines (LineLayout in and out); twiddle: the passes' (m, R) tables with m > 1, in pass
// order; fragments: (2, TERMS, PART_REGS) pre-packed B registers (uint2) of the radix-16 and
// last-radix DFT-block parts; table (used when use_table != 0): complex64 factors of the outputs, indexed by the output
// offset inside the batch. x and y do not overlap.
template <int FMT,         // part format: FMT_TF32 or FMT_BF16
          int TERMS,       // parts per value
          unsigned PAIRS,  // bit 3*i + j set: product of part i (data) and part j (DFT block) taken
          int LOG2N>       // transform length N = 2**LOG2N, 4 <= LOG2N <= 12
__global__ void __launch_bounds__(FFT_WARPS * 32, 3)
fft_stockham_sm90(const float2* __restrict__ x, float2* __restrict__ y,
                  const float2* __restrict__ twiddle, const uint2* __restrict__ fragments,
                  const float2* __restrict__ table, int use_table, long long lines, int log2_lines,
                  long long batch_stride, int in_line_stride, int in_elem_stride,
                  int out_line_stride, int out_elem_stride) {
  extern __shared__ float2 smem[];                          // (2, FFT_ELEMENTS): ping-pong
  constexpr int N = 1 << LOG2N, R0 = 1 << (LOG2N % 4);
  const LineLayout in{log2_lines, batch_stride, in_line_stride, in_elem_stride};
  const LineLayout out{log2_lines, batch_stride, out_line_stride, out_elem_stride};
  const long long first = static_cast<long long>(blockIdx.x) * (FFT_ELEMENTS / N);   // first line
  for (int i = threadIdx.x; i < FFT_ELEMENTS; i += blockDim.x) {
    int line, j;
    io_slot<LOG2N>(i, in.lines_fast(), line, j);
    const long long g = first + line;
    smem[swizzle(line * N + j)] = g < lines ? x[in.batch(g) + in.within(g, j)] : make_float2(0.f, 0.f);
  }
  __syncthreads();
  float2 *src = smem, *dst = smem + FFT_ELEMENTS;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int n_p = N, log2q = 0;
#pragma unroll 1
  for (int pass = 0; pass < LOG2N / 4; ++pass) {
    const int m = n_p / 16;
    stockham_pass<FMT, TERMS, PAIRS, N, 16>(src, dst, m, log2q, twiddle, fragments, warp, lane);
    if (m > 1) twiddle += n_p;
    n_p = m;
    log2q += 4;
    float2* swap = src; src = dst; dst = swap;
    __syncthreads();
  }
  if constexpr (R0 > 1) {
    stockham_pass<FMT, TERMS, PAIRS, N, R0>(src, dst, 1, log2q, twiddle,
                                            fragments + TERMS * Fragment<FMT>::PART_REGS, warp, lane);
    src = dst;
    __syncthreads();
  }
  for (int i = threadIdx.x; i < FFT_ELEMENTS; i += blockDim.x) {
    int line, k;
    io_slot<LOG2N>(i, out.lines_fast(), line, k);
    const long long g = first + line;
    if (g >= lines) continue;
    const int within = out.within(g, k);
    const float2 z = src[swizzle(line * N + k)];
    y[out.batch(g) + within] = use_table ? complex_mul(z, table[within]) : z;
  }
}
