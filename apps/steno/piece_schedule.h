// `steno transcribe`'s work as pieces, cut as the server cuts them (asr/pieces.h), so that a file's transcript is
// the one `steno serve` answers for it: each file's clip is cut into pieces of at most --piece-seconds, the pieces
// run in batches (the files in the given order, each file's pieces in time order), and each file's transcript is
// joined stretch by stretch as its pieces finish.
#pragma once

#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "steno/asr/pieces.h"

namespace steno::cli {

class PieceSchedule {
 public:
  // `clips[f]` is file f's audio (empty: nothing to run); `order` the files in the order to run them;
  // piece_seconds 0: every clip is one piece.
  PieceSchedule(const std::vector<std::span<const float>>& clips, const std::vector<size_t>& order, int sample_rate,
                double piece_seconds, double frame_seconds);

  size_t size() const { return units_.size(); }
  // The audio of pieces [begin, end).
  std::vector<std::span<const float>> audio(size_t begin, size_t end) const;
  size_t file_of(size_t piece) const { return units_[piece].file; }

  struct Stretch {
    size_t file;
    asr::Transcript words;  // on the clip's timeline
  };
  // Takes the transcripts of pieces [begin, begin + out.size()); returns what each file's transcript grew by, in
  // order (a file's pieces all done in order so far).
  std::vector<Stretch> finish(size_t begin, std::vector<asr::Transcript> out);
  bool file_done(size_t file) const;
  const asr::Transcript& joined(size_t file) const { return files_[file].joined; }

 private:
  struct Unit {
    size_t file;
    asr::AudioPiece span;
  };
  struct FileState {
    std::span<const float> clip;
    size_t first = 0, count = 0;  // its pieces: units_[first, first + count)
    size_t emitted = 0;           // pieces joined so far
    std::vector<std::optional<asr::Transcript>> done;
    asr::Transcript joined;
  };
  std::vector<Unit> units_;
  std::vector<FileState> files_;
  int sample_rate_;
  double frame_seconds_;
};

}  // namespace steno::cli
