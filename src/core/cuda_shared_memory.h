// Device memory that other processes can map: one copy of a model's weights for every worker process of a GPU
// (`steno serve --share-weights`). Made with CUDA's virtual memory management (cuMemCreate with a POSIX file
// descriptor handle, cuMemAddressReserve, cuMemMap, cuMemSetAccess) on the driver API, reached through the
// runtime's entry points as green contexts are (no libcuda link). A process exports the memory as a file
// descriptor; another, given that descriptor (SCM_RIGHTS or inheritance), imports it and maps the same physical
// memory at an address of its own. The physical memory lives while any process holds a handle, a mapping or (as
// the driver documents it for POSIX descriptors) an exported descriptor, so the process that made it may die
// without taking the others' weights with it.
//
// The header names no CUDA type: without the toolkit every call fails with kUnavailable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace steno::cuda {

class SharedDeviceMemory {
 public:
  // At least `bytes` of memory on `device`, readable and writable by this process (size() is `bytes` rounded up
  // to the driver's allocation granularity, 2 MiB on current GPUs). Throws kUnavailable, with the driver's error
  // name, when the device, the driver or the setting (e.g. MPS) does not allow exportable memory;
  // kResourceExhausted when the device is out of memory.
  static std::unique_ptr<SharedDeviceMemory> create(int device, size_t bytes);
  // Maps memory that another process made and exported (export_fd()): `bytes` as that process asked for (the
  // same rounding gives the same size). `fd` stays the caller's to close. Throws as create().
  static std::unique_ptr<SharedDeviceMemory> import(int device, int fd, size_t bytes);

  ~SharedDeviceMemory();  // unmaps, releases the handle and frees the address range (the memory stays for others)
  SharedDeviceMemory(const SharedDeviceMemory&) = delete;
  SharedDeviceMemory& operator=(const SharedDeviceMemory&) = delete;

  int device() const { return device_; }
  void* data() const { return reinterpret_cast<void*>(address_); }
  size_t size() const { return size_; }

  // A new descriptor for this memory, the caller's to close: handed to another process, which import()s it.
  int export_fd() const;

 private:
  SharedDeviceMemory(int device, size_t size) : device_(device), size_(size) {}
  int device_;
  size_t size_;
  uint64_t address_ = 0;  // CUdeviceptr of the mapping; 0 until mapped
  uint64_t handle_ = 0;   // CUmemGenericAllocationHandle; 0 until made or imported
};

}  // namespace steno::cuda
