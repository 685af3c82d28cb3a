// serve::build_server, the whole server from a configuration, in this process: what `steno serve` runs, with the
// bundled model, on lanes and on worker processes (this test program starts `steno worker`s through
// ServeConfig::worker_executable), driven over real HTTP.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "../error_util.h"
#include "steno/serve/server.h"
#include "test_client.h"

namespace steno::serve {
namespace {

using steno::testing::HttpClient;

const std::string kModelDir = std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en";
const std::string kClip = std::string(STENO_TEST_DATA) + "/testset/espeak/audio/test-0000001.flac";
constexpr const char* kClipTranscript = "the rent is seven pounds a month";

ServeConfig config_for_test() {
  ServeConfig c;
  c.port = 0;
  c.model.dir = kModelDir;
  c.model.executors = 2;
  c.model.threads_per_executor = 1;
  c.model.max_batch = 4;
  return c;
}

std::string transcribe(uint16_t port, const std::string& model) {
  steno::testing::Form form;
  form.fields = {{"model", model}};
  form.file = steno::testing::read_file(kClip);
  HttpClient client(port);
  const auto r =
      client.request("POST", "/v1/audio/transcriptions", form.body(), {{"Content-Type", form.content_type()}});
  if (r.status != 200) return "status " + std::to_string(r.status) + ": " + r.body;
  return nlohmann::json::parse(r.body)["text"];
}

class BuildServer : public ::testing::Test {
 protected:
  BuildServer() { spdlog::set_level(spdlog::level::warn); }
  ~BuildServer() override { spdlog::set_level(spdlog::level::info); }
};

TEST_F(BuildServer, ServesTheBundledModelByItsNameAndAliasesOnLanes) {
  auto server = build_server(config_for_test());
  server->start();
  ASSERT_GT(server->http_port(), 0);
  EXPECT_EQ(server->grpc_port(), 0);
  EXPECT_NE(server->banner().find("serving model 'steno-tdt-small-en'"), std::string::npos) << server->banner();
  EXPECT_NE(server->banner().find("2 lane(s) on cpu (f32), max batch 4"), std::string::npos) << server->banner();
  const std::vector<ModelInfo> models = server->service().models();
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].executors, 2);
  EXPECT_EQ(models[0].aliases, default_asr_aliases());
  for (const char* name : {"steno-tdt-small-en", "whisper-1", "default", ""})
    EXPECT_EQ(transcribe(server->http_port(), name), kClipTranscript) << "model '" << name << "'";
  server->stop();
  server->stop();  // idempotent
  EXPECT_FALSE(server->service().ready());
}

TEST_F(BuildServer, ServesOnWorkerProcessesOfTheStenoBinary) {
  ServeConfig c = config_for_test();
  c.model.share = ShareMode::kProcesses;
  c.model.aliases = {"asr"};
  c.model.name = "bundled";
  c.worker_executable = STENO_BINARY;  // this test program is not `steno`: its workers are
  auto server = build_server(c);
  server->start();
  EXPECT_NE(server->banner().find("2 worker process(es)"), std::string::npos) << server->banner();
  EXPECT_EQ(transcribe(server->http_port(), "asr"), kClipTranscript);
  EXPECT_EQ(transcribe(server->http_port(), "bundled"), kClipTranscript);
  EXPECT_NE(transcribe(server->http_port(), "whisper-1").find("status 404"), std::string::npos);  // not its alias
  server->stop();
}

TEST_F(BuildServer, RefusesWhatItCannotBuild) {
  ServeConfig c = config_for_test();
  c.model.dir = "/nonexistent/model";
  EXPECT_THROW(build_server(c), Error);
  c = config_for_test();
  c.model.share = ShareMode::kMps;  // on the CPU
  EXPECT_NE(steno::testing::error_of([&] { build_server(c); }, ErrorCode::kUnavailable).find("--share mps"),
            std::string::npos);
  c = config_for_test();
  c.model.max_batch = 0;
  EXPECT_THROW(build_server(c), Error);
}

}  // namespace
}  // namespace steno::serve
