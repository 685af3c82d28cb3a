// An input that ends early (a crashed recorder's file, a cut-off upload) is decoded as far as it goes; this gathers
// what the header probes and the decoder find and turns it into the one sentence that says what is missing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "chunk_probe.h"
#include "ogg_probe.h"
#include "sniff.h"

namespace steno::audio {

struct EndEvidence {
  const char* container = "";      // container_name()
  int rate = 0;                    // of the source
  int64_t decoded_frames = 0;      // what decoding produced, per channel at `rate`
  std::optional<DataChunk> chunk;  // WAV/AIFF: declared against present data and file sizes
  int64_t stated_frames = -1;      // a header's frame count (FLAC STREAMINFO, MP3 Xing/Info/VBRI), -1 if none
  bool last_frame_cut = false;     // the input ends inside a FLAC or MP3 frame
  std::optional<OggTail> ogg;      // how an Ogg stream ends
};

// What the bytes show before decoding: a WAV/AIFF data chunk (`chunk`, already probed) longer than the file, how an
// Ogg stream ends, an MP3 whose last frame is cut, the length and rate a FLAC or MP3 header states. Reads every MP3
// frame header: call it after refusing an over-long input. Throws kDataLoss for an Ogg stream with no intact page
// near its end.
EndEvidence header_evidence(std::span<const uint8_t> bytes, const Sniffed& sniffed, std::optional<DataChunk> chunk);

// What is missing, strongest evidence first, as a clause such as "the WAV header says 16000 frames (1.00 s), the
// file holds 6000 (0.38 s)"; nullopt when the input is complete as far as can be told.
std::optional<std::string> describe_shortfall(const EndEvidence& e);

// The warning for a shortfall that still left `decoded_s` seconds of audio: "truncated: <clause>; transcribed the
// 0.38 s present".
std::string truncation_warning(const std::string& shortfall, double decoded_s);

}  // namespace steno::audio
