// What an MPS client (a worker process) gets in its environment: the daemon's directories and its share of the
// GPU: CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY (where the daemon listens and logs),
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (a cap on the SMs its kernels may use) and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (a
// cap on its device memory).
#include <algorithm>
#include <cctype>
#include <string_view>

#include "steno/core/error.h"
#include "serve/fleet/mps.h"

namespace steno::serve::fleet {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// A device: an ordinal ("0") or a UUID ("GPU-8f6d...").
bool valid_device(std::string_view s) {
  if (all_digits(s)) return true;
  if (!s.starts_with("GPU-") || s.size() == 4) return false;
  for (char c : s.substr(4))
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != '-') return false;
  return true;
}

// An amount: digits, optionally a fraction, then an optional unit K/M/G/T with an optional B ("8G", "512MB",
// "1.5G"), as the MPS documentation writes them.
bool valid_amount(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0) return false;
  if (i < s.size() && s[i] == '.') {
    const size_t frac = ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == frac) return false;
  }
  std::string_view unit = s.substr(i);
  if (unit.empty()) return true;
  const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
  if (u != 'K' && u != 'M' && u != 'G' && u != 'T') return false;
  return unit.size() == 1 || (unit.size() == 2 && std::toupper(static_cast<unsigned char>(unit[1])) == 'B');
}

}  // namespace

int mps_thread_percentage(int configured, int workers) {
  STENO_CHECK(workers >= 1, "an MPS group needs at least one worker, got {}", workers);
  if (configured != 0) {
    STENO_CHECK(configured >= 1 && configured <= 100,
                "the MPS active thread percentage must be in 1..100 (0: 100 / workers), got {}", configured);
    return configured;
  }
  // Rounded to nearest: 3 workers get 33 % each, 6 get 17 % (a cap, not a reservation: caps may add up past 100).
  return std::max(1, (100 + workers / 2) / workers);
}

std::string mps_pinned_limit(const std::string& spec, int device) {
  STENO_CHECK(device >= 0, "bad device {} for the MPS pinned memory limit", device);
  auto bad = [&spec]() {
    fail(ErrorCode::kInvalidArgument,
         "bad MPS pinned device memory limit '{}': expected a limit such as 8G or 512MB, or per device "
         "'dev=limit[,dev=limit...]' such as 0=8G,1=512MB (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT's format)", spec);
  };
  if (spec.empty()) bad();
  if (spec.find('=') == std::string::npos) {
    if (!valid_amount(spec)) bad();
    return std::to_string(device) + "=" + spec;
  }
  std::string_view rest = spec;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || !valid_device(item.substr(0, eq)) || !valid_amount(item.substr(eq + 1)))
      bad();
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return spec;
}

EnvVars mps_worker_env(const MpsOptions& options, const std::string& pipe_dir, const std::string& log_dir,
                       int worker, int workers, int device) {
  STENO_CHECK(worker >= 0 && worker < workers, "MPS worker {} is not one of {}", worker, workers);
  STENO_CHECK(!pipe_dir.empty(), "MPS worker environment without a pipe directory");
  EnvVars env;
  // The client finds the daemon through the pipe directory: it must be the daemon's exactly.
  env.emplace_back("CUDA_MPS_PIPE_DIRECTORY", pipe_dir);
  if (!log_dir.empty()) env.emplace_back("CUDA_MPS_LOG_DIRECTORY", log_dir);
  env.emplace_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                   std::to_string(mps_thread_percentage(options.active_thread_percentage, workers)));
  if (!options.pinned_device_mem_limit.empty())
    env.emplace_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
                     mps_pinned_limit(options.pinned_device_mem_limit, device >= 0 ? device : options.device));
  return env;
}

}  // namespace steno::serve::fleet
