// The libsndfile decoder over bytes in memory (sf_open_virtual), for WAV, AIFF, FLAC and Ogg Opus.
#pragma once

#include <cstdio>
#include <string>

#include <sndfile.h>

#include "decoder.h"

namespace steno::audio {

// The virtual file libsndfile reads: the caller's bytes and a position, which may lie past the end.
// A read position over in-memory bytes, shared by the codec libraries' I/O callbacks.
struct MemoryCursor {
  std::span<const uint8_t> bytes;
  int64_t pos = 0;

  // fseek semantics (SEEK_SET/CUR/END). Positions outside [0, 2^62] are refused rather than overflowed; past the
  // end is allowed (reads then return 0). Returns false, leaving pos alone, for a refused seek.
  bool seek(int64_t offset, int whence) {
    int64_t base = 0;
    if (whence == SEEK_CUR) base = pos;
    else if (whence == SEEK_END) base = static_cast<int64_t>(bytes.size());
    else if (whence != SEEK_SET) return false;
    if (offset < -base || offset > (int64_t{1} << 62) - base) return false;
    pos = base + offset;
    return true;
  }
};

class SndfileReader final : public Decoder {
 public:
  // Also throws kDataLoss if libsndfile recognises a container other than the sniffed one: only the parser the
  // sniffer vouched for may accept the bytes.
  SndfileReader(std::span<const uint8_t> bytes, const Sniffed& sniffed);
  ~SndfileReader() override;
  SndfileReader(const SndfileReader&) = delete;
  SndfileReader& operator=(const SndfileReader&) = delete;

  int channels() const override { return info_.channels; }
  int sample_rate() const override { return info_.samplerate; }
  int64_t frames() const override;
  int64_t stated_frames() const override { return container_ == Container::kFlac ? frames() : -1; }
  bool last_frame_cut() const override { return last_frame_cut_; }
  std::string format_name() const override;
  int64_t read(float* out, int64_t frames) override;

 private:
  MemoryCursor mem_;
  Container container_;
  SF_INFO info_{};
  SNDFILE* file_ = nullptr;
  int64_t frames_read_ = 0;
  size_t audio_offset_ = 0;  // FLAC: where "fLaC" starts (after an ID3v2 tag)
  bool last_frame_cut_ = false;

  bool flac_cut_at_end(const std::string& reason) const;
};

}  // namespace steno::audio
