// Untrusted audio bytes (a file or an in-memory HTTP body) -> 16 kHz mono float PCM in [-1, 1].
//
// Supported containers: WAV (RIFF/RIFX/RF64), AIFF, FLAC, OGG (Vorbis, Opus) and MP3, decoded by libsndfile,
// libvorbisfile and libmpg123; anything else is refused from its first bytes, before any decoder parses it.
// Every malformed input is reported as a steno::Error that names the problem; nothing here aborts, hangs or sizes an
// allocation from an unchecked header field:
//   kInvalidArgument  empty input, bytes that are not audio (text, random data), a file with no samples
//   kUnimplemented    a recognised but unsupported container (MP4/M4A, WebM, ...) or codec
//   kDataLoss         corrupt or lying input: truncated data, absurd header sizes, zero channels, NaN/inf samples
//   kOutOfRange       well-formed input over a limit: bytes, duration, channel count, sample rate
// Integer PCM is scaled by 1/2^(bits-1), so a 16 kHz mono int16 WAV yields exactly int16/32768 (as NeMo reads it).
// Float input must be finite; finite values outside [-1, 1] are clamped, as is resampler overshoot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace steno::audio {

inline constexpr int kSampleRate = 16000;  // the rate of every DecodedAudio
inline constexpr int kMinSampleRateIn = 1000;
inline constexpr int kMaxSampleRateIn = 384000;
inline constexpr int kMaxChannelsIn = 32;

struct AudioLimits {
  double max_duration_s = 3 * 3600.0;  // longer audio is refused (from the header when it states a length)
  size_t max_bytes = size_t{1} << 30;  // larger inputs are refused before any parsing
};

struct DecodedAudio {
  std::vector<float> samples;  // mono, sample_rate Hz, each in [-1, 1]
  int sample_rate = kSampleRate;
  int channels_in = 0;     // channels of the source, averaged into one
  int sample_rate_in = 0;  // rate of the source
  std::string format;      // container/encoding, e.g. "wav/pcm_16", "ogg/opus", "mpeg/layer3"
  double duration_s() const { return sample_rate > 0 ? static_cast<double>(samples.size()) / sample_rate : 0.0; }
};

// Decodes a whole file held in memory. Thread-safe; the bytes are only read during the call.
DecodedAudio decode_audio(std::span<const uint8_t> bytes, const AudioLimits& limits = {});

// Reads `path` (kNotFound if it does not exist; kOutOfRange if larger than limits.max_bytes) and decodes it.
DecodedAudio load_audio_file(const std::string& path, const AudioLimits& limits = {});

}  // namespace steno::audio
