#include "piece_schedule.h"

namespace steno::cli {

PieceSchedule::PieceSchedule(const std::vector<std::span<const float>>& clips, const std::vector<size_t>& order,
                             int sample_rate, double piece_seconds, double frame_seconds)
    : files_(clips.size()), sample_rate_(sample_rate), frame_seconds_(frame_seconds) {
  for (const size_t f : order) {
    FileState& s = files_[f];
    s.clip = clips[f];
    s.first = units_.size();
    if (s.clip.empty()) continue;
    const std::vector<asr::AudioPiece> pieces =
        piece_seconds > 0 ? asr::cut_into_pieces(s.clip, sample_rate, piece_seconds)
                          : std::vector<asr::AudioPiece>{{0, s.clip.size()}};
    for (const asr::AudioPiece& p : pieces) units_.push_back({f, p});
    s.count = pieces.size();
    s.done.resize(s.count);
  }
}

std::vector<std::span<const float>> PieceSchedule::audio(size_t begin, size_t end) const {
  std::vector<std::span<const float>> out;
  for (size_t i = begin; i < end; ++i) {
    const Unit& u = units_[i];
    out.push_back(files_[u.file].clip.subspan(u.span.begin, u.span.end - u.span.begin));
  }
  return out;
}

std::vector<PieceSchedule::Stretch> PieceSchedule::finish(size_t begin, std::vector<asr::Transcript> out) {
  std::vector<Stretch> grown;
  for (size_t k = 0; k < out.size(); ++k) {
    const Unit& u = units_[begin + k];
    files_[u.file].done[begin + k - files_[u.file].first] = std::move(out[k]);
  }
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t f = units_[begin + k].file;
    FileState& s = files_[f];
    Stretch stretch{f, {}};
    while (s.emitted < s.count && s.done[s.emitted]) {
      const Unit& u = units_[s.first + s.emitted];
      asr::clamp_to_piece(*s.done[s.emitted]);
      asr::append_piece(stretch.words, std::move(*s.done[s.emitted]),
                        static_cast<double>(u.span.begin) / sample_rate_, frame_seconds_);
      s.done[s.emitted].reset();
      ++s.emitted;
    }
    if (stretch.words.audio_seconds > 0) {
      asr::append_piece(s.joined, stretch.words, 0, frame_seconds_);
      grown.push_back(std::move(stretch));
    }
  }
  return grown;
}

bool PieceSchedule::file_done(size_t file) const { return files_[file].emitted == files_[file].count; }

}  // namespace steno::cli
