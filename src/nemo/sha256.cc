#include "nemo/sha256.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <openssl/opensslv.h>

#include "core/run_time_library.h"
#include "steno/core/error.h"

namespace steno::nemo {
namespace {

// libcrypto is opened by the first hash (a .nemo imported, a download checked): linked, it cost every steno
// process a few milliseconds of its start on a 2-core machine (an empty program linked with it: +6 ms of CPU). The functions used, named as in OpenSSL without the prefix.
struct CryptoApi {
  decltype(&::EVP_MD_CTX_new) md_ctx_new;
  decltype(&::EVP_MD_CTX_free) md_ctx_free;
  decltype(&::EVP_sha256) sha256;
  decltype(&::EVP_DigestInit_ex) digest_init;
  decltype(&::EVP_DigestUpdate) digest_update;
  decltype(&::EVP_DigestFinal_ex) digest_final;
};

CryptoApi load() {
  RunTimeLibrary lib("libcrypto.so." + std::to_string(OPENSSL_VERSION_MAJOR), "SHA-256 needs OpenSSL's libcrypto");
  CryptoApi t{};
  lib.bind(t.md_ctx_new, "EVP_MD_CTX_new");
  lib.bind(t.md_ctx_free, "EVP_MD_CTX_free");
  lib.bind(t.sha256, "EVP_sha256");
  lib.bind(t.digest_init, "EVP_DigestInit_ex");
  lib.bind(t.digest_update, "EVP_DigestUpdate");
  lib.bind(t.digest_final, "EVP_DigestFinal_ex");
  lib.require_all();
  return t;
}

const CryptoApi& crypto() { return load_once<CryptoApi, load>(); }

}  // namespace

Sha256::Sha256() : ctx_(crypto().md_ctx_new()) {
  if (!ctx_ || crypto().digest_init(ctx_, crypto().sha256(), nullptr) != 1) {
    crypto().md_ctx_free(ctx_);
    fail(ErrorCode::kInternal, "cannot start a SHA-256 (OpenSSL)");
  }
}

Sha256::~Sha256() { crypto().md_ctx_free(ctx_); }

void Sha256::update(const void* data, size_t size) {
  if (crypto().digest_update(ctx_, data, size) != 1)
    fail(ErrorCode::kInternal, "SHA-256 update failed (OpenSSL)");
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (crypto().digest_final(ctx_, digest, &n) != 1) fail(ErrorCode::kInternal, "SHA-256 final failed (OpenSSL)");
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
