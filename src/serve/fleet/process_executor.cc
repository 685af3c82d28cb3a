#include "steno/serve/fleet/process_executor.h"
#include "steno/serve/stage_durations.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "steno/core/error.h"
#include "steno/serve/fleet/shared_pcm.h"

namespace steno::serve::fleet {
namespace {

using std::chrono::milliseconds;

// The batch cap grows back by one after this many batches in a row succeed below the configured maximum.
constexpr int kCapRecoveryBatches = 100;
// While draining, a worker that fails to start this many times in a row is given up: its requests fail.
constexpr int kStartAttemptsWhileDraining = 3;
// How long a worker whose socket closed may take to exit before it is SIGKILLed; and one asked to stop.
constexpr milliseconds kExitGrace{1000};
constexpr milliseconds kStopGrace{2000};

double audio_seconds(const Batch& b) {
  double samples = 0;
  for (const auto& r : b.requests) samples += static_cast<double>(r->pcm.size());
  return samples / kPcmSampleRate;
}

}  // namespace

// One worker and what its dispatcher knows about it. `worker`, `last_frame` and `failures` belong to the slot's
// dispatcher thread; `mu` guards `live_pid` and `group_victim`, which other dispatchers touch in a group restart
// (the pid is only signalled under `mu`, and reaped under it, so a signal never reaches a recycled pid).
struct ProcessExecutor::Slot {
  int index = 0;
  std::unique_ptr<WorkerProcess> worker;
  Clock::time_point last_frame;
  int failures = 0;  // consecutive losses and failed starts: the backoff's exponent
  std::mutex mu;
  pid_t live_pid = 0;
  bool group_victim = false;
  bool weights_shared = false;  // its worker's Hello said its weights are the shared copy
  std::thread thread;
};

struct ProcessExecutor::WeightsStart {
  WeightsArgs args;
  UniqueFd fd;  // kImport: a copy of the held descriptor for the child to inherit; closed once it is spawned
};

struct ProcessExecutor::Loss {
  RestartReason reason;  // kExit stands for "it went away": refined to kExit or kSignal by its exit status
  std::string why;
};

void ProcessExecutorConfig::validate() const {
  STENO_CHECK(workers >= 1, "need at least one worker process, got {}", workers);
  STENO_CHECK(!command.model_dir.empty(), "the worker command needs a model directory");
  STENO_CHECK(heartbeat_interval.count() > 0, "heartbeat interval must be > 0 ms");
  STENO_CHECK(missed_heartbeats >= 2, "missed_heartbeats must be >= 2, got {}", missed_heartbeats);
  STENO_CHECK(batch_timeout_floor.count() > 0, "batch timeout must be > 0 ms");
  STENO_CHECK(batch_timeout_per_audio_second >= 0, "batch_timeout_per_audio_second must be >= 0");
  STENO_CHECK(startup_timeout.count() > 0, "startup timeout must be > 0 ms");
  STENO_CHECK(restart_backoff_initial.count() >= 0 && restart_backoff_max >= restart_backoff_initial,
              "restart backoff: need 0 <= initial <= max");
}

std::vector<std::string> worker_arguments(const ProcessExecutorConfig& config, int worker,
                                          const WeightsArgs& weights) {
  const WorkerCommand& c = config.command;
  std::string level = c.log_level;
  if (level.empty()) {
    const auto name = spdlog::level::to_string_view(spdlog::get_level());
    level.assign(name.data(), name.size());
  }
  std::vector<std::string> args = {"--log-level",
                                   level,
                                   "worker",
                                   "--socket-fd",
                                   std::to_string(kWorkerSocketFd),
                                   "--index",
                                   std::to_string(worker),
                                   "--model",
                                   c.model_dir,
                                   "--device",
                                   c.device.str(),
                                   "--dtype",
                                   dtype_name(c.dtype),
                                   "--threads",
                                   std::to_string(c.threads),
                                   "--gemm",
                                   ops::gemm_backend_name(c.gemm),
                                   "--heartbeat-ms",
                                   std::to_string(config.heartbeat_interval.count())};
  if (weights.role == WeightsRole::kExport) args.push_back("--export-weights");
  if (weights.role == WeightsRole::kImport)
    args.insert(args.end(), {"--import-weights-fd", std::to_string(kWorkerWeightsFd)});
  if (weights.role != WeightsRole::kPrivate && weights.bytes > 0)
    args.insert(args.end(), {"--weights-bytes", std::to_string(weights.bytes), "--weights-layout",
                             std::to_string(weights.layout)});
  return args;
}

ProcessExecutor::ProcessExecutor(ProcessExecutorConfig config, DynamicBatcher& batcher, RequestCompleter complete,
                                 ModelMetrics* metrics, FleetMetrics* fleet_metrics)
    : config_(std::move(config)),
      batcher_(batcher),
      complete_(complete),
      metrics_(metrics),
      fleet_metrics_(fleet_metrics),
      batch_cap_(batcher.config().max_batch_size) {
  config_.validate();
  STENO_CHECK(batch_cap_ <= static_cast<int>(kMaxClipsPerBatch), "worker processes take batches of at most {}, not {}",
              kMaxClipsPerBatch, batch_cap_);
  if (fleet_metrics_) fleet_metrics_->set_batch_cap(batch_cap_);
  for (int i = 0; i < config_.workers; ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->index = i;
  }
  if (config_.share_weights) weights_state_ = WeightsState::kNeedCreator;
  if (fleet_metrics_) fleet_metrics_->set_shared_weight_bytes(0);
  // All load their models side by side; the first that fails stops the start-up (the others are killed when
  // their slots go). With shared weights the first worker makes the copy before the others start and map it.
  const size_t first = config_.share_weights ? 1 : slots_.size();
  start_fleet(0, first);
  start_fleet(first, slots_.size());
  spdlog::info("{} worker processes ready", slots_.size());
  report_shared_weights();
  for (auto& s : slots_) s->thread = std::thread([this, slot = s.get()] { dispatch(*slot); });
}

ProcessExecutor::~ProcessExecutor() {
  batcher_.shutdown();  // without it, the dispatchers would wait for batches forever
  join();
}

void ProcessExecutor::join() {
  std::lock_guard lock(join_mu_);
  stopping_ = true;
  for (auto& s : slots_)
    if (s->thread.joinable()) s->thread.join();
}

WorkerLaunch ProcessExecutor::launch(int worker, const WeightsStart& weights) const {
  WorkerLaunch l;
  l.executable = config_.command.executable;
  l.args = worker_arguments(config_, worker, weights.args);
  if (config_.worker_env) l.env = config_.worker_env(worker);
  l.weights_fd = weights.fd.get();
  return l;
}

void ProcessExecutor::start_fleet(size_t begin, size_t end) {
  std::vector<WeightsStart> weights(end - begin);
  for (size_t i = begin; i < end; ++i) {
    Slot& s = *slots_[i];
    WeightsStart& w = weights[i - begin];
    w = begin_weights(s.index);
    s.worker = WorkerProcess::spawn(launch(s.index, w));
    s.live_pid = s.worker->pid();
    w.fd.reset();  // the child has its own copy
  }
  for (size_t i = begin; i < end; ++i) {
    Slot& s = *slots_[i];
    Hello hello;
    UniqueFd fd;
    const auto error = await_ready(s, &hello, &fd);
    end_weights(s, weights[i - begin], error ? nullptr : &hello, std::move(fd));
    if (error)
      fail(ErrorCode::kUnavailable, "worker {} could not start: {} (its messages are above)", s.index, *error);
    if (fleet_metrics_) fleet_metrics_->worker_up();
  }
}

ProcessExecutor::WeightsStart ProcessExecutor::begin_weights(int worker) {
  WeightsStart w;
  std::unique_lock lock(weights_mu_);
  // While another worker makes the copy, wait for it (no longer than that worker may take to start).
  weights_cv_.wait_for(lock, config_.startup_timeout + kExitGrace,
                       [&] { return weights_state_ != WeightsState::kCreating; });
  switch (weights_state_) {
    case WeightsState::kOff:
    case WeightsState::kPrivate: break;
    case WeightsState::kCreating:
      spdlog::warn("worker {}: the shared weights are still being made; it loads private weights", worker);
      break;
    case WeightsState::kNeedCreator:
      // After a group restart the size an earlier creator measured comes along: one of the same identity then
      // loads once instead of counting first.
      weights_state_ = WeightsState::kCreating;
      w.args = WeightsArgs{WeightsRole::kExport, weights_bytes_, weights_layout_};
      break;
    case WeightsState::kShared: {
      // A copy of our descriptor: a group restart may close the held one while this worker is being spawned.
      const int fd = ::fcntl(weights_fd_.get(), F_DUPFD_CLOEXEC, 0);
      if (fd < 0) {
        spdlog::warn("worker {}: cannot pass it the shared weights ({}); it loads private weights", worker,
                     std::strerror(errno));
        break;
      }
      w.fd = UniqueFd(fd);
      w.args = WeightsArgs{WeightsRole::kImport, weights_bytes_, weights_layout_};
      break;
    }
  }
  return w;
}

void ProcessExecutor::end_weights(Slot& s, WeightsStart& start, const Hello* hello, UniqueFd fd) {
  start.fd.reset();
  s.weights_shared = hello != nullptr && hello->weights_shared;
  const pid_t pid = s.worker ? s.worker->pid() : 0;
  if (start.args.role == WeightsRole::kImport && hello != nullptr && !hello->weights_shared)
    spdlog::warn("worker {} (pid {}) could not use the shared weights ({}): it loaded private weights", s.index, pid,
                 hello->weights_note);
  if (start.args.role != WeightsRole::kExport) return;  // a descriptor it sent anyway is closed with `fd`
  std::lock_guard lock(weights_mu_);
  if (hello == nullptr) {
    weights_state_ = WeightsState::kNeedCreator;  // it did not start: the next worker to start makes the copy
  } else if (hello->weights_shared && fd.valid() && hello->weights_bytes > 0) {
    weights_fd_ = std::move(fd);
    weights_bytes_ = hello->weights_bytes;
    weights_layout_ = hello->weights_layout;
    weights_state_ = WeightsState::kShared;
    spdlog::info("worker {} (pid {}) made the shared copy of the weights: {:.1f} MiB", s.index, pid,
                 static_cast<double>(weights_bytes_) / (1 << 20));
  } else {
    s.weights_shared = false;
    weights_state_ = WeightsState::kPrivate;
    spdlog::warn("worker {} (pid {}) could not make a shared copy of the weights ({}): every worker loads private "
                 "weights",
                 s.index, pid, hello->weights_note.empty() ? "it sent no descriptor" : hello->weights_note);
  }
  if (fleet_metrics_) fleet_metrics_->set_shared_weight_bytes(s.weights_shared ? weights_bytes_ : 0);
  weights_cv_.notify_all();
}

void ProcessExecutor::drop_shared_weights() {
  std::lock_guard lock(weights_mu_);
  // A copy being made now is left to its maker: killed with the group, its failed start asks for a new one.
  if (weights_state_ != WeightsState::kShared && weights_state_ != WeightsState::kPrivate) return;
  spdlog::warn("dropping the shared weights: the first worker restarted makes a new copy");
  weights_fd_.reset();
  weights_state_ = WeightsState::kNeedCreator;
  if (fleet_metrics_) fleet_metrics_->set_shared_weight_bytes(0);
}

void ProcessExecutor::report_shared_weights() {
  if (!config_.share_weights) return;
  std::lock_guard lock(weights_mu_);
  if (weights_state_ != WeightsState::kShared) return;  // the creator's warning said why
  int sharing = 0;
  for (const auto& s : slots_) sharing += s->weights_shared ? 1 : 0;
  const double mib = static_cast<double>(weights_bytes_) / (1 << 20);
  spdlog::info("{} of {} workers share one device copy of the weights: {:.1f} MiB (saves ~{}x{:.1f} = {:.1f} MiB)",
               sharing, slots_.size(), mib, sharing - 1, mib, (sharing - 1) * mib);
}

std::optional<std::string> ProcessExecutor::await_ready(Slot& s, Hello* hello_out, UniqueFd* fd_out) {
  const Clock::time_point deadline = Clock::now() + config_.startup_timeout;
  std::string error;
  while (error.empty()) {
    const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      error = fmt::format("it did not load the model within {} s", config_.startup_timeout.count() / 1000.0);
      break;
    }
    try {
      auto in = s.worker->socket().receive(left);
      if (!in) continue;
      const auto* hello = std::get_if<Hello>(&in->message);
      if (hello == nullptr || hello->worker_index != s.index)
        throw ProtocolError(
            fmt::format("expected its hello, got a {} message", message_type_name(type_of(in->message))));
      s.last_frame = Clock::now();
      if (hello_out) *hello_out = *hello;
      if (fd_out) *fd_out = std::move(in->fd);
      return std::nullopt;
    } catch (const PeerClosed&) {
      error = "it exited before it was ready";
    } catch (const Error& e) {
      error = e.what();
    }
  }
  ExitStatus status;
  {
    std::lock_guard lock(s.mu);
    const auto exited = s.worker->wait(kExitGrace);
    status = exited ? *exited : s.worker->kill_and_reap();
    s.live_pid = 0;
    s.group_victim = false;
  }
  return fmt::format("pid {}: {} ({})", s.worker->pid(), error, status.str());
}

