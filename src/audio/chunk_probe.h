// Reads the lengths a WAV or AIFF header declares. libsndfile silently clamps a data chunk that claims more bytes
// than the file holds (a cut-off recording or upload, or a placeholder such as 0xFFFFFFFF) and reports the clamped
// frame count, so a header that overstates the audio is only detectable by parsing the chunk list ourselves. The
// same fields give the duration a header states (estimate_duration_s) without opening a decoder.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "sniff.h"

namespace steno::audio {

struct DataChunk {
  uint64_t declared_bytes = 0;  // what the header says the audio data occupies
  uint64_t present_bytes = 0;   // what the file holds after the data chunk's start (of total_bytes)
  uint32_t block_align = 0;     // bytes per frame for uncompressed PCM/float, 0 when unknown or compressed
  double sample_rate = 0;       // from the 'fmt '/COMM chunk before the data, 0 when not seen
  int64_t comm_frames = -1;     // AIFF: the COMM chunk's frame count; -1 for WAV or when absent
  // The RIFF/FORM size plus its 8-byte chunk header (RF64: the ds64 RIFF size), 0 when it is a streaming
  // writer's placeholder (0 or 0xFFFFFFFF); and the file's size, to compare it with.
  uint64_t declared_file_bytes = 0;
  uint64_t file_bytes = 0;

  bool data_cut() const { return declared_bytes > present_bytes; }
  // Whole frames declared and present (block_align > 0 only).
  int64_t declared_frames() const { return static_cast<int64_t>(declared_bytes / block_align); }
  int64_t present_frames() const { return static_cast<int64_t>(present_bytes / block_align); }
};

// For WAV (RIFF, RIFX, RF64) and AIFF/AIFC: the data chunk, or nullopt when there is none within `bytes` (libsndfile
// then reports the problem); other containers: nullopt. `bytes` may be a prefix of a file of `total_bytes` bytes
// (present_bytes and file_bytes count to its end); total_bytes < bytes.size() is taken as bytes.size(). Also rejects
// a WAV 'fmt ' chunk that declares zero channels or a zero sample rate (kDataLoss; libsndfile's own messages for
// these are obscure) or over kMaxChannelsIn channels (kOutOfRange).
std::optional<DataChunk> probe_data_chunk(std::span<const uint8_t> bytes, Container container, uint64_t total_bytes);
inline std::optional<DataChunk> probe_data_chunk(std::span<const uint8_t> bytes, Container container) {
  return probe_data_chunk(bytes, container, bytes.size());
}

}  // namespace steno::audio
