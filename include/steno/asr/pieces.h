// Long audio transcribed as pieces: where to cut it, and how the pieces' transcripts join into one.
//
// A recording of an hour is not one clip for the engine: it is cut into pieces of at most `max_seconds`, each cut
// at the quietest 20 ms of the last third of its span (a pause between words, so that no word is cut in two), and
// every piece is transcribed on its own. The serving core runs the pieces through the batcher beside other
// requests' work (serve/piecewise.h), `steno transcribe` in its batches; both join them with append_piece.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "steno/asr/transcript.h"

namespace steno::asr {

struct AudioPiece {
  size_t begin = 0;  // first sample
  size_t end = 0;    // one past the last
};

// Consecutive pieces covering all of `pcm`, each at most `max_seconds` long and none shorter than a third of it
// (within a frame; but the only one); audio no longer than `max_seconds` is one piece. Throws on max_seconds < 1.
std::vector<AudioPiece> cut_into_pieces(std::span<const float> pcm, int sample_rate, double max_seconds);

// Whether a piece is silent throughout (its peak below -60 dBFS): with the VAD on (--vad auto|on), such a piece is
// not transcribed at all, where a model may say a word or two into digital silence.
bool is_silent(std::span<const float> pcm);

// A piece's words and segments made to end by the piece's end (`audio_seconds`): the encoder's last frame may
// reach up to a frame past the audio, and the next piece starts exactly there, so without this a piece's last
// word could overlap the next piece's first one on the recording's timeline.
void clamp_to_piece(Transcript& piece);

// Appends a piece's transcript, whose times start at the piece's start, to `whole`: times moved by
// `offset_seconds`, token frames by the whole frames of it (dropped when `frame_seconds` is 0: not known), text
// joined with a space. `whole.audio_seconds` grows by the piece's.
void append_piece(Transcript& whole, Transcript piece, double offset_seconds, double frame_seconds);

}  // namespace steno::asr
