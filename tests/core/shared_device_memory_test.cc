// Device memory shared by file descriptor (cuda_shared_memory.h): on a GPU, a pattern written through the
// creator's mapping reads back through an imported one (in this same process: the driver's import path is the
// same as in another), and outlives the creator; the weight allocator places weights in an arena over it and
// never hands arena memory to cudaFree. Without a GPU, clear kUnavailable errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <numeric>
#include <string>
#include <vector>

#include "../error_util.h"
#include "steno/core/cuda.h"
#include "core/cuda_fault.h"
#include "core/cuda_shared_memory.h"
#include "steno/core/error.h"
#include "core/weight_arena.h"

namespace steno::cuda {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device here: the GPU machine runs this"

std::vector<uint32_t> read_back(const void* device_ptr, size_t words) {
  std::vector<uint32_t> out(words);
  Stream stream(0);
  memcpy_async(out.data(), device_ptr, words * sizeof(uint32_t), stream);
  stream.synchronize();
  return out;
}

TEST(SharedDeviceMemory, FailsClearlyWithoutAGpu) {
  if (device_count() > 0) GTEST_SKIP() << "a GPU is present: the tests below use it";
  const std::string why = built() ? "cuda:0 is not available" : "built without CUDA";
  const std::string made =
      steno::testing::error_of([] { SharedDeviceMemory::create(0, 1 << 20); }, ErrorCode::kUnavailable);
  EXPECT_NE(made.find(why), std::string::npos) << made;
  const std::string mapped =
      steno::testing::error_of([] { SharedDeviceMemory::import(0, 0, 1 << 20); }, ErrorCode::kUnavailable);
  EXPECT_NE(mapped.find(why), std::string::npos) << mapped;
}

TEST(SharedDeviceMemory, APatternReadsBackThroughAnImportedMapping) {
  SKIP_WITHOUT_GPU();
  const size_t asked = (3u << 20) + 100;  // not a multiple of the granularity: both sides round it alike
  auto made = SharedDeviceMemory::create(0, asked);
  ASSERT_GE(made->size(), asked);
  EXPECT_EQ(made->device(), 0);
  const size_t words = made->size() / sizeof(uint32_t);
  std::vector<uint32_t> pattern(words);
  std::iota(pattern.begin(), pattern.end(), 0x5eed0000u);
  {
    Stream stream(0);
    memcpy_async(made->data(), pattern.data(), made->size(), stream);
    stream.synchronize();
  }

  const int fd = made->export_fd();
  ASSERT_GE(fd, 0);
  auto mapped = SharedDeviceMemory::import(0, fd, asked);
  ::close(fd);  // the import holds the memory, not the descriptor
  EXPECT_EQ(mapped->size(), made->size());
  EXPECT_NE(mapped->data(), made->data());  // an address range of its own, the same physical memory
  EXPECT_EQ(read_back(mapped->data(), words), pattern);

  // A write through the import is seen through the creator's mapping.
  const uint32_t marker = 0xabcdef01u;
  {
    Stream stream(0);
    memcpy_async(mapped->data(), &marker, sizeof marker, stream);
    stream.synchronize();
  }
  EXPECT_EQ(read_back(made->data(), 1).front(), marker);

  // The creator goes (as a worker that dies would): the importer's mapping still holds the memory.
  made.reset();
  pattern.front() = marker;
  EXPECT_EQ(read_back(mapped->data(), words), pattern);
}

TEST(SharedDeviceMemory, TheWeightAllocatorPlacesWeightsInAnArenaOverIt) {
  SKIP_WITHOUT_GPU();
  auto memory = SharedDeviceMemory::create(0, 1 << 20);
  ArenaAllocator arena(Device::cuda(0), memory->data(), memory->size());
  Allocator& weights = weight_allocator(0);
  void* first = nullptr;
  void* second = nullptr;
  {
    WeightArenaScope scope(0, arena);
    first = weights.allocate(1000);
    second = weights.allocate(10);
  }
  EXPECT_EQ(first, memory->data());
  EXPECT_EQ(static_cast<char*>(second), static_cast<char*>(memory->data()) + 1024);
  weights.deallocate(first, 1000);  // arena memory: no cudaFree (which would fail on a mapped range)
  weights.deallocate(second, 10);
  EXPECT_EQ(device_fault(0), "");

  WeightCountingScope counting(0);
  void* ordinary = weights.allocate(1000);  // cudaMalloc as usual, counted
  EXPECT_FALSE(ArenaAllocator::owns(ordinary));
  EXPECT_EQ(counting.bytes(), 1024u);
  LayoutFingerprint expected;
  expected.add(1000);
  EXPECT_EQ(counting.layout(), expected.value());
  weights.deallocate(ordinary, 1000);
  EXPECT_EQ(device_fault(0), "");
}

}  // namespace
}  // namespace steno::cuda
