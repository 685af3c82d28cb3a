#include "sniff.h"

#include <string>
#include <string_view>

#include "ogg_probe.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

bool starts_with(std::span<const uint8_t> b, size_t at, std::string_view magic) {
  if (b.size() < at + magic.size()) return false;
  for (size_t i = 0; i < magic.size(); ++i)
    if (b[at + i] != static_cast<uint8_t>(magic[i])) return false;
  return true;
}

// An MPEG-1/2/2.5 audio frame header: 11 sync bits, a layer (not the reserved 00, which ADTS AAC uses), a valid
// bitrate index and sample-rate index.
bool is_mpeg_audio_frame(std::span<const uint8_t> b, size_t at) {
  if (b.size() < at + 4) return false;
  const uint8_t b1 = b[at + 1], b2 = b[at + 2];
  return b[at] == 0xFF && (b1 & 0xE0) == 0xE0 && ((b1 >> 3) & 3) != 1 && ((b1 >> 1) & 3) != 0 &&
         (b2 >> 4) != 15 && ((b2 >> 2) & 3) != 3;
}

// An ADTS frame header (raw AAC): 12 sync bits, layer 00, a valid sample-rate index, a frame length that covers
// the 7-byte header at least.
bool is_adts_frame(std::span<const uint8_t> b, size_t at) {
  if (b.size() < at + 7) return false;
  const uint8_t b1 = b[at + 1], b2 = b[at + 2];
  const size_t length = (size_t{b[at + 3] & 3u} << 11) | (size_t{b[at + 4]} << 3) | (size_t{b[at + 5]} >> 5);
  return b[at] == 0xFF && (b1 & 0xF6) == 0xF0 && ((b2 >> 2) & 0xF) < 13 && length >= 7;
}

bool looks_like_text(std::span<const uint8_t> b) {
  const size_t n = b.size() < 256 ? b.size() : 256;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t c = b[i];
    if (c >= 0x80) continue;  // UTF-8 continuation/lead bytes
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
    if (c == 0x7F) return false;
  }
  return true;
}

std::string printable_prefix(std::span<const uint8_t> b) {
  std::string s;
  for (size_t i = 0; i < b.size() && s.size() < 32; ++i) {
    const char c = static_cast<char>(b[i]);
    s += (c >= 0x20 && c < 0x7F) ? c : (c == '\n' || c == '\r' || c == '\t') ? ' ' : '?';
  }
  return s;
}

[[noreturn]] void unsupported(const char* what) {
  fail(ErrorCode::kUnimplemented, "{} is not supported; send {}", what, supported_formats());
}

// The first Ogg page holds the first packet of the first stream, which names its codec: 27-byte page header,
// segment table, then the packet. The page must be intact: libsndfile would otherwise skip to the next valid page
// and classify the stream by whatever packet that holds.
Container sniff_ogg_codec(std::span<const uint8_t> b) {
  if (ogg_intact_page(b, 0) == 0)
    fail(ErrorCode::kDataLoss, "truncated or corrupt OGG: the first page is incomplete or fails its checksum");
  if ((b[5] & 0x02) == 0) fail(ErrorCode::kDataLoss, "malformed OGG: the first page does not begin a stream");
  const size_t packet = 27 + size_t{b[26]};
  if (starts_with(b, packet, "\x01vorbis")) return Container::kOggVorbis;
  if (starts_with(b, packet, "OpusHead")) return Container::kOggOpus;
  if (starts_with(b, packet, "Speex   ")) unsupported("OGG/Speex");
  if (starts_with(b, packet, "\x7F" "FLAC")) unsupported("OGG/FLAC");
  if (starts_with(b, packet, "\x80theora")) unsupported("OGG/Theora (video)");
  unsupported("OGG with an unknown codec");
}

}  // namespace

const char* container_name(Container c) {
  switch (c) {
    case Container::kWav: return "WAV";
    case Container::kAiff: return "AIFF";
    case Container::kFlac: return "FLAC";
    case Container::kOggVorbis: return "OGG/Vorbis";
    case Container::kOggOpus: return "OGG/Opus";
    case Container::kMp3: return "MP3";
    case Container::kMp4: return "MP4/M4A";
    case Container::kMatroska: return "WebM/Matroska";
    case Container::kAdts: return "AAC (ADTS)";
    case Container::kAmr: return "AMR";
    case Container::kCaf: return "CAF";
  }
  return "?";
}

bool decoded_by_ffmpeg(Container c) {
  switch (c) {
    case Container::kMp4: case Container::kMatroska: case Container::kAdts: case Container::kAmr:
    case Container::kCaf: return true;
    case Container::kWav: case Container::kAiff: case Container::kFlac: case Container::kOggVorbis:
    case Container::kOggOpus: case Container::kMp3: return false;
  }
  return false;
}