bool ProcessExecutor::start_worker(Slot& s) {
  WeightsStart weights = begin_weights(s.index);
  try {
    auto worker = WorkerProcess::spawn(launch(s.index, weights));
    std::lock_guard lock(s.mu);
    s.worker = std::move(worker);
    s.live_pid = s.worker->pid();
  } catch (const Error& e) {
    spdlog::error("worker {}: cannot start a process: {}", s.index, e.what());
    end_weights(s, weights, nullptr, UniqueFd());
    ++s.failures;
    return false;
  }
  weights.fd.reset();  // the child has its own copy
  Hello hello;
  UniqueFd fd;
  const auto error = await_ready(s, &hello, &fd);
  end_weights(s, weights, error ? nullptr : &hello, std::move(fd));
  if (error) {
    spdlog::error("worker {} could not start: {}", s.index, *error);
    s.worker.reset();
    ++s.failures;
    return false;
  }
  if (fleet_metrics_) fleet_metrics_->worker_up();
  spdlog::warn("worker {} restarted (pid {})", s.index, s.worker->pid());
  return true;
}

bool ProcessExecutor::restart(Slot& s) {
  for (;;) {
    if (stopping_ && batcher_.queued() == 0) return false;  // draining, and nothing is left for a new worker
    if (stopping_ && s.failures >= kStartAttemptsWhileDraining) {
      fail_remaining(fmt::format("no worker process could be started for worker {}", s.index));
      return false;
    }
    if (s.failures > 0) {
      const double factor = std::ldexp(1.0, std::min(s.failures - 1, 20));
      const auto delay = std::min<milliseconds>(
          config_.restart_backoff_max,
          milliseconds(static_cast<int64_t>(static_cast<double>(config_.restart_backoff_initial.count()) * factor)));
      std::this_thread::sleep_for(delay);
    }
    if (start_worker(s)) return true;
  }
}

