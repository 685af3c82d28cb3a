// Activations and softmax. Math in f32 with full-precision expf (no fast-math intrinsics), so f32 results stay
// within a few ulp of the CPU kernels; SiLU and GLU of 16-bit values take the fast forms (gate_for,
// launch_common.cuh).
#include <algorithm>
#include <cstdint>

#include "launch_common.cuh"
#include "activation_launch.h"

namespace steno::ops::cuda {
namespace {


struct Relu {
  __device__ float operator()(float v) const { return v > 0.0f ? v : 0.0f; }  // NaN -> 0, as on the CPU
};
template <typename T>
struct Silu {
  __device__ float operator()(float v) const { return silu_for<T>(v); }
};
struct Sigmoid {
  __device__ float operator()(float v) const { return 1.0f / (1.0f + expf(-v)); }
};

// y = fn(x) elementwise; y may alias x (each element is read and written by one thread).
template <typename T, typename Fn>
__global__ void map_kernel(const T* x, T* y, int64_t n, bool vec, Fn fn) {
  int64_t done = 0;
  if (vec) {
    constexpr int V = Pack<T>::kSize;
    const int64_t packs = n / V;
    for (int64_t i = thread_index(); i < packs; i += thread_stride()) {
      Pack<T> p = reinterpret_cast<const Pack<T>*>(x)[i];
#pragma unroll
      for (int j = 0; j < V; ++j) p.v[j] = from_f32<T>(fn(to_f32(p.v[j])));
      reinterpret_cast<Pack<T>*>(y)[i] = p;
    }
    done = packs * V;
  }
  for (int64_t i = done + thread_index(); i < n; i += thread_stride()) y[i] = from_f32<T>(fn(to_f32(x[i])));
}

// x [rows, 2c] -> y [rows, c]: y = x[:, :c] * sigmoid(x[:, c:]).
template <typename T>
__global__ void glu_kernel(const T* x, T* y, int64_t c, int64_t n) {
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int64_t r = i / c, j = i % c;
    const float a = to_f32(x[r * 2 * c + j]), g = to_f32(x[r * 2 * c + c + j]);
    y[i] = from_f32<T>(gate_for<T>(a, g));
  }
}

// ---- softmax ----

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

template <typename Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// A warp working on one row: lane `rank` of 32.
struct WarpGroup {
  int rank;
  static constexpr int size = 32;
  template <typename Op> __device__ float reduce(float v, Op op, float) const { return warp_reduce(v, op); }
};

// A block working on one row. `red` holds one partial per warp; every thread gets the result.
struct BlockGroup {
  float* red;
  int rank, size;
  template <typename Op>
  __device__ float reduce(float v, Op op, float identity) const {
    const int lane = rank % 32, warp = rank / 32, warps = size / 32;
    v = warp_reduce(v, op);
    __syncthreads();  // the previous reduction's readers are done with `red`
    if (lane == 0) red[warp] = v;
    __syncthreads();
    return warp_reduce(lane < warps ? red[lane] : identity, op);
  }
};

// Max-subtracted softmax of one row. y may alias x: the last pass writes only after the reductions, which every
// thread of the group reaches after its reads of the earlier passes.
template <typename T, typename G>
__device__ void softmax_row(const T* x, T* y, int64_t n, const G& g) {
  float m = -INFINITY;
  for (int64_t i = g.rank; i < n; i += g.size) m = fmaxf(m, to_f32(x[i]));
  m = g.reduce(m, MaxOp{}, -INFINITY);
  float s = 0.0f;
  for (int64_t i = g.rank; i < n; i += g.size) s += expf(to_f32(x[i]) - m);
  const float inv = 1.0f / g.reduce(s, SumOp{}, 0.0f);
  for (int64_t i = g.rank; i < n; i += g.size) y[i] = from_f32<T>(expf(to_f32(x[i]) - m) * inv);
}

template <typename T>
__global__ void softmax_warp_kernel(const T* x, T* y, int64_t rows, int64_t n) {
  const int64_t warps = blockDim.x / 32;
  const WarpGroup g{static_cast<int>(threadIdx.x % 32)};
  // The row index is uniform across a warp, so whole warps enter and leave the loop together.
  for (int64_t r = int64_t(blockIdx.x) * warps + threadIdx.x / 32; r < rows; r += int64_t(gridDim.x) * warps)
    softmax_row(x + r * n, y + r * n, n, g);
}

template <typename T>
__global__ void softmax_block_kernel(const T* x, T* y, int64_t rows, int64_t n) {
  __shared__ float red[32];
  const BlockGroup g{red, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) softmax_row(x + r * n, y + r * n, n, g);
}

template <typename Fn>
void launch_map(Dt dt, const void* x, void* y, int64_t n, cudaStream_t stream, Fn fn) {
  if (n == 0) return;
  const bool vec = aligned16(x) && aligned16(y);
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    map_kernel<T, Fn><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n, vec, fn);
  });
}

}  // namespace

// ---- launchers (declared in activation_launch.h) ----

void launch_relu(Dt dt, const void* x, void* y, int64_t n, cudaStream_t stream) {
  launch_map(dt, x, y, n, stream, Relu{});
}

void launch_silu(Dt dt, const void* x, void* y, int64_t n, cudaStream_t stream) {
  dispatch_dt(dt, [&](auto tag) { launch_map(dt, x, y, n, stream, Silu<decltype(tag)>{}); });
}

void launch_sigmoid(Dt dt, const void* x, void* y, int64_t n, cudaStream_t stream) {
  launch_map(dt, x, y, n, stream, Sigmoid{});
}

void launch_glu(Dt dt, const void* x, void* y, int64_t rows, int64_t c, cudaStream_t stream) {
  const int64_t n = rows * c;
  if (n == 0) return;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    glu_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), c, n);
  });
}

void launch_softmax(Dt dt, const void* x, void* y, int64_t rows, int64_t n, cudaStream_t stream) {
  if (rows == 0 || n == 0) return;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x);
    T* yp = static_cast<T*>(y);
    if (n <= kWarpRowMax)
      softmax_warp_kernel<T><<<grid_for(rows, kThreads / 32), kThreads, 0, stream>>>(xp, yp, rows, n);
    else
      softmax_block_kernel<T><<<grid_for(rows, 1), kThreads, 0, stream>>>(xp, yp, rows, n);
  });
}

}  // namespace steno::ops::cuda
