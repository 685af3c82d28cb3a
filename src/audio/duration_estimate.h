// The duration a file's header states, read without a decoder, so that an over-long input can be refused before any
// of its audio is read (decode_audio, load_audio_file, estimate_duration_s).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "sniff.h"

namespace steno::audio {

// From a WAV/RF64/AIFF data size (bounded by the bytes the file has), FLAC STREAMINFO's total samples, or an MP3
// Xing/Info/VBRI frame count; nullopt when the header in `prefix` states none. `total_bytes` is the whole file's
// size. Throws what probe_data_chunk throws for a malformed WAV format chunk.
std::optional<double> stated_duration_s(std::span<const uint8_t> prefix, const Sniffed& sniffed, uint64_t total_bytes);

}  // namespace steno::audio
