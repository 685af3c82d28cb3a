// A CUDA runtime call's error as a steno::Error naming what failed: out of memory as kResourceExhausted (callers
// split the batch and retry), anything else as kInternal. Clears the runtime's last error. CUDA build only.
#pragma once

#include <cuda_runtime_api.h>

#include "steno/core/error.h"

namespace steno::asr {

inline void check_cuda(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();
  fail(err == cudaErrorMemoryAllocation ? ErrorCode::kResourceExhausted : ErrorCode::kInternal, "{}: {} ({})", what,
       cudaGetErrorString(err), cudaGetErrorName(err));
}

}  // namespace steno::asr
