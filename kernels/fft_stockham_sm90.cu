// SPDX-License-Identifier: Apache-2.0
// Batched forward complex FFT of length N = 2**a 3**b 5**c 7**d <= 4096 in one trip through global
// memory: the CTA keeps FFT_ELEMENTS / N whole lines in shared memory and runs every Stockham pass
// of splitprec/_fft_engine.py there (radices 16, 9, 8, 7, 5, 4, 3, 2, largest first): the pass's
// sub-vectors times the real 2r x 2r DFT block as a split-precision product on tensor cores (wgmma,
// the sub-vectors' parts from registers, the block's parts from shared memory), then the twiddles.
// Lines are read and written with strides, and an optional table multiplies the outputs on store:
// one launch of a power of two is one step of the engine's two-step (four-step) transforms of length
// up to 2**24. Overlap-save blocks (Blocks below; powers of two) are cut from the input rows as they
// load and their kept outputs placed in the output rows as they store, so a convolution by blocks
// moves no data of its own.
// Target: the engine's arithmetic and accuracy.fft_bound(x, dtype, engine="gpu") (docs/kernels.md).
#include "common/pow2.cuh"
#include "common/split.cuh"
#include "common/wgmma.cuh"

constexpr int FFT_ELEMENTS = 4096;   // complex values per line block: FFT_ELEMENTS / N whole lines
constexpr int FFT_WARPGROUPS = 2;
constexpr int THREADS = FFT_WARPGROUPS * 128;
constexpr int PER_THREAD = FFT_ELEMENTS / THREADS;   // values each thread moves in and out
constexpr int IO_BATCH = 8;                            // of them loaded together (latency, registers)
constexpr int CTAS_PER_SM = 2;                         // 128 registers per thread, 83 KB shared each
constexpr int TILE_ROWS = 64;        // sub-vectors of one wgmma (m64)

// The radices of a length-n transform's passes as splitprec._fft_engine.factorize orders them: the
// factors 9 (while 9 divides), 7, 5, 3 and the power of two as 16s and one 8, 4 or 2 (a 16 and a 4
// or 2 as 8, 8 or 8, 4), largest first.
struct Radices {
  int count = 0, r[16] = {};
  __host__ __device__ constexpr explicit Radices(int n) {
    for (int p = 9; p >= 3; p -= 2)
      for (; n % p == 0; n /= p) r[count++] = p;
    int twos = 0;
    for (; n % 2 == 0; n /= 2) ++twos;
    int sixteens = twos / 4;
    const int rest = twos % 4;
    if (sixteens > 0 && (rest == 1 || rest == 2)) {
      --sixteens;
      r[count++] = 8;
      r[count++] = 2 << rest;
    } else if (rest > 0) {
      r[count++] = 1 << rest;
    }
    for (; sixteens > 0; --sixteens) r[count++] = 16;
    for (int i = 1; i < count; ++i)
      for (int j = i; j > 0 && r[j - 1] < r[j]; --j) {
        const int t = r[j];
        r[j] = r[j - 1];
        r[j - 1] = t;
      }
  }
};
__host__ __device__ constexpr int pass_count(int n) { return Radices(n).count; }
__host__ __device__ constexpr int log2_floor(int n) { return n > 1 ? 1 + log2_floor(n / 2) : 0; }
__host__ __device__ constexpr int radix(int n, int pass) { return Radices(n).r[pass]; }
// q of the pass's line state: the product of the radices before it.
__host__ __device__ constexpr int pass_stride(int n, int pass) { return pass == 0 ? 1 : radix(n, pass - 1) * pass_stride(n, pass - 1); }
// wgmma n of a radix-r pass ((Re, Im) of r outputs, at least 8) and the bytes of one of its DFT-block
// parts: that many rows of 128 bytes of k (K-major, 128-byte swizzle).
__host__ __device__ constexpr int block_cols(int r) { return 2 * r <= 8 ? 8 : 2 * r <= 16 ? 16 : 32; }
__host__ __device__ constexpr int part_bytes(int r) { return 128 * block_cols(r); }
// Where the pass's DFT-block parts start among the blocks of the distinct radices, in pass order, each
// `terms` parts (splitprec._fft_engine.b_tiles); pass_count(n) gives the bytes of all of them.
__host__ __device__ constexpr int block_offset(int n, int terms, int pass) {
  const Radices rs(n);
  int offset = 0;
  for (int j = 0; j < pass && (pass == rs.count || rs.r[j] != rs.r[pass]); ++j)
    if (j == 0 || rs.r[j] != rs.r[j - 1]) offset += terms * part_bytes(rs.r[j]);
  return offset;
}
// Where the pass's twiddle table starts: the tables (m, r) of the passes before it, n / q values each.
__host__ __device__ constexpr int twiddle_offset(int n, int pass) { return pass == 0 ? 0 : n / pass_stride(n, pass - 1) + twiddle_offset(n, pass - 1); }

