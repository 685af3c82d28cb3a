#include "truncation.h"

#include <fmt/format.h>

#include "flac_probe.h"
#include "mp3_probe.h"
#include "steno/audio/decode.h"

namespace steno::audio {
namespace {

double seconds(int64_t frames, int rate) { return rate > 0 ? static_cast<double>(frames) / rate : 0.0; }

std::string frames_short(const char* container, int64_t stated, const EndEvidence& e) {
  return fmt::format("the {} header says {} frames ({:.2f} s), the file holds {} ({:.2f} s)", container, stated,
                     seconds(stated, e.rate), e.decoded_frames, seconds(e.decoded_frames, e.rate));
}

std::optional<std::string> data_chunk_short(const DataChunk& c, const EndEvidence& e) {
  if (c.data_cut()) {
    if (c.block_align > 0) return frames_short(e.container, c.declared_frames(), e);
    return fmt::format("the {} header says {} bytes of audio data, the file holds {}", e.container,
                       c.declared_bytes, c.present_bytes);
  }
  // An AIFF's COMM chunk counts the frames too, and may be the one that was written last.
  if (c.comm_frames > e.decoded_frames && c.block_align > 0) return frames_short(e.container, c.comm_frames, e);
  // The audio data is whole but the file around it was cut: what followed it (tags, cue points) is lost.
  if (c.declared_file_bytes > c.file_bytes)
    return fmt::format("the {} header says the file is {} bytes, it holds {}", e.container, c.declared_file_bytes,
                       c.file_bytes);
  return std::nullopt;
}

std::optional<std::string> ogg_short(const OggTail& t, const EndEvidence& e) {
  switch (t.end) {
    case OggEnd::kComplete: return std::nullopt;
    case OggEnd::kNoEndOfStream:
      return fmt::format("the {} stream stops after {} bytes without its end-of-stream page", e.container,
                         t.intact_bytes);
    case OggEnd::kCutPage:
      return fmt::format("the {} stream ends inside a page after {} bytes, without its end-of-stream page",
                         e.container, t.intact_bytes);
  }
  return std::nullopt;
}

}  // namespace

EndEvidence header_evidence(std::span<const uint8_t> bytes, const Sniffed& sniffed, std::optional<DataChunk> chunk) {
  EndEvidence e;
  e.container = container_name(sniffed.container);
  e.chunk = std::move(chunk);
  switch (sniffed.container) {
    case Container::kWav: case Container::kAiff:
      // For messages before a decoder opens (the decoder checks the rate): a plausible rate or none.
      if (e.chunk && e.chunk->sample_rate >= 1 && e.chunk->sample_rate <= kMaxSampleRateIn)
        e.rate = static_cast<int>(e.chunk->sample_rate);
      break;
    case Container::kOggVorbis: case Container::kOggOpus: e.ogg = ogg_tail(bytes, e.container); break;
    case Container::kMp3: {
      const auto header = mp3_frame_header(bytes, sniffed.audio_offset);
      if (!header) break;
      e.rate = header->sample_rate;
      e.last_frame_cut = mp3_walk(bytes, sniffed.audio_offset).last_cut;
      if (const auto stated = mp3_stated(bytes, sniffed.audio_offset)) e.stated_frames = stated->samples;
      break;
    }
    case Container::kMp4: case Container::kMatroska: case Container::kAdts: case Container::kAmr:
    case Container::kCaf: break;  // FfmpegReader::stated_frames and last_frame_cut, after decoding
    case Container::kFlac:
      if (const auto info = flac_stream_info(bytes, sniffed.audio_offset)) {
        e.rate = static_cast<int>(info->sample_rate);
        if (info->total_samples > 0) e.stated_frames = static_cast<int64_t>(info->total_samples);
      }
      break;
  }
  return e;
}

std::optional<std::string> describe_shortfall(const EndEvidence& e) {
  if (e.chunk && e.chunk->data_cut()) return data_chunk_short(*e.chunk, e);
  if (e.stated_frames > e.decoded_frames) return frames_short(e.container, e.stated_frames, e);
  if (e.last_frame_cut) return fmt::format("the {} stream's last frame is cut off at the end of the file", e.container);
  if (e.ogg)
    if (auto s = ogg_short(*e.ogg, e)) return s;
  if (e.chunk) return data_chunk_short(*e.chunk, e);
  return std::nullopt;
}

std::string truncation_warning(const std::string& shortfall, double decoded_s) {
  return fmt::format("truncated: {}; transcribed the {:.2f} s present", shortfall, decoded_s);
}

}  // namespace steno::audio
