// What the engine's CUDA tests read back from the device.
#pragma once

#include <vector>

#include "steno/core/tensor.h"
#include "steno/ops/context.h"
#include "steno/ops/copy.h"

namespace steno::testing {

// A device tensor's values on the host, as f32.
inline std::vector<float> download(ops::Context& ctx, const Tensor& t) {
  Tensor f32 = ctx.scratch(t.shape(), DType::kF32);
  ops::cast(ctx, t, f32);
  Tensor host = Tensor::empty(t.shape());
  ops::copy(ctx, f32, host);
  ctx.synchronize();
  return host.to_vector();
}

}  // namespace steno::testing