template <int FMT> struct Fragment {
  static constexpr int ELEMS = FMT == FMT_TF32 ? 1 : 2;   // k values per 32-bit operand register
  static constexpr int KSTEP = 8 * ELEMS;                  // k of one wgmma (k8 tf32 / k16 bf16, fp16)
  // fp16 parts (the schemes fp16x3 and fp16) come with power-of-two scaling: each sub-vector (a row
  // of the product) scaled so that its largest magnitude lies in [2**14, 2**15), as splitprec.split
  // scales a row with axis=-1, and the DFT block's columns by 2**14 (the host's split: every column's
  // largest entry is cos 0 = 1); the second part carries 2**11 (the scheme's shift).
  static constexpr bool SCALED = FMT == FMT_FP16;
  static constexpr int EMAX = 15;                          // fp16: splitprec.formats emax
  static constexpr int SHIFT = SCALED ? 11 : 0;            // of the products with i + j > 0
  static constexpr int BLOCK_EXPONENT = 1 - EMAX;          // every DFT-block column's (SCALED)
};

// Shared-memory slot of complex value i: bits 2-3 XORed with bits 4-5 and 8-9, so that the eight
// rows of a fragment, which sit 16 or 256 values apart in some passes, hit different banks. It is
// linear over GF(2), swizzle(x ^ o) = swizzle(x) ^ swizzle(o): where x and o share no bit, so that
// x + o = x ^ o, the slot of x + o is one XOR with a constant away from x's.
__host__ __device__ constexpr int swizzle(int i) { return i ^ ((((i >> 4) ^ (i >> 8)) & 3) << 2); }

// Slots of value indices base + offset. For a power of two N a pass's base and offsets share no bit,
// so the slot is swizzle(base) ^ swizzle(offset): `base` keeps swizzle(base) and each offset costs one
// XOR with a constant. Other lengths keep the index and swizzle each sum.
template <int N> struct Slots {
  static constexpr bool LINEAR = (N & (N - 1)) == 0;
  __device__ __forceinline__ static int base(int index) { return LINEAR ? swizzle(index) : index; }
  __device__ __forceinline__ static int at(int base, int offset) {
    return LINEAR ? base ^ swizzle(offset) : swizzle(base + offset);
  }
};

// 2**n (|n| <= 252) as two normal float32 factors: x * f[0] * f[1] is x * 2**n rounded once, except
// that a subnormal first product rounds twice. For fp16's row scale that changes no part (a value
// whose first product is subnormal has zero parts), and outputs that small flush to zero in the
// twiddle product that follows.
__device__ __forceinline__ void pow2_factors(int n, float (&f)[2]) {
  const int half = n / 2;
  f[0] = __int_as_float((half + 127) << 23);
  f[1] = __int_as_float((n - half + 127) << 23);
}

// The complex64 product a * b (float32 operations, as the engine's complex64 product).
__device__ __forceinline__ float2 complex_mul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// Local line and element of the i-th value a CTA moves between global and shared memory (i runs
// over FFT_ELEMENTS in thread order; values from FFT_ELEMENTS / N * N on are unused). Elements fastest
// when a line is contiguous in global memory; lines fastest when adjacent lines are adjacent values (a
// strided step): for a power of two each warp then moves min(lines, 4) lines x 8 elements, whole
// 32-byte sectors, two lanes per shared-memory bank; other lengths move all the block's lines.
template <int N>
__device__ __forceinline__ void io_slot(int i, bool lines_fast, int& line, int& elem) {
  constexpr int LINES = FFT_ELEMENTS / N;
  if (!Slots<N>::LINEAR && lines_fast) {
    line = i % LINES;
    elem = i / LINES;
    return;
  }
  if (!Slots<N>::LINEAR || !lines_fast) {
    line = i / N;
    elem = i % N;
    return;
  }
  constexpr int LOG2N = log2_floor(N), LOG2L = 12 - LOG2N;   // FFT_ELEMENTS = 2**12
  constexpr int LOG2Q = LOG2L < 2 ? LOG2L : 2;
  const int rest = i >> (LOG2Q + 3);
  line = ((rest & ((1 << (LOG2L - LOG2Q)) - 1)) << LOG2Q) | (i & ((1 << LOG2Q) - 1));
  elem = ((rest >> (LOG2L - LOG2Q)) << 3) | ((i >> LOG2Q) & 7);
}

// A line block's first line as (batch, line in the batch).
struct LineOrigin {
  long long batch;
  int line;
};

// Where the lines of one launch lie: line g is (b, c) = (g / batch_lines, g % batch_lines) and its
// element j sits at b * batch_stride + c * line_stride + j * elem_stride. A line block divides its
// first line once (a shift for a power of two); the lines after it, c = o.line + l < 2 * 4096, by
// the host's magic = ceil(2**31 / batch_lines): (2c * magic) >> 32 is c / batch_lines while
// c * batch_lines < 2**31 (the host computes it: no division per thread).
struct LineLayout {
  int batch_lines;
  long long batch_stride;
  int line_stride, elem_stride;
  unsigned magic;
  __device__ __forceinline__ bool lines_fast() const { return batch_lines > 1 && line_stride == 1; }
  __device__ __forceinline__ LineOrigin origin(long long first) const {
    const long long b = batch_lines & (batch_lines - 1) ? first / batch_lines : first >> (31 - __clz(batch_lines));
    return {b, static_cast<int>(first - b * batch_lines)};
  }
  // Batch b of line l of the block at o (l < FFT_ELEMENTS / N), and the offset of its element j there.
  __device__ __forceinline__ int within(LineOrigin o, int l, int j, long long& b) const {
    int c = o.line + l;
    const int q = static_cast<int>(__umulhi(static_cast<unsigned>(c) << 1, magic));
    b = o.batch + q;
    c -= q * batch_lines;
    return c * line_stride + j * elem_stride;
  }
  // Lines of length n at data + g * n, 16-byte aligned: whole line blocks move as float4.
  __device__ __forceinline__ bool contiguous(const float2* data, int n) const {
    return elem_stride == 1 && (reinterpret_cast<unsigned long long>(data) & 15) == 0 &&
           (batch_lines == 1 ? batch_stride == n
                             : line_stride == n && batch_stride == static_cast<long long>(n) * batch_lines);
  }
};

