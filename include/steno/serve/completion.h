// A request leaving the inference core: the request (owned, so it can be completed only once) and its response.
// Every path that finishes a request -- a rejection at admission, expiry in the queue, a finished or failed batch
// -- produces a Completion and hands it to one CompleteFn, which records metrics, logs, and calls `done`.
#pragma once

#include <functional>
#include <memory>

#include "steno/serve/service.h"

namespace steno::serve {

// TranscriptionRequest::pcm's rate (the contract of service.h).
inline constexpr int kPcmSampleRate = 16000;

struct Completion {
  std::unique_ptr<TranscriptionRequest> request;
  TranscriptionResponse response;
};

using CompleteFn = std::function<void(Completion)>;

// A rejection (anything but kOk) for `request`; `queue_ms` is the time it spent in a batcher's queue, if any.
Completion reject(std::unique_ptr<TranscriptionRequest> request, Outcome outcome, std::string message,
                  double queue_ms = 0);

}  // namespace steno::serve
