// Convolutions of the FastConformer encoder.
#pragma once

#include <vector>

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops {

// 2-D convolution, NCHW: x [B, Cin, H, W], w [Cout, Cin/groups, KH, KW], bias [Cout] or undefined,
// y [B, Cout, Ho, Wo] with Ho = (H + 2*pad_h - KH)/stride_h + 1 (likewise Wo). Zero padding. groups == Cin ==
// Cout is the depthwise case (the dw_striding subsampling uses it); groups == 1 with a 1x1 kernel is pointwise.
void conv2d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y, int stride_h,
            int stride_w, int pad_h, int pad_w, int groups);

// Depthwise 1-D convolution over time, channel-last: x [B, T, C], w [C, K], bias [C] or undefined,
// y [B, T + pad_left + pad_right - K + 1, C]. Zero padding (the Conformer conv module uses [4, 4] with K = 9).
void depthwise_conv1d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                      int pad_left, int pad_right);

// The frames kept by masked subsampling at each step of subsampling_stem; rows (time) at or past them are zero.
struct StemFrames {
  std::vector<int64_t> in;   // of x
  std::vector<int64_t> mid;  // of the first conv's output
  std::vector<int64_t> out;  // of y
};

// The first two convolutions of dw_striding subsampling as one op:
//   mid = relu(zero_frames(conv2d(zero_frames(x), w0, b0, stride 2, pad 1), frames.mid)),
//   y   = zero_frames(conv2d(mid, w_dw, b_dw, stride 2, pad 1, groups C), frames.out),
// x [B, 1, H, W], w0 and w_dw [C, 1, 3, 3], b0 and b_dw [C] or undefined, y [B, C, H2, W2] with
// H1 = (H - 1) / 2 + 1, H2 = (H1 - 1) / 2 + 1 (likewise W); `frames` null: no masking. The result equals that
// sequence of ops, each rounding to the dtype. On CUDA it is one kernel that never writes `mid`, the encoder's
// largest activation (C x H/2 x W/2 per item: 3.1 GB at 32 x 60 s with 256 channels in bf16), which the
// unfused ops wrote, rectified and read back (15 of the 90 ms of Sortformer's 32 x 60 s pass on the H200).
void subsampling_stem(Context& ctx, const Tensor& x, const Tensor& w0, const Tensor& b0, const Tensor& w_dw,
                      const Tensor& b_dw, const StemFrames* frames, Tensor& y);

}  // namespace steno::ops
