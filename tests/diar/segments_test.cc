// NeMo's post-processing (vad_utils.ts_vad_post_processing and speaker_utils.merge_float_intervals) on cases
// computed by hand from its definition; NeMo's own segments for real model output are checked in
// sortformer_fidelity_test.cc.
#include "steno/diar/segments.h"

#include <gtest/gtest.h>

#include "steno/core/error.h"

namespace steno::diar {
namespace {

using Segs = std::vector<std::array<float, 2>>;

void expect_segments(const Segs& got, const Segs& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_FLOAT_EQ(got[i][0], want[i][0]) << "segment " << i;
    EXPECT_FLOAT_EQ(got[i][1], want[i][1]) << "segment " << i;
  }
}

std::vector<float> steps(std::initializer_list<std::pair<int, float>> runs) {  // (count, value) runs
  std::vector<float> out;
  for (const auto& [n, v] : runs) out.insert(out.end(), n, v);
  return out;
}

TEST(PostProcessSpeaker, ASegmentRunsFromTheFirstFrameAboveOnsetToTheFirstBelowOffset) {
  const std::vector<float> p = {0.2f, 0.6f, 0.7f, 0.4f, 0.3f};
  expect_segments(post_process_speaker(p, 1, {}), {{0.01f, 0.03f}});
}

TEST(PostProcessSpeaker, HysteresisAndALastSegmentThatEndsAtTheLastFrameIndex) {
  PostProcessingParams p;
  p.onset = 0.6;
  p.offset = 0.3;
  // 0.4 and 0.35 stay speech (not below the offset); speech still on at the end ends at the last index, 0.05.
  expect_segments(post_process_speaker({{0.5f, 0.7f, 0.4f, 0.35f, 0.2f, 0.65f}}, 1, p),
                  {{0.01f, 0.04f}, {0.05f, 0.05f}});
}

TEST(PostProcessSpeaker, EachModelFrameCoversUnitFrames) {
  // The second 80 ms frame is above the onset and last: speech over 10 ms frames 8..15, ending at index 15.
  expect_segments(post_process_speaker({{0.1f, 0.9f}}, 8, {}), {{0.08f, 0.15f}});
}

TEST(PostProcessSpeaker, PaddingWidensSegmentsAndJoinsOverlappingOnes) {
  PostProcessingParams p;
  p.pad_onset = 0.02;
  p.pad_offset = 0.02;
  // [0, 0.04] (the onset pad clipped at 0) and [0.02, 0.08] overlap after padding: one segment.
  expect_segments(post_process_speaker({{0.9f, 0.9f, 0.1f, 0.1f, 0.9f, 0.9f, 0.1f}}, 1, p), {{0.0f, 0.08f}});
}

TEST(PostProcessSpeaker, ShortSpeechIsDroppedBeforeShortGapsAreFilled) {
  // Raw segments [0, 0.10], [0.12, 0.14], [0.30, 0.50].
  const std::vector<float> probs = steps({{10, 1.0f}, {2, 0.0f}, {2, 1.0f}, {16, 0.0f}, {20, 1.0f}, {1, 0.0f}});
  expect_segments(post_process_speaker(probs, 1, {}), {{0.0f, 0.10f}, {0.12f, 0.14f}, {0.30f, 0.50f}});
  PostProcessingParams p;
  p.min_duration_on = 0.05;   // drops [0.12, 0.14] ...
  p.min_duration_off = 0.25;  // ... and then the 0.2 s gap left between the others is filled
  expect_segments(post_process_speaker(probs, 1, p), {{0.0f, 0.50f}});
  PostProcessingParams gaps_only;
  gaps_only.min_duration_off = 0.05;  // fills [0.10, 0.12] only
  expect_segments(post_process_speaker(probs, 1, gaps_only), {{0.0f, 0.14f}, {0.30f, 0.50f}});
}

TEST(PostProcessSpeaker, SilenceGivesNoSegments) {
  PostProcessingParams p;
  p.min_duration_on = 0.1;
  p.min_duration_off = 0.1;
  EXPECT_TRUE(post_process_speaker(std::vector<float>(50, 0.1f), 8, p).empty());
  EXPECT_TRUE(post_process_speaker({}, 8, p).empty());
}

TEST(SpeakerSegments, OffsetRoundingMergingAndNeMosLines) {
  // probs [frames=4, speakers=2], 80 ms frames, offset 1.5 s.
  const std::vector<float> probs = {0.9f, 0.1f,  //
                                    0.9f, 0.1f,  //
                                    0.1f, 0.1f,  //
                                    0.1f, 0.9f};
  const std::vector<SpeakerSegment> segs = speaker_segments(probs, 4, 2, 8, {}, 1.5);
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(nemo_line(segs[0]), "1.500 1.660 speaker_0");  // 10 ms frames 0..15, ended at index 16
  EXPECT_EQ(nemo_line(segs[1]), "1.740 1.810 speaker_1");  // 24..31, still on at the end: ends at index 31
}

TEST(SpeakerSegments, ZeroLengthSegmentsVanishInTheMerge) {
  PostProcessingParams p;
  p.onset = 0.6;
  p.offset = 0.3;
  // As above: [0.01, 0.04] and the zero-length [0.05, 0.05], which merge_float_intervals drops.
  const std::vector<SpeakerSegment> segs = speaker_segments({{0.5f, 0.7f, 0.4f, 0.35f, 0.2f, 0.65f}}, 6, 1, 1, p);
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(nemo_line(segs[0]), "0.010 0.040 speaker_0");
}

TEST(SpeakerSegments, TimeOrderInterleavesSpeakers) {
  const std::vector<SpeakerSegment> ordered =
      in_time_order({{2.0, 3.0, 0}, {0.5, 1.0, 0}, {0.5, 0.8, 1}, {1.5, 2.5, 1}});
  EXPECT_EQ(ordered, (std::vector<SpeakerSegment>{{0.5, 0.8, 1}, {0.5, 1.0, 0}, {1.5, 2.5, 1}, {2.0, 3.0, 0}}));
}

TEST(SpeakerSegments, RefusesAMismatchedProbabilityCount) {
  EXPECT_THROW(speaker_segments(std::vector<float>(7), 4, 2, 8, {}), Error);
  EXPECT_THROW(post_process_speaker(std::vector<float>(4), 0, {}), Error);
}

}  // namespace
}  // namespace steno::diar
