// A diarization kept to the speech (serve/diarization_gate.h): segments over digital silence go, segments are cut
// to the VAD's regions when it ran, speech is kept as it is.
#include "serve/diarization_gate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace steno::serve {
namespace {

// 10 s: silence, a tone over [2, 5) s, silence.
std::vector<float> tone_between_2_and_5_s() {
  std::vector<float> pcm(10 * 16000, 0.0f);
  for (size_t i = 2 * 16000; i < 5 * 16000; ++i) pcm[i] = 0.3f * std::sin(0.05f * static_cast<float>(i));
  return pcm;
}

DiarizationResult with_segments(std::vector<SpeakerSegmentResult> segments) {
  DiarizationResult d;
  d.num_speakers = 4;
  d.segments = std::move(segments);
  return d;
}

TEST(DiarizationGate, SegmentsOverSilenceGoAndSpeechStays) {
  const DiarizationGate gate(tone_between_2_and_5_s(), std::nullopt);
  DiarizationResult d = with_segments({{1, 0.3, 0.5}, {0, 1.9, 3.0}, {2, 4.0, 6.0}, {1, 7.0, 9.5}});
  gate.apply(d);
  ASSERT_EQ(d.segments.size(), 2u);  // those touching the tone, as they were
  EXPECT_EQ(d.segments[0].speaker, 0);
  EXPECT_DOUBLE_EQ(d.segments[0].start, 1.9);
  EXPECT_EQ(d.segments[1].speaker, 2);
  EXPECT_DOUBLE_EQ(d.segments[1].end, 6.0);
}

TEST(DiarizationGate, SegmentsAreCutToTheSpeechRegions) {
  const std::vector<vad::SampleRange> speech = {{2 * 16000, 3 * 16000}, {4 * 16000, 5 * 16000}};
  const DiarizationGate gate(tone_between_2_and_5_s(), speech);
  DiarizationResult d = with_segments({{0, 1.5, 4.5}, {1, 3.2, 3.8}, {1, 7.0, 8.0}});
  gate.apply(d);
  ASSERT_EQ(d.segments.size(), 2u);  // the first cut in two; the second between the regions; the third in silence
  EXPECT_EQ(d.segments[0].speaker, 0);
  EXPECT_DOUBLE_EQ(d.segments[0].start, 2.0);
  EXPECT_DOUBLE_EQ(d.segments[0].end, 3.0);
  EXPECT_DOUBLE_EQ(d.segments[1].start, 4.0);
  EXPECT_DOUBLE_EQ(d.segments[1].end, 4.5);
}

TEST(DiarizationGate, AnAnswerThatFailedPassesThrough) {
  auto gate = std::make_shared<const DiarizationGate>(std::vector<float>(16000, 0.0f), std::nullopt);
  TranscriptionResponse got;
  AnswerFn done = gated([&](TranscriptionResponse r) { got = std::move(r); }, gate);
  TranscriptionResponse failed;
  failed.outcome = Outcome::kInternal;
  failed.message = "boom";
  done(failed);
  EXPECT_EQ(got.outcome, Outcome::kInternal);
  EXPECT_EQ(got.message, "boom");
}

}  // namespace
}  // namespace steno::serve
