// SharedDeviceMemory in a build without the CUDA toolkit: every call says so (as cuda_stub.cc does).
#include "steno/core/cuda_shared_memory.h"
#include "steno/core/error.h"

namespace steno::cuda {
namespace {
[[noreturn]] void not_built(const char* what) {
  fail(ErrorCode::kUnavailable, "{}: this steno was built without CUDA (configure with -DSTENO_WITH_CUDA=ON on a "
       "machine with the CUDA toolkit)", what);
}
}  // namespace

std::unique_ptr<SharedDeviceMemory> SharedDeviceMemory::create(int, size_t) { not_built("shared device memory"); }
std::unique_ptr<SharedDeviceMemory> SharedDeviceMemory::import(int, int, size_t) {
  not_built("shared device memory");
}
SharedDeviceMemory::~SharedDeviceMemory() = default;
int SharedDeviceMemory::export_fd() const { not_built("shared device memory"); }

}  // namespace steno::cuda
