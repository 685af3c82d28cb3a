// The dynamic batcher's decisions, without threads and without reading a clock: every call takes `now`, so tests
// drive it with a fake clock and DynamicBatcher (batcher.h) wraps it with a mutex and condition variables.
//
// Triton's dynamic batcher semantics (max batch size, max queue delay, preferred sizes, priorities), made
// length-aware:
//   - A batch grows from a head request (the best priority -- lowest value, 0 meaning the configured default
//     level -- then the earliest queued) by adding the queued requests nearest in length, best priority first,
//     skipping any that would push the batch's padding waste above max_padding_waste. Clips of any length batch
//     together; none is padded beyond the bound (Triton batches variable-length inputs only when their shapes are
//     identical). Strict priorities: under sustained load of better priority, worse requests wait (as in Triton).
//     Pieces of long requests (serve/piecewise.h) batch with pieces only.
//   - The batch is released at once when it reaches max_batch_size or (truncated to) the largest preferred size it
//     can fill; otherwise when the oldest queued request has waited max_queue_delay (then at whatever size it has).
//   - Requests whose deadline has passed or that were cancelled leave the queue before any compute is spent on
//     them; a full queue rejects at once with a Retry-After hint from the recent throughput.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "serve/batch.h"
#include "serve/completion.h"
#include "serve/rate_meter.h"

namespace steno::serve {

struct BatcherConfig {
  int max_batch_size = 16;
  std::chrono::microseconds max_queue_delay{10'000};  // Triton's default is 0: batch only what is already queued
  std::vector<int> preferred_batch_sizes;             // empty: none (Triton's advice for most models)
  // Bound on 1 - (real samples / (batch size x longest clip)): the share of the batch's compute spent on padding.
  // 0 batches only identical lengths; 1 disables the bound.
  double max_padding_waste = 0.3;
  size_t max_queue_size = 1024;  // queued requests (not counting running batches); 0 = unbounded
  // The level of requests that state none (priority 0), as Triton's default_priority_level: 1 is the highest, so
  // clients can ask to go ahead of the default traffic (1..4) or behind it (6 and up).
  int default_priority_level = 5;
  // A released batch is split evenly over the executors waiting for work at that moment (DynamicBatcher), so that
  // executors holding part of a GPU each (MPS clients, green lanes) run it side by side instead of one running all
  // of it while the others idle. Off by default: Triton hands a batch to one instance.
  bool spread_over_idle_executors = false;
  void validate() const;         // throws steno::Error(kInvalidArgument) naming the bad field
};

// What the grouping needs to know about a queued request.
struct QueuedItem {
  int64_t length = 0;  // PCM samples
  int priority = 0;
  uint64_t seq = 0;  // admission order
  bool piece = false;  // a piece of a long request (serve/piecewise.h): batched with pieces only
};

// The batch grown from items[head]: indices into `items`, head first, then in the order they were added, so that
// every prefix also respects the bound (truncating to a preferred size keeps it). Pure.
std::vector<size_t> group_by_length(std::span<const QueuedItem> items, size_t head, int max_batch_size,
                                    double max_padding_waste);

class BatchQueue {
 public:
  explicit BatchQueue(BatcherConfig config);

  // Queues the request, or returns its rejection: kCancelled, kDeadlineExceeded, or kQueueFull with
  // retry_after_s set.
  std::optional<Completion> admit(std::unique_ptr<TranscriptionRequest> request, Clock::time_point now);

  // Takes out every cancelled request and every request whose deadline is at or before `now`.
  std::vector<Completion> expire(Clock::time_point now);

  // The next batch if one is due at `now`; `flush` releases whatever the head's group holds without waiting
  // (draining). `max_size` (0: none) caps the batch below max_batch_size -- an executor that ran out of memory
  // asks for smaller batches -- and a group that reaches the cap is released at once. Call expire() first: this
  // does not look at deadlines or cancellation.
  std::optional<Batch> cut(Clock::time_point now, bool flush = false, int max_size = 0);

  // When cut() would release a batch if nothing else happens (the oldest request's max_queue_delay); nullopt when
  // empty.
  std::optional<Clock::time_point> next_release() const;
  // The earliest deadline of a queued request; nullopt when none has one.
  std::optional<Clock::time_point> next_deadline() const;

  // Whole seconds a rejected client should wait: the queue's length over the recent release rate, in [1, 60].
  double retry_after_s(Clock::time_point now) const;

  // Takes out everything queued (shutting down without draining).
  std::vector<std::unique_ptr<TranscriptionRequest>> take_all();

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const BatcherConfig& config() const { return config_; }

 private:
  struct Entry {
    std::unique_ptr<TranscriptionRequest> request;
    Clock::time_point enqueued;  // Triton measures the queue delay from enqueueing, not from arrival
    uint64_t seq;
  };
  BatcherConfig config_;
  std::vector<Entry> entries_;  // admission order
  uint64_t next_seq_ = 0;
  RateMeter released_;  // requests per second leaving the queue in batches
};

}  // namespace steno::serve
