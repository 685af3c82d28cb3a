// The inference core behind every front end: a registry of served models, each with its own DynamicBatcher and
// executors -- lanes in this process, or worker processes (fleet/process_executor.h) -- and the metrics of them
// all. Implements TranscriptionService (service.h).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "steno/serve/batcher.h"
#include "steno/serve/executor.h"
#include "steno/serve/fleet/process_executor.h"
#include "steno/serve/metrics.h"
#include "steno/serve/service.h"

namespace steno::serve {

struct ModelSpec {
  std::string name;           // as clients address it ("steno-tdt-small-en")
  std::string version = "1";  // the `version` label of its metrics (Triton's model version)
  std::shared_ptr<const asr::AsrModel> model;
  RunnerFactory runners;  // empty: CPU Transcriber lanes over `model` (tests inject their own)
  // Set: the model runs in worker processes that load it themselves (`model` and `runners` are not needed).
  std::optional<fleet::ProcessExecutorConfig> processes = std::nullopt;
};

struct CoreConfig {
  BatcherConfig batcher;
  LaneConfig lanes;
  std::shared_ptr<prometheus::Registry> registry;  // null: a registry of the core's own
};

class InferenceCore final : public TranscriptionService {
 public:
  // Starts every model's batcher and lanes; the first model is the default. Throws steno::Error on a bad
  // configuration (no models, duplicate names, a model without weights or runners).
  InferenceCore(std::vector<ModelSpec> models, CoreConfig config);
  ~InferenceCore() override;  // drains

  void submit(std::unique_ptr<TranscriptionRequest> request) override;
  std::vector<std::string> models() const override;
  bool ready() const override;
  void drain() override;
  std::string render_metrics() const override;

  ServeMetrics& metrics() { return metrics_; }
  const CoreConfig& config() const { return config_; }

 private:
  struct Served;
  Served* find(const std::string& name) const;

  CoreConfig config_;
  ServeMetrics metrics_;
  std::vector<std::unique_ptr<Served>> served_;  // fixed after construction: read without a lock
  std::atomic<bool> accepting_{false};
  std::mutex drain_mu_;  // one drain at a time; later ones wait for it
  bool drained_ = false;
};

}  // namespace steno::serve
