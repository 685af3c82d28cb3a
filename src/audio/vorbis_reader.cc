#include "vorbis_reader.h"

#define OV_EXCLUDE_STATIC_CALLBACKS
#include <vorbis/vorbisfile.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "steno/core/error.h"

namespace steno::audio {
namespace {

size_t io_read(void* out, size_t size, size_t count, void* user) {
  auto& m = *static_cast<MemoryCursor*>(user);
  const auto available = static_cast<int64_t>(m.bytes.size()) - m.pos;
  if (size == 0 || available <= 0) return 0;
  const size_t items = std::min(count, static_cast<size_t>(available) / size);
  std::memcpy(out, m.bytes.data() + m.pos, items * size);
  m.pos += static_cast<int64_t>(items * size);
  return items;
}

int io_seek(void* user, ogg_int64_t offset, int whence) {
  auto& m = *static_cast<MemoryCursor*>(user);
  return m.seek(offset, whence) ? 0 : -1;
}

long io_tell(void* user) { return static_cast<long>(static_cast<MemoryCursor*>(user)->pos); }

const char* ov_error_name(long code) {
  switch (code) {
    case OV_HOLE: return "a gap in the data (missing or corrupt pages)";
    case OV_EREAD: return "read error";
    case OV_EFAULT: return "internal decoder fault";
    case OV_EIMPL: return "unsupported Vorbis feature";
    case OV_EINVAL: return "invalid argument";
    case OV_ENOTVORBIS: return "not Vorbis data";
    case OV_EBADHEADER: return "invalid Vorbis header";
    case OV_EVERSION: return "unsupported Vorbis version";
    case OV_ENOTAUDIO: return "not audio";
    case OV_EBADPACKET: return "invalid packet";
    case OV_EBADLINK: return "invalid stream link";
    case OV_ENOSEEK: return "stream not seekable";
    default: return "unknown error";
  }
}

}  // namespace

VorbisReader::VorbisReader(std::span<const uint8_t> bytes) : mem_{bytes, 0}, vf_(new OggVorbis_File{}) {
  const ov_callbacks io{io_read, io_seek, nullptr, io_tell};
  // On failure ov_open_callbacks frees what it allocated (unlike libsndfile's Vorbis path).
  if (const int rc = ov_open_callbacks(&mem_, vf_.get(), nullptr, 0, io); rc != 0)
    fail(ErrorCode::kDataLoss, "malformed OGG/Vorbis file: {}", ov_error_name(rc));
  open_ = true;
  try {
    const vorbis_info* info = ov_info(vf_.get(), -1);
    if (info == nullptr) fail(ErrorCode::kDataLoss, "malformed OGG/Vorbis file: no stream information");
    channels_ = info->channels;
    rate_ = static_cast<int>(std::clamp<long>(info->rate, INT_MIN, INT_MAX));
    // Chained streams may change format from one link to the next; steno decodes one format per file.
    for (long link = 1; link < ov_streams(vf_.get()); ++link) {
      const vorbis_info* other = ov_info(vf_.get(), static_cast<int>(link));
      if (other == nullptr || other->channels != info->channels || other->rate != info->rate)
        fail(ErrorCode::kUnimplemented, "chained OGG/Vorbis stream changes sample rate or channel count at link {}",
             link);
    }
    const ogg_int64_t total = ov_pcm_total(vf_.get(), -1);
    frames_ = total >= 0 ? static_cast<int64_t>(total) : -1;
  } catch (...) {
    ov_clear(vf_.get());
    throw;
  }
}

VorbisReader::~VorbisReader() {
  if (open_) ov_clear(vf_.get());
}

int64_t VorbisReader::read(float* out, int64_t frames) {
  int64_t got = 0;
  while (got < frames) {
    float** pcm = nullptr;
    int link = 0;
    const int want = static_cast<int>(std::min<int64_t>(frames - got, 1 << 16));
    const long n = ov_read_float(vf_.get(), &pcm, want, &link);
    if (n == 0) break;
    if (n < 0)
      fail(ErrorCode::kDataLoss, "corrupt OGG/Vorbis data after {} frames: {}", frames_read_ + got, ov_error_name(n));
    for (long i = 0; i < n; ++i)
      for (int c = 0; c < channels_; ++c) out[(got + i) * channels_ + c] = pcm[c][i];
    got += n;
  }
  frames_read_ += got;
  return got;
}

}  // namespace steno::audio
