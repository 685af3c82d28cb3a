// The worker processes of one model (the `processes` and `mps` sharing modes): `steno worker` processes (worker.h),
// each started, watched over its life and ended here. The supervisor owns the processes; each worker's executor
// (worker_executor.h) talks to its own over the socket and tells the supervisor when it is lost.
//
//   start(i)  spawns worker i -- this same binary, with its weights as the SharedWeightsBroker says -- and waits
//             until it has loaded its model (its Hello), at most startup_timeout.
//   lose(i)   ends a worker found lost: one that went away by itself gets a moment to finish exiting, a hung or
//             misbehaving one is SIGKILLed; it is logged with its index, pid, exit status or signal and batch, and
//             counted by reason. With restart_group_on_fault (MPS, where one client's fault kills every client of
//             the GPU) it also kills every other worker of the group (fault_group.h: this fleet's, or every fleet
//             under the same daemon) -- unless it was killed by a signal while idle, with no GPU work outstanding:
//             that one restarts alone; the others' executors find them lost as victims (Loss::kGroup), and the
//             shared weights are dropped. No worker starts again until every worker of the group is gone and the
//             group's recovery has run: under MPS a client that starts while a faulted one still lives is refused,
//             or faults in its first batch, and its replayed requests would be charged a second fault they did not
//             cause.
//   stop(i)   an orderly end (draining): the worker's socket is shut, it exits, what is left is killed.
// Workers exit with the server: the parent-death signal ends them if it dies, and destroying the supervisor kills
// and reaps any still running.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "steno/asr/tdt_beam.h"
#include "steno/core/device.h"
#include "steno/core/dtype.h"
#include "steno/ops/context.h"
#include "serve/executor.h"
#include "serve/fleet/fault_group.h"
#include "serve/fleet/fleet_metrics.h"
#include "serve/fleet/shared_weights_broker.h"
#include "serve/fleet/worker_process.h"

namespace steno::serve::fleet {

// What every worker runs: `steno [--log-level L] worker ...` with these settings (worker.h).
struct WorkerCommand {
  std::string executable = "/proc/self/exe";  // this same binary
  std::string model_dir;
  Device device = Device::cpu();
  DType dtype = DType::kF32;
  bool fp8_linears = false;  // --dtype fp8 (dtype bf16): the ASR encoder's linear layers in FP8
  int threads = 0;  // CPU threads per worker (0: the worker's default)
  ops::GemmBackend gemm = ops::GemmBackend::kOneDnn;
  std::string log_level;  // "": the server's current level
  double long_audio_seconds = 0;  // the engines' long-form mode past this (WorkerOptions); 0: never
  int long_attention = 128;
  asr::DecodingRequest decoding;  // the ASR's decoding (greedy or beam search), resolved by each worker
};

using WorkerEnv = std::function<std::vector<std::pair<std::string, std::string>>(int worker)>;

struct WorkerFleetConfig {
  int workers = 1;
  WorkerCommand command;
  WorkerEnv worker_env;  // extra environment per worker (MPS variables, ...); optional
  bool restart_group_on_fault = false;
  // With restart_group_on_fault: what makes the group's GPU take clients again once every worker of a faulted group
  // is gone (MPS: MpsDaemon::restart), run before the first worker starts again. Optional.
  std::function<void()> recover_group;
  // With restart_group_on_fault: the group these workers fault with, shared with other fleets whose workers are
  // clients of the same GPU's MPS daemon (its recovery then is the group's, and recover_group is unused); null: a
  // group of this fleet alone, recovered by recover_group.
  std::shared_ptr<FaultGroup> fault_group;
  bool share_weights = false;  // one device copy of the weights for every worker (shared_weights.h)
  std::chrono::milliseconds heartbeat_interval{1000};
  int missed_heartbeats = 5;  // a worker silent for this many intervals is hung
  std::chrono::milliseconds batch_timeout_floor{30'000};
  double batch_timeout_per_audio_second = 1.0;         // a worker must run at least at real time
  std::chrono::milliseconds startup_timeout{300'000};  // spawn to Hello (loading the model)
  void validate() const;  // throws kInvalidArgument naming the field
};

// The worker's argv after argv[0] (the socket is descriptor kWorkerSocketFd).
std::vector<std::string> worker_arguments(const WorkerFleetConfig& config, int worker,
                                          const WeightsArgs& weights = {});

class WorkerSupervisor : private FaultGroup::Member {
 public:
  // Starts nothing yet. `metrics` may be null.
  WorkerSupervisor(WorkerFleetConfig config, std::unique_ptr<FleetMetrics> metrics);
  ~WorkerSupervisor();  // kills and reaps every worker still running
  WorkerSupervisor(const WorkerSupervisor&) = delete;
  WorkerSupervisor& operator=(const WorkerSupervisor&) = delete;

  const WorkerFleetConfig& config() const { return config_; }
  int size() const { return static_cast<int>(workers_.size()); }
  FleetMetrics* metrics() const { return metrics_.get(); }
  uint64_t next_batch_id() { return ++batch_ids_; }

  // Spawns worker `i` and waits for its Hello: nullopt when it is up, else what happened and how it ended.
  std::optional<std::string> start(int i);
  // Worker `i`'s process while it is up, null when down. For worker i's executor thread only.
  WorkerProcess* process(int i) const;
  // Whether worker `i` was killed because another worker of its group faulted.
  bool taken_down_with_group(int i) const;
  // Worker `i` was lost (`reason`, `why`) while running a batch of `batch_size` (0: idle). Ends it, logs and counts
  // it, and restarts its group where configured. kGroup when it was a victim of its group, kFault otherwise.
  Loss lose(int i, RestartReason reason, const std::string& why, size_t batch_size);
  // Stops worker `i` in order, if it is up.
  void stop(int i);

 private:
  struct Worker;

  WorkerLaunch launch(int i, const SharedWeightsBroker::Start& weights) const;
  void notify_down();
  std::optional<std::string> await_hello(Worker& w, Hello* hello, UniqueFd* fd);
  // FaultGroup::Member.
  void take_down(int except) override;
  bool all_down() const override;

  WorkerFleetConfig config_;
  std::unique_ptr<FleetMetrics> metrics_;
  SharedWeightsBroker weights_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<uint64_t> batch_ids_{0};
  std::atomic<int> first_starts_{0};  // workers that have started once: the fleet is ready when all have
  std::shared_ptr<FaultGroup> group_;  // restart_group_on_fault: the group it joined; null otherwise
};

}  // namespace steno::serve::fleet
