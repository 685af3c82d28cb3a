// Executors in the `processes` mode of design.md §4: N worker processes (`steno worker`, worker.h), each with one
// dispatcher thread in the server that pulls a batch from the model's DynamicBatcher only when its worker is idle
// (so the next batch goes to the least-loaded worker), sends it, waits for the answer and completes every request
// of it exactly once. Supervision, in each dispatcher:
//   - a worker is lost when its socket closes (it exited or was killed), when it breaks the protocol, or when it
//     hangs: no frame for `missed_heartbeats` heartbeat intervals (a SIGSTOPped worker), or a batch running past
//     max(batch_timeout_floor, batch_timeout_per_audio_second x the batch's audio seconds). Hung and misbehaving
//     workers are SIGKILLed. Every loss is logged with the worker's index, pid, exit status or signal, and batch.
//   - the lost worker is restarted after an exponential backoff (restart_backoff_initial, doubling per
//     consecutive loss up to restart_backoff_max; reset by a batch that succeeds).
//   - the batch it was running is replayed, never lost or answered twice (each request is owned by exactly one
//     batch at a time): every request is charged one worker fault and requeued alone (so a poison request cannot
//     take innocent ones down with it again); a request charged twice is failed alone with kError ("request
//     crashed the worker twice; not retried"). Replays go before new batches; deadlines and cancellation apply.
//   - restart_group_on_fault (MPS, where one client's fault kills them all): a lost worker also kills and
//     restarts every other worker; their batches are replayed whole, without charging their requests.
//   - share_weights (shared_weights.h): the first worker makes the one device copy of the weights and the others
//     start after it, mapping that copy through the descriptor the server keeps (the executor owns it). A worker
//     restarted later maps it too; after a group restart the copy is dropped (it may belong to the broken
//     context) and the first worker restarted makes a new one. Where sharing does not work out, workers load
//     private weights and the server says why; the fleet never fails for it.
//   - a batch that fails with kResourceExhausted (out of memory) is split in halves and retried, and the batch
//     cap the executor asks the batcher for drops to half that batch (it grows back by one every 100 batches that
//     succeed); a single request that runs out of memory fails alone. Other errors fail the batch, as in lanes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "steno/core/device.h"
#include "steno/core/dtype.h"
#include "steno/ops/context.h"
#include "steno/serve/batcher.h"
#include "steno/serve/completer.h"
#include "steno/serve/fleet/fleet_metrics.h"
#include "steno/serve/fleet/shared_weights.h"
#include "steno/serve/fleet/wire.h"
#include "steno/serve/fleet/worker_process.h"

