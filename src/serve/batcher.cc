#include "steno/serve/batcher.h"

#include <algorithm>

#include "steno/core/error.h"

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

std::optional<Batch> DynamicBatcher::next_batch() {
  std::unique_lock lock(mu_);
  for (;;) {
    const auto now = Clock::now();
    std::vector<Completion> expired = queue_.expire(now);  // before they cost compute
    if (!expired.empty()) {
      size_changed();
      finish(std::move(expired), lock);
      continue;
    }
    if (std::optional<Batch> batch = queue_.cut(now, /*flush=*/shutting_down_)) {
      size_changed();
      const bool more = !queue_.empty();
      lock.unlock();
      if (more) work_cv_.notify_one();  // another executor may find a batch due too
      return batch;
    }
    if (shutting_down_) return std::nullopt;  // a flushing cut() only comes back empty-handed on an empty queue
    if (const auto release = queue_.next_release())
      work_cv_.wait_until(lock, *release);
    else
      work_cv_.wait(lock);
  }
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
  return queue_.size();
}

void DynamicBatcher::reap() {
  std::unique_lock lock(mu_);
  while (!stop_reaper_) {
    const auto now = Clock::now();
    std::vector<Completion> expired = queue_.expire(now);
    if (!expired.empty()) {
      size_changed();
      finish(std::move(expired), lock);
      continue;
    }
    if (queue_.empty()) {
      reaper_wake_.reset();
      reaper_cv_.wait(lock);
    } else {
      Clock::time_point wake = now + kCancelSweep;
      if (const auto deadline = queue_.next_deadline()) wake = std::min(wake, *deadline);
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
  if (hooks_.queue_size_changed) hooks_.queue_size_changed(queue_.size());
}

}  // namespace steno::serve
