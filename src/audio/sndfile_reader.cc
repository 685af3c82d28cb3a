#include "sndfile_reader.h"

#include <algorithm>
#include <mutex>

#include "flac_probe.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

// libsndfile keeps the error of a failed open in a process-wide variable; serialise opens so that concurrent
// requests each read their own error message.
std::mutex g_open_mutex;

MemoryCursor& cursor(void* user) { return *static_cast<MemoryCursor*>(user); }

sf_count_t io_get_filelen(void* user) { return static_cast<sf_count_t>(cursor(user).bytes.size()); }

sf_count_t io_seek(sf_count_t offset, int whence, void* user) {
  MemoryCursor& m = cursor(user);
  return m.seek(offset, whence) ? m.pos : -1;
}

sf_count_t io_read(void* ptr, sf_count_t count, void* user) {
  MemoryCursor& m = cursor(user);
  const int64_t size = static_cast<int64_t>(m.bytes.size());
  if (count <= 0 || m.pos >= size) return 0;
  const int64_t n = std::min<int64_t>(count, size - m.pos);
  std::copy_n(m.bytes.data() + m.pos, n, static_cast<uint8_t*>(ptr));
  m.pos += n;
  return n;
}

sf_count_t io_write(const void*, sf_count_t, void*) { return 0; }
sf_count_t io_tell(void* user) { return cursor(user).pos; }

bool major_matches(int major, Container c) {
  switch (c) {
    case Container::kWav: return major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX || major == SF_FORMAT_RF64;
    case Container::kAiff: return major == SF_FORMAT_AIFF;
    case Container::kFlac: return major == SF_FORMAT_FLAC;
    case Container::kOggOpus: return major == SF_FORMAT_OGG;
    case Container::kOggVorbis: case Container::kMp3: case Container::kMp4: case Container::kMatroska:
    case Container::kAdts: case Container::kAmr: case Container::kCaf:
      return false;  // decoded by their codec libraries
  }
  return false;
}

const char* major_name(int major) {
  switch (major) {
    case SF_FORMAT_WAV: case SF_FORMAT_WAVEX: return "wav";
    case SF_FORMAT_RF64: return "rf64";
    case SF_FORMAT_AIFF: return "aiff";
    case SF_FORMAT_FLAC: return "flac";
    case SF_FORMAT_OGG: return "ogg";
    default: return "other";
  }
}

const char* subtype_name(int subtype) {
  switch (subtype) {
    case SF_FORMAT_PCM_S8: return "pcm_s8";
    case SF_FORMAT_PCM_U8: return "pcm_u8";
    case SF_FORMAT_PCM_16: return "pcm_16";
    case SF_FORMAT_PCM_24: return "pcm_24";
    case SF_FORMAT_PCM_32: return "pcm_32";
    case SF_FORMAT_FLOAT: return "float";
    case SF_FORMAT_DOUBLE: return "double";
    case SF_FORMAT_ULAW: return "ulaw";
    case SF_FORMAT_ALAW: return "alaw";
    case SF_FORMAT_IMA_ADPCM: return "ima_adpcm";
    case SF_FORMAT_MS_ADPCM: return "ms_adpcm";
    case SF_FORMAT_GSM610: return "gsm610";
    case SF_FORMAT_VORBIS: return "vorbis";
    case SF_FORMAT_OPUS: return "opus";
    default: return "other";
  }
}

}  // namespace

SndfileReader::SndfileReader(std::span<const uint8_t> bytes, const Sniffed& sniffed)
    : mem_{bytes, 0}, container_(sniffed.container), audio_offset_(sniffed.audio_offset) {
  SF_VIRTUAL_IO io{io_get_filelen, io_seek, io_read, io_write, io_tell};
  {
    std::lock_guard<std::mutex> lock(g_open_mutex);
    file_ = sf_open_virtual(&io, SFM_READ, &info_, &mem_);
    if (file_ == nullptr) {
      const int code = sf_error(nullptr);
      const std::string reason = sf_strerror(nullptr);
      if (code == SF_ERR_UNSUPPORTED_ENCODING)
        fail(ErrorCode::kUnimplemented, "unsupported {} encoding: {}", container_name(container_), reason);
      fail(ErrorCode::kDataLoss, "malformed {} file: {}", container_name(container_), reason);
    }
  }
  // libsndfile picks the parser from the bytes itself; make sure it is the one the sniffer vouched for.
  const int major = info_.format & SF_FORMAT_TYPEMASK;
  if (!major_matches(major, container_)) {
    sf_close(file_);
    fail(ErrorCode::kDataLoss, "malformed {} file: the decoder recognised it as another format (0x{:x})",
         container_name(container_), major);
  }
  // Integer PCM reads as x / 2^(bits-1) (libsndfile's default; stated so that a changed default cannot break it).
  sf_command(file_, SFC_SET_NORM_FLOAT, nullptr, SF_TRUE);
}

SndfileReader::~SndfileReader() {
  if (file_ != nullptr) sf_close(file_);
}

int64_t SndfileReader::frames() const {
  return (info_.frames < 0 || info_.frames == SF_COUNT_MAX) ? -1 : static_cast<int64_t>(info_.frames);
}

std::string SndfileReader::format_name() const {
  return std::string(major_name(info_.format & SF_FORMAT_TYPEMASK)) + "/" +
         subtype_name(info_.format & SF_FORMAT_SUBMASK);
}

// When libFLAC loses sync, it found no valid frame where the next one should start. At the end of a cut-off file
// that is the last frame, begun but not finished; in the middle of a file it is corruption, and libsndfile stops
// there too, so the rest would be silently lost. The two are told apart by what follows: the input was cut if no
// intact frame header starts after the first frame not decoded (the last intact header in the input begins at or
// before frames_read_). The frames decoded before the cut are kept; with none, decode_audio reports that no audio
// could be decoded. Errors go one way only: a frame header found by chance inside a cut frame's data makes that cut
// an error, while corruption passes for a cut only in the last frame, whose audio is lost either way.
bool SndfileReader::flac_cut_at_end(const std::string& reason) const {
  if (container_ != Container::kFlac || reason.find("lost sync") == std::string::npos) return false;
  const auto info = flac_stream_info(mem_.bytes, audio_offset_);
  if (!info) return false;
  const auto last = flac_last_frame_start(mem_.bytes, *info);
  return last && static_cast<int64_t>(*last) <= frames_read_;
}

int64_t SndfileReader::read(float* out, int64_t frames) {
  if (last_frame_cut_) return 0;
  const sf_count_t n = sf_readf_float(file_, out, frames);
  if (n > 0) frames_read_ += n;
  if (sf_error(file_) != SF_ERR_NO_ERROR || n < 0) {
    std::string reason = sf_strerror(file_);
    if (reason.rfind("Error : ", 0) == 0) reason.erase(0, 8);
    if (n >= 0 && flac_cut_at_end(reason)) {
      last_frame_cut_ = true;
      return n;
    }
    if (this->frames() > 0)
      fail(ErrorCode::kDataLoss, "truncated or corrupt {} data: decoding failed after {} of {} frames ({})",
           container_name(container_), frames_read_, this->frames(), reason);
    fail(ErrorCode::kDataLoss, "truncated or corrupt {} data: decoding failed after {} frames ({})",
         container_name(container_), frames_read_, reason);
  }
  return n;
}

}  // namespace steno::audio
