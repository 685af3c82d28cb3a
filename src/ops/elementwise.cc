#include "steno/ops/elementwise.h"

#include "check.h"
#include "cpu/kernels.h"
#if STENO_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace steno::ops {

using detail::check_tensor;

void add(Context& ctx, const Tensor& a, const Tensor& b, float alpha, Tensor& y) {
  check_tensor("add", "a", a, ctx);
  check_tensor("add", "b", b, ctx);
  check_tensor("add", "y", y, ctx);
  STENO_CHECK(a.shape() == b.shape() && a.shape() == y.shape(), "add: shapes differ: a {}, b {}, y {}",
              shape_str(a.shape()), shape_str(b.shape()), shape_str(y.shape()));
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("add", cuda::add(ctx, a, b, alpha, y));
    return;
  }
  cpu::add(ctx, a, b, alpha, y);
}

void scale(Context& ctx, Tensor& x, float s) {
  check_tensor("scale", "x", x, ctx);
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("scale", cuda::scale(ctx, x, s));
    return;
  }
  cpu::scale(ctx, x, s);
}

void zero_padded_frames(Context& ctx, Tensor& x, int time_axis, const std::vector<int64_t>& lengths) {
  check_tensor("zero_padded_frames", "x", x, ctx);
  const int axis = time_axis < 0 ? time_axis + x.rank() : time_axis;
  STENO_CHECK(x.rank() >= 2 && axis >= 1 && axis < x.rank(),
              "zero_padded_frames: time_axis {} must name a dimension after the batch of x {}", time_axis,
              shape_str(x.shape()));
  detail::check_lengths("zero_padded_frames", lengths, x.dim(0), x.dim(axis));
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("zero_padded_frames", cuda::zero_padded_frames(ctx, x, axis, lengths));
    return;
  }
  cpu::zero_padded_frames(ctx, x, axis, lengths);
}

}  // namespace steno::ops
