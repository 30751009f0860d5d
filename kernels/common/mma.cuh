// SPDX-License-Identifier: Apache-2.0
// Warp-level primitives shared by the split GEMM kernels: cp.async copies, ldmatrix fragment loads
// and mma.sync for tf32 (m16n8k8), bf16 and fp16 (m16n8k16), per the PTX ISA (sm_80 and newer).
#pragma once

enum PartFormat { FMT_TF32 = 0, FMT_BF16 = 1, FMT_FP16 = 2 };

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// BYTES-byte global->shared copy (4, 8 or 16; 16 bypasses L1); valid == false writes BYTES zero
// bytes (rows past a matrix edge) and reads nothing.
template <int BYTES>
__device__ __forceinline__ void copy_async(void* smem, const void* gmem, bool valid) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "copy_async: 4, 8 or 16 bytes");
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(shared_address(smem)), "l"(gmem), "r"(valid ? 16 : 0));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n"
                 :: "r"(shared_address(smem)), "l"(gmem), "n"(BYTES), "r"(valid ? BYTES : 0));
}

__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int PENDING>  // groups allowed to stay in flight
__device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING));
}

// Four 8x8 b16 matrices; lane l gives the address of row l % 8 of matrix l / 8. With rows of 16-byte
// chunks, the same call loads tf32 fragments (one 32-bit element = two b16 halves).
__device__ __forceinline__ void load_matrix_x4(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(shared_address(smem)));
}

// d += a * b over one k-step (32 bytes of k: 16 bf16/fp16 or 8 tf32 values). The tensor core adds
// the k-step's products and d with its own (truncating) alignment; callers start d at zero for
// each k-block and promote it with ordinary fp32 adds.
template <int FMT>
__device__ __forceinline__ void mma_step(float (&d)[4], const unsigned (&a)[4], const unsigned* b) {
  if constexpr (FMT == FMT_TF32) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (FMT == FMT_BF16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}
