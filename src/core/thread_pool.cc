#include "steno/core/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "steno/core/error.h"

namespace steno {

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  STENO_CHECK(num_threads >= 1, "thread pool needs at least one thread, got {}", num_threads);
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

// Workers and the caller pull chunks from a shared counter until the range is exhausted.
void ThreadPool::parallel_for(int64_t begin, int64_t end, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (end <= begin) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t n = end - begin;
  if (workers_.empty() || n <= grain) {
    fn(begin, end);
    return;
  }
  // Chunks: enough to balance the load, none smaller than the grain.
  const int64_t chunk = std::max(grain, (n + num_threads_ * 4 - 1) / (num_threads_ * 4));
  std::unique_lock lock(mu_);
  job_ = &fn;
  next_ = begin;
  job_end_ = end;
  job_grain_ = chunk;
  error_ = nullptr;
  ++generation_;
  active_ = 1;  // the caller
  work_cv_.notify_all();
  while (next_ < job_end_) {
    const int64_t b = next_;
    const int64_t e = std::min(job_end_, b + job_grain_);
    next_ = e;
    lock.unlock();
    try {
      fn(b, e);
    } catch (...) {
      lock.lock();
      if (!error_) error_ = std::current_exception();
      next_ = job_end_;
      continue;
    }
    lock.lock();
  }
  --active_;
  done_cv_.wait(lock, [this] { return active_ == 0; });
  job_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || (generation_ != seen && job_ != nullptr && next_ < job_end_); });
    if (stop_) return;
    seen = generation_;
    ++active_;
    const auto* fn = job_;
    while (next_ < job_end_) {
      const int64_t b = next_;
      const int64_t e = std::min(job_end_, b + job_grain_);
      next_ = e;
      lock.unlock();
      try {
        (*fn)(b, e);
      } catch (...) {
        lock.lock();
        if (!error_) error_ = std::current_exception();
        next_ = job_end_;
        continue;
      }
      lock.lock();
    }
    if (--active_ == 0) done_cv_.notify_all();
  }
}

int default_num_threads() {
  if (const char* env = std::getenv("STENO_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace steno
