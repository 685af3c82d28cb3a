// Device-side dtype conversion and channel merge: checks here, kernels in copy.cu.
#include "check.h"
#include "kernels.h"
#include "launch.h"
#include "copy_launch.h"
#include "steno/core/cuda.h"

namespace steno::ops::cuda {

// The one op whose tensors differ in dtype on purpose (the entry point has checked both are float dtypes).
void cast(Context& ctx, const Tensor& src, Tensor& dst) {
  launch_cast(dt_of(src), src.raw(), dt_of(dst), dst.raw(), src.numel(), stream_of(ctx));
  check_launch("cast");
}

void merge_channels(Context& ctx, const Tensor& x, Tensor& y) {
  detail::check_same_dtype("merge_channels", {&x, &y});
  launch_merge_channels(dt_of(x), x.raw(), y.raw(), x.dim(0), x.dim(1), x.dim(2), x.dim(3), stream_of(ctx));
  check_launch("merge_channels");
}

}  // namespace steno::ops::cuda
