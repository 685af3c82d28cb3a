#include "serve/batcher.h"

#include <algorithm>

#include "steno/core/error.h"
#include "serve/stage_durations.h"

namespace steno::serve {
namespace {

// Cancellation is a flag the front end sets without telling us; the reaper looks at least this often while
// requests are queued.
constexpr auto kCancelSweep = std::chrono::milliseconds(100);

}  // namespace

DynamicBatcher::DynamicBatcher(BatcherConfig config, Hooks hooks)
    : hooks_(std::move(hooks)), queue_(std::move(config)) {
  STENO_CHECK(hooks_.complete != nullptr, "DynamicBatcher needs a completion function");
  reaper_ = std::thread([this] { reap(); });
}

DynamicBatcher::~DynamicBatcher() {
  shutdown();
  std::vector<std::unique_ptr<TranscriptionRequest>> left;
  {
    std::lock_guard lock(mu_);
    stop_reaper_ = true;
    left = queue_.take_all();
    for (Batch& b : requeued_)
      for (auto& r : b.requests) left.push_back(std::move(r));
    requeued_.clear();
    size_changed();
  }
  reaper_cv_.notify_all();
  reaper_.join();
  for (auto& r : left)
    hooks_.complete(reject(std::move(r), Outcome::kShuttingDown, "server shut down before the request ran"));
}

void DynamicBatcher::submit(std::unique_ptr<TranscriptionRequest> request) {
  std::unique_lock lock(mu_);
  const auto now = Clock::now();
  if (shutting_down_) {
    lock.unlock();
    hooks_.complete(reject(std::move(request), Outcome::kShuttingDown, "server is shutting down"));
    return;
  }
  const Clock::time_point deadline = request->deadline;
  if (auto rejected = queue_.admit(std::move(request), now)) {
    lock.unlock();
    hooks_.complete(std::move(*rejected));
    return;
  }
  size_changed();
  // The reaper sleeps until its next planned look (or indefinitely on an empty queue): wake it when this request
  // must be looked at sooner.
  const bool wake_reaper = !reaper_wake_ || deadline < *reaper_wake_;
  lock.unlock();
  if (wake_reaper) reaper_cv_.notify_one();
  work_cv_.notify_one();
}

std::optional<Batch> DynamicBatcher::next_batch() { return pull(0, Clock::time_point::max()).batch; }

DynamicBatcher::Pull DynamicBatcher::pull(int max_size, Clock::time_point until) {
  std::unique_lock lock(mu_);
  for (;;) {
    const auto now = Clock::now();
    std::vector<Completion> expired = queue_.expire(now);  // before they cost compute
    for (Completion& c : expire_requeued(now)) expired.push_back(std::move(c));
    if (!expired.empty()) {
      size_changed();
      finish(std::move(expired), lock);
      continue;
    }
    std::optional<Batch> batch;
    if (!requeued_.empty()) {
      Batch& front = requeued_.front();
      if (max_size > 0 && front.requests.size() > static_cast<size_t>(max_size)) {
        batch = split_front(front, static_cast<size_t>(max_size));
      } else {
        batch = std::move(front);
        requeued_.pop_front();
      }
    } else {
      batch = queue_.cut(now, /*flush=*/shutting_down_, max_size);
      if (batch && idle_ > 0 && queue_.config().spread_over_idle_executors) batch = spread(std::move(*batch));
    }
    if (batch) {
      size_changed();
      const size_t ready = requeued_.size();  // spread pieces among them, one for each waiting executor
      const bool more = !queue_.empty() || ready > 0;
      lock.unlock();
      if (ready > 1)
        work_cv_.notify_all();
      else if (more)
        work_cv_.notify_one();  // another executor may find a batch due too
      return Pull{std::move(batch), false};
    }
    // A flushing cut() only comes back empty-handed on an empty queue.
    if (shutting_down_) return Pull{std::nullopt, true};
    if (now >= until) return Pull{};
    Clock::time_point wake = until;
    if (const auto release = queue_.next_release()) wake = std::min(wake, *release);
    ++idle_;
    if (wake == Clock::time_point::max())
      work_cv_.wait(lock);
    else
      work_cv_.wait_until(lock, wake);
    --idle_;
  }
}

Batch DynamicBatcher::spread(Batch batch) {
  const size_t n = batch.requests.size();
  const size_t pieces = std::min(n, idle_ + 1);  // this executor and every waiting one
  if (pieces < 2) return batch;
  // The batch's order keeps nearest lengths together (group_by_length), so consecutive pieces pad little. Sizes
  // differ by at most one, the larger first.
  std::vector<Batch> parts;
  for (size_t i = 0; i < pieces - 1; ++i) {
    parts.push_back(split_front(batch, n / pieces + (i < n % pieces ? 1 : 0)));
  }
  parts.push_back(std::move(batch));
  for (size_t i = parts.size() - 1; i >= 1; --i) requeued_.push_front(std::move(parts[i]));
  return std::move(parts[0]);
}

void DynamicBatcher::requeue(Batch batch) {
  if (batch.requests.empty()) return;
  {
    std::lock_guard lock(mu_);
    requeued_.push_back(std::move(batch));
    size_changed();
  }
  work_cv_.notify_one();
  reaper_cv_.notify_all();  // it may be asleep until told: it watches requeued deadlines too
}

std::vector<Completion> DynamicBatcher::expire_requeued(Clock::time_point now) {
  std::vector<Completion> out;
  for (Batch& b : requeued_) {
    const size_t before = out.size();
    for (size_t i = 0; i < b.requests.size(); ++i) {
      TranscriptionRequest& r = *b.requests[i];
      const double waited = ms_between(b.enqueued[i], now);
      if (r.cancelled && r.cancelled->load())
        out.push_back(reject(std::move(b.requests[i]), Outcome::kCancelled, "cancelled by the client", waited));
      else if (r.deadline <= now)
        out.push_back(reject(std::move(b.requests[i]), Outcome::kDeadlineExceeded,
                             fmt::format("deadline exceeded after {:.0f} ms waiting to run", waited), waited));
    }
    if (out.size() == before) continue;
    // Drop the completed requests with their queue times.
    size_t kept = 0;
    for (size_t i = 0; i < b.requests.size(); ++i) {
      if (!b.requests[i]) continue;
      b.requests[kept] = std::move(b.requests[i]);
      b.enqueued[kept] = b.enqueued[i];
      ++kept;
    }
    b.requests.resize(kept);
    b.enqueued.resize(kept);
  }
  std::erase_if(requeued_, [](const Batch& b) { return b.requests.empty(); });
  return out;
}

size_t DynamicBatcher::pending() const {
  size_t n = queue_.size();
  for (const Batch& b : requeued_) n += b.requests.size();
  return n;
}

void DynamicBatcher::shutdown() {
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
  }
  work_cv_.notify_all();
}

