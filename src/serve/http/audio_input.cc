#include "audio_input.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "errors.h"
#include "steno/audio/decode.h"
#include "steno/audio/resample.h"

namespace steno::serve::http {

std::vector<float> decode_upload(std::string_view bytes, double max_audio_seconds, const std::string& param) {
  audio::AudioLimits limits;
  limits.max_duration_s = max_audio_seconds;
  limits.max_bytes = std::max<size_t>(bytes.size(), 1);  // the body limit already bounded it
  try {
    audio::DecodedAudio decoded = audio::decode_audio(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), limits);
    if (decoded.samples.empty()) throw HttpError(400, "audio contains no samples", param, "invalid_input");
    return std::move(decoded.samples);
  } catch (const Error& e) {
    throw error_from_exception(e, param);
  }
}

std::vector<float> pcm_to_16k(std::span<const float> pcm, double sample_rate, double max_audio_seconds,
                              const std::string& param) {
  if (!(sample_rate >= audio::kMinSampleRateIn && sample_rate <= audio::kMaxSampleRateIn) ||
      sample_rate != std::floor(sample_rate))
    throw HttpError(400,
                    fmt::format("sample_rate {} is not supported; give an integer rate in {}..{} Hz", sample_rate,
                                audio::kMinSampleRateIn, audio::kMaxSampleRateIn),
                    param, "invalid_input");
  if (pcm.empty()) throw HttpError(400, "audio is empty (0 samples)", param, "invalid_input");
  const double seconds = static_cast<double>(pcm.size()) / sample_rate;
  if (seconds > max_audio_seconds)
    throw HttpError(413,
                    fmt::format("audio is {:.1f} s, over the limit of {:g} s (--max-audio-seconds)", seconds,
                                max_audio_seconds),
                    param, "over_limit");
  for (size_t i = 0; i < pcm.size(); ++i)
    if (!std::isfinite(pcm[i]))
      throw HttpError(400, fmt::format("sample {} is {}; audio samples must be finite numbers", i, pcm[i]), param,
                      "invalid_input");
  std::vector<float> out = audio::resample(pcm, static_cast<int>(sample_rate), audio::kSampleRate);
  for (float& v : out) v = std::clamp(v, -1.0f, 1.0f);
  return out;
}

}  // namespace steno::serve::http
