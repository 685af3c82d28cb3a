// The execution context every op takes: which device it runs on and the resources it may use there. One
// Context per executor (a lane, a worker); ops never keep global state, so several contexts can run at once.
#pragma once

#include "steno/core/allocator.h"
#include "steno/core/device.h"
#include "steno/core/tensor.h"
#include "steno/core/thread_pool.h"

#include <memory>
#include <string>

namespace steno::ops {

// The CPU GEMM library. oneDNN is the default (fastest measured on AVX-512); OpenBLAS is kept as a baseline.
enum class GemmBackend { kOneDnn, kOpenBlas };
const char* gemm_backend_name(GemmBackend b);
GemmBackend parse_gemm_backend(const std::string& name);  // "onednn" | "openblas"; throws otherwise

class Context {
 public:
  // A CPU context using `num_threads` threads (0 = default_num_threads()) and the default host allocator.
  static Context cpu(int num_threads = 0, GemmBackend gemm = GemmBackend::kOneDnn);

  Device device() const { return device_; }
  int num_threads() const { return pool_->num_threads(); }
  ThreadPool& pool() { return *pool_; }
  Allocator& allocator() { return *allocator_; }
  GemmBackend gemm_backend() const { return gemm_; }
  void set_gemm_backend(GemmBackend b) { gemm_ = b; }

  // Scratch tensor on this context's device from its allocator.
  Tensor scratch(const Shape& shape, DType dtype = DType::kF32);

 private:
  Context(Device device, std::shared_ptr<ThreadPool> pool, Allocator* allocator, GemmBackend gemm)
      : device_(device), pool_(std::move(pool)), allocator_(allocator), gemm_(gemm) {}

  Device device_;
  std::shared_ptr<ThreadPool> pool_;
  Allocator* allocator_;
  GemmBackend gemm_;
};

}  // namespace steno::ops
