// steno's DER scorer on cases computed by hand (md-eval's definition: optimal one-to-one speaker mapping, a
// no-score collar around every reference edge, overlapped speech scored per speaker), and the RTTM reader.
#include <gtest/gtest.h>

#include "steno/core/error.h"
#include "steno/diar/der.h"

namespace steno::diar {
namespace {

TEST(Der, RelabelledPerfectHypothesisScoresZero) {
  const std::vector<LabeledSegment> ref = {{"A", 0, 4}, {"B", 4, 9}, {"A", 9, 12}};
  const std::vector<LabeledSegment> hyp = {{"spk1", 0, 4}, {"spk0", 4, 9}, {"spk1", 9, 12}};
  const DerResult r = diarization_error(ref, hyp, 0.25);
  EXPECT_DOUBLE_EQ(r.der(), 0.0);
  EXPECT_EQ(r.mapping.at("spk1"), "A");
  EXPECT_EQ(r.mapping.at("spk0"), "B");
  // Collars at 0, 4, 9, 12 (each +-0.25, the two at 0 and 12 half outside): 12 - 0.25 - 0.5 - 0.5 - 0.25.
  EXPECT_DOUBLE_EQ(r.reference_speech, 10.5);
}

TEST(Der, MissedSpeechWithAndWithoutCollar) {
  const std::vector<LabeledSegment> ref = {{"A", 0, 10}};
  const std::vector<LabeledSegment> hyp = {{"x", 0, 8}};
  DerResult r = diarization_error(ref, hyp, 0.0);
  EXPECT_DOUBLE_EQ(r.missed, 2.0);
  EXPECT_DOUBLE_EQ(r.der(), 0.2);
  // Collar 0.25: scored [0.25, 9.75] = 9.5 s; missed [8, 9.75] = 1.75 s.
  r = diarization_error(ref, hyp, 0.25);
  EXPECT_DOUBLE_EQ(r.reference_speech, 9.5);
  EXPECT_DOUBLE_EQ(r.missed, 1.75);
  EXPECT_NEAR(r.der(), 1.75 / 9.5, 1e-12);
}

TEST(Der, OverlapIsScoredPerSpeaker) {
  // A [0,4] and B [2,6] overlap on [2,4]; one hypothesis speaker covers [0,6]: reference time 8 s, missed 2 s (one
  // of the two overlapped speakers), confusion 2 s (x maps to A or B, both overlap it 4 s; the other's own 2 s).
  const DerResult r = diarization_error({{"A", 0, 4}, {"B", 2, 6}}, {{"x", 0, 6}}, 0.0);
  EXPECT_DOUBLE_EQ(r.reference_speech, 8.0);
  EXPECT_DOUBLE_EQ(r.missed, 2.0);
  EXPECT_DOUBLE_EQ(r.confusion, 2.0);
  EXPECT_DOUBLE_EQ(r.false_alarm, 0.0);
  EXPECT_DOUBLE_EQ(r.der(), 0.5);
}

TEST(Der, FalseAlarmAndConfusionTogether) {
  // Reference: A [0,5], B [5,10]. Hypothesis: x [0,6], y [6,10], z [10,11].
  // x->A (5 s), y->B (4 s); [5,6] x speaks for B: confusion 1; [10,11] z where nobody speaks: false alarm 1.
  const DerResult r = diarization_error({{"A", 0, 5}, {"B", 5, 10}}, {{"x", 0, 6}, {"y", 6, 10}, {"z", 10, 11}}, 0.0);
  EXPECT_DOUBLE_EQ(r.confusion, 1.0);
  EXPECT_DOUBLE_EQ(r.false_alarm, 1.0);
  EXPECT_DOUBLE_EQ(r.missed, 0.0);
  EXPECT_DOUBLE_EQ(r.der(), 0.2);
  EXPECT_EQ(r.mapping.count("z"), 0u);  // unmapped: it overlaps no reference speaker
}

TEST(Der, SegmentsOfOneSpeakerThatOverlapCountOnce) {
  const DerResult r = diarization_error({{"A", 0, 4}, {"A", 2, 6}}, {{"x", 0, 6}}, 0.0);
  EXPECT_DOUBLE_EQ(r.reference_speech, 6.0);
  EXPECT_DOUBLE_EQ(r.der(), 0.0);
}

TEST(Der, EmptyHypothesisMissesEverything) {
  const DerResult r = diarization_error({{"A", 1, 3}}, {}, 0.0);
  EXPECT_DOUBLE_EQ(r.der(), 1.0);
  EXPECT_THROW(diarization_error({{"A", 3, 1}}, {}, 0.0), Error);
  EXPECT_THROW(diarization_error({{"A", 1, 3}}, {}, -1.0), Error);
}

TEST(Rttm, ReadsSpeakerLinesAndNamesBadOnes) {
  const auto got = parse_rttm(
      ";; comment\nSPEAKER conv0 1 0.300 1.386 <NA> <NA> A <NA> <NA>\n\nSPKR-INFO conv0 1 <NA> <NA> <NA> adult A\n"
      "SPEAKER conv1 1 2.0 0.5 <NA> <NA> B <NA> <NA>\n",
      "ref.rttm");
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(got.at("conv0").size(), 1u);
  EXPECT_EQ(got.at("conv0")[0].speaker, "A");
  EXPECT_DOUBLE_EQ(got.at("conv0")[0].end, 0.3 + 1.386);
  EXPECT_DOUBLE_EQ(got.at("conv1")[0].start, 2.0);
  try {
    parse_rttm("SPEAKER a 1 0 1 <NA> <NA> A\nSPEAKER a 1 x 1 <NA> <NA> A\n", "h.rttm");
    FAIL() << "a bad start was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("h.rttm:2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_rttm("SPEAKER a 1 0 1\n", "h.rttm"), Error);
  EXPECT_THROW(parse_rttm("SPEAKER a 1 0 -1 <NA> <NA> A\n", "h.rttm"), Error);
}

}  // namespace
}  // namespace steno::diar
