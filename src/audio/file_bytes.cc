#include "file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "steno/core/error.h"

namespace steno::audio {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads at most max_bytes + 1 bytes, in blocks: a pipe, or a file that grew since stat, cannot exceed the limit
// unnoticed.
std::vector<uint8_t> read_bounded(int fd, const std::string& path, size_t max_bytes) {
  const size_t cap = max_bytes == SIZE_MAX ? SIZE_MAX : max_bytes + 1;
  constexpr size_t kBlock = size_t{1} << 20;
  std::vector<uint8_t> bytes;
  while (bytes.size() < cap) {
    const size_t old = bytes.size();
    bytes.resize(old + std::min(kBlock, cap - old));
    const ssize_t n = ::read(fd, bytes.data() + old, bytes.size() - old);
    if (n < 0 && errno == EINTR) {
      bytes.resize(old);
      continue;
    }
    if (n < 0) fail(ErrorCode::kDataLoss, "error reading audio file {}: {}", path, std::strerror(errno));
    bytes.resize(old + static_cast<size_t>(n));
    if (n == 0) break;
  }
  if (bytes.size() > max_bytes)
    fail(ErrorCode::kOutOfRange, "audio file {} is over the limit of {} bytes", path, max_bytes);
  return bytes;
}

}  // namespace

FileBytes::FileBytes(const std::string& path, size_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) fail(ErrorCode::kNotFound, "audio file not found: {}", path);
  if (fs::is_directory(status)) fail(ErrorCode::kInvalidArgument, "audio path is a directory, not a file: {}", path);

  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail(ErrorCode::kNotFound, "cannot open audio file {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    read_ = read_bounded(fd.get(), path, max_bytes);
    return;
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    fail(ErrorCode::kOutOfRange, "audio file {} is {} bytes, over the limit of {} bytes", path, size, max_bytes);
  if (size == 0) return;
  // MAP_PRIVATE and read-only: the pages are the page cache's, counted in this process's memory only once touched.
  // The mapping covers the size at open: a file still being recorded (it only grows) decodes as far as it was then.
  // One that another process shrinks during the decode would fault (SIGBUS), the price of not copying it first.
  void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (p == MAP_FAILED) {  // a file system without mmap support
    read_ = read_bounded(fd.get(), path, max_bytes);
    return;
  }
  map_ = static_cast<const uint8_t*>(p);
  map_size_ = static_cast<size_t>(size);
}

FileBytes::~FileBytes() {
  if (map_ != nullptr) ::munmap(const_cast<uint8_t*>(map_), map_size_);
}

}  // namespace steno::audio
