// SPDX-License-Identifier: Apache-2.0
// Hopper (sm_90) asynchronous-copy primitives, per the PTX ISA: shared-memory mbarriers that count
// arrivals and bytes, and Tensor Memory Accelerator loads (cp.async.bulk.tensor) of a 2-D box
// described by a tensor map.
#pragma once

// A tensor map (the driver's CUtensorMap: 128 opaque bytes, 64-byte aligned), encoded on the host
// and passed by value as a `const __grid_constant__` kernel parameter, which TMA reads in place.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ void barrier_init(unsigned bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(arrivals) : "memory");
}

// Makes initialised barriers visible to the other threads and to the async proxy (TMA).
__device__ __forceinline__ void barrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also announces `bytes` of TMA data the current phase waits for.
__device__ __forceinline__ void barrier_arrive_expect_bytes(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void barrier_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}

// Whether the barrier's phase of the given parity has completed (does not block).
__device__ __forceinline__ bool barrier_done(unsigned bar, unsigned parity) {
  unsigned done;
  asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  return done;
}

// Blocks until the barrier's phase of the given parity (0, 1, 0, ... for its 1st, 2nd, 3rd use) completes.
__device__ __forceinline__ void barrier_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n.reg .pred done;\nWAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra WAIT;\n}\n" :: "r"(bar), "r"(parity) : "memory");
}

// The box at (inner, outer) elements of the tensor map into shared memory at `dst` (the map's
// swizzle applied); its bytes complete on barrier `bar`. Out-of-range elements read as zero.
__device__ __forceinline__ void tensor_load_2d(unsigned dst, const TensorMap& map, int inner, int outer,
                                               unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];\n"
               :: "r"(dst), "l"(&map), "r"(inner), "r"(outer), "r"(bar) : "memory");
}

