#include <cuda_runtime.h>

#include "launch.h"
#include "steno/core/error.h"

namespace steno::ops::cuda {

void check_launch(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    fail(ErrorCode::kInternal, "CUDA kernel {} failed to launch: {} ({})", what, cudaGetErrorString(err),
         cudaGetErrorName(err));
}

}  // namespace steno::ops::cuda
