// SHA-256 (OpenSSL's libcrypto): the key of the model cache (model_cache.h) and the Hub's check of a download.
#pragma once

#include <openssl/evp.h>

#include <cstddef>
#include <filesystem>
#include <string>

namespace steno::nemo {

// An incremental SHA-256: update() any number of times, then hex() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  std::string hex();  // lower-case, 64 digits; the hasher is spent afterwards

 private:
  EVP_MD_CTX* ctx_;
};

// The SHA-256 of a whole file, read in 1 MiB blocks. kNotFound if it cannot be opened, kUnavailable on a read error.
std::string sha256_of_file(const std::filesystem::path& file);

}  // namespace steno::nemo