void ProcessExecutor::dispatch(Slot& s) {
  for (;;) {
    if (!s.worker && !restart(s)) break;
    if (auto loss = check_idle(s)) {
      on_lost(s, *loss, std::nullopt);
      continue;
    }
    DynamicBatcher::Pull pull = batcher_.pull(batch_cap(), Clock::now() + config_.heartbeat_interval);
    if (pull.finished) break;
    if (!pull.batch) continue;
    if (auto loss = check_idle(s)) {  // lost while this slot waited for work: the batch goes to another worker
      batcher_.requeue(std::move(*pull.batch));
      on_lost(s, *loss, std::nullopt);
      continue;
    }
    run_batch(s, std::move(*pull.batch));
  }
  retire(s);
}

std::optional<ProcessExecutor::Loss> ProcessExecutor::check_idle(Slot& s) {
  {
    std::lock_guard lock(s.mu);
    if (s.group_victim) return Loss{RestartReason::kGroup, "killed to restart its group"};
  }
  try {
    while (auto in = s.worker->socket().receive(milliseconds(0))) {
      const auto* beat = std::get_if<Heartbeat>(&in->message);
      if (beat == nullptr)
        throw ProtocolError(fmt::format("a {} message while idle", message_type_name(type_of(in->message))));
      on_heartbeat(s, *beat);
    }
  } catch (const PeerClosed&) {
    return Loss{RestartReason::kExit, "it closed its connection while idle"};
  } catch (const ProtocolError& e) {
    return Loss{RestartReason::kProtocol, e.what()};
  } catch (const Error& e) {
    return Loss{RestartReason::kExit, e.what()};
  }
  const milliseconds silence = std::chrono::duration_cast<milliseconds>(Clock::now() - s.last_frame);
  if (silence > config_.heartbeat_interval * config_.missed_heartbeats)
    return Loss{RestartReason::kHang, fmt::format("no heartbeat for {} ms while idle", silence.count())};
  return std::nullopt;
}

