// Helpers for tests that run a program as a process (the serve_cli tests of the HTTP and gRPC front ends,
// `steno plan`, the benchmark sweep).
#pragma once

#include <sys/wait.h>

#include <cstdio>
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

}  // namespace steno::testing
