// Moving and converting tensors: between host and device, between dtypes, and the one layout change the encoder
// needs. On CUDA every op is queued on the context's stream; call ctx.synchronize() before reading a host result.
#pragma once

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops {

// dst = src, byte for byte: same shape and dtype, any devices (host<->device on ctx's stream; either side may be
// the CPU, the CUDA side must be ctx's device). Host memory from cuda::default_pinned_allocator() copies
// asynchronously; pageable host memory makes the call wait for the copy.
void copy(Context& ctx, const Tensor& src, Tensor& dst);

// dst = src converted between float dtypes (f32, f16, bf16; round to nearest even), same shape, both on ctx's
// device.
void cast(Context& ctx, const Tensor& src, Tensor& dst);

// A new tensor on ctx's device holding `src` (any device) converted to `dtype`.
Tensor to_context(Context& ctx, const Tensor& src, DType dtype);

// A deep copy of t (on any device) on ctx's device, same dtype, from ctx's allocator.
Tensor clone(Context& ctx, const Tensor& t);

// A copy of host tensor `src` converted to `dtype` on ctx's device in memory from `alloc` (which must allocate
// on that device): how weights are placed, shared by every context on the device. Waits for the upload.
Tensor place(Context& ctx, const Tensor& src, DType dtype, Allocator& alloc);

// Every element of t becomes zero (any dtype).
void fill_zero(Context& ctx, Tensor& t);

// dst [B, T', D] = src [B, T, D] along the time axis: the first min(T, T') frames of each item copied, the rest
// of dst zero. Same dtype, both on ctx's device. How the CUDA encoder pads its frames to a multiple of 8 (and
// trims them again): cuBLASLt's fast Hopper kernels want every GEMM extent a multiple of 16 bytes.
void copy_frames(Context& ctx, const Tensor& src, Tensor& dst);

// The subsampling's flattening: x [B, C, T, F] -> y [B, T, C*F], y[b, t, c*F + f] = x[b, c, t, f].
void merge_channels(Context& ctx, const Tensor& x, Tensor& y);

}  // namespace steno::ops
