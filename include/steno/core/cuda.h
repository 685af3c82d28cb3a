// The CUDA runtime as steno's core sees it: devices, streams, green contexts, device and pinned-host memory,
// copies. The header names no CUDA type, so every target compiles with or without the toolkit; without it
// (STENO_HAVE_CUDA off) cuda::built() is false, device_count() is 0 and everything else fails with kUnavailable
// and a clear message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "steno/core/allocator.h"
#include "steno/core/device.h"

namespace steno::cuda {

bool built();        // this binary has the CUDA backend
int device_count();  // 0 when not built, no driver or no device (never throws)

struct DeviceInfo {
  std::string name;
  int sm_major = 0, sm_minor = 0;
  int multiprocessors = 0;
  size_t total_memory = 0;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi, NVML and Triton's gpu_uuid name it
};
DeviceInfo device_info(int device);

// Throws kUnavailable unless `device` is a CUDA device this process can use.
void check_device(Device device);

// The SMs of `device` this process may use: the physical count, or the capped one under MPS with
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (132 on an H200, 32 at 25 %).
int sm_count(int device);

// An owned CUDA stream (non-blocking with respect to the legacy default stream) on one device.
class Stream {
 public:
  explicit Stream(int device);
  // Adopts `handle` (a cudaStream_t / CUstream made elsewhere, e.g. by a GreenContext) and destroys it with this
  // Stream; `owner` (may be null) is kept alive until then: what the stream belongs to must outlive it.
  Stream(int device, void* handle, std::shared_ptr<const void> owner);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  // Moving is for handing a new stream to its owner (ops::Context::cuda(Stream)); never move a stream that an
  // allocator or a context already refers to.
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&&) = delete;

  int device() const { return device_; }
  void* handle() const { return handle_; }  // a cudaStream_t
  void synchronize() const;

 private:
  int device_;
  void* handle_ = nullptr;
  std::shared_ptr<const void> owner_;  // destroyed after handle_ (members are destroyed after the body)
};

// How the driver can partition `device`'s SMs into green contexts (cuDeviceGetDevResource): partitions are at
// least `min_partition` SMs and a multiple of `alignment` (8 and 8 on sm_90).
struct SmPartitioning {
  int sms = 0;
  int min_partition = 0;
  int alignment = 0;
};
SmPartitioning sm_partitioning(int device);

// A CUDA green context: a fixed set of SMs of one device (what `--share green` gives each lane). Work queued on its
// streams runs only on those SMs (never fewer; under MPS the driver may use more), so lanes with green
// contexts cannot starve each other of SMs. Contexts made one by one with create() may overlap (each is carved
// from the whole device); partition() makes disjoint ones. Memory, modules and weights are the device's primary
// context's, shared with ordinary streams. Built on the driver API through the runtime's entry points (no libcuda link: binaries still start on a
// machine without a driver). Copies share one green context, destroyed with the last copy and the last stream.
class GreenContext {
 public:
  // A green context of at least `sms` SMs on `device` (the driver rounds up to its granularity; sm_count() says
  // what was provisioned). Throws kUnavailable without a CUDA build, device or green-context support (driver
  // older than CUDA 12.5, or splitting refused as under MPS with a thread cap), kInvalidArgument when `sms` is
  // not in [1, sm_count(device)].
  static GreenContext create(int device, int sms);
  // `count` green contexts of at least `sms` SMs each on disjoint SMs of `device`: lanes that can never take each
  // other's SMs (create() carves every context from the whole device, so separately made ones overlap). Throws
  // kUnavailable when `count` groups of that size do not fit the device, else as create().
  static std::vector<GreenContext> partition(int device, int sms, int count);

  int device() const;
  int sm_count() const;
  // A new non-blocking stream whose kernels run on this green context's SMs; it keeps the context alive.
  Stream make_stream() const;

 private:
  friend class GreenPartition;
  struct State;
  explicit GreenContext(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// One device's SMs handed out as disjoint green contexts, request after request: each carve() takes its groups from
// the SMs that no earlier carve() of this object took. What two models' green lanes in one process need (the
// transcriber's lanes and the diarizer's), so that neither model's lanes run on the other's SMs; carved SMs are not
// handed back. Thread-safe.
class GreenPartition {
 public:
  explicit GreenPartition(int device);  // throws as GreenContext::create
  // `count` green contexts of at least `sms` SMs each, on SMs no earlier carve took. Throws kUnavailable when they
  // do not fit what is left, kInvalidArgument for a bad size or count.
  std::vector<GreenContext> carve(int sms, int count);
  int device() const;
  int sms_left() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Makes `device` current on this thread (cudaSetDevice).
void set_device(int device);

// Copies `bytes` in stream order; host pointers may be pageable or pinned (pinned ones overlap with compute).
void memcpy_async(void* dst, const void* src, size_t bytes, const Stream& stream);
void memset_async(void* dst, int value, size_t bytes, const Stream& stream);

struct DevicePoolStats {
  size_t reserved_bytes = 0;       // held by the pool (in use + cached)
  size_t used_bytes = 0;           // handed out
  size_t peak_reserved_bytes = 0;
  size_t peak_used_bytes = 0;
};

// The caching device allocator: CUDA's stream-ordered pool allocator (cudaMallocFromPoolAsync) on one stream,
// with the pool's release threshold at "never", so freed blocks stay cached and steady-state inference makes no
// cudaMalloc/cudaFree calls. Frees are ordered on the stream, so a block is reused only after the kernels queued
// before its release have run, which is what lets a Tensor go out of scope while its last kernel is in flight.
// One allocator per stream (one per ops::Context); each owns a private pool, so lanes do not contend.
class DeviceAllocator final : public Allocator {
 public:
  explicit DeviceAllocator(const Stream& stream);
  ~DeviceAllocator() override;
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  Device device() const override { return Device::cuda(stream_.device()); }
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) override;

  DevicePoolStats stats() const;
  void trim();  // returns cached blocks to the driver (after a synchronize)

 private:
  const Stream& stream_;
  void* pool_ = nullptr;  // cudaMemPool_t
};

// Plain cudaMalloc / cudaFree memory, for weights shared by every stream of a process (never freed while in use).
class WeightAllocator final : public Allocator {
 public:
  explicit WeightAllocator(int device) : device_(device) {}
  Device device() const override { return Device::cuda(device_); }
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) override;

 private:
  int device_;
};

// The process-wide weight allocator of `device` (weights outlive every context that reads them).
WeightAllocator& weight_allocator(int device);

// Pinned (page-locked) host memory, cached by a CpuCachingAllocator over page-locked blocks (its size classes, its
// bound and its idle release): staging for host<->device copies that run asynchronously. Its tensors are CPU
// tensors.
class PinnedAllocator final : public Allocator {
 public:
  PinnedAllocator();
  ~PinnedAllocator() override;
  PinnedAllocator(const PinnedAllocator&) = delete;
  PinnedAllocator& operator=(const PinnedAllocator&) = delete;
  Device device() const override { return Device::cpu(); }
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) override;
  PoolStats stats() const;

 private:
  struct Cache;
  std::unique_ptr<Cache> cache_;
};

PinnedAllocator& default_pinned_allocator();
// Its statistics (for /metrics); nullopt in a build without CUDA.
std::optional<PoolStats> pinned_pool_stats();

}  // namespace steno::cuda
