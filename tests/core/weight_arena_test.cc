// The weight arena over plain host memory (it does not care whose memory it carves): offsets in request order at
// 256-byte alignment, a clear error when full, the layout fingerprint, and the scopes through which
// weight_allocator() places a model's weights in an arena or counts what they would take there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "../error_util.h"
#include "steno/core/error.h"
#include "core/weight_arena.h"

namespace steno {
namespace {

// 256-byte aligned host memory, freed with the test.
struct HostBlock {
  explicit HostBlock(size_t bytes) : data(static_cast<char*>(std::aligned_alloc(ArenaAllocator::kAlignment, bytes))) {}
  ~HostBlock() { std::free(data); }
  char* data;
};

uint64_t fingerprint(const std::vector<size_t>& sizes) {
  LayoutFingerprint f;
  for (size_t s : sizes) f.add(s);
  return f.value();
}

TEST(WeightArena, HandsOutAlignedBlocksInRequestOrder) {
  HostBlock block(4096);
  ArenaAllocator arena(Device::cpu(), block.data, 4096);
  EXPECT_EQ(arena.capacity(), 4096u);
  char* a = static_cast<char*>(arena.allocate(10));
  char* b = static_cast<char*>(arena.allocate(256));
  char* c = static_cast<char*>(arena.allocate(0));  // a 0-byte request still gets a block of its own
  char* d = static_cast<char*>(arena.allocate(257));
  EXPECT_EQ(a, block.data);
  EXPECT_EQ(b, block.data + 256);
  EXPECT_EQ(c, block.data + 512);
  EXPECT_EQ(d, block.data + 768);
  EXPECT_EQ(arena.used(), 768u + 512u);
  EXPECT_EQ(arena.allocations(), 4u);
  arena.deallocate(b, 256);  // nothing: arena memory goes with the arena
  EXPECT_EQ(arena.used(), 1280u);
  EXPECT_EQ(static_cast<char*>(arena.allocate(1)), block.data + 1280);
  EXPECT_EQ(ArenaAllocator::aligned(0), 256u);
  EXPECT_EQ(ArenaAllocator::aligned(256), 256u);
  EXPECT_EQ(ArenaAllocator::aligned(257), 512u);
}

TEST(WeightArena, SaysClearlyWhenFull) {
  HostBlock block(1024);
  ArenaAllocator arena(Device::cpu(), block.data, 1024);
  arena.allocate(700);  // takes 768
  const std::string why = testing::error_of([&] { arena.allocate(300); }, ErrorCode::kResourceExhausted);
  EXPECT_NE(why.find("weight arena on cpu is full"), std::string::npos) << why;
  EXPECT_NE(why.find("allocation 2 of 300 bytes"), std::string::npos) << why;
  EXPECT_NE(why.find("256 bytes left of 1024"), std::string::npos) << why;
  EXPECT_EQ(arena.used(), 768u);         // a refused request takes nothing
  EXPECT_NO_THROW(arena.allocate(256));  // what is left still fits exactly
  EXPECT_EQ(arena.used(), 1024u);
}

TEST(WeightArena, RefusesMisalignedMemory) {
  HostBlock block(1024);
  EXPECT_THROW(ArenaAllocator(Device::cpu(), block.data + 8, 512), Error);
  EXPECT_THROW(ArenaAllocator(Device::cpu(), nullptr, 512), Error);
}

TEST(WeightArena, FingerprintIsTheSequenceOfRequestedSizes) {
  EXPECT_EQ(fingerprint({1, 2, 3}), fingerprint({1, 2, 3}));
  EXPECT_NE(fingerprint({1, 2, 3}), fingerprint({3, 2, 1}));  // order matters
  EXPECT_NE(fingerprint({1, 2, 3}), fingerprint({1, 2}));
  EXPECT_NE(fingerprint({1, 2, 3}), fingerprint({1, 2, 4}));
  EXPECT_NE(fingerprint({10}), fingerprint({11}));  // sizes that align alike still differ
  EXPECT_NE(fingerprint({}), fingerprint({0}));

  HostBlock one(4096), two(4096);
  ArenaAllocator a(Device::cpu(), one.data, 4096), b(Device::cpu(), two.data, 4096);
  for (size_t s : {100, 7, 512}) {
    a.allocate(s);
    b.allocate(s);
  }
  EXPECT_EQ(a.layout(), b.layout());
  EXPECT_EQ(a.layout(), fingerprint({100, 7, 512}));
  b.allocate(1);
  EXPECT_NE(a.layout(), b.layout());
}

TEST(WeightArena, KnowsItsMemoryWhileItLives) {
  HostBlock block(1024);
  auto arena = std::make_unique<ArenaAllocator>(Device::cpu(), block.data, 1024);
  EXPECT_TRUE(ArenaAllocator::owns(block.data));
  EXPECT_TRUE(ArenaAllocator::owns(block.data + 1023));
  EXPECT_FALSE(ArenaAllocator::owns(block.data + 1024));
  int elsewhere = 0;
  EXPECT_FALSE(ArenaAllocator::owns(&elsewhere));
  arena.reset();
  EXPECT_FALSE(ArenaAllocator::owns(block.data));
}

// The scopes as WeightAllocator sees them (detail::weight_scope_allocate), without a GPU: the arena's device is
// cuda:7 by name only, nothing here touches it.
TEST(WeightArena, ScopesPlaceOrCountTheWeightAllocatorsRequests) {
  constexpr int kDevice = 7;
  EXPECT_EQ(cuda::detail::weight_scope_allocate(kDevice, 100), nullptr);  // no scope: cudaMalloc as usual

  HostBlock block(2048);
  ArenaAllocator arena(Device::cuda(kDevice), block.data, 2048);
  {
    cuda::WeightArenaScope scope(kDevice, arena);
    EXPECT_EQ(cuda::detail::weight_scope_allocate(kDevice, 100), block.data);
    EXPECT_EQ(cuda::detail::weight_scope_allocate(kDevice, 300), block.data + 256);
    EXPECT_EQ(cuda::detail::weight_scope_allocate(kDevice + 1, 100), nullptr);  // another device: not this arena
    const std::string why =
        testing::error_of([&] { cuda::WeightCountingScope again(kDevice); }, ErrorCode::kInvalidArgument);
    EXPECT_NE(why.find("already active"), std::string::npos) << why;
  }
  EXPECT_EQ(cuda::detail::weight_scope_allocate(kDevice, 100), nullptr);  // the scope is gone
  EXPECT_EQ(arena.used(), 768u);

  cuda::WeightCountingScope counting(kDevice);
  EXPECT_EQ(cuda::detail::weight_scope_allocate(kDevice, 100), nullptr);  // counted, then allocated as usual
  EXPECT_EQ(cuda::detail::weight_scope_allocate(kDevice, 300), nullptr);
  EXPECT_EQ(counting.bytes(), 768u);
  EXPECT_EQ(counting.layout(), arena.layout());  // the same requests, the same layout

  HostBlock host(1024);
  ArenaAllocator cpu_arena(Device::cpu(), host.data, 1024);
  EXPECT_THROW(cuda::WeightArenaScope(kDevice + 1, cpu_arena), Error);  // an arena of another device
}

}  // namespace
}  // namespace steno
