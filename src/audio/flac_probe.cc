#include "flac_probe.h"

#include <algorithm>

namespace steno::audio {
namespace {

constexpr size_t kStreamInfoBytes = 34;

uint64_t bits_be(std::span<const uint8_t> b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | b[at + i];
  return v;
}

uint8_t crc8(std::span<const uint8_t> b, size_t at, size_t n) {
  uint8_t crc = 0;  // polynomial x^8 + x^2 + x + 1, initial 0
  for (size_t i = 0; i < n; ++i) {
    crc ^= b[at + i];
    for (int k = 0; k < 8; ++k) crc = static_cast<uint8_t>((crc & 0x80) ? (crc << 1) ^ 0x07 : crc << 1);
  }
  return crc;
}

// The UTF-8-style coded frame or sample number at `at`: its value and length, or nullopt if malformed or cut.
std::optional<std::pair<uint64_t, size_t>> coded_number(std::span<const uint8_t> b, size_t at) {
  if (at >= b.size()) return std::nullopt;
  const uint8_t first = b[at];
  size_t extra = 0;
  uint64_t v = 0;
  if (first < 0x80) return std::pair<uint64_t, size_t>{first, 1};
  if ((first & 0xE0) == 0xC0) extra = 1, v = first & 0x1F;
  else if ((first & 0xF0) == 0xE0) extra = 2, v = first & 0x0F;
  else if ((first & 0xF8) == 0xF0) extra = 3, v = first & 0x07;
  else if ((first & 0xFC) == 0xF8) extra = 4, v = first & 0x03;
  else if ((first & 0xFE) == 0xFC) extra = 5, v = first & 0x01;
  else if (first == 0xFE) extra = 6;
  else return std::nullopt;
  if (at + 1 + extra > b.size()) return std::nullopt;
  for (size_t i = 1; i <= extra; ++i) {
    if ((b[at + i] & 0xC0) != 0x80) return std::nullopt;
    v = (v << 6) | (b[at + i] & 0x3F);
  }
  return std::pair<uint64_t, size_t>{v, 1 + extra};
}

// The first sample of the frame whose header starts at `at`, if the header there is intact and fits the stream.
std::optional<uint64_t> frame_start(std::span<const uint8_t> b, size_t at, const FlacStreamInfo& info) {
  if (at + 6 > b.size() || b[at] != 0xFF || (b[at + 1] & 0xFE) != 0xF8) return std::nullopt;
  const bool variable = b[at + 1] & 1;
  const unsigned block_code = b[at + 2] >> 4, rate_code = b[at + 2] & 0xF;
  const unsigned channel_code = b[at + 3] >> 4, size_code = (b[at + 3] >> 1) & 7;
  if (block_code == 0 || rate_code == 15 || channel_code > 10 || size_code == 3 || (b[at + 3] & 1)) return std::nullopt;
  const unsigned channels = channel_code < 8 ? channel_code + 1 : 2;
  if (channels != info.channels) return std::nullopt;
  const auto number = coded_number(b, at + 4);
  if (!number || (!variable && number->second > 6)) return std::nullopt;
  size_t end = at + 4 + number->second;
  end += block_code == 6 ? 1 : block_code == 7 ? 2 : 0;
  end += rate_code == 12 ? 1 : (rate_code == 13 || rate_code == 14) ? 2 : 0;
  if (end >= b.size() || crc8(b, at, end - at) != b[end]) return std::nullopt;
  // A fixed-blocksize stream numbers its frames; every frame but the last holds max_blocksize samples.
  const uint64_t first = variable ? number->first : number->first * info.max_blocksize;
  if (info.total_samples > 0 && first >= info.total_samples) return std::nullopt;
  return first;
}

}  // namespace

std::optional<FlacStreamInfo> flac_stream_info(std::span<const uint8_t> b, size_t offset) {
  // "fLaC", then a 4-byte metadata block header whose type (low 7 bits of the first byte) is 0: STREAMINFO.
  const size_t at = offset + 8;
  if (offset > b.size() || b.size() - offset < 8 + kStreamInfoBytes) return std::nullopt;
  if (b[offset] != 'f' || b[offset + 1] != 'L' || b[offset + 2] != 'a' || b[offset + 3] != 'C') return std::nullopt;
  if ((b[offset + 4] & 0x7F) != 0 || bits_be(b, offset + 5, 3) < kStreamInfoBytes) return std::nullopt;
  FlacStreamInfo info;
  info.min_blocksize = static_cast<uint32_t>(bits_be(b, at, 2));
  info.max_blocksize = static_cast<uint32_t>(bits_be(b, at + 2, 2));
  info.max_framesize = static_cast<uint32_t>(bits_be(b, at + 7, 3));
  const uint64_t packed = bits_be(b, at + 10, 8);  // rate:20 channels-1:3 bits-1:5 total:36
  info.sample_rate = static_cast<uint32_t>(packed >> 44);
  info.channels = static_cast<uint32_t>((packed >> 41) & 7) + 1;
  info.total_samples = packed & ((uint64_t{1} << 36) - 1);
  if (info.sample_rate == 0 || info.max_blocksize < 16) return std::nullopt;
  return info;
}

std::optional<size_t> flac_first_frame(std::span<const uint8_t> b, size_t offset) {
  // Each metadata block: 1 byte (last-block flag, type), a 24-bit length, the body.
  for (size_t at = offset + 4; at + 4 <= b.size();) {
    const bool last = b[at] & 0x80;
    at += 4 + bits_be(b, at + 1, 3);
    if (last) return at <= b.size() ? std::optional<size_t>(at) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<uint64_t> flac_last_frame_start(std::span<const uint8_t> b, const FlacStreamInfo& info) {
  const size_t window = info.max_framesize > 0 ? 2 * size_t{info.max_framesize} + 64 : size_t{1} << 20;
  const size_t lowest = b.size() > window ? b.size() - window : 0;
  for (size_t at = b.size(); at-- > lowest;)
    if (const auto first = frame_start(b, at, info)) return first;
  return std::nullopt;
}

}  // namespace steno::audio