void ProcessExecutor::on_heartbeat(Slot& s, const Heartbeat& beat) {
  s.last_frame = Clock::now();
  if (fleet_metrics_) fleet_metrics_->set_worker_memory(s.index, beat.host_rss_bytes, beat.device_bytes);
}

void ProcessExecutor::run_batch(Slot& s, Batch batch) {
  const size_t n = batch.requests.size();
  RunBatch message;
  message.batch_id = ++next_batch_id_;
  std::optional<SharedPcm> pcm;
  try {
    std::vector<std::span<const float>> clips;
    clips.reserve(n);
    for (const auto& r : batch.requests) clips.emplace_back(r->pcm);
    pcm.emplace(SharedPcm::create(clips, &message.clips));
  } catch (const Error& e) {
    spdlog::error("worker {}: cannot share a batch of {} with it: {}", s.index, n, e.what());
    complete(batch, Clock::now(), Clock::now(), {}, nullptr, e.what());
    return;
  }
  for (size_t i = 0; i < n; ++i) message.clips[i].fault = batch.requests[i]->fault;
  const double audio_s = audio_seconds(batch);
  const auto budget = std::max<milliseconds>(
      config_.batch_timeout_floor,
      milliseconds(static_cast<int64_t>(audio_s * config_.batch_timeout_per_audio_second * 1000)));
  const Clock::time_point start = Clock::now();
  try {
    s.worker->socket().send(message, pcm->fd(), config_.heartbeat_interval * config_.missed_heartbeats);
  } catch (const PeerClosed&) {
    on_lost(s, Loss{RestartReason::kExit, "it closed its connection"}, std::move(batch));
    return;
  } catch (const Error& e) {
    on_lost(s, Loss{RestartReason::kHang, fmt::format("it did not take the batch: {}", e.what())}, std::move(batch));
    return;
  }
  pcm.reset();  // the worker holds the memory now; the server's mapping is not needed any more

  Answer answer = await_answer(s, message.batch_id, n, start + budget);
  const Clock::time_point end = Clock::now();
  if (auto* lost = std::get_if<Loss>(&answer)) {
    if (lost->reason == RestartReason::kHang && end >= start + budget)
      lost->why = fmt::format("a batch of {:.1f} s of audio ran past its deadline of {:.1f} s", audio_s,
                              std::chrono::duration<double>(budget).count());
    on_lost(s, *lost, std::move(batch));
    return;
  }
  if (auto* result = std::get_if<BatchResult>(&answer)) {
    s.failures = 0;
    batch_succeeded();
    complete(batch, start, end, result->timings, &result->transcripts, "");
    return;
  }
  const BatchFailed& failed = std::get<BatchFailed>(answer);
  if (failed.code == ErrorCode::kResourceExhausted && n > 1) {
    lower_batch_cap(static_cast<int>(n));
    if (fleet_metrics_) fleet_metrics_->batch_split();
    spdlog::warn("worker {} (pid {}): a batch of {} ran out of memory ({}); retrying it in halves, batch cap now {}",
                 s.index, s.worker->pid(), n, failed.message, batch_cap());
    Batch first = split_front(batch, n / 2);
    batcher_.requeue(std::move(first));
    batcher_.requeue(std::move(batch));
    return;
  }
  spdlog::error("worker {} (pid {}): a batch of {} failed: {}", s.index, s.worker->pid(), n, failed.message);
  complete(batch, start, end, {}, nullptr, failed.message);
}

