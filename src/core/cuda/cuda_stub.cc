// steno::cuda in a build without the CUDA toolkit: no devices, and a clear error for anything that needs one.
#include "steno/core/cuda.h"
#include "core/cuda_fault.h"
#include "steno/core/error.h"
#include "not_built.h"

namespace steno::cuda {

bool built() { return false; }
int device_count() { return 0; }
std::string device_fault(int) { return {}; }  // no CUDA context to break
DeviceInfo device_info(int) { not_built("device_info"); }
void check_device(Device device) { not_built(device.str().c_str()); }
void set_device(int) { not_built("set_device"); }
int sm_count(int) { not_built("sm_count"); }
SmPartitioning sm_partitioning(int) { not_built("green contexts"); }
struct GreenContext::State {};
GreenContext GreenContext::create(int, int) { not_built("green contexts"); }
std::vector<GreenContext> GreenContext::partition(int, int, int) { not_built("green contexts"); }
int GreenContext::device() const { not_built("GreenContext"); }
int GreenContext::sm_count() const { not_built("GreenContext"); }
Stream GreenContext::make_stream() const { not_built("GreenContext"); }
struct GreenPartition::State {};
GreenPartition::GreenPartition(int) { not_built("green contexts"); }
std::vector<GreenContext> GreenPartition::carve(int, int) { not_built("green contexts"); }
int GreenPartition::device() const { not_built("GreenPartition"); }
int GreenPartition::sms_left() const { not_built("GreenPartition"); }
Stream::Stream(int device) : device_(device) { not_built("cuda::Stream"); }
Stream::Stream(int device, void*, std::shared_ptr<const void>) : device_(device) { not_built("cuda::Stream"); }
Stream::Stream(Stream&& other) noexcept : device_(other.device_) {}
Stream::~Stream() = default;
void Stream::synchronize() const { not_built("Stream::synchronize"); }
void memcpy_async(void*, const void*, size_t, const Stream&) { not_built("memcpy_async"); }
void memset_async(void*, int, size_t, const Stream&) { not_built("memset_async"); }
DeviceAllocator::DeviceAllocator(const Stream& stream) : stream_(stream) { not_built("DeviceAllocator"); }
DeviceAllocator::~DeviceAllocator() = default;
void* DeviceAllocator::allocate(size_t) { not_built("DeviceAllocator::allocate"); }
void DeviceAllocator::deallocate(void*, size_t) {}
DevicePoolStats DeviceAllocator::stats() const { return {}; }
void DeviceAllocator::trim() {}
void* WeightAllocator::allocate(size_t) { not_built("WeightAllocator::allocate"); }
void WeightAllocator::deallocate(void*, size_t) {}
WeightAllocator& weight_allocator(int) { not_built("weight_allocator"); }
struct PinnedAllocator::Cache {};
PinnedAllocator::PinnedAllocator() = default;
PinnedAllocator::~PinnedAllocator() = default;
void* PinnedAllocator::allocate(size_t) { not_built("PinnedAllocator::allocate"); }
void PinnedAllocator::deallocate(void*, size_t) {}
PoolStats PinnedAllocator::stats() const { return {}; }
PinnedAllocator& default_pinned_allocator() { not_built("default_pinned_allocator"); }
std::optional<PoolStats> pinned_pool_stats() { return std::nullopt; }

}  // namespace steno::cuda
