// The seed workload over KServe v2 gRPC (the load generator is a real client of the HTTP and the gRPC
// APIs): bench/seed_load.sh --protocol grpc starts a real `steno serve --grpc-port 0` (bundled model), and
// serve_load's gRPC client re-sends the clip as ModelInfer requests; every answer must equal the reference. A 10 s
// clip, not the protocol's 45 s, so that each 2 s window holds many answers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "../cli_util.h"

namespace {

namespace fs = std::filesystem;

TEST(SeedOverGrpc, EveryAnswerIsTheReferenceAndTheServerBatches) {
  const fs::path out = fs::temp_directory_path() / ("steno_seed_grpc_" + std::to_string(getpid()) + ".json");
  const std::string cmd = std::string(STENO_SOURCE_DIR) + "/bench/seed_load.sh --protocol grpc --steno " +
                          STENO_BINARY + " --serve-load " + SERVE_LOAD + " --out " + out.string() +
                          " --concurrency '1 3' --duration-s 2 --warmup-s 1 --clip-seconds 10 -- --max-batch 4";
  int exit_code = -1;
  const std::string log = steno::testing::run(cmd, &exit_code);
  ASSERT_EQ(exit_code, 0) << log;
  const nlohmann::json result = nlohmann::json::parse(steno::testing::slurp(out));
  const nlohmann::json& sweep = result.at("sweep");
  EXPECT_EQ(sweep.at("endpoint").get<std::string>().rfind("grpc://127.0.0.1:", 0), 0u) << sweep.at("endpoint");
  ASSERT_EQ(sweep.at("points").size(), 2u);
  for (const auto& p : sweep.at("points")) {
    // When a window holds no answer, the rows say when each request was sent and how long it took: that is how a
    // 4 s stall of spinning OpenMP teams beside other tests showed itself (tests/CMakeLists.txt).
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : p.at("per_request"))
      if (rows.size() < 24) rows.push_back(row);
    EXPECT_GT(p.at("ok").get<int>(), 0) << p.at("concurrency") << ": warm-up " << p.at("warmup") << ", drain "
                                        << p.at("drain") << ", first rows " << rows;
    EXPECT_EQ(p.at("failed").get<int>(), 0) << p.at("concurrency");
    EXPECT_EQ(p.at("wrong").get<int>(), 0) << p.at("concurrency");
  }
  // Three clients at once: the batcher puts more than one request in a batch.
  EXPECT_GT(sweep.at("points")[1].at("server_metrics").at("mean_batch_size").get<double>(), 1.0)
      << sweep.at("points")[1].at("server_metrics");
  EXPECT_TRUE(sweep.at("pass").get<bool>());
  fs::remove(out);
}

}  // namespace
