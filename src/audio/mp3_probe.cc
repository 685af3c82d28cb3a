#include "mp3_probe.h"

#include <cstring>

namespace steno::audio {
namespace {

// Bitrates in kbit/s by [MPEG-1 ? 0 : 1][layer - 1][index]; index 0 is free format, 15 is invalid.
constexpr int kBitrates[2][3][15] = {
    {{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
     {0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
     {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}},
    {{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
     {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
     {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}}};
constexpr int kRates[3] = {44100, 48000, 32000};  // MPEG-1; halved for MPEG-2, quartered for MPEG-2.5

uint32_t u32be(std::span<const uint8_t> b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | b[at + 3];
}

bool tag_at(std::span<const uint8_t> b, size_t at, const char* tag) {
  const size_t n = std::strlen(tag);
  return at + n <= b.size() && std::memcmp(b.data() + at, tag, n) == 0;
}

bool same_stream(const Mp3FrameHeader& a, const Mp3FrameHeader& b) {
  return a.version == b.version && a.layer == b.layer && a.sample_rate == b.sample_rate;
}

// Metadata that taggers append after the last frame.
bool trailing_tag_at(std::span<const uint8_t> b, size_t at) {
  return tag_at(b, at, "TAG") || tag_at(b, at, "APETAGEX") || tag_at(b, at, "LYRICSBEGIN") || tag_at(b, at, "ID3");
}

// Bytes of side information after the header (and CRC) of a layer III frame; the Xing/Info tag follows them.
size_t side_info_bytes(const Mp3FrameHeader& h) {
  if (h.version == 1) return h.channels == 1 ? 17 : 32;
  return h.channels == 1 ? 9 : 17;
}

// The LAME tag's encoder delay and padding (12 bits each), at `at` just after the Xing fields; zeros when absent.
// mpg123 reads them whenever the tag's first byte is not 0 (an encoder name such as "LAME3.100" or "Lavc").
std::pair<int64_t, int64_t> lame_delay_padding(std::span<const uint8_t> b, size_t at, size_t frame_end) {
  if (at + 24 > frame_end || b[at] == 0) return {0, 0};
  const size_t p = at + 21;
  return {(int64_t{b[p]} << 4) | (b[p + 1] >> 4), (int64_t{b[p + 1] & 0x0F} << 8) | b[p + 2]};
}

}  // namespace

std::optional<Mp3FrameHeader> mp3_frame_header(std::span<const uint8_t> b, size_t at) {
  if (at > b.size() || b.size() - at < 4) return std::nullopt;
  const uint8_t b1 = b[at + 1], b2 = b[at + 2], b3 = b[at + 3];
  if (b[at] != 0xFF || (b1 & 0xE0) != 0xE0) return std::nullopt;
  const int version_bits = (b1 >> 3) & 3, layer_bits = (b1 >> 1) & 3;
  const int bitrate_index = b2 >> 4, rate_index = (b2 >> 2) & 3;
  if (version_bits == 1 || layer_bits == 0 || bitrate_index == 15 || rate_index == 3) return std::nullopt;
  Mp3FrameHeader h;
  h.version = version_bits == 3 ? 1 : version_bits == 2 ? 2 : 25;
  h.layer = 4 - layer_bits;
  h.sample_rate = kRates[rate_index] / (h.version == 1 ? 1 : h.version == 2 ? 2 : 4);
  h.channels = (b3 >> 6) == 3 ? 1 : 2;
  h.crc = (b1 & 1) == 0;
  h.bitrate = kBitrates[h.version == 1 ? 0 : 1][h.layer - 1][bitrate_index] * 1000;
  h.samples = h.layer == 1 ? 384 : (h.layer == 3 && h.version != 1) ? 576 : 1152;
  const size_t padding = (b2 >> 1) & 1;
  if (h.bitrate > 0) {
    if (h.layer == 1) h.length = (12 * static_cast<size_t>(h.bitrate) / h.sample_rate + padding) * 4;
    else h.length = static_cast<size_t>(h.samples) / 8 * static_cast<size_t>(h.bitrate) / h.sample_rate + padding;
  }
  return h;
}

std::optional<Mp3Stated> mp3_stated(std::span<const uint8_t> b, size_t first_frame) {
  const auto h = mp3_frame_header(b, first_frame);
  // The whole frame: a LAME tag cut off would leave the delay and padding, and so the exact length, unknown.
  if (!h || h->layer != 3 || h->length == 0 || h->length > b.size() - first_frame) return std::nullopt;
  const size_t frame_end = first_frame + h->length;
  // Xing/Info: after the side information; VBRI (Fraunhofer): always 32 bytes after the header.
  const size_t xing = first_frame + 4 + (h->crc ? 2 : 0) + side_info_bytes(*h);
  if (xing + 8 <= frame_end && (tag_at(b, xing, "Xing") || tag_at(b, xing, "Info"))) {
    const uint32_t flags = u32be(b, xing + 4);
    if (!(flags & 1) || xing + 12 > frame_end) return std::nullopt;  // no frame count
    const int64_t frames = u32be(b, xing + 8);
    const size_t lame = xing + 8 + 4 + ((flags & 2) ? 4 : 0) + ((flags & 4) ? 100 : 0) + ((flags & 8) ? 4 : 0);
    const auto [delay, padding] = lame_delay_padding(b, lame, frame_end);
    const int64_t samples = frames * h->samples - delay - padding;
    if (samples <= 0) return std::nullopt;
    return Mp3Stated{samples, delay};
  }
  const size_t vbri = first_frame + 36;
  if (vbri + 18 <= frame_end && tag_at(b, vbri, "VBRI")) {
    const int64_t frames = u32be(b, vbri + 14);
    if (frames <= 0) return std::nullopt;
    return Mp3Stated{frames * h->samples, 0};
  }
  return std::nullopt;
}

Mp3Walk mp3_walk(std::span<const uint8_t> b, size_t first_frame, int64_t max_frames) {
  Mp3Walk walk;
  const auto first = mp3_frame_header(b, first_frame);
  if (!first) return walk;
  size_t at = first_frame;
  while (walk.frames < max_frames) {
    if (at == b.size() || trailing_tag_at(b, at)) {
      walk.clean_end = true;
      break;
    }
    const auto h = mp3_frame_header(b, at);
    if (!h) {
      // Under 4 bytes left that begin like a header: the cut fell inside the last frame's header.
      walk.last_cut = b.size() - at < 4 && b[at] == 0xFF;
      break;
    }
    if (!same_stream(*h, *first) || h->length == 0) break;
    if (h->length > b.size() - at) {
      walk.last_cut = true;
      break;
    }
    ++walk.frames;
    walk.samples += h->samples;
    walk.bytes += h->length;
    at += h->length;
  }
  return walk;
}

}  // namespace steno::audio