ProcessExecutor::Answer ProcessExecutor::await_answer(Slot& s, uint64_t batch_id, size_t clips,
                                                      Clock::time_point deadline) {
  const milliseconds silence_limit = config_.heartbeat_interval * config_.missed_heartbeats;
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (now >= s.last_frame + silence_limit)
      return Loss{RestartReason::kHang,
                  fmt::format("no heartbeat for {} ms during a batch",
                              std::chrono::duration_cast<milliseconds>(now - s.last_frame).count())};
    if (now >= deadline) return Loss{RestartReason::kHang, "its batch ran past its deadline"};
    try {
      const auto wait = std::chrono::ceil<milliseconds>(std::min(deadline, s.last_frame + silence_limit) - now);
      auto in = s.worker->socket().receive(std::max(wait, milliseconds(1)));
      if (!in) continue;
      s.last_frame = Clock::now();
      if (const auto* beat = std::get_if<Heartbeat>(&in->message)) {
        on_heartbeat(s, *beat);
        continue;
      }
      if (auto* result = std::get_if<BatchResult>(&in->message)) {
        if (result->batch_id != batch_id || result->transcripts.size() != clips)
          throw ProtocolError(fmt::format("a result for batch {} with {} transcripts, expected batch {} of {}",
                                          result->batch_id, result->transcripts.size(), batch_id, clips));
        return std::move(*result);
      }
      if (auto* failed = std::get_if<BatchFailed>(&in->message)) {
        if (failed->batch_id != batch_id)
          throw ProtocolError(fmt::format("a failure for batch {}, expected batch {}", failed->batch_id, batch_id));
        return std::move(*failed);
      }
      throw ProtocolError(fmt::format("a {} message during a batch", message_type_name(type_of(in->message))));
    } catch (const PeerClosed&) {
      std::lock_guard lock(s.mu);
      if (s.group_victim) return Loss{RestartReason::kGroup, "killed to restart its group"};
      return Loss{RestartReason::kExit, "it closed its connection during a batch"};
    } catch (const ProtocolError& e) {
      return Loss{RestartReason::kProtocol, e.what()};
    } catch (const Error& e) {
      return Loss{RestartReason::kExit, e.what()};
    }
  }
}

