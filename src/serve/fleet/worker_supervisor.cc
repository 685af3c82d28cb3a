#include "serve/fleet/worker_supervisor.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include "steno/core/error.h"

namespace steno::serve::fleet {
namespace {

using std::chrono::milliseconds;

// How long a worker whose socket closed may take to exit before it is SIGKILLed; and one asked to stop.
constexpr milliseconds kExitGrace{1000};
constexpr milliseconds kStopGrace{2000};

}  // namespace

// One worker. `process` is its executor's (one thread); `mu` guards `live_pid` and `group_victim`, which other
// workers' threads touch in a group restart (the pid is only signalled under `mu`, and reaped under it, so a
// signal never reaches a recycled pid).
struct WorkerSupervisor::Worker {
  int index = 0;
  std::unique_ptr<WorkerProcess> process;
  int starts = 0;
  bool weights_shared = false;
  mutable std::mutex mu;
  pid_t live_pid = 0;
  bool group_victim = false;
};

void WorkerFleetConfig::validate() const {
  STENO_CHECK(workers >= 1, "need at least one worker process, got {}", workers);
  STENO_CHECK(!command.model_dir.empty(), "the worker command needs a model directory");
  STENO_CHECK(heartbeat_interval.count() > 0, "heartbeat interval must be > 0 ms");
  STENO_CHECK(missed_heartbeats >= 2, "missed_heartbeats must be >= 2, got {}", missed_heartbeats);
  STENO_CHECK(batch_timeout_floor.count() > 0, "batch timeout must be > 0 ms");
  STENO_CHECK(batch_timeout_per_audio_second >= 0, "batch_timeout_per_audio_second must be >= 0");
  STENO_CHECK(startup_timeout.count() > 0, "startup timeout must be > 0 ms");
}

std::vector<std::string> worker_arguments(const WorkerFleetConfig& config, int worker, const WeightsArgs& weights) {
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
                                   c.fp8_linears ? "fp8" : dtype_name(c.dtype),
                                   "--threads",
                                   std::to_string(c.threads),
                                   "--gemm",
                                   ops::gemm_backend_name(c.gemm),
                                   "--heartbeat-ms",
                                   std::to_string(config.heartbeat_interval.count())};
  if (c.long_audio_seconds > 0)
    args.insert(args.end(), {"--long-audio-seconds", fmt::format("{}", c.long_audio_seconds), "--long-attention",
                             std::to_string(c.long_attention)});
  const asr::DecodingRequest& d = c.decoding;
  if (!d.decoding.empty()) args.insert(args.end(), {"--decoding", d.decoding});
  if (d.beam_size > 0) args.insert(args.end(), {"--beam-size", std::to_string(d.beam_size)});
  if (!d.lm.empty()) args.insert(args.end(), {"--lm", d.lm});
  if (d.lm_alpha) args.insert(args.end(), {"--lm-alpha", fmt::format("{}", *d.lm_alpha)});  // shortest exact form
  if (d.lm_beta) args.insert(args.end(), {"--lm-beta", fmt::format("{}", *d.lm_beta)});
  if (!d.lexicon.empty()) args.insert(args.end(), {"--lexicon", d.lexicon});
  if (d.unknown_word_penalty)
    args.insert(args.end(), {"--unknown-word-penalty", fmt::format("{}", *d.unknown_word_penalty)});
  if (weights.role == WeightsRole::kExport) args.push_back("--export-weights");
  if (weights.role == WeightsRole::kImport)
    args.insert(args.end(), {"--import-weights-fd", std::to_string(kWorkerWeightsFd)});
  if (weights.role != WeightsRole::kPrivate && weights.bytes > 0)
    args.insert(args.end(), {"--weights-bytes", std::to_string(weights.bytes), "--weights-layout",
                             std::to_string(weights.layout)});
  return args;
}

