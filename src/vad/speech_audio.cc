#include "steno/vad/speech_audio.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace steno::vad {
namespace {

// The recording's time of `seconds` on the cut clip's timeline, with the end of its piece (both in seconds). Times
// past the clip's end (a token on its last frame) stay in the last piece; nullopt only without pieces.
struct Mapped {
  double start = 0;
  double piece_end = 0;
};

std::optional<Mapped> map_time(const SpeechAudio& a, double seconds, int rate) {
  for (const SpeechAudio::Piece& p : a.pieces) {
    const double begin = static_cast<double>(p.begin) / rate, end = static_cast<double>(p.begin + p.size) / rate;
    if (seconds < end || &p == &a.pieces.back()) {
      const double shift = static_cast<double>(p.source_begin - p.begin) / rate;
      return Mapped{std::max(seconds, begin) + shift, end + shift};
    }
  }
  return std::nullopt;
}

void restore(std::vector<asr::TimedText>& items, const SpeechAudio& a, int rate) {
  std::vector<asr::TimedText> kept;
  for (asr::TimedText& w : items) {
    const std::optional<Mapped> m = map_time(a, w.start, rate);
    if (!m) continue;
    const double length = std::max(0.0, w.end - w.start);
    w.start = m->start;
    w.end = std::min(m->start + length, m->piece_end);
    kept.push_back(std::move(w));
  }
  items = std::move(kept);
}

}  // namespace

SpeechAudio cut_speech(std::span<const float> pcm, const std::vector<SampleRange>& regions) {
  SpeechAudio a;
  a.source_samples = static_cast<int64_t>(pcm.size());
  for (const SampleRange& r : regions) {
    const int64_t begin = std::clamp<int64_t>(r.begin, 0, a.source_samples);
    const int64_t end = std::clamp<int64_t>(r.end, begin, a.source_samples);
    if (end == begin) continue;
    a.pieces.push_back({begin, static_cast<int64_t>(a.pcm.size()), end - begin});
    a.pcm.insert(a.pcm.end(), pcm.begin() + begin, pcm.begin() + end);
  }
  return a;
}

void restore_timeline(asr::Transcript& t, const SpeechAudio& a, int sample_rate, double frame_seconds) {
  t.audio_seconds = static_cast<double>(a.source_samples) / sample_rate;
  if (a.pieces.empty()) {
    t.text.clear();
    t.words.clear();
    t.segments.clear();
    t.tokens.clear();
    return;
  }
  restore(t.words, a, sample_rate);
  restore(t.segments, a, sample_rate);
  // Token times are in encoder frames: moved by their piece's shift, rounded to a whole frame. Without a frame
  // length they cannot be moved, and are dropped rather than left on the wrong timeline.
  std::vector<asr::TokenTiming> tokens;
  if (frame_seconds <= 0) t.tokens.clear();
  for (asr::TokenTiming k : t.tokens) {
    const double at = k.start_frame * frame_seconds;
    const std::optional<Mapped> m = map_time(a, at, sample_rate);
    if (!m) continue;
    const int shift = static_cast<int>(std::lround((m->start - at) / frame_seconds));
    k.start_frame += shift;
    k.end_frame += shift;
    tokens.push_back(k);
  }
  t.tokens = std::move(tokens);
}

}  // namespace steno::vad
