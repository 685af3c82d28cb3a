#include "steno/ops/conv.h"

#include "check.h"
#include "cpu/kernels.h"
#include "steno/ops/activation.h"
#include "steno/ops/copy.h"
#include "steno/ops/elementwise.h"
#if STENO_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace steno::ops {

using detail::check_optional;
using detail::check_tensor;

void conv2d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y, int stride_h,
            int stride_w, int pad_h, int pad_w, int groups) {
  const char* op = "conv2d";
  check_tensor(op, "x", x, ctx);
  check_tensor(op, "w", w, ctx);
  check_tensor(op, "y", y, ctx);
  STENO_CHECK(x.rank() == 4, "conv2d: x must be [B, Cin, H, W], got {}", shape_str(x.shape()));
  STENO_CHECK(w.rank() == 4, "conv2d: w must be [Cout, Cin/groups, KH, KW], got {}", shape_str(w.shape()));
  STENO_CHECK(stride_h >= 1 && stride_w >= 1 && pad_h >= 0 && pad_w >= 0,
              "conv2d: strides must be >= 1 and paddings >= 0, got stride ({}, {}) pad ({}, {})", stride_h, stride_w,
              pad_h, pad_w);
  const int64_t cin = x.dim(1), cout = w.dim(0);
  STENO_CHECK(groups >= 1 && cin % groups == 0 && cout % groups == 0,
              "conv2d: groups {} must divide Cin {} and Cout {}", groups, cin, cout);
  STENO_CHECK(w.dim(1) == cin / groups, "conv2d: w {} needs Cin/groups = {} input channels for x {} and groups {}",
              shape_str(w.shape()), cin / groups, shape_str(x.shape()), groups);
  const int64_t kh = w.dim(2), kw = w.dim(3);
  const int64_t hp = x.dim(2) + 2 * pad_h, wp = x.dim(3) + 2 * pad_w;
  STENO_CHECK(kh >= 1 && kw >= 1 && hp >= kh && wp >= kw,
              "conv2d: kernel {}x{} does not fit the padded input {}x{} (x {}, pad ({}, {}))", kh, kw, hp, wp,
              shape_str(x.shape()), pad_h, pad_w);
  const Shape want = {x.dim(0), cout, (hp - kh) / stride_h + 1, (wp - kw) / stride_w + 1};
  STENO_CHECK(y.shape() == want, "conv2d: y must be {} for x {}, w {}, stride ({}, {}), pad ({}, {}); got {}",
              shape_str(want), shape_str(x.shape()), shape_str(w.shape()), stride_h, stride_w, pad_h, pad_w,
              shape_str(y.shape()));
  check_optional(op, "bias", bias, {cout}, ctx);
  STENO_CHECK(y.numel() == 0 || y.raw() != x.raw(), "conv2d: y must not alias x");
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL(op, cuda::conv2d(ctx, x, w, bias, y, stride_h, stride_w, pad_h, pad_w, groups));
    return;
  }
  cpu::conv2d(ctx, x, w, bias, y, stride_h, stride_w, pad_h, pad_w, groups);
}

void depthwise_conv1d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                      int pad_left, int pad_right) {
  const char* op = "depthwise_conv1d";
  check_tensor(op, "x", x, ctx);
  check_tensor(op, "w", w, ctx);
  check_tensor(op, "y", y, ctx);
  STENO_CHECK(x.rank() == 3, "depthwise_conv1d: x must be [B, T, C], got {}", shape_str(x.shape()));
  const int64_t c = x.dim(2);
  STENO_CHECK(w.rank() == 2 && w.dim(0) == c && w.dim(1) >= 1, "depthwise_conv1d: w must be [C={}, K], got {}", c,
              shape_str(w.shape()));
  STENO_CHECK(pad_left >= 0 && pad_right >= 0, "depthwise_conv1d: paddings must be >= 0, got [{}, {}]", pad_left,
              pad_right);
  const int64_t out_steps = x.dim(1) + pad_left + pad_right - w.dim(1) + 1;
  STENO_CHECK(out_steps >= 0, "depthwise_conv1d: kernel {} is longer than the padded input of {} steps", w.dim(1),
              x.dim(1) + pad_left + pad_right);
  const Shape want = {x.dim(0), out_steps, c};
  STENO_CHECK(y.shape() == want, "depthwise_conv1d: y must be {} for x {}, K {}, pad [{}, {}]; got {}",
              shape_str(want), shape_str(x.shape()), w.dim(1), pad_left, pad_right, shape_str(y.shape()));
  check_optional(op, "bias", bias, {c}, ctx);
  STENO_CHECK(y.numel() == 0 || y.raw() != x.raw(), "depthwise_conv1d: y must not alias x");
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL(op, cuda::depthwise_conv1d(ctx, x, w, bias, y, pad_left, pad_right));
    return;
  }
  cpu::depthwise_conv1d(ctx, x, w, bias, y, pad_left, pad_right);
}

