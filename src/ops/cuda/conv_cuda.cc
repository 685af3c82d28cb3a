// conv2d and depthwise_conv1d on CUDA: the host half of conv.cu (dtype check, sizes, launch check). Shapes were
// checked by src/ops/conv.cc.
#include <cuda_runtime.h>

#include "check.h"
#include "kernels.h"
#include "launch.h"
#include "conv_launch.h"
#include "steno/core/cuda.h"

namespace steno::ops::cuda {

void conv2d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y, int stride_h,
            int stride_w, int pad_h, int pad_w, int groups) {
  detail::check_same_dtype("conv2d", {&x, &w, &bias, &y});
  if (y.numel() == 0) return;
  launch_conv2d(dt_of(x), x.raw(), w.raw(), bias.defined() ? bias.raw() : nullptr, y.raw(), x.dim(0), x.dim(1),
                x.dim(2), x.dim(3), w.dim(0), w.dim(2), w.dim(3), y.dim(2), y.dim(3), stride_h, stride_w, pad_h,
                pad_w, groups, stream_of(ctx));
  check_launch("conv2d");
}

void depthwise_conv1d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                      int pad_left, int pad_right) {
  detail::check_same_dtype("depthwise_conv1d", {&x, &w, &bias, &y});
  if (y.numel() == 0) return;
  launch_depthwise_conv1d(dt_of(x), x.raw(), w.raw(), bias.defined() ? bias.raw() : nullptr, y.raw(), x.dim(0),
                          x.dim(1), x.dim(2), w.dim(1), y.dim(1), pad_left, stream_of(ctx));
  check_launch("depthwise_conv1d");
}

}  // namespace steno::ops::cuda
