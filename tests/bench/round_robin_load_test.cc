// N servers side by side behind serve_load's round robin (--closed-loop --ports), the arrangement one multi-GPU
// server is measured against (bench/, the scaling run): two real `steno serve` on the CPU, each on a free port,
// the bundled model. Every answer must be the reference's, and each server must carry its connections' share.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../cli_util.h"

namespace {

namespace fs = std::filesystem;

// Starts `steno serve` on a free port in the background; the shell variable NAME gets its pid, NAME_port its port.
std::string start_server(const std::string& name, const fs::path& log) {
  return std::string(STENO_BINARY) + " serve --port 0 --max-batch 4 > " + log.string() + " 2>&1 & " + name +
         "=$!; " + name + "_port=; for i in $(seq 600); do " + name + "_port=$(sed -n " +
         "'s|.* on http://127\\.0\\.0\\.1:\\([0-9]*\\).*|\\1|p' " + log.string() + "); [ -n \"$" + name +
         "_port\" ] && break; sleep 0.1; done; ";
}

// The sum of a server's nv_inference_request_success samples in its /metrics text (-1 when there is none).
double served_successes(const std::string& metrics) {
  double sum = -1;
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("nv_inference_request_success", 0) == 0)
      sum = std::max(sum, 0.0) + std::stod(line.substr(line.rfind(' ') + 1));
  return sum;
}

