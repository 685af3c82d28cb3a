#include "mpg123_reader.h"

#include <mpg123.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>

#include "mp3_probe.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

mpg123_ssize_t io_read(void* user, void* out, size_t count) {
  auto& m = *static_cast<MemoryCursor*>(user);
  const auto size = static_cast<int64_t>(m.bytes.size());
  if (m.pos >= size) return 0;
  const auto n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(count), size - m.pos));
  std::memcpy(out, m.bytes.data() + m.pos, n);
  m.pos += static_cast<int64_t>(n);
  return static_cast<mpg123_ssize_t>(n);
}

off_t io_seek(void* user, off_t offset, int whence) {
  auto& m = *static_cast<MemoryCursor*>(user);
  return m.seek(offset, whence) ? static_cast<off_t>(m.pos) : -1;
}

// The decoder delay mpg123 trims in gapless mode besides the encoder's (GAPLESS_DELAY in libmpg123).
constexpr int64_t kMpg123DecoderDelay = 529;

[[noreturn]] void fail_mpg123(mpg123_handle* mh, const char* what) {
  fail(ErrorCode::kDataLoss, "malformed MP3 file: {} ({})", what, mh ? mpg123_strerror(mh) : "no handle");
}

}  // namespace

Mpg123Reader::Mpg123Reader(std::span<const uint8_t> bytes, size_t first_frame) : mem_{bytes, 0} {
  static std::once_flag init;  // a no-op since mpg123 1.27, required before
  std::call_once(init, [] { mpg123_init(); });
  int err = MPG123_OK;
  mh_ = mpg123_new(nullptr, &err);
  if (mh_ == nullptr) fail(ErrorCode::kInternal, "mpg123_new failed: {}", mpg123_plain_strerror(err));
  try {
    // Quiet (no stderr from a library serving requests); gapless (trims encoder delay and padding per the LAME
    // tag); float output at the native rate, never mpg123's crude internal resampler.
    mpg123_param(mh_, MPG123_FLAGS, MPG123_QUIET | MPG123_GAPLESS, 0.0);
    mpg123_param(mh_, MPG123_RESYNC_LIMIT, 65536, 0.0);
    mpg123_format_none(mh_);
    const long* rates = nullptr;
    size_t n_rates = 0;
    mpg123_rates(&rates, &n_rates);
    for (size_t i = 0; i < n_rates; ++i) mpg123_format(mh_, rates[i], MPG123_MONO | MPG123_STEREO, MPG123_ENC_FLOAT_32);

    if (mpg123_replace_reader_handle(mh_, io_read, io_seek, nullptr) != MPG123_OK ||
        mpg123_open_handle(mh_, &mem_) != MPG123_OK)
      fail_mpg123(mh_, "cannot open the stream");
    long rate = 0;
    int channels = 0, encoding = 0;
    if (mpg123_getformat(mh_, &rate, &channels, &encoding) != MPG123_OK)
      fail_mpg123(mh_, "no decodable MPEG audio frame");
    if (encoding != MPG123_ENC_FLOAT_32) fail(ErrorCode::kInternal, "mpg123 did not accept float output");
    rate_ = static_cast<int>(rate);
    channels_ = channels;
    // The format table is deliberately left open (not pinned to this rate): a stitched stream that changes rate then
    // surfaces as MPG123_NEW_FORMAT (an error in read()) instead of a format-setup failure, which mpg123 1.31 prints
    // to stderr even when quiet.

    mpg123_frameinfo2 info{};
    if (mpg123_info2(mh_, &info) == MPG123_OK) format_ = "mpeg/layer" + std::to_string(info.layer);
    else format_ = "mpeg/unknown";

    // With an Xing/Info or VBRI frame count, mpg123's length before the scan is that count (less the LAME tag's
    // delay and padding); without one it is a guess from the file size, which cannot show frames missing.
    const off_t announced = mpg123_length(mh_);
    const std::optional<Mp3Stated> stated = mp3_stated(bytes, first_frame);
    if (stated && announced > 0) stated_frames_ = static_cast<int64_t>(announced);
    if (mpg123_scan(mh_) != MPG123_OK) fail_mpg123(mh_, "frame scan failed");
    const off_t scanned = mpg123_length(mh_);
    frames_ = scanned >= 0 ? static_cast<int64_t>(scanned) : -1;
    // A stream shorter than its tag states makes mpg123 turn gapless decoding off, start included ("End sample
    // count smaller than gapless end"), so a cut file would begin with the encoder delay and the decoder's 529
    // samples that the whole file does not: drop them here, so that a cut file starts like the whole one.
    if (stated_frames_ > 0 && scanned >= 0 && scanned < announced) {
      skip_ = stated->encoder_delay + kMpg123DecoderDelay;
      frames_ = std::max<int64_t>(0, frames_ - skip_);
    }
  } catch (...) {
    mpg123_delete(mh_);
    throw;
  }
}

Mpg123Reader::~Mpg123Reader() { mpg123_delete(mh_); }

int64_t Mpg123Reader::read(float* out, int64_t frames) {
  const size_t frame_bytes = sizeof(float) * static_cast<size_t>(channels_);
  const size_t want = static_cast<size_t>(frames) * frame_bytes;
  size_t got = 0;
  while (!done_ && got < want) {
    size_t n = 0;
    const int rc = mpg123_read(mh_, reinterpret_cast<unsigned char*>(out) + got, want - got, &n);
    got += n;
    if (rc == MPG123_DONE) done_ = true;
    else if (rc == MPG123_NEW_FORMAT) {
      long rate = 0;
      int channels = 0, encoding = 0;
      mpg123_getformat(mh_, &rate, &channels, &encoding);
      if (rate != rate_ || channels != channels_)
        fail(ErrorCode::kUnimplemented, "MP3 stream changes from {} Hz/{} ch to {} Hz/{} ch mid-stream", rate_,
             channels_, rate, channels);
    } else if (rc != MPG123_OK) {
      fail(ErrorCode::kDataLoss, "corrupt MP3 data: {}", mpg123_strerror(mh_));
    }
  }
  int64_t n = static_cast<int64_t>(got / frame_bytes);
  if (skip_ > 0 && n > 0) {
    const int64_t drop = std::min(skip_, n);
    std::memmove(out, out + drop * channels_, static_cast<size_t>((n - drop) * channels_) * sizeof(float));
    skip_ -= drop;
    n -= drop;
    if (n == 0 && !done_) return read(out, frames);  // 0 means the end: read past the dropped frames
  }
  return n;
}

}  // namespace steno::audio
