// Device helpers for FP8 (E4M3) rows (steno/ops/fp8.h), shared by fp8.cu and fused.cu: a row's scale from its
// largest magnitude, and a 16-byte vector of T quantized to as many E4M3 bytes. Only CUDA headers (launch.h).
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

#include "launch_common.cuh"

namespace steno::ops::cuda {

inline constexpr float kE4M3MaxDevice = 448.0f;  // ops::kE4M3Max

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// How a row of largest magnitude amax is quantized: values are multiplied by `quant` and rounded to E4M3 (the
// largest becomes 448); `dequant` (= amax / 448) is the scale stored beside them. A row of zeros keeps zeros.
struct RowScale {
  float quant, dequant;
};
__device__ __forceinline__ RowScale row_scale(float amax) {
  if (!(amax > 0.0f)) return {0.0f, 0.0f};
  return {kE4M3MaxDevice / amax, amax / kE4M3MaxDevice};
}

// N E4M3 bytes written with one store (N = 4 or 8: a 16-byte vector of f32 or of a 16-bit type).
template <int N>
struct alignas(N) E4M3Pack {
  uint8_t b[N];
};

// v * quant, each rounded to the nearest E4M3 value (ties to even), saturating at +-448.
template <int N>
__device__ __forceinline__ E4M3Pack<N> to_e4m3(const float (&v)[N], float quant) {
  E4M3Pack<N> out;
#pragma unroll
  for (int i = 0; i < N; ++i)
    out.b[i] = static_cast<uint8_t>(__nv_cvt_float_to_fp8(v[i] * quant, __NV_SATFINITE, __NV_E4M3));
  return out;
}

}  // namespace steno::ops::cuda
