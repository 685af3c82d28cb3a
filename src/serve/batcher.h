// One model's dynamic batcher: a thread-safe BatchQueue (batch_queue.h has the policy) that executors pull
// batches from, plus a reaper thread that completes expired and cancelled requests on time even while every
// executor is busy. Executors that lose a batch (a worker process died) hand it back with requeue(). With
// BatcherConfig::spread_over_idle_executors, a batch released while other executors wait is shared among them.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "serve/batch_queue.h"

namespace steno::serve {

class DynamicBatcher {
 public:
  struct Hooks {
    CompleteFn complete;                              // rejections and expiries (required)
    std::function<void(size_t)> queue_size_changed;  // after every change, with the new size (optional)
  };

  DynamicBatcher(BatcherConfig config, Hooks hooks);
  // Completes anything still queued with kShuttingDown (callers drain first: shutdown(), then executors finish).
  ~DynamicBatcher();
  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

  // Queues the request or completes it at once (queue full, deadline passed, cancelled, shutting down).
  void submit(std::unique_ptr<TranscriptionRequest> request);

  // Blocks until a batch is due and returns it; after shutdown() returns the remaining requests in batches
  // without waiting for the queue delay, then nullopt once the queue is empty.
  std::optional<Batch> next_batch();

  // What pull() got: a batch; nothing yet (`until` came first); or `finished`: shut down and nothing left.
  struct Pull {
    std::optional<Batch> batch;
    bool finished = false;
  };
  // What the executor pool's threads call: a batch of at most `max_size` requests (0: max_batch_size), as
  // next_batch() gives, or nothing once `until` has passed (an executor that must look after something while idle,
  // a worker process's heartbeats, passes a near `until`).
  Pull pull(int max_size, Clock::time_point until);

  // Takes back a batch an executor could not finish (its worker process died), to run again before any new
  // batch, also while draining. Its requests' deadlines and cancellation are checked again when it is pulled; a
  // requeued batch larger than the puller's max_size is split.
  void requeue(Batch batch);

  // Stops accepting (later submits complete with kShuttingDown) and wakes every waiting executor. Idempotent.
  void shutdown();

  size_t queued() const;  // requests waiting: queued, and requeued by executors
  size_t idle_executors() const;  // executors waiting in pull() for a batch now
  const BatcherConfig& config() const { return queue_.config(); }

 private:
  void reap();
  // Completes the requeued requests (handed back, or spread pieces) that were cancelled or whose deadline passed.
  // With mu_ held.
  std::vector<Completion> expire_requeued(Clock::time_point now);
  size_t pending() const;  // queued plus requeued requests, with mu_ held
  // With spread_over_idle_executors: `batch` cut into one piece per idle executor (up to one request each), the
  // first returned and the others put first in requeued_ for the executors waiting. With mu_ held.
  Batch spread(Batch batch);
  // Runs the completions outside the lock: a `done` callback may call back into the service.
  void finish(std::vector<Completion> done, std::unique_lock<std::mutex>& lock);
  void size_changed();  // with mu_ held

  Hooks hooks_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;    // executors waiting in next_batch()
  std::condition_variable reaper_cv_;  // the reaper waiting for the next deadline or sweep
  BatchQueue queue_;
  std::deque<Batch> requeued_;  // handed back by executors (oldest first), and spread pieces (first)
  size_t idle_ = 0;             // executors waiting in pull()
  bool shutting_down_ = false;
  bool stop_reaper_ = false;
  std::optional<Clock::time_point> reaper_wake_;  // when the reaper will next look; nullopt: sleeping until told
  std::thread reaper_;
};

}  // namespace steno::serve
