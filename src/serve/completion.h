// A request leaving the inference core: the request (owned, so it can be completed only once) and its response.
// Every path that finishes a request -- a rejection at admission, expiry in the queue, a finished or failed batch
// -- produces a Completion and hands it to one CompleteFn (the model's RequestCompleter), which records the
// statistics, logs, and answers the client.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "serve/request.h"

namespace steno::serve {

struct Completion {
  std::unique_ptr<TranscriptionRequest> request;
  TranscriptionResponse response;
};

using CompleteFn = std::function<void(Completion)>;

// A rejection (anything but kOk) for `request`; `queue_ms` is the time it spent in a batcher's queue, if any.
Completion reject(std::unique_ptr<TranscriptionRequest> request, Outcome outcome, std::string message,
                  double queue_ms = 0);

}  // namespace steno::serve
