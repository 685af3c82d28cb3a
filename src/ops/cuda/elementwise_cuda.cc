// Elementwise glue on CUDA: dtype checks and shape arithmetic here, kernels in elementwise.cu.
#include <algorithm>

#include "check.h"
#include "kernels.h"
#include "launch.h"
#include "elementwise_launch.h"
#include "resources.h"
#include "steno/core/cuda.h"

namespace steno::ops::cuda {

void add(Context& ctx, const Tensor& a, const Tensor& b, float alpha, Tensor& y) {
  detail::check_same_dtype("add", {&a, &b, &y});
  launch_add(dt_of(a), a.raw(), b.raw(), alpha, y.raw(), y.numel(), stream_of(ctx));
  check_launch("add");
}

void scale(Context& ctx, Tensor& x, float s) {
  launch_scale(dt_of(x), x.raw(), s, x.numel(), stream_of(ctx));
  check_launch("scale");
}

void zero_padded_frames(Context& ctx, Tensor& x, int time_axis, const std::vector<int64_t>& lengths) {
  const int64_t batch = x.dim(0), steps = x.dim(time_axis);
  int64_t outer = 1, inner = 1;
  for (int d = 1; d < time_axis; ++d) outer *= x.dim(d);
  for (int d = time_axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  // Nothing is padded when every sequence is full length (the common case of a single request): skip the upload.
  // Not while a graph captures: its replays may have shorter clips.
  const bool full = std::all_of(lengths.begin(), lengths.end(), [&](int64_t len) { return len == steps; });
  if (x.numel() == 0 || (full && ctx.cuda_resources().capture == nullptr)) return;
  const Tensor dev_lengths = upload_lengths(ctx, lengths);
  // dev_lengths is freed in stream order after the kernel, so it may go out of scope at once.
  launch_zero_padded_frames(dt_of(x), x.raw(), static_cast<const int32_t*>(dev_lengths.raw()), batch, outer, steps,
                            inner, stream_of(ctx));
  check_launch("zero_padded_frames");
}

}  // namespace steno::ops::cuda