WorkerSupervisor::WorkerSupervisor(WorkerFleetConfig config, std::unique_ptr<FleetMetrics> metrics)
    : config_((config.validate(), std::move(config))),
      metrics_(std::move(metrics)),
      weights_(config_.share_weights, config_.startup_timeout + kExitGrace, metrics_.get()) {
  for (int i = 0; i < config_.workers; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->index = i;
  }
  if (config_.restart_group_on_fault) {
    group_ = config_.fault_group ? config_.fault_group : std::make_shared<FaultGroup>(config_.recover_group);
    group_->join(this);
  }
}

WorkerSupervisor::~WorkerSupervisor() {
  if (group_) group_->leave(this);
  for (auto& w : workers_) {
    std::lock_guard lock(w->mu);
    w->process.reset();  // SIGKILL and reap
    w->live_pid = 0;
  }
}

WorkerLaunch WorkerSupervisor::launch(int i, const SharedWeightsBroker::Start& weights) const {
  WorkerLaunch l;
  l.executable = config_.command.executable;
  l.args = worker_arguments(config_, i, weights.args);
  if (config_.worker_env) l.env = config_.worker_env(i);
  l.weights_fd = weights.fd.get();
  return l;
}

// Tells a group restart waiting for every worker to be gone that one more is (its live_pid was just cleared under
// its mu). Called without any worker's mu held: the waiter takes the group's lock, then each worker's mu.
void WorkerSupervisor::notify_down() {
  if (group_) group_->notify_down();
}

bool WorkerSupervisor::all_down() const {
  for (const auto& w : workers_) {
    std::lock_guard worker_lock(w->mu);
    if (w->live_pid > 0) return false;
  }
  return true;
}

void WorkerSupervisor::take_down(int except) {
  weights_.drop();  // its memory may belong to the context that broke
  for (auto& other : workers_) {
    if (other->index == except) continue;
    std::lock_guard lock(other->mu);
    if (other->live_pid <= 0) continue;
    other->group_victim = true;
    ::kill(other->live_pid, SIGKILL);
  }
}

std::optional<std::string> WorkerSupervisor::start(int i) {
  Worker& w = *workers_.at(static_cast<size_t>(i));
  if (group_) group_->await_recovery(config_.startup_timeout);
  SharedWeightsBroker::Start weights = weights_.begin(i);
  try {
    auto process = WorkerProcess::spawn(launch(i, weights));
    std::lock_guard lock(w.mu);
    w.process = std::move(process);
    w.live_pid = w.process->pid();
    w.group_victim = false;
  } catch (const Error& e) {
    weights_.end(i, 0, weights, nullptr, UniqueFd());
    return fmt::format("cannot start a process: {}", e.what());
  }
  weights.fd.reset();  // the child has its own copy
  Hello hello;
  UniqueFd fd;
  const std::optional<std::string> error = await_hello(w, &hello, &fd);
  w.weights_shared = weights_.end(i, w.process ? w.process->pid() : 0, weights, error ? nullptr : &hello,
                                  std::move(fd));
  if (error) {
    w.process.reset();
    return error;
  }
  if (metrics_) metrics_->worker_up();
  if (++w.starts > 1) spdlog::warn("worker {} restarted (pid {})", i, w.process->pid());
  if (w.starts == 1 && ++first_starts_ == size()) {
    spdlog::info("{} worker processes ready", size());
    int sharing = 0;
    for (const auto& other : workers_) sharing += other->weights_shared ? 1 : 0;
    weights_.report(sharing, size());
  }
  return std::nullopt;
}

std::optional<std::string> WorkerSupervisor::await_hello(Worker& w, Hello* hello_out, UniqueFd* fd_out) {
  const Clock::time_point deadline = Clock::now() + config_.startup_timeout;
  std::string error;
  while (error.empty()) {
    const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      error = fmt::format("it did not load the model within {} s", config_.startup_timeout.count() / 1000.0);
      break;
    }
    try {
      auto in = w.process->socket().receive(left);
      if (!in) continue;
      const auto* hello = std::get_if<Hello>(&in->message);
      if (hello == nullptr || hello->worker_index != w.index)
        throw ProtocolError(
            fmt::format("expected its hello, got a {} message", message_type_name(type_of(in->message))));
      *hello_out = *hello;
      *fd_out = std::move(in->fd);
      return std::nullopt;
    } catch (const PeerClosed&) {
      error = "it exited before it was ready";
    } catch (const Error& e) {
      error = e.what();
    }
  }
  ExitStatus status;
  {
    std::lock_guard lock(w.mu);
    const auto exited = w.process->wait(kExitGrace);
    status = exited ? *exited : w.process->kill_and_reap();
    w.live_pid = 0;
    w.group_victim = false;
  }
  notify_down();
  return fmt::format("pid {}: {} ({}; its messages are above)", w.process->pid(), error, status.str());
}