__device__ __forceinline__ unsigned not_finite(float v) { return (__float_as_uint(v) & 0x7F800000u) == 0x7F800000u; }

// One launch's parameters, passed by value (splitprec._fft_engine._LAUNCH_ARGS packs them). Lines:
// line g is (b, c) = (g / batch_lines, g % batch_lines) and its element j sits at b * batch_stride +
// c * line_stride + j * elem_stride (strides of the input and of the output), unless io says
// overlap-save blocks (Blocks).
struct LaunchArgs {
  long long lines, batch_stride, out_batch_stride, in_row_stride, out_row_stride;
  unsigned* row_flags;
  const unsigned* all_flag;
  int batch_lines, in_line_stride, in_elem_stride, out_line_stride, out_elem_stride, use_table;
  int io, block_lines, step, pad, in_length, start, keep;
  float scale;
  unsigned batch_magic;   // ceil(2**31 / batch_lines) (LineLayout)
};

// Overlap-save blocks of length B = 2**log2_length over rows of an input (real float32 or complex64,
// rows in_stride apart): block line l of row r (the layout's line batch b = r * lines + l) holds at
// element e the input value at l * step + e - pad (real: blocks 2l and 2l + 1 as Re and Im), zero
// outside [0, in_length), times scale (a power of two: exact). A transform that is the circular
// convolution read backwards has, at element e, position c = -e mod B of it, which for c >= pad is
// the full linear convolution at l * step + c - pad (real: both blocks); the store keeps positions in
// [start, start + keep), at their offset from start in output rows out_stride apart. row_flags (or
// null): a load sets row r's flag when it reads NaN or ±inf; a store writes NaN to the rows whose
// flag or *all_flag is set, as one transform of the whole row would give. ROW_TABLE: the table that
// multiplies the outputs on store holds B factors per row (one filter per row), not one set for all.
constexpr int LOAD_BLOCKS = 1, STORE_BLOCKS = 2, REAL_BLOCKS = 4, ROW_TABLE = 8;
struct Blocks {
  int io, lines, step, pad, in_length, log2_length, start, keep;
  long long in_stride, out_stride;
  unsigned* row_flags;
  const unsigned* all_flag;
  float scale;
  __device__ __forceinline__ bool real() const { return io & REAL_BLOCKS; }
  // Where the table of block line b's row starts (ROW_TABLE), else 0.
  __device__ __forceinline__ long long table_row(long long b) const {
    return io & ROW_TABLE ? static_cast<long long>(static_cast<int>(b) / lines) << log2_length : 0;
  }
  // The row of block line b, and the input position (after the pad) where its (first) block starts.
  __device__ __forceinline__ int origin(long long b, int& row) const {
    row = static_cast<int>(b) / lines;
    return (static_cast<int>(b) - row * lines) * step * (real() ? 2 : 1);
  }
  __device__ __forceinline__ float2 load(const float2* x, long long b, int e) const {
    int row;
    const int pos = origin(b, row) + e - pad;
    float2 v;
    if (!real()) {
      v = pos >= 0 && pos < in_length ? x[row * in_stride + pos] : make_float2(0.f, 0.f);
    } else {
      const float* xr = reinterpret_cast<const float*>(x) + row * in_stride;
      v = make_float2(pos >= 0 && pos < in_length ? xr[pos] : 0.f,
                      pos + step >= 0 && pos + step < in_length ? xr[pos + step] : 0.f);
    }
    if (row_flags && (not_finite(v.x) | not_finite(v.y))) atomicOr(row_flags + row, 1u);
    return make_float2(v.x * scale, v.y * scale);
  }
  __device__ __forceinline__ void store(float2* y, long long b, int e, float2 v) const {
    const int c = (-e) & ((1 << log2_length) - 1);
    if (c < pad) return;
    int row;
    const int pos = origin(b, row) + c - pad - start;
    if (row_flags && (row_flags[row] | *all_flag)) {
      const float nan = __int_as_float(0x7FFFFFFF);
      v = make_float2(nan, nan);
    }
    if (!real()) {
      if (pos >= 0 && pos < keep) y[row * out_stride + pos] = v;
      return;
    }
    float* yr = reinterpret_cast<float*>(y) + row * out_stride;
    if (pos >= 0 && pos < keep) yr[pos] = v.x;
    if (pos + step >= 0 && pos + step < keep) yr[pos + step] = v.y;
  }
};

