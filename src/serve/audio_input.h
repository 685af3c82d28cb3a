// A client's audio (AudioInput, service.h) -> the 16 kHz mono PCM the executors take, on submission. Every front
// end's audio goes through here, so every protocol refuses the same inputs with the same words. Failures are
// steno::Errors (serve_error() maps them to every protocol's status):
//   kInvalidArgument / kDataLoss  malformed, empty or corrupt audio, nothing decodable
//   kOutOfRange                   over the model's limit of seconds (the message names the limit)
//   kUnimplemented                a container or codec steno does not read (Wave64, AU, ...)
// Audio that ends before its header says is decoded as far as it goes, with a warning.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "steno/serve/service.h"

namespace steno::serve {

struct DecodedInput {
  std::vector<float> pcm;             // 16 kHz mono in [-1, 1]
  std::vector<std::string> warnings;  // for the client: what was odd about the audio although it was served
};

DecodedInput decode_input(const AudioInput& audio, double max_audio_seconds);

// An encoded file (WAV, FLAC, OGG/Vorbis, Opus, MP3; see audio/decode.h), refused when longer than
// max_audio_seconds. The caller has already bounded its size (the body or message size limit).
DecodedInput decode_upload(std::string_view bytes, double max_audio_seconds);

// Raw float PCM at `sample_rate` Hz (mono): must be non-empty, finite, at a rate steno resamples from, and within
// max_audio_seconds; resampled to 16 kHz with soxr and clamped to [-1, 1] (as decoded files are).
std::vector<float> pcm_to_16k(std::span<const float> pcm, double sample_rate, double max_audio_seconds);

}  // namespace steno::serve
