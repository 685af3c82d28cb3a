#include "serve/audio_input.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "steno/audio/decode.h"
#include "audio/resample.h"
#include "steno/core/error.h"

namespace steno::serve {

DecodedInput decode_input(const AudioInput& audio, double max_audio_seconds) {
  if (const auto* encoded = std::get_if<EncodedAudio>(&audio)) return decode_upload(encoded->bytes, max_audio_seconds);
  const PcmAudio& pcm = std::get<PcmAudio>(audio);
  return DecodedInput{pcm_to_16k(pcm.samples, pcm.sample_rate, max_audio_seconds), {}};
}

DecodedInput decode_upload(std::string_view bytes, double max_audio_seconds) {
  audio::AudioLimits limits;
  limits.max_duration_s = max_audio_seconds;
  limits.max_bytes = std::max<size_t>(bytes.size(), 1);  // the body or message limit already bounded it
  audio::DecodedAudio decoded = audio::decode_audio(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), limits);
  if (decoded.samples.empty()) fail(ErrorCode::kInvalidArgument, "audio contains no samples");
  return DecodedInput{std::move(decoded.samples), std::move(decoded.warnings)};
}

std::vector<float> pcm_to_16k(std::span<const float> pcm, double sample_rate, double max_audio_seconds) {
  if (!(sample_rate >= audio::kMinSampleRateIn && sample_rate <= audio::kMaxSampleRateIn) ||
      sample_rate != std::floor(sample_rate))
    fail(ErrorCode::kInvalidArgument, "sample_rate {} is not supported; give an integer rate in {}..{} Hz",
         sample_rate, audio::kMinSampleRateIn, audio::kMaxSampleRateIn);
  if (pcm.empty()) fail(ErrorCode::kInvalidArgument, "audio is empty (0 samples)");
  const double seconds = static_cast<double>(pcm.size()) / sample_rate;
  if (seconds > max_audio_seconds)
    fail(ErrorCode::kOutOfRange, "audio is {:.1f} s, over the limit of {:g} s (--max-audio-seconds)", seconds,
         max_audio_seconds);
  for (size_t i = 0; i < pcm.size(); ++i)
    if (!std::isfinite(pcm[i]))
      fail(ErrorCode::kInvalidArgument, "sample {} is {}; audio samples must be finite numbers", i, pcm[i]);
  std::vector<float> out = audio::resample(pcm, static_cast<int>(sample_rate), audio::kSampleRate);
  for (float& v : out) v = std::clamp(v, -1.0f, 1.0f);
  return out;
}

}  // namespace steno::serve
