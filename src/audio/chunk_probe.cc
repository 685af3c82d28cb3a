#include "chunk_probe.h"

#include <algorithm>
#include <cmath>

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

// AIFF stores its sample rate as an 80-bit IEEE extended float: sign and 15-bit exponent, 64-bit mantissa with an
// explicit integer bit. Returns 0 for values that are not a plausible rate.
double extended_to_double(const Reader& r, uint64_t at) {
  const uint32_t sign_exp = r.u16(at);
  const uint64_t mantissa = (uint64_t{r.u32(at + 2)} << 32) | r.u32(at + 6);
  const int exponent = static_cast<int>(sign_exp & 0x7FFF) - 16383 - 63;
  if ((sign_exp & 0x8000) || mantissa == 0 || exponent > 0 || exponent < -126) return 0;
  return std::ldexp(static_cast<double>(mantissa), exponent);
}

// A RIFF/FORM size of 0 or 0xFFFFFFFF is what streaming writers put before they know the length.
uint64_t declared_file_size(uint64_t riff_size) {
  return (riff_size == 0 || riff_size == 0xFFFFFFFF) ? 0 : riff_size + 8;
}

// Walks the chunks after the 12-byte RIFF/FORM header. All offsets are 64-bit, so a 0xFFFFFFFF size cannot wrap.
std::optional<DataChunk> probe_wav(std::span<const uint8_t> b, uint64_t total) {
  const Reader r{b, b[3] == 'X'};  // RIFX is big-endian
  const bool rf64 = r.id(0, "RF64");
  DataChunk chunk;
  chunk.file_bytes = total;
  chunk.declared_file_bytes = rf64 ? 0 : declared_file_size(r.u32(4));
  std::optional<uint64_t> ds64_data_size;
  for (uint64_t at = 12; at + 8 <= b.size();) {
    const uint64_t size = r.u32(at + 4), body = at + 8;
    if (r.id(at, "ds64") && rf64 && body + 16 <= b.size()) {
      chunk.declared_file_bytes = declared_file_size(r.u64le(body));
      ds64_data_size = r.u64le(body + 8);
    }
    if (r.id(at, "fmt ") && body + 16 <= b.size()) {
      const uint32_t tag = r.u16(body), channels = r.u16(body + 2), rate = r.u32(body + 4);
      const uint32_t align = r.u16(body + 12), bits = r.u16(body + 14);
      if (channels == 0) fail(ErrorCode::kDataLoss, "malformed WAV: the header says 0 channels");
      if (rate == 0) fail(ErrorCode::kDataLoss, "malformed WAV: the header says a sample rate of 0 Hz");
      if (channels > kMaxChannelsIn)
        fail(ErrorCode::kOutOfRange, "audio has {} channels, over the limit of {}", channels, kMaxChannelsIn);
      const bool uncompressed = tag == 1 || tag == 3 || tag == 0xFFFE;  // PCM, IEEE float, extensible
      if (uncompressed && bits > 0 && align == channels * ((bits + 7) / 8)) chunk.block_align = align;
      chunk.sample_rate = rate;
    }
    if (r.id(at, "data")) {
      chunk.declared_bytes = (rf64 && size == 0xFFFFFFFF && ds64_data_size) ? *ds64_data_size : size;
      chunk.present_bytes = total - body;
      return chunk;
    }
    at = body + size + (size & 1);  // chunks are padded to an even length
  }
  return std::nullopt;
}

std::optional<DataChunk> probe_aiff(std::span<const uint8_t> b, uint64_t total) {
  const Reader r{b, true};
  DataChunk chunk;
  chunk.file_bytes = total;
  chunk.declared_file_bytes = declared_file_size(r.u32(4));
  for (uint64_t at = 12; at + 8 <= b.size();) {
    const uint64_t size = r.u32(at + 4), body = at + 8;
    if (r.id(at, "COMM") && body + 18 <= b.size()) {
      const uint32_t channels = r.u16(body), bits = r.u16(body + 6);
      const bool aifc = r.id(8, "AIFC");
      const bool plain_pcm = !aifc || (body + 22 <= b.size() && (r.id(body + 18, "NONE") || r.id(body + 18, "twos")));
      if (plain_pcm && channels > 0 && bits > 0) chunk.block_align = channels * ((bits + 7) / 8);
      chunk.comm_frames = r.u32(body + 2);
      chunk.sample_rate = extended_to_double(r, body + 8);
    }
    if (r.id(at, "SSND")) {
      // SSND starts with an 8-byte offset/block-size preamble before the samples.
      chunk.declared_bytes = size >= 8 ? size - 8 : 0;
      chunk.present_bytes = total >= body + 8 ? total - body - 8 : 0;
      return chunk;
    }
    at = body + size + (size & 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<DataChunk> probe_data_chunk(std::span<const uint8_t> bytes, Container container, uint64_t total_bytes) {
  if (bytes.size() < 12) return std::nullopt;
  total_bytes = std::max<uint64_t>(total_bytes, bytes.size());
  if (container == Container::kWav) return probe_wav(bytes, total_bytes);
  if (container == Container::kAiff) return probe_aiff(bytes, total_bytes);
  return std::nullopt;
}

}  // namespace steno::audio
