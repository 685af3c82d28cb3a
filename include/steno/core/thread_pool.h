// The CPU threads of one executor, with a blocking parallel_for for the kernels that are not GEMMs.
//
// The threads are an OpenMP team, deliberately: oneDNN (Debian's build) runs its GEMMs on OpenMP, and OpenMP
// threads spin for a while after each parallel region. A second set of threads of our own on the same cores
// would fight those spinning threads after every GEMM (measured: a 2-thread encoder step went from 5 ms to
// 200 ms). Sharing one team, every op of a forward pass reuses the same hot threads.
#pragma once

#include <cstdint>
#include <functional>

namespace steno {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // num_threads >= 1; 1 means "run everything on the caller"
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(chunk_begin, chunk_end) over disjoint chunks covering [begin, end), each at least `grain` long
  // (except the last), and returns when all are done. The first exception thrown by fn is rethrown here.
  // Nested calls (fn calling parallel_for) run serially on the calling thread.
  void parallel_for(int64_t begin, int64_t end, int64_t grain,
                    const std::function<void(int64_t, int64_t)>& fn) const;

 private:
  int num_threads_;
};

// Threads steno uses by default: STENO_NUM_THREADS if set, else the number of online CPUs.
int default_num_threads();

}  // namespace steno
