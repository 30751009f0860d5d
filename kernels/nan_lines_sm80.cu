// SPDX-License-Identifier: Apache-2.0
// The FFT's NaN/inf semantics without a host round trip: after a transform whose kernels flagged
// NaN or ±inf in the input, every output line whose input line holds one becomes all NaN (as a
// transform of that line alone would make it, up to which non-finite values appear). Lines are
// independent in every transform path, so the other lines' outputs are already right and stay.
#include "common/load.cuh"

// x: (lines, x_cols) float32 inputs, y: (lines, y_cols) float32 outputs (complex lines as Re, Im
// pairs); nothing happens unless *flag != 0. One block per line at a time.
__global__ void __launch_bounds__(1024)
nan_lines(const float* x, int x_cols, float* y, int y_cols, long long lines, const unsigned* flag) {
  if (*flag == 0u) return;
  const bool aligned = rows_aligned16(x, x_cols);
  for (long long line = blockIdx.x; line < lines; line += gridDim.x) {
    const float* row = x + line * x_cols;
    bool bad = false;
    for (int c = 4 * threadIdx.x; c < x_cols; c += 4 * blockDim.x) {
      const float4 v = load4(row, c, x_cols, aligned);
      bad |= !(isfinite(v.x) && isfinite(v.y) && isfinite(v.z) && isfinite(v.w));
    }
    if (__syncthreads_or(bad)) {
      for (int c = threadIdx.x; c < y_cols; c += blockDim.x) y[line * y_cols + c] = __int_as_float(0x7FC00000);
    }
  }
}
