#include "steno/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace steno {
namespace {

TEST(ThreadPool, CoversRangeExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 1000, 12345}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(0, n, 16, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n;
    }
  }
}

TEST(ThreadPool, ManyJobsInARow) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int job = 0; job < 500; ++job)
    pool.parallel_for(0, 100, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
  EXPECT_EQ(sum.load(), 500 * 4950);
}

TEST(ThreadPool, RethrowsWorkerExceptions) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(0, 1000, 1,
                                 [](int64_t b, int64_t) {
                                   if (b >= 500) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> count{0};
  pool.parallel_for(0, 10, 1, [&](int64_t b, int64_t e) { count += int(e - b); });
  EXPECT_EQ(count.load(), 10);
}

}  // namespace
}  // namespace steno
