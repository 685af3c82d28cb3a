#include "steno/vad/speech_regions.h"

#include <algorithm>
#include <cmath>

namespace steno::vad {

std::vector<SampleRange> speech_regions(std::span<const float> probs, int chunk, int sample_rate,
                                        int64_t total_samples, const RegionOptions& o) {
  const auto samples = [sample_rate](double ms) { return static_cast<int64_t>(std::llround(ms * sample_rate / 1000)); };
  const int64_t min_speech = samples(o.min_speech_ms), min_silence = samples(o.min_silence_ms);
  const int64_t pad = samples(o.pad_ms), merge_gap = samples(o.merge_gap_ms);

  std::vector<SampleRange> raw;
  bool speaking = false;
  int64_t start = 0, silence_from = -1;  // silence_from: where the current dip below neg_threshold began
  for (size_t k = 0; k < probs.size(); ++k) {
    const int64_t t = static_cast<int64_t>(k) * chunk;
    const float p = probs[k];
    if (p >= o.threshold) {
      silence_from = -1;
      if (!speaking) speaking = true, start = t;
    } else if (speaking && p < o.neg_threshold) {
      if (silence_from < 0) silence_from = t;
      if (t + chunk - silence_from >= min_silence) {
        raw.push_back({start, silence_from});
        speaking = false;
        silence_from = -1;
      }
    }
  }
  if (speaking) raw.push_back({start, total_samples});

  std::vector<SampleRange> out;
  for (const SampleRange& r : raw) {
    if (r.size() < min_speech) continue;
    SampleRange p{std::max<int64_t>(0, r.begin - pad), std::min(total_samples, r.end + pad)};
    if (p.size() <= 0) continue;
    if (!out.empty() && p.begin - out.back().end < merge_gap)
      out.back().end = std::max(out.back().end, p.end);
    else
      out.push_back(p);
  }
  return out;
}

}  // namespace steno::vad
