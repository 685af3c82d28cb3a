// Reads the length a WAV or AIFF header declares for its audio data. libsndfile silently clamps a data chunk that
// claims more bytes than the file holds (a truncated upload, or a placeholder such as 0xFFFFFFFF) and reports the
// clamped frame count, so a lying header is only detectable by parsing the chunk list ourselves.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "sniff.h"

namespace steno::audio {

struct DataChunk {
  uint64_t declared_bytes = 0;  // what the header says the audio data occupies
  uint64_t present_bytes = 0;   // what the input holds after the data chunk's start
  uint32_t block_align = 0;     // bytes per frame for uncompressed PCM/float, 0 when unknown or compressed
};

// For WAV (RIFF, RIFX, RF64) and AIFF/AIFC: the data chunk, or nullopt when there is none (libsndfile then
// reports the problem); other containers: nullopt. Also rejects a WAV 'fmt ' chunk that declares zero channels or a
// zero sample rate (kDataLoss; libsndfile's own messages for these are obscure) or over kMaxChannelsIn channels
// (kOutOfRange).
std::optional<DataChunk> probe_data_chunk(std::span<const uint8_t> bytes, Container container);

}  // namespace steno::audio
