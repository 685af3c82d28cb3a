#include "steno/ops/context.h"

namespace steno::ops {

const char* gemm_backend_name(GemmBackend b) { return b == GemmBackend::kOneDnn ? "onednn" : "openblas"; }

GemmBackend parse_gemm_backend(const std::string& name) {
  if (name == "onednn") return GemmBackend::kOneDnn;
  if (name == "openblas") return GemmBackend::kOpenBlas;
  fail(ErrorCode::kInvalidArgument, "unknown GEMM backend '{}' (expected onednn or openblas)", name);
}

Context Context::cpu(int num_threads, GemmBackend gemm) {
  if (num_threads <= 0) num_threads = default_num_threads();
  return Context(Device::cpu(), std::make_shared<ThreadPool>(num_threads), &default_cpu_allocator(), gemm);
}

Tensor Context::scratch(const Shape& shape, DType dtype) { return Tensor::empty(shape, dtype, device_, allocator_); }

}  // namespace steno::ops