// The parts of x0 (and x1, bf16 and fp16) as splitprec.split makes them, packed as operand
// registers: part i rounds the residual left by parts 0..i-1 to nearest even, and each residual is
// exact in float32. bf16 and fp16 pack x0 low, x1 high (one cvt rounds both). fp16 (at most two
// parts): x0, x1 already scaled (Fragment::SCALED), the second part is the residual times 2**11, and
// in a row that may saturate (`saturates`) a value above FP16_SATURATED splits toward zero, as
// splitprec.split does with values whose parts could round past float32 once unscaled.
constexpr float FP16_SATURATED = 32752.0f;   // fp16 below float32's largest * 2**-113, toward zero
template <int FMT, int TERMS>
__device__ __forceinline__ void split_registers(float x0, float x1, unsigned (&reg)[TERMS], bool saturates = false) {
  if constexpr (FMT == FMT_FP16) {
    static_assert(TERMS <= 2, "split_registers: fp16 schemes have one or two parts");
    const bool rz0 = saturates && fabsf(x0) > FP16_SATURATED, rz1 = saturates && fabsf(x1) > FP16_SATURATED;
    float hi0, hi1;
    if (rz0 || rz1) {                                      // rare: rows near float32's largest
      hi0 = round_part<FMT>(x0, rz0);
      hi1 = round_part<FMT>(x1, rz1);
    }
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(reg[0]) : "f"(rz1 ? hi1 : x1), "f"(rz0 ? hi0 : x0));
    if constexpr (TERMS == 2) {
      asm("{\n.reg .f16 l, h;\nmov.b32 {l, h}, %2;\ncvt.f32.f16 %0, l;\ncvt.f32.f16 %1, h;\n}"
          : "=f"(hi0), "=f"(hi1) : "r"(reg[0]));
      constexpr float SHIFTED = 1 << Fragment<FMT>::SHIFT;
      const float lo0 = (x0 - hi0) * SHIFTED, lo1 = (x1 - hi1) * SHIFTED;   // exact (normal or 0)
      float part0 = lo0, part1 = lo1;
      if (rz0 || rz1) {
        part0 = round_part<FMT>(lo0, rz0);
        part1 = round_part<FMT>(lo1, rz1);
      }
      asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(reg[1]) : "f"(part1), "f"(part0));
    }
  } else {
#pragma unroll
    for (int i = 0; i < TERMS; ++i) {
      if constexpr (FMT == FMT_TF32) {
        const float part = round_part<FMT>(x0, false);
        reg[i] = __float_as_uint(part);
        x0 -= part;
      } else {
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(reg[i]) : "f"(x1), "f"(x0));
        x0 -= __uint_as_float(reg[i] << 16);
        x1 -= __uint_as_float(reg[i] & 0xFFFF0000u);
      }
    }
  }
}

// K-step ks of every product of the pass into `small` (i + j > 0, smallest first; untouched when
// PAIRS has no such product) and `big` (hi * hi), both started at zero unless `chained`: wgmma of
// the sub-vectors' parts (registers) by the DFT block's parts at shared address `block` (part j at
// block + j * 128 * COLS).
template <int FMT, int TERMS, unsigned PAIRS, int COLS, int KSTEPS>
__device__ __forceinline__ void kstep_products(float (&small)[COLS / 2], float (&big)[COLS / 2],
                                               const unsigned (&a)[TERMS][KSTEPS][4], unsigned block, int ks,
                                               int chained) {
  int accumulate = chained;
#pragma unroll
  for (int i = TERMS - 1; i >= 0; --i)
#pragma unroll
    for (int j = TERMS - 1; j >= 0; --j)
      if (i + j > 0 && ((PAIRS >> (3 * i + j)) & 1u)) {
        wgmma_rs<FMT, COLS>(small, a[i][ks], swizzled_descriptor(block + j * 128 * COLS + ks * 32), accumulate);
        accumulate = 1;
      }
  wgmma_rs<FMT, COLS>(big, a[0][ks], swizzled_descriptor(block + ks * 32), chained);
}

// One radix-R pass from `src` to `dst` (both (FFT_ELEMENTS,) complex in shared memory, swizzled),
// each warpgroup taking 64 sub-vectors (a tile) at a time and, where registers allow (OVERLAP),
// splitting its next tile's sub-vectors while the tensor cores multiply the current one; CHECK (the first pass, which reads every value of
// the block's lines) ORs 1 into `seen` when one of them is NaN or ±inf. The line state is (n_p, q)
// with q = Q = N / n_p and m = n_p / R: sub-vector s = j2*q + c holds elements j1 at j1*(N/R) + s;
// output k1 goes to j2*(R*q) + k1*q + c, times twiddle[j2*R + k1] when m > 1. hi * hi and the small
// products each run tensor-core chains of CHAIN k-steps (k = 2R in one chain for bf16, 16 values
// of k for tf32, whose k8 steps truncate twice as often), added with round-to-nearest.
template <int FMT, int TERMS, unsigned PAIRS, int N, int R, int Q, bool CHECK>
struct StockhamPass {
  using F = Fragment<FMT>;
  using S = Slots<N>;
  static constexpr int KSTEPS = (2 * R + F::KSTEP - 1) / F::KSTEP;
  static constexpr int CHAIN = 2;                           // k-steps per chain: at most two chains
  static_assert(KSTEPS <= 2 * CHAIN, "StockhamPass: k = 2R in at most two chains");
  static constexpr int COLS = block_cols(R);                // wgmma n: (Re, Im) of each output
  static constexpr int SUB = N / R;                         // sub-vectors per line
  static constexpr int ROWS = FFT_ELEMENTS / N * SUB;       // sub-vectors of the CTA's lines
  static constexpr int TILES = (ROWS + TILE_ROWS - 1) / TILE_ROWS;   // at least 4: 2 per warpgroup
  static constexpr bool TWIDDLES = N / Q > R;               // m > 1
  static constexpr bool SMALL = (PAIRS & ~1u) != 0;         // products with i + j > 0 (not one-part)
  static constexpr float SMALL_SCALE = 1.0f / (1 << F::SHIFT);
  // Register i of k-step ks holds element c0 + STEP * j (j = 2 * ks + i / 2) of the sub-vector in row
  // row0 + 8 * (i % 2) (tf32: its real part for even t, imaginary for odd); its value index is that
  // of element c0 plus STEP * j * SUB (for a power of two N, sharing no bit with it: Slots). Likewise
  // output k1 = t + 4 * nt.
  static constexpr int STEP = 2 * F::ELEMS;
  using Parts = unsigned[TERMS][KSTEPS][4];                 // A fragments of every part
  using Exponents = int[2];                                 // SCALED: rows row0 and row0 + 8's scale
  using Twiddles = float2[COLS / 8][2];
  using Sums = float[COLS / 2];

