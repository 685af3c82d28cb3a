// Memory for tensors. Every allocation goes through an Allocator so that each device can pool its memory:
// the encoder allocates activations of the same few sizes for every layer and every request, and returning them
// to a cache instead of the OS keeps steady-state inference free of malloc/free and page faults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "steno/core/device.h"

namespace steno {

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // Returns memory aligned to at least 64 bytes, or throws. bytes == 0 returns a valid unique pointer.
  virtual void* allocate(size_t bytes) = 0;
  // `bytes` must be the size passed to allocate().
  virtual void deallocate(void* ptr, size_t bytes) = 0;
};

struct PoolStats {
  size_t bytes_in_use = 0;     // handed out and not yet returned
  size_t bytes_cached = 0;     // returned and kept for reuse
  size_t peak_bytes_in_use = 0;
  uint64_t allocations = 0;    // allocate() calls
  uint64_t cache_hits = 0;     // allocate() calls served from the cache
  uint64_t idle_released = 0;  // cached blocks handed back because nothing reused them for a while
};

// Where a caching host allocator gets its blocks and hands them back: the C heap by default; page-locked memory
// for the CUDA backend's staging (cuda::PinnedAllocator), which the same cache keeps from growing.
struct HostBlockSource {
  void* (*allocate)(size_t bytes);  // 64-byte aligned; nullptr when there is no memory
  void (*release)(void* ptr);
  const char* what;  // in the out-of-memory message: "host memory"
  bool trim_heap;    // released blocks went to glibc's heap: malloc_trim after large releases
};
HostBlockSource heap_blocks();

// A thread-safe caching allocator for host memory. Sizes are rounded up to a size class (powers of two split in
// four steps), freed blocks are kept per class and reused, the most recently freed first; the cache is bounded by
// `max_cached_bytes`, past which freed blocks go back to the OS. A cached block that no allocation of the next
// `max_idle_allocations` reused goes back too: a server sees batches of ever new shapes (lengths, batch sizes),
// and a cache holding a block of every shape it ever saw grows for hours towards its bound -- what a soak takes
// for a leak -- while steady work of the same shapes reuses its blocks every pass and never loses them.
class CpuCachingAllocator final : public Allocator {
 public:
  explicit CpuCachingAllocator(size_t max_cached_bytes = size_t{1} << 30,
                               uint64_t max_idle_allocations = uint64_t{1} << 16,
                               HostBlockSource source = heap_blocks());
  ~CpuCachingAllocator() override;
  CpuCachingAllocator(const CpuCachingAllocator&) = delete;
  CpuCachingAllocator& operator=(const CpuCachingAllocator&) = delete;

  Device device() const override { return Device::cpu(); }
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) override;

  PoolStats stats() const;
  void release_cached();  // hands every cached block back to the OS

  static size_t size_class(size_t bytes);  // public for tests

 private:
  struct Cached {
    void* ptr;
    uint64_t freed_at;  // stats_.allocations when it was cached
  };
  // Under mu_: takes the blocks idle for over max_idle_allocations out of the cache, into `out`; their bytes.
  size_t take_idle(std::vector<void*>& out);

  HostBlockSource source_;
  size_t max_cached_bytes_;
  uint64_t max_idle_allocations_;
  uint64_t sweep_every_;  // allocations between looks for idle blocks
  mutable std::mutex mu_;
  std::multimap<size_t, Cached> free_blocks_;  // size class -> blocks, in the order they were freed
  PoolStats stats_;
};

// The process-wide host allocator used when none is given.
CpuCachingAllocator& default_cpu_allocator();

}  // namespace steno