void ProcessExecutor::on_lost(Slot& s, const Loss& loss, std::optional<Batch> batch) {
  ExitStatus status;
  bool victim = false;
  const pid_t pid = s.worker->pid();
  {
    std::lock_guard lock(s.mu);
    // One that went away by itself gets a moment to finish exiting; a hung or misbehaving one is killed now.
    std::optional<ExitStatus> exited;
    if (loss.reason == RestartReason::kExit || loss.reason == RestartReason::kGroup)
      exited = s.worker->wait(kExitGrace);
    status = exited ? *exited : s.worker->kill_and_reap();
    s.live_pid = 0;
    victim = std::exchange(s.group_victim, false);
  }
  RestartReason reason = loss.reason;
  if (victim)
    reason = RestartReason::kGroup;
  else if (reason == RestartReason::kExit && status.signaled)
    reason = RestartReason::kSignal;
  const size_t n = batch ? batch->requests.size() : 0;
  spdlog::error("worker {} (pid {}) lost ({}): {}; it ended with {}; {}", s.index, pid, restart_reason_name(reason),
                loss.why, status.str(), n > 0 ? fmt::format("replaying its batch of {}", n) : "it was idle");
  if (fleet_metrics_) {
    fleet_metrics_->worker_down();
    fleet_metrics_->worker_restarted(reason);
  }
  s.worker.reset();
  if (!victim) ++s.failures;
  if (batch) replay(std::move(*batch), /*charge=*/!victim, reason == RestartReason::kHang ? "hung" : "crashed");
  if (config_.restart_group_on_fault && !victim) restart_group(s);
}

