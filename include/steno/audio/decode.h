// Untrusted audio bytes (a file or an in-memory HTTP body) -> 16 kHz mono float PCM in [-1, 1].
//
// Supported containers: WAV (RIFF/RIFX/RF64), AIFF, FLAC, OGG (Vorbis, Opus) and MP3, decoded by libsndfile,
// libvorbis (with libogg) and libmpg123; in a build with FFmpeg also MP4/M4A/MOV/3GP and WebM/Matroska (AAC, Opus,
// Vorbis, MP3, FLAC, ALAC, AMR or PCM audio), raw AAC (ADTS), AMR and CAF, by libavformat and libavcodec held to
// those parsers. Anything else is refused from its first bytes, before any decoder parses it.
// Every malformed input is reported as a steno::Error that names the problem; nothing here aborts, hangs or sizes an
// allocation from an unchecked header field:
//   kInvalidArgument  empty input, bytes that are not audio (text, random data), a file with no samples
//   kUnimplemented    a recognised but unsupported container (Wave64, AU, ...; the FFmpeg formats without FFmpeg)
//                     or codec
//   kDataLoss         corrupt or lying input: nothing decodable where the header promises audio ("no audio could be
//                     decoded"), corruption before the end, absurd header fields, zero channels, NaN/inf samples
//   kOutOfRange       well-formed input over a limit: bytes, duration, channel count, sample rate
// An input that merely ends early -- what a crashed recorder or a cut-off upload leaves -- is not an error: every
// complete frame present is decoded and DecodedAudio::warnings says what was missing (as sox, ffmpeg and
// whisper.cpp do). That covers a WAV/AIFF data chunk or RIFF size longer than the file, a header frame count (WAV,
// AIFF, FLAC STREAMINFO, MP3 Xing/Info/VBRI, an MP4's, WebM's or CAF's duration) over what decodes, a FLAC, MP3,
// MP4, AAC or AMR frame cut by the end of the input, and an Ogg stream without its end-of-stream page.
// Integer PCM is scaled by 1/2^(bits-1), so a 16 kHz mono int16 WAV yields exactly int16/32768 (as NeMo reads it).
// Float input must be finite; finite values outside [-1, 1] are clamped, as is resampler overshoot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
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
  std::string format;      // container/encoding, e.g. "wav/pcm_16", "ogg/opus", "mpeg/layer3", "mp4/aac"
  // Problems that did not stop decoding, one sentence each; empty for a complete, well-formed input. Today the only
  // one is an input that ends early, e.g. "truncated: the WAV header says 16000 frames (1.00 s), the file holds 6000
  // (0.38 s); transcribed the 0.38 s present".
  std::vector<std::string> warnings;
  double duration_s() const { return sample_rate > 0 ? static_cast<double>(samples.size()) / sample_rate : 0.0; }
};

// Whether this build decodes MP4/M4A, WebM/Matroska, raw AAC, AMR and CAF (built with FFmpeg: CMake
// STENO_WITH_FFMPEG).
bool decodes_ffmpeg_formats();

// Decodes a whole file held in memory. Thread-safe; the bytes are only read during the call.
DecodedAudio decode_audio(std::span<const uint8_t> bytes, const AudioLimits& limits = {});

// Decodes the file at `path` (kNotFound if it does not exist; kOutOfRange if larger than limits.max_bytes). A
// regular file is mapped, not read, so one whose header states a length over limits.max_duration_s is refused after
// touching only its first pages; a pipe or device is read, at most limits.max_bytes of it.
DecodedAudio load_audio_file(const std::string& path, const AudioLimits& limits = {});

struct DurationEstimate {
  double seconds = 0;
  // true: the header states the length (WAV/RF64/AIFF data size, bounded by the file size; FLAC total samples; MP3
  // Xing/Info/VBRI frame count). false: extrapolated (MP3 without such a header: its frames' bitrate; Ogg: the
  // granule position reached in the prefix, or Vorbis's nominal bitrate; otherwise the decoded prefix's bytes per
  // second), so the whole file may be somewhat longer or shorter.
  bool exact = false;
};

// The duration of a file from its first bytes (`prefix`, e.g. the first 64 KiB..1 MiB of an upload) and its full
// size in bytes (`total_bytes`; taken as prefix.size() if smaller); nullopt when that cannot be told (too short a
// prefix, bytes that are not a supported audio file, malformed headers). Never throws, whatever the input.
std::optional<DurationEstimate> estimate_duration_s(std::span<const uint8_t> prefix, uint64_t total_bytes) noexcept;

}  // namespace steno::audio
