#include "steno/ops/norm.h"

#include "check.h"
#include "cpu/kernels.h"
#if STENO_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace steno::ops {

using detail::check_shape;
using detail::check_tensor;

void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y) {
  check_tensor("layer_norm", "x", x, ctx);
  check_tensor("layer_norm", "gamma", gamma, ctx);
  check_tensor("layer_norm", "beta", beta, ctx);
  check_tensor("layer_norm", "y", y, ctx);
  STENO_CHECK(x.rank() >= 1, "layer_norm: x must have at least one dimension, got {}", shape_str(x.shape()));
  STENO_CHECK(y.shape() == x.shape(), "layer_norm: y {} must have x's shape {}", shape_str(y.shape()),
              shape_str(x.shape()));
  check_shape("layer_norm", "gamma", gamma, {x.dim(-1)});
  check_shape("layer_norm", "beta", beta, {x.dim(-1)});
  STENO_CHECK(eps >= 0.0f, "layer_norm: eps must be >= 0, got {}", eps);
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("layer_norm", cuda::layer_norm(ctx, x, gamma, beta, eps, y));
    return;
  }
  cpu::layer_norm(ctx, x, gamma, beta, eps, y);
}

void batch_norm(Context& ctx, const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                const Tensor& beta, float eps, Tensor& y) {
  check_tensor("batch_norm", "x", x, ctx);
  check_tensor("batch_norm", "y", y, ctx);
  STENO_CHECK(x.rank() >= 1, "batch_norm: x must have at least one dimension, got {}", shape_str(x.shape()));
  STENO_CHECK(y.shape() == x.shape(), "batch_norm: y {} must have x's shape {}", shape_str(y.shape()),
              shape_str(x.shape()));
  const Shape c = {x.dim(-1)};
  for (auto [name, t] : {std::pair{"mean", &mean}, {"var", &var}, {"gamma", &gamma}, {"beta", &beta}}) {
    check_tensor("batch_norm", name, *t, ctx);
    check_shape("batch_norm", name, *t, c);
  }
  STENO_CHECK(eps >= 0.0f, "batch_norm: eps must be >= 0, got {}", eps);
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("batch_norm", cuda::batch_norm(ctx, x, mean, var, gamma, beta, eps, y));
    return;
  }
  cpu::batch_norm(ctx, x, mean, var, gamma, beta, eps, y);
}

void fold_batch_norm(Tensor& w, Tensor& bias, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                     const Tensor& beta, float eps) {
  const char* op = "fold_batch_norm";
  STENO_CHECK(w.defined() && w.dtype() == DType::kF32 && w.rank() >= 1, "{}: w must be a defined f32 [C, ...], got {}",
              op, w.defined() ? w.str() : "undefined");
  // Folding happens once, at load time, on host weights.
  if (!w.device().is_cpu()) detail::unavailable(op, w.device());
  const Shape c = {w.dim(0)};
  for (auto [name, t] : {std::pair{"mean", &mean}, {"var", &var}, {"gamma", &gamma}, {"beta", &beta}}) {
    STENO_CHECK(t->defined() && t->dtype() == DType::kF32 && t->device().is_cpu(),
                "{}: {} must be a defined f32 CPU tensor, got {}", op, name, t->defined() ? t->str() : "undefined");
    check_shape(op, name, *t, c);
  }
  if (bias.defined()) {
    STENO_CHECK(bias.dtype() == DType::kF32 && bias.device().is_cpu(), "{}: bias must be f32 on cpu, got {}", op,
                bias.str());
    check_shape(op, "bias", bias, c);
  }
  STENO_CHECK(eps >= 0.0f, "{}: eps must be >= 0, got {}", op, eps);
  cpu::fold_batch_norm(w, bias, mean, var, gamma, beta, eps);
}

}  // namespace steno::ops
