// The server's Prometheus metrics, under Triton's names (serving-protocols.md §4) so that Triton dashboards work
// unchanged, plus steno's own. Per-model series carry the labels model and version.
//
// Triton's (counters unless said otherwise):
//   nv_inference_request_success            requests answered with a transcript
//   nv_inference_request_failure{reason}    REJECTED (queue full, deadline, shutting down), CANCELED, BACKEND (the
//                                           engine failed), OTHER
//   nv_inference_count, nv_inference_exec_count   requests run / batches run (mean batch = count / exec_count)
//   nv_inference_request_duration_us        cumulative arrival -> response, successful requests
//   nv_inference_queue_duration_us          cumulative submit -> batch start (time queued), successful requests
//   nv_inference_compute_infer_duration_us  cumulative compute of the batch each successful request ran in (as
//                                           Triton counts it: a batch of n adds its time n times)
//   nv_inference_pending_request_count      gauge: requests queued, not yet in a batch
// steno's:
//   steno_batch_size, steno_padding_waste   histograms, one observation per batch run
//   steno_stage_duration_us{stage}          cumulative per batch: features | encoder | decoder | detokenize
//   steno_audio_seconds_total               seconds of audio transcribed
// Unknown model names never become labels (clients choose them: unbounded cardinality).
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "steno/serve/service.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
}  // namespace prometheus

namespace steno::serve {

// Triton's failure reason for an outcome other than kOk.
const char* failure_reason(Outcome o);

// One model's series. Thread-safe (prometheus-cpp's metrics are).
class ModelMetrics {
 public:
  // `request_us` is arrival -> completion; `audio_s` counts for successes only.
  void request_completed(const TranscriptionResponse& response, double request_us, double audio_s);
  // A batch that ran to completion.
  void batch_executed(int size, double padding_waste, const StageDurations& durations);
  void set_pending(size_t queued);

 private:
  friend class ServeMetrics;
  ModelMetrics() = default;
  prometheus::Counter* success_ = nullptr;
  std::array<prometheus::Counter*, 4> failure_{};  // REJECTED, CANCELED, BACKEND, OTHER
  prometheus::Counter* count_ = nullptr;
  prometheus::Counter* exec_count_ = nullptr;
  prometheus::Counter* request_us_ = nullptr;
  prometheus::Counter* queue_us_ = nullptr;
  prometheus::Counter* compute_infer_us_ = nullptr;
  prometheus::Gauge* pending_ = nullptr;
  prometheus::Histogram* batch_size_ = nullptr;
  prometheus::Histogram* padding_waste_ = nullptr;
  std::array<prometheus::Counter*, 4> stage_us_{};  // features, encoder, decoder, detokenize
  prometheus::Counter* audio_seconds_ = nullptr;
};

class ServeMetrics {
 public:
  // Registers the families in `registry` (a new one when null), so front ends can add theirs to the same registry
  // and /metrics shows them all.
  explicit ServeMetrics(std::shared_ptr<prometheus::Registry> registry = nullptr);
  ~ServeMetrics();
  ServeMetrics(const ServeMetrics&) = delete;
  ServeMetrics& operator=(const ServeMetrics&) = delete;

  // The series of one served model (every counter present from the start, at 0). The reference stays valid for
  // the ServeMetrics' lifetime.
  ModelMetrics& add_model(const std::string& name, const std::string& version);

  // The whole registry in Prometheus' text exposition format (the body of GET /metrics).
  std::string render() const;
  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  std::mutex mu_;
  std::vector<std::unique_ptr<ModelMetrics>> models_;
};

}  // namespace steno::serve
