// Recognises an audio container from its first bytes, before any decoder sees them, so that only the parsers steno
// supports run on untrusted input and unsupported or non-audio input gets a message that says what it looks like.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace steno::audio {

// An Ogg container is told apart by the codec of its first logical stream. MP4, Matroska, raw AAC (ADTS), AMR and
// CAF are decoded only by a build with FFmpeg (STENO_WITH_FFMPEG); without it open_decoder refuses them.
enum class Container { kWav, kAiff, kFlac, kOggVorbis, kOggOpus, kMp3, kMp4, kMatroska, kAdts, kAmr, kCaf };

// "WAV", "AIFF", "FLAC", "OGG/Vorbis", "OGG/Opus", "MP3", "MP4/M4A", "WebM/Matroska", "AAC (ADTS)", "AMR", "CAF"
const char* container_name(Container c);

// Whether FFmpeg decodes this container (src/audio/ffmpeg_reader.h): the rest have a codec library of their own.
bool decoded_by_ffmpeg(Container c);

// What this build decodes, for messages: "WAV, FLAC, OGG (Vorbis/Opus), MP3" and, with FFmpeg, MP4/M4A, WebM,
// AAC, AMR and CAF.
const char* supported_formats();

struct Sniffed {
  Container container;
  size_t audio_offset = 0;  // where the audio starts: after an ID3v2 tag (FLAC, MP3), at the first MP3 frame
};

// Throws kInvalidArgument for empty or unrecognised input (naming what it looks like, e.g. text), kUnimplemented
// for a recognised container steno does not decode (Wave64, AU, Ogg Speex/FLAC, ...), kDataLoss for a truncated
// ID3 tag or Ogg first page.
Sniffed sniff_container(std::span<const uint8_t> bytes);

}  // namespace steno::audio
