#include "serve/batch_cap.h"

#include <algorithm>

#include "steno/core/error.h"

namespace steno::serve {

BatchCap::BatchCap(int max_batch_size, OomPolicy policy) : max_(max_batch_size), policy_(policy), cap_(max_batch_size) {
  STENO_CHECK(max_batch_size >= 1, "max_batch_size must be >= 1, got {}", max_batch_size);
  STENO_CHECK(policy.regrow_after >= 1, "OomPolicy::regrow_after must be >= 1, got {}", policy.regrow_after);
}

std::optional<int> BatchCap::ran_out_of_memory(int n) {
  streak_ = 0;
  int lower = (n + 1) / 2;
  if (largest_ok_ < n) lower = std::max(lower, largest_ok_);
  largest_ok_ = 0;
  if (lower >= value()) return std::nullopt;
  cap_.store(lower, std::memory_order_relaxed);
  return lower;
}

std::optional<int> BatchCap::succeeded(int n) {
  largest_ok_ = std::max(largest_ok_, n);
  if (value() >= max_ || ++streak_ < policy_.regrow_after) return std::nullopt;
  streak_ = 0;
  const int grown = std::min(max_, value() + std::max(1, value() / 4));
  cap_.store(grown, std::memory_order_relaxed);
  return grown;
}

}  // namespace steno::serve
