// The inference core behind every front end: the registry of served models (each with its own batcher, executor
// pool and statistics), the one submission path, and the statistics of them all. Implements the service contract
// (service.h).
//
// A submission's path: its model is resolved (name or alias), its fault tag read (tests only), its audio decoded
// and checked against the model's limits on the caller's thread (a long transcription's speech then found by the
// VAD on the core's own threads), then it is queued in the model's batcher; an executor of the model's pool runs
// it in a batch; a RequestCompleter records, logs and answers it. A request
// refused anywhere on the way is answered through the same completer, so every failure a client sees is counted
// once, the same way, whatever the protocol.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "serve/batcher.h"
#include "serve/device_groups.h"
#include "serve/executor.h"
#include "serve/executor_pool.h"
#include "serve/lanes.h"
#include "serve/model_registry.h"
#include "serve/piecewise.h"
#include "steno/serve/service.h"
#include "serve/statistics.h"
#include "serve/work_pool.h"
#include "steno/vad/vad.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace steno::serve {

// What the core needs to serve one model.
struct ModelSpec {
  // Name, aliases, version and what clients may see of it. The core fills in executors, max_batch_size and
  // max_queue_delay_us from the fields below.
  ModelInfo info;
  BatcherConfig batcher;
  // Makes the model's executors when the core starts it; `registry` takes any series of their own (the worker
  // fleet's). Their first start happens inside the core's constructor.
  std::function<std::vector<std::unique_ptr<Executor>>(prometheus::Registry& registry)> executors;
  PoolPolicy policy;
  // The devices its executors run on, indexed by their device_group() (device_groups.h): each has its series in
  // /metrics. Empty: one group, named info.device.
  std::vector<DeviceGroup> devices;
  std::shared_ptr<void> resources;  // kept alive until the executors are gone (an MPS daemon they use)
};

// A model served by `lanes` lanes over `runners` (lanes.h), with the default batcher and limits: what tests and
// embedding programs need to serve a runner of their own.
ModelSpec lane_model(std::string name, int lanes, RunnerFactory runners);

struct CoreConfig {
  // Tests only: honour Submission::fault (worker processes crash, hang, fault or run out of memory on purpose).
  bool enable_fault_injection = false;
  // Transcription models' audio cut to its speech when vad_applies(vad_mode, seconds) (null: never); with any mode
  // but kOff, diarizations are kept to the speech (diarization_gate.h).
  std::shared_ptr<const vad::SpeechDetector> vad;
  vad::VadMode vad_mode = vad::VadMode::kOff;
  std::shared_ptr<prometheus::Registry> registry;  // null: a registry of the core's own
  // How long a model may go without an executor up before the core says it is not live (live()): longer than the
  // executors' restart backoff (5 s) and a worker's model load, short enough that a GPU which faulted for good
  // gets the process restarted within a minute of probes.
  std::chrono::milliseconds no_executor_grace{30'000};
};

class InferenceCore final : public TranscriptionService {
 public:
  // Starts every model's batcher and executors (waiting until every executor is up); the first model is the
  // default. Throws steno::Error on a bad configuration (no models, a name or alias taken twice, a model without
  // executors) and kUnavailable when an executor cannot start.
  InferenceCore(std::vector<ModelSpec> models, CoreConfig config = {});
  ~InferenceCore() override;  // drains

  void submit(Submission submission, AnswerFn answer) override;
  std::vector<ModelInfo> models() const override { return registry_.infos(); }
  bool ready() const override;
  bool live() const override;
  void drain() override;
  std::vector<ModelStatsSnapshot> statistics(const std::vector<std::string>& models) const override;
  std::string render_metrics() const override { return stats_.render(); }

  const std::shared_ptr<prometheus::Registry>& registry() const { return stats_.registry(); }

 private:
  // Recordings whose VAD runs at once; each runs in segments over the machine's threads (vad.h), so two keep the
  // CPU busy while one finishes.
  static constexpr int kVadJobs = 2;

  // The rest of a submission once its audio is decoded and its speech found (nullopt: no VAD): a transcription cut
  // to its speech and run whole or in pieces, or any request queued in its model's batcher.
  void queue(ServedModel& m, std::unique_ptr<TranscriptionRequest> r,
             const std::optional<std::vector<vad::SampleRange>>& speech, bool gate_speakers);

  CoreConfig config_;
  ServeStatistics stats_;
  ModelRegistry registry_;  // fixed after construction: read without a lock
  PiecewiseRuns piecewise_;  // long transcriptions running as pieces
  std::mutex vad_mu_;
  std::unique_ptr<WorkPool> vad_pool_;  // null without a VAD and once drain() has begun
  std::atomic<bool> accepting_{false};
  std::mutex drain_mu_;  // one drain at a time; later ones wait for it
  bool drained_ = false;
};

}  // namespace steno::serve
