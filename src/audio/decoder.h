// One opened audio stream, decoding to interleaved float frames. libsndfile decodes WAV, AIFF, FLAC and Ogg Opus;
// MP3 and Ogg Vorbis bypass it for their codec libraries because of libsndfile 1.2.0 defects with untrusted input:
//   MP3:    reads stop at mpg123's pre-scan length *estimate*, silently cutting VBR files without a Xing header and
//           concatenated files; and mpg123 is left printing to stderr.
//   Vorbis: every malformed header leaks the codec setup (~5.8 KB), a leak any client can trigger at will (and
//           libvorbisfile leaks on failed opens too: vorbis_reader.h decodes with libvorbis and libogg directly).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "sniff.h"

namespace steno::audio {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual int channels() const = 0;
  virtual int sample_rate() const = 0;
  // Frames the stream holds per its headers (WAV/AIFF: clamped by libsndfile to the bytes present; MP3: counted by
  // a full frame scan); -1 when unknown.
  virtual int64_t frames() const = 0;
  // Frames a header states the stream holds (FLAC STREAMINFO, MP3 Xing/Info/VBRI) -- a claim that a cut-off file
  // does not live up to; -1 when no header states a count.
  virtual int64_t stated_frames() const { return -1; }
  // True when the input ends inside the last frame (libFLAC's lost sync at the end): read() then ends at the last
  // complete frame. Valid once read() has returned 0.
  virtual bool last_frame_cut() const { return false; }
  virtual std::string format_name() const = 0;  // "wav/pcm_16", "ogg/opus", "mpeg/layer3", ...
  // Reads up to `frames` interleaved frames into `out` (frames * channels() floats); integer PCM is scaled by
  // 1/2^(bits-1). Returns the frames read, 0 at the end (also where the input ends inside a frame); throws kDataLoss
  // when the data is corrupt.
  virtual int64_t read(float* out, int64_t frames) = 0;
};

// Opens the decoder for a sniffed container. `bytes` must outlive the decoder. Throws kDataLoss (malformed) or
// kUnimplemented (an encoding the decoder does not support) with the decoder's reason.
std::unique_ptr<Decoder> open_decoder(std::span<const uint8_t> bytes, const Sniffed& sniffed);

}  // namespace steno::audio