size_t DynamicBatcher::queued() const {
  std::lock_guard lock(mu_);
  return pending();
}

size_t DynamicBatcher::idle_executors() const {
  std::lock_guard lock(mu_);
  return idle_;
}

void DynamicBatcher::reap() {
  std::unique_lock lock(mu_);
  while (!stop_reaper_) {
    const auto now = Clock::now();
    // Requeued batches (their worker died) wait too, possibly while every executor is restarting: their expired
    // and cancelled requests are answered on time as well.
    std::vector<Completion> expired = queue_.expire(now);
    for (Completion& c : expire_requeued(now)) expired.push_back(std::move(c));
    if (!expired.empty()) {
      size_changed();
      finish(std::move(expired), lock);
      continue;
    }
    if (queue_.empty() && requeued_.empty()) {
      reaper_wake_.reset();
      reaper_cv_.wait(lock);
    } else {
      Clock::time_point wake = now + kCancelSweep;
      if (const auto deadline = queue_.next_deadline()) wake = std::min(wake, *deadline);
      for (const Batch& b : requeued_)
        for (const auto& r : b.requests) wake = std::min(wake, r->deadline);
      reaper_wake_ = wake;
      reaper_cv_.wait_until(lock, wake);
    }
  }
}

void DynamicBatcher::finish(std::vector<Completion> done, std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  for (Completion& c : done) hooks_.complete(std::move(c));
  lock.lock();
}

void DynamicBatcher::size_changed() {
  if (hooks_.queue_size_changed) hooks_.queue_size_changed(pending());
}

}  // namespace steno::serve
