#include "steno/core/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>

namespace steno {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;  // the reference implementation's limit
constexpr int kMaxJsonDepth = 64;                         // the header needs 3 levels
constexpr size_t kMaxRank = 32;

// Returns the steno dtype for a safetensors dtype name; throws for names steno does not read.
DType dtype_from_safetensors(const std::string& s, const std::string& where) {
  if (s == "F32") return DType::kF32;
  if (s == "F16") return DType::kF16;
  if (s == "BF16") return DType::kBF16;
  if (s == "I32") return DType::kI32;
  if (s == "I64") return DType::kI64;
  if (s == "U8") return DType::kU8;
  static const char* const kKnown[] = {"BOOL", "I8",      "I16",     "U16",     "U32", "U64",     "F64",
                                       "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64"};
  for (const char* k : kKnown)
    if (s == k)
      fail(ErrorCode::kUnimplemented, "{}: dtype {} is not supported by steno (F32, F16, BF16, I32, I64, U8)",
           where, s);
  fail(ErrorCode::kDataLoss, "{}: unknown dtype '{}'", where, s);
}

// Rejects nesting deeper than kMaxJsonDepth before the JSON parser sees the bytes.
void check_json_depth(const char* p, size_t n, const std::string& file) {
  int depth = 0;
  bool in_string = false, escape = false;
  for (size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (in_string) {
      if (escape) escape = false;
      else if (c == '\\') escape = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) fail(ErrorCode::kDataLoss, "{}: header JSON is nested too deeply", file);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

uint64_t json_uint(const nlohmann::json& v, const std::string& where) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();
    if (x >= 0) return static_cast<uint64_t>(x);
  }
  fail(ErrorCode::kDataLoss, "{} must be a non-negative integer, got {}", where, v.dump());
}

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

struct SafeTensorsFile::Mapping {
  void* addr = nullptr;
  size_t size = 0;
  Mapping(void* a, size_t s) : addr(a), size(s) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (addr != nullptr) ::munmap(addr, size);
  }
};

const char* safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kI32: return "I32";
    case DType::kI64: return "I64";
    case DType::kU8: return "U8";
  }
  return "?";
}