  const float2* src;
  float2* dst;
  const float2* twiddle;
  unsigned block;
  int warp, g, t, c0;

  __device__ __forceinline__ int row0(int tile) const { return tile * TILE_ROWS + warp * 16 + g; }
  // Row 8 * h of the thread's pair in `tile`, clamped to the last sub-vector (rows past it load a valid
  // one and store nothing).
  __device__ __forceinline__ int row(int tile, int h) const {
    const int r = row0(tile) + 8 * h;
    return ROWS % TILE_ROWS && r >= ROWS ? ROWS - 1 : r;
  }

  // Register i of k-step ks's value (zero past the sub-vector), from the slots `in` of element c0.
  __device__ __forceinline__ float2 element(const int (&in)[2], int ks, int i) const {
    const int j = 2 * ks + (i >> 1);
    return c0 + STEP * j < R ? src[S::at(in[i & 1], STEP * j * SUB)] : make_float2(0.f, 0.f);
  }

  // The tile's sub-vectors, split into parts (fp16: each row scaled first, its exponent kept).
  // CHECK: `probe` becomes NaN if one of them is NaN or ±inf (v * 0 is NaN for just those values: one
  // FMA a value, where a compare costs two integer ops).
  __device__ __forceinline__ void load(int tile, Parts& a, Exponents& exponent, float& probe) const {
    int in[2];                                              // slots (S::base) of element c0
#pragma unroll
    for (int h = 0; h < 2; ++h) in[h] = S::base((row(tile, h) / SUB) * N + row(tile, h) % SUB + c0 * SUB);
    float2 v[KSTEPS][4];
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        v[ks][i] = element(in, ks, i);
        if constexpr (CHECK) probe = fmaf(v[ks][i].x, 0.f, fmaf(v[ks][i].y, 0.f, probe));
        if constexpr (!F::SCALED) split_into(a, ks, i, v[ks][i], false);
      }
    if constexpr (F::SCALED) {                              // a row's values: its quad's registers
      unsigned peak[2] = {0u, 0u};
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          peak[i & 1] = max(peak[i & 1], max(__float_as_uint(v[ks][i].x) & 0x7FFFFFFFu,
                                             __float_as_uint(v[ks][i].y) & 0x7FFFFFFFu));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        peak[h] = max(peak[h], __shfl_xor_sync(0xFFFFFFFFu, peak[h], 1));
        peak[h] = max(peak[h], __shfl_xor_sync(0xFFFFFFFFu, peak[h], 2));
        exponent[h] = pow2_exponent(peak[h], F::EMAX);   // NaN/inf rows: any, the line is set NaN after
      }
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float f[2];
          pow2_factors(-exponent[i & 1], f);
          split_into(a, ks, i, make_float2(mul_keep_subnormals(mul_keep_subnormals(v[ks][i].x, f[0]), f[1]),
                                           mul_keep_subnormals(mul_keep_subnormals(v[ks][i].y, f[0]), f[1])),
                     exponent[i & 1] == 128 - F::EMAX);
        }
    }
  }

  // Register i of k-step ks of every part: the split of value v (tf32: its real part for even t,
  // imaginary for odd).
  __device__ __forceinline__ void split_into(Parts& a, int ks, int i, float2 v, bool saturates) const {
    unsigned parts[TERMS];
    if constexpr (FMT == FMT_TF32) split_registers<FMT, TERMS>((t & 1) ? v.y : v.x, 0.f, parts);
    else split_registers<FMT, TERMS>(v.x, v.y, parts, saturates);
#pragma unroll
    for (int p = 0; p < TERMS; ++p) a[p][ks][i] = parts[p];
  }

  // Multiplies `a` by the DFT block and stores the tile's outputs, times their twiddles; meanwhile
  // `next` (when has_next) receives the parts of tile + FFT_WARPGROUPS.
  __device__ __forceinline__ void run(int tile, const Parts& a, const Exponents& exponent, bool has_next, Parts& next,
                                      Exponents& next_exponent, float& probe) const {
    int out[2];                                             // slots (S::base) of output t
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int sv = row(tile, h) % SUB;
      out[h] = S::base((row(tile, h) / SUB) * N + ((sv / Q) * R + t) * Q + sv % Q);
    }
    Sums small, big, small2, big2;                          // the chains of k-steps [0, CHAIN) and after
    warpgroup_fence();
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      if (ks < CHAIN) kstep_products<FMT, TERMS, PAIRS, COLS, KSTEPS>(small, big, a, block, ks, ks > 0);
      else kstep_products<FMT, TERMS, PAIRS, COLS, KSTEPS>(small2, big2, a, block, ks, ks > CHAIN);
    }
    warpgroup_commit();
    if (has_next) load(tile + FFT_WARPGROUPS, next, next_exponent, probe);
    Twiddles w;                                             // loaded while the products run
