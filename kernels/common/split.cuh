// SPDX-License-Identifier: Apache-2.0
// Rounding of one split part to its narrow format, bit for bit as splitprec.formats.round_to does
// ("rne" ties to even, "rz" toward zero; subnormals of the format kept exactly).
#pragma once
#include "common/mma.cuh"
#include "common/pow2.cuh"

// Largest finite value of each part format.
template <int FMT> __device__ __forceinline__ float format_max() {
  if constexpr (FMT == FMT_TF32) return __uint_as_float(0x7F7FE000u);
  else if constexpr (FMT == FMT_BF16) return __uint_as_float(0x7F7F0000u);
  else return 65504.0f;
}

// Clear the low DROP fraction bits of a float32, toward zero or to nearest (ties to even).
template <int DROP>
__device__ __forceinline__ float round_fraction(float x, bool toward_zero) {
  unsigned u = __float_as_uint(x);
  const unsigned mask = ~((1u << DROP) - 1u);
  if (!toward_zero) u += ((1u << (DROP - 1)) - 1u) + ((u >> DROP) & 1u);
  return __uint_as_float(u & mask);
}

// x rounded to the part format (|x| <= format_max, finite). tf32 and bf16 share float32's
// exponent range, so their subnormals are float32 subnormals with fewer fraction bits.
template <int FMT>
__device__ __forceinline__ float round_part(float x, bool toward_zero) {
  if constexpr (FMT == FMT_TF32) return round_fraction<13>(x, toward_zero);
  else if constexpr (FMT == FMT_BF16) return round_fraction<16>(x, toward_zero);
  else {
    unsigned short h;
    float y;
    // toward zero only for saturated values: clamp first, since cvt.rz gives inf past the range
    if (toward_zero) asm("cvt.rz.f16.f32 %0, %1;" : "=h"(h) : "f"(fminf(fmaxf(x, -65504.0f), 65504.0f)));
    else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    asm("cvt.f32.f16 %0, %1;" : "=f"(y) : "h"(h));
    return y;
  }
}

// The magnitude above which a value scaled by 2**-exponent is split toward zero: the format's largest
// finite value, and for exponent > 0 also below float32's max once 2**exponent is undone.
template <int FMT>
__device__ __forceinline__ float part_top(int exponent) {
  float top = format_max<FMT>();
  if (exponent > 0)
    top = fminf(top, round_part<FMT>(static_cast<float>(ldexp(3.4028234663852886e38, -exponent)), true));
  return top;
}

// The TERMS parts of x (finite) in a row or column of pow2 exponent `exponent` (top: part_top of it),
// as splitprec.split.split: each part is the residual rounded to nearest even (toward zero when the
// scaled value exceeds top), part i stored scaled by 2**(i*SHIFT).
template <int FMT, int TERMS, int SHIFT>
__device__ __forceinline__ void split_value(float x, int exponent, float top, float (&part)[TERMS]) {
  float residual = scale_pow2(x, -exponent);
  const bool saturated = fabsf(residual) > top;
#pragma unroll
  for (int i = 0; i < TERMS; ++i) {
    const int shift = i * SHIFT;   // 0: no scaling (x * 1 is x, bit for bit)
    part[i] = round_part<FMT>(shift ? scale_pow2(residual, shift) : residual, saturated);
    residual = sub_keep_subnormals(residual, shift ? scale_pow2(part[i], -shift) : part[i]);   // exact in float32
  }
}

// Storage of a rounded part: tf32 keeps the float32 bits, bf16 the top half, fp16 its own bits.
template <int FMT> struct PartStorage { typedef unsigned short type; };
template <> struct PartStorage<FMT_TF32> { typedef float type; };

template <int FMT>
__device__ __forceinline__ typename PartStorage<FMT>::type store_part(float part) {
  if constexpr (FMT == FMT_TF32) return part;
  else if constexpr (FMT == FMT_BF16) return static_cast<unsigned short>(__float_as_uint(part) >> 16);
  else {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(part));   // exact: part is an fp16 value
    return h;
  }
}

// Four parts as one 16-byte (tf32) or 8-byte (bf16/fp16) store.
__device__ __forceinline__ float4 pack4(const float (&p)[4]) { return make_float4(p[0], p[1], p[2], p[3]); }
__device__ __forceinline__ uint2 pack4(const unsigned short (&p)[4]) {
  return make_uint2(p[0] | (static_cast<unsigned>(p[1]) << 16), p[2] | (static_cast<unsigned>(p[3]) << 16));
}

// Parts of four adjacent values of one output row, with that row's exponent, into
// out[term * term_stride + index .. + 3] (index and term_stride multiples of 4).
template <int FMT, int TERMS, int SHIFT>
__device__ __forceinline__ void split4(const float (&x)[4], int exponent, typename PartStorage<FMT>::type* out,
                                       long long index, long long term_stride) {
  typedef typename PartStorage<FMT>::type Part;
  const float top = part_top<FMT>(exponent);
  float parts[4][TERMS];
#pragma unroll
  for (int q = 0; q < 4; ++q) split_value<FMT, TERMS, SHIFT>(x[q], exponent, top, parts[q]);
#pragma unroll
  for (int i = 0; i < TERMS; ++i) {
    Part stored[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) stored[q] = store_part<FMT>(parts[q][i]);
    auto packed = pack4(stored);
    *reinterpret_cast<decltype(packed)*>(out + i * term_stride + index) = packed;
  }
}

// The pow2 exponents' input: the largest finite |x| bits and whether a NaN/inf was seen (1), folded
// into `largest` and `seen`.
__device__ __forceinline__ void track_magnitude(float x, unsigned& largest, unsigned& seen) {
  const unsigned magnitude = __float_as_uint(x) & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) seen = 1u;
  else largest = max(largest, magnitude);
}
