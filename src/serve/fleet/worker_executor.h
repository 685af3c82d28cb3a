// A worker process as an executor (executor.h): the dispatcher between the executor pool and one `steno worker`.
// It sends a batch (the requests' PCM through shared memory, shared_pcm.h), waits for the answer while watching
// the worker's heartbeats, and tells the supervisor (worker_supervisor.h) when the worker is lost:
//   - its socket closes (it exited or was killed), or it breaks the protocol;
//   - it hangs: no frame for missed_heartbeats heartbeat intervals (a SIGSTOPped worker), or a batch running past
//     max(batch_timeout_floor, batch_timeout_per_audio_second x the batch's audio seconds).
// The batch it was running then comes back to the pool as lost, which replays it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "serve/executor.h"
#include "serve/fleet/worker_supervisor.h"

namespace steno::serve::fleet {

class WorkerExecutor final : public Executor {
 public:
  WorkerExecutor(int index, std::shared_ptr<WorkerSupervisor> supervisor);

  const std::string& name() const override { return name_; }
  int max_batch_size() const override;
  std::optional<std::string> start() override;
  bool up() const override;
  BatchRun run(const Batch& batch) override;
  std::chrono::milliseconds idle_check_interval() const override;
  Loss check_idle() override;
  void stop() override;

 private:
  struct Lost;

  std::variant<BatchResult, BatchFailed, Lost> await_answer(uint64_t batch_id, size_t clips,
                                                           Clock::time_point deadline);
  void on_heartbeat(const Heartbeat& beat);
  std::chrono::milliseconds silence_limit() const;

  int index_;
  std::string name_;
  std::shared_ptr<WorkerSupervisor> supervisor_;
  Clock::time_point last_frame_;
};

// One executor per worker of a fleet, over one supervisor (which the executors keep alive, with `metrics`, which
// may be null).
std::vector<std::unique_ptr<Executor>> worker_executors(WorkerFleetConfig config,
                                                        std::unique_ptr<FleetMetrics> metrics);

}  // namespace steno::serve::fleet
