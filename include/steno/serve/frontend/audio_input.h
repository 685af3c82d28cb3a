// Untrusted audio from a client -> the 16 kHz mono PCM the inference core takes. Shared by every front end (the
// OpenAI and KServe endpoints over HTTP, KServe over gRPC). Failures are steno::Errors whose code says what kind
// of fault it is, and each front end turns the code into its own status (errors.h for HTTP, status.h for gRPC):
//   kInvalidArgument / kDataLoss  malformed, empty, corrupt or truncated audio
//   kOutOfRange                   over --max-audio-seconds (the message names the limit)
//   kUnimplemented                a container or codec steno does not read (MP4/M4A, WebM)
#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace steno::serve {

// An encoded file (WAV, FLAC, OGG/Vorbis, Opus, MP3; see audio/decode.h), refused when longer than
// max_audio_seconds. The caller has already bounded its size (the body or message size limit).
std::vector<float> decode_upload(std::string_view bytes, double max_audio_seconds);

// Raw float PCM at `sample_rate` Hz (mono): must be non-empty, finite, at a rate steno resamples from, and within
// max_audio_seconds; resampled to 16 kHz with soxr and clamped to [-1, 1] (as decoded files are).
std::vector<float> pcm_to_16k(std::span<const float> pcm, double sample_rate, double max_audio_seconds);

}  // namespace steno::serve
