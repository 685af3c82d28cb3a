// Row-scaled FP8 quantization (steno/ops/fp8.h): one block per row, the row read once into registers, its largest
// magnitude found by a block reduction, then written as E4M3 bytes with its scale.
#include <algorithm>
#include <cstdint>

#include "fp8_common.cuh"
#include "fp8_launch.h"

namespace steno::ops::cuda {
namespace {

// SiLU with the fast exponential and division (silu_for of a 16-bit type): the precise expf and '/' made the
// feed-forward's SiLU and quantization compute-bound (128 µs a call at 32 x 45 s against ~55 µs of memory
// traffic), and their few ulps of f32 error vanish in E4M3's 3-bit mantissa.
template <Fp8RowOp Op>
__device__ __forceinline__ float apply(float v) {
  if constexpr (Op == Fp8RowOp::kSilu) return silu_for<__nv_bfloat16>(v);
  return v;
}

// Block of blockDim.x threads (a multiple of 32, at most kThreads) per row; thread t holds the row's 16-byte
// vectors t, t + blockDim.x, ... (at most P of them).
template <typename T, int P, Fp8RowOp Op>
__global__ void __launch_bounds__(kThreads)
    quantize_rows_kernel(const T* __restrict__ x, int64_t rows, int64_t cols, uint8_t* __restrict__ q,
                         float* __restrict__ scales) {
  constexpr int V = Pack<T>::kSize;
  __shared__ float red[kThreads / 32];
  const int packs = static_cast<int>(cols / V);
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const auto* xr = reinterpret_cast<const Pack<T>*>(x + r * cols);
    float v[P][V];
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const int p = static_cast<int>(threadIdx.x) + j * static_cast<int>(blockDim.x);
      if (p >= packs) break;
      const Pack<T> px = xr[p];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        v[j][i] = apply<Op>(to_f32(px.v[i]));
        amax = fmaxf(amax, fabsf(v[j][i]));
      }
    }
    amax = warp_max(amax);
    __syncthreads();  // the previous row's readers are done with `red`
    if (lane == 0) red[warp] = amax;
    __syncthreads();
    amax = warp_max(lane < warps ? red[lane] : 0.0f);
    const RowScale s = row_scale(amax);
    auto* qr = reinterpret_cast<E4M3Pack<V>*>(q + r * cols);
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const int p = static_cast<int>(threadIdx.x) + j * static_cast<int>(blockDim.x);
      if (p >= packs) break;
      qr[p] = to_e4m3<V>(v[j], s.quant);
    }
    if (threadIdx.x == 0) scales[r] = s.dequant;
  }
}

template <typename T, int P>
void launch(Fp8RowOp op, const void* x, int64_t rows, int64_t cols, uint8_t* q, float* scales, int threads,
            cudaStream_t stream) {
  const auto grid = static_cast<unsigned>(std::min<int64_t>(rows, kMaxBlocks * 4));
  const auto* xt = static_cast<const T*>(x);
  if (op == Fp8RowOp::kSilu)
    quantize_rows_kernel<T, P, Fp8RowOp::kSilu><<<grid, threads, 0, stream>>>(xt, rows, cols, q, scales);
  else
    quantize_rows_kernel<T, P, Fp8RowOp::kIdentity><<<grid, threads, 0, stream>>>(xt, rows, cols, q, scales);
}

}  // namespace

bool launch_quantize_rows(Dt dt, Fp8RowOp op, const void* x, int64_t rows, int64_t cols, uint8_t* q, float* scales,
                          cudaStream_t stream) {
  const int64_t vec = dt == Dt::kF32 ? 4 : 8;
  if (cols == 0 || cols % vec != 0 || !aligned16(x) || !aligned16(q)) return false;
  const int64_t packs = cols / vec;
  // Rows of up to 256 vectors take one thread per vector; longer ones 256 threads with up to 8 vectors each.
  const int threads = static_cast<int>(std::clamp<int64_t>((packs + 31) / 32 * 32, 32, kThreads));
  const int64_t per_thread = (packs + threads - 1) / threads;
  if (per_thread > 8) return false;
  if (rows == 0) return true;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    if (per_thread <= 1)
      launch<T, 1>(op, x, rows, cols, q, scales, threads, stream);
    else if (per_thread <= 2)
      launch<T, 2>(op, x, rows, cols, q, scales, threads, stream);
    else if (per_thread <= 4)
      launch<T, 4>(op, x, rows, cols, q, scales, threads, stream);
    else
      launch<T, 8>(op, x, rows, cols, q, scales, threads, stream);
  });
  return true;
}

}  // namespace steno::ops::cuda
