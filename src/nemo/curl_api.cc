#include "nemo/curl_api.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>
#include <type_traits>

#include "steno/core/error.h"

namespace steno::nemo {
namespace {

constexpr const char* kLibrary = "libcurl.so.4";  // libcurl's soname since 7.16 (2006)

// Kept mapped for the life of the process, as a linked libcurl would be.
CurlApi load() {
  void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr)
    fail(ErrorCode::kUnavailable, "cannot load {} (downloads need libcurl; Debian: libcurl4): {}", kLibrary,
         dlerror());
  CurlApi t{};
  std::string missing;
  auto sym = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
    if (fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  sym(t.global_init, "curl_global_init");
  sym(t.easy_init, "curl_easy_init");
  sym(t.easy_setopt, "curl_easy_setopt");
  sym(t.easy_perform, "curl_easy_perform");
  sym(t.easy_getinfo, "curl_easy_getinfo");
  sym(t.easy_strerror, "curl_easy_strerror");
  sym(t.easy_cleanup, "curl_easy_cleanup");
  sym(t.slist_append, "curl_slist_append");
  sym(t.slist_free_all, "curl_slist_free_all");
  if (!missing.empty()) fail(ErrorCode::kUnavailable, "{} lacks {}", kLibrary, missing);
  if (t.global_init(CURL_GLOBAL_DEFAULT) != 0) fail(ErrorCode::kInternal, "libcurl failed to initialise");
  return t;
}

}  // namespace

const CurlApi& curl_api() {
  // Checked without the lock once loaded; a failed load is retried and reported at every call.
  static std::mutex mu;
  static CurlApi table{};
  static std::atomic<bool> loaded{false};
  if (loaded.load(std::memory_order_acquire)) return table;
  std::lock_guard lock(mu);
  if (!loaded.load(std::memory_order_relaxed)) {
    table = load();
    loaded.store(true, std::memory_order_release);
  }
  return table;
}

}  // namespace steno::nemo