void ProcessExecutor::replay(Batch batch, bool charge, const std::string& why) {
  const size_t n = batch.requests.size();
  if (!charge) {
    if (fleet_metrics_) fleet_metrics_->requests_replayed(static_cast<int>(n));
    batcher_.requeue(std::move(batch));
    return;
  }
  // Each request alone: a poison request then takes down only itself, and is recognized the second time.
  while (!batch.requests.empty()) {
    Batch one = split_front(batch, 1);
    TranscriptionRequest& r = *one.requests.front();
    if (++r.worker_faults < 2) {
      if (fleet_metrics_) fleet_metrics_->requests_replayed(1);
      batcher_.requeue(std::move(one));
      continue;
    }
    spdlog::error("request {} {} the worker twice; failing it alone", r.id, why);
    if (fleet_metrics_) fleet_metrics_->request_poisoned();
    Completion c = reject(std::move(one.requests.front()), Outcome::kError,
                          fmt::format("request {} the worker twice; not retried", why),
                          ms_between(one.enqueued.front(), Clock::now()));
    c.response.batch_size = static_cast<int>(n);
    complete_(std::move(c));
  }
}

void ProcessExecutor::restart_group(const Slot& faulted) {
  spdlog::warn("worker {} faulted: restarting every worker of its group", faulted.index);
  drop_shared_weights();  // its memory may belong to the context that broke
  for (auto& other : slots_) {
    if (other.get() == &faulted) continue;
    std::lock_guard lock(other->mu);
    if (other->live_pid <= 0) continue;
    other->group_victim = true;
    ::kill(other->live_pid, SIGKILL);
  }
}

void ProcessExecutor::retire(Slot& s) {
  if (!s.worker) return;
  ExitStatus status;
  {
    std::lock_guard lock(s.mu);
    status = s.worker->stop(kStopGrace);
    s.live_pid = 0;
  }
  spdlog::info("worker {} (pid {}) stopped: {}", s.index, s.worker->pid(), status.str());
  if (fleet_metrics_) fleet_metrics_->worker_down();
  s.worker.reset();
}

void ProcessExecutor::fail_remaining(const std::string& why) {
  spdlog::error("{}: failing the requests left", why);
  for (;;) {
    DynamicBatcher::Pull pull = batcher_.pull(0, Clock::now());
    if (pull.finished || !pull.batch) return;
    complete(*pull.batch, Clock::now(), Clock::now(), {}, nullptr, why);
  }
}

void ProcessExecutor::complete(Batch& batch, Clock::time_point start, Clock::time_point end,
                               const asr::StageTimings& timings, std::vector<asr::Transcript>* transcripts,
                               const std::string& error) {
  const int n = static_cast<int>(batch.requests.size());
  const StageDurations d = batch_durations(ms_between(start, end), timings);
  // Batch metrics before the requests': a client that has its answer sees its batch counted.
  if (transcripts != nullptr && metrics_) metrics_->batch_executed(n, batch.padding_waste, d);
  for (int i = 0; i < n; ++i) {
    Completion c;
    c.response.durations = d;
    c.response.durations.queue_ms = ms_between(batch.enqueued[static_cast<size_t>(i)], start);
    c.response.batch_size = n;
    if (transcripts != nullptr) {
      c.response.transcript = std::move((*transcripts)[static_cast<size_t>(i)]);
    } else {
      c.response.outcome = Outcome::kError;
      c.response.message = error;
    }
    c.request = std::move(batch.requests[static_cast<size_t>(i)]);
    complete_(std::move(c));
  }
}

int ProcessExecutor::batch_cap() {
  std::lock_guard lock(cap_mu_);
  return batch_cap_;
}

void ProcessExecutor::lower_batch_cap(int failed_batch_size) {
  std::lock_guard lock(cap_mu_);
  batch_cap_ = std::min(batch_cap_, std::max(1, failed_batch_size / 2));
  successes_at_cap_ = 0;
  if (fleet_metrics_) fleet_metrics_->set_batch_cap(batch_cap_);
}

void ProcessExecutor::batch_succeeded() {
  std::lock_guard lock(cap_mu_);
  if (batch_cap_ >= batcher_.config().max_batch_size || ++successes_at_cap_ < kCapRecoveryBatches) return;
  ++batch_cap_;
  successes_at_cap_ = 0;
  if (fleet_metrics_) fleet_metrics_->set_batch_cap(batch_cap_);
  spdlog::info("batch cap back up to {}", batch_cap_);
}

}  // namespace steno::serve::fleet
