// What the API handlers (OpenAI, KServe) share: the service, the options, and the hand-off of a request to the
// service's one submission path. Held by shared_ptr and captured by the answer callbacks, so that a late answer
// from the core never touches a destroyed server.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "errors.h"
#include "serve/http/router.h"
#include "serve/http/server.h"

namespace steno::serve::http {

struct ApiContext {
  ApiContext(ServerOptions o, TranscriptionService& s) : options(std::move(o)), service(s) {}

  ServerOptions options;
  TranscriptionService& service;
  const std::chrono::system_clock::time_point started = std::chrono::system_clock::now();
};

// Renders a successful transcription into the response the API returns.
using RenderFn = std::function<HttpResponse(const TranscriptionResponse& response)>;
// Renders a failure itself when it returns a response (a streamed answer that has begun ends with an error event);
// nullopt: the error in the API's style.
using RenderFailureFn = std::function<std::optional<HttpResponse>(const HttpError& error)>;

// Fills in what every HTTP submission takes from the request (its id, cancellation flag and fault tag), submits it,
// and answers `respond` once: render(response) on success, the error in `style` otherwise (or render_failure's);
// every answer carries the response's warnings as x-steno-warning headers.
void submit_transcription(const std::shared_ptr<ApiContext>& ctx, const HttpRequest& request, ApiStyle style,
                          Submission submission, RenderFn render, Responder respond,
                          RenderFailureFn render_failure = nullptr);

}  // namespace steno::serve::http
