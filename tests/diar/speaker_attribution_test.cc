// NeMo's SpeakerTaggedASR rule on hand-made probabilities: a word's speaker is the argmax of its frames' mean
// probabilities (clamped at 1e-2, normalised); turns break on a speaker change or a pause over 1 s.
#include <gtest/gtest.h>

#include "steno/core/error.h"
#include "steno/diar/speaker_attribution.h"

namespace steno::diar {
namespace {

// 10 frames x 2 speakers: speaker 0 talks in frames 0-4, speaker 1 in 5-9, both weakly in frame 4.
std::vector<float> two_turns() {
  std::vector<float> p;
  for (int t = 0; t < 10; ++t) {
    p.push_back(t < 4 ? 0.9f : t == 4 ? 0.4f : 0.05f);
    p.push_back(t < 4 ? 0.05f : t == 4 ? 0.3f : 0.8f);
  }
  return p;
}

TEST(SpeakerAttribution, EachWordTakesTheSpeakerOfItsFramesMeanProbability) {
  const std::vector<asr::TimedText> words = {
      {"hello", 0.00, 0.24},  // frames 0-2: speaker 0
      {"there", 0.24, 0.48},  // frames 3-5: (0.9 + 0.4 + 0.05) / 3 = 0.45 vs (0.05 + 0.3 + 0.8) / 3 = 0.383
      {"yes", 0.56, 0.72},    // frames 7-8: speaker 1
  };
  const std::vector<SpeakerWord> got = attribute_words(words, two_turns(), 10, 2);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].speaker, 0);
  EXPECT_NEAR(got[0].confidence, 0.9 / 0.95, 1e-6);
  EXPECT_EQ(got[1].speaker, 0);
  EXPECT_NEAR(got[1].confidence, 0.45 / (0.45 + 1.15 / 3), 1e-6);
  EXPECT_EQ(got[2].speaker, 1);
  EXPECT_EQ(got[2].text, "yes");
  EXPECT_DOUBLE_EQ(got[2].start, 0.56);
}

TEST(SpeakerAttribution, SilenceIsClampedAndEdgesAreHeld) {
  std::vector<float> quiet(10 * 2, 0.001f);
  quiet[9 * 2 + 1] = 0.002f;
  // Both means clamp to 1e-2: a tie goes to the first speaker, with half the share.
  std::vector<SpeakerWord> got = attribute_words({{"hm", 0.0, 0.16}}, quiet, 10, 2);
  EXPECT_EQ(got[0].speaker, 0);
  EXPECT_FLOAT_EQ(got[0].confidence, 0.5f);
  // A word past the last frame takes the last frame; a word without duration takes the frame it starts in.
  got = attribute_words({{"late", 1.2, 1.4}, {"blip", 0.32, 0.32}, {"blip", 0.4, 0.4}}, two_turns(), 10, 2);
  EXPECT_EQ(got[0].speaker, 1);
  EXPECT_EQ(got[1].speaker, 0);  // frame 4: 0.4 against 0.3
  EXPECT_EQ(got[2].speaker, 1);  // frame 5
  EXPECT_THROW(attribute_words({{"x", 0, 0.1}}, two_turns(), 11, 2), Error);
}

TEST(SpeakerAttribution, TurnsBreakOnASpeakerChangeOrALongPause) {
  const std::vector<SpeakerWord> words = {
      {"good", 0.0, 0.3, 0, 0.9f},   {"morning", 0.4, 0.8, 0, 0.9f},  // same turn
      {"hi", 1.0, 1.2, 1, 0.8f},                                       // speaker change
      {"so", 2.3, 2.5, 1, 0.8f},                                       // 1.1 s pause: new turn, same speaker
      {"anyway", 3.4, 3.9, 1, 0.8f},                                   // 0.9 s pause: same turn
  };
  const std::vector<SpeakerTurn> turns = speaker_turns(words);
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_EQ(turns[0].text, "good morning");
  EXPECT_DOUBLE_EQ(turns[0].end, 0.8);
  EXPECT_EQ(turns[1].speaker, 1);
  EXPECT_EQ(turns[1].text, "hi");
  EXPECT_EQ(turns[2].text, "so anyway");
  EXPECT_DOUBLE_EQ(turns[2].start, 2.3);
  EXPECT_DOUBLE_EQ(turns[2].end, 3.9);
  EXPECT_EQ(turns_to_text(turns),
            "speaker_0 [0.00 - 0.80]: good morning\nspeaker_1 [1.00 - 1.20]: hi\nspeaker_1 [2.30 - 3.90]: so anyway\n");
  const nlohmann::ordered_json j = turns_to_json(turns);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["speaker"], "speaker_0");
  EXPECT_EQ(j[2]["words"][1]["text"], "anyway");
  EXPECT_DOUBLE_EQ(j[2]["words"][1]["confidence"].get<double>(), 0.8);
  EXPECT_TRUE(speaker_turns({}).empty());
}

}  // namespace
}  // namespace steno::diar
