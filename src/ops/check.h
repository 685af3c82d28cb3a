// Argument checks shared by the op entry points (src/ops/<group>.cc). Private to steno_ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "steno/core/error.h"
#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops::detail {

// `t` is defined, fp32 and on the context's device.
inline void check_tensor(const char* op, const char* name, const Tensor& t, const Context& ctx) {
  STENO_CHECK(t.defined(), "{}: {} is undefined", op, name);
  STENO_CHECK(t.dtype() == DType::kF32, "{}: {} must be f32, got {}", op, name, t.str());
  STENO_CHECK(t.device() == ctx.device(), "{}: {} is on {} but the context runs on {}", op, name, t.device().str(),
              ctx.device().str());
}

// An optional tensor (a bias): undefined, or as check_tensor with shape `shape`.
inline void check_optional(const char* op, const char* name, const Tensor& t, const Shape& shape,
                           const Context& ctx) {
  if (!t.defined()) return;
  check_tensor(op, name, t, ctx);
  STENO_CHECK(t.shape() == shape, "{}: {} must have shape {}, got {}", op, name, shape_str(shape),
              shape_str(t.shape()));
}

inline void check_shape(const char* op, const char* name, const Tensor& t, const Shape& shape) {
  STENO_CHECK(t.shape() == shape, "{}: {} must have shape {}, got {}", op, name, shape_str(shape),
              shape_str(t.shape()));
}

// Validates batch lengths: `lengths.size() == batch`, each in [0, max_len].
inline void check_lengths(const char* op, const std::vector<int64_t>& lengths, int64_t batch, int64_t max_len) {
  STENO_CHECK(static_cast<int64_t>(lengths.size()) == batch, "{}: {} lengths for a batch of {}", op,
              lengths.size(), batch);
  for (size_t b = 0; b < lengths.size(); ++b)
    STENO_CHECK(lengths[b] >= 0 && lengths[b] <= max_len, "{}: lengths[{}] = {} is outside [0, {}]", op, b,
                lengths[b], max_len);
}

// The device has no backend in this build.
[[noreturn]] inline void unavailable(const char* op, Device device) {
  fail(ErrorCode::kUnavailable, "{}: no kernel for {} (CUDA backend not built)", op, device.str());
}

}  // namespace steno::ops::detail
