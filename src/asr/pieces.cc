#include "steno/asr/pieces.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "steno/core/error.h"

namespace steno::asr {
namespace {

// The start of the quietest frame (least energy) that starts within [from, to).
size_t quietest_frame(std::span<const float> pcm, size_t from, size_t to, size_t frame) {
  size_t best = from;
  double best_energy = std::numeric_limits<double>::infinity();
  for (size_t at = from; at < to && at + frame <= pcm.size(); at += frame) {
    double energy = 0;
    for (size_t i = at; i < at + frame; ++i) energy += static_cast<double>(pcm[i]) * pcm[i];
    if (energy < best_energy) {
      best_energy = energy;
      best = at;
    }
  }
  return best;
}

}  // namespace

std::vector<AudioPiece> cut_into_pieces(std::span<const float> pcm, int sample_rate, double max_seconds) {
  STENO_CHECK(max_seconds >= 1, "pieces must be at least 1 s long, got {} s", max_seconds);
  STENO_CHECK(sample_rate > 0, "sample rate must be > 0");
  const auto max_len = static_cast<size_t>(max_seconds * sample_rate);
  const size_t frame = static_cast<size_t>(sample_rate) / 50;  // 20 ms
  std::vector<AudioPiece> pieces;
  size_t start = 0;
  while (pcm.size() - start > max_len) {
    // Cut within [start + 2/3 max, start + max], leaving at least a third of max after it; in the frame's middle.
    const size_t from = start + max_len * 2 / 3;
    const size_t to = std::min(start + max_len - frame, pcm.size() - max_len / 3 - frame);
    const size_t cut = quietest_frame(pcm, from, std::max(to, from + 1), frame) + frame / 2;
    pieces.push_back({start, cut});
    start = cut;
  }
  pieces.push_back({start, pcm.size()});
  return pieces;
}

bool is_silent(std::span<const float> pcm) {
  for (const float x : pcm)
    if (std::abs(x) >= 1e-3f) return false;
  return true;
}

void clamp_to_piece(Transcript& piece) {
  const double end = piece.audio_seconds;
  if (end <= 0) return;  // the length is not known
  for (std::vector<TimedText>* items : {&piece.words, &piece.segments})
    for (TimedText& t : *items) {
      t.end = std::min(t.end, end);
      t.start = std::min(t.start, t.end);
    }
}

void append_piece(Transcript& whole, Transcript piece, double offset_seconds, double frame_seconds) {
  if (!piece.text.empty()) whole.text += (whole.text.empty() ? "" : " ") + piece.text;
  for (std::vector<TimedText>* items : {&piece.words, &piece.segments})
    for (TimedText& t : *items) {
      t.start += offset_seconds;
      t.end += offset_seconds;
    }
  whole.words.insert(whole.words.end(), piece.words.begin(), piece.words.end());
  whole.segments.insert(whole.segments.end(), piece.segments.begin(), piece.segments.end());
  if (frame_seconds > 0) {
    const int shift = static_cast<int>(std::lround(offset_seconds / frame_seconds));
    for (TokenTiming& k : piece.tokens) {
      k.start_frame += shift;
      k.end_frame += shift;
      whole.tokens.push_back(k);
    }
  } else {
    whole.tokens.clear();
  }
  whole.audio_seconds += piece.audio_seconds;
}

}  // namespace steno::asr
