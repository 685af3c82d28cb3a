// FLAC stream facts read from the bytes, not through libsndfile: the STREAMINFO block (the length a header states,
// for estimate_duration_s) and frame headers (to tell a stream cut off at the end from one corrupt in the middle).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace steno::audio {

struct FlacStreamInfo {
  uint32_t min_blocksize = 0, max_blocksize = 0;  // samples per frame
  uint32_t max_framesize = 0;                     // bytes, 0 when the encoder did not record it
  uint32_t sample_rate = 0;
  uint32_t channels = 0;
  uint64_t total_samples = 0;  // per channel, 0 when unknown (a streaming encoder)
};

// The STREAMINFO block after the "fLaC" marker at `offset` (the sniffer's audio_offset), or nullopt if it is not
// there in full or states impossible values (zero rate or block size).
std::optional<FlacStreamInfo> flac_stream_info(std::span<const uint8_t> bytes, size_t offset);

// Where the first frame starts: after the metadata blocks that follow the "fLaC" marker at `offset`; nullopt if the
// blocks run past the end of `bytes`.
std::optional<size_t> flac_first_frame(std::span<const uint8_t> bytes, size_t offset);

// The number of the first sample of the last frame whose header is intact (sync code, valid fields, channels as in
// STREAMINFO, CRC-8 correct), searched backwards from the end of `bytes` over a few maximal frame lengths; nullopt
// when none is found there.
std::optional<uint64_t> flac_last_frame_start(std::span<const uint8_t> bytes, const FlacStreamInfo& info);

}  // namespace steno::audio
