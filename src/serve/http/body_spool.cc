#include "serve/http/body_spool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "steno/core/error.h"

namespace steno::serve::http {
namespace {

std::string temp_dir(const std::string& dir) {
  if (!dir.empty()) return dir;
  const char* env = std::getenv("TMPDIR");
  return env && *env ? env : "/tmp";
}

// A file in `dir` that has no name: O_TMPFILE where the file system supports it, else mkstemp and unlink.
int open_unnamed_file(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string path = dir + "/steno-upload-XXXXXX";
  fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0)
    fail(ErrorCode::kUnavailable, "cannot create a temporary file for the upload in {}: {}", dir, std::strerror(errno));
  ::unlink(path.c_str());
  return fd;
}

void write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail(ErrorCode::kUnavailable, "cannot write the upload to its temporary file: {}", std::strerror(errno));
    data += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

BodySpool::BodySpool(size_t memory_limit, std::string dir) : memory_limit_(memory_limit), dir_(std::move(dir)) {}

BodySpool::BodySpool(std::string bytes) : memory_limit_(SIZE_MAX), memory_(std::move(bytes)), size_(memory_.size()) {}

BodySpool::~BodySpool() { release(); }

BodySpool::BodySpool(BodySpool&& o) noexcept
    : memory_limit_(o.memory_limit_), dir_(std::move(o.dir_)), memory_(std::move(o.memory_)),
      fd_(std::exchange(o.fd_, -1)), size_(std::exchange(o.size_, 0)), map_(std::exchange(o.map_, nullptr)) {}

BodySpool& BodySpool::operator=(BodySpool&& o) noexcept {
  if (this != &o) {
    release();
    memory_limit_ = o.memory_limit_;
    dir_ = std::move(o.dir_);
    memory_ = std::move(o.memory_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = std::exchange(o.size_, 0);
    map_ = std::exchange(o.map_, nullptr);
  }
  return *this;
}

void BodySpool::release() noexcept {
  if (map_) ::munmap(const_cast<char*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
  map_ = nullptr;
  fd_ = -1;
}

void BodySpool::append(const char* data, size_t n) {
  if (n == 0) return;
  if (fd_ < 0 && memory_.size() + n > memory_limit_) spill();
  if (fd_ >= 0) {
    write_all(fd_, data, n);
  } else {
    memory_.append(data, n);
  }
  size_ += n;
}

void BodySpool::spill() {
  fd_ = open_unnamed_file(temp_dir(dir_));
  write_all(fd_, memory_.data(), memory_.size());
  // Keep the start in memory: the connection judges a large upload from its first bytes while it arrives.
  memory_.resize(std::min(memory_.size(), size_t{1} << 20));
  memory_.shrink_to_fit();
}

void BodySpool::finish() {
  if (fd_ < 0 || map_ || size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
  if (p == MAP_FAILED) fail(ErrorCode::kUnavailable, "cannot map the upload's temporary file: {}", std::strerror(errno));
  ::madvise(p, size_, MADV_SEQUENTIAL);  // read front to back, once: let the kernel read ahead and drop behind
  map_ = static_cast<const char*>(p);
}

std::string_view BodySpool::view() const {
  if (fd_ < 0) return memory_;
  STENO_CHECK(map_ != nullptr || size_ == 0, "BodySpool::view before finish");
  return {map_, size_};
}

}  // namespace steno::serve::http
