// Memory for tensors. Every allocation goes through an Allocator so that each device can pool its memory:
// the encoder allocates activations of the same few sizes for every layer and every request, and returning them
// to a cache instead of the OS keeps steady-state inference free of malloc/free and page faults.
#pragma once

#include <chrono>
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
// heap_blocks()' allocation: 64-byte aligned; from 2 MiB on, aligned to and advised into huge pages.
void* allocate_host_block(size_t bytes);

// How long a caching host allocator keeps what it was given back.
struct HostCacheLimits {
  size_t max_cached_bytes = size_t{1} << 30;  // past this, freed blocks go back to the source at once
  // A cached block goes back once no allocation reused it for max_idle_allocations allocations or for
  // max_idle_time (zero: no time limit), whichever comes first. The count suits a pool allocated from many times a
  // second (the CPU engine's activations); the time bounds one allocated from only a few times a batch (the CUDA
  // backend's staging), whose count would take many minutes to run out.
  uint64_t max_idle_allocations = uint64_t{1} << 16;
  std::chrono::milliseconds max_idle_time{30'000};
};

// A thread-safe caching allocator for host memory. Sizes are rounded up to a size class (powers of two split in
// four steps), freed blocks are kept per class and reused, the most recently freed first; the cache is bounded by
// `max_cached_bytes`, past which freed blocks go back to the OS. A cached block that nothing reused for a while
// (HostCacheLimits) goes back too: a server sees batches of ever new shapes (lengths, batch sizes), and a cache
// holding a block of every shape it ever saw grows for hours towards its bound -- what a soak takes for a leak --
// while steady work of the same shapes reuses its blocks every pass and never loses them. Idle blocks are looked
// for on allocation: a server that stops getting work keeps what it cached until work comes again.
class CpuCachingAllocator final : public Allocator {
 public:
  explicit CpuCachingAllocator(HostCacheLimits limits = {}, HostBlockSource source = heap_blocks());
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
  using Clock = std::chrono::steady_clock;
  struct Cached {
    void* ptr;
    uint64_t freed_at;       // stats_.allocations when it was cached
    Clock::time_point when;  // ... and the time (set only under a time limit)
  };
  bool timed() const { return limits_.max_idle_time.count() > 0; }
  // The time under a time limit (~20 ns through the vDSO, beside an allocation's lock and map lookup); else none.
  Clock::time_point now_if_timed() const { return timed() ? Clock::now() : Clock::time_point{}; }
  // Under mu_: takes the blocks idle for too long (limits_) out of the cache, into `out`; their bytes.
  size_t take_idle(std::vector<void*>& out, Clock::time_point now);

  HostBlockSource source_;
  HostCacheLimits limits_;
  uint64_t sweep_every_;             // allocations between looks for idle blocks
  Clock::duration sweep_period_{};   // ... or this long, under a time limit
  Clock::time_point last_sweep_{};
  mutable std::mutex mu_;
  std::multimap<size_t, Cached> free_blocks_;  // size class -> blocks, in the order they were freed
  PoolStats stats_;
};

// The process-wide host allocator used when none is given.
CpuCachingAllocator& default_cpu_allocator();

}  // namespace steno
