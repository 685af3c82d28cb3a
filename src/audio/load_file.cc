#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {

DecodedAudio load_audio_file(const std::string& path, const AudioLimits& limits) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) fail(ErrorCode::kNotFound, "audio file not found: {}", path);
  if (fs::is_directory(status)) fail(ErrorCode::kInvalidArgument, "audio path is a directory, not a file: {}", path);
  // Refuse an oversized regular file before reading it (a pipe or device reports no size and is checked as read).
  uintmax_t size = 0;
  if (fs::is_regular_file(status)) {
    size = fs::file_size(path, ec);
    if (ec) size = 0;
    if (size > limits.max_bytes)
      fail(ErrorCode::kOutOfRange, "audio file {} is {} bytes, over the limit of {} bytes", path, size,
           limits.max_bytes);
  }

  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::kNotFound, "cannot open audio file {}: {}", path, std::strerror(errno));
  // Read at most max_bytes + 1 bytes, in blocks: a file that grew since stat (or a pipe) cannot exceed the limit.
  const size_t cap = limits.max_bytes == SIZE_MAX ? SIZE_MAX : limits.max_bytes + 1;
  std::vector<uint8_t> bytes;
  bytes.reserve(static_cast<size_t>(size) + 1);
  constexpr size_t kBlock = size_t{1} << 20;
  while (in && bytes.size() < cap) {
    const size_t old = bytes.size();
    const size_t want = std::min(kBlock, cap - old);
    bytes.resize(old + want);
    in.read(reinterpret_cast<char*>(bytes.data() + old), static_cast<std::streamsize>(want));
    bytes.resize(old + static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) fail(ErrorCode::kDataLoss, "error reading audio file {}", path);
  if (bytes.size() > limits.max_bytes)
    fail(ErrorCode::kOutOfRange, "audio file {} is over the limit of {} bytes", path, limits.max_bytes);
  return decode_audio(bytes, limits);
}

}  // namespace steno::audio