void subsampling_stem(Context& ctx, const Tensor& x, const Tensor& w0, const Tensor& b0, const Tensor& w_dw,
                      const Tensor& b_dw, const StemFrames* frames, Tensor& y) {
  const char* op = "subsampling_stem";
  check_tensor(op, "x", x, ctx);
  check_tensor(op, "w0", w0, ctx);
  check_tensor(op, "w_dw", w_dw, ctx);
  check_tensor(op, "y", y, ctx);
  STENO_CHECK(x.rank() == 4 && x.dim(1) == 1, "{}: x must be [B, 1, H, W], got {}", op, shape_str(x.shape()));
  const int64_t batch = x.dim(0), c = w0.dim(0);
  STENO_CHECK(w0.shape() == Shape({c, 1, 3, 3}) && w_dw.shape() == Shape({c, 1, 3, 3}),
              "{}: w0 and w_dw must be [C, 1, 3, 3], got {} and {}", op, shape_str(w0.shape()), shape_str(w_dw.shape()));
  check_optional(op, "b0", b0, {c}, ctx);
  check_optional(op, "b_dw", b_dw, {c}, ctx);
  STENO_CHECK(x.dim(2) >= 1 && x.dim(3) >= 1, "{}: x {} has no frames or no features", op, shape_str(x.shape()));
  const auto half = [](int64_t n) { return (n - 1) / 2 + 1; };  // 3x3, stride 2, padding 1
  const int64_t h1 = half(x.dim(2)), w1 = half(x.dim(3));
  const Shape want = {batch, c, half(h1), half(w1)};
  STENO_CHECK(y.shape() == want, "{}: y must be {} for x {}, got {}", op, shape_str(want), shape_str(x.shape()),
              shape_str(y.shape()));
  if (frames != nullptr)
    STENO_CHECK(std::ssize(frames->in) == batch && std::ssize(frames->mid) == batch && std::ssize(frames->out) == batch,
                "{}: frames need {} entries per step, got {}, {} and {}", op, batch, frames->in.size(),
                frames->mid.size(), frames->out.size());
  if (y.numel() == 0) return;
#if STENO_HAVE_CUDA
  if (!ctx.device().is_cpu() && cuda::subsampling_stem_fits(x)) {
    STENO_CUDA_KERNEL(op, cuda::subsampling_stem(ctx, x, w0, b0, w_dw, b_dw, frames, y));
    return;
  }
#endif
  // The sequence itself: the CPU, and inputs wider than the CUDA kernel's tiles.
  Tensor in = x;
  if (frames != nullptr) {
    in = clone(ctx, x);
    zero_padded_frames(ctx, in, 2, frames->in);
  }
  Tensor mid = ctx.scratch({batch, c, h1, w1}, x.dtype());
  conv2d(ctx, in, w0, b0, mid, 2, 2, 1, 1, 1);
  if (frames != nullptr) zero_padded_frames(ctx, mid, 2, frames->mid);
  relu(ctx, mid, mid);
  conv2d(ctx, mid, w_dw, b_dw, y, 2, 2, 1, 1, static_cast<int>(c));
  if (frames != nullptr) zero_padded_frames(ctx, y, 2, frames->out);
}

}  // namespace steno::ops
