// The real inference core -- one model, "steno-tdt-small-en" with its default aliases, on lanes over a runner the
// test chooses (canned answers unless given) -- behind the real HTTP server on 127.0.0.1 (an ephemeral port). For
// the tests of what the core decides and counts, seen through a protocol; FakeService (fake_service.h) serves the
// protocol tests that need to steer the answers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fake_service.h"
#include "steno/serve/config.h"
#include "serve/http/server.h"
#include "serve/inference_core.h"

namespace steno::testing {

// Runners that answer FakeService::canned() for every clip, at once.
serve::RunnerFactory canned_runners();

// The model spec CoreServer serves: `lanes` lanes over `runners`.
serve::ModelSpec core_test_model(serve::RunnerFactory runners, int lanes = 1);

struct CoreServer {
  explicit CoreServer(serve::RunnerFactory runners = canned_runners(), serve::http::ServerOptions options = {});
  ~CoreServer();

  uint16_t port() const { return http->port(); }

  std::unique_ptr<serve::InferenceCore> core;
  std::unique_ptr<serve::http::HttpServer> http;
};

}  // namespace steno::testing
