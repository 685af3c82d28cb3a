#include "steno/serve/service.h"

#include "steno/serve/completion.h"

namespace steno::serve {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kQueueFull: return "queue_full";
    case Outcome::kDeadlineExceeded: return "deadline_exceeded";
    case Outcome::kCancelled: return "cancelled";
    case Outcome::kShuttingDown: return "shutting_down";
    case Outcome::kUnknownModel: return "unknown_model";
    case Outcome::kError: return "error";
  }
  return "unknown";
}

Completion reject(std::unique_ptr<TranscriptionRequest> request, Outcome outcome, std::string message,
                  double queue_ms) {
  Completion c;
  c.response.outcome = outcome;
  c.response.message = std::move(message);
  c.response.durations.queue_ms = queue_ms;
  c.request = std::move(request);
  return c;
}

}  // namespace steno::serve
