// Who said which word: a transcript's timed words joined with a diarizer's speaker probabilities, by NeMo's
// SpeakerTaggedASR rule (docs/diarization.md, "Speaker-attributed transcripts").
//
// A word's speaker is the argmax over speakers of the mean sigmoid over the word's 80 ms frames, each mean clamped
// at 1e-2 and the means normalised to sum to one (the normalised value is reported as the word's confidence).
// Parakeet's and Sortformer's frames are both 80 ms, so a word's encoder frames are the diarizer's frames. Words
// then group into turns: a new turn starts when the speaker changes or the pause before a word exceeds 1 s.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "steno/asr/transcript.h"

namespace steno::diar {

struct SpeakerWord {
  std::string text;
  double start = 0;  // seconds
  double end = 0;
  int speaker = 0;
  float confidence = 0;  // the speaker's normalised share of the word's speech probability
};

struct SpeakerTurn {
  int speaker = 0;
  double start = 0;
  double end = 0;
  std::string text;  // the words joined by spaces
  std::vector<SpeakerWord> words;
};

struct AttributionParams {
  double frame_seconds = 0.08;  // the diarizer's frame
  float min_probability = 1e-2f;  // NeMo's clamp before normalising
  double max_pause = 1.0;       // seconds of silence that end a turn even without a speaker change
};

// probs: [frames, speakers] row-major. Words past the last frame take the last frame; a word shorter than a frame
// takes the frame it starts in.
std::vector<SpeakerWord> attribute_words(const std::vector<asr::TimedText>& words, std::span<const float> probs,
                                         int64_t frames, int speakers, const AttributionParams& params = {});

std::vector<SpeakerTurn> speaker_turns(const std::vector<SpeakerWord>& words, const AttributionParams& params = {});

// A transcript's words attributed and grouped into turns (attribute_words, then speaker_turns) with NeMo's
// parameters and the diarizer's frame: the one join of words and speakers, so that `steno transcribe --diarize`
// and the server's speaker-attributed answers cannot drift apart.
std::vector<SpeakerTurn> speaker_transcript(const asr::Transcript& transcript, std::span<const float> probs,
                                            int64_t frames, int speakers, double frame_seconds);

// Plain text, one turn per line: "speaker_0 [0.00 - 3.52]: Hello there."
std::string turns_to_text(const std::vector<SpeakerTurn>& turns);

// [{"speaker", "start", "end", "text", "words": [{"text", "start", "end", "speaker", "confidence"}]}], times in
// seconds rounded to the millisecond.
nlohmann::ordered_json turns_to_json(const std::vector<SpeakerTurn>& turns);

}  // namespace steno::diar
