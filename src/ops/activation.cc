#include "steno/ops/activation.h"

#include "check.h"
#include "cpu/kernels.h"
#if STENO_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace steno::ops {

using detail::check_tensor;

namespace {

void check_same(const char* op, Context& ctx, const Tensor& x, const Tensor& y) {
  check_tensor(op, "x", x, ctx);
  check_tensor(op, "y", y, ctx);
  STENO_CHECK(x.shape() == y.shape(), "{}: y {} must have x's shape {}", op, shape_str(y.shape()),
              shape_str(x.shape()));
}

}  // namespace

void relu(Context& ctx, const Tensor& x, Tensor& y) {
  check_same("relu", ctx, x, y);
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("relu", cuda::relu(ctx, x, y));
    return;
  }
  cpu::relu(ctx, x, y);
}

void silu(Context& ctx, const Tensor& x, Tensor& y) {
  check_same("silu", ctx, x, y);
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("silu", cuda::silu(ctx, x, y));
    return;
  }
  cpu::silu(ctx, x, y);
}

void sigmoid(Context& ctx, const Tensor& x, Tensor& y) {
  check_same("sigmoid", ctx, x, y);
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("sigmoid", cuda::sigmoid(ctx, x, y));
    return;
  }
  cpu::sigmoid(ctx, x, y);
}

void glu(Context& ctx, const Tensor& x, Tensor& y) {
  check_tensor("glu", "x", x, ctx);
  check_tensor("glu", "y", y, ctx);
  STENO_CHECK(x.rank() >= 1 && x.dim(-1) % 2 == 0, "glu: the last dimension of x {} must be even",
              shape_str(x.shape()));
  Shape want = x.shape();
  want.back() /= 2;
  STENO_CHECK(y.shape() == want, "glu: y must be {} for x {}, got {}", shape_str(want), shape_str(x.shape()),
              shape_str(y.shape()));
  STENO_CHECK(y.numel() == 0 || y.raw() != x.raw(), "glu: y must not alias x");
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("glu", cuda::glu(ctx, x, y));
    return;
  }
  cpu::glu(ctx, x, y);
}

void softmax(Context& ctx, const Tensor& x, Tensor& y) {
  check_same("softmax", ctx, x, y);
  STENO_CHECK(x.rank() >= 1, "softmax: x must have at least one dimension, got {}", shape_str(x.shape()));
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("softmax", cuda::softmax(ctx, x, y));
    return;
  }
  cpu::softmax(ctx, x, y);
}

}  // namespace steno::ops