#pragma unroll
    for (int nt = 0; nt < COLS / 8; ++nt)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        if (TWIDDLES && nt * 4 + t < R) w[nt][half] = twiddle[((row0(tile) + 8 * half) % SUB / Q) * R + nt * 4 + t];
    warpgroup_wait<0>();
    fence_registers(small); fence_registers(big);
    keep_registers(a);                                      // read by the products until the wait
    if constexpr (KSTEPS > CHAIN) {
      fence_registers(small2); fence_registers(big2);
#pragma unroll
      for (int e = 0; e < COLS / 2; ++e) {
        if constexpr (SMALL) small[e] += small2[e];
        big[e] += big2[e];
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (ROWS % TILE_ROWS && row0(tile) + 8 * h >= ROWS) continue;   // past the last line's sub-vectors
#pragma unroll
      for (int nt = 0; nt < COLS / 8; ++nt) {
        if (nt * 4 + t >= R) continue;                      // output k1 (Re, Im) = columns 2k1, 2k1+1
        const int e = nt * 4 + 2 * h;
        float2 z = make_float2(big[e], big[e + 1]);
        if constexpr (SMALL && F::SHIFT) z = make_float2(fmaf(small[e], SMALL_SCALE, z.x), fmaf(small[e + 1], SMALL_SCALE, z.y));
        else if constexpr (SMALL) z = make_float2(small[e] + z.x, small[e + 1] + z.y);
        if constexpr (F::SCALED) {
          float f[2];
          pow2_factors(exponent[h] + F::BLOCK_EXPONENT, f);
          z = make_float2(mul_keep_subnormals(mul_keep_subnormals(z.x, f[0]), f[1]),
                          mul_keep_subnormals(mul_keep_subnormals(z.y, f[0]), f[1]));
        }
        if constexpr (TWIDDLES) z = complex_mul(z, w[nt][h]);
        dst[S::at(out[h], 4 * nt * Q)] = z;
      }
    }
  }

  // Every tile of this warpgroup: two at a time (parts in a0, a1 by turns) for a power of two whose
  // parts take at most 24 registers a tile in two k-steps and no row scaling, else one at a time
  // (ptxas spills with more registers, fp16's row scaling or the per-index swizzle of other lengths;
  // 1000 = 8·5·5·5 measured 5% slower two at a time, one-k-step passes ~1%).
  static constexpr bool OVERLAP = TERMS * KSTEPS * 4 <= 24 && S::LINEAR && KSTEPS >= 2 && !F::SCALED;
  __device__ __forceinline__ void operator()(unsigned& seen) const {
    const int group = threadIdx.x >> 7;
    Parts a0, a1;
    Exponents e0, e1;
    float probe = 0.f;
    if constexpr (!OVERLAP) {
#pragma unroll 1
      for (int tile = group; tile < TILES; tile += FFT_WARPGROUPS) {
        load(tile, a0, e0, probe);
        run(tile, a0, e0, false, a1, e1, probe);
      }
    } else {
      load(group, a0, e0, probe);
#pragma unroll 1
      for (int tile = group; tile < TILES; tile += 2 * FFT_WARPGROUPS) {
        run(tile, a0, e0, tile + FFT_WARPGROUPS < TILES, a1, e1, probe);
        if (tile + FFT_WARPGROUPS >= TILES) break;
        run(tile + FFT_WARPGROUPS, a1, e1, tile + 2 * FFT_WARPGROUPS < TILES, a0, e0, probe);
      }
    }
    if constexpr (CHECK) seen |= probe != probe;
  }
};

template <int FMT, int TERMS, unsigned PAIRS, int N, int R, int Q, bool CHECK>
__device__ __forceinline__ void stockham_pass(const float2* src, float2* dst, const float2* twiddle,
                                              unsigned block, unsigned& seen) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const StockhamPass<FMT, TERMS, PAIRS, N, R, Q, CHECK> pass{
      src, dst, twiddle, block, static_cast<int>(threadIdx.x >> 5) & 3, lane >> 2, lane & 3,
      FMT == FMT_TF32 ? (lane & 3) >> 1 : lane & 3};
  pass(seen);
}

// Every pass from PASS on, ping-ponging between `src` and `dst`; returns the buffer that holds the
// result. `twiddle`: every pass's table (twiddle_offset); `blocks`: the DFT-block parts (block_offset).
// `seen`: in, this thread's NaN/inf flag of its loads; out, the CTA's, with the first pass's reads.
template <int FMT, int TERMS, unsigned PAIRS, int N, int PASS>
__device__ __forceinline__ float2* stockham_passes(float2* src, float2* dst, const float2* twiddle, unsigned blocks,
                                                   unsigned& seen) {
  if constexpr (PASS == pass_count(N)) {
    return src;
  } else {
    stockham_pass<FMT, TERMS, PAIRS, N, radix(N, PASS), pass_stride(N, PASS), PASS == 0>(
        src, dst, twiddle + twiddle_offset(N, PASS), blocks + block_offset(N, TERMS, PASS), seen);
    if constexpr (PASS == 0) seen = __syncthreads_or(seen);
    else __syncthreads();
    return stockham_passes<FMT, TERMS, PAIRS, N, PASS + 1>(dst, src, twiddle, blocks, seen);
  }
}

