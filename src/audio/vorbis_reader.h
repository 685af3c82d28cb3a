// Ogg Vorbis over bytes in memory, decoded with libogg (pages and packets) and libvorbis (synthesis) directly.
// Neither of the libraries that wrap them can be given untrusted files: libsndfile 1.2.0 leaks the codec setup
// (~5.8 KB) on every malformed header, and libvorbisfile 1.3.7 leaks on failed opens too -- the stream's serial number
// list when a header is bad or missing, and up to ~100 KB of a chained file's earlier links (xiph/vorbis#125) -- each
// a leak any client could trigger at will. Here every allocation belongs to state this reader clears on every path.
//
// One Vorbis stream is decoded: the first whose beginning-of-stream page carries a Vorbis identification header
// (pages of other multiplexed streams are skipped), then each chained link after its end-of-stream page, which must
// keep the sample rate and channel count. Packets libvorbis cannot synthesize are skipped, as libvorbisfile does; a
// gap in the page sequence is corrupt data. libvorbis trims the first and last blocks to the granule positions, so
// the length is exact.
#pragma once

#include <memory>
#include <span>

#include "decoder.h"

namespace steno::audio {

class VorbisReader final : public Decoder {
 public:
  explicit VorbisReader(std::span<const uint8_t> bytes);
  ~VorbisReader() override;
  VorbisReader(const VorbisReader&) = delete;
  VorbisReader& operator=(const VorbisReader&) = delete;

  int channels() const override { return channels_; }
  int sample_rate() const override { return rate_; }
  int64_t frames() const override { return -1; }  // Ogg states no length; the decoder's limits apply as it reads
  std::string format_name() const override { return "ogg/vorbis"; }
  int64_t read(float* out, int64_t frames) override;

 private:
  struct Codec;  // libogg's and libvorbis's state (vorbis_reader.cc)

  std::unique_ptr<Codec> codec_;
  int channels_ = 0;
  int rate_ = 0;
  int64_t frames_read_ = 0;
};

}  // namespace steno::audio
