// The bytes of an audio file to decode, without reading them all first: a regular file is mapped read-only, so its
// pages are read only as the decoder touches them and an over-long file is refused from its header alone. A pipe or
// device cannot be mapped and is read, at most max_bytes + 1 of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace steno::audio {

class FileBytes {
 public:
  // Throws kNotFound (no such file, or it cannot be opened), kInvalidArgument (a directory), kOutOfRange (over
  // max_bytes: a regular file from its size, before anything is read), kDataLoss (a read error).
  FileBytes(const std::string& path, size_t max_bytes);
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  std::span<const uint8_t> bytes() const { return map_ ? std::span<const uint8_t>(map_, map_size_) : read_; }

 private:
  const uint8_t* map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<uint8_t> read_;
};

}  // namespace steno::audio