namespace steno::serve::fleet {

// What every worker runs: `steno [--log-level L] worker ...` with these settings (worker.h).
struct WorkerCommand {
  std::string executable = "/proc/self/exe";  // this same binary
  std::string model_dir;
  Device device = Device::cpu();
  DType dtype = DType::kF32;
  int threads = 0;  // CPU threads per worker (0: the worker's default)
  ops::GemmBackend gemm = ops::GemmBackend::kOneDnn;
  std::string log_level;  // "": the server's current level
};

using WorkerEnv = std::function<std::vector<std::pair<std::string, std::string>>(int worker)>;

struct ProcessExecutorConfig {
  int workers = 1;
  WorkerCommand command;
  WorkerEnv worker_env;  // extra environment per worker (MPS variables, ...); optional
  bool restart_group_on_fault = false;
  bool share_weights = false;  // one device copy of the weights for every worker (shared_weights.h)
  std::chrono::milliseconds heartbeat_interval{1000};
  int missed_heartbeats = 5;  // a worker silent for this many intervals is hung
  std::chrono::milliseconds batch_timeout_floor{30'000};
  double batch_timeout_per_audio_second = 1.0;         // a worker must run at least at real time
  std::chrono::milliseconds startup_timeout{300'000};  // spawn to Hello (loading the model)
  std::chrono::milliseconds restart_backoff_initial{100};
  std::chrono::milliseconds restart_backoff_max{5'000};
  void validate() const;  // throws kInvalidArgument naming the field
};

// How a worker gets its weights, for its command line: kImport's memory is descriptor kWorkerWeightsFd.
struct WeightsArgs {
  WeightsRole role = WeightsRole::kPrivate;
  uint64_t bytes = 0;   // kImport: the shared copy's size and identity; kExport: an earlier copy's, or 0
  uint64_t layout = 0;
};

// The worker's argv after argv[0] (the socket is descriptor kWorkerSocketFd).
std::vector<std::string> worker_arguments(const ProcessExecutorConfig& config, int worker,
                                          const WeightsArgs& weights = {});

class ProcessExecutor {
 public:
  // Starts the workers and waits until every one has loaded its model; throws kUnavailable naming the worker and
  // how it ended when one does not (its own messages are on the server's stderr). Then each worker's dispatcher
  // pulls from `batcher`, which must outlive this executor. `fleet_metrics` may be null.
  ProcessExecutor(ProcessExecutorConfig config, DynamicBatcher& batcher, RequestCompleter complete,
                  ModelMetrics* metrics, FleetMetrics* fleet_metrics);
  ~ProcessExecutor();  // shuts the batcher down, lets the dispatchers drain it, stops the workers
  ProcessExecutor(const ProcessExecutor&) = delete;
  ProcessExecutor& operator=(const ProcessExecutor&) = delete;

  // Waits for every dispatcher to finish (after the batcher's shutdown) and stops the workers. Idempotent.
  void join();
  int workers() const { return static_cast<int>(slots_.size()); }

 private:
  struct Slot;
  struct Loss;
  using Answer = std::variant<BatchResult, BatchFailed, Loss>;  // how a batch sent to a worker ended

  struct WeightsStart;  // how one start of a worker gets its weights (share_weights)

  WorkerLaunch launch(int worker, const WeightsStart& weights) const;
  void start_fleet(size_t begin, size_t end);
  bool start_worker(Slot& s);
  std::optional<std::string> await_ready(Slot& s, Hello* hello = nullptr, UniqueFd* fd = nullptr);
  WeightsStart begin_weights(int worker);
  void end_weights(Slot& s, WeightsStart& start, const Hello* hello, UniqueFd fd);
  void drop_shared_weights();
  void report_shared_weights();
  bool restart(Slot& s);
  void dispatch(Slot& s);
  std::optional<Loss> check_idle(Slot& s);
  void run_batch(Slot& s, Batch batch);
  Answer await_answer(Slot& s, uint64_t batch_id, size_t clips, Clock::time_point deadline);
  void on_heartbeat(Slot& s, const Heartbeat& beat);
  void on_lost(Slot& s, const Loss& loss, std::optional<Batch> batch);
  void replay(Batch batch, bool charge, const std::string& why);
  void restart_group(const Slot& faulted);
  void retire(Slot& s);
  void fail_remaining(const std::string& why);
  void complete(Batch& batch, Clock::time_point start, Clock::time_point end, const asr::StageTimings& timings,
                std::vector<asr::Transcript>* transcripts, const std::string& error);
  int batch_cap();
  void lower_batch_cap(int failed_batch_size);
  void batch_succeeded();

  ProcessExecutorConfig config_;
  DynamicBatcher& batcher_;
  RequestCompleter complete_;
  ModelMetrics* metrics_;
  FleetMetrics* fleet_metrics_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<uint64_t> next_batch_id_{0};
  std::atomic<bool> stopping_{false};
  std::mutex cap_mu_;
  int batch_cap_;
  int successes_at_cap_ = 0;
  std::mutex join_mu_;

  // share_weights: where the fleet's copy stands. kCreating while a worker makes it (other starts wait for it);
  // kShared with the copy's descriptor held; kPrivate when its creator could not make it (until a group restart).
  enum class WeightsState { kOff, kNeedCreator, kCreating, kShared, kPrivate };
  std::mutex weights_mu_;
  std::condition_variable weights_cv_;
  WeightsState weights_state_ = WeightsState::kOff;
  UniqueFd weights_fd_;
  uint64_t weights_bytes_ = 0;
  uint64_t weights_layout_ = 0;
};

}  // namespace steno::serve::fleet
