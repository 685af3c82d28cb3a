// Launchers of fused.cu (raw pointers, see launch.h), included by both fused.cu and fused_cuda.cc so that the two
// sides cannot disagree on a signature. Each returns false, launching nothing, when the shape is outside what its
// kernel handles; the caller then runs the plain ops.
#pragma once

#include <cstdint>

#include "launch.h"

namespace steno::ops::cuda {

// x = x + alpha * h (when h is not null), y = layer_norm(x): one warp per row, the row held in registers.
// Needs d a multiple of one 16-byte vector and at most 8 vectors per lane (d <= 2048 in 16-bit types, 1024 in
// f32), every pointer 16-byte aligned. y may alias x.
bool launch_add_layer_norm(Dt dt, void* x, const void* h, float alpha, const void* gamma, const void* beta, float eps,
                           void* y, int64_t rows, int64_t d, cudaStream_t stream);
// The same, the normalised rows quantized to E4M3 (q [rows, d]) with one scale per row (scales [rows]) instead of
// stored in dt (ops::add_layer_norm_fp8); q must be 16-byte aligned too.
bool launch_add_layer_norm_e4m3(Dt dt, void* x, const void* h, float alpha, const void* gamma, const void* beta,
                                float eps, uint8_t* q, float* scales, int64_t rows, int64_t d, cudaStream_t stream);

// y = silu(depthwise_conv1d(mask(glu(x)))), see ops::gated_depthwise_silu. lengths: int32 [batch] on the device.
// Needs a kernel of at most kMaxGatedTaps taps.
inline constexpr int64_t kMaxGatedTaps = 33;
bool launch_gated_depthwise_silu(Dt dt, const void* x, const void* w, const void* bias, const int32_t* lengths,
                                 void* y, int64_t batch, int64_t steps, int64_t channels, int64_t taps, int pad_left,
                                 cudaStream_t stream);

}  // namespace steno::ops::cuda
