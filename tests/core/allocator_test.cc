#include "steno/core/allocator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "steno/core/error.h"

namespace steno {
namespace {

// Blocks from 2 MiB on start on a huge page's boundary (so that each 2 MiB of them can be one), smaller ones on a
// cache line's; every byte of either can be written and read back.
TEST(HostBlocks, LargeBlocksAreAlignedToHugePages) {
  for (const size_t bytes : {size_t{100}, size_t{64} << 10, (size_t{2} << 20) - 1, size_t{2} << 20,
                             (size_t{5} << 20) + 123}) {
    auto* p = static_cast<unsigned char*>(allocate_host_block(bytes));
    ASSERT_NE(p, nullptr) << bytes;
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    EXPECT_EQ(at % (bytes >= (size_t{2} << 20) ? size_t{2} << 20 : 64), 0u) << bytes;
    std::memset(p, 0xA5, bytes);
    EXPECT_EQ(p[0], 0xA5);
    EXPECT_EQ(p[bytes - 1], 0xA5);
    heap_blocks().release(p);
  }
}

TEST(CpuCachingAllocator, SizeClassesBoundWaste) {
  EXPECT_EQ(CpuCachingAllocator::size_class(1), 256u);
  EXPECT_EQ(CpuCachingAllocator::size_class(1024), 1024u);
  EXPECT_EQ(CpuCachingAllocator::size_class(1025), 1280u);
  for (size_t n = 300; n < 1'000'000; n = n * 3 / 2 + 7) {
    const size_t c = CpuCachingAllocator::size_class(n);
    EXPECT_GE(c, n);
    EXPECT_LE(c, n + n / 4 + 1);
  }
}

TEST(CpuCachingAllocator, ReusesFreedBlocksAndAligns) {
  CpuCachingAllocator alloc;
  void* a = alloc.allocate(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  alloc.deallocate(a, 1000);
  void* b = alloc.allocate(990);  // same size class
  EXPECT_EQ(a, b);
  PoolStats s = alloc.stats();
  EXPECT_EQ(s.allocations, 2u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.bytes_in_use, CpuCachingAllocator::size_class(990));
  alloc.deallocate(b, 990);
  EXPECT_EQ(alloc.stats().bytes_in_use, 0u);
  alloc.release_cached();
  EXPECT_EQ(alloc.stats().bytes_cached, 0u);
}

TEST(CpuCachingAllocator, CacheIsBounded) {
  CpuCachingAllocator alloc({.max_cached_bytes = 4096});
  void* a = alloc.allocate(4096);
  void* b = alloc.allocate(4096);
  alloc.deallocate(a, 4096);
  alloc.deallocate(b, 4096);  // over the bound: freed, not cached
  EXPECT_EQ(alloc.stats().bytes_cached, 4096u);
}

// A block no allocation reused for a while goes back; blocks reused every pass never do.
TEST(CpuCachingAllocator, IdleBlocksAreReleasedAndBusyOnesKept) {
  CpuCachingAllocator alloc({.max_idle_allocations = 16});
  void* rare = alloc.allocate(1 << 20);  // a shape seen once
  alloc.deallocate(rare, 1 << 20);
  void* a = alloc.allocate(4096);  // two of a steady shape at once, once
  void* b = alloc.allocate(4096);
  alloc.deallocate(a, 4096);
  alloc.deallocate(b, 4096);
  for (int i = 0; i < 100; ++i) {  // then one at a time: the newest is reused, the other ages
    void* p = alloc.allocate(4096);
    EXPECT_TRUE(p == a || p == b);
    alloc.deallocate(p, 4096);
  }
  const PoolStats s = alloc.stats();
  EXPECT_EQ(s.bytes_cached, 4096u);  // the one in use each pass; the rare megabyte and the spare went back
  EXPECT_EQ(s.idle_released, 2u);
  EXPECT_EQ(s.cache_hits, 100u);
}

// A pool allocated from only a few times a batch (the CUDA backend's staging) would take the count limit many
// minutes to run out: a block nothing reused for max_idle_time goes back too, while one reused every few
// milliseconds stays; without a time limit the same wait keeps the idle block.
TEST(CpuCachingAllocator, BlocksIdleForTheTimeLimitAreReleased) {
  using namespace std::chrono_literals;
  for (const auto limit : {std::chrono::milliseconds(100), std::chrono::milliseconds(0)}) {
    CpuCachingAllocator alloc({.max_idle_allocations = uint64_t{1} << 40, .max_idle_time = limit});
    alloc.deallocate(alloc.allocate(1 << 20), 1 << 20);  // a shape seen once
    const auto end = std::chrono::steady_clock::now() + 400ms;
    while (std::chrono::steady_clock::now() < end) {  // a steady shape, a few hundred times
      alloc.deallocate(alloc.allocate(4096), 4096);
      std::this_thread::sleep_for(2ms);
    }
    const PoolStats s = alloc.stats();
    if (limit.count() > 0) {
      EXPECT_GE(s.idle_released, 1u);
      EXPECT_EQ(s.bytes_cached, 4096u);  // the megabyte went back; the steady block is cached (again, after a stall)
    } else {
      EXPECT_EQ(s.idle_released, 0u);
      EXPECT_EQ(s.bytes_cached, 4096u + (1u << 20));
    }
  }
}

// Blocks come from and go back to the allocator's source (the CUDA backend's pinned staging uses page-locked
// memory): every block it took is handed back -- idle, over the bound or at release_cached -- and its name is in the
// out-of-memory message.
struct CountingSource {
  static inline int taken = 0, released = 0;
  static inline bool exhausted = false;
  static HostBlockSource source() {
    return {[](size_t bytes) -> void* {
              if (exhausted) return nullptr;
              ++taken;
              return heap_blocks().allocate(bytes);
            },
            [](void* p) {
              ++released;
              heap_blocks().release(p);
            },
            "counted memory", /*trim_heap=*/false};
  }
};

TEST(CpuCachingAllocator, BlocksComeFromAndGoBackToItsSource) {
  {
    CpuCachingAllocator alloc({.max_cached_bytes = 8192, .max_idle_allocations = 4}, CountingSource::source());
    void* rare = alloc.allocate(1 << 12);
    alloc.deallocate(rare, 1 << 12);  // cached, then idle
    void* big = alloc.allocate(1 << 14);
    alloc.deallocate(big, 1 << 14);  // over the bound: straight back
    EXPECT_EQ(CountingSource::released, 1);
    for (int i = 0; i < 8; ++i) alloc.deallocate(alloc.allocate(256), 256);  // the 4 KiB block ages out
    EXPECT_EQ(CountingSource::released, 2);
    EXPECT_EQ(alloc.stats().idle_released, 1u);
    CountingSource::exhausted = true;
    try {
      alloc.allocate(1 << 16);
      FAIL() << "an exhausted source gave a block";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
      EXPECT_NE(std::string(e.what()).find("out of counted memory"), std::string::npos) << e.what();
    }
    CountingSource::exhausted = false;
  }  // the 256-byte block, cached, goes back with the allocator
  EXPECT_EQ(CountingSource::taken, 3);
  EXPECT_EQ(CountingSource::released, 3);
}

// Out of memory is kResourceExhausted on the host too, so an executor splits the batch as it does on a GPU.
TEST(CpuCachingAllocator, OutOfMemoryIsResourceExhausted) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on an impossible allocation instead of returning null";
#endif
  CpuCachingAllocator alloc;
  const size_t impossible = size_t{1} << 62;  // 4 EiB: more than any address space
  try {
    alloc.allocate(impossible);
    FAIL() << "a 4 EiB allocation succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(std::string(e.what()).find("out of host memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(alloc.stats().bytes_in_use, 0u);
}

}  // namespace
}  // namespace steno
