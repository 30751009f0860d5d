// SPDX-License-Identifier: Apache-2.0
// Ozaki scheme II, operand side: per row of a float64 (rows, k) matrix, the power-of-two exponent
// of splitprec.ozaki.scale_exponents and the int8 residues of rint(x * 2**sigma) modulo every
// modulus, written K-major for cuBLAS's TN int8 GEMM. Exact integer arithmetic throughout; NaN/inf
// are read as 0 and reported for kernels/gemm_nonfinite_sm80.cu. Ozaki, Uchino, Imamura, arXiv
// 2504.08009.
#include "common/ozaki2.cuh"

// Block-wide reduction of one double per thread (max or sum), result in every thread. The sums
// reduced here are of integers below 2**52, exact in any order.
template <bool Max>
__device__ __forceinline__ double ozaki2_block_reduce(double v, double* scratch, int lane, int warp, int warps) {
  for (int o = 16; o > 0; o >>= 1) {
    const double other = __shfl_xor_sync(0xffffffffu, v, o);
    v = Max ? fmax(v, other) : v + other;
  }
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = 0.0;                                    // peaks and sums are >= 0
  for (int w = 0; w < warps; ++w) v = Max ? fmax(v, scratch[w]) : v + scratch[w];
  __syncthreads();
  return v;
}

template <int N>   // number of moduli
__global__ void __launch_bounds__(256)
ozaki2_residues_sm80(const double* __restrict__ x,    // (batch * rows, k) float64, row-major
                     signed char* __restrict__ planes, // (batch, N, rows, pad) int8 residues
                     int* __restrict__ exponent,       // (batch * rows) sigma per row
                     unsigned* __restrict__ nonfinite, // set to inf's float32 bits when a NaN/inf is read
                     unsigned* __restrict__ lines,     // (batch * rows): set to 1 for a row holding one
                     unsigned* __restrict__ norm_peak, // or null: the largest e = bits - sigma + 2048 of a nonzero row
                     int rows, int k, int pad,         // pad: k rounded up to a multiple of 16
                     int bits,                         // Q: the row is scaled to 2-norm <= 2**Q
                     int grid)                         // G = splitprec.ozaki.grid_bits(k)
{
  __shared__ double scratch[8];
  const long long row = blockIdx.x;
  const double* xr = x + row * k;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  double peak = 0.0;
  bool bad = false;
  for (int h = threadIdx.x; h < k; h += blockDim.x) {
    const double v = xr[h];
    if (isfinite(v)) peak = fmax(peak, fabs(v)); else bad = true;
  }
  if (bad) {
    *nonfinite = 0x7F800000u;
    lines[row] = 1u;
  }
  peak = ozaki2_block_reduce<true>(peak, scratch, lane, warp, warps);
  const int g = peak > 0.0 ? ilogb(peak) + 1 : 0;          // peak < 2**g
  double total = 0.0;
  for (int h = threadIdx.x; h < k && peak > 0.0; h += blockDim.x) {
    const double v = xr[h];
    const double w = isfinite(v) ? ceil(ldexp(fabs(v), grid - g)) : 0.0;   // w <= 2**grid
    total += w * w;
  }
  total = ozaki2_block_reduce<false>(total, scratch, lane, warp, warps);
  const int half = total > 1.0 ? (ilogb(total - 1.0) + 2) / 2 : 0;      // total <= 4**half
  const int sigma = peak > 0.0 ? bits - (g - grid + half) : 0;
  if (threadIdx.x == 0) {
    exponent[row] = sigma;
    if (norm_peak && peak > 0.0) atomicMax(norm_peak, static_cast<unsigned>(bits - sigma + 2048));
  }
  const long long b = row / rows, r = row - b * rows;
  const long long plane = (long long)rows * pad;
  signed char* out = planes + (b * N * rows + r) * pad;
  for (int h0 = 4 * threadIdx.x; h0 < pad; h0 += 4 * blockDim.x) {
    double t[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const double v = h0 + q < k ? xr[h0 + q] : 0.0;
      t[q] = isfinite(v) ? rint(ldexp(v, sigma)) : 0.0;
    }
#pragma unroll
    for (int l = 0; l < N; ++l) {
      const int m = ozaki2_modulus(l);
      char4 packed;
      packed.x = ozaki2_residue(t[0], m);
      packed.y = ozaki2_residue(t[1], m);
      packed.z = ozaki2_residue(t[2], m);
      packed.w = ozaki2_residue(t[3], m);
      *reinterpret_cast<char4*>(out + l * plane + h0) = packed;
    }
  }
}
