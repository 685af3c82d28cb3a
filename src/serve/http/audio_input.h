// Untrusted audio from a client -> the 16 kHz mono PCM the inference core takes, with every failure turned into
// an HttpError that names the field at fault (400 malformed or empty, 413 over a limit, 415 unsupported format).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace steno::serve::http {

// An encoded file (WAV, FLAC, OGG/Vorbis, Opus, MP3; see audio/decode.h), refused when longer than
// max_audio_seconds.
std::vector<float> decode_upload(std::string_view bytes, double max_audio_seconds, const std::string& param);

// Raw float PCM at `sample_rate` Hz (mono): must be non-empty, finite, at a rate steno resamples from, and within
// max_audio_seconds; resampled to 16 kHz with soxr and clamped to [-1, 1] (as decoded files are).
std::vector<float> pcm_to_16k(std::span<const float> pcm, double sample_rate, double max_audio_seconds,
                              const std::string& param);

}  // namespace steno::serve::http
