#include "resources.h"

#include <cuda_runtime.h>

#include <utility>

#include "cublaslt_api.h"
#include "steno/core/error.h"

namespace steno::ops {

CudaResources::CudaResources(steno::cuda::Stream s) : device(s.device()), stream(std::move(s)) {
  const int dev = device;
  steno::cuda::set_device(dev);  // an adopted stream may come from another thread: the workspace goes on its device
  const cuda::CublasLt& lt = cuda::cublaslt();
  cublasLtHandle_t h = nullptr;
  const cublasStatus_t st = lt.Create(&h);
  STENO_CHECK(st == CUBLAS_STATUS_SUCCESS, "cublasLtCreate failed: {}", lt.GetStatusString(st));
  cublaslt = h;
  if (cudaMalloc(&workspace, kWorkspaceBytes) != cudaSuccess) {
    cudaGetLastError();
    lt.Destroy(h);
    fail(ErrorCode::kResourceExhausted, "cuda:{}: cannot allocate the {} MB cuBLASLt workspace", dev,
         kWorkspaceBytes >> 20);
  }
}

CudaResources::~CudaResources() {
  cudaStreamSynchronize(static_cast<cudaStream_t>(stream.handle()));
  if (workspace != nullptr) cudaFree(workspace);
  if (cublaslt != nullptr) cuda::cublaslt().Destroy(static_cast<cublasLtHandle_t>(cublaslt));
}

}  // namespace steno::ops
