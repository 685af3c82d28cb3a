// `steno serve --grpc-port` as users run it: the real binary, the real inference core and the bundled model. A
// gRPC client transcribes clips, naming the model as Triton and OpenAI clients do ("whisper-1", "default": the
// default aliases); HTTP's statistics and /metrics count those calls and a failed one alike (one core, one count);
// SIGTERM lets a gRPC call in flight finish and the process exit 0; bad port settings are refused at start.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "../../cli_util.h"
#include "fleet_harness.h"
#include "grpc_test_util.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(GrpcServeCli, RefusesBadPortSettings) {
  int rc = 0;
  std::string out = run(std::string(STENO_BINARY) + " serve --port 8123 --grpc-port 8123", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("give gRPC its own port"), std::string::npos) << out;
  out = run(std::string(STENO_BINARY) + " serve --grpc-port 70000", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("grpc_port must be in 0..65535"), std::string::npos) << out;
  out = run(std::string("env -u STENO_API_KEY ") + STENO_BINARY + " serve --host 0.0.0.0 --grpc-port 8124", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("without an API key"), std::string::npos) << out;
}

// The gRPC front end is a module (src/serve/grpc/module.h): a server maps it, and gRPC's libraries, only when it
// serves gRPC.
TEST(GrpcServeCli, OnlyAServerOfGrpcMapsGrpc) {
  const auto maps = [](pid_t pid) { return slurp("/proc/" + std::to_string(pid) + "/maps"); };
  {
    FleetServer http_only("--executors 1");
    ASSERT_TRUE(http_only.started()) << http_only.log();
    const std::string mapped = maps(http_only.pid());
    ASSERT_NE(mapped.find("libstdc++"), std::string::npos) << mapped;
    EXPECT_EQ(mapped.find("libsteno-grpc.so"), std::string::npos);
    EXPECT_EQ(mapped.find("libgrpc"), std::string::npos);
  }
  FleetServer both("--executors 1 --grpc-port " + std::to_string(free_port()));
  ASSERT_TRUE(both.started()) << both.log();
  const std::string mapped = maps(both.pid());
  EXPECT_NE(mapped.find("libsteno-grpc.so"), std::string::npos) << mapped;
  EXPECT_NE(mapped.find("libgrpc++"), std::string::npos) << mapped;
}

