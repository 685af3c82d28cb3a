#include "serve/frontend/audio_start.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "steno/audio/decode.h"

namespace steno::serve {

std::optional<ServeError> audio_start_over_limit(std::string_view start, uint64_t total_bytes,
                                                 double max_audio_seconds, const std::string& param) {
  const auto estimate = audio::estimate_duration_s(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(start.data()), start.size()), total_bytes);
  if (!estimate) return std::nullopt;
  const double over = estimate->exact ? max_audio_seconds : max_audio_seconds * kEstimateMargin;
  if (estimate->seconds <= over) return std::nullopt;
  return ServeError(Outcome::kOverLimit,
                    fmt::format("audio is {}{:.1f} s, over the limit of {:g} s (--max-audio-seconds); refused from "
                                "its first {} bytes",
                                estimate->exact ? "" : "about ", estimate->seconds, max_audio_seconds, start.size()),
                    param);
}

double longest_audio_taken(const std::vector<ModelInfo>& models) {
  double longest = 0;
  for (const ModelInfo& m : models) longest = std::max(longest, m.max_audio_seconds);
  return longest;
}

}  // namespace steno::serve
