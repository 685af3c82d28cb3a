// Time spans as the serving layer reports them (statistics, logs, responses), shared by the batch queue, the
// submission path and the executor pool, so that every kind of executor counts a batch the same way.
#pragma once

#include <algorithm>
#include <chrono>

#include "steno/asr/transcriber.h"
#include "steno/serve/service.h"

namespace steno::serve {

// Milliseconds from `from` to `to` (0 if `to` is earlier).
inline double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::max(0.0, std::chrono::duration<double, std::milli>(to - from).count());
}

// A batch's durations: its compute time and the engine's stages (each request adds its own queue time).
inline StageDurations batch_durations(double compute_ms, const asr::StageTimings& t) {
  StageDurations d;
  d.compute_ms = compute_ms;
  d.features_ms = t.features_ms;
  d.encoder_ms = t.encoder_ms;
  d.decoder_ms = t.decoder_ms;
  d.detokenize_ms = t.detokenize_ms;
  return d;
}

}  // namespace steno::serve
