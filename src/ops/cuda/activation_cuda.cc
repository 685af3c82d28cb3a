// Activations and softmax on CUDA: dtype checks here, kernels in activation.cu.
#include "check.h"
#include "kernels.h"
#include "launch.h"
#include "activation_launch.h"
#include "steno/core/cuda.h"

namespace steno::ops::cuda {

void relu(Context& ctx, const Tensor& x, Tensor& y) {
  detail::check_same_dtype("relu", {&x, &y});
  launch_relu(dt_of(x), x.raw(), y.raw(), x.numel(), stream_of(ctx));
  check_launch("relu");
}

void silu(Context& ctx, const Tensor& x, Tensor& y) {
  detail::check_same_dtype("silu", {&x, &y});
  launch_silu(dt_of(x), x.raw(), y.raw(), x.numel(), stream_of(ctx));
  check_launch("silu");
}

void sigmoid(Context& ctx, const Tensor& x, Tensor& y) {
  detail::check_same_dtype("sigmoid", {&x, &y});
  launch_sigmoid(dt_of(x), x.raw(), y.raw(), x.numel(), stream_of(ctx));
  check_launch("sigmoid");
}

void glu(Context& ctx, const Tensor& x, Tensor& y) {
  detail::check_same_dtype("glu", {&x, &y});
  const int64_t c = y.dim(-1);
  const int64_t rows = c == 0 ? 0 : y.numel() / c;
  launch_glu(dt_of(x), x.raw(), y.raw(), rows, c, stream_of(ctx));
  check_launch("glu");
}

void softmax(Context& ctx, const Tensor& x, Tensor& y) {
  detail::check_same_dtype("softmax", {&x, &y});
  const int64_t n = x.dim(-1);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  launch_softmax(dt_of(x), x.raw(), y.raw(), rows, n, stream_of(ctx));
  check_launch("softmax");
}

}  // namespace steno::ops::cuda
