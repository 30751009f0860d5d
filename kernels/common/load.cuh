// SPDX-License-Identifier: Apache-2.0
// Four consecutive float32 of a row: one 16-byte load where the row allows it, else four guarded loads.
#pragma once

// True when every row of `cols` float32 values from `x` on starts 16-byte aligned.
__device__ __forceinline__ bool rows_aligned16(const float* x, int cols) {
  return cols % 4 == 0 && (reinterpret_cast<unsigned long long>(x) & 15) == 0;
}

// row[c .. c+3], zeros at and past `cols` (c is a multiple of 4; `aligned` from rows_aligned16).
__device__ __forceinline__ float4 load4(const float* row, int c, int cols, bool aligned) {
  if (aligned) return c < cols ? __ldg(reinterpret_cast<const float4*>(row + c)) : make_float4(0.f, 0.f, 0.f, 0.f);
  return make_float4(c < cols ? row[c] : 0.f, c + 1 < cols ? row[c + 1] : 0.f,
                     c + 2 < cols ? row[c + 2] : 0.f, c + 3 < cols ? row[c + 3] : 0.f);
}
