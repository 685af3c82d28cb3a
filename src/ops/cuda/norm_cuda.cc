// Layer norm and batch norm on CUDA: dtype checks here, kernels in norm.cu.
#include "check.h"
#include "kernels.h"
#include "launch.h"
#include "norm_launch.h"
#include "steno/core/cuda.h"

namespace steno::ops::cuda {

void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& y) {
  detail::check_same_dtype("layer_norm", {&x, &gamma, &beta, &y});
  const int64_t d = x.dim(-1);
  const int64_t rows = d == 0 ? 0 : x.numel() / d;
  launch_layer_norm(dt_of(x), x.raw(), gamma.raw(), beta.raw(), eps, y.raw(), rows, d, stream_of(ctx));
  check_launch("layer_norm");
}

void batch_norm(Context& ctx, const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                const Tensor& beta, float eps, Tensor& y) {
  detail::check_same_dtype("batch_norm", {&x, &mean, &var, &gamma, &beta, &y});
  const int64_t c = x.dim(-1);
  const int64_t rows = c == 0 ? 0 : x.numel() / c;
  launch_batch_norm(dt_of(x), x.raw(), mean.raw(), var.raw(), gamma.raw(), beta.raw(), eps, y.raw(), rows, c,
                    stream_of(ctx));
  check_launch("batch_norm");
}

}  // namespace steno::ops::cuda
