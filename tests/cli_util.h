// Helpers for tests that run a program as a process (the serve_cli tests of the HTTP and gRPC front ends,
// `steno plan`, the benchmark sweep).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace steno::testing {

// Runs `cmd` through the shell with stderr joined to stdout; returns the output and sets the exit status.
inline std::string run(const std::string& cmd, int* exit_code) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    *exit_code = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// A whole file as a string (a server's log).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

#ifdef STENO_BINARY
// The `steno` binary a test runs: $STENO_BINARY, else the one beside the test program (the GPU package puts every
// program in one directory), else the one of this build tree.
inline std::string steno_binary() {
  if (const char* env = std::getenv("STENO_BINARY"); env && *env) return env;
  const std::filesystem::path beside = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "steno";
  if (std::filesystem::exists(beside)) return beside.string();
  return STENO_BINARY;
}
#endif

}  // namespace steno::testing
