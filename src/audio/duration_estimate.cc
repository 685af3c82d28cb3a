// estimate_duration_s: what the header states when it states a length; otherwise an extrapolation from the part of
// the file at hand, cheapest first (frame headers, Ogg granule positions, a nominal bitrate, decoding the prefix).
#include "duration_estimate.h"

#include <algorithm>
#include <cmath>

#include "chunk_probe.h"
#include "flac_probe.h"
#include "mp3_probe.h"
#include "ogg_probe.h"
#include "steno/audio/decode.h"

namespace steno::audio {
namespace {

constexpr size_t kMaxDecodedPrefix = size_t{1} << 20;

std::optional<double> stated_by_chunk(const DataChunk& c) {
  if (c.sample_rate <= 0) return std::nullopt;
  if (c.block_align > 0)
    return static_cast<double>(std::min(c.declared_bytes, c.present_bytes) / c.block_align) / c.sample_rate;
  if (c.comm_frames >= 0) return static_cast<double>(c.comm_frames) / c.sample_rate;  // AIFC, compressed
  return std::nullopt;
}

// `part` of the file's bytes from `start` on played for `part_s` seconds: the whole (to total_bytes) at that rate.
std::optional<double> extrapolate(double part_s, uint64_t part_bytes, uint64_t start, uint64_t total_bytes) {
  if (!(part_s > 0) || part_bytes == 0 || total_bytes <= start) return std::nullopt;
  return part_s * static_cast<double>(total_bytes - start) / static_cast<double>(part_bytes);
}

// Every complete frame in the prefix: their bitrate, exactly the stream's for CBR and its start's for VBR.
std::optional<double> mp3_by_frames(std::span<const uint8_t> b, size_t first, uint64_t total) {
  const auto h = mp3_frame_header(b, first);
  if (!h) return std::nullopt;
  const Mp3Walk walk = mp3_walk(b, first);
  if (walk.frames > 0)
    return extrapolate(static_cast<double>(walk.samples) / h->sample_rate, walk.bytes, first, total);
  if (h->bitrate > 0) return static_cast<double>(total - first) * 8 / h->bitrate;
  return std::nullopt;
}

struct OggCodec {
  double granule_rate = 0;  // granule positions count samples at this rate
  int64_t pre_skip = 0;     // Opus: samples at the start that are not audio
  int64_t nominal_bitrate = 0;
};

// From the identification packet on the first page (sniff_ogg_codec has checked that page).
OggCodec ogg_codec(std::span<const uint8_t> b, Container c) {
  const size_t packet = 27 + size_t{b[26]};
  auto u32le = [&](size_t at) {
    return at + 4 <= b.size() ? (uint32_t{b[at]} | (uint32_t{b[at + 1]} << 8) | (uint32_t{b[at + 2]} << 16) |
                                 (uint32_t{b[at + 3]} << 24))
                              : 0u;
  };
  OggCodec codec;
  if (c == Container::kOggOpus) {
    codec.granule_rate = 48000;  // Opus always counts at 48 kHz
    if (packet + 12 <= b.size()) codec.pre_skip = b[packet + 10] | (b[packet + 11] << 8);
    return codec;
  }
  // "\x01vorbis", version, channels (1 byte), rate, maximum, nominal and minimum bitrate.
  codec.granule_rate = u32le(packet + 12);
  codec.nominal_bitrate = static_cast<int32_t>(u32le(packet + 20));
  return codec;
}

// The last granule position the prefix reaches against the bytes it took since the header pages.
std::optional<double> ogg_by_granule(std::span<const uint8_t> b, Container c, uint64_t total) {
  const OggCodec codec = ogg_codec(b, c);
  if (!(codec.granule_rate > 0)) return std::nullopt;
  const uint32_t serial = ogg_page_serial(b, 0);
  size_t at = 0, headers_end = 0, audio_end = 0;
  int64_t granule = 0;
  for (size_t length; (length = ogg_intact_page(b, at)) != 0; at += length) {
    if (ogg_page_serial(b, at) != serial) continue;  // another multiplexed stream
    const int64_t g = ogg_page_granule(b, at);
    if (g == 0 && audio_end == 0) headers_end = at + length;
    if (g > 0) granule = g, audio_end = at + length;
    if (ogg_page_ends_stream(b, at)) break;
  }
  if (granule > codec.pre_skip && audio_end > headers_end)
    return extrapolate(static_cast<double>(granule - codec.pre_skip) / codec.granule_rate, audio_end - headers_end,
                       headers_end, total);
  if (codec.nominal_bitrate > 0) return static_cast<double>(total) * 8 / static_cast<double>(codec.nominal_bitrate);
  return std::nullopt;
}

// Where the audio data starts, so that metadata before it (FLAC's padding and seek table, a WAV's LIST chunk) does
// not count as audio when extrapolating; 0 when unknown.
uint64_t audio_start(std::span<const uint8_t> b, const Sniffed& sniffed, uint64_t total) {
  if (sniffed.container == Container::kFlac) return flac_first_frame(b, sniffed.audio_offset).value_or(0);
  const auto chunk = probe_data_chunk(b, sniffed.container, total);
  return chunk ? total - chunk->present_bytes : 0;
}

// Decodes (at most the first MiB of) the prefix: the seconds it holds, scaled to the whole file.
std::optional<double> by_decoding(std::span<const uint8_t> b, const Sniffed& sniffed, uint64_t total) {
  const std::span<const uint8_t> part = b.first(std::min(b.size(), kMaxDecodedPrefix));
  const uint64_t start = audio_start(b, sniffed, total);
  if (start >= part.size()) return std::nullopt;
  const DecodedAudio a = decode_audio(part, {.max_duration_s = 1e7, .max_bytes = part.size()});
  return extrapolate(a.duration_s(), part.size() - start, start, total);
}

std::optional<DurationEstimate> estimate(std::span<const uint8_t> prefix, uint64_t total) {
  const Sniffed sniffed = sniff_container(prefix);
  if (const auto s = stated_duration_s(prefix, sniffed, total)) return DurationEstimate{*s, true};
  std::optional<double> s;
  switch (sniffed.container) {
    case Container::kMp3: s = mp3_by_frames(prefix, sniffed.audio_offset, total); break;
    case Container::kOggVorbis: case Container::kOggOpus: s = ogg_by_granule(prefix, sniffed.container, total); break;
    case Container::kWav: case Container::kAiff: case Container::kFlac: case Container::kMp4:
    case Container::kMatroska: case Container::kAdts: case Container::kAmr: case Container::kCaf:
      s = by_decoding(prefix, sniffed, total);
      break;
  }
  if (!s || !std::isfinite(*s) || *s < 0) return std::nullopt;
  return DurationEstimate{*s, false};
}

}  // namespace

std::optional<double> stated_duration_s(std::span<const uint8_t> prefix, const Sniffed& sniffed,
                                        uint64_t total_bytes) {
  total_bytes = std::max<uint64_t>(total_bytes, prefix.size());
  switch (sniffed.container) {
    case Container::kWav: case Container::kAiff: {
      const auto chunk = probe_data_chunk(prefix, sniffed.container, total_bytes);
      return chunk ? stated_by_chunk(*chunk) : std::nullopt;
    }
    case Container::kFlac: {
      const auto info = flac_stream_info(prefix, sniffed.audio_offset);
      if (!info || info->total_samples == 0) return std::nullopt;
      return static_cast<double>(info->total_samples) / info->sample_rate;
    }
    case Container::kMp3: {
      const auto stated = mp3_stated(prefix, sniffed.audio_offset);
      if (!stated) return std::nullopt;
      return static_cast<double>(stated->samples) / mp3_frame_header(prefix, sniffed.audio_offset)->sample_rate;
    }
    case Container::kOggVorbis: case Container::kOggOpus: return std::nullopt;  // Ogg states no length
    case Container::kMp4: case Container::kMatroska: case Container::kAdts: case Container::kAmr:
    case Container::kCaf: return std::nullopt;  // read by the decoder (frames())
  }
  return std::nullopt;
}

std::optional<DurationEstimate> estimate_duration_s(std::span<const uint8_t> prefix, uint64_t total_bytes) noexcept {
  if (prefix.empty()) return std::nullopt;
  try {
    const auto e = estimate(prefix, std::max<uint64_t>(total_bytes, prefix.size()));
    if (e && (!std::isfinite(e->seconds) || e->seconds < 0)) return std::nullopt;
    return e;
  } catch (...) {  // malformed or unsupported bytes: the length cannot be told
    return std::nullopt;
  }
}

}  // namespace steno::audio
