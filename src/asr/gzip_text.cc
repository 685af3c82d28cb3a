#include "gzip_text.h"

#include <zlib.h>

#include <algorithm>
#include <vector>

#include "steno/core/error.h"

namespace steno::asr {

std::string read_text_maybe_gzip(const std::filesystem::path& path, size_t max_bytes, const std::string& what,
                                 size_t expansion) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) fail(ErrorCode::kNotFound, "{} {}: cannot open it", what, path.string());
  std::string out;
  std::error_code ec;
  const uintmax_t stored = std::filesystem::file_size(path, ec);
  gzbuffer(f, 1 << 20);
  std::vector<char> buf(1 << 20);
  int n = 0;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0) {
    // Once zlib knows whether the file is gzip (after the first read): room for all of it, so that the text is
    // not copied as it grows.
    if (out.empty() && !ec) out.reserve(std::min<uintmax_t>(gzdirect(f) ? stored : stored * expansion, max_bytes));
    out.append(buf.data(), static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      gzclose(f);
      fail(ErrorCode::kOutOfRange, "{} {}: over {} MiB of text", what, path.string(), max_bytes >> 20);
    }
  }
  int err = Z_OK;
  const char* msg = n < 0 ? gzerror(f, &err) : nullptr;
  const std::string why = msg != nullptr ? msg : "";
  gzclose(f);
  if (n < 0) fail(ErrorCode::kDataLoss, "{} {}: {}", what, path.string(), why);
  return out;
}

}  // namespace steno::asr
