// steno's Silero VAD against onnxruntime running Silero's own ONNX model (tests/data/vad/silero_golden.json, made
// by tools/vad/silero_reference.py): one second of digital silence, a test-set clip, one second of noise.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "steno/core/error.h"
#include "steno/vad/silero_vad.h"
#include "steno/vad/vad.h"
#include "test_signals.h"

namespace steno::vad {
namespace {

TEST(SileroVad, MatchesOnnxRuntime) {
  std::ifstream in(std::string(STENO_TEST_DATA) + "/vad/silero_golden.json");
  ASSERT_TRUE(in) << "golden missing";
  const nlohmann::json g = nlohmann::json::parse(in);
  std::vector<float> clip = test::test_clip(g["source"].get<std::string>());
  ASSERT_EQ(static_cast<int64_t>(clip.size()), g["clip_samples"].get<int64_t>());
  std::vector<float> pcm(static_cast<size_t>(std::lround(g["lead_seconds"].get<double>() * 16000)), 0.0f);
  pcm.insert(pcm.end(), clip.begin(), clip.end());
  const std::vector<float> tail = test::lcg_noise(static_cast<size_t>(std::lround(g["tail_seconds"].get<double>() * 16000)),
                                                  g["noise_amplitude"].get<double>(), g["noise_seed"].get<uint32_t>());
  pcm.insert(pcm.end(), tail.begin(), tail.end());

  const SileroVad vad = SileroVad::load(default_vad_dir());
  ops::Context ctx = ops::Context::cpu(1);
  const std::vector<float> got = vad.speech_probabilities(ctx, pcm);
  const auto want = g["probabilities"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    // f32 sums in another order than onnxruntime's, carried through 180 LSTM steps: 1e-3 is ample, and far below
    // what moves a decision (the thresholds are 0.5 and 0.35).
    EXPECT_NEAR(got[k], want[k], 1e-3) << "chunk " << k;
    worst = std::max(worst, std::abs(static_cast<double>(got[k]) - want[k]));
  }
  RecordProperty("max_abs_diff", std::to_string(worst));
}

TEST(SileroVad, EmptyAudioHasNoChunks) {
  const SileroVad vad = SileroVad::load(default_vad_dir());
  ops::Context ctx = ops::Context::cpu(1);
  EXPECT_TRUE(vad.speech_probabilities(ctx, {}).empty());
  EXPECT_EQ(vad.speech_probabilities(ctx, std::vector<float>(513, 0.0f)).size(), 2u);
}

TEST(SileroVad, LongInputIsProcessedInBlocksWithTheStateCarried) {
  // 40 s spans two blocks; the second block must continue the first's LSTM state, which a fresh start would not.
  std::vector<float> pcm = test::lcg_noise(40 * 16000, 0.05);
  const std::vector<float> clip = test::test_clip("tests/data/testset/espeak/audio/test-0000005.flac");
  std::copy(clip.begin(), clip.end(), pcm.begin() + 32 * 16000);
  const SileroVad vad = SileroVad::load(default_vad_dir());
  ops::Context ctx = ops::Context::cpu(1);
  const std::vector<float> whole = vad.speech_probabilities(ctx, pcm);
  // The same chunks one at a time (blocks of one through the public path: every prefix's last probability).
  const size_t from = 1020, to = 1030;
  for (size_t k = from; k < to; ++k) {
    const std::vector<float> prefix =
        vad.speech_probabilities(ctx, std::span<const float>(pcm).first((k + 1) * SileroVad::kChunk));
    EXPECT_NEAR(prefix.back(), whole[k], 1e-5) << "chunk " << k;
  }
}

TEST(SileroVad, MissingModelIsAClearError) {
  try {
    SileroVad::load("/nonexistent/vad");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

}  // namespace
}  // namespace steno::vad
