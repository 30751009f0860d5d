// SPDX-License-Identifier: Apache-2.0
// C = A B in float32 for batches of small matrices (m, n, k <= 64): precision="fp32"'s path where
// the data's movement is the time. A block holds `group` whole products at a time in shared memory
// and runs over the batch persistently, copying the next group (cp.async, all copies in flight)
// while it multiplies the current one, so each value is read from memory once and the copies
// overlap the arithmetic. Each thread computes a 4 x 4 tile of C with float32 FMAs that keep
// subnormals, k in order (one rounding per multiply-add: the error of any float32 dot product,
// splitprec.accuracy's sgemm_bound). The epilogue gives C the float64 product's NaN/inf and range
// as sgemm_nonfinite does for cuBLAS SGEMM, without a second pass over C: an entry that is NaN/inf or
// reaches `limit` is recomputed as a float64 dot product rounded once.
#include "common/mma.cuh"
#include "common/pow2.cuh"
#include "common/recompute.cuh"

// Shared-memory geometry of a group of products, in floats: A's rows, all products' one after
// another, in rows of stride_a (k rounded up to 8, plus 4: the rows 4 apart that one 16-byte read
// serves fall on different banks), 3 rows of slack after them (a thread's 4 rows may pass m); then
// each product's B as (kp, nb), k and n rounded up to 4. splitprec.engines.cuda.sgemm_small.layout
// sizes the launch from the same numbers.
struct SmallLayout {
  int mb, nb, kp, stride_a, b_offset, buffer;
  __device__ SmallLayout(int m, int n, int k, int group)
      : mb((m + 3) & ~3), nb((n + 3) & ~3), kp((k + 3) & ~3), stride_a(((kp + 7) & ~7) + 4),
        b_offset((group * m + 3) * stride_a), buffer(b_offset + group * kp * nb) {}
};

// Copy the operands of products first .. first + count - 1 into one buffer: A's columns from k to kp
// as -0 and B's rows as +0, so that their terms add -0, which leaves every sum as it is (+0 + -0 is
// +0, -0 + -0 is -0); the columns of B past n and the slack rows of A only reach entries of C that
// are not stored, and are left as they are. 16-byte copies where k (A) or n (B) is a multiple of 4
// and the base is aligned; B's group is then one contiguous run where k is too.
__device__ __forceinline__ void load_group(const float* a, const float* b, float* buffer, const SmallLayout& s,
                                           int m, int n, int k, long long first, int count, int a_batched,
                                           int b_batched, bool vector_a, bool vector_b) {
  const int rows = count * m;
  const float* a_first = a + (a_batched ? first * m : 0) * static_cast<long long>(k);
  if (vector_a) {
    for (int i = threadIdx.x; i < rows * (k / 4); i += blockDim.x) {
      const int row = i / (k / 4), c = 4 * (i - row * (k / 4));
      const int from = a_batched ? row : row % m;
      copy_async<16>(buffer + row * s.stride_a + c, a_first + static_cast<long long>(from) * k + c, true);
    }
  } else {
    for (int i = threadIdx.x; i < rows * s.kp; i += blockDim.x) {
      const int row = i / s.kp, c = i - row * s.kp;
      const int from = a_batched ? row : row % m;
      if (c < k) copy_async<4>(buffer + row * s.stride_a + c, a_first + static_cast<long long>(from) * k + c, true);
      else buffer[row * s.stride_a + c] = -0.0f;
    }
  }
  float* b_s = buffer + s.b_offset;
  const float* b_first = b + (b_batched ? first : 0) * k * static_cast<long long>(n);
  if (vector_b && s.kp == k && b_batched) {
    for (int i = threadIdx.x; i < count * k * (n / 4); i += blockDim.x) copy_async<16>(b_s + 4 * i, b_first + 4 * i, true);
  } else if (vector_b) {
    for (int i = threadIdx.x; i < count * s.kp * (n / 4); i += blockDim.x) {
      const int row = i / (n / 4), c = 4 * (i - row * (n / 4)), p = row / s.kp, r = row - p * s.kp;
      const long long from = (b_batched ? static_cast<long long>(p) * k : 0) + min(r, k - 1);
      copy_async<16>(b_s + row * s.nb + c, b_first + from * n + c, r < k);
    }
  } else {
    for (int i = threadIdx.x; i < count * s.kp * n; i += blockDim.x) {
      const int row = i / n, c = i - row * n, p = row / s.kp, r = row - p * s.kp;
      const long long from = (b_batched ? static_cast<long long>(p) * k : 0) + min(r, k - 1);
      copy_async<4>(b_s + row * s.nb + c, b_first + from * n + c, r < k);
    }
  }
}

