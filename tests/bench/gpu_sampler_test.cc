// The NVML sampler on whatever machine runs the test: without NVML (CI, the development machine) it must say why
// and give no samples, never fail; with a GPU it must sample every GPU at about its period.
#include "steno/bench/gpu_sampler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

namespace steno::bench {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST(GpuSampler, SamplesEveryGpuOrSaysWhyNot) {
  const double start = unix_now();
  GpuSampler sampler(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double end = unix_now();
  const nlohmann::json described = sampler.describe();
  const nlohmann::json summary = sampler.summary(start, end);
  if (!sampler.available()) {
    EXPECT_FALSE(sampler.why_unavailable().empty());
    EXPECT_EQ(described.at("available"), false);
    EXPECT_EQ(described.at("why"), sampler.why_unavailable());
    EXPECT_EQ(summary.at("available"), false);
    EXPECT_TRUE(sampler.samples(start, end).empty());
    std::printf("[ measured ] no GPU samples here: %s\n", sampler.why_unavailable().c_str());
    return;
  }
  EXPECT_TRUE(sampler.why_unavailable().empty());
  const size_t gpus = described.at("gpus").size();
  ASSERT_GE(gpus, 1u);
  ASSERT_EQ(summary.at("gpus").size(), gpus);
  for (const auto& g : summary.at("gpus")) {
    EXPECT_GE(g.at("samples").get<int>(), 3) << g.dump();  // ~6 at 50 ms over 300 ms
    EXPECT_GT(g.at("mem_total_gib").get<double>(), 0) << g.dump();
    EXPECT_LE(g.at("util_gpu_pct_max").get<unsigned>(), 100u) << g.dump();
  }
  for (const GpuSample& s : sampler.samples(start, end)) {
    EXPECT_GE(s.unix_s, start);
    EXPECT_LT(s.unix_s, end);
  }
  std::printf("[ measured ] %s\n", summary.dump().c_str());
}

}  // namespace
}  // namespace steno::bench
