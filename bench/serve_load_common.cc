#include "serve_load_common.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace serve_load {

namespace {

double nearest_rank(std::vector<double> sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Json raise_nofile(int needed) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  Json j;
  const auto value = [](rlim_t v) { return v == RLIM_INFINITY ? int64_t{-1} : static_cast<int64_t>(v); };
  j["soft_before"] = value(lim.rlim_cur);
  j["hard"] = value(lim.rlim_max);
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
      std::fprintf(stderr, "serve_load: cannot raise RLIMIT_NOFILE to %llu: %s\n",
                   static_cast<unsigned long long>(lim.rlim_max), std::strerror(errno));
  }
  getrlimit(RLIMIT_NOFILE, &lim);
  j["soft"] = value(lim.rlim_cur);
  std::fprintf(stderr, "serve_load: RLIMIT_NOFILE soft %s -> %s (hard %s)\n", j["soft_before"].dump().c_str(),
               j["soft"].dump().c_str(), j["hard"].dump().c_str());
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < static_cast<rlim_t>(needed) + 64)
    std::fprintf(stderr,
                 "serve_load: WARNING: RLIMIT_NOFILE is %llu even after raising the soft limit to the hard one, too "
                 "low for %d connections (+ a few); raise the hard limit (ulimit -Hn, limits.conf) or use fewer "
                 "--requests. Connections beyond it fail with 'Too many open files'.\n",
                 static_cast<unsigned long long>(lim.rlim_cur), needed);
  return j;
}

Json latency_json(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  double mean = 0;
  for (double v : values) mean += v;
  if (!values.empty()) mean /= static_cast<double>(values.size());
  return {{"mean", mean},
          {"p50", nearest_rank(values, 50)},
          {"p90", nearest_rank(values, 90)},
          {"p95", nearest_rank(values, 95)},
          {"p99", nearest_rank(values, 99)},
          {"max", values.empty() ? 0 : values.back()},
          {"min", values.empty() ? 0 : values.front()}};
}

}  // namespace serve_load
