#include "serve/batch_queue.h"
#include "serve/stage_durations.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <iterator>
#include <tuple>

#include "steno/core/error.h"

namespace steno::serve {
namespace {

bool is_cancelled(const TranscriptionRequest& r) { return r.cancelled && r.cancelled->load(); }

}  // namespace

void BatcherConfig::validate() const {
  STENO_CHECK(max_batch_size >= 1, "max_batch_size must be >= 1, got {}", max_batch_size);
  STENO_CHECK(max_queue_delay.count() >= 0, "max_queue_delay must be >= 0");
  STENO_CHECK(default_priority_level >= 1, "default_priority_level must be >= 1, got {}", default_priority_level);
  STENO_CHECK(max_padding_waste >= 0 && max_padding_waste <= 1, "max_padding_waste must be in [0, 1], got {}",
              max_padding_waste);
  for (int p : preferred_batch_sizes)
    STENO_CHECK(p >= 1 && p <= max_batch_size, "preferred batch size {} is not in [1, max_batch_size = {}]", p,
                max_batch_size);
}

std::vector<size_t> group_by_length(std::span<const QueuedItem> items, size_t head, int max_batch_size,
                                    double max_padding_waste) {
  const QueuedItem& h = items[head];
  std::vector<size_t> candidates;
  candidates.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i)
    if (i != head) candidates.push_back(i);
  // Better priority first (a batch serves the urgent requests before filling up with others), then nearest in
  // length (least padding), then first come.
  const auto key = [&](size_t i) {
    return std::make_tuple(items[i].priority, std::llabs(items[i].length - h.length), items[i].seq);
  };
  std::sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) { return key(a) < key(b); });

  std::vector<size_t> group{head};
  int64_t longest = h.length, total = h.length;
  for (size_t i : candidates) {
    if (static_cast<int>(group.size()) >= max_batch_size) break;
    // Pieces of long requests batch among themselves: a short request's batch never grows by a piece's compute
    // (on a CPU a batch costs the sum of its clips), and pieces fill batches of their own.
    if (items[i].piece != h.piece) continue;
    const int64_t new_longest = std::max(longest, items[i].length);
    const int64_t new_total = total + items[i].length;
    const double padded = static_cast<double>(new_longest) * static_cast<double>(group.size() + 1);
    const double waste = new_longest == 0 ? 0.0 : 1.0 - static_cast<double>(new_total) / padded;
    if (waste > max_padding_waste + 1e-12) continue;  // too far in length: it waits for a batch of its own size
    group.push_back(i);
    longest = new_longest;
    total = new_total;
  }
  return group;
}

BatchQueue::BatchQueue(BatcherConfig config) : config_(std::move(config)) {
  config_.validate();
  std::sort(config_.preferred_batch_sizes.begin(), config_.preferred_batch_sizes.end());
}

std::optional<Completion> BatchQueue::admit(std::unique_ptr<TranscriptionRequest> request, Clock::time_point now) {
  if (is_cancelled(*request)) return reject(std::move(request), Outcome::kCancelled, "cancelled by the client");
  if (request->deadline <= now)
    return reject(std::move(request), Outcome::kDeadlineExceeded, "deadline passed before the request was queued");
  if (config_.max_queue_size > 0 && entries_.size() >= config_.max_queue_size) {
    Completion c = reject(std::move(request), Outcome::kQueueFull,
                          fmt::format("queue full ({} requests waiting)", entries_.size()));
    c.response.retry_after_s = retry_after_s(now);
    return c;
  }
  entries_.push_back(Entry{std::move(request), now, next_seq_++});
  return std::nullopt;
}

std::vector<Completion> BatchQueue::expire(Clock::time_point now) {
  std::vector<Completion> out;
  std::vector<Entry> kept;
  kept.reserve(entries_.size());
  for (Entry& e : entries_) {
    const double waited = ms_between(e.enqueued, now);
    if (is_cancelled(*e.request)) {
      out.push_back(reject(std::move(e.request), Outcome::kCancelled, "cancelled by the client", waited));
    } else if (e.request->deadline <= now) {
      out.push_back(reject(std::move(e.request), Outcome::kDeadlineExceeded,
                           fmt::format("deadline exceeded after {:.0f} ms in the queue", waited), waited));
    } else {
      kept.push_back(std::move(e));
    }
  }
  entries_ = std::move(kept);
  return out;
}

std::optional<Batch> BatchQueue::cut(Clock::time_point now, bool flush, int max_size) {
  if (entries_.empty()) return std::nullopt;
  const int cap = max_size > 0 ? std::min(max_size, config_.max_batch_size) : config_.max_batch_size;
  std::vector<QueuedItem> items(entries_.size());
  size_t head = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const int priority = entries_[i].request->priority;
    items[i] = {static_cast<int64_t>(entries_[i].request->pcm.size()),
                priority == 0 ? config_.default_priority_level : priority, entries_[i].seq,
                entries_[i].request->piece};
    if (items[i].priority < items[head].priority) head = i;  // entries_ is in admission order: ties keep the first
  }
  std::vector<size_t> group = group_by_length(items, head, cap, config_.max_padding_waste);

  const int n = static_cast<int>(group.size());
  // entries_[0] is the oldest queued request, whatever its priority (Triton's delay is the oldest request's).
  const bool overdue = now - entries_.front().enqueued >= config_.max_queue_delay;
  bool release = n >= cap || flush || overdue;
  if (!release) {
    // The largest preferred size this group fills goes at once; every prefix of `group` respects the bound.
    for (auto it = config_.preferred_batch_sizes.rbegin(); it != config_.preferred_batch_sizes.rend(); ++it) {
      if (*it <= n) {
        group.resize(static_cast<size_t>(*it));
        release = true;
        break;
      }
    }
  }
  if (!release) return std::nullopt;

  Batch batch;
  batch.formed = now;
  std::vector<int64_t> lengths;
  for (size_t i : group) {
    lengths.push_back(items[i].length);
    batch.enqueued.push_back(entries_[i].enqueued);
    batch.requests.push_back(std::move(entries_[i].request));
  }
  batch.padding_waste = padding_waste(lengths);
  std::erase_if(entries_, [](const Entry& e) { return e.request == nullptr; });
  released_.record(now, static_cast<int64_t>(batch.requests.size()));
  return batch;
}

std::optional<Clock::time_point> BatchQueue::next_release() const {
  if (entries_.empty()) return std::nullopt;
  return entries_.front().enqueued + config_.max_queue_delay;
}

std::optional<Clock::time_point> BatchQueue::next_deadline() const {
  std::optional<Clock::time_point> earliest;
  for (const Entry& e : entries_)
    if (e.request->deadline != Clock::time_point::max() && (!earliest || e.request->deadline < *earliest))
      earliest = e.request->deadline;
  return earliest;
}

double BatchQueue::retry_after_s(Clock::time_point now) const {
  const double rate = released_.rate(now);
  if (rate <= 0) return 1;
  return std::clamp(std::ceil(static_cast<double>(entries_.size()) / rate), 1.0, 60.0);
}

std::vector<std::unique_ptr<TranscriptionRequest>> BatchQueue::take_all() {
  std::vector<std::unique_ptr<TranscriptionRequest>> out;
  for (Entry& e : entries_) out.push_back(std::move(e.request));
  entries_.clear();
  return out;
}

}  // namespace steno::serve
