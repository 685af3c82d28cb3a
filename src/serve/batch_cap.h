// The out-of-memory policy's memory: the largest batch one executor asks the batcher for.
//
// An executor whose batch runs out of memory (kResourceExhausted) has the batch split in halves and retried, down
// to single requests (one that still does not fit fails alone); from then on it asks for batches no larger than
// the half, or than the largest batch that ran since it last ran out -- unless a request too big even alone
// explains the failure (the clip is the problem, not the batch size). The need depends on clip lengths, not only
// on the count, so after `regrow_after` batches in a row without running out the cap grows back by a quarter (at
// least 1, up to the model's max_batch_size); a grown cap that runs out goes back to the last size that ran.
#pragma once

#include <atomic>
#include <optional>

namespace steno::serve {

struct OomPolicy {
  int regrow_after = 100;
};

// Written by its executor's pool thread only; read from anywhere (value()).
class BatchCap {
 public:
  BatchCap(int max_batch_size, OomPolicy policy);

  int value() const { return cap_.load(std::memory_order_relaxed); }

  // A batch of `n` (> 1) requests ran out of memory, and not because of one request alone. The new cap when it
  // was lowered.
  std::optional<int> ran_out_of_memory(int n);
  // A batch of `n` requests ran. The new cap when it grew back.
  std::optional<int> succeeded(int n);

 private:
  int max_;
  OomPolicy policy_;
  std::atomic<int> cap_;
  int streak_ = 0;      // batches run in a row without running out of memory
  int largest_ok_ = 0;  // the largest batch run since the last time it ran out of memory
};

}  // namespace steno::serve
