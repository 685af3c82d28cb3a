#include "cublaslt_api.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>
#include <type_traits>

#include "steno/core/error.h"

namespace steno::ops::cuda {
namespace {

// Kept mapped for the life of the process: contexts and their handles may outlive static destruction.
CublasLt load() {
  const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) fail(ErrorCode::kUnavailable, "cannot load {} (the CUDA GEMM library): {}", name, dlerror());
  CublasLt t{};
  std::string missing;
  auto sym = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
    if (fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  sym(t.Create, "cublasLtCreate");
  sym(t.Destroy, "cublasLtDestroy");
  sym(t.GetStatusString, "cublasLtGetStatusString");
  sym(t.GetStatusName, "cublasLtGetStatusName");
  sym(t.MatmulDescCreate, "cublasLtMatmulDescCreate");
  sym(t.MatmulDescDestroy, "cublasLtMatmulDescDestroy");
  sym(t.MatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  sym(t.MatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  sym(t.MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
  sym(t.MatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
  sym(t.MatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
  sym(t.MatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
  sym(t.MatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  sym(t.MatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  sym(t.Matmul, "cublasLtMatmul");
  if (!missing.empty()) fail(ErrorCode::kUnavailable, "{} lacks {}", name, missing);
  return t;
}

}  // namespace

const CublasLt& cublaslt() {
  // Checked once locked, then without the lock; a failed load is retried and reported at every call.
  static std::mutex mu;
  static CublasLt table{};
  static std::atomic<bool> loaded{false};
  if (loaded.load(std::memory_order_acquire)) return table;
  std::lock_guard lock(mu);
  if (!loaded.load(std::memory_order_relaxed)) {
    table = load();
    loaded.store(true, std::memory_order_release);
  }
  return table;
}

}  // namespace steno::ops::cuda
