// From speaker probabilities to speaker segments, exactly as NeMo's diarize() does it (docs/diarization.md,
// "Post-processing"): per speaker, vad_utils.ts_vad_post_processing (each 80 ms probability repeated into 10 ms
// frames, hysteresis binarization with onset/offset and padding, then short speech dropped and short gaps
// filled), the clip's offset added, times rounded to 10 ms, and speaker_utils.merge_float_intervals. NeMo's
// number types are kept where they decide an outcome (float32 thresholds and segment times, float64 frame times),
// so that the segments are NeMo's to the last digit.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "steno/diar/sortformer_config.h"

namespace steno::diar {

struct SpeakerSegment {
  double start = 0;  // seconds
  double end = 0;
  int speaker = 0;   // 0-based output index of the model ("speaker_0" ...)
  bool operator==(const SpeakerSegment&) const = default;
};

// ts_vad_post_processing for one speaker: `probs` holds one probability per model frame, each covering
// `unit_10ms_frames` 10 ms frames (8 for Sortformer). Returns [start, end] pairs in seconds as NeMo's float32
// tensor holds them, before offset and rounding.
std::vector<std::array<float, 2>> post_process_speaker(std::span<const float> probs, int unit_10ms_frames,
                                                       const PostProcessingParams& params);

// The whole chain for one clip: probs [frames, speakers] row-major (one row per model frame, only the clip's
// valid frames). `offset` (seconds) is added to every time, as NeMo adds a manifest entry's offset. Segments come
// speaker by speaker, each speaker's in time order (NeMo's order).
std::vector<SpeakerSegment> speaker_segments(std::span<const float> probs, int64_t frames, int speakers,
                                             int unit_10ms_frames, const PostProcessingParams& params,
                                             double offset = 0.0);

// NeMo's line for a segment: "0.240 0.320 speaker_0".
std::string nemo_line(const SpeakerSegment& segment);

// The same segments ordered by start time, then end, then speaker (how steno's outputs list them).
std::vector<SpeakerSegment> in_time_order(std::vector<SpeakerSegment> segments);

}  // namespace steno::diar
