// green_transcriber_runners (the `green` sharing mode): the clear failure where there is no GPU, and on a
// GPU (skipped elsewhere) lanes on 16-SM green contexts transcribing the bundled test clips as a plain lane does.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>

#include "../error_util.h"
#include "steno/audio/decode.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "serve/lanes.h"

namespace steno::serve {
namespace {

namespace fs = std::filesystem;

const std::string kModelDir = std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en";

using steno::testing::error_of;

TEST(GreenRunners, FailClearlyWithoutAGpu) {
  if (steno::cuda::device_count() > 0) GTEST_SKIP() << "a GPU is present: GreenRunnersGpu covers it";
  auto model = asr::AsrModel::load(kModelDir);
  const std::string msg = error_of([&] { green_transcriber_runners(model, 16); }, ErrorCode::kUnavailable);
  EXPECT_NE(msg.find("--share green puts lanes on CUDA green contexts"), std::string::npos) << msg;
  EXPECT_NE(msg.find(steno::cuda::built() ? "no CUDA GPU is visible" : "built without CUDA"), std::string::npos)
      << msg;
  error_of([] { green_transcriber_runners(nullptr, 16); }, ErrorCode::kInvalidArgument);
}

class GreenRunnersGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    spdlog::set_level(spdlog::level::warn);
  }

  static std::vector<std::vector<float>> clips(size_t n) {
    const fs::path dir = fs::path(STENO_TEST_DATA) / "testset" / "espeak";
    std::ifstream tsv(dir / "reference_transcripts.tsv");
    std::vector<std::vector<float>> out;
    for (std::string line; out.size() < n && std::getline(tsv, line);) {
      const size_t tab = line.find('\t');
      if (tab != std::string::npos) out.push_back(audio::load_audio_file((dir / line.substr(0, tab)).string()).samples);
    }
    return out;
  }

  static std::vector<std::string> texts(BatchRunner& runner, const std::vector<std::vector<float>>& audio) {
    std::vector<std::span<const float>> spans(audio.begin(), audio.end());
    asr::StageTimings timings;
    std::vector<std::string> out;
    for (const asr::Transcript& t : runner.run(spans, &timings).transcripts) out.push_back(t.text);
    return out;
  }
};

TEST_F(GreenRunnersGpu, TranscribeLikeAPlainLane) {
  asr::ModelOverrides on_gpu;
  on_gpu.device = Device::cuda(0);
  auto model = asr::AsrModel::load(kModelDir, on_gpu);
  const auto audio = clips(6);
  ASSERT_EQ(audio.size(), 6u);
  auto plain = transcriber_runners(model, 0)(0);
  auto green = green_transcriber_runners(model, 16);
  auto lane0 = green(0);
  auto lane1 = green(1);
  const std::vector<std::string> want = texts(*plain, audio);
  for (const std::string& t : want) EXPECT_FALSE(t.empty());
  EXPECT_EQ(texts(*lane0, audio), want);
  EXPECT_EQ(texts(*lane1, audio), want);
}

TEST_F(GreenRunnersGpu, RejectBadSmCountsAndACpuModel) {
  asr::ModelOverrides on_gpu;
  on_gpu.device = Device::cuda(0);
  auto model = asr::AsrModel::load(kModelDir, on_gpu);
  const steno::cuda::SmPartitioning p = steno::cuda::sm_partitioning(0);
  ASSERT_GT(p.alignment, 1) << "the tests assume an SM alignment above 1 (8 on sm_90)";
  for (int bad : {0, p.alignment + 1, p.sms + p.alignment}) {
    const std::string msg = error_of([&] { green_transcriber_runners(model, bad); }, ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("use a multiple of " + std::to_string(p.alignment)), std::string::npos) << msg;
  }
  const std::string msg = error_of([] { green_transcriber_runners(asr::AsrModel::load(kModelDir), 16); },
                                   ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("load the model on cuda"), std::string::npos) << msg;
}

}  // namespace
}  // namespace steno::serve