SafeTensorsFile SafeTensorsFile::open(const std::filesystem::path& path) {
  const std::string file = path.string();
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) fail(ErrorCode::kNotFound, "{}: no such file", file);
    fail(ErrorCode::kUnavailable, "{}: cannot open: {}", file, errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(ErrorCode::kUnavailable, "{}: cannot stat: {}", file, errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorCode::kInvalidArgument, "{}: not a regular file", file);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    fail(ErrorCode::kDataLoss, "{}: {} bytes is too short for a safetensors file (truncated?)", file, size);
  }
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  ::close(fd);
  if (addr == MAP_FAILED) fail(ErrorCode::kUnavailable, "{}: cannot mmap: {}", file, errno_text(map_err));

  SafeTensorsFile f;
  f.path_ = path;
  f.mapping_ = std::make_shared<Mapping>(addr, size);
  const auto* bytes = static_cast<const uint8_t*>(addr);

  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8);
  if (header_len > kMaxHeaderBytes)
    fail(ErrorCode::kDataLoss, "{}: header length {} exceeds the limit of {} bytes (corrupt or not safetensors)",
         file, header_len, kMaxHeaderBytes);
  if (header_len > size - 8)
    fail(ErrorCode::kDataLoss, "{}: header length {} exceeds the file size {} (truncated?)", file, header_len, size);
  const char* hdr = reinterpret_cast<const char*>(bytes + 8);
  if (header_len < 2 || hdr[0] != '{')
    fail(ErrorCode::kDataLoss, "{}: header does not start with a JSON object (not a safetensors file?)", file);
  check_json_depth(hdr, header_len, file);

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(hdr, hdr + header_len);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::kDataLoss, "{}: header is not valid JSON: {}", file, e.what());
  }
  if (!header.is_object()) fail(ErrorCode::kDataLoss, "{}: header is not a JSON object", file);

  const uint64_t data_size = size - 8 - header_len;
  f.data_ = bytes + 8 + header_len;
  for (const auto& [name, entry] : header.items()) {
    const std::string where = file + ": tensor '" + name + "'";
    if (name == "__metadata__") {
      if (entry.is_null()) continue;
      if (!entry.is_object()) fail(ErrorCode::kDataLoss, "{}: __metadata__ is not a JSON object", file);
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) fail(ErrorCode::kDataLoss, "{}: __metadata__ value of '{}' is not a string", file, k);
        f.metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object()) fail(ErrorCode::kDataLoss, "{}: entry is not a JSON object", where);
    const auto dt = entry.find("dtype");
    const auto sh = entry.find("shape");
    const auto off = entry.find("data_offsets");
    if (dt == entry.end() || !dt->is_string()) fail(ErrorCode::kDataLoss, "{}: missing or non-string dtype", where);
    if (sh == entry.end() || !sh->is_array()) fail(ErrorCode::kDataLoss, "{}: missing or non-array shape", where);
    if (off == entry.end() || !off->is_array() || off->size() != 2)
      fail(ErrorCode::kDataLoss, "{}: data_offsets must be an array [begin, end]", where);
    if (sh->size() > kMaxRank) fail(ErrorCode::kDataLoss, "{}: rank {} is too large", where, sh->size());

    SafeTensorInfo info;
    info.dtype = dtype_from_safetensors(dt->get<std::string>(), where);
    uint64_t numel = 1;
    for (const auto& d : *sh) {
      const uint64_t dim = json_uint(d, where + " shape entry");
      if (dim > (uint64_t(1) << 62) || __builtin_mul_overflow(numel, dim, &numel))
        fail(ErrorCode::kDataLoss, "{}: shape {} overflows", where, sh->dump());
      info.shape.push_back(static_cast<int64_t>(dim));
    }
    uint64_t nbytes = 0;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(info.dtype)), &nbytes))
      fail(ErrorCode::kDataLoss, "{}: shape {} overflows", where, sh->dump());
    info.begin = json_uint((*off)[0], where + " data_offsets[0]");
    info.end = json_uint((*off)[1], where + " data_offsets[1]");
    if (info.begin > info.end)
      fail(ErrorCode::kDataLoss, "{}: data_offsets [{}, {}] are reversed", where, info.begin, info.end);
    if (info.end > data_size)
      fail(ErrorCode::kDataLoss, "{}: data_offsets [{}, {}] lie outside the {}-byte data section (truncated?)", where,
           info.begin, info.end, data_size);
    if (info.end - info.begin != nbytes)
      fail(ErrorCode::kDataLoss, "{}: data_offsets [{}, {}] hold {} bytes but {} {} needs {}", where, info.begin,
           info.end, info.end - info.begin, dt->get<std::string>(), shape_str(info.shape), nbytes);
    f.tensors_.emplace(name, std::move(info));
  }

  // Names in byte order; non-empty ranges must not overlap.
  for (const auto& [name, info] : f.tensors_) f.names_.push_back(name);
  std::stable_sort(f.names_.begin(), f.names_.end(), [&](const std::string& a, const std::string& b) {
    return f.tensors_.at(a).begin < f.tensors_.at(b).begin;
  });
  uint64_t prev_end = 0;
  const std::string* prev = nullptr;
  for (const std::string& name : f.names_) {
    const SafeTensorInfo& info = f.tensors_.at(name);
    if (info.begin == info.end) continue;
    if (prev != nullptr && info.begin < prev_end)
      fail(ErrorCode::kDataLoss, "{}: tensors '{}' and '{}' overlap", file, *prev, name);
    prev_end = info.end;
    prev = &name;
  }
  return f;
}

const SafeTensorInfo& SafeTensorsFile::info(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(ErrorCode::kNotFound, "{}: no tensor named '{}'", path_.string(), name);
  return it->second;
}

Tensor SafeTensorsFile::get(const std::string& name) const {
  const SafeTensorInfo& i = info(name);
  void* p = const_cast<uint8_t*>(data_ + i.begin);
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(i.dtype) != 0) {
    Tensor t = Tensor::empty(i.shape, i.dtype);
    if (i.nbytes() > 0) std::memcpy(t.raw(), p, i.nbytes());
    return t;
  }
  return Tensor::wrap(p, i.shape, i.dtype, Device::cpu(), mapping_);
}

