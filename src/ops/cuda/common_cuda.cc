#include <algorithm>

#include "kernels.h"
#include "launch.h"
#include "lengths_graph.h"
#include "resources.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"

namespace steno::ops::cuda {

Dt dt_of(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kF32: return Dt::kF32;
    case DType::kF16: return Dt::kF16;
    case DType::kBF16: return Dt::kBF16;
    default: fail(ErrorCode::kInvalidArgument, "CUDA kernels take f32, f16 or bf16, got {}", t.str());
  }
}

Tensor upload_lengths(Context& ctx, const std::vector<int64_t>& lengths) {
  CudaResources& res = ctx.cuda_resources();
  if (res.capture != nullptr) return res.capture->slot(lengths);  // a graph's parameters, never a frozen copy
  if (res.lengths_device.defined() && res.lengths_host == lengths) return res.lengths_device;
  std::vector<int32_t> host(lengths.size());
  std::transform(lengths.begin(), lengths.end(), host.begin(), [](int64_t v) { return static_cast<int32_t>(v); });
  Tensor dev = ctx.scratch({static_cast<int64_t>(host.size())}, DType::kI32);
  steno::cuda::memcpy_async(dev.raw(), host.data(), host.size() * sizeof(int32_t), ctx.stream());
  res.lengths_host = lengths;
  res.lengths_device = dev;  // never written again: a new vector gets a new tensor
  return dev;
}

}  // namespace steno::ops::cuda
