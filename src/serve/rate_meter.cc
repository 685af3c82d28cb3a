#include "serve/rate_meter.h"

#include <algorithm>

namespace steno::serve {

void RateMeter::record(Clock::time_point now, int64_t count) {
  events_.emplace_back(now, count);
  while (!events_.empty() && events_.front().first < now - window_) events_.pop_front();
}

double RateMeter::rate(Clock::time_point now) const {
  const Clock::time_point from = now - window_;
  int64_t total = 0;
  Clock::time_point first = now;
  for (const auto& [t, n] : events_) {
    if (t < from) continue;
    total += n;
    first = std::min(first, t);
  }
  if (total == 0) return 0;
  const double span = std::clamp(std::chrono::duration<double>(now - first).count(), 1.0,
                                 std::chrono::duration<double>(window_).count());
  return static_cast<double>(total) / span;
}

}  // namespace steno::serve
