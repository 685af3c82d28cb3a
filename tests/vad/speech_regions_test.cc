// The region rule on made-up probabilities, and the whole detector on synthetic signals: silence and noise give no
// speech, a test-set clip inside silence or noise is found where it is.
#include <gtest/gtest.h>

#include <cmath>

#include "steno/vad/speech_regions.h"
#include "steno/vad/vad.h"
#include "test_signals.h"

namespace steno::vad {
namespace {

constexpr int kRate = 16000, kChunk = 512;

// Probabilities of `seconds` of audio: 0.9 inside [on, off) seconds, 0.05 elsewhere.
std::vector<float> probs(double seconds, std::vector<std::pair<double, double>> speech) {
  std::vector<float> p(static_cast<size_t>(std::ceil(seconds * kRate / kChunk)), 0.05f);
  for (auto [on, off] : speech)
    for (size_t k = static_cast<size_t>(on * kRate / kChunk); k < static_cast<size_t>(off * kRate / kChunk); ++k)
      p[k] = 0.9f;
  return p;
}

TEST(SpeechRegions, SilenceHasNone) {
  EXPECT_TRUE(speech_regions(probs(60, {}), kChunk, kRate, 60 * kRate).empty());
}

TEST(SpeechRegions, PaddedAndClampedToTheRecording) {
  const auto r = speech_regions(probs(10, {{0.0, 2.0}, {5.0, 10.0}}), kChunk, kRate, 10 * kRate);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].begin, 0);
  EXPECT_NEAR(r[0].end, 2.3 * kRate, kChunk);
  EXPECT_NEAR(r[1].begin, 4.7 * kRate, kChunk);
  EXPECT_EQ(r[1].end, 10 * kRate);
}

TEST(SpeechRegions, CloseRegionsMergeAndBlipsAreDropped) {
  // 0.5 s apart: one region; a 0.1 s blip at 8 s: dropped.
  const auto r = speech_regions(probs(12, {{1.0, 3.0}, {3.5, 5.0}, {8.0, 8.1}}), kChunk, kRate, 12 * kRate);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NEAR(r[0].begin, 0.7 * kRate, kChunk);
  EXPECT_NEAR(r[0].end, 5.3 * kRate, kChunk);
}

TEST(SpeechRegions, ShortDipsDoNotEndSpeech) {
  std::vector<float> p = probs(6, {{1.0, 5.0}});
  p[100] = p[101] = 0.1f;  // 64 ms below the lower threshold, inside the speech
  const auto r = speech_regions(p, kChunk, kRate, 6 * kRate);
  ASSERT_EQ(r.size(), 1u);
}

// Pink noise (Paul Kellet's economy filter over white noise), scaled to peak about `amplitude`.
std::vector<float> pink_noise(size_t n, double amplitude) {
  const std::vector<float> white = test::lcg_noise(n, 1.0, 777);
  std::vector<float> out(n);
  double b0 = 0, b1 = 0, b2 = 0;
  for (size_t i = 0; i < n; ++i) {
    b0 = 0.99765 * b0 + white[i] * 0.0990460;
    b1 = 0.96300 * b1 + white[i] * 0.2965164;
    b2 = 0.57000 * b2 + white[i] * 1.0526913;
    out[i] = static_cast<float>((b0 + b1 + b2 + white[i] * 0.1848) * amplitude / 3.0);
  }
  return out;
}

const SpeechDetector& detector() {
  static const SpeechDetector d(default_vad_dir());
  return d;
}

TEST(SpeechDetector, DigitalSilenceHasNoSpeech) {
  EXPECT_TRUE(detector().regions(std::vector<float>(60 * kRate, 0.0f)).empty());
}

TEST(SpeechDetector, WhiteAndPinkNoiseHaveNoSpeech) {
  for (const double level : {0.001, 0.01, 0.1, 0.5}) {
    EXPECT_TRUE(detector().regions(test::lcg_noise(20 * kRate, level)).empty()) << "white noise at " << level;
    EXPECT_TRUE(detector().regions(pink_noise(20 * kRate, level)).empty()) << "pink noise at " << level;
  }
}

TEST(SpeechDetector, FindsAClipInSilenceAndInNoise) {
  const std::vector<float> clip = test::test_clip("tests/data/testset/espeak/audio/test-0000025.flac");
  for (const double level : {0.0, 0.003, 0.02}) {
    std::vector<float> pcm = test::lcg_noise(20 * kRate, level);
    const int64_t at = 7 * kRate;
    for (size_t i = 0; i < clip.size(); ++i) pcm[at + i] += clip[i];
    const auto r = detector().regions(pcm);
    ASSERT_EQ(r.size(), 1u) << "noise " << level;
    // The region covers the clip's speech (espeak leaves little silence at its ends) and not much more.
    EXPECT_LE(r[0].begin, at + kRate / 5) << "noise " << level;
    EXPECT_GE(r[0].end, at + static_cast<int64_t>(clip.size()) - kRate / 5) << "noise " << level;
    EXPECT_GE(r[0].begin, at - kRate) << "noise " << level;
    EXPECT_LE(r[0].end, at + static_cast<int64_t>(clip.size()) + kRate) << "noise " << level;
  }
}

}  // namespace
}  // namespace steno::vad
