// Layer norm (one warp or one block per row, two-pass f32 statistics) and inference batch norm (channel-last,
// elementwise).
#include <algorithm>
#include <cstdint>

#include "launch_common.cuh"
#include "norm_launch.h"

namespace steno::ops::cuda {
namespace {

// A warp working on one row: lane `rank` of 32.
struct WarpGroup {
  int rank;
  static constexpr int size = 32;
  __device__ float sum(float v) const { return warp_sum(v); }
};

// A block working on one row; `red` holds one partial per warp and every thread gets the total.
struct BlockGroup {
  float* red;
  int rank, size;
  __device__ float sum(float v) const {
    const int lane = rank % 32, warp = rank / 32, warps = size / 32;
    v = warp_sum(v);
    __syncthreads();  // the previous reduction's readers are done with `red`
    if (lane == 0) red[warp] = v;
    __syncthreads();
    return warp_sum(lane < warps ? red[lane] : 0.0f);
  }
};

// Two passes for the statistics (mean, then squared deviations), as the CPU kernel: accurate for rows with a
// large offset. y may alias x: each pass after a reduction starts only once the whole group has read the row.
template <typename T, typename G>
__device__ void layer_norm_row(const T* x, const T* gamma, const T* beta, float eps, T* y, int64_t d,
                               const G& g) {
  float s = 0.0f;
  for (int64_t i = g.rank; i < d; i += g.size) s += to_f32(x[i]);
  const float mean = g.sum(s) / static_cast<float>(d);
  float q = 0.0f;
  for (int64_t i = g.rank; i < d; i += g.size) {
    const float v = to_f32(x[i]) - mean;
    q += v * v;
  }
  const float var = g.sum(q) / static_cast<float>(d);
  const float rstd = 1.0f / sqrtf(var + eps);
  for (int64_t i = g.rank; i < d; i += g.size)
    y[i] = from_f32<T>((to_f32(x[i]) - mean) * rstd * to_f32(gamma[i]) + to_f32(beta[i]));
}

template <typename T>
__global__ void layer_norm_warp_kernel(const T* x, const T* gamma, const T* beta, float eps, T* y, int64_t rows,
                                       int64_t d) {
  const int64_t warps = blockDim.x / 32;
  const WarpGroup g{static_cast<int>(threadIdx.x % 32)};
  // The row index is uniform across a warp, so whole warps enter and leave the loop together.
  for (int64_t r = int64_t(blockIdx.x) * warps + threadIdx.x / 32; r < rows; r += int64_t(gridDim.x) * warps)
    layer_norm_row(x + r * d, gamma, beta, eps, y + r * d, d, g);
}

template <typename T>
__global__ void layer_norm_block_kernel(const T* x, const T* gamma, const T* beta, float eps, T* y, int64_t rows,
                                        int64_t d) {
  __shared__ float red[32];
  const BlockGroup g{red, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) layer_norm_row(x + r * d, gamma, beta, eps, y + r * d, d, g);
}

// y = x * s + (beta - mean * s) with s = gamma / sqrt(var + eps), the CPU kernel's arithmetic; channel = i % c.
template <typename T>
__global__ void batch_norm_kernel(const T* x, const T* mean, const T* var, const T* gamma, const T* beta, float eps,
                                  T* y, int64_t c, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % c;
    const float s = to_f32(gamma[j]) / sqrtf(to_f32(var[j]) + eps);
    const float shift = to_f32(beta[j]) - to_f32(mean[j]) * s;
    y[i] = from_f32<T>(to_f32(x[i]) * s + shift);
  }
}

}  // namespace

// ---- launchers (declared in norm_launch.h) ----

void launch_layer_norm(Dt dt, const void* x, const void* gamma, const void* beta, float eps, void* y, int64_t rows,
                       int64_t d, cudaStream_t stream) {
  if (rows == 0 || d == 0) return;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x);
    const T* gp = static_cast<const T*>(gamma);
    const T* bp = static_cast<const T*>(beta);
    T* yp = static_cast<T*>(y);
    if (d <= kWarpRowMax)
      layer_norm_warp_kernel<T><<<grid_for(rows, kThreads / 32), kThreads, 0, stream>>>(xp, gp, bp, eps, yp, rows, d);
    else
      layer_norm_block_kernel<T><<<grid_for(rows, 1), kThreads, 0, stream>>>(xp, gp, bp, eps, yp, rows, d);
  });
}

void launch_batch_norm(Dt dt, const void* x, const void* mean, const void* var, const void* gamma, const void* beta,
                       float eps, void* y, int64_t rows, int64_t c, cudaStream_t stream) {
  const int64_t n = rows * c;
  if (n == 0) return;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    batch_norm_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(mean), static_cast<const T*>(var),
        static_cast<const T*>(gamma), static_cast<const T*>(beta), eps, static_cast<T*>(y), c, n);
  });
}

}  // namespace steno::ops::cuda
