// The server process's host memory, read at each scrape of /metrics, so that a soak (bench/soak_load.py) and an
// operator can tell a leak from a cache filling towards its bound:
//   process_resident_memory_bytes  gauge  resident set (the name Prometheus' client libraries give it)
//   process_open_fds               gauge  open file descriptors
//   steno_host_cache_bytes         gauge  {pool="host"|"pinned", state="in_use"|"cached"}: the caching host
//                                         allocators' blocks handed out and kept for reuse (pinned: the CUDA
//                                         backend's page-locked staging, absent in a build without CUDA)
//   steno_malloc_bytes             gauge  {state="in_use"|"free"}: glibc's heap, and what it holds free without
//                                         handing it back (fragmentation shows here)
// Only this process's: engines in worker processes are in steno_worker_memory_bytes.
#pragma once

#include <prometheus/metric_family.h>

#include <vector>

namespace steno::serve {

std::vector<prometheus::MetricFamily> host_memory_families();

}  // namespace steno::serve
