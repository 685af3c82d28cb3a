// Device-side dtype conversion and channel merge: checks here, kernels in copy.cu.
#include <cuda_runtime.h>

#include "check.h"
#include "kernels.h"
#include "launch.h"
#include "copy_launch.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"

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

void copy_frames(Context& ctx, const void* src, int64_t src_row, void* dst, int64_t dst_row, int64_t kept,
                 int64_t rows) {
  if (rows == 0 || dst_row == 0) return;
  const cudaStream_t stream = stream_of(ctx);
  cudaError_t err = cudaSuccess;
  if (kept > 0)
    err = cudaMemcpy2DAsync(dst, static_cast<size_t>(dst_row), src, static_cast<size_t>(src_row),
                            static_cast<size_t>(kept), static_cast<size_t>(rows), cudaMemcpyDeviceToDevice, stream);
  if (err == cudaSuccess && dst_row > kept)
    err = cudaMemset2DAsync(static_cast<char*>(dst) + kept, static_cast<size_t>(dst_row), 0,
                            static_cast<size_t>(dst_row - kept), static_cast<size_t>(rows), stream);
  if (err != cudaSuccess) fail(ErrorCode::kInternal, "copy_frames: {}", cudaGetErrorString(err));
}

}  // namespace steno::ops::cuda
