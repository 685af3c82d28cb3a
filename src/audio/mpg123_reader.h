// The libmpg123 decoder for MP3 (MPEG-1/2/2.5 layers I-III) over bytes in memory: quiet, gapless, float output at
// the stream's own rate, with the exact length from a full frame scan before decoding.
#pragma once

#include "decoder.h"
#include "sndfile_reader.h"  // MemoryCursor

struct mpg123_handle_struct;

namespace steno::audio {

class Mpg123Reader final : public Decoder {
 public:
  // `first_frame`: the offset of the first MPEG frame (after any ID3v2 tag). Throws kDataLoss for a stream with no
  // decodable frame.
  Mpg123Reader(std::span<const uint8_t> bytes, size_t first_frame);
  ~Mpg123Reader() override;
  Mpg123Reader(const Mpg123Reader&) = delete;
  Mpg123Reader& operator=(const Mpg123Reader&) = delete;

  int channels() const override { return channels_; }
  int sample_rate() const override { return rate_; }
  int64_t frames() const override { return frames_; }
  int64_t stated_frames() const override { return stated_frames_; }
  std::string format_name() const override { return format_; }
  int64_t read(float* out, int64_t frames) override;

 private:
  MemoryCursor mem_;
  mpg123_handle_struct* mh_ = nullptr;
  int channels_ = 0;
  int rate_ = 0;
  int64_t frames_ = -1;
  int64_t stated_frames_ = -1;
  int64_t skip_ = 0;  // leading frames still to drop (the encoder delay, when mpg123 gave up trimming it)
  std::string format_;
  bool done_ = false;
};

}  // namespace steno::audio
