#include "steno/nemo/model_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "nemo/sha256.h"
#include "steno/core/error.h"
#include "steno/nemo/import.h"

namespace steno::nemo {
namespace {

namespace fs = std::filesystem;

void make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(ErrorCode::kUnavailable, "model cache: cannot create {}: {}", dir.string(), ec.message());
}

bool is_sha256(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool complete(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "config.json", ec);
}

// An exclusive flock on <root>/locks/<sha256>.lock for as long as it lives. Lock files are never removed: removing
// one that another process is waiting on would let a third lock a new file at the same path beside it.
class ImportLock {
 public:
  ImportLock(const fs::path& root, const std::string& sha256) {
    make_dirs(root / "locks");
    const fs::path path = root / "locks" / (sha256 + ".lock");
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(ErrorCode::kUnavailable, "model cache: cannot open {}: {}", path.string(), std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd_);
      fail(ErrorCode::kUnavailable, "model cache: cannot lock {}: {}", path.string(), std::strerror(e));
    }
  }
  ~ImportLock() { ::close(fd_); }  // closing releases the lock
  ImportLock(const ImportLock&) = delete;
  ImportLock& operator=(const ImportLock&) = delete;

 private:
  int fd_ = -1;
};

// Writes `text` to `path` through a temporary file renamed over it, so a reader sees the old or the new text.
void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) fail(ErrorCode::kUnavailable, "model cache: cannot write {}", tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail(ErrorCode::kUnavailable, "model cache: cannot write {}", path.string());
  }
}

// A small JSON file of the cache (config.json, a source record), or null when it is missing, too large or not JSON.
nlohmann::json read_small_json(const fs::path& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec || size > (1u << 20)) return nullptr;
  std::ifstream in(path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

std::string string_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The hash memo: a file's identity (device, inode, size, modification time in ns) and its SHA-256, stored under a
// key made from its absolute path. A file changed in place gets a new mtime or size and is hashed again.
std::string file_identity(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0)
    fail(ErrorCode::kNotFound, "{}: cannot read: {}", file.string(), std::strerror(errno));
  return fmt::format("{} {} {} {}.{:09}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

std::string memoized_sha256(const fs::path& nemo, const fs::path& root) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(nemo, ec);
  Sha256 key;
  const std::string name = (ec ? nemo : absolute).string();
  key.update(name.data(), name.size());
  const fs::path memo = root / "hashes" / key.hex();
  const std::string identity = file_identity(nemo);
  {
    std::ifstream in(memo);
    std::string line;
    if (std::getline(in, line) && line.size() == identity.size() + 65 && line.starts_with(identity + " ") &&
        is_sha256(line.substr(identity.size() + 1)))
      return line.substr(identity.size() + 1);
  }
  const std::string sha = sha256_of_file(nemo);
  if (file_identity(nemo) == identity) {  // not changed while it was read: worth remembering
    make_dirs(root / "hashes");
    write_atomically(memo, identity + " " + sha + "\n");
  }
  return sha;
}

// A model's name as a directory name: the checkpoint's name, unless it is empty or could climb out of the entry.
std::string model_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find(".tmp-") != std::string::npos)
    return "model";
  return name;
}

uint64_t directory_bytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const uintmax_t n = e.is_regular_file(ec) ? e.file_size(ec) : 0;
    if (!ec) total += n;
  }
  return total;
}

}  // namespace

fs::path cache_root() {
  if (const char* dir = std::getenv("STENO_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "steno";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "steno";
  fail(ErrorCode::kNotFound, "no model cache: set $STENO_CACHE_DIR (or $XDG_CACHE_HOME or $HOME)");
}

bool is_nemo_file(const fs::path& path) {
  std::error_code ec;
  return path.extension() == ".nemo" && !fs::is_directory(path, ec);
}

fs::path find_cached_model(const fs::path& root, const std::string& sha256) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / "models" / sha256, ec)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp-") == std::string::npos && e.is_directory(ec) && complete(e.path())) return e.path();
  }
  return {};
}

CachedModel cache_import(const fs::path& nemo, const std::string& sha256, const std::string& name,
                         const std::string& source, const fs::path& root, const CacheLog& log) {
  STENO_CHECK(is_sha256(sha256), "model cache: '{}' is not a SHA-256 (64 lower-case hex digits)", sha256);
  if (fs::path found = find_cached_model(root, sha256); !found.empty()) return {found, sha256, false};
  make_dirs(root / "models");
  ImportLock lock(root, sha256);
  // Another process may have imported it while this one waited.
  if (fs::path found = find_cached_model(root, sha256); !found.empty()) return {found, sha256, false};
  const fs::path entry = root / "models" / sha256;
  const fs::path dir = entry / model_name(name);
  if (log) log(fmt::format("importing {} into the cache (first use) ...", nemo.filename().string()));
  try {
    ImportOptions options;
    options.name = model_name(name);
    import_nemo(nemo, dir, options);
  } catch (const Error& e) {
    // A process that does not take the lock (an older steno) may have put a complete model there meanwhile.
    if (fs::path found = find_cached_model(root, sha256); !found.empty()) return {found, sha256, false};
    std::error_code ec;
    fs::remove(entry, ec);  // the entry's directory, if the import made it and left it empty; nothing otherwise
    throw Error(e.code(), fmt::format("{}: cannot import: {}", nemo.string(), e.what()));
  }
  std::error_code ec;
  const uintmax_t bytes = fs::file_size(nemo, ec);
  const nlohmann::json record = {{"source", source}, {"file", nemo.filename().string()}, {"bytes", ec ? 0 : bytes}};
  write_atomically(entry / "source.json", record.dump(2) + "\n");
  if (log) log(fmt::format("imported into {}", dir.string()));
  return {dir, sha256, true};
}

CachedModel cached_model(const fs::path& nemo, const fs::path& root, const CacheLog& log) {
  std::error_code ec;
  if (!fs::is_regular_file(nemo, ec)) fail(ErrorCode::kNotFound, "{}: no such .nemo file", nemo.string());
  const std::string sha = memoized_sha256(nemo, root);
  const fs::path absolute = fs::absolute(nemo, ec);
  return cache_import(nemo, sha, nemo.stem().string(), (ec ? nemo : absolute).string(), root, log);
}

std::vector<CacheEntry> list_cached_models(const fs::path& root) {
  std::vector<CacheEntry> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / "models", ec)) {
    const std::string sha = e.path().filename().string();
    if (!is_sha256(sha)) continue;
    const fs::path dir = find_cached_model(root, sha);
    if (dir.empty()) continue;
    CacheEntry entry;
    entry.sha256 = sha;
    entry.dir = dir;
    entry.name = dir.filename().string();
    entry.model_type = string_field(read_small_json(dir / "config.json"), "model_type");
    entry.source = string_field(read_small_json(e.path() / "source.json"), "source");
    entry.bytes = directory_bytes(dir);
    out.push_back(std::move(entry));
  }
  std::sort(out.begin(), out.end(), [](const CacheEntry& a, const CacheEntry& b) {
    return std::tie(a.source, a.sha256) < std::tie(b.source, b.sha256);
  });
  return out;
}

}  // namespace steno::nemo
