// A file mapped read-only into memory: how a .nemo is read in place, its tensors used where they lie, so that
// importing a checkpoint never holds a second copy of it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

namespace steno::nemo {

class MappedFile {
 public:
  // kNotFound if `path` does not exist, kInvalidArgument if it is not a regular file, kUnavailable if it cannot be
  // opened or mapped. An empty file maps to an empty span.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace steno::nemo
