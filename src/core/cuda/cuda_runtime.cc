// steno::cuda on the CUDA runtime API (built only with STENO_HAVE_CUDA).
#include <cuda_runtime.h>

#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include "steno/core/allocator.h"
#include "steno/core/cuda.h"
#include "core/cuda_fault.h"
#include "steno/core/error.h"
#include "core/weight_arena.h"

namespace steno::cuda {
namespace {

[[noreturn]] void cuda_fail(cudaError_t err, const char* what) {
  // Out-of-memory is its own code so that callers (the batcher) can split a batch and retry.
  const ErrorCode code = err == cudaErrorMemoryAllocation ? ErrorCode::kResourceExhausted : ErrorCode::kInternal;
  fail(code, "CUDA error in {}: {} ({})", what, cudaGetErrorString(err), cudaGetErrorName(err));
}

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) cuda_fail(err, what);
}

cudaStream_t as_stream(const Stream& s) { return static_cast<cudaStream_t>(s.handle()); }

}  // namespace

bool built() { return true; }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver / no device" error
    return 0;
  }
  return n;
}

namespace {

// The 16 bytes as NVML prints them: "GPU-" and the groups 4-2-2-2-6 in hex.
std::string format_uuid(const char* bytes) {
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += fmt::format("{:02x}", static_cast<unsigned char>(bytes[i]));
  }
  return out;
}

}  // namespace

DeviceInfo device_info(int device) {
  check_device(Device::cuda(device));
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  return {p.name, p.major, p.minor, p.multiProcessorCount, p.totalGlobalMem, format_uuid(p.uuid.bytes)};
}

int sm_count(int device) {
  check_device(Device::cuda(device));
  int n = 0;
  check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  return n;
}

std::string device_fault(int device) {
  cudaError_t err = cudaSetDevice(device);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  return err == cudaSuccess ? std::string() : std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
}

void check_device(Device device) {
  STENO_CHECK(!device.is_cpu(), "check_device: {} is not a CUDA device", device.str());
  const int n = device_count();
  if (device.index < 0 || device.index >= n)
    fail(ErrorCode::kUnavailable, "{} is not available: this machine has {} CUDA device(s)", device.str(), n);
}

void set_device(int device) { check(cudaSetDevice(device), "cudaSetDevice"); }

Stream::Stream(int device) : device_(device) {
  check_device(Device::cuda(device));
  set_device(device);
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  handle_ = s;
}

Stream::Stream(int device, void* handle, std::shared_ptr<const void> owner)
    : device_(device), handle_(handle), owner_(std::move(owner)) {
  STENO_CHECK(handle != nullptr, "cuda::Stream: cannot adopt a null stream");
}

Stream::Stream(Stream&& other) noexcept
    : device_(other.device_), handle_(std::exchange(other.handle_, nullptr)), owner_(std::move(other.owner_)) {}

Stream::~Stream() {
  if (handle_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(handle_));
}

void Stream::synchronize() const { check(cudaStreamSynchronize(as_stream(*this)), "cudaStreamSynchronize"); }

void memcpy_async(void* dst, const void* src, size_t bytes, const Stream& stream) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_stream(stream)), "cudaMemcpyAsync");
}

void memset_async(void* dst, int value, size_t bytes, const Stream& stream) {
  if (bytes == 0) return;
  check(cudaMemsetAsync(dst, value, bytes, as_stream(stream)), "cudaMemsetAsync");
}

// ---- DeviceAllocator ------------------------------------------------------------------------------------------

DeviceAllocator::DeviceAllocator(const Stream& stream) : stream_(stream) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = stream.device();
  cudaMemPool_t pool = nullptr;
  check(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");
  uint64_t keep = std::numeric_limits<uint64_t>::max();  // never give cached memory back on synchronize
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
  pool_ = pool;
}

DeviceAllocator::~DeviceAllocator() {
  if (pool_ == nullptr) return;
  cudaStreamSynchronize(as_stream(stream_));
  cudaMemPoolDestroy(static_cast<cudaMemPool_t>(pool_));
}

void* DeviceAllocator::allocate(size_t bytes) {
  void* p = nullptr;
  // 256-byte granularity keeps every tensor aligned for vectorised (16-byte) loads.
  const size_t n = bytes == 0 ? 256 : (bytes + 255) / 256 * 256;
  const cudaError_t err =
      cudaMallocFromPoolAsync(&p, n, static_cast<cudaMemPool_t>(pool_), as_stream(stream_));
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (err == cudaErrorMemoryAllocation)
      fail(ErrorCode::kResourceExhausted, "out of device memory on cuda:{} allocating {} bytes ({} reserved)",
           stream_.device(), n, stats().reserved_bytes);
    cuda_fail(err, "cudaMallocFromPoolAsync");
  }
  return p;
}