bool decodes_ffmpeg_formats() { return STENO_HAVE_FFMPEG != 0; }

const char* supported_formats() {
#if STENO_HAVE_FFMPEG
  return "WAV, FLAC, OGG (Vorbis/Opus), MP3, MP4/M4A, WebM, AAC, AMR or CAF audio";
#else
  return "WAV, FLAC, OGG (Vorbis/Opus) or MP3 audio";
#endif
}

Sniffed sniff_container(std::span<const uint8_t> b) {
  if (b.empty()) fail(ErrorCode::kInvalidArgument, "audio input is empty (0 bytes)");

  if ((starts_with(b, 0, "RIFF") || starts_with(b, 0, "RIFX") || starts_with(b, 0, "RF64")) &&
      starts_with(b, 8, "WAVE"))
    return {Container::kWav};
  if (starts_with(b, 0, "FORM") && (starts_with(b, 8, "AIFF") || starts_with(b, 8, "AIFC")))
    return {Container::kAiff};
  if (starts_with(b, 0, "fLaC")) return {Container::kFlac};
  if (starts_with(b, 0, "OggS")) return {sniff_ogg_codec(b)};

  // ID3v2: "ID3", version, flags, 28-bit syncsafe size (+10 for a footer). MP3 or FLAC follows.
  size_t id3 = 0;
  if (starts_with(b, 0, "ID3")) {
    if (b.size() < 10) fail(ErrorCode::kDataLoss, "truncated: the ID3 tag header is cut off after {} bytes", b.size());
    if ((b[6] | b[7] | b[8] | b[9]) & 0x80) fail(ErrorCode::kDataLoss, "malformed ID3 tag: invalid size field");
    id3 = 10 + ((size_t{b[6]} << 21) | (size_t{b[7]} << 14) | (size_t{b[8]} << 7) | size_t{b[9]});
    if (b[5] & 0x10) id3 += 10;
    if (id3 >= b.size())
      fail(ErrorCode::kDataLoss, "truncated: the ID3 tag says {} bytes, the input has only {} and no audio after it",
           id3, b.size());
    if (starts_with(b, id3, "fLaC")) return {Container::kFlac, id3};
    if (is_adts_frame(b, id3)) return {Container::kAdts, id3};  // FFmpeg's ADTS demuxer skips the tag itself
    // Taggers may pad after the tag; mpg123 resynchronises, so accept a frame within the first few KB.
    for (size_t at = id3; at < b.size() && at < id3 + 4096; ++at)
      if (is_mpeg_audio_frame(b, at)) return {Container::kMp3, at};
    fail(ErrorCode::kInvalidArgument, "not a recognised audio file: an ID3 tag ({} bytes) is followed by no MP3, "
         "FLAC or AAC audio", id3);
  }
  if (is_mpeg_audio_frame(b, 0)) return {Container::kMp3, 0};
  if (starts_with(b, 4, "ftyp")) return {Container::kMp4};  // MP4, M4A, MOV, 3GP: ISO base media files
  if (starts_with(b, 0, "\x1A\x45\xDF\xA3")) return {Container::kMatroska};  // EBML: WebM, MKV, MKA
  if (is_adts_frame(b, 0)) return {Container::kAdts};  // raw AAC (.aac): recorders, streams
  // AMR's storage format (RFC 4867): narrow- and wideband, what phones record calls and voice notes in.
  if (starts_with(b, 0, "#!AMR\n") || starts_with(b, 0, "#!AMR-WB\n")) return {Container::kAmr};
  if (starts_with(b, 0, "caff")) return {Container::kCaf};  // Apple's Core Audio Format

  // Recognised but unsupported, so the caller learns what to convert from.
  if (starts_with(b, 0, "#!AMR")) unsupported("Multichannel AMR");
  if (starts_with(b, 0, "riff") && b.size() >= 16 && b[4] == 0x2E && b[5] == 0x91) unsupported("Wave64 (W64)");
  if (starts_with(b, 0, ".snd")) unsupported("AU/SND");
  if (starts_with(b, 0, "RIFF") || starts_with(b, 0, "RIFX")) unsupported("Non-WAVE RIFF (e.g. AVI, WebP)");
  if (b.size() >= 2 && b[0] == 0xFF && (b[1] & 0xF6) == 0xF0) unsupported("AAC (ADTS) with a malformed first header");

  if (looks_like_text(b))
    fail(ErrorCode::kInvalidArgument, "not an audio file: the {} bytes look like text (\"{}\")", b.size(),
         printable_prefix(b));
  fail(ErrorCode::kInvalidArgument,
       "not a recognised audio file ({} bytes starting \"{}\"); supported: {}", b.size(),
       printable_prefix(b.first(b.size() < 8 ? b.size() : 8)), supported_formats());
}

}  // namespace steno::audio
