// A long recording's VAD run in segments side by side (SpeechDetector, vad.h) against one sequential pass: the same
// speech regions, the probabilities apart only where a segment's primed state has not converged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "steno/vad/vad.h"
#include "test_signals.h"

namespace steno::vad {
namespace {

namespace fs = std::filesystem;

// Five minutes of the test set's clips with pauses of 0.3 to 2.3 s and quiet noise between them.
std::vector<float> five_minutes() {
  std::vector<std::string> clips;
  for (const auto& e : fs::directory_iterator(fs::path(STENO_SOURCE_DIR) / "tests/data/testset/espeak/audio"))
    clips.push_back(fs::relative(e.path(), STENO_SOURCE_DIR).string());
  std::sort(clips.begin(), clips.end());
  std::vector<float> pcm;
  for (size_t i = 0; pcm.size() < 300u * 16000; ++i) {
    const std::vector<float> clip = test::test_clip(clips[i % clips.size()]);
    pcm.insert(pcm.end(), clip.begin(), clip.end());
    const std::vector<float> gap = test::lcg_noise(static_cast<size_t>((0.3 + 0.5 * (i % 5)) * 16000), 0.002, 7 + i);
    pcm.insert(pcm.end(), gap.begin(), gap.end());
  }
  return pcm;
}

TEST(SpeechDetectorSegments, SameRegionsAsOneSequentialPass) {
  const std::vector<float> pcm = five_minutes();
  const SpeechDetector one(default_vad_dir(), {}, 1);
  const SpeechDetector four(default_vad_dir(), {}, 4);
  const std::vector<float> sequential = one.probabilities(pcm), segmented = four.probabilities(pcm);
  ASSERT_EQ(sequential.size(), segmented.size());
  // Four segments of 75 s: the later three start from a state primed on the 4 s before them. Silero's LSTM
  // remembers long (differences over 1e-3 were seen up to 45 s into a segment, most in its first 10 s), so the
  // probabilities are close, not equal, and the decisions and regions nearly the same.
  const size_t segment = (sequential.size() + 3) / 4;
  for (size_t k = 0; k < segment; ++k) ASSERT_EQ(sequential[k], segmented[k]) << k;  // the first: the same pass
  size_t flipped = 0;
  double worst = 0;
  for (size_t k = 0; k < sequential.size(); ++k) {
    worst = std::max(worst, std::abs(static_cast<double>(sequential[k]) - segmented[k]));
    flipped += (sequential[k] > 0.5f) != (segmented[k] > 0.5f) ? 1 : 0;
  }
  RecordProperty("max_abs_diff", std::to_string(worst));
  RecordProperty("decisions_flipped", std::to_string(flipped));
  EXPECT_LE(flipped, sequential.size() / 500) << "of " << sequential.size();  // at most 0.2 % of the 32 ms chunks

  // The regions: as many, each boundary within 3 chunks (96 ms; the regions are padded by 30 ms anyway).
  const std::vector<SampleRange> a = one.regions(pcm), b = four.regions(pcm);
  ASSERT_EQ(a.size(), b.size());
  int64_t moved = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LE(std::abs(a[i].begin - b[i].begin), 3 * SileroVad::kChunk) << "region " << i;
    EXPECT_LE(std::abs(a[i].end - b[i].end), 3 * SileroVad::kChunk) << "region " << i;
    moved = std::max({moved, std::abs(a[i].begin - b[i].begin), std::abs(a[i].end - b[i].end)});
  }
  RecordProperty("regions", std::to_string(a.size()));
  RecordProperty("max_boundary_shift_samples", std::to_string(moved));
}

TEST(SpeechDetectorSegments, ShortAudioIsOnePass) {
  const std::vector<float> pcm = test::lcg_noise(100 * 16000, 0.05);
  const SpeechDetector one(default_vad_dir(), {}, 1), many(default_vad_dir(), {}, 8);
  EXPECT_EQ(one.probabilities(pcm), many.probabilities(pcm));  // under two minutes: never cut
}

}  // namespace
}  // namespace steno::vad
