// Transcribing only the speech: the regions of a recording cut out and laid end to end (one clip for the ASR
// model, so it keeps its batching and its context across close regions), and the transcript's times moved back
// from that clip's timeline to the recording's.
#pragma once

#include <span>
#include <vector>

#include "steno/asr/transcript.h"
#include "steno/vad/speech_regions.h"

namespace steno::vad {

struct SpeechAudio {
  struct Piece {
    int64_t source_begin = 0;  // in the recording
    int64_t begin = 0;         // in `pcm`
    int64_t size = 0;
  };
  std::vector<float> pcm;     // the regions, end to end; empty when there is no speech
  std::vector<Piece> pieces;  // in order, one per region
  int64_t source_samples = 0; // the recording's length
};

// `regions` as speech_regions() returns them (sorted, disjoint, inside `pcm`).
SpeechAudio cut_speech(std::span<const float> pcm, const std::vector<SampleRange>& regions);

// Moves `t`'s words, segments and tokens from `audio.pcm`'s timeline to the recording's and sets audio_seconds to
// the recording's length. A word keeps the piece its start is in (a word cannot straddle two pieces: every cut is
// padded silence). Tokens move with `frame_seconds` (<= 0: they are dropped). No pieces: an empty transcript.
void restore_timeline(asr::Transcript& t, const SpeechAudio& audio, int sample_rate, double frame_seconds);

}  // namespace steno::vad
