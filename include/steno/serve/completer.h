// The one place a request is finished: its metrics, its log line, then its `done` callback. Every path (admission,
// expiry, executors) goes through a RequestCompleter, so the counts and logs agree with what clients saw.
#pragma once

#include <string>

#include "steno/serve/completion.h"
#include "steno/serve/metrics.h"

namespace steno::serve {

// One structured line (key=value; values with spaces or quotes are quoted and escaped, since ids and model names
// come from clients): id model outcome audio_s queue_ms compute_ms batch, then the stage timings on success or
// the message otherwise.
std::string request_log_line(const TranscriptionRequest& request, const TranscriptionResponse& response);

class RequestCompleter {
 public:
  // `metrics` null: the request has no per-model series (an unknown model).
  explicit RequestCompleter(ModelMetrics* metrics) : metrics_(metrics) {}

  // Records, logs at info level, and calls `done` (an exception from it is logged, never passed to the caller:
  // executors must go on serving).
  void operator()(Completion c) const;

 private:
  ModelMetrics* metrics_;
};

}  // namespace steno::serve
