// The libvorbisfile decoder for Ogg Vorbis over bytes in memory. Used instead of libsndfile, whose Vorbis open
// path (1.2.0) leaks the vorbis_info codec setup (~5.8 KB) on every malformed header: a memory leak any client
// could trigger at will.
#pragma once

#include <memory>

#include "decoder.h"
#include "sndfile_reader.h"  // MemoryCursor

struct OggVorbis_File;

namespace steno::audio {

class VorbisReader final : public Decoder {
 public:
  explicit VorbisReader(std::span<const uint8_t> bytes);
  ~VorbisReader() override;
  VorbisReader(const VorbisReader&) = delete;
  VorbisReader& operator=(const VorbisReader&) = delete;

  int channels() const override { return channels_; }
  int sample_rate() const override { return rate_; }
  int64_t frames() const override { return frames_; }
  std::string format_name() const override { return "ogg/vorbis"; }
  int64_t read(float* out, int64_t frames) override;

 private:
  MemoryCursor mem_;
  std::unique_ptr<OggVorbis_File> vf_;
  bool open_ = false;
  int channels_ = 0;
  int rate_ = 0;
  int64_t frames_ = -1;
  int64_t frames_read_ = 0;
};

}  // namespace steno::audio
