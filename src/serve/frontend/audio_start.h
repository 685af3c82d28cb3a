// Refusing an upload from its first bytes: a client sending hours of audio to a server that takes twenty minutes
// learns it before the rest is sent and buffered (a 460 MB file once cost 1.1 GB of memory to refuse). Used by the
// front ends while a large body is still arriving; the whole body's decoding still enforces the limit exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "steno/serve/service.h"

namespace steno::serve {

// The over-limit error (kOverLimit, naming `param`) for an encoded file whose first bytes are `start` and whose size
// is `total_bytes`, when it is surely longer than `max_audio_seconds`: its header says so (WAV, AIFF, FLAC, MP3 with
// a length tag), or its first seconds extrapolate to more than kEstimateMargin times the limit (a variable bitrate
// makes an extrapolation a guess: a quiet start encodes small and looks long). nullopt otherwise, and for anything
// that is not recognisable audio (the whole body's parse says what is wrong with it).
std::optional<ServeError> audio_start_over_limit(std::string_view start, uint64_t total_bytes,
                                                 double max_audio_seconds, const std::string& param);
inline constexpr double kEstimateMargin = 4.0;

// The longest audio any served model takes (the model a request names may come after its audio).
double longest_audio_taken(const std::vector<ModelInfo>& models);

}  // namespace steno::serve
