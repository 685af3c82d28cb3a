// The execution context every op takes: which device it runs on and the resources it may use there. One
// Context per executor (a lane, a worker); ops never keep global state, so several contexts can run at once.
#pragma once

#include "steno/core/allocator.h"
#include "steno/core/device.h"
#include "steno/core/tensor.h"
#include "steno/core/thread_pool.h"

#include <memory>
#include <string>

namespace steno::cuda {
class Stream;
}

namespace steno::ops {

class OpProfiler;  // steno/ops/profiler.h

// A CUDA context's resources (stream, caching pool, cuBLASLt handle and workspace): src/ops/cuda/resources.h.
struct CudaResources;

// The CPU GEMM library. oneDNN is the default (fastest measured on AVX-512); OpenBLAS is kept as a baseline.
enum class GemmBackend { kOneDnn, kOpenBlas };
const char* gemm_backend_name(GemmBackend b);
GemmBackend parse_gemm_backend(const std::string& name);  // "onednn" | "openblas"; throws otherwise

class Context {
 public:
  // A CPU context using `num_threads` threads (0 = default_num_threads()) and the default host allocator.
  static Context cpu(int num_threads = 0, GemmBackend gemm = GemmBackend::kOneDnn);
  // A CUDA context on `device`: its own stream, a caching stream-ordered memory pool and a cuBLASLt handle.
  // Several contexts on one device run concurrently and can share read-only tensors (one weight copy).
  // Throws kUnavailable without a CUDA build or device. Copies of a Context share its resources.
  static Context cuda(int device = 0);
  // A CUDA context like cuda(device), on `stream` (on its device): e.g. a steno::cuda::GreenContext's stream, so
  // that every op of the context runs on the green context's SMs. Takes the stream over.
  static Context cuda(steno::cuda::Stream stream);

  Device device() const { return device_; }
  int num_threads() const { return pool_->num_threads(); }
  ThreadPool& pool() { return *pool_; }
  Allocator& allocator() { return *allocator_; }
  GemmBackend gemm_backend() const { return gemm_; }
  void set_gemm_backend(GemmBackend b) { gemm_ = b; }

  // Scratch tensor on this context's device from its allocator.
  Tensor scratch(const Shape& shape, DType dtype = DType::kF32);

  // CUDA only (kInvalidArgument on a CPU context): the stream every op of this context is queued on.
  const steno::cuda::Stream& stream() const;
  CudaResources& cuda_resources() const;
  // Waits for the work queued on this context (a no-op on the CPU, where ops run synchronously).
  void synchronize() const;

  // Tensors a context makes once from constants and keeps across calls on its own device and allocator (the
  // encoder's relative positional table): undefined until kept under `key`; keep() replaces what was there.
  // Copies of a context share them. Thread-safe, though a context is one executor's.
  Tensor kept(const std::string& key) const;
  void keep(const std::string& key, Tensor t);

  // Times every op of this context (copies of it included) with `p` until set back to null; see profiler.h.
  void set_profiler(OpProfiler* p) { profiler_ = p; }
  OpProfiler* profiler() const { return profiler_; }

 private:
  struct KeptTensors;
  Context(Device device, std::shared_ptr<ThreadPool> pool, Allocator* allocator, GemmBackend gemm);

  Device device_;
  std::shared_ptr<ThreadPool> pool_;
  Allocator* allocator_;
  GemmBackend gemm_;
  std::shared_ptr<CudaResources> cuda_;  // set for CUDA contexts
  // After cuda_: destroyed first, so kept device tensors go back to a pool that still exists.
  std::shared_ptr<KeptTensors> kept_;
  OpProfiler* profiler_ = nullptr;
};

}  // namespace steno::ops