void DeviceAllocator::deallocate(void* ptr, size_t) {
  if (ptr != nullptr) cudaFreeAsync(ptr, as_stream(stream_));
}

DevicePoolStats DeviceAllocator::stats() const {
  auto get = [&](cudaMemPoolAttr attr) {
    uint64_t v = 0;
    cudaMemPoolGetAttribute(static_cast<cudaMemPool_t>(pool_), attr, &v);
    return static_cast<size_t>(v);
  };
  return {get(cudaMemPoolAttrReservedMemCurrent), get(cudaMemPoolAttrUsedMemCurrent),
          get(cudaMemPoolAttrReservedMemHigh), get(cudaMemPoolAttrUsedMemHigh)};
}

void DeviceAllocator::trim() {
  stream_.synchronize();
  check(cudaMemPoolTrimTo(static_cast<cudaMemPool_t>(pool_), 0), "cudaMemPoolTrimTo");
}

// ---- WeightAllocator ------------------------------------------------------------------------------------------

void* WeightAllocator::allocate(size_t bytes) {
  // A model loading into a shared arena (weight_arena.h) takes its memory there; a counting load is counted.
  if (void* arena = detail::weight_scope_allocate(device_, bytes)) return arena;
  set_device(device_);
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes == 0 ? 256 : bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (err == cudaErrorMemoryAllocation)
      fail(ErrorCode::kResourceExhausted, "out of device memory on cuda:{} allocating {} bytes of weights",
           device_, bytes);
    cuda_fail(err, "cudaMalloc");
  }
  return p;
}

void WeightAllocator::deallocate(void* ptr, size_t) {
  // Arena memory goes with its arena, never piece by piece (and it was never cudaMalloc's to free).
  if (ptr != nullptr && !ArenaAllocator::owns(ptr)) cudaFree(ptr);
}

WeightAllocator& weight_allocator(int device) {
  check_device(Device::cuda(device));
  static std::mutex mu;
  static std::map<int, WeightAllocator*> allocators;  // leaked on purpose: weights may outlive static destructors
  std::lock_guard lock(mu);
  auto& a = allocators[device];
  if (a == nullptr) a = new WeightAllocator(device);
  return *a;
}

// ---- PinnedAllocator ------------------------------------------------------------------------------------------

namespace {

// Page-locked blocks for the host cache. Pinned memory is resident: a cache keeping a block of every staging size
// a server ever saw would be resident memory that only grows; the cache's idle release hands back what nothing
// reuses. cudaFreeHost waits for the device, but only for a block nothing reused for 30 s (HostCacheLimits): rarely.
HostBlockSource pinned_blocks() {
  return {[](size_t bytes) -> void* {
            void* p = nullptr;
            if (cudaMallocHost(&p, bytes) == cudaSuccess) return p;
            cudaGetLastError();  // not sticky: clear it for the next call
            return nullptr;
          },
          [](void* p) { cudaFreeHost(p); }, "pinned host memory", /*trim_heap=*/false};
}

}  // namespace

struct PinnedAllocator::Cache {
  // The default limits: its 30 s idle time is what bounds it, as a server allocates staging only a few times a
  // batch (65,536 allocations took most of a 22-minute GPU soak, whose resident memory grew 9 %).
  CpuCachingAllocator blocks{HostCacheLimits{}, pinned_blocks()};
};

PinnedAllocator::PinnedAllocator() : cache_(std::make_unique<Cache>()) {}

PinnedAllocator::~PinnedAllocator() = default;

void* PinnedAllocator::allocate(size_t bytes) { return cache_->blocks.allocate(bytes); }

void PinnedAllocator::deallocate(void* ptr, size_t bytes) { cache_->blocks.deallocate(ptr, bytes); }

PoolStats PinnedAllocator::stats() const { return cache_->blocks.stats(); }

PinnedAllocator& default_pinned_allocator() {
  static auto* a = new PinnedAllocator();  // leaked on purpose: tensors may outlive static destruction order
  return *a;
}

std::optional<PoolStats> pinned_pool_stats() { return default_pinned_allocator().stats(); }

}  // namespace steno::cuda
