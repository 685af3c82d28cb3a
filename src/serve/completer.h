// The one place a request is finished: its statistics, its log line, then its answer. Every path (submission,
// admission, expiry, executors) goes through a RequestCompleter, so the counts and logs agree with what clients
// saw, whatever the protocol.
#pragma once

#include <string>

#include "serve/completion.h"
#include "serve/statistics.h"

namespace steno::serve {

// One structured line (key=value; values with spaces or quotes are quoted and escaped, since ids and model names
// come from clients): id model outcome audio_s queue_ms compute_ms batch, then the stage timings on success or
// the message otherwise.
std::string request_log_line(const TranscriptionRequest& request, const TranscriptionResponse& response);

class RequestCompleter {
 public:
  // `stats` null: the request has no per-model series (an unknown model).
  explicit RequestCompleter(ModelStatistics* stats) : stats_(stats) {}

  // Fills in what the response carries from the request (model, warnings, audio seconds, input time), records it,
  // logs it at info level, and calls `done`, whose run time is the answer's compute_output (an exception from it
  // is logged, never passed to the caller: executors must go on serving).
  void operator()(Completion c) const;

 private:
  ModelStatistics* stats_;
};

}  // namespace steno::serve
