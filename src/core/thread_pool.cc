#include "steno/core/thread_pool.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "steno/core/error.h"

namespace steno {

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  STENO_CHECK(num_threads >= 1, "thread pool needs at least one thread, got {}", num_threads);
}

void ThreadPool::parallel_for(int64_t begin, int64_t end, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) const {
  if (end <= begin) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t n = end - begin;
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int threads = static_cast<int>(std::min<int64_t>(num_threads_, max_chunks));
  if (threads <= 1 || omp_in_parallel()) {
    fn(begin, end);
    return;
  }
  // Chunks: enough to balance the load (4 per thread), none smaller than the grain; handed out dynamically.
  const int64_t chunk = std::max(grain, (n + threads * 4 - 1) / (threads * 4));
  std::atomic<int64_t> next{begin};
  std::exception_ptr error;
  std::mutex error_mu;
#pragma omp parallel num_threads(threads)
  {
    for (;;) {
      const int64_t b = next.fetch_add(chunk);
      if (b >= end) break;
      try {
        fn(b, std::min(end, b + chunk));
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
        next.store(end);  // stop handing out work; exceptions must not leave the parallel region
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

int default_num_threads() {
  if (const char* env = std::getenv("STENO_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace steno
