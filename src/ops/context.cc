#include "steno/ops/context.h"

#include <map>
#include <mutex>

#include "steno/core/cuda.h"
#include "steno/core/error.h"
#if STENO_HAVE_CUDA
#include "cuda/resources.h"
#endif

namespace steno::ops {

struct Context::KeptTensors {
  std::mutex mu;
  std::map<std::string, Tensor> tensors;
};

Context::Context(Device device, std::shared_ptr<ThreadPool> pool, Allocator* allocator, GemmBackend gemm)
    : device_(device),
      pool_(std::move(pool)),
      allocator_(allocator),
      gemm_(gemm),
      kept_(std::make_shared<KeptTensors>()) {}

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

Context Context::cuda(int device) {
  steno::cuda::check_device(Device::cuda(device));  // without CUDA: throws "built without CUDA"
  return cuda(steno::cuda::Stream(device));
}

Context Context::cuda(steno::cuda::Stream stream) {
#if STENO_HAVE_CUDA
  const int device = stream.device();
  steno::cuda::check_device(Device::cuda(device));
  auto res = std::make_shared<CudaResources>(std::move(stream));
  // Host-side work of a CUDA context (argument checks, small host loops) runs on the calling thread.
  Context ctx(Device::cuda(device), std::make_shared<ThreadPool>(1), &res->allocator, GemmBackend::kOneDnn);
  ctx.cuda_ = std::move(res);
  return ctx;
#else
  steno::cuda::check_device(Device::cuda(stream.device()));  // throws "built without CUDA"
  fail(ErrorCode::kInternal, "unreachable");
#endif
}

const steno::cuda::Stream& Context::stream() const {
#if STENO_HAVE_CUDA
  return cuda_resources().stream;
#else
  fail(ErrorCode::kInvalidArgument, "{} context has no CUDA stream", device_.str());
#endif
}

CudaResources& Context::cuda_resources() const {
  STENO_CHECK(cuda_ != nullptr, "{} context has no CUDA stream", device_.str());
#if STENO_HAVE_CUDA
  return *cuda_;
#else
  fail(ErrorCode::kInternal, "unreachable");
#endif
}

void Context::synchronize() const {
#if STENO_HAVE_CUDA
  if (cuda_ != nullptr) cuda_->stream.synchronize();
#endif
}

Tensor Context::kept(const std::string& key) const {
  std::lock_guard lock(kept_->mu);
  const auto it = kept_->tensors.find(key);
  return it == kept_->tensors.end() ? Tensor() : it->second;
}

void Context::keep(const std::string& key, Tensor t) {
  STENO_CHECK(!t.defined() || t.device() == device_, "keep: a {} tensor in a {} context", t.str(), device_.str());
  std::lock_guard lock(kept_->mu);
  kept_->tensors[key] = std::move(t);
}

Tensor Context::scratch(const Shape& shape, DType dtype) { return Tensor::empty(shape, dtype, device_, allocator_); }

}  // namespace steno::ops
