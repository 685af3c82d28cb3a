// MPEG audio (MP3) stream facts read from the bytes: frame headers, the frame count an Xing/Info or VBRI header
// states, and whether the stream's last frame is cut off. mpg123 decodes the frames; these answer what it does not
// say: how long the stream claims to be before a full scan (estimate_duration_s, and refusing an over-long file
// without reading it), and whether its end is missing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace steno::audio {

struct Mp3FrameHeader {
  int version = 0;            // 1: MPEG-1, 2: MPEG-2, 25: MPEG-2.5
  int layer = 0;              // 1..3
  int sample_rate = 0;        // Hz
  int channels = 0;           // 1 or 2
  int bitrate = 0;            // bits per second; 0 for free format (frame length unknown)
  int samples = 0;            // per channel, in this frame
  size_t length = 0;          // bytes, header included; 0 for free format
  bool crc = false;           // a 16-bit CRC follows the header
};

// The frame header at `at`, or nullopt if the 4 bytes there are not one (or lie past the end).
std::optional<Mp3FrameHeader> mp3_frame_header(std::span<const uint8_t> bytes, size_t at);

struct Mp3Stated {
  int64_t samples = 0;        // per channel, less the LAME tag's encoder delay and padding (as mpg123 decodes gapless)
  int64_t encoder_delay = 0;  // the LAME tag's, 0 without one
};

// What the first frame's Xing/Info (LAME) or VBRI header states; nullopt when it has no such header with a frame
// count.
std::optional<Mp3Stated> mp3_stated(std::span<const uint8_t> bytes, size_t first_frame);

struct Mp3Walk {
  int64_t frames = 0;      // complete frames from first_frame on, each like the first (version, layer, rate)
  int64_t samples = 0;     // their samples per channel
  uint64_t bytes = 0;      // their bytes
  bool last_cut = false;   // the input ends inside a frame that follows them
  bool clean_end = false;  // they run to the end of the input, or to a trailing tag (ID3v1, APE, Lyrics3)
};

// Follows the frame chain from `first_frame` while each frame is like the first, up to `max_frames`. Stops early
// (neither last_cut nor clean_end) at free-format frames or bytes that are not a frame, where mpg123 would resync.
Mp3Walk mp3_walk(std::span<const uint8_t> bytes, size_t first_frame, int64_t max_frames = INT64_MAX);

}  // namespace steno::audio