uint64_t SafeTensorsFile::file_size() const { return mapping_ ? mapping_->size : 0; }

// ---- writer ----------------------------------------------------------------------------------------------------

void write_safetensors_streamed(const std::filesystem::path& path, const std::vector<SafeTensorsEntry>& entries,
                                const std::map<std::string, std::string>& metadata,
                                const std::function<Tensor(size_t index)>& produce) {
  const std::string file = path.string();
  {
    std::vector<std::string> seen;
    for (const SafeTensorsEntry& e : entries) {
      STENO_CHECK(e.name != "__metadata__", "{}: '__metadata__' is not a valid tensor name", file);
      for (int64_t d : e.shape) STENO_CHECK(d >= 0, "{}: tensor '{}' has shape {}", file, e.name, shape_str(e.shape));
      seen.push_back(e.name);
    }
    std::sort(seen.begin(), seen.end());
    const auto dup = std::adjacent_find(seen.begin(), seen.end());
    STENO_CHECK(dup == seen.end(), "{}: tensor name '{}' given twice", file, dup == seen.end() ? "" : *dup);
  }

  // File order: larger elements first, then by name; with no gaps every tensor stays aligned to its element size.
  std::vector<size_t> order(entries.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const size_t sa = dtype_size(entries[a].dtype), sb = dtype_size(entries[b].dtype);
    return sa != sb ? sa > sb : entries[a].name < entries[b].name;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = std::move(m);
  }
  uint64_t offset = 0;
  for (size_t i : order) {
    const SafeTensorsEntry& e = entries[i];
    const uint64_t nbytes = static_cast<uint64_t>(shape_numel(e.shape)) * dtype_size(e.dtype);
    header[e.name] = {{"dtype", safetensors_dtype_name(e.dtype)},
                      {"shape", e.shape},
                      {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::kInvalidArgument, "{}: cannot encode the header (names must be UTF-8): {}", file, e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  const std::string tmp = file + ".tmp" + std::to_string(::getpid());
  std::FILE* out = std::fopen(tmp.c_str(), "wb");
  if (out == nullptr) {
    const int err = errno;
    fail(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kUnavailable, "{}: cannot create: {}", file,
         errno_text(err));
  }
  auto write_bytes = [&](const void* p, size_t n) {
    if (n > 0 && std::fwrite(p, 1, n, out) != n)
      fail(ErrorCode::kUnavailable, "{}: write failed: {}", file, errno_text(errno));
  };
  try {
    const uint64_t header_len = text.size();
    write_bytes(&header_len, 8);
    write_bytes(text.data(), text.size());
    for (size_t i : order) {
      const SafeTensorsEntry& e = entries[i];
      Tensor t = produce(i);
      STENO_CHECK(t.device().is_cpu(), "{}: tensor '{}' is on {}, not the CPU", file, e.name, t.device().str());
      STENO_CHECK(t.dtype() == e.dtype && t.shape() == e.shape, "{}: tensor '{}' is {}, expected {}{}", file, e.name,
                  t.str(), dtype_name(e.dtype), shape_str(e.shape));
      if (t.nbytes() > 0) write_bytes(t.raw(), t.nbytes());
    }
    if (std::fflush(out) != 0) fail(ErrorCode::kUnavailable, "{}: write failed: {}", file, errno_text(errno));
  } catch (...) {
    std::fclose(out);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(out) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    fail(ErrorCode::kUnavailable, "{}: write failed: {}", file, errno_text(err));
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    fail(ErrorCode::kUnavailable, "{}: cannot rename the finished file into place: {}", file, errno_text(err));
  }
}

void write_safetensors(const std::filesystem::path& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<SafeTensorsEntry> entries;
  entries.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    STENO_CHECK(t.defined() || t.numel() == 0, "{}: tensor '{}' is empty (undefined)", path.string(), name);
    entries.push_back({name, t.dtype(), t.shape()});
  }
  write_safetensors_streamed(path, entries, metadata, [&](size_t i) { return tensors[i].second; });
}

}  // namespace steno
