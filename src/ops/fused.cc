#include "steno/ops/fused.h"

#include "check.h"
#include "cpu/kernels.h"
#if STENO_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace steno::ops {

using detail::check_optional;
using detail::check_shape;
using detail::check_tensor;

void add_layer_norm(Context& ctx, Tensor& x, const Tensor& h, float alpha, const Tensor& gamma, const Tensor& beta,
                    float eps, Tensor& y) {
  const char* op = "add_layer_norm";
  using Named = std::pair<const char*, const Tensor*>;
  for (auto [name, t] : {Named{"x", &x}, {"h", &h}, {"gamma", &gamma}, {"beta", &beta}, {"y", &y}})
    check_tensor(op, name, *t, ctx);
  STENO_CHECK(x.rank() >= 1, "add_layer_norm: x must have at least one dimension, got {}", shape_str(x.shape()));
  STENO_CHECK(h.shape() == x.shape() && y.shape() == x.shape(), "add_layer_norm: shapes differ: x {}, h {}, y {}",
              shape_str(x.shape()), shape_str(h.shape()), shape_str(y.shape()));
  check_shape(op, "gamma", gamma, {x.dim(-1)});
  check_shape(op, "beta", beta, {x.dim(-1)});
  STENO_CHECK(eps >= 0.0f, "add_layer_norm: eps must be >= 0, got {}", eps);
  STENO_CHECK(x.numel() == 0 || (y.raw() != h.raw() && x.raw() != h.raw()), "add_layer_norm: h must not alias x or y");
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL(op, cuda::add_layer_norm(ctx, x, h, alpha, gamma, beta, eps, y));
    return;
  }
  cpu::add(ctx, x, h, alpha, x);
  cpu::layer_norm(ctx, x, gamma, beta, eps, y);
}

void gated_depthwise_silu(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, int pad_left,
                          const std::vector<int64_t>& lengths, Tensor& y) {
  const char* op = "gated_depthwise_silu";
  check_tensor(op, "x", x, ctx);
  check_tensor(op, "w", w, ctx);
  check_tensor(op, "y", y, ctx);
  STENO_CHECK(x.rank() == 3 && x.dim(2) % 2 == 0, "gated_depthwise_silu: x must be [B, T, 2C], got {}",
              shape_str(x.shape()));
  const int64_t batch = x.dim(0), steps = x.dim(1), c = x.dim(2) / 2;
  STENO_CHECK(w.rank() == 2 && w.dim(0) == c && w.dim(1) >= 1, "gated_depthwise_silu: w must be [C={}, K], got {}",
              c, shape_str(w.shape()));
  const int64_t k = w.dim(1);
  STENO_CHECK(pad_left >= 0 && pad_left < k, "gated_depthwise_silu: pad_left {} must be in [0, K={})", pad_left, k);
  check_shape(op, "y", y, {batch, steps, c});
  check_optional(op, "bias", bias, {c}, ctx);
  detail::check_lengths(op, lengths, batch, steps);
  STENO_CHECK(y.numel() == 0 || y.raw() != x.raw(), "gated_depthwise_silu: y must not alias x");
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL(op, cuda::gated_depthwise_silu(ctx, x, w, bias, pad_left, lengths, y));
    return;
  }
  Tensor gated = ctx.scratch({batch, steps, c});
  cpu::glu(ctx, x, gated);
  cpu::zero_padded_frames(ctx, gated, 1, lengths);
  cpu::depthwise_conv1d(ctx, gated, w, bias, y, pad_left, static_cast<int>(k - 1 - pad_left));
  cpu::silu(ctx, y, y);
}

}  // namespace steno::ops
