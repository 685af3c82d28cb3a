// Launchers of conv.cu (raw pointers, see launch.h), included by both conv.cu and conv_cuda.cc so
// that the two sides cannot disagree on a signature.
#pragma once

#include "launch.h"

namespace steno::ops::cuda {

void launch_conv2d(Dt dt, const void* x, const void* w, const void* bias, void* y, int64_t batch, int64_t cin,
                   int64_t h, int64_t wd, int64_t cout, int64_t kh, int64_t kw, int64_t ho, int64_t wo, int stride_h,
                   int stride_w, int pad_h, int pad_w, int64_t groups, cudaStream_t stream);
// y[r, j] = bias[r % channels] for y [rows, cols] (rows = images x channels, NCHW): a pointwise conv's bias,
// laid out as its GEMM's C before the product is added to it.
void launch_fill_channel_bias(Dt dt, const void* bias, void* y, int64_t rows, int64_t cols, int64_t channels,
                              cudaStream_t stream);
void launch_depthwise_conv1d(Dt dt, const void* x, const void* w, const void* bias, void* y, int64_t batch,
                             int64_t steps, int64_t channels, int64_t k, int64_t out_steps, int pad_left,
                             cudaStream_t stream);

// subsampling_stem.cu: x [B, 1, h, w] -> y [B, channels, H2, W2] (include/steno/ops/conv.h, subsampling_stem);
// frames null or [3][batch] int32 (kept frames of x, of the first conv's output, of y).
void launch_subsampling_stem(Dt dt, const void* x, const void* w0, const void* b0, const void* w_dw,
                             const void* b_dw, const int32_t* frames, void* y, int64_t batch, int64_t channels,
                             int64_t h, int64_t w, cudaStream_t stream);
// The widest x (features) the kernel's shared-memory tiles take.
int64_t subsampling_stem_max_width();

}  // namespace steno::ops::cuda
