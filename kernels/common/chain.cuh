// SPDX-License-Identifier: Apache-2.0
// Kernels launched to overlap the previous kernel of their stream (programmatic dependent launch,
// sm_90 on: splitprec.engines.cuda.launch.PreparedLaunch with overlap=True) start before it ends:
// they wait here for it to finish, and its writes to be visible, before reading them.
#pragma once

__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
