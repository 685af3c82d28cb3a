// Audio to speaker segments: the model's offline pass, then NeMo's post-processing per clip.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "steno/diar/segments.h"
#include "steno/diar/sortformer_model.h"

namespace steno::diar {

struct Diarization {
  std::vector<SpeakerSegment> segments;  // in time order
  double audio_seconds = 0;
  int64_t frames = 0;        // model frames (frame_seconds each)
  int num_speakers = 0;      // the model's outputs; speakers without a segment included
  std::vector<float> probs;  // [frames, num_speakers]: the speaker probabilities the segments came from
  // Indices of the speakers that have at least one segment, ascending.
  std::vector<int> active_speakers() const;
};

// Diarizes clips (at the model's sample rate) in one batch; each clip's result is what it would be alone.
std::vector<Diarization> diarize(const SortformerModel& model, ops::Context& ctx,
                                 const std::vector<std::span<const float>>& clips,
                                 const PostProcessingParams& params);

// One clip's result from its speaker probabilities [frames, num_speakers] (offline or streaming): NeMo's
// post-processing per speaker.
Diarization diarization_from_probs(std::vector<float> probs, int64_t frames, double audio_seconds,
                                   const SortformerModel& model, const PostProcessingParams& params);

// "speaker_0", ...: how NeMo and steno name a model output.
std::string speaker_label(int speaker);

// Seconds rounded to the millisecond, as RTTM and the JSON forms write times: segment and word edges come from f32
// frame arithmetic, and 0.07999999821186066 says nothing 0.08 does not.
double round_to_millisecond(double seconds);

// RTTM lines (NIST): "SPEAKER <file_id> 1 <start> <duration> <NA> <NA> <speaker> <NA> <NA>", times with 3
// decimals, one line per segment in time order. `file_id` must not contain whitespace (kInvalidArgument).
std::string to_rttm(const std::string& file_id, const Diarization& d);

// {"duration", "speakers": [labels of active speakers], "segments": [{"speaker", "start", "end"}]}, segment
// times in seconds rounded to the millisecond.
nlohmann::ordered_json to_json(const Diarization& d);

}  // namespace steno::diar
