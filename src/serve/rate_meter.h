// Events per second over a sliding window: how fast the batcher has been releasing requests, for the
// Retry-After hint of a full queue.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>

#include "steno/serve/service.h"

namespace steno::serve {

class RateMeter {
 public:
  explicit RateMeter(std::chrono::milliseconds window = std::chrono::seconds(10)) : window_(window) {}

  void record(Clock::time_point now, int64_t count);
  // Events per second over the window ending at `now`, averaged over at least one second (so that a first burst
  // does not read as a huge rate); 0 before any event.
  double rate(Clock::time_point now) const;

 private:
  std::chrono::milliseconds window_;
  std::deque<std::pair<Clock::time_point, int64_t>> events_;  // trimmed to the window on each record()
};

}  // namespace steno::serve
