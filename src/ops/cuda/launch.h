// The boundary between steno's host code and its CUDA device code. nvcc does not compile steno's headers (fmt 9
// is not constexpr-clean under nvcc's C++20), so the .cu files include only this header (and launch_common.cuh)
// and take raw pointers, sizes and a stream; the *_cuda.cc files around them do every check and the Tensor work.
// Each launcher queues kernels on `stream` and returns without waiting; <group>_launch.h declares a group's
// launchers for both sides.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace steno::ops::cuda {

// The element type of a kernel's float tensors (storage and compute; accumulation is always f32).
enum class Dt : uint8_t { kF32, kF16, kBF16 };

// Checks the last launch (cudaGetLastError) and throws steno::Error naming `what` on failure. Defined in
// launch_check.cc (host C++), callable from .cu files.
void check_launch(const char* what);

}  // namespace steno::ops::cuda
