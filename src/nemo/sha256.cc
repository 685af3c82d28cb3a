#include "nemo/sha256.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "steno/core/error.h"

namespace steno::nemo {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_);
    fail(ErrorCode::kInternal, "cannot start a SHA-256 (OpenSSL)");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(const void* data, size_t size) {
  if (EVP_DigestUpdate(ctx_, data, size) != 1) fail(ErrorCode::kInternal, "SHA-256 update failed (OpenSSL)");
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_, digest, &n) != 1) fail(ErrorCode::kInternal, "SHA-256 final failed (OpenSSL)");
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kDigits[digest[i] >> 4];
    out += kDigits[digest[i] & 15];
  }
  return out;
}

std::string sha256_of_file(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorCode::kNotFound, "{}: cannot open: {}", file.string(), std::strerror(errno));
  Sha256 hash;
  std::vector<char> block(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, block.data(), block.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      fail(ErrorCode::kUnavailable, "{}: read error: {}", file.string(), std::strerror(e));
    }
    hash.update(block.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return hash.hex();
}

}  // namespace steno::nemo
