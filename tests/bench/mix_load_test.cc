// The benchmark protocol's `mix` workload (docs/benchmarks.md): bench/mix_load.sh runs serve_load's open loop (Poisson
// arrivals at each rate) against a real `steno serve` (bundled model, CPU) and writes one result file: every answer
// equals its clip's reference (also in batches of clips of different lengths), each point has its arrivals,
// latency, SLO verdict and GPU summary (here: why there is none), and the headline is the highest rate that met
// the SLO.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>

#include "../cli_util.h"

namespace {

namespace fs = std::filesystem;

TEST(MixLoad, AnOpenLoopSweepGivesAValidResult) {
  const fs::path dir = fs::temp_directory_path() / ("steno_mix_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / "mix.json";
  const std::string cmd = std::string(STENO_SOURCE_DIR) + "/bench/mix_load.sh --steno " + STENO_BINARY +
                          " --serve-load " + SERVE_LOAD + " --out " + out.string() +
                          " --rates '2 8' --duration-s 4 --warmup-s 1 --mix-clips 8 -- --max-batch 8"
                          " --max-queue-delay-ms 400";
  int exit_code = -1;
  const std::string output = steno::testing::run(cmd + " 2>&1", &exit_code);
  ASSERT_EQ(exit_code, 0) << output;
  const nlohmann::json r = nlohmann::json::parse(steno::testing::slurp(out));
  const nlohmann::json& sweep = r.at("sweep");
  EXPECT_EQ(sweep.at("mode"), "open-loop");
  EXPECT_FALSE(sweep.at("settings").at("accept_differing_text").get<bool>());
  ASSERT_EQ(sweep.at("points").size(), 2u);
  for (const nlohmann::json& p : sweep.at("points")) {
    SCOPED_TRACE(p.at("rate_per_s").dump());
    EXPECT_GT(p.at("requests").get<int>(), 0);
    EXPECT_EQ(p.at("ok").get<int>(), p.at("requests").get<int>());
    EXPECT_EQ(p.at("wrong").get<int>() + p.at("failed").get<int>() + p.at("differs").get<int>(), 0);
    EXPECT_TRUE(p.at("latency_ms").contains("p99"));
    EXPECT_TRUE(p.at("gpu").contains("available"));  // NVML's summary, or why there is none
  }
  // At 8 arrivals/s the 400 ms window batches clips of different lengths together: the padded batches must give
  // every clip the text it got alone (checked above: no wrong answers), the property the GPU's random bf16 model
  // lacks (--accept-differing-text).
  const nlohmann::json& busy = sweep.at("points").at(1).at("server_metrics");
  EXPECT_GT(busy.at("mean_batch_size").get<double>(), 1.2);
  EXPECT_GT(busy.at("padding_waste_mean").get<double>(), 0.0);
  EXPECT_TRUE(sweep.at("gpu").contains("available"));
  // The SLO verdicts follow from each point's numbers (which ones meet it depends on the machine and on what else
  // runs on it: batches wait up to 400 ms, and on a shared 2-core machine even the light point has missed it), and
  // the headline is the highest rate that met it, or none.
  std::optional<double> met;
  for (const nlohmann::json& p : sweep.at("points")) {
    const nlohmann::json& sla = sweep.at("settings").at("sla");
    const bool meets = p.at("ok").get<int>() > 0 && p.at("latency_ms").at("p99").get<double>() <
                                                        sla.at("p99_ms_below").get<double>();
    EXPECT_EQ(p.at("meets_sla").get<bool>(), meets) << p.at("rate_per_s") << ": " << p.at("latency_ms").dump();
    if (meets) met = p.at("rate_per_s").get<double>();
  }
  if (met)
    EXPECT_EQ(r.at("headline").at("rate_per_s").get<double>(), *met);
  else
    EXPECT_TRUE(r.at("headline").is_null()) << r.at("headline");
  EXPECT_EQ(r.at("server").at("sigterm_exit_code").get<int>(), 0);
  fs::remove_all(dir);
}

}  // namespace
