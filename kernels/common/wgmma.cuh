// SPDX-License-Identifier: Apache-2.0
// Warpgroup tensor-core primitives (sm_90a, PTX ISA 8.x): shared-memory matrix descriptors and
// wgmma.mma_async with float32 accumulators, for tf32 (k8), bf16 and fp16 (k16): m64n128 with both
// operands in shared memory (the GEMM), m64n8/16/32 with A in registers (the FFT).
#pragma once
#include "common/mma.cuh"

// Descriptor of a K-major operand tile written by TMA with 128-byte swizzle: rows of 128 bytes,
// 8-row groups 1024 bytes apart, the tile 1024-byte aligned. A k-step 32*s bytes into the rows
// starts 32*s bytes further (the hardware applies the swizzle to the address it forms).
__device__ __forceinline__ unsigned long long swizzled_descriptor(unsigned address) {
  return ((address & 0x3FFFFull) >> 4) | (1ull << 16) | (static_cast<unsigned long long>(1024 >> 4) << 32) |
         (1ull << 62);
}

// Makes this thread's ordinary shared-memory writes visible to wgmma's operand reads (async proxy).
__device__ __forceinline__ void shared_writes_to_async_proxy() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void warpgroup_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void warpgroup_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

template <int PENDING>   // committed groups allowed to stay in flight
__device__ __forceinline__ void warpgroup_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(PENDING) : "memory");
}

// Moves this warpgroup's per-thread register budget up or down to COUNT (a multiple of 8), so
// that a producer warpgroup can give its registers to the consumers.
template <bool INCREASE, int COUNT>
__device__ __forceinline__ void set_register_limit() {
  if constexpr (INCREASE) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(COUNT));
  else asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(COUNT));
}

// Keeps the compiler from moving accumulator reads or writes across the asynchronous wgmma.
template <int M>
__device__ __forceinline__ void fence_registers(float (&d)[M]) {
#pragma unroll
  for (int i = 0; i < M; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}

// Keeps A-operand registers alive and unchanged up to here (after the wait on the wgmma that reads
// them): the compiler sees their last use at the asynchronous wgmma's issue.
template <int I, int J>
__device__ __forceinline__ void keep_registers(const unsigned (&a)[I][J][4]) {
#pragma unroll
  for (int i = 0; i < I; ++i)
#pragma unroll
    for (int j = 0; j < J; ++j) asm volatile("" :: "r"(a[i][j][0]), "r"(a[i][j][1]), "r"(a[i][j][2]), "r"(a[i][j][3]) : "memory");
}

// d = (accumulate ? d : 0) + A * B over one k-step (32 bytes of k) for a 64 x 128 tile: one
// wgmma.mma_async of SHAPE_TYPES; IMMEDIATES follow the scale-d predicate (scales, transposes).
#define SPLITPREC_WGMMA_M64N128(SHAPE_TYPES, IMMEDIATES)                                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                           \
               "wgmma.mma_async.sync.aligned." SHAPE_TYPES " "                                       \
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                                                                          \
               "%64, %65, p" IMMEDIATES ";\n}\n"                                                     \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])                                                                                 \
               : "l"(desc_a), "l"(desc_b), "r"(accumulate))

template <int FMT>
__device__ __forceinline__ void wgmma_step(float (&d)[64], unsigned long long desc_a, unsigned long long desc_b,
                                           int accumulate) {
  if constexpr (FMT == FMT_TF32) SPLITPREC_WGMMA_M64N128("m64n128k8.f32.tf32.tf32", ", 1, 1");
  else if constexpr (FMT == FMT_BF16) SPLITPREC_WGMMA_M64N128("m64n128k16.f32.bf16.bf16", ", 1, 1, 0, 0");
  else SPLITPREC_WGMMA_M64N128("m64n128k16.f32.f16.f16", ", 1, 1, 0, 0");
}
#undef SPLITPREC_WGMMA_M64N128

// d = (accumulate ? d : 0) + A * B over one k-step for a 64 x N tile, A from registers (per warp of
// the warpgroup, 16 rows in mma.sync's m16n8k8 / m16n8k16 A-fragment layout), B a K-major shared
// tile. D_REGS, A_REGS, DESC and ACC name the operands' positions; the outputs follow.
#define SPLITPREC_WGMMA_RS(SHAPE_TYPES, IMMEDIATES, D_REGS, A_REGS, DESC, ACC, ...)                    \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " ACC ", 0;\n"                                       \
               "wgmma.mma_async.sync.aligned." SHAPE_TYPES " " D_REGS ", " A_REGS ", " DESC ", p"      \
               IMMEDIATES ";\n}\n"                                                                    \
               : __VA_ARGS__                                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate))

#define SPLITPREC_WGMMA_RS_N(N, D_REGS, A_REGS, DESC, ACC, ...)                                      \
  if constexpr (FMT == FMT_TF32)                                                                      \
    SPLITPREC_WGMMA_RS("m64n" #N "k8.f32.tf32.tf32", ", 1, 1", D_REGS, A_REGS, DESC, ACC, __VA_ARGS__); \
  else if constexpr (FMT == FMT_BF16)                                                                 \
    SPLITPREC_WGMMA_RS("m64n" #N "k16.f32.bf16.bf16", ", 1, 1, 0", D_REGS, A_REGS, DESC, ACC, __VA_ARGS__); \
  else                                                                                                \
    SPLITPREC_WGMMA_RS("m64n" #N "k16.f32.f16.f16", ", 1, 1, 0", D_REGS, A_REGS, DESC, ACC, __VA_ARGS__)

template <int FMT, int N>   // N = 8, 16 or 32
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long desc_b,
                                         int accumulate) {
  static_assert(N == 8 || N == 16 || N == 32, "wgmma_rs: n 8/16/32");
  if constexpr (N == 8) {
    SPLITPREC_WGMMA_RS_N(8, "{%0, %1, %2, %3}", "{%4, %5, %6, %7}", "%8", "%9",
                         "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]));
  } else if constexpr (N == 16) {
    SPLITPREC_WGMMA_RS_N(16, "{%0, %1, %2, %3, %4, %5, %6, %7}", "{%8, %9, %10, %11}", "%12", "%13",
                         "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                         "+f"(d[7]));
  } else {
    SPLITPREC_WGMMA_RS_N(32, "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}",
                         "{%16, %17, %18, %19}", "%20", "%21",
                         "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                         "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                         "+f"(d[14]), "+f"(d[15]));
  }
}
#undef SPLITPREC_WGMMA_RS_N
#undef SPLITPREC_WGMMA_RS
