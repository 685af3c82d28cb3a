// Memory for tensors. Every allocation goes through an Allocator so that each device can pool its memory:
// the encoder allocates activations of the same few sizes for every layer and every request, and returning them
// to a cache instead of the OS keeps steady-state inference free of malloc/free and page faults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

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
};

// A thread-safe caching allocator for host memory. Sizes are rounded up to a size class (powers of two split in
// four steps), freed blocks are kept per class and reused; the cache is bounded by `max_cached_bytes`, past which
// freed blocks go back to the OS.
class CpuCachingAllocator final : public Allocator {
 public:
  explicit CpuCachingAllocator(size_t max_cached_bytes = size_t{1} << 30);
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
  size_t max_cached_bytes_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_blocks_;  // size class -> block
  PoolStats stats_;
};

// The process-wide host allocator used when none is given.
CpuCachingAllocator& default_cpu_allocator();

}  // namespace steno
