// The benchmark protocol's `offline` workload as served (docs/benchmarks.md): serve_load --offline against a real
// `steno serve` (bundled model, CPU): the mix's first clips as one job, longest first, all in flight at once; every
// answer must equal the clip's reference, and the result gives the RTFx.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "../cli_util.h"

namespace {

namespace fs = std::filesystem;

TEST(OfflineLoad, TheMixAsOneJobEveryAnswerRightWithItsRtfx) {
  const fs::path dir = fs::temp_directory_path() / ("steno_offline_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / "offline.json", log = dir / "server.log";
  // The server on a free port (read from its log), the run, then SIGTERM; the exit status is serve_load's.
  const std::string cmd =
      std::string(STENO_BINARY) + " serve --port 0 --max-batch 8 > " + log.string() + " 2>&1 & pid=$!; port=; " +
      "for i in $(seq 600); do port=$(sed -n 's|.* on http://127\\.0\\.0\\.1:\\([0-9]*\\).*|\\1|p' " + log.string() +
      "); [ -n \"$port\" ] && break; sleep 0.1; done; " + SERVE_LOAD + " --offline --port \"$port\" --mix-clips 10 " +
      "--warmup 1 --out " + out.string() + "; rc=$?; kill -TERM $pid; wait $pid; exit $rc";
  int exit_code = -1;
  const std::string output = steno::testing::run(cmd, &exit_code);
  ASSERT_EQ(exit_code, 0) << output << steno::testing::slurp(log);
  const nlohmann::json r = nlohmann::json::parse(steno::testing::slurp(out));
  EXPECT_EQ(r.at("mode"), "offline");
  EXPECT_EQ(r.at("requests").get<int>(), 10);
  EXPECT_EQ(r.at("ok").get<int>(), 10);
  EXPECT_EQ(r.at("failed").get<int>(), 0);
  EXPECT_EQ(r.at("references").at("clips").get<int>(), 10);
  // RTFx is the answered audio over the wall time.
  const double audio = r.at("audio_seconds").get<double>(), wall = r.at("wall_s").get<double>();
  ASSERT_GT(wall, 0);
  EXPECT_NEAR(r.at("rtfx").get<double>(), audio / wall, 1e-6 * audio / wall);
  EXPECT_NEAR(audio, r.at("clip_lengths").at("total_s").get<double>(), 0.01);
  ASSERT_EQ(r.at("per_request").size(), 10u);
  fs::remove_all(dir);
}

}  // namespace
