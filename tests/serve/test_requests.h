// Helpers for the serve tests: a fake clock and requests that record how they were completed.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "serve/completion.h"

namespace steno::serve::testing {

// Time for BatchQueue, moved by hand: no test sleeps.
struct FakeClock {
  Clock::time_point now = Clock::time_point{} + std::chrono::hours(1);
  void advance(std::chrono::microseconds d) { now += d; }
};

// A request of `samples` zero samples; `done` stores the response into `*out` when given.
inline std::unique_ptr<TranscriptionRequest> make_request(std::string id, size_t samples, int priority = 0,
                                                          std::optional<TranscriptionResponse>* out = nullptr) {
  auto r = std::make_unique<TranscriptionRequest>();
  r->id = std::move(id);
  r->model = "m";
  r->pcm.assign(samples, 0.0f);
  r->priority = priority;
  if (out) r->done = [out](TranscriptionResponse resp) { *out = std::move(resp); };
  return r;
}

inline std::vector<std::string> ids(const std::vector<std::unique_ptr<TranscriptionRequest>>& requests) {
  std::vector<std::string> out;
  for (const auto& r : requests) out.push_back(r->id);
  return out;
}

}  // namespace steno::serve::testing
