// One model's executors at work: a thread per executor (executor.h) that brings it up, pulls batches from the
// model's DynamicBatcher when it is idle (so the next batch goes to an executor that is free), runs them and
// completes every request exactly once. What happens around a batch is the same for every kind of executor:
//   - done: each request is answered with its transcript; the batch counts in the statistics.
//   - failed: each request is answered with the error -- except out of memory (kResourceExhausted), which splits
//     the batch in halves and runs them, down to single requests, and lowers the executor's batch cap (batch_cap.h).
//   - lost (a worker process crashed or hung): the batch is replayed, never lost or answered twice. Each request is
//     charged one fault and requeued alone, so a poison request cannot take innocent ones down with it again; a
//     request charged twice fails alone ("request crashed the worker twice; not retried"). A batch lost with its
//     group (Loss::kGroup) is requeued whole, uncharged. Replays go before new batches; deadlines still apply.
//   - with isolate_suspects (executors that fail together: MPS clients of one GPU, where one client's fault faults
//     them all), a batch holding a request that was in a lost batch runs with no other batch in flight: otherwise
//     innocent requests replayed beside a poison one would be lost with it again, charged twice and failed.
//   - a lost executor is started again after a backoff (restart.backoff_initial, doubling per consecutive loss or
//     failed start up to restart.backoff_max; reset by a batch that runs). While draining, one that fails to start
//     restart.attempts_while_draining times in a row is given up, and the requests left fail.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "serve/batch_cap.h"
#include "serve/batcher.h"
#include "serve/executor.h"
#include "serve/statistics.h"

namespace steno::serve {

struct RestartPolicy {
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{5'000};
  int attempts_while_draining = 3;
};

struct PoolPolicy {
  OomPolicy oom{};
  RestartPolicy restart{};
  bool isolate_suspects = false;
};

class ExecutorPool {
 public:
  // Starts every executor, side by side, each on its own thread, and waits until all are up; throws kUnavailable
  // naming the first that could not start, and why (the others are stopped). Then each thread pulls from
  // `batcher`, which must outlive the pool. Every request is completed through `complete`. `stats` may be null.
  ExecutorPool(std::vector<std::unique_ptr<Executor>> executors, DynamicBatcher& batcher, CompleteFn complete,
               ModelStatistics* stats, PoolPolicy policy = {});
  ~ExecutorPool();  // shuts the batcher down, lets the executors finish what is queued, stops them
  ExecutorPool(const ExecutorPool&) = delete;
  ExecutorPool& operator=(const ExecutorPool&) = delete;

  // Waits for every executor's thread to finish (after the batcher's shutdown); they stop their executors.
  // Idempotent.
  void join();
  int size() const { return static_cast<int>(slots_.size()); }
  // The largest batch executor `i` asks for now: the model's max_batch_size until it runs out of memory.
  int batch_cap(int i) const;
  // Executors up now, and how long none has been (nullopt while one is up): what the health probes read.
  int executors_up() const { return up_count_.load(); }
  std::optional<Clock::duration> none_up_for() const;

 private:
  struct Slot;
  enum class Go { kWait, kServe, kAbort };

  void thread_main(Slot& s);
  void serve(Slot& s);
  bool bring_up(Slot& s);
  // Runs `batch` (part of one the executor took at `start`), splitting it on out of memory; completes or replays
  // every request of it exactly once. True when a request of it ran out of memory alone.
  bool run(Slot& s, Batch& batch, Clock::time_point start);
  void complete(Batch& batch, BatchRun* done, const std::string& error, Clock::time_point start,
                Clock::time_point run_start, Clock::time_point end);
  void replay(Batch batch, const BatchRun& lost);
  void fail_remaining(const std::string& why);
  void count_up(Slot& s, bool up);  // the executor's up or down in its device's series, once per change
  void lost(Slot& s, Loss loss);    // the executor went down with `loss`

  class RunGate;  // batches side by side, a suspect's alone (isolate_suspects)

  DynamicBatcher& batcher_;
  CompleteFn complete_;
  ModelStatistics* stats_;
  PoolPolicy policy_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::unique_ptr<RunGate> gate_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> up_count_{0};
  mutable std::mutex up_mu_;
  Clock::time_point none_up_since_ = Clock::now();  // while up_count_ is 0
  std::mutex join_mu_;

  // Start-up: each thread reports its executor's first start, then waits for the verdict on all of them.
  std::mutex start_mu_;
  std::condition_variable start_cv_;
  int reported_ = 0;
  Go go_ = Go::kWait;
};

}  // namespace steno::serve
