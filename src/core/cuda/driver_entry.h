// The CUDA driver API as steno reaches it (green contexts, shareable memory): through the runtime's
// cudaGetDriverEntryPointByVersion, not by linking libcuda, so a binary still starts on a machine without the
// driver (CI) and can say which entry points this driver lacks instead of failing to load.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "steno/core/cuda.h"
#include "steno/core/error.h"

namespace steno::cuda::driver_entry {

// Points `fn` at the driver's `symbol` at ABI `version` (the version of the PFN typedef `Fn` names); when this
// driver lacks it, leaves `fn` null and adds `symbol` to `missing`.
template <typename Fn>
void resolve(Fn& fn, const char* symbol, unsigned version, std::vector<std::string>& missing) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &p, version, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || p == nullptr) {
    cudaGetLastError();  // the query's failure is not the caller's sticky error
    missing.emplace_back(symbol);
    return;
  }
  fn = reinterpret_cast<Fn>(p);
}

// "a, b, c": the missing symbols for a message.
inline std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The driver's name for `r` (CUDA_ERROR_NOT_SUPPORTED, ...), or "unknown" when cuGetErrorName is missing.
inline const char* error_name(PFN_cuGetErrorName_v6000 get_name, CUresult r) {
  const char* name = "unknown";
  if (get_name != nullptr) get_name(r, &name);
  return name;
}

// Makes `device` current with its primary context initialised: the driver calls that follow work in the current
// context, and cuGreenCtxCreate advises it (otherwise each green context initialises and tears down the primary).
inline void make_primary_current(int device) {
  check_device(Device::cuda(device));
  set_device(device);
  if (cudaFree(nullptr) != cudaSuccess) {
    cudaGetLastError();
    fail(ErrorCode::kUnavailable, "cuda:{}: cannot initialise the device's primary context", device);
  }
}

}  // namespace steno::cuda::driver_entry