TEST(RoundRobinLoad, TwoServersShareTheConnectionsAndEveryAnswerIsRight) {
  const fs::path dir = fs::temp_directory_path() / ("steno_round_robin_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / "rr.json", log_a = dir / "a.log", log_b = dir / "b.log";
  const std::string clip = std::string(STENO_SOURCE_DIR) + "/tests/data/testset/espeak/audio/test-0000001.flac";
  const std::string cmd = start_server("a", log_a) + start_server("b", log_b) + SERVE_LOAD +
                          " --closed-loop --ports \"$a_port,$b_port\" --clip " + clip +
                          " --concurrency '2 4' --warmup-s 0.5 --duration-s 2 --out " + out.string() + "; rc=$?; " +
                          // What each server says it answered (the client's per_server split alone could not tell
                          // whether the connections really went to two servers).
                          "curl -s localhost:$a_port/metrics > " + (dir / "a.metrics").string() + "; " +
                          "curl -s localhost:$b_port/metrics > " + (dir / "b.metrics").string() + "; " +
                          "kill -TERM $a $b; wait $a $b; exit $rc";
  int exit_code = -1;
  const std::string output = steno::testing::run(cmd, &exit_code);
  ASSERT_EQ(exit_code, 0) << output << steno::testing::slurp(log_a) << steno::testing::slurp(log_b);
  const nlohmann::json r = nlohmann::json::parse(steno::testing::slurp(out));
  ASSERT_EQ(r.at("settings").at("servers").size(), 2u);
  EXPECT_NE(r.at("settings").at("servers")[0], r.at("settings").at("servers")[1]);
  ASSERT_EQ(r.at("points").size(), 2u);
  for (const auto& p : r.at("points")) {
    ASSERT_TRUE(p.contains("per_server")) << p.dump();
    ASSERT_EQ(p.at("per_server").size(), 2u);
    int sum = 0;
    for (const auto& s : p.at("per_server")) {
      EXPECT_GT(s.at("ok").get<int>(), 0) << "server on port " << s.at("port") << " got no request";
      EXPECT_EQ(s.at("wrong").get<int>() + s.at("failed").get<int>(), 0);
      sum += s.at("ok").get<int>();
    }
    EXPECT_EQ(sum, p.at("ok").get<int>());
    EXPECT_EQ(p.at("wrong").get<int>() + p.at("failed").get<int>(), 0);
  }
  // Each server answered at least its share of the windows (warm-up, drain and the reference come on top).
  const auto& points = r.at("points");
  for (int s = 0; s < 2; ++s) {
    int window_ok = 0;
    for (const auto& p : points) window_ok += p.at("per_server")[s].at("ok").get<int>();
    const double served = served_successes(steno::testing::slurp(dir / (s == 0 ? "a.metrics" : "b.metrics")));
    EXPECT_GE(served, window_ok) << "server " << s;
  }
  fs::remove_all(dir);
}

// bench/seed_load.sh --servers 2: the script starts both servers ({i} in the arguments is each one's index), runs
// the sweep through the round robin and stops both; the result names both servers' commands.
TEST(RoundRobinLoad, SeedLoadStartsNServersWithTheirIndexAndStopsThem) {
  const fs::path dir = fs::temp_directory_path() / ("steno_seed_servers_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / "seed.json";
  int code = -1;
  const std::string output = steno::testing::run(
      std::string(STENO_SOURCE_DIR) + "/bench/seed_load.sh --steno " + STENO_BINARY + " --serve-load " + SERVE_LOAD +
          " --servers 2 --clip-seconds 2 --concurrency 4 --warmup-s 0.5 --duration-s 2 --out " + out.string() +
          " -- --max-batch 4 --max-queue-delay-ms 1{i} 2>&1",
      &code);
  ASSERT_EQ(code, 0) << output;
  const nlohmann::json r = nlohmann::json::parse(steno::testing::slurp(out));
  const std::string first = r.at("server").at("command"), second = r.at("other_server_commands").at(0);
  EXPECT_EQ(r.at("other_server_commands").size(), 1u);
  EXPECT_TRUE(first.ends_with("--max-queue-delay-ms 10")) << first;
  EXPECT_TRUE(second.ends_with("--max-queue-delay-ms 11")) << second;
  const auto& point = r.at("sweep").at("points").at(0);
  ASSERT_EQ(point.at("per_server").size(), 2u);
  for (const auto& s : point.at("per_server")) EXPECT_GT(s.at("ok").get<int>(), 0) << point.dump();
  // Only HTTP and a single server's fault injection exclude --servers: a usage error, exit 2.
  const std::string bad = steno::testing::run(std::string(STENO_SOURCE_DIR) + "/bench/seed_load.sh --steno " +
                                                  STENO_BINARY + " --serve-load " + SERVE_LOAD +
                                                  " --servers 2 --protocol grpc 2>&1",
                                              &code);
  EXPECT_EQ(code, 2) << bad;
  fs::remove_all(dir);
}

// bench/run_gpu_scaling.sh's dry run on the CPU ("cpu,cpu"): the one-device, all-devices and round-robin arms each
// write a passing result, the multi-device arms at twice the one-device concurrencies.
TEST(RoundRobinLoad, TheScalingScriptsDryRunWritesEveryArm) {
  const fs::path dir = fs::temp_directory_path() / ("steno_scaling_" + std::to_string(getpid()));
  int code = -1;
  const std::string output = steno::testing::run(
      std::string("STENO_SCALING_DEVICE=cpu STENO_SCALING_ARMS='one all-lanes round-robin' ") +
          "STENO_SCALING_CONCURRENCY='1 2' STENO_SCALING_DURATION_S=1 " +
          "STENO_SCALING_PER_GPU='--lanes 1 --max-batch 4 --max-queue-delay-ms 20' STENO_SCALING_STENO=" +
          STENO_BINARY + " STENO_SCALING_SERVE_LOAD=" + SERVE_LOAD + " " + STENO_SOURCE_DIR +
          "/bench/run_gpu_scaling.sh " + dir.string() + " 2>&1",
      &code);
  ASSERT_EQ(code, 0) << output;
  for (const std::string arm : {"one", "all-lanes", "round-robin"}) {
    const nlohmann::json r = nlohmann::json::parse(steno::testing::slurp(dir / ("h200-scaling-" + arm + ".json")));
    const auto& points = r.at("sweep").at("points");
    ASSERT_EQ(points.size(), 2u) << arm;
    EXPECT_EQ(points[1].at("concurrency").get<int>(), arm == "one" ? 2 : 4) << arm;
    EXPECT_TRUE(r.at("sweep").at("pass").get<bool>()) << arm;
    if (arm == "round-robin") EXPECT_EQ(points[1].at("per_server").size(), 2u);
  }
  fs::remove_all(dir);
}

// --ports is for the closed loop over HTTP; anything else is a usage error (exit 2), not a silent single server.
TEST(RoundRobinLoad, PortsOutsideTheHttpClosedLoopIsAUsageError) {
  int code = -1;
  const std::string out = steno::testing::run(std::string(SERVE_LOAD) + " --offline --ports 8000,8001 2>&1", &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--ports applies to --closed-loop over HTTP only"), std::string::npos) << out;
  const std::string both = steno::testing::run(
      std::string(SERVE_LOAD) + " --closed-loop --port 8000 --ports 8000,8001 --clip x 2>&1", &code);
  EXPECT_EQ(code, 2) << both;
  EXPECT_NE(both.find("exclude each other"), std::string::npos) << both;
}

}  // namespace
