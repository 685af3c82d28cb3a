// Weights placed in one block of memory made beforehand, so that several processes can map the same block and
// share one copy of a model's weights (`steno serve --share-weights`, steno/serve/fleet/shared_weights.h).
//
// The sharing rests on determinism rather than on passing tensor addresses around: every process loads the
// model normally, with an ArenaAllocator over the shared block as its weight allocator. A load asks for the same
// sizes in the same order each time, so the arena hands out the same offsets and every process's tensors land on
// the same bytes, which each writes with the same values. The layout fingerprint checks that determinism where
// one process both counted a load and then made it (shared_weights.cc); across processes the same program, model
// files and dtype stand for it (weights_identity).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "steno/core/allocator.h"
#include "steno/core/device.h"

namespace steno {

// FNV-1a (64 bit) over a sequence of allocation sizes: equal for equal sequences, different (with overwhelming
// likelihood) for any other, including the same sizes in another order.
class LayoutFingerprint {
 public:
  void add(size_t bytes);
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 14695981039346656037ull;  // the FNV-1a 64-bit offset basis
};

// A bump allocator over memory it does not own: allocations in request order, each at a 256-byte aligned offset
// (the granularity of every device allocation in steno), never freed one by one (deallocate does nothing; the
// memory goes with its owner). Thread-safe. While an arena lives, owns() recognises its memory, so that the
// weight allocator does not hand a pointer into it to cudaFree.
class ArenaAllocator final : public Allocator {
 public:
  static constexpr size_t kAlignment = 256;
  // `bytes` rounded up to kAlignment; 0 takes kAlignment, as the weight allocator gives a 0-byte request a block.
  static size_t aligned(size_t bytes);

  // `base` must be kAlignment-aligned and hold `capacity` bytes on `device`, and outlive the arena.
  ArenaAllocator(Device device, void* base, size_t capacity);
  ~ArenaAllocator() override;
  ArenaAllocator(const ArenaAllocator&) = delete;
  ArenaAllocator& operator=(const ArenaAllocator&) = delete;

  Device device() const override { return device_; }
  // Throws kResourceExhausted, naming the sizes, when the request does not fit what is left.
  void* allocate(size_t bytes) override;
  void deallocate(void*, size_t) override {}

  size_t capacity() const { return capacity_; }
  size_t used() const;
  uint64_t layout() const;  // the fingerprint of the sizes requested so far
  size_t allocations() const;

  // True when `p` lies in the memory of a live arena (of any device).
  static bool owns(const void* p);

 private:
  Device device_;
  char* base_;
  size_t capacity_;
  mutable std::mutex mu_;
  size_t used_ = 0;
  size_t allocations_ = 0;
  LayoutFingerprint layout_;
};

namespace cuda {

// While alive, steno::cuda::weight_allocator(device) places weights in `arena` (which must outlive it) instead
// of cudaMalloc: a model loaded meanwhile has its weights there. Process-wide (every thread), one scope per device
// at a time (a second throws kInvalidArgument); load the model on the thread that holds the scope.
class WeightArenaScope {
 public:
  WeightArenaScope(int device, ArenaAllocator& arena);
  ~WeightArenaScope();
  WeightArenaScope(const WeightArenaScope&) = delete;
  WeightArenaScope& operator=(const WeightArenaScope&) = delete;

 private:
  int device_;
};

// While alive, weight_allocator(device) allocates as usual and also adds up what an arena would need for the same
// requests: load a model inside one to learn the size of the block its weights take, and their layout.
// Same rules as WeightArenaScope (the two exclude each other on a device).
class WeightCountingScope {
 public:
  explicit WeightCountingScope(int device);
  ~WeightCountingScope();
  WeightCountingScope(const WeightCountingScope&) = delete;
  WeightCountingScope& operator=(const WeightCountingScope&) = delete;

  size_t bytes() const;     // the sum of ArenaAllocator::aligned() of every request
  uint64_t layout() const;  // as ArenaAllocator::layout() for the same requests

 private:
  int device_;
};

namespace detail {
// For WeightAllocator (cuda_runtime.cc), before it allocates `bytes` on `device` itself: the arena's memory when a
// WeightArenaScope is active there (throws as ArenaAllocator::allocate), else null after counting the request for
// an active WeightCountingScope.
void* weight_scope_allocate(int device, size_t bytes);
}  // namespace detail

}  // namespace cuda
}  // namespace steno
