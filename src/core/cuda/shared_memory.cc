// SharedDeviceMemory (cuda_shared_memory.h) on the driver's virtual memory management API, reached as
// driver_entry.h says (no libcuda link).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "steno/core/cuda.h"
#include "core/cuda_shared_memory.h"
#include "steno/core/error.h"
#include "driver_entry.h"

namespace steno::cuda {
namespace {

struct Driver {
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetAttribute_v2000 attribute = nullptr;
  PFN_cuGetErrorName_v6000 error_name = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemAddressReserve_v10020 reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  PFN_cuMemExportToShareableHandle_v10020 export_handle = nullptr;
  PFN_cuMemImportFromShareableHandle_v10020 import_handle = nullptr;
  std::vector<std::string> missing;  // symbols this driver lacks
};

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    driver_entry::resolve(r.device_get, "cuDeviceGet", 2000, r.missing);
    driver_entry::resolve(r.attribute, "cuDeviceGetAttribute", 2000, r.missing);
    driver_entry::resolve(r.error_name, "cuGetErrorName", 6000, r.missing);
    driver_entry::resolve(r.granularity, "cuMemGetAllocationGranularity", 10020, r.missing);
    driver_entry::resolve(r.create, "cuMemCreate", 10020, r.missing);
    driver_entry::resolve(r.release, "cuMemRelease", 10020, r.missing);
    driver_entry::resolve(r.reserve, "cuMemAddressReserve", 10020, r.missing);
    driver_entry::resolve(r.address_free, "cuMemAddressFree", 10020, r.missing);
    driver_entry::resolve(r.map, "cuMemMap", 10020, r.missing);
    driver_entry::resolve(r.unmap, "cuMemUnmap", 10020, r.missing);
    driver_entry::resolve(r.set_access, "cuMemSetAccess", 10020, r.missing);
    driver_entry::resolve(r.export_handle, "cuMemExportToShareableHandle", 10020, r.missing);
    driver_entry::resolve(r.import_handle, "cuMemImportFromShareableHandle", 10020, r.missing);
    return r;
  }();
  return d;
}

void check(const Driver& d, CUresult r, const char* what, int device) {
  if (r == CUDA_SUCCESS) return;
  const char* name = driver_entry::error_name(d.error_name, r);
  // Out of memory is "too big for now"; anything else is "this device or setting does not share memory so"
  // (e.g. CUDA_ERROR_NOT_SUPPORTED under MPS): the caller falls back to private memory, it is not a steno bug.
  const ErrorCode code = r == CUDA_ERROR_OUT_OF_MEMORY ? ErrorCode::kResourceExhausted : ErrorCode::kUnavailable;
  fail(code, "cuda:{}: {} failed ({}): no shareable device memory", device, what, name);
}

// The driver with every VMM entry point, `device` current with its primary context initialised (the mapping
// calls work in the current context), and the device's support for exportable memory checked.
const Driver& driver_for(int device, CUdevice* dev) {
  driver_entry::make_primary_current(device);
  const Driver& d = driver();
  if (!d.missing.empty()) {
    fail(ErrorCode::kUnavailable, "shareable device memory is not available: the CUDA driver lacks {}",
         driver_entry::joined(d.missing));
  }
  check(d, d.device_get(dev, device), "cuDeviceGet", device);
  int vmm = 0, fd_handles = 0;
  check(d, d.attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, *dev), "cuDeviceGetAttribute",
        device);
  check(d, d.attribute(&fd_handles, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, *dev),
        "cuDeviceGetAttribute", device);
  if (!vmm || !fd_handles)
    fail(ErrorCode::kUnavailable,
         "cuda:{}: the device does not support {}: no device memory shared by file descriptor", device,
         !vmm ? "virtual memory management" : "POSIX file descriptor handles");
  return d;
}

CUmemAllocationProp allocation_prop(CUdevice dev) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// `bytes` rounded up to the granularity of such allocations on the device: create() and import() round alike,
// so an importer given the creator's requested size maps exactly the allocation's size (cuMemMap wants that).
size_t rounded_size(const Driver& d, const CUmemAllocationProp& prop, size_t bytes, int device) {
  size_t granularity = 0;
  check(d, d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity",
        device);
  STENO_CHECK(bytes > 0, "shared device memory of 0 bytes");
  return (bytes + granularity - 1) / granularity * granularity;
}

// Reserves an address range for `handle` , maps it and grants this device read and
// write access. On failure the destructor undoes what was done.
void map_handle(const Driver& d, CUdevice dev, int device, size_t size, uint64_t& address, uint64_t handle) {
  CUdeviceptr ptr = 0;
  check(d, d.reserve(&ptr, size, 0, 0, 0), "cuMemAddressReserve", device);
  address = static_cast<uint64_t>(ptr);
  if (const CUresult r = d.map(ptr, size, 0, static_cast<CUmemGenericAllocationHandle>(handle), 0);
      r != CUDA_SUCCESS) {
    d.address_free(ptr, size);
    address = 0;
    check(d, r, "cuMemMap", device);
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = dev;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(d, d.set_access(ptr, size, &access, 1), "cuMemSetAccess", device);
}

}  // namespace

std::unique_ptr<SharedDeviceMemory> SharedDeviceMemory::create(int device, size_t bytes) {
  CUdevice dev = 0;
  const Driver& d = driver_for(device, &dev);
  const CUmemAllocationProp prop = allocation_prop(dev);
  const size_t size = rounded_size(d, prop, bytes, device);
  std::unique_ptr<SharedDeviceMemory> m(new SharedDeviceMemory(device, size));
  CUmemGenericAllocationHandle handle = 0;
  check(d, d.create(&handle, size, &prop, 0), "cuMemCreate", device);
  m->handle_ = static_cast<uint64_t>(handle);
  map_handle(d, dev, device, size, m->address_, m->handle_);
  return m;
}

std::unique_ptr<SharedDeviceMemory> SharedDeviceMemory::import(int device, int fd, size_t bytes) {
  STENO_CHECK(fd >= 0, "importing shared device memory needs a descriptor, got {}", fd);
  CUdevice dev = 0;
  const Driver& d = driver_for(device, &dev);
  const size_t size = rounded_size(d, allocation_prop(dev), bytes, device);
  std::unique_ptr<SharedDeviceMemory> m(new SharedDeviceMemory(device, size));
  CUmemGenericAllocationHandle handle = 0;
  // The handle is passed by value, the descriptor cast to a pointer (the driver's convention for POSIX fds).
  check(d, d.import_handle(&handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
        "cuMemImportFromShareableHandle", device);
  m->handle_ = static_cast<uint64_t>(handle);
  map_handle(d, dev, device, size, m->address_, m->handle_);
  return m;
}

SharedDeviceMemory::~SharedDeviceMemory() {
  const Driver& d = driver();
  // Errors are not reported: a broken context (a faulted worker) still lets the process exit, which frees all.
  if (address_ != 0) {
    d.unmap(static_cast<CUdeviceptr>(address_), size_);
    d.address_free(static_cast<CUdeviceptr>(address_), size_);
  }
  if (handle_ != 0) d.release(static_cast<CUmemGenericAllocationHandle>(handle_));
}

int SharedDeviceMemory::export_fd() const {
  const Driver& d = driver();
  int fd = -1;
  check(d, d.export_handle(&fd, static_cast<CUmemGenericAllocationHandle>(handle_),
                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemExportToShareableHandle", device_);
  return fd;
}

}  // namespace steno::cuda
