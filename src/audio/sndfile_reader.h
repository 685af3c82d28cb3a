// The libsndfile decoder over bytes in memory (sf_open_virtual), for WAV, AIFF, FLAC and Ogg Opus.
#pragma once

#include <sndfile.h>

#include "decoder.h"

namespace steno::audio {

// The virtual file libsndfile reads: the caller's bytes and a position, which may lie past the end.
struct MemoryCursor {
  std::span<const uint8_t> bytes;
  int64_t pos = 0;
};

class SndfileReader final : public Decoder {
 public:
  // Also throws kDataLoss if libsndfile recognises a container other than `container`: only the parser the
  // sniffer vouched for may accept the bytes.
  SndfileReader(std::span<const uint8_t> bytes, Container container);
  ~SndfileReader() override;
  SndfileReader(const SndfileReader&) = delete;
  SndfileReader& operator=(const SndfileReader&) = delete;

  int channels() const override { return info_.channels; }
  int sample_rate() const override { return info_.samplerate; }
  int64_t frames() const override;
  std::string format_name() const override;
  int64_t read(float* out, int64_t frames) override;

 private:
  MemoryCursor mem_;
  Container container_;
  SF_INFO info_{};
  SNDFILE* file_ = nullptr;
  int64_t frames_read_ = 0;
};

}  // namespace steno::audio
