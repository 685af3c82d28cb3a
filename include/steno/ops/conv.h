// Convolutions of the FastConformer encoder.
#pragma once

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

}  // namespace steno::ops
