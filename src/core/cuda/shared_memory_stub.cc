// SharedDeviceMemory in a build without the CUDA toolkit: every call says so (as cuda_stub.cc does).
#include "core/cuda_shared_memory.h"
#include "steno/core/error.h"
#include "not_built.h"

namespace steno::cuda {

std::unique_ptr<SharedDeviceMemory> SharedDeviceMemory::create(int, size_t) { not_built("shared device memory"); }
std::unique_ptr<SharedDeviceMemory> SharedDeviceMemory::import(int, int, size_t) {
  not_built("shared device memory");
}
SharedDeviceMemory::~SharedDeviceMemory() = default;
int SharedDeviceMemory::export_fd() const { not_built("shared device memory"); }

}  // namespace steno::cuda
