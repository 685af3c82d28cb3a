#include "audio/resample.h"

#include "steno/core/error.h"
#include "stream_resampler.h"

namespace steno::audio {

std::vector<float> resample(std::span<const float> input, int rate_in, int rate_out) {
  STENO_CHECK(rate_in > 0 && rate_out > 0, "resample: sample rates must be positive, got {} -> {}", rate_in,
              rate_out);
  if (rate_in == rate_out) return {input.begin(), input.end()};
  std::vector<float> out;
  out.reserve(static_cast<size_t>(static_cast<double>(input.size()) * rate_out / rate_in) + 16);
  StreamResampler resampler(rate_in, rate_out);
  resampler.process(input, out);
  resampler.flush(out);
  return out;
}

std::vector<float> to_mono(std::span<const float> interleaved, int channels) {
  STENO_CHECK(channels > 0, "to_mono: channels must be positive, got {}", channels);
  STENO_CHECK(interleaved.size() % static_cast<size_t>(channels) == 0,
              "to_mono: {} samples is not a whole number of {}-channel frames", interleaved.size(), channels);
  if (channels == 1) return {interleaved.begin(), interleaved.end()};
  const size_t frames = interleaved.size() / static_cast<size_t>(channels);
  std::vector<float> mono(frames);
  for (size_t f = 0; f < frames; ++f) {
    const float* frame = interleaved.data() + f * static_cast<size_t>(channels);
    float sum = 0.0f;
    for (int c = 0; c < channels; ++c) sum += frame[c];
    mono[f] = sum / static_cast<float>(channels);
  }
  return mono;
}

}  // namespace steno::audio
