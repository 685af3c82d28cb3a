// The real HTTP server on 127.0.0.1 with an ephemeral port, in-process, over a FakeService.
#pragma once

#include <memory>
#include <string>

#include "fake_service.h"
#include "serve/http/server.h"
#include "test_client.h"

namespace steno::testing {

inline std::string test_audio(const std::string& name) {
  return std::string(STENO_TEST_DATA) + "/testset/espeak/audio/" + name;
}
// test-0000001.flac: 1.75 s of espeak-ng speech; the bundled model (C++ and PyTorch alike) hears this.
inline constexpr const char* kClip = "test-0000001.flac";
inline constexpr const char* kClipTranscript = "the rent is seven pounds a month";
// KServe v2 inference on the bundled model.
inline const std::string kInfer = "/v2/models/steno-tdt-small-en/infer";

struct TestServer {
  explicit TestServer(FakeService::Mode mode = FakeService::Mode::kCanned, serve::http::ServerOptions options = {})
      : service(mode) {
    options.host = "127.0.0.1";
    options.port = 0;
    server = std::make_unique<serve::http::HttpServer>(std::move(options), service);
    server->start();
  }
  ~TestServer() { server->stop(); }

  uint16_t port() const { return server->port(); }

  FakeService service;
  std::unique_ptr<serve::http::HttpServer> server;
};

}  // namespace steno::testing