TEST(GrpcServeCli, ServesBesideHttpThenDrainsOnSigterm) {
  const fs::path dir = fs::temp_directory_path() / ("steno-grpc-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const int grpc_port = free_port();
  std::ofstream(dir / "config.json") << R"({"grpc_port": )" << grpc_port << R"(, "max_queue_delay_ms": 5})";
  const std::string cmd = "(" + std::string(STENO_BINARY) + " serve --config " + (dir / "config.json").string() +
                          " --port 0 2>" + (dir / "log").string() + " & echo $! > " + (dir / "pid").string() +
                          "; wait $!; echo $? > " + (dir / "rc").string() + ") &";
  ASSERT_EQ(std::system(cmd.c_str()), 0);

  int http_port = 0;
  const std::regex listening("on http://127\\.0\\.0\\.1:([0-9]+) and grpc://127\\.0\\.0\\.1:([0-9]+)");
  for (int i = 0; i < 200 && http_port == 0; ++i) {
    std::smatch m;
    const std::string log = slurp(dir / "log");
    if (std::regex_search(log, m, listening)) {
      http_port = std::stoi(m[1]);
      EXPECT_EQ(std::stoi(m[2]), grpc_port);
    } else {
      std::this_thread::sleep_for(50ms);
    }
  }
  ASSERT_GT(http_port, 0) << slurp(dir / "log");
  const pid_t pid = std::stoi(slurp(dir / "pid"));

  auto stub = inference::GRPCInferenceService::NewStub(::grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(grpc_port), ::grpc::InsecureChannelCredentials()));
  for (const char* name : {"whisper-1", "default"}) {
    ::grpc::ClientContext c;
    prepare(c);
    inference::ModelInferRequest request = bytes_request(file_bytes(audio_path("test-0000001.flac")));
    request.set_model_name(name);
    inference::ModelInferResponse r;
    const ::grpc::Status st = stub->ModelInfer(&c, request, &r);
    ASSERT_TRUE(st.ok()) << name << ": " << st.error_message();
    EXPECT_EQ(r.model_name(), "steno-tdt-small-en") << "the served name answers for its alias " << name;
    EXPECT_EQ(outputs_of(r)["text"].bytes, std::vector<std::string>{default_transcripts().at("test-0000001.flac")});
  }
  {
    ::grpc::ClientContext c;
    prepare(c);
    inference::ModelInferResponse r;
    EXPECT_EQ(stub->ModelInfer(&c, bytes_request("this is text, not audio"), &r).error_code(),
              ::grpc::StatusCode::INVALID_ARGUMENT);
  }
  // One core behind both protocols: HTTP reports the gRPC calls, and the failure in both views by the same count.
  int rc = 0;
  const std::string base = "curl -sS http://127.0.0.1:" + std::to_string(http_port);
  const auto stats = nlohmann::json::parse(run(base + "/v2/models/steno-tdt-small-en/stats", &rc), nullptr, false);
  ASSERT_FALSE(stats.is_discarded());
  EXPECT_EQ(stats["model_stats"][0]["inference_count"], 2);
  EXPECT_EQ(stats["model_stats"][0]["inference_stats"]["fail"]["count"], 1);
  const std::string metrics = run(base + "/metrics", &rc);
  EXPECT_NE(metrics.find("nv_inference_request_success{model=\"steno-tdt-small-en\",version=\"1\"} 2"),
            std::string::npos)
      << metrics.substr(0, 2000);
  EXPECT_NE(metrics.find("nv_inference_request_failure{model=\"steno-tdt-small-en\",reason=\"OTHER\",version=\"1\"} 1"),
            std::string::npos)
      << metrics.substr(0, 3000);

  // A call in flight when SIGTERM arrives is still answered.
  ::grpc::ClientContext c;
  prepare(c);
  auto call = std::async(std::launch::async, [&] {
    inference::ModelInferResponse r;
    const ::grpc::Status st = stub->ModelInfer(&c, bytes_request(file_bytes(audio_path("test-0000005.flac"))), &r);
    return st.ok() ? outputs_of(r)["text"].bytes.at(0) : "error: " + st.error_message();
  });
  std::this_thread::sleep_for(30ms);  // long enough for the server to take it, shorter than transcribing it
  kill(pid, SIGTERM);
  EXPECT_EQ(call.get(), default_transcripts().at("test-0000005.flac"));

  std::string exit_code;
  for (int i = 0; i < 200 && exit_code.empty(); ++i) {
    exit_code = slurp(dir / "rc");
    if (exit_code.empty()) std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(exit_code, "0\n") << slurp(dir / "log");
  EXPECT_NE(slurp(dir / "log").find("SIGTERM received"), std::string::npos);
  fs::remove_all(dir);
}

// Fault injection is a tag of the service, not of HTTP: over gRPC (metadata x-steno-fault) a crashing request is
// replayed, then failed alone as a poison request; a bad tag is refused; the worker fleet serves on.
TEST(GrpcServeCli, FaultInjectionIsHonouredOverGrpcAsOverHttp) {
  const int grpc_port = free_port();
  FleetServer server("--share processes --executors 1 --threads-per-lane 1 --enable-fault-injection --grpc-port " +
                      std::to_string(grpc_port));
  ASSERT_TRUE(server.started()) << server.log();
  auto stub = inference::GRPCInferenceService::NewStub(::grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(grpc_port), ::grpc::InsecureChannelCredentials()));
  const std::string clip = file_bytes(audio_path("test-0000001.flac"));
  auto infer = [&](const std::string& fault, inference::ModelInferResponse* r) {
    ::grpc::ClientContext c;
    prepare(c);
    if (!fault.empty()) c.AddMetadata("x-steno-fault", fault);
    return stub->ModelInfer(&c, bytes_request(clip), r);
  };
  inference::ModelInferResponse r;
  ::grpc::Status st = infer("crash", &r);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INTERNAL) << st.error_message();
  EXPECT_NE(st.error_message().find("request crashed the worker twice; not retried"), std::string::npos)
      << st.error_message();
  st = infer("explode", &r);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_NE(st.error_message().find("X-Steno-Fault must be crash, hang, device-fault or oom"), std::string::npos)
      << st.error_message();
  st = infer("", &r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(outputs_of(r)["text"].bytes, std::vector<std::string>{default_transcripts().at("test-0000001.flac")});
  EXPECT_EQ(metric_sum(server.metrics(), "steno_worker_restarts_total"), 2) << server.metrics();
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace steno::testing
