// Sample-rate conversion and channel mixing for float PCM.
#pragma once

#include <span>
#include <vector>

namespace steno::audio {

// Resamples mono float PCM with soxr at high quality (SOXR_HQ, as librosa's default "soxr_hq"). Output length is
// round(input.size() * rate_out / rate_in) up to one sample; rate_in == rate_out returns an exact copy. Rates must be
// positive (kInvalidArgument otherwise).
std::vector<float> resample(std::span<const float> input, int rate_in, int rate_out);

// Averages interleaved frames of `channels` samples into one channel. interleaved.size() must be a multiple of
// channels (kInvalidArgument otherwise); channels == 1 returns an exact copy.
std::vector<float> to_mono(std::span<const float> interleaved, int channels);

}  // namespace steno::audio
