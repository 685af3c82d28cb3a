#include "core_server.h"

namespace steno::testing {
namespace {

class CannedRunner final : public serve::BatchRunner {
 public:
  serve::BatchOutput run(const std::vector<std::span<const float>>& clips, asr::StageTimings*) override {
    std::vector<asr::Transcript> out;
    for (const auto& c : clips) out.push_back(FakeService::canned(static_cast<double>(c.size()) / 16000.0));
    return out;
  }
};

}  // namespace

serve::RunnerFactory canned_runners() {
  return [](int) { return std::make_unique<CannedRunner>(); };
}

serve::ModelSpec core_test_model(serve::RunnerFactory runners, int lanes) {
  serve::ModelSpec spec = serve::lane_model(FakeService::kModel, lanes, std::move(runners));
  spec.info.aliases = serve::default_asr_aliases();
  spec.info.platform = "steno_fastconformer_tdt";
  return spec;
}

CoreServer::CoreServer(serve::RunnerFactory runners, serve::http::ServerOptions options) {
  core = std::make_unique<serve::InferenceCore>(std::vector<serve::ModelSpec>{core_test_model(std::move(runners))});
  options.host = "127.0.0.1";
  options.port = 0;
  http = std::make_unique<serve::http::HttpServer>(std::move(options), *core);
  http->start();
}

CoreServer::~CoreServer() {
  http->stop();
  core->drain();
}

}  // namespace steno::testing
