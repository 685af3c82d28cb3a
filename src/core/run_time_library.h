// Libraries steno opens when a command first needs them rather than links (docs/architecture.md, "Libraries
// opened when first needed"): the opening, the binding of each function, and the one-time load of a table.
#pragma once

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>

namespace steno {

// What to open for a library CMake found at build time (steno_run_time_library(): the file named by its soname,
// e.g. /usr/lib/x86_64-linux-gnu/libdnnl.so.2): that file where it exists, else the soname alone, for the loader's
// search (a binary carried to a machine that keeps its libraries elsewhere, scripts/package-gpu.sh).
std::string configured_library(const std::filesystem::path& configured);

class RunTimeLibrary {
 public:
  // dlopen(name), RTLD_NOW | RTLD_LOCAL (| RTLD_DEEPBIND with kOwnFirst: the library and what it loads look up
  // symbols in their own libraries before the program's), never closed (what it made may outlive static
  // destruction). Throws kUnavailable "cannot load NAME (PURPOSE): <the loader's message>".
  enum class Lookup { kProgramFirst, kOwnFirst };
  RunTimeLibrary(std::string name, const std::string& purpose, Lookup lookup = Lookup::kProgramFirst);

  // fn = the library's `symbol`; a symbol it lacks is remembered for require_all().
  template <typename F>
  void bind(F& fn, const char* symbol) {
    fn = reinterpret_cast<F>(find(symbol));
  }
  // Throws kUnavailable "NAME lacks a, b" when bind() found nothing for some symbol.
  void require_all() const;

 private:
  void* find(const char* symbol);

  std::string name_;
  void* handle_ = nullptr;
  std::string missing_;
};

// The table `load()` makes, made once per process by the first call and then read without a lock; a load that
// throws is tried again (and its error reported again) by the next call.
template <typename T, T (*load)()>
const T& load_once() {
  static std::mutex mu;
  static T table{};
  static std::atomic<bool> loaded{false};
  if (loaded.load(std::memory_order_acquire)) return table;
  std::lock_guard lock(mu);
  if (!loaded.load(std::memory_order_relaxed)) {
    table = load();
    loaded.store(true, std::memory_order_release);
  }
  return table;
}

}  // namespace steno
