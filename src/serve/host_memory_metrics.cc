#include "serve/host_memory_metrics.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "steno/core/allocator.h"
#include "steno/core/cuda.h"

namespace steno::serve {
namespace {

prometheus::MetricFamily gauge_family(std::string name, std::string help) {
  return {std::move(name), std::move(help), prometheus::MetricType::Gauge, {}};
}

void add(prometheus::MetricFamily& family, double value, std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  family.metric.push_back(std::move(m));
}

void add_pool(prometheus::MetricFamily& family, const char* pool, const PoolStats& s) {
  add(family, static_cast<double>(s.bytes_in_use), {{"pool", pool}, {"state", "in_use"}});
  add(family, static_cast<double>(s.bytes_cached), {{"pool", pool}, {"state", "cached"}});
}

// Resident pages from /proc/self/statm (its second field); -1 where it cannot be read.
double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long long size = 0, resident = -1;
  if (!(statm >> size >> resident)) return -1;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double open_fds() {
  std::error_code ec;
  double n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return ec ? -1 : n - 1;  // less the descriptor the listing itself holds open
}

}  // namespace

std::vector<prometheus::MetricFamily> host_memory_families() {
  std::vector<prometheus::MetricFamily> out;
  auto rss = gauge_family("process_resident_memory_bytes", "Resident memory size in bytes.");
  add(rss, resident_bytes());
  out.push_back(std::move(rss));
  auto fds = gauge_family("process_open_fds", "Number of open file descriptors.");
  add(fds, open_fds());
  out.push_back(std::move(fds));

  auto caches = gauge_family("steno_host_cache_bytes",
                             "Bytes of the caching host allocators, handed out (in_use) and kept for reuse (cached)");
  add_pool(caches, "host", default_cpu_allocator().stats());
  if (const auto pinned = cuda::pinned_pool_stats()) add_pool(caches, "pinned", *pinned);
  out.push_back(std::move(caches));

#if defined(__GLIBC__)
  const struct mallinfo2 mi = mallinfo2();
  auto heap = gauge_family("steno_malloc_bytes",
                           "glibc's heap: bytes allocated (in_use) and held free without handing them back (free)");
  add(heap, static_cast<double>(mi.uordblks + mi.hblkhd), {{"state", "in_use"}});
  add(heap, static_cast<double>(mi.fordblks), {{"state", "free"}});
  out.push_back(std::move(heap));
#endif
  return out;
}

}  // namespace steno::serve
