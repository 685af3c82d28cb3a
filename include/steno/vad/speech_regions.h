// From per-chunk speech probabilities to the regions of a recording worth transcribing: hysteresis (Silero's
// get_speech_timestamps rule: speech starts at `threshold`, ends after `min_silence_ms` below `threshold - 0.15`),
// too-short blips dropped, padding on both sides so that a word's edges stay in, and regions closer than
// `merge_gap_ms` joined (the silence between them costs less than the context an ASR model loses at a cut).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace steno::vad {

// Samples [begin, end) of the original recording.
struct SampleRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const SampleRange&) const = default;
};

struct RegionOptions {
  float threshold = 0.5f;      // Silero's default
  float neg_threshold = 0.35f; // threshold - 0.15, as Silero's
  double min_speech_ms = 250;  // shorter speech is dropped (clicks, coughs), as Silero's
  double min_silence_ms = 300; // Silero: 100; longer here so that an ASR region is not cut between two words
  double pad_ms = 300;         // Silero: 30; a transducer wants some silence around a word to place its edges
  double merge_gap_ms = 1000;  // padded regions closer than this become one
};

// `probs[k]` is the probability of samples [k*chunk, (k+1)*chunk); `total_samples` the recording's length.
// Regions are sorted, disjoint, within [0, total_samples) and never empty.
std::vector<SampleRange> speech_regions(std::span<const float> probs, int chunk, int sample_rate,
                                        int64_t total_samples, const RegionOptions& options = {});

}  // namespace steno::vad
