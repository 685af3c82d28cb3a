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
}

}  // namespace
