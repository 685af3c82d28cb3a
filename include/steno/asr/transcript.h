// What a transcription returns, and how decoded tokens become text, words and segments with times
// (NeMo's _compute_offsets_tdt, _refine_timestamps_tdt, get_words_offsets, get_segment_offsets; docs/engine.md).
#pragma once

#include <string>
#include <vector>

#include "steno/asr/tdt_decoder.h"
#include "steno/asr/tokenizer.h"

namespace steno::asr {

struct TimedText {
  std::string text;
  double start = 0;  // seconds
  double end = 0;
};

struct TokenTiming {
  int id = 0;
  int start_frame = 0;  // encoder frame of emission
  int end_frame = 0;    // start + duration (punctuation: both at the previous token's end)
};

struct Transcript {
  std::string text;
  std::vector<TimedText> words;
  std::vector<TimedText> segments;
  std::vector<TokenTiming> tokens;
  double audio_seconds = 0;
};

// `frame_seconds` is one encoder frame: subsampling_factor * window_stride (0.08 s for Parakeet).
Transcript build_transcript(const Hypothesis& hyp, const Tokenizer& tokenizer, double frame_seconds);

}  // namespace steno::asr
