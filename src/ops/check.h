// Argument checks shared by the op entry points (src/ops/<group>.cc). Private to steno_ops.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "steno/core/error.h"
#include "steno/core/tensor.h"
#include "steno/ops/context.h"
#include "steno/ops/profiler.h"

namespace steno::ops::detail {

// Times the op it encloses when the context has a profiler (steno/ops/profiler.h).
class ProfileScope {
 public:
  ProfileScope(const Context& ctx, const char* op) : ctx_(ctx), profiler_(ctx.profiler()) {
    if (profiler_) profiler_->begin(ctx, op);
  }
  ~ProfileScope() {
    if (profiler_) profiler_->end(ctx_);
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  const Context& ctx_;
  OpProfiler* profiler_;
};

// The CUDA kernel of an op, or (in a build without CUDA) the "not built" error. The call's tokens vanish without
// CUDA, so src/ops/cuda/ need not exist there.
#if STENO_HAVE_CUDA
#define STENO_CUDA_KERNEL(op, call)                                         \
  do {                                                                      \
    ::steno::ops::detail::ProfileScope steno_profile_scope_(ctx, op);       \
    call;                                                                   \
  } while (0)
#else
#define STENO_CUDA_KERNEL(op, call) ::steno::ops::detail::unavailable(op, ctx.device())
#endif

// `t` is defined, on the context's device, and of a compute dtype there: f32 on the CPU; f32, f16 or bf16 on
// CUDA (the kernels accumulate in f32). Every float tensor of one op call has one dtype (check_same_dtype).
inline void check_tensor(const char* op, const char* name, const Tensor& t, const Context& ctx) {
  STENO_CHECK(t.defined(), "{}: {} is undefined", op, name);
  STENO_CHECK(t.device() == ctx.device(), "{}: {} is on {} but the context runs on {}", op, name, t.device().str(),
              ctx.device().str());
  if (ctx.device().is_cpu())
    STENO_CHECK(t.dtype() == DType::kF32, "{}: {} must be f32 on the CPU, got {}", op, name, t.str());
  else
    STENO_CHECK(t.dtype() == DType::kF32 || t.dtype() == DType::kF16 || t.dtype() == DType::kBF16,
                "{}: {} must be f32, f16 or bf16, got {}", op, name, t.str());
}

// All defined tensors in `ts` share the first one's dtype.
inline void check_same_dtype(const char* op, std::initializer_list<const Tensor*> ts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts) {
    if (t == nullptr || !t->defined()) continue;
    if (first == nullptr) first = t;
    STENO_CHECK(t->dtype() == first->dtype(), "{}: mixed dtypes ({} and {}); convert with ops::cast first", op,
                first->str(), t->str());
  }
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
