// A fixed pool of worker threads with a blocking parallel_for, for the CPU kernels that are not GEMMs (those run
// on oneDNN's or OpenBLAS's own threads). The calling thread takes part in the work, so a pool of N threads uses
// N cores with N-1 workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace steno {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // num_threads >= 1; 1 means "run everything on the caller"
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(chunk_begin, chunk_end) over disjoint chunks covering [begin, end), each at least `grain` long
  // (except the last), and returns when all are done. The first exception thrown by fn is rethrown here.
  // Not reentrant: fn must not call parallel_for on the same pool.
  void parallel_for(int64_t begin, int64_t end, int64_t grain,
                    const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop();

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_end_ = 0, job_grain_ = 1, next_ = 0;
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

// Threads steno uses by default: STENO_NUM_THREADS if set, else the number of online CPUs.
int default_num_threads();

}  // namespace steno
