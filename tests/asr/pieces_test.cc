// Long audio as pieces (asr/pieces.h): cuts in the pauses, bounded lengths, the whole covered; transcripts joined
// on the recording's timeline.
#include "steno/asr/pieces.h"

#include <gtest/gtest.h>

#include <cmath>

namespace steno::asr {
namespace {

constexpr int kRate = 16000;

// A tone everywhere but in 100 ms pauses at the given times (seconds).
std::vector<float> tone_with_pauses(double seconds, const std::vector<double>& pauses) {
  std::vector<float> pcm(static_cast<size_t>(seconds * kRate));
  for (size_t i = 0; i < pcm.size(); ++i) pcm[i] = 0.5f * std::sin(0.1f * static_cast<float>(i));
  for (const double p : pauses)
    for (size_t i = static_cast<size_t>(p * kRate); i < static_cast<size_t>((p + 0.1) * kRate); ++i) pcm[i] = 0;
  return pcm;
}

void expect_covering(const std::vector<AudioPiece>& pieces, size_t samples, double max_seconds) {
  ASSERT_FALSE(pieces.empty());
  EXPECT_EQ(pieces.front().begin, 0u);
  EXPECT_EQ(pieces.back().end, samples);
  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_LT(pieces[i].begin, pieces[i].end);
    EXPECT_LE(pieces[i].end - pieces[i].begin, static_cast<size_t>(max_seconds * kRate)) << "piece " << i;
    if (i > 0) {
      EXPECT_EQ(pieces[i].begin, pieces[i - 1].end);
    }
    if (pieces.size() > 1) {  // a third of max, within a 20 ms frame
      EXPECT_GE(pieces[i].end - pieces[i].begin, static_cast<size_t>((max_seconds / 3 - 0.02) * kRate)) << i;
    }
  }
}

TEST(Pieces, ShortAudioIsOnePiece) {
  const std::vector<float> pcm(20 * kRate, 0.1f);
  const auto pieces = cut_into_pieces(pcm, kRate, 20);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].end, pcm.size());
  EXPECT_TRUE(cut_into_pieces({}, kRate, 20).size() == 1);
  EXPECT_THROW(cut_into_pieces(pcm, kRate, 0.5), Error);
}

TEST(Pieces, CutsFallInThePauses) {
  // With 20 s pieces, each cut is searched in [13.3, 20] s after the piece's start: one pause in each window.
  const std::vector<double> pauses = {16.0, 33.5, 51.0, 68.2};
  const std::vector<float> pcm = tone_with_pauses(80, pauses);
  const auto pieces = cut_into_pieces(pcm, kRate, 20);
  expect_covering(pieces, pcm.size(), 20);
  ASSERT_EQ(pieces.size(), pauses.size() + 1);
  for (size_t i = 0; i + 1 < pieces.size(); ++i) {
    const double cut = static_cast<double>(pieces[i].end) / kRate;
    EXPECT_GE(cut, pauses[i]) << "cut " << i;
    EXPECT_LE(cut, pauses[i] + 0.1) << "cut " << i;
    EXPECT_EQ(pcm[pieces[i].end], 0.0f) << "cut " << i << " is not in silence";
  }
}

TEST(Pieces, AudioWithoutPausesStillHasBoundedPieces) {
  for (const double seconds : {20.5, 26.0, 27.0, 61.0, 3600.0}) {
    const std::vector<float> pcm = tone_with_pauses(seconds, {});
    expect_covering(cut_into_pieces(pcm, kRate, 20), pcm.size(), 20);
  }
}

TEST(Pieces, TranscriptsJoinOnTheRecordingsTimeline) {
  Transcript whole;
  Transcript a;
  a.text = "hello there.";
  a.words = {{"hello", 0.4, 0.8}, {"there.", 0.9, 1.2}};
  a.segments = {{"hello there.", 0.4, 1.2}};
  a.tokens = {{5, 5, 6}, {7, 11, 12}};
  a.audio_seconds = 18.5;
  append_piece(whole, a, 0, 0.08);
  Transcript silent;  // a piece with no words
  silent.audio_seconds = 1.5;
  append_piece(whole, silent, 18.5, 0.08);
  Transcript b;
  b.text = "bye.";
  b.words = {{"bye.", 1.0, 1.3}};
  b.segments = {{"bye.", 1.0, 1.3}};
  b.tokens = {{9, 12, 13}};
  b.audio_seconds = 10;
  append_piece(whole, b, 20.0, 0.08);
  EXPECT_EQ(whole.text, "hello there. bye.");
  ASSERT_EQ(whole.words.size(), 3u);
  EXPECT_DOUBLE_EQ(whole.words[2].start, 21.0);
  EXPECT_DOUBLE_EQ(whole.words[2].end, 21.3);
  ASSERT_EQ(whole.segments.size(), 2u);
  EXPECT_DOUBLE_EQ(whole.segments[1].start, 21.0);
  ASSERT_EQ(whole.tokens.size(), 3u);
  EXPECT_EQ(whole.tokens[2].start_frame, 12 + 250);  // 20 s = 250 frames of 80 ms
  EXPECT_DOUBLE_EQ(whole.audio_seconds, 30.0);

  Transcript unknown_frames;
  append_piece(unknown_frames, a, 0, 0);
  EXPECT_TRUE(unknown_frames.tokens.empty());
  EXPECT_EQ(unknown_frames.words.size(), 2u);
}

// The encoder's last frame may reach past a piece's audio; the next piece starts exactly at its end, so a piece's
// words end by then (measured: a word of the espeak-ng set ran 3 ms into the next piece's first one).
TEST(Pieces, APiecesWordsEndByItsEnd) {
  Transcript piece;
  piece.text = "one two";
  piece.words = {{"one", 0.5, 1.0}, {"two", 9.94, 10.02}};
  piece.segments = {{"one two", 0.5, 10.02}};
  piece.audio_seconds = 10.0;
  clamp_to_piece(piece);
  EXPECT_DOUBLE_EQ(piece.words[0].end, 1.0);  // inside: unchanged
  EXPECT_DOUBLE_EQ(piece.words[1].start, 9.94);
  EXPECT_DOUBLE_EQ(piece.words[1].end, 10.0);
  EXPECT_DOUBLE_EQ(piece.segments[0].end, 10.0);
  Transcript late;  // a word that starts after the end too: an empty span at the end
  late.words = {{"three", 10.01, 10.05}};
  late.audio_seconds = 10.0;
  clamp_to_piece(late);
  EXPECT_DOUBLE_EQ(late.words[0].start, 10.0);
  EXPECT_DOUBLE_EQ(late.words[0].end, 10.0);
  Transcript unknown;  // no length: nothing to clamp to
  unknown.words = {{"four", 1.0, 2.0}};
  clamp_to_piece(unknown);
  EXPECT_DOUBLE_EQ(unknown.words[0].end, 2.0);
}

}  // namespace
}  // namespace steno::asr
