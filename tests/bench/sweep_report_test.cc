// The benchmark chain end to end on the CPU, as CI runs it: bench/sweep.sh runs two arms of the seed
// workload against real `steno serve` processes (bundled model), then `steno bench report` writes the report and
// its plots. Checks that every result file is a valid sweep, that the report's headline per arm is the SLO search
// over that arm's points, and that the plots are real SVG drawn by gnuplot.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "../cli_util.h"
#include "steno/bench/capacity_plan.h"

namespace {

namespace fs = std::filesystem;

using steno::testing::slurp;

TEST(SweepReport, TwoArmsOnTheCpuGiveResultsAndAReportWithPlots) {
  const fs::path out = fs::temp_directory_path() / ("steno_sweep_test_" + std::to_string(getpid()));
  fs::remove_all(out);
  const std::string cmd = std::string(STENO_SOURCE_DIR) + "/bench/sweep.sh --out-dir " + out.string() +
                          " --steno " + STENO_BINARY + " --serve-load " + SERVE_LOAD +
                          " --arm 'single: --lanes 1 --max-batch 1'"
                          " --arm 'batch: --lanes 1 --max-batch 8 --max-queue-delay-ms 20'"
                          " --concurrency '1 2' --duration-s 2 --warmup-s 1 --clip-seconds 10";
  int exit_code = -1;
  const std::string log = steno::testing::run(cmd, &exit_code);
  ASSERT_EQ(exit_code, 0) << log;

  const std::string report = slurp(out / "report.md");
  for (const char* arm : {"single", "batch"}) {
    SCOPED_TRACE(arm);
    const nlohmann::json result = nlohmann::json::parse(slurp(out / (std::string(arm) + ".json")));
    const auto points = steno::bench::load_points_from_result(result);
    ASSERT_EQ(points.size(), 2u);
    for (const auto& pt : points) EXPECT_EQ(pt.errors, 0);
    // 10 s clips, not the protocol's 45 s: one of those takes ~0.55 s on the 2-core development machine alone and
    // ~1.1 s at c = 2 on one lane, too near the SLO (mean < 650 ms) for a machine running other tests beside this
    // one. A 10 s clip keeps both points well inside it, so the test checks the plumbing, not the machine.
    const auto search = steno::bench::search_slo(points, {});
    // When it fails, each point's numbers and its first requests (when sent, how long they took) say why.
    std::string why;
    for (const auto& p : result.at("sweep").at("points")) {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& row : p.at("per_request"))
        if (rows.size() < 12) rows.push_back(row);
      why += "\nc = " + p.at("concurrency").dump() + ": ok " + p.at("ok").dump() + ", latency " +
             p.at("latency_ms").dump() + ", misses " + p.at("sla_misses").dump() + ", warm-up " +
             p.at("warmup").dump() + ", drain " + p.at("drain").dump() + ", first rows " + rows.dump();
    }
    ASSERT_TRUE(search.best) << why;
    const std::string row = "| " + std::string(arm) + " | `" + (out / (std::string(arm) + ".json")).string() + "` |";
    const auto at = report.find(row);
    ASSERT_NE(at, std::string::npos) << report;
    const std::string line = report.substr(at, report.find('\n', at) - at);
    char best[64];
    std::snprintf(best, sizeof best, "**%.4g**", search.best->requests_per_s);
    EXPECT_NE(line.find(best), std::string::npos) << line;
  }
  EXPECT_NE(report.find("No GPU plot"), std::string::npos) << report;  // the CPU machine has no NVML
  EXPECT_NE(report.find("cores; no GPU)"), std::string::npos) << report;  // nor nvidia-smi lines
  for (const char* svg : {"latency.svg", "batch_sizes.svg"}) {
    const std::string text = slurp(out / svg);
    EXPECT_EQ(text.rfind("<?xml", 0), 0u) << svg;
    EXPECT_NE(text.find("<svg"), std::string::npos) << svg;
    EXPECT_NE(text.find("</svg>"), std::string::npos) << svg;
    EXPECT_NE(report.find(std::string("](") + svg + ")"), std::string::npos) << svg << " not in the report";
  }
  fs::remove_all(out);
}

}  // namespace
