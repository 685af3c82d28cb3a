// What the API handlers (OpenAI, KServe) share: the service, the options, the statistics, and the submission of
// a decoded request to the inference core. Held by shared_ptr and captured by the `done` callbacks, so that a
// late answer from the core never touches a destroyed server.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "errors.h"
#include "steno/serve/frontend/model_stats.h"
#include "steno/serve/http/router.h"
#include "steno/serve/http/server.h"

namespace steno::serve::http {

struct ApiContext {
  ApiContext(ServerOptions o, TranscriptionService& s)
      : options(std::move(o)), service(s), stats(options.stats ? options.stats : std::make_shared<ModelStats>()) {}

  ServerOptions options;
  TranscriptionService& service;
  std::shared_ptr<ModelStats> stats;  // options.stats (shared with the gRPC front end), else the server's own
  const std::chrono::system_clock::time_point started = std::chrono::system_clock::now();

  // The served model a client means: "" -> the default (the service's first), an alias -> its target, a served
  // name -> itself. Anything else throws HttpError 404 naming the models served (param = `param`).
  std::string resolve_model(std::string_view requested, const std::string& param = "model") const;
  bool serves(std::string_view model) const;
};

// A decoded, validated request ready for the core.
struct Submission {
  std::string model;
  std::vector<float> pcm;  // 16 kHz mono
  int priority = 0;
  Clock::time_point deadline = Clock::time_point::max();
  Clock::time_point received = Clock::now();  // when the handler got the request (before decoding)
  double input_ms = 0;                        // time spent decoding and validating the audio
};

// Renders a successful transcription into the response the API returns.
using RenderFn = std::function<HttpResponse(const TranscriptionResponse& response)>;

// Submits `submission` and answers `respond` once: render(response) on success, the error (in `style`) for any
// rejection; records statistics either way. `request` provides the id and the cancellation flag.
void submit_transcription(const std::shared_ptr<ApiContext>& ctx, const HttpRequest& request, ApiStyle style,
                          Submission submission, RenderFn render, Responder respond);

}  // namespace steno::serve::http
