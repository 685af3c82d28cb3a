#include "ogg_probe.h"

#include <array>

#include "steno/core/error.h"

namespace steno::audio {
namespace {

constexpr size_t kHeaderBytes = 27;
constexpr size_t kMaxPageBytes = kHeaderBytes + 255 + 255 * 255;

// Ogg's CRC-32: polynomial 0x04C11DB7, not reflected, initial value 0, over the page with its CRC field zeroed.
const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t r = i << 24;
      for (int k = 0; k < 8; ++k) r = (r & 0x80000000u) ? (r << 1) ^ 0x04C11DB7u : r << 1;
      t[i] = r;
    }
    return t;
  }();
  return table;
}

uint32_t u32le(std::span<const uint8_t> b, size_t at) {
  return uint32_t{b[at]} | (uint32_t{b[at + 1]} << 8) | (uint32_t{b[at + 2]} << 16) | (uint32_t{b[at + 3]} << 24);
}

bool capture_pattern_at(std::span<const uint8_t> b, size_t at) {
  return at + 4 <= b.size() && b[at] == 'O' && b[at + 1] == 'g' && b[at + 2] == 'g' && b[at + 3] == 'S';
}

}  // namespace

size_t ogg_intact_page(std::span<const uint8_t> b, size_t at) {
  if (at + kHeaderBytes > b.size() || !capture_pattern_at(b, at) || b[at + 4] != 0) return 0;
  const size_t segments = b[at + 26];
  if (at + kHeaderBytes + segments > b.size()) return 0;
  size_t length = kHeaderBytes + segments;
  for (size_t i = 0; i < segments; ++i) length += b[at + kHeaderBytes + i];
  if (at + length > b.size()) return 0;
  const uint32_t stored = u32le(b, at + 22);
  const auto& table = crc_table();
  uint32_t crc = 0;
  for (size_t i = 0; i < length; ++i) {
    const uint8_t byte = (i >= 22 && i < 26) ? 0 : b[at + i];
    crc = (crc << 8) ^ table[((crc >> 24) ^ byte) & 0xFF];
  }
  return crc == stored ? length : 0;
}

int64_t ogg_page_granule(std::span<const uint8_t> b, size_t at) {
  return static_cast<int64_t>(uint64_t{u32le(b, at + 6)} | (uint64_t{u32le(b, at + 10)} << 32));
}

uint32_t ogg_page_serial(std::span<const uint8_t> b, size_t at) { return u32le(b, at + 14); }

OggTail ogg_tail(std::span<const uint8_t> b, const char* container_name) {
  // The last intact page starts within two maximal pages of the end, unless garbage trails the stream.
  const size_t window = 2 * kMaxPageBytes;
  const size_t lowest = b.size() > window ? b.size() - window : 0;
  for (size_t at = b.size() >= kHeaderBytes ? b.size() - kHeaderBytes + 1 : 0; at-- > lowest;) {
    const size_t length = ogg_intact_page(b, at);
    if (length == 0) continue;
    const size_t end = at + length;
    if (ogg_page_ends_stream(b, at)) return {OggEnd::kComplete, end};
    return {capture_pattern_at(b, end) ? OggEnd::kCutPage : OggEnd::kNoEndOfStream, end};
  }
  fail(ErrorCode::kDataLoss, "truncated or corrupt {}: no intact Ogg page in the last {} bytes", container_name,
       b.size() - lowest);
}

}  // namespace steno::audio
