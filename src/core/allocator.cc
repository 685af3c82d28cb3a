#include "steno/core/allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "steno/core/error.h"

namespace steno {
namespace {
constexpr size_t kAlignment = 64;  // a cache line, and enough for AVX-512 loads
constexpr size_t kHugePage = size_t{2} << 20;
// Released idle blocks smaller than glibc's mmap threshold go back to its heap, which keeps the pages: past this
// many bytes released at once, malloc_trim hands the heap's free pages back to the OS too.
constexpr size_t kTrimAfterBytes = size_t{16} << 20;
}  // namespace

HostBlockSource heap_blocks() {
  return {&allocate_host_block, [](void* p) { std::free(p); }, "host memory", /*trim_heap=*/true};
}

void* allocate_host_block(size_t bytes) {
  if (bytes < kHugePage) return std::aligned_alloc(kAlignment, bytes);
  // A large block (a batch's activations, a model's widened weights) in 2 MiB pages where the kernel has them: its
  // first touch takes a fault per 2 MiB instead of per 4 KiB. In a one-shot `steno transcribe` of a minute that was
  // ~25,000 faults fewer, a third of the process on a virtual machine (bench/results/cpu-startup). A server pays a
  // block's faults (and any compaction the kernel does to find huge pages) once: the cache reuses the block.
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
#if defined(MADV_HUGEPAGE)
  if (p != nullptr) madvise(p, rounded, MADV_HUGEPAGE);  // advice: with THP off, 4 KiB pages as before
#endif
  return p;
}

CpuCachingAllocator::CpuCachingAllocator(HostCacheLimits limits, HostBlockSource source)
    : source_(source),
      limits_(limits),
      sweep_every_(std::clamp<uint64_t>(limits.max_idle_allocations / 4, 1, 4096)) {
  // A quarter of the limit between looks: a block goes back at most 25 % later than its time.
  if (timed()) sweep_period_ = limits_.max_idle_time / 4;
}

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
  std::vector<void*> idle;
  size_t idle_bytes = 0;
  void* cached = nullptr;
  {
    const Clock::time_point now = now_if_timed();
    std::lock_guard lock(mu_);
    ++stats_.allocations;
    if (stats_.allocations % sweep_every_ == 0 || (timed() && now - last_sweep_ >= sweep_period_)) {
      idle_bytes = take_idle(idle, now);
      last_sweep_ = now;
    }
    // The most recently freed block of the class: the others age, and go once nothing needs them.
    auto it = free_blocks_.upper_bound(cls);
    if (it != free_blocks_.begin() && std::prev(it)->first == cls) {
      --it;
      cached = it->second.ptr;
      free_blocks_.erase(it);
      ++stats_.cache_hits;
      stats_.bytes_cached -= cls;
      stats_.bytes_in_use += cls;
      stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    }
  }
  for (void* p : idle) source_.release(p);  // outside the lock
#if defined(__GLIBC__)
  if (source_.trim_heap && idle_bytes >= kTrimAfterBytes) malloc_trim(0);
#endif
  if (cached != nullptr) return cached;
  void* p = source_.allocate(cls);
  // kResourceExhausted like a device's out-of-memory: the executor retries the batch in smaller pieces.
  if (p == nullptr) fail(ErrorCode::kResourceExhausted, "out of {} allocating {} bytes", source_.what, cls);
  std::lock_guard lock(mu_);
  stats_.bytes_in_use += cls;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return p;
}

size_t CpuCachingAllocator::take_idle(std::vector<void*>& out, Clock::time_point now) {
  size_t bytes = 0;
  for (auto it = free_blocks_.begin(); it != free_blocks_.end();) {
    if (stats_.allocations - it->second.freed_at > limits_.max_idle_allocations ||
        (timed() && now - it->second.when > limits_.max_idle_time)) {
      out.push_back(it->second.ptr);
      bytes += it->first;
      it = free_blocks_.erase(it);
    } else {
      ++it;
    }
  }
  stats_.bytes_cached -= bytes;
  stats_.idle_released += out.size();
  return bytes;
}

void CpuCachingAllocator::deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  const size_t cls = size_class(bytes);
  const Clock::time_point now = now_if_timed();
  {
    std::lock_guard lock(mu_);
    stats_.bytes_in_use -= cls;
    if (stats_.bytes_cached + cls <= limits_.max_cached_bytes) {
      free_blocks_.emplace(cls, Cached{ptr, stats_.allocations, now});  // after its equals: the newest of its class
      stats_.bytes_cached += cls;
      return;
    }
  }
  source_.release(ptr);
}

PoolStats CpuCachingAllocator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void CpuCachingAllocator::release_cached() {
  std::lock_guard lock(mu_);
  for (auto& [cls, block] : free_blocks_) source_.release(block.ptr);
  free_blocks_.clear();
  stats_.bytes_cached = 0;
}

CpuCachingAllocator& default_cpu_allocator() {
  static auto* allocator = new CpuCachingAllocator();  // never destroyed: tensors may outlive static teardown
  return *allocator;
}

}  // namespace steno
