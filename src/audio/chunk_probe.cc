#include "chunk_probe.h"

#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

struct Reader {
  std::span<const uint8_t> b;
  bool big_endian;
  uint32_t u16(uint64_t at) const {
    return big_endian ? (uint32_t{b[at]} << 8) | b[at + 1] : (uint32_t{b[at + 1]} << 8) | b[at];
  }
  uint32_t u32(uint64_t at) const {
    return big_endian ? (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | b[at + 3]
                      : (uint32_t{b[at + 3]} << 24) | (uint32_t{b[at + 2]} << 16) | (uint32_t{b[at + 1]} << 8) | b[at];
  }
  uint64_t u64le(uint64_t at) const { return uint64_t{u32(at)} | (uint64_t{u32(at + 4)} << 32); }
  bool id(uint64_t at, const char* fourcc) const {
    return b[at] == fourcc[0] && b[at + 1] == fourcc[1] && b[at + 2] == fourcc[2] && b[at + 3] == fourcc[3];
  }
};

// Walks the chunks after the 12-byte RIFF/FORM header. All offsets are 64-bit, so a 0xFFFFFFFF size cannot wrap.
std::optional<DataChunk> probe_wav(std::span<const uint8_t> b) {
  const Reader r{b, b[3] == 'X'};  // RIFX is big-endian
  const bool rf64 = r.id(0, "RF64");
  std::optional<uint64_t> ds64_data_size;
  uint32_t block_align = 0;
  for (uint64_t at = 12; at + 8 <= b.size();) {
    const uint64_t size = r.u32(at + 4), body = at + 8;
    if (r.id(at, "ds64") && rf64 && body + 16 <= b.size()) ds64_data_size = r.u64le(body + 8);
    if (r.id(at, "fmt ") && body + 16 <= b.size()) {
      const uint32_t tag = r.u16(body), channels = r.u16(body + 2), rate = r.u32(body + 4);
      const uint32_t align = r.u16(body + 12), bits = r.u16(body + 14);
      if (channels == 0) fail(ErrorCode::kDataLoss, "malformed WAV: the header says 0 channels");
      if (rate == 0) fail(ErrorCode::kDataLoss, "malformed WAV: the header says a sample rate of 0 Hz");
      if (channels > kMaxChannelsIn)
        fail(ErrorCode::kOutOfRange, "audio has {} channels, over the limit of {}", channels, kMaxChannelsIn);
      const bool uncompressed = tag == 1 || tag == 3 || tag == 0xFFFE;  // PCM, IEEE float, extensible
      if (uncompressed && bits > 0 && align == channels * ((bits + 7) / 8)) block_align = align;
    }
    if (r.id(at, "data")) {
      const uint64_t declared = (rf64 && size == 0xFFFFFFFF && ds64_data_size) ? *ds64_data_size : size;
      return DataChunk{declared, b.size() - body, block_align};
    }
    at = body + size + (size & 1);  // chunks are padded to an even length
  }
  return std::nullopt;
}

std::optional<DataChunk> probe_aiff(std::span<const uint8_t> b) {
  const Reader r{b, true};
  uint32_t block_align = 0;
  for (uint64_t at = 12; at + 8 <= b.size();) {
    const uint64_t size = r.u32(at + 4), body = at + 8;
    if (r.id(at, "COMM") && body + 8 <= b.size()) {
      const uint32_t channels = r.u16(body), bits = r.u16(body + 6);
      const bool aifc = r.id(8, "AIFC");
      const bool plain_pcm = !aifc || (body + 22 <= b.size() && (r.id(body + 18, "NONE") || r.id(body + 18, "twos")));
      if (plain_pcm && channels > 0 && bits > 0) block_align = channels * ((bits + 7) / 8);
    }
    if (r.id(at, "SSND")) {
      // SSND starts with an 8-byte offset/block-size preamble before the samples.
      const uint64_t declared = size >= 8 ? size - 8 : 0;
      const uint64_t present = b.size() >= body + 8 ? b.size() - body - 8 : 0;
      return DataChunk{declared, present, block_align};
    }
    at = body + size + (size & 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<DataChunk> probe_data_chunk(std::span<const uint8_t> bytes, Container container) {
  if (bytes.size() < 12) return std::nullopt;
  if (container == Container::kWav) return probe_wav(bytes);
  if (container == Container::kAiff) return probe_aiff(bytes);
  return std::nullopt;
}

}  // namespace steno::audio
