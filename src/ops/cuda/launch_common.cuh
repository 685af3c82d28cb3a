// Device helpers shared by the .cu files: loading and storing f32 / f16 / bf16 as f32, and the dispatch from the
// runtime Dt to a template. Only CUDA headers here (see launch.h).
#pragma once

#include <cuda_bf16.h>
#include <algorithm>
#include <cstdint>
#include <cuda_fp16.h>

#include "launch.h"

namespace steno::ops::cuda {

template <typename T> __device__ __forceinline__ float to_f32(T v);
template <> __device__ __forceinline__ float to_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_f32<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Calls fn(T{}) with T = float, __half or __nv_bfloat16 for dt.
template <typename Fn>
void dispatch_dt(Dt dt, Fn&& fn) {
  switch (dt) {
    case Dt::kF32: fn(float{}); break;
    case Dt::kF16: fn(__half{}); break;
    case Dt::kBF16: fn(__nv_bfloat16{}); break;
  }
}

// SiLU (v · sigmoid(v)) and a GLU's gate (a · sigmoid(g)) for values stored as T. For f32 storage the precise
// expf and division, as the CPU computes them. For f16 and bf16 the fast exponential and division: their error of
// a few f32 ulps is far below the 16-bit rounding of the result, and the precise forms made these passes
// compute-bound (the bf16 feed-forward's SiLU took 0.10 ms at 32 x 45 s on the H200 for ~0.06 ms of memory
// traffic). Large negative inputs give 0 (the division by infinity).
template <typename T>
__device__ __forceinline__ float gate_for(float a, float g) {
  if constexpr (sizeof(T) == 4) return a / (1.0f + expf(-g));
  else return __fdividef(a, 1.0f + __expf(-g));
}
template <typename T>
__device__ __forceinline__ float silu_for(float v) {
  return gate_for<T>(v, v);
}

// Butterfly sum over a warp: every lane ends with the same bits (each step adds the same two values in either
// order), so lanes may branch on the result together.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// 16-byte alignment, the condition for vector loads through Pack.
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// 16 bytes of T: the unit of a vector load.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

// A grid-stride loop's start and step.
__device__ __forceinline__ int64_t thread_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t thread_stride() { return int64_t(gridDim.x) * blockDim.x; }

inline unsigned blocks_for(int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

// The launch shape of the grid-stride kernels (activation, copy, elementwise, lstm, norm): blocks of kThreads,
// at most kMaxBlocks of them (enough to fill an H200, 132 SMs x 8 blocks of 256, several times); past that each
// thread loops over several elements.
inline constexpr int kThreads = 256;
inline constexpr int64_t kMaxBlocks = 4096;
// Rows up to this length take one warp each (softmax, layer norm); longer rows take a block of kThreads.
inline constexpr int64_t kWarpRowMax = 1024;

// The most blocks a launch's grid takes in x (2^31 - 1); kernels with a block per row loop over longer inputs.
inline constexpr int64_t kMaxGridX = 0x7fffffff;

// Blocks for n work items of per_block each, capped at kMaxBlocks.
inline unsigned grid_for(int64_t n, int per_block = kThreads) {
  return static_cast<unsigned>(std::min<int64_t>(blocks_for(n, per_block), kMaxBlocks));
}

}  // namespace steno::ops::cuda