__global__ void __launch_bounds__(256)
sgemm_small(const float* a,      // (a_batches, m, k) float32, contiguous; a_batches = batch or 1
            const float* b,      // (b_batches, k, n)
            float* c,            // (batch, m, n)
            int m, int n, int k, long long batch, int a_batched, int b_batched,
            float limit,         // splitprec.engines.cuda.nonfinite.sgemm_limit(k)
            int group)           // products per block at a time: blockDim.x = group * (mb / 4) * (nb / 4)
{
  const SmallLayout s(m, n, k, group);
  extern __shared__ float4 shared4[];
  float* shared = reinterpret_cast<float*>(shared4);
  const int threads_per_product = (s.mb / 4) * (s.nb / 4);
  const int p = threadIdx.x / threads_per_product, local = threadIdx.x % threads_per_product;
  const int tx = local % (s.nb / 4), ty = local / (s.nb / 4);
  const long long groups = (batch + group - 1) / group;
  const bool vector_a = k % 4 == 0 && (reinterpret_cast<unsigned long long>(a) & 15) == 0;
  const bool vector_b = n % 4 == 0 && (reinterpret_cast<unsigned long long>(b) & 15) == 0;
  const bool vector_c = n % 4 == 0 && (reinterpret_cast<unsigned long long>(c) & 15) == 0;
  const unsigned top = __float_as_uint(limit);          // bits: NaN's are the largest

  long long g = blockIdx.x;
  int current = 0;
  auto count = [&](long long at) { return static_cast<int>(min(static_cast<long long>(group), batch - at * group)); };
  if (g < groups)
    load_group(a, b, shared, s, m, n, k, g * group, count(g), a_batched, b_batched, vector_a, vector_b);
  copy_async_commit();
  for (; g < groups; g += gridDim.x) {
    const long long next = g + gridDim.x;
    if (next < groups)
      load_group(a, b, shared + (current ^ 1) * s.buffer, s, m, n, k, next * group, count(next), a_batched,
                 b_batched, vector_a, vector_b);
    copy_async_commit();
    copy_async_wait<1>();
    __syncthreads();

    const float* a_s = shared + current * s.buffer + (p * m + 4 * ty) * s.stride_a;
    const float* b_s = shared + current * s.buffer + s.b_offset + p * s.kp * s.nb + 4 * tx;
    float acc[4][4] = {};
#pragma unroll 2
    for (int kk = 0; kk < s.kp; kk += 4) {
      float4 x[4], y[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) x[r] = *reinterpret_cast<const float4*>(a_s + r * s.stride_a + kk);
#pragma unroll
      for (int q = 0; q < 4; ++q) y[q] = *reinterpret_cast<const float4*>(b_s + (kk + q) * s.nb);
      const float xs[4][4] = {{x[0].x, x[0].y, x[0].z, x[0].w}, {x[1].x, x[1].y, x[1].z, x[1].w},
                              {x[2].x, x[2].y, x[2].z, x[2].w}, {x[3].x, x[3].y, x[3].z, x[3].w}};
      const float ys[4][4] = {{y[0].x, y[0].y, y[0].z, y[0].w}, {y[1].x, y[1].y, y[1].z, y[1].w},
                              {y[2].x, y[2].y, y[2].z, y[2].w}, {y[3].x, y[3].y, y[3].z, y[3].w}};
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[r][e] = fma_keep_subnormals(xs[r][q], ys[q][e], acc[r][e]);
    }
    __syncthreads();                                    // this buffer is free for the copy after next

    const long long z = g * group + p;
    if (z < batch) {
      const float* a_z = a + (a_batched ? z : 0) * m * static_cast<long long>(k);
      const float* b_z = b + (b_batched ? z : 0) * k * static_cast<long long>(n);
      float* c_z = c + z * m * static_cast<long long>(n);
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = 4 * ty + r;
        if (i >= m) break;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = 4 * tx + e;
          if (j < n && (__float_as_uint(acc[r][e]) & 0x7FFFFFFFu) >= top)
            acc[r][e] = dot_rounded(a_z + static_cast<long long>(i) * k, b_z + j, k, n);
        }
        float* out = c_z + static_cast<long long>(i) * n + 4 * tx;
        if (vector_c && 4 * tx + 3 < n) {
          *reinterpret_cast<float4*>(out) = make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (4 * tx + e < n) out[e] = acc[r][e];
        }
      }
    }
    current ^= 1;
  }
}
