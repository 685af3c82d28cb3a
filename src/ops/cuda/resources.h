// What a CUDA ops::Context owns. Private to steno_ops; the members are declared in queue order of destruction:
// the allocator's pool is destroyed (after a synchronize) before the stream it orders frees on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "steno/core/cuda.h"
#include "steno/core/tensor.h"

namespace steno::ops {

namespace cuda {
struct LengthsCaptureState;  // lengths_graph.h
}

struct CudaResources {
  // On `stream` (a plain one of its own, or a green context's, which confines the context's kernels to its SMs).
  explicit CudaResources(steno::cuda::Stream stream);
  ~CudaResources();
  CudaResources(const CudaResources&) = delete;
  CudaResources& operator=(const CudaResources&) = delete;

  int device;
  steno::cuda::Stream stream;
  steno::cuda::DeviceAllocator allocator{stream};
  void* cublaslt = nullptr;         // cublasLtHandle_t
  void* workspace = nullptr;        // cuBLASLt workspace (device), kWorkspaceBytes
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // NVIDIA's recommendation for Hopper

  // The last batch lengths uploaded (upload_lengths): an encoder pass masks with the same lengths in every layer,
  // and each upload from pageable memory waits for the stream, so uploading once keeps the host ahead of the GPU.
  std::vector<int64_t> lengths_host;
  Tensor lengths_device;

  // Set while a LengthsGraph captures this context's stream (lengths_graph.h): lengths come from its parameters.
  cuda::LengthsCaptureState* capture = nullptr;
};

}  // namespace steno::ops
