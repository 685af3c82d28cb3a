// Cutting a recording to its speech and moving a transcript's times back.
#include <gtest/gtest.h>

#include "steno/vad/speech_audio.h"

namespace steno::vad {
namespace {

TEST(SpeechAudio, CutsRegionsEndToEnd) {
  std::vector<float> pcm(100);
  for (size_t i = 0; i < pcm.size(); ++i) pcm[i] = static_cast<float>(i);
  const SpeechAudio a = cut_speech(pcm, {{10, 20}, {50, 55}});
  ASSERT_EQ(a.pcm.size(), 15u);
  EXPECT_EQ(a.pcm[0], 10.0f);
  EXPECT_EQ(a.pcm[10], 50.0f);
  ASSERT_EQ(a.pieces.size(), 2u);
  EXPECT_EQ(a.pieces[1].begin, 10);
  EXPECT_EQ(a.pieces[1].source_begin, 50);
  EXPECT_EQ(a.source_samples, 100);
}

TEST(SpeechAudio, OutOfRangeRegionsAreClampedNotTrusted) {
  const std::vector<float> pcm(10, 1.0f);
  const SpeechAudio a = cut_speech(pcm, {{-5, 3}, {8, 50}, {9, 2}});
  EXPECT_EQ(a.pcm.size(), 5u);
  EXPECT_EQ(a.pieces.size(), 2u);
}

TEST(SpeechAudio, TimesMoveBackToTheRecording) {
  // Pieces: recording [10 s, 12 s) -> clip [0, 2); recording [100 s, 103 s) -> clip [2, 5). Rate 1000 Hz.
  SpeechAudio a;
  a.pieces = {{10000, 0, 2000}, {100000, 2000, 3000}};
  a.source_samples = 200000;
  asr::Transcript t;
  t.text = "one two three";
  t.words = {{"one", 0.5, 0.9}, {"two", 2.1, 2.6}, {"three", 4.5, 5.2}};
  t.segments = {{"one two three", 0.5, 5.2}};
  t.tokens = {{1, 25, 26}};  // frame 25 of 0.08 s = 2.0 s -> 100.0 s = frame 1250
  restore_timeline(t, a, 1000, 0.08);
  EXPECT_DOUBLE_EQ(t.audio_seconds, 200.0);
  ASSERT_EQ(t.words.size(), 3u);
  EXPECT_NEAR(t.words[0].start, 10.5, 1e-9);
  EXPECT_NEAR(t.words[0].end, 10.9, 1e-9);
  EXPECT_NEAR(t.words[1].start, 100.1, 1e-9);
  EXPECT_NEAR(t.words[1].end, 100.6, 1e-9);
  EXPECT_NEAR(t.words[2].start, 102.5, 1e-9);
  EXPECT_NEAR(t.words[2].end, 103.0, 1e-9);  // clamped to its piece's end
  EXPECT_NEAR(t.segments[0].start, 10.5, 1e-9);
  EXPECT_EQ(t.tokens[0].start_frame, 1250);
  EXPECT_EQ(t.text, "one two three");
}

TEST(SpeechAudio, NoSpeechIsAnEmptyTranscript) {
  SpeechAudio a;
  a.source_samples = 16000 * 1190;
  asr::Transcript t;
  t.text = "invented";
  t.words = {{"invented", 1, 2}};
  restore_timeline(t, a, 16000, 0.08);
  EXPECT_TRUE(t.text.empty());
  EXPECT_TRUE(t.words.empty());
  EXPECT_DOUBLE_EQ(t.audio_seconds, 1190.0);
}

}  // namespace
}  // namespace steno::vad
