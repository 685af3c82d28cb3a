// safetensors files (https://github.com/huggingface/safetensors): read memory-mapped, write from CPU tensors.
//
// Layout: [u64 little-endian N][N bytes of JSON header][data section]. The header maps each tensor name to
// {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]} (offsets relative to the data section) and may
// hold a "__metadata__" object of string -> string. steno reads F32, F16, BF16, I32, I64 and U8.
//
// The reader treats the file as untrusted: every length, offset, shape and dtype is checked when the file is
// opened, and a bad file is a steno::Error (kDataLoss for corrupt bytes, kUnimplemented for a valid dtype that
// steno does not support), never a crash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "steno/core/tensor.h"

namespace steno {

struct SafeTensorInfo {
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t begin = 0;  // byte range in the data section
  uint64_t end = 0;
  size_t nbytes() const { return static_cast<size_t>(end - begin); }
};

class SafeTensorsFile {
 public:
  // Maps `path` read-only and validates its header. kNotFound if the file does not exist, kDataLoss if it is
  // corrupt, kUnimplemented for a tensor of a dtype steno lacks (F64, I8, F8_*, ...).
  static SafeTensorsFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  // Tensor names in data-offset order (the order of the bytes in the file).
  const std::vector<std::string>& names() const { return names_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // kNotFound for an unknown name.
  const SafeTensorInfo& info(const std::string& name) const;
  // The tensor's bytes as a CPU tensor in the file's dtype. Zero-copy: a view of the read-only mapping that
  // keeps the mapping alive after this object is gone (do not write through it; clone() first). A tensor whose
  // bytes are not aligned to its element size (possible in files from other writers) is returned as a copy.
  Tensor get(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  uint64_t file_size() const;

 private:
  struct Mapping;
  std::filesystem::path path_;
  std::shared_ptr<Mapping> mapping_;
  const uint8_t* data_ = nullptr;  // start of the data section
  std::map<std::string, SafeTensorInfo> tensors_;
  std::vector<std::string> names_;
  std::map<std::string, std::string> metadata_;
};

// Writes CPU tensors (any steno dtype) to `path`, atomically (a temporary file renamed into place). Tensors are
// laid out by decreasing element size, then by name, without gaps, and the header is padded with spaces to a
// multiple of 8 bytes, so every tensor is aligned to its element size (the layout the reference writer uses).
void write_safetensors(const std::filesystem::path& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Streaming variant for files too big to hold in memory: `entries` gives every name, dtype and shape up front;
// `produce(i)` is then called once per entry, in file order, and must return a CPU tensor of entries[i]'s dtype
// and shape, which is written and released before the next call.
struct SafeTensorsEntry {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
};
void write_safetensors_streamed(const std::filesystem::path& path, const std::vector<SafeTensorsEntry>& entries,
                                const std::map<std::string, std::string>& metadata,
                                const std::function<Tensor(size_t index)>& produce);

// The safetensors dtype name ("F32", "BF16", ...) of a steno dtype.
const char* safetensors_dtype_name(DType t);

}  // namespace steno