// Moves one line block between global memory (lines in layout `lay`, or overlap-save blocks where
// `blk` says so) and shared memory, IO_BATCH values in flight at a time: LOAD reads overlap-save
// blocks from x (zeros past the last line; lines in a layout load by load_lines_async) and returns 1
// if a value was NaN or ±inf; otherwise writes y, times table[offset in the batch] when use_table.
// Slots past the block's whole lines (N not a power of two) stay unused.
template <int N, bool LOAD>
__device__ __forceinline__ unsigned move_lines(const LineLayout& lay, const Blocks& blk, const float2* x, float2* y,
                                               float2* smem, long long first, long long lines, const float2* table,
                                               int use_table) {
  constexpr int USED = FFT_ELEMENTS / N * N;                // values of the block's whole lines
  const LineOrigin origin = lay.origin(first);
  unsigned seen = 0;
#pragma unroll 1
  for (int r0 = 0; r0 < PER_THREAD; r0 += IO_BATCH) {
    float2 v[IO_BATCH];
    int line[IO_BATCH], elem[IO_BATCH];
#pragma unroll
    for (int r = 0; r < IO_BATCH; ++r) {
      const int i = threadIdx.x + (r0 + r) * THREADS;
      io_slot<N>(i, lay.lines_fast(), line[r], elem[r]);
      if constexpr (LOAD) {
        long long b;
        const int within = lay.within(origin, line[r], elem[r], b);
        v[r] = (USED < FFT_ELEMENTS && i >= USED) || first + line[r] >= lines ? make_float2(0.f, 0.f)
                                                                            : blk.load(x, b, within);
      } else {
        v[r] = smem[swizzle(line[r] * N + elem[r])];
      }
    }
#pragma unroll
    for (int r = 0; r < IO_BATCH; ++r) {
      const int i = threadIdx.x + (r0 + r) * THREADS;
      if (USED < FFT_ELEMENTS && i >= USED) continue;
      if constexpr (LOAD) {
        seen |= not_finite(v[r].x) | not_finite(v[r].y);
        smem[swizzle(line[r] * N + elem[r])] = v[r];
      } else if (first + line[r] < lines) {
        long long b;
        const int within = lay.within(origin, line[r], elem[r], b);
        const float2 z = use_table ? complex_mul(v[r], table[blk.table_row(b) + within]) : v[r];
        if (blk.io & STORE_BLOCKS) blk.store(y, b, within, z);
        else y[b * lay.batch_stride + within] = z;
      }
    }
  }
  return seen;
}

// Value pairs of a line block that is N values per line back to back, 16-byte aligned (x + first*N
// or y + first*N; N even): the number of pairs of its lines (zeros past the last line).
template <int N>
__device__ __forceinline__ int block_pairs(long long first, long long lines) {
  return static_cast<int>((lines - first < FFT_ELEMENTS / N ? lines - first : FFT_ELEMENTS / N) * N / 2);
}

// Starts the copies of one line block (layout `lay`; zeros past the last line) into shared memory,
// one commit group: they run while the block before it is stored, and copy_async_wait<0> and a
// barrier make them visible. `contiguous` (LineLayout::contiguous): two values per 16-byte copy.
template <int N>
__device__ __forceinline__ void load_lines_async(const LineLayout& lay, const float2* x, float2* smem,
                                                 long long first, long long lines, bool contiguous) {
  constexpr int USED = FFT_ELEMENTS / N * N;                // values of the block's whole lines
  if (contiguous) {
    const int count = block_pairs<N>(first, lines);
#pragma unroll
    for (int r = 0; r < PER_THREAD / 2; ++r) {
      const int p = threadIdx.x + r * THREADS;
      copy_async<16>(smem + swizzle(2 * p), x + first * N + (p < count ? 2 * p : 0), p < count);
    }
  } else {
    const LineOrigin origin = lay.origin(first);
#pragma unroll 4
    for (int r = 0; r < PER_THREAD; ++r) {
      const int i = threadIdx.x + r * THREADS;
      if (USED < FFT_ELEMENTS && i >= USED) break;
      int line, elem;
      io_slot<N>(i, lay.lines_fast(), line, elem);
      long long b;
      const int within = lay.within(origin, line, elem, b);
      const bool valid = first + line < lines;
      copy_async<8>(smem + swizzle(line * N + elem), valid ? x + b * lay.batch_stride + within : x, valid);
    }
  }
  copy_async_commit();
}

// Stores a line block of N values per line back to back, 16-byte aligned (y + first*N; N even): two
// values per float4, no layout arithmetic.
template <int N>
__device__ __forceinline__ void store_pairs(float2* y, const float2* smem, long long first, long long lines) {
  const int count = block_pairs<N>(first, lines);
#pragma unroll 1
  for (int r0 = 0; r0 < PER_THREAD / 2; r0 += IO_BATCH / 2) {
    float4 v[IO_BATCH / 2];
#pragma unroll
    for (int r = 0; r < IO_BATCH / 2; ++r)
      v[r] = *reinterpret_cast<const float4*>(smem + swizzle(2 * (threadIdx.x + (r0 + r) * THREADS)));
#pragma unroll
    for (int r = 0; r < IO_BATCH / 2; ++r) {
      const int p = threadIdx.x + (r0 + r) * THREADS;
      if (p < count) reinterpret_cast<float4*>(y + first * N)[p] = v[r];
    }
  }
}

