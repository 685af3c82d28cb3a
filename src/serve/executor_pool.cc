#include "serve/executor_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "steno/core/error.h"
#include "serve/stage_durations.h"

namespace steno::serve {

BatchRun BatchRun::done(std::vector<asr::Transcript> transcripts, const asr::StageTimings& timings) {
  BatchRun r;
  r.status = Status::kDone;
  r.transcripts = std::move(transcripts);
  r.timings = timings;
  return r;
}

BatchRun BatchRun::diarized(std::vector<DiarizationResult> diarizations, const asr::StageTimings& timings) {
  BatchRun r;
  r.status = Status::kDone;
  r.diarizations = std::move(diarizations);
  r.timings = timings;
  return r;
}

BatchRun BatchRun::failed(ErrorCode code, std::string message) {
  BatchRun r;
  r.status = Status::kFailed;
  r.code = code;
  r.message = std::move(message);
  return r;
}

BatchRun BatchRun::lost(Loss loss, std::string how, std::string message) {
  BatchRun r;
  r.status = Status::kLost;
  r.loss = loss;
  r.how = std::move(how);
  r.message = std::move(message);
  return r;
}

// Lets batches run side by side, except one holding a suspect request (one that was in a lost batch), which runs
// alone: no other batch starts while it waits, and it starts once those running have ended (so a stream of
// ordinary batches cannot keep it waiting).
class ExecutorPool::RunGate {
 public:
  void enter(bool alone) {
    std::unique_lock lock(mu_);
    if (!alone) {
      cv_.wait(lock, [&] { return waiting_alone_ == 0 && !alone_running_; });
      ++running_;
      return;
    }
    ++waiting_alone_;
    cv_.wait(lock, [&] { return running_ == 0 && !alone_running_; });
    --waiting_alone_;
    alone_running_ = true;
  }
  void leave(bool alone) {
    std::lock_guard lock(mu_);
    if (alone) alone_running_ = false;
    else --running_;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  int waiting_alone_ = 0;
  bool alone_running_ = false;
};

struct ExecutorPool::Slot {
  Slot(int i, std::unique_ptr<Executor> e, int max_batch, OomPolicy oom)
      : index(i), exec(std::move(e)), cap(max_batch, oom) {}
  int index;
  std::unique_ptr<Executor> exec;
  BatchCap cap;
  int failures = 0;  // consecutive losses and failed starts: the restart backoff's exponent
  bool counted_up = false;  // as steno_device_executors_up has it
  std::optional<std::string> start_error;
  std::thread thread;
};

ExecutorPool::ExecutorPool(std::vector<std::unique_ptr<Executor>> executors, DynamicBatcher& batcher,
                           CompleteFn complete, ModelStatistics* stats, PoolPolicy policy)
    : batcher_(batcher),
      complete_(std::move(complete)),
      stats_(stats),
      policy_(policy),
      gate_(policy.isolate_suspects ? std::make_unique<RunGate>() : nullptr) {
  STENO_CHECK(!executors.empty(), "an executor pool needs at least one executor");
  STENO_CHECK(complete_ != nullptr, "an executor pool needs a completion function");
  STENO_CHECK(policy_.restart.backoff_initial.count() >= 0 &&
                  policy_.restart.backoff_max >= policy_.restart.backoff_initial,
              "restart backoff: need 0 <= initial <= max");
  const int max_batch = batcher_.config().max_batch_size;
  for (size_t i = 0; i < executors.size(); ++i) {
    STENO_CHECK(executors[i] != nullptr, "executor {} is missing", i);
    STENO_CHECK(max_batch <= executors[i]->max_batch_size(), "{} takes batches of at most {}, not {}",
                executors[i]->name(), executors[i]->max_batch_size(), max_batch);
    slots_.push_back(std::make_unique<Slot>(static_cast<int>(i), std::move(executors[i]), max_batch, policy_.oom));
    if (stats_) stats_->set_batch_cap(static_cast<int>(i), max_batch);
  }
  for (auto& s : slots_) s->thread = std::thread([this, slot = s.get()] { thread_main(*slot); });

  std::unique_lock lock(start_mu_);
  start_cv_.wait(lock, [&] { return reported_ == size(); });
  const Slot* failed = nullptr;
  for (const auto& s : slots_)
    if (s->start_error && !failed) failed = s.get();
  go_ = failed ? Go::kAbort : Go::kServe;
  lock.unlock();
  start_cv_.notify_all();
  if (!failed) return;
  for (auto& s : slots_) s->thread.join();
  fail(ErrorCode::kUnavailable, "{} could not start: {}", failed->exec->name(), *failed->start_error);
}

ExecutorPool::~ExecutorPool() {
  batcher_.shutdown();  // without it, the executors' threads would wait for batches forever
  join();
}

void ExecutorPool::join() {
  std::lock_guard lock(join_mu_);
  stopping_ = true;
  for (auto& s : slots_)
    if (s->thread.joinable()) s->thread.join();
}

int ExecutorPool::batch_cap(int i) const {
  STENO_CHECK(i >= 0 && i < size(), "no executor {} (have {})", i, size());
  return slots_[static_cast<size_t>(i)]->cap.value();
}

void ExecutorPool::thread_main(Slot& s) {
  std::optional<std::string> error;
  try {
    error = s.exec->start();
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!error) count_up(s, true);  // before the pool's constructor returns: a started server is ready
  {
    std::unique_lock lock(start_mu_);
    s.start_error = error;
    ++reported_;
    start_cv_.notify_all();
    start_cv_.wait(lock, [&] { return go_ != Go::kWait; });
  }
  if (go_ == Go::kServe) serve(s);
  s.exec->stop();
  count_up(s, false);
}

void ExecutorPool::count_up(Slot& s, bool up) {
  if (up == s.counted_up) return;
  s.counted_up = up;
  if (stats_) stats_->device_executors_up(s.exec->device_group(), up ? 1 : -1);
  std::lock_guard lock(up_mu_);
  const int now_up = up_count_ += up ? 1 : -1;
  if (now_up == 0) none_up_since_ = Clock::now();
}

std::optional<Clock::duration> ExecutorPool::none_up_for() const {
  std::lock_guard lock(up_mu_);
  if (up_count_ > 0) return std::nullopt;
  return Clock::now() - none_up_since_;
}

void ExecutorPool::lost(Slot& s, Loss loss) {
  if (loss == Loss::kFault) ++s.failures;
  count_up(s, false);
  if (stats_) stats_->device_executor_lost(s.exec->device_group());
}

void ExecutorPool::serve(Slot& s) {
  for (;;) {
    count_up(s, s.exec->up());
    if (!s.exec->up() && !bring_up(s)) return;
    count_up(s, true);
    if (const Loss loss = s.exec->check_idle(); loss != Loss::kNone) {
      lost(s, loss);
      continue;
    }
    const auto interval = s.exec->idle_check_interval();
    const Clock::time_point until =
        interval == std::chrono::milliseconds::max() ? Clock::time_point::max() : Clock::now() + interval;
    DynamicBatcher::Pull pull = batcher_.pull(s.cap.value(), until);
    if (pull.finished) return;
    if (!pull.batch) continue;
    if (const Loss loss = s.exec->check_idle(); loss != Loss::kNone) {
      // Lost while it waited for work: the batch goes to another executor, or to this one once restarted.
      batcher_.requeue(std::move(*pull.batch));
      lost(s, loss);
      continue;
    }
    run(s, *pull.batch, Clock::now());
  }
}

bool ExecutorPool::bring_up(Slot& s) {
  const RestartPolicy& p = policy_.restart;
  for (;;) {
    if (stopping_ && batcher_.queued() == 0) return false;  // draining, and nothing is left for it
    if (stopping_ && s.failures >= p.attempts_while_draining) {
      fail_remaining(fmt::format("{} could not be started again", s.exec->name()));
      return false;
    }
    if (s.failures > 0) {
      const double factor = std::ldexp(1.0, std::min(s.failures - 1, 20));
      std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(
          p.backoff_max, std::chrono::milliseconds(
                             static_cast<int64_t>(static_cast<double>(p.backoff_initial.count()) * factor))));
    }
    std::optional<std::string> error;
    try {
      error = s.exec->start();
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!error) return true;
    spdlog::error("{} could not start: {}", s.exec->name(), *error);
    ++s.failures;
  }
}

bool ExecutorPool::run(Slot& s, Batch& batch, Clock::time_point start) {
  const int n = static_cast<int>(batch.requests.size());
  bool suspect = false;
  for (const auto& r : batch.requests) suspect = suspect || r->executor_faults > 0;
  if (gate_) gate_->enter(suspect);
  const Clock::time_point run_start = Clock::now();
  BatchRun r = s.exec->run(batch);
  const Clock::time_point end = Clock::now();
  if (gate_) gate_->leave(suspect);
  if (r.status == BatchRun::Status::kDone && r.answers() != batch.requests.size())
    r = BatchRun::failed(ErrorCode::kInternal,
                         fmt::format("internal error: {} answers for a batch of {}", r.answers(), n));

  if (r.status == BatchRun::Status::kLost) {
    lost(s, r.loss);
    replay(std::move(batch), r);
    return false;
  }
  if (r.status == BatchRun::Status::kDone) {
    s.failures = 0;
    if (stats_) stats_->device_batch_executed(s.exec->device_group(), n);
    if (const auto grown = s.cap.succeeded(n)) {
      spdlog::info("{}: {} batches without running out of memory; batch cap now {}", s.exec->name(),
                   policy_.oom.regrow_after, *grown);
      if (stats_) stats_->set_batch_cap(s.index, *grown);
    }
    complete(batch, &r, "", start, run_start, end);
    return false;
  }
  if (r.code != ErrorCode::kResourceExhausted) {
    spdlog::error("{}: a batch of {} failed: {}", s.exec->name(), n, r.message);
    complete(batch, nullptr, r.message, start, run_start, end);
    return false;
  }

  // Out of memory: give the cache back, then halves, front first; a half that still does not fit is split again.
  try {
    s.exec->release_cached_memory();
  } catch (const std::exception& e) {
    spdlog::warn("{}: could not release cached memory after running out: {}", s.exec->name(), e.what());
  }
  if (n == 1) {
    complete(batch, nullptr,
             fmt::format("out of memory running this request alone ({:.1f} s of audio): {}", audio_seconds(batch),
                         r.message),
             start, run_start, end);
    return true;
  }
  spdlog::warn("{}: a batch of {} ran out of memory ({}); retrying it in halves", s.exec->name(), n, r.message);
  if (stats_) stats_->batch_split();
  Batch front = split_front(batch, static_cast<size_t>((n + 1) / 2));
  bool alone = run(s, front, start);
  if (s.exec->up()) {
    alone = run(s, batch, start) || alone;
  } else {
    batcher_.requeue(std::move(batch));  // lost while running the front half: the rest waits for a live one
  }
  // A request too big to run even alone explains the failure: the clip is the problem, not the batch size.
  if (!alone) {
    if (const auto lowered = s.cap.ran_out_of_memory(n)) {
      spdlog::warn("{}: out of memory with a batch of {}; asking for batches of at most {} from now on",
                   s.exec->name(), n, *lowered);
      if (stats_) stats_->set_batch_cap(s.index, *lowered);
    }
  }
  return alone;
}

void ExecutorPool::complete(Batch& batch, BatchRun* done, const std::string& error, Clock::time_point start,
                            Clock::time_point run_start, Clock::time_point end) {
  const int n = static_cast<int>(batch.requests.size());
  const StageDurations d = batch_durations(ms_between(run_start, end), done ? done->timings : asr::StageTimings{});
  // Batch statistics before the requests': a client that has its answer sees its batch counted.
  if (done && stats_) stats_->batch_executed(n, batch.padding_waste, d);
  for (int i = 0; i < n; ++i) {
    const auto at = static_cast<size_t>(i);
    Completion c;
    c.response.durations = d;
    c.response.durations.queue_ms = ms_between(batch.enqueued[at], start);
    // From the executor taking the batch: after out-of-memory retries, more than this piece's own run.
    c.response.durations.compute_ms = ms_between(start, end);
    c.response.batch_size = n;
    if (done && !done->diarizations.empty()) {
      c.response.diarization = std::move(done->diarizations[at]);
    } else if (done) {
      c.response.transcript = std::move(done->transcripts[at]);
    } else {
      c.response.outcome = Outcome::kInternal;
      c.response.message = error;
    }
    c.request = std::move(batch.requests[at]);
    complete_(std::move(c));
  }
}

void ExecutorPool::replay(Batch batch, const BatchRun& lost) {
  const size_t n = batch.requests.size();
  if (lost.loss == Loss::kGroup) {
    if (stats_) stats_->requests_replayed(static_cast<int>(n));
    batcher_.requeue(std::move(batch));
    return;
  }
  // Each request alone: a poison request then takes down only itself, and is recognized the second time.
  while (!batch.requests.empty()) {
    Batch one = split_front(batch, 1);
    TranscriptionRequest& r = *one.requests.front();
    if (++r.executor_faults < 2) {
      if (stats_) stats_->requests_replayed(1);
      batcher_.requeue(std::move(one));
      continue;
    }
    spdlog::error("request {} {} the worker twice; failing it alone", r.id, lost.how);
    if (stats_) stats_->request_poisoned();
    Completion c = reject(std::move(one.requests.front()), Outcome::kInternal,
                          fmt::format("request {} the worker twice; not retried", lost.how),
                          ms_between(one.enqueued.front(), Clock::now()));
    c.response.batch_size = static_cast<int>(n);
    complete_(std::move(c));
  }
}

void ExecutorPool::fail_remaining(const std::string& why) {
  spdlog::error("{}: failing the requests left", why);
  for (;;) {
    DynamicBatcher::Pull pull = batcher_.pull(0, Clock::now());
    if (pull.finished || !pull.batch) return;
    const Clock::time_point now = Clock::now();
    complete(*pull.batch, nullptr, why, now, now, now);
  }
}

}  // namespace steno::serve
