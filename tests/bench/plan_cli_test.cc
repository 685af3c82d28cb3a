// `steno plan` as a user runs it: the arithmetic printed, the GPU count, a result file's SLO search, clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../cli_util.h"

namespace {

// `steno plan ARGS`, stderr joined to stdout.
std::string run(const std::string& args, int* exit_code) {
  return steno::testing::run(std::string(STENO_BINARY) + " plan " + args, exit_code);
}

TEST(PlanCli, CaseStudyVolumePrintsTheArithmetic) {
  int rc = -1;
  const std::string out = run("--capacity-rps 92.1 --per-week 2400000 --requests-per-item 40", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("average load: 2400000 items/week x 40 requests/item / 604800 s/week"), std::string::npos) << out;
  EXPECT_NE(out.find("GPUs: 7\n"), std::string::npos) << out;
}

TEST(PlanCli, TakesTheCapacityFromAResultFile) {
  const auto path = std::filesystem::temp_directory_path() / "steno_plan_cli_test.json";
  std::ofstream(path) << R"({"sweep": {"points": [
    {"concurrency": 1, "requests_per_s": 2, "audio_seconds_per_s": 90, "ok": 60, "wrong": 0, "failed": 0,
     "latency_ms": {"mean": 400, "p99": 500}},
    {"concurrency": 8, "requests_per_s": 12, "audio_seconds_per_s": 540, "ok": 360, "wrong": 0, "failed": 0,
     "latency_ms": {"mean": 600, "p99": 900}},
    {"concurrency": 16, "requests_per_s": 13, "audio_seconds_per_s": 585, "ok": 390, "wrong": 0, "failed": 0,
     "latency_ms": {"mean": 1100, "p99": 1500}}]}})";
  int rc = -1;
  const std::string out = run("--result " + path.string() + " --peak-rps 30", &rc);
  std::filesystem::remove(path);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("best:              c = 8: 12 requests/s"), std::string::npos) << out;
  EXPECT_NE(out.find("first failing above: c = 16"), std::string::npos) << out;
  EXPECT_NE(out.find("GPUs: 3\n"), std::string::npos) << out;  // 30 / 12 x 1.2 = 3 exactly
}

TEST(PlanCli, EmitsAKustomizeOverlayWithTheArithmeticAsComments) {
  const auto path = std::filesystem::temp_directory_path() / "steno_plan_cli_emit_test.json";
  std::ofstream(path) << R"({"sweep": {"points": [
    {"concurrency": 100, "requests_per_s": 318.8, "audio_seconds_per_s": 14346, "ok": 9564, "wrong": 0, "failed": 0,
     "latency_ms": {"mean": 314.4, "p99": 372}, "server_metrics": {"queue_ms_mean": 85.2}}]}})";
  int rc = -1;
  const std::string out =
      run("--emit k8s --result " + path.string() + " --per-week 2400000 --requests-per-item 25", &rc);
  std::filesystem::remove(path);
  EXPECT_EQ(rc, 0) << out;
  // Every line of the text plan is a comment; then the overlay, with the floor, ceiling and target.
  EXPECT_NE(out.find("\n# GPUs: ceil(297.6 / 318.8 x (1 + 0.2 headroom)) = ceil(1.12) = 2\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("# time outside the queue at the capacity (c = 100): mean latency 314.4 ms - steno's queue "
                     "time 85.2 ms = 229.2 ms\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("# queue-time target: SLO mean 650 ms - 229.2 ms = 420.8 ms = 420800 us\n"
                     "apiVersion: kustomize.config.k8s.io/v1beta1\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("path: /spec/maxReplicaCount\n        value: 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("value: \"420800\"\n"), std::string::npos) << out;
  for (size_t at = 0, end; at < out.size(); at = end + 1) {  // nothing but comments before the YAML
    end = out.find('\n', at);
    if (out.compare(at, 11, "apiVersion:") == 0) break;
    EXPECT_EQ(out[at], '#') << out.substr(at, end - at);
  }
}

TEST(PlanCli, ClearErrorsForBadInput) {
  int rc = -1;
  std::string out = run("--peak-rps 10", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--capacity-rps"), std::string::npos) << out;
  out = run("--capacity-rps 10", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--peak-rps or as --per-week"), std::string::npos) << out;
  out = run("--result /nonexistent.json --peak-rps 1", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("not found"), std::string::npos) << out;
  out = run("--capacity-rps 92.1 --per-week 2400000 --emit k8s", &rc);  // no compute time to take from
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--compute-ms"), std::string::npos) << out;
  out = run("--capacity-rps 92.1 --per-week 2400000 --emit yaml", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--emit takes k8s"), std::string::npos) << out;
  out = run("--capacity-rps 92.1 --per-week 2400000 --compute-ms 200", &rc);  // an --emit option without --emit
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--emit"), std::string::npos) << out;
}

}  // namespace