// x, y: the lines (layout and blocks in `a`); twiddle: the passes' (m, R) tables with m > 1, in pass
// order; blocks: the DFT-block parts of each distinct radix in pass order (TERMS parts each,
// part_bytes(r) in wgmma's K-major 128-byte-swizzled layout, splitprec._fft_engine.b_tiles); table (used when
// a.use_table != 0): complex64 factors of the outputs, indexed by the output offset inside the batch;
// nonfinite (or null) is set to 1 when a value read from x is NaN or ±inf. x and y do not overlap.
// Each CTA loops over line blocks blockIdx.x, blockIdx.x + gridDim.x, ...
template <int FMT,         // part format: FMT_TF32, FMT_BF16 or FMT_FP16 (power-of-two scaling)
          int TERMS,       // parts per value
          unsigned PAIRS,  // bit 3*i + j set: product of part i (data) and part j (DFT block) taken
          int N>           // transform length: 2**a 3**b 5**c 7**d <= FFT_ELEMENTS
__global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
fft_stockham_sm90(const float2* __restrict__ x, float2* __restrict__ y,
                  const float2* __restrict__ twiddle, const uint4* __restrict__ blocks,
                  const float2* __restrict__ table, unsigned* nonfinite, const LaunchArgs a) {
  extern __shared__ unsigned char shared_raw[];             // 1024-byte aligned below
  constexpr int BLOCK_BYTES = block_offset(N, TERMS, pass_count(N)), LINES = FFT_ELEMENTS / N;
  constexpr bool POW2 = Slots<N>::LINEAR;
  const unsigned raw = shared_address(shared_raw);
  unsigned char* base = shared_raw + (((raw + 1023) & ~1023u) - raw);
  float2* const smem = reinterpret_cast<float2*>(base + BLOCK_BYTES);   // (2, FFT_ELEMENTS): ping-pong
  for (int i = threadIdx.x; i < BLOCK_BYTES / 16; i += THREADS) reinterpret_cast<uint4*>(base)[i] = blocks[i];
  shared_writes_to_async_proxy();

  const LineLayout in{a.batch_lines, a.batch_stride, a.in_line_stride, a.in_elem_stride, a.batch_magic};
  const LineLayout out{a.batch_lines, a.out_batch_stride, a.out_line_stride, a.out_elem_stride, a.batch_magic};
  const int io = POW2 ? a.io : 0;                           // overlap-save blocks: powers of two only
  const Blocks blk{io, a.block_lines, a.step, a.pad, a.in_length, 31 - __clz(N * a.batch_lines),   // log2 B, B = N * batch_lines
                   a.start, a.keep, a.in_row_stride, a.out_row_stride, a.row_flags, a.all_flag, a.scale};
  const long long lines = a.lines;
  const long long line_blocks = (lines + LINES - 1) / LINES;
  const bool in_contiguous = N % 2 == 0 && !(io & LOAD_BLOCKS) && in.contiguous(x, N);
  const bool out_contiguous = N % 2 == 0 && !(io & STORE_BLOCKS) && !a.use_table && out.contiguous(y, N);
  // Loads line block `block` into `buffer` (nothing past the last block): asynchronous copies for
  // lines in a layout, else (overlap-save blocks) loads that return this thread's NaN/inf flag.
  const auto load = [&](long long block, float2* buffer) -> unsigned {
    if (block >= line_blocks) return 0;
    if (io & LOAD_BLOCKS) return move_lines<N, true>(in, blk, x, nullptr, buffer, block * LINES, lines, nullptr, 0);
    load_lines_async<N>(in, x, buffer, block * LINES, lines, in_contiguous);
    return 0;
  };
  // The passes leave the result in buffer `loaded ^ ODD` of the two; the other one is free after the
  // last pass's barrier, and the next block loads into it while this one is stored (the next
  // iteration's barrier orders the stores' reads before its passes).
  constexpr int ODD = pass_count(N) % 2;
  int loaded = 0;                                           // buffer of the next line block
  unsigned seen = load(blockIdx.x, smem);
#pragma unroll 1
  for (long long block = blockIdx.x; block < line_blocks; block += gridDim.x) {
    const long long first = block * LINES;                 // first line
    copy_async_wait<0>();
    __syncthreads();   // the line block in shared memory; the first time, the DFT blocks too
    float2* const result = stockham_passes<FMT, TERMS, PAIRS, N, 0>(
        smem + loaded * FFT_ELEMENTS, smem + (loaded ^ 1) * FFT_ELEMENTS, twiddle, shared_address(base), seen);
    if (seen && nonfinite && threadIdx.x == 0) atomicOr(nonfinite, 1u);
    loaded ^= ODD ^ 1;
    seen = load(block + gridDim.x, smem + loaded * FFT_ELEMENTS);
    if (out_contiguous) store_pairs<N>(y, result, first, lines);
    else move_lines<N, false>(out, blk, nullptr, y, result, first, lines, table, a.use_table);
  }
}
