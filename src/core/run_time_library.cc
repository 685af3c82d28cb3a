#include "core/run_time_library.h"

#include <dlfcn.h>

#include "steno/core/error.h"

namespace steno {

std::string configured_library(const std::filesystem::path& configured) {
  std::error_code ec;
  return std::filesystem::exists(configured, ec) ? configured.string() : configured.filename().string();
}

RunTimeLibrary::RunTimeLibrary(std::string name, const std::string& purpose, Lookup lookup)
    : name_(std::move(name)) {
  handle_ = dlopen(name_.c_str(), RTLD_NOW | RTLD_LOCAL | (lookup == Lookup::kOwnFirst ? RTLD_DEEPBIND : 0));
  if (handle_ == nullptr) fail(ErrorCode::kUnavailable, "cannot load {} ({}): {}", name_, purpose, dlerror());
}

void* RunTimeLibrary::find(const char* symbol) {
  void* p = dlsym(handle_, symbol);
  if (p == nullptr) missing_ += (missing_.empty() ? "" : ", ") + std::string(symbol);
  return p;
}

void RunTimeLibrary::require_all() const {
  if (!missing_.empty()) fail(ErrorCode::kUnavailable, "{} lacks {}", name_, missing_);
}

}  // namespace steno
