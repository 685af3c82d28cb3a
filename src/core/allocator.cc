#include "steno/core/allocator.h"

#include <bit>
#include <cstdlib>
#include <new>

#include "steno/core/error.h"

namespace steno {
namespace {
constexpr size_t kAlignment = 64;  // a cache line, and enough for AVX-512 loads
}

CpuCachingAllocator::CpuCachingAllocator(size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}

CpuCachingAllocator::~CpuCachingAllocator() { release_cached(); }

size_t CpuCachingAllocator::size_class(size_t bytes) {
  if (bytes <= 256) return 256;
  // Four classes per power of two bounds the waste to 25 % while letting similar sizes share blocks.
  const size_t pow2 = std::bit_floor(bytes);
  const size_t step = pow2 / 4;
  return (bytes + step - 1) / step * step;
}

void* CpuCachingAllocator::allocate(size_t bytes) {
  const size_t cls = size_class(bytes);
  {
    std::lock_guard lock(mu_);
    ++stats_.allocations;
    auto it = free_blocks_.find(cls);
    if (it != free_blocks_.end()) {
      void* p = it->second;
      free_blocks_.erase(it);
      ++stats_.cache_hits;
      stats_.bytes_cached -= cls;
      stats_.bytes_in_use += cls;
      stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
      return p;
    }
  }
  void* p = std::aligned_alloc(kAlignment, cls);
  // kResourceExhausted like a device's out-of-memory: the executor retries the batch in smaller pieces.
  if (p == nullptr) fail(ErrorCode::kResourceExhausted, "out of host memory allocating {} bytes", cls);
  std::lock_guard lock(mu_);
  stats_.bytes_in_use += cls;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return p;
}

void CpuCachingAllocator::deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  const size_t cls = size_class(bytes);
  {
    std::lock_guard lock(mu_);
    stats_.bytes_in_use -= cls;
    if (stats_.bytes_cached + cls <= max_cached_bytes_) {
      free_blocks_.emplace(cls, ptr);
      stats_.bytes_cached += cls;
      return;
    }
  }
  std::free(ptr);
}

PoolStats CpuCachingAllocator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void CpuCachingAllocator::release_cached() {
  std::lock_guard lock(mu_);
  for (auto& [cls, p] : free_blocks_) std::free(p);
  free_blocks_.clear();
  stats_.bytes_cached = 0;
}

CpuCachingAllocator& default_cpu_allocator() {
  static auto* allocator = new CpuCachingAllocator();  // never destroyed: tensors may outlive static teardown
  return *allocator;
}

}  // namespace steno
