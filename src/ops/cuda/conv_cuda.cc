// conv2d and depthwise_conv1d on CUDA: the host half of conv.cu (dtype check, sizes, launch check). Shapes were
// checked by src/ops/conv.cc.
#include <cuda_runtime.h>

#include "check.h"
#include "kernels.h"
#include "launch.h"
#include "conv_launch.h"
#include "steno/core/cuda.h"

namespace steno::ops::cuda {

namespace {

// A 1x1 conv with stride 1, no padding and one group: per image, a GEMM.
bool is_pointwise(const Tensor& w, int stride_h, int stride_w, int pad_h, int pad_w, int groups) {
  return w.dim(2) == 1 && w.dim(3) == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0 &&
         groups == 1;
}

// y_b[Cout, HW] = w[Cout, Cin] · x_b[Cin, HW] (+ bias per row) for every image b, on cuBLASLt. The bias is
// written into y first and the product added to it (beta = 1), so each output is rounded to its dtype once, as
// in the other kernels.
void pointwise_conv2d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y) {
  const Dt dt = dt_of(x);
  const int64_t batch = x.dim(0), cin = x.dim(1), cout = w.dim(0), hw = x.dim(2) * x.dim(3);
  const size_t es = dtype_size(x.dtype());
  if (bias.defined()) launch_fill_channel_bias(dt, bias.raw(), y.raw(), batch * cout, hw, cout, stream_of(ctx));
  check_launch("conv2d (pointwise bias)");
  const auto* xp = static_cast<const uint8_t*>(x.raw());
  auto* yp = static_cast<uint8_t*>(y.raw());
  for (int64_t b = 0; b < batch; ++b)
    gemm_dt(ctx, dt, false, false, cout, hw, cin, w.raw(), cin, xp + b * cin * hw * es, hw,
            bias.defined() ? 1.0f : 0.0f, yp + b * cout * hw * es, hw);
}

}  // namespace

void conv2d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y, int stride_h,
            int stride_w, int pad_h, int pad_w, int groups) {
  detail::check_same_dtype("conv2d", {&x, &w, &bias, &y});
  if (y.numel() == 0) return;
  if (is_pointwise(w, stride_h, stride_w, pad_h, pad_w, groups) && x.dim(1) > 0) {
    pointwise_conv2d(ctx, x, w, bias, y);
    return;
  }
  STENO_CHECK(x.dim(1) != groups || y.dim(2) * y.dim(3) < (int64_t{1} << 31),
              "conv2d: CUDA direct kernel takes output planes below 2^31 elements, got {} x {}", y.dim(2), y.dim(3));
  launch_conv2d(dt_of(x), x.raw(), w.raw(), bias.defined() ? bias.raw() : nullptr, y.raw(), x.dim(0), x.dim(1),
                x.dim(2), x.dim(3), w.dim(0), w.dim(2), w.dim(3), y.dim(2), y.dim(3), stride_h, stride_w, pad_h,
                pad_w, groups, stream_of(ctx));
  check_launch("conv2d");
}

bool subsampling_stem_fits(const Tensor& x) {
  return x.dim(3) <= subsampling_stem_max_width() && x.dim(2) < (int64_t{1} << 30) && x.dim(0) <= 65535;
}

void subsampling_stem(Context& ctx, const Tensor& x, const Tensor& w0, const Tensor& b0, const Tensor& w_dw,
                      const Tensor& b_dw, const StemFrames* frames, Tensor& y) {
  detail::check_same_dtype("subsampling_stem", {&x, &w0, &b0, &w_dw, &b_dw, &y});
  Tensor frames_dev;
  if (frames != nullptr) {
    std::vector<int64_t> all = frames->in;
    all.insert(all.end(), frames->mid.begin(), frames->mid.end());
    all.insert(all.end(), frames->out.begin(), frames->out.end());
    frames_dev = upload_lengths(ctx, all);
  }
  launch_subsampling_stem(dt_of(x), x.raw(), w0.raw(), b0.defined() ? b0.raw() : nullptr, w_dw.raw(),
                          b_dw.defined() ? b_dw.raw() : nullptr,
                          frames_dev.defined() ? frames_dev.data<int32_t>() : nullptr, y.raw(), x.dim(0), w0.dim(0),
                          x.dim(2), x.dim(3), stream_of(ctx));
  check_launch("subsampling_stem");
}

void depthwise_conv1d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                      int pad_left, int pad_right) {
  detail::check_same_dtype("depthwise_conv1d", {&x, &w, &bias, &y});
  if (y.numel() == 0) return;
  STENO_CHECK(x.dim(0) <= 65535, "depthwise_conv1d: CUDA kernel takes at most 65535 batch items, got {}", x.dim(0));
  launch_depthwise_conv1d(dt_of(x), x.raw(), w.raw(), bias.defined() ? bias.raw() : nullptr, y.raw(), x.dim(0),
                          x.dim(1), x.dim(2), w.dim(1), y.dim(1), pad_left, stream_of(ctx));
  check_launch("depthwise_conv1d");
}

}  // namespace steno::ops::cuda