WorkerProcess* WorkerSupervisor::process(int i) const { return workers_.at(static_cast<size_t>(i))->process.get(); }

bool WorkerSupervisor::taken_down_with_group(int i) const {
  const Worker& w = *workers_.at(static_cast<size_t>(i));
  std::lock_guard lock(w.mu);
  return w.group_victim;
}

Loss WorkerSupervisor::lose(int i, RestartReason reason, const std::string& why, size_t batch_size) {
  Worker& w = *workers_.at(static_cast<size_t>(i));
  ExitStatus status;
  bool victim = false;
  const pid_t pid = w.process->pid();
  {
    std::lock_guard lock(w.mu);
    // One that went away by itself gets a moment to finish exiting; a hung or misbehaving one is killed now.
    std::optional<ExitStatus> exited;
    if (reason == RestartReason::kExit || reason == RestartReason::kGroup) exited = w.process->wait(kExitGrace);
    status = exited ? *exited : w.process->kill_and_reap();
    // Counted down before live_pid says it is gone, under the same lock: a group restart waiting for every worker
    // to be gone may wake (another worker's notify) and look at any moment, and its recovery must find none up.
    if (metrics_) metrics_->worker_down();
    w.live_pid = 0;
    victim = std::exchange(w.group_victim, false);
  }
  notify_down();
  // One whose own exit beat the group's kill -- under MPS it found its context broken by the fault that started the
  // round, and exited first -- is a victim too: its batch is replayed without a strike, or a transcription replayed
  // twice beside a diarizer's poison request would be failed as the poison (the H200 chaos run). Checked without the
  // worker's lock: the group takes the group's lock, then the workers'.
  if (!victim && group_ && group_->faulting()) victim = true;
  if (victim)
    reason = RestartReason::kGroup;
  else if (reason == RestartReason::kExit && status.signaled)
    reason = RestartReason::kSignal;
  spdlog::error("worker {} (pid {}) lost ({}): {}; it ended with {}; {}", i, pid, restart_reason_name(reason), why,
                status.str(), batch_size > 0 ? fmt::format("replaying its batch of {}", batch_size) : "it was idle");
  if (metrics_) metrics_->worker_restarted(reason);
  w.process.reset();
  // Under MPS a client that ends with GPU work outstanding can leave the daemon and its other clients in an
  // undefined state (NVIDIA's MPS guide: client early termination), hence the group restart. One killed by a signal
  // while idle had none (a batch is answered only once its results are on the host), so it restarts alone: an
  // operator's kill or the OOM killer on an idle diarizer worker does not cost the transcriber its workers.
  const bool alone = reason == RestartReason::kSignal && batch_size == 0;
  if (group_ && !victim && alone)
    spdlog::warn("worker {} was killed while idle: restarting it alone, its group keeps running", i);
  if (group_ && !victim && !alone) {
    spdlog::warn("worker {} faulted: restarting every worker of its group", i);
    group_->fault(this, i);
  }
  return victim ? Loss::kGroup : Loss::kFault;
}

void WorkerSupervisor::stop(int i) {
  Worker& w = *workers_.at(static_cast<size_t>(i));
  if (!w.process) return;
  ExitStatus status;
  {
    std::lock_guard lock(w.mu);
    status = w.process->stop(kStopGrace);
    if (metrics_) metrics_->worker_down();  // before live_pid says gone, as in lose()
    w.live_pid = 0;
  }
  notify_down();
  spdlog::info("worker {} (pid {}) stopped: {}", i, w.process->pid(), status.str());
  w.process.reset();
}

}  // namespace steno::serve::fleet
