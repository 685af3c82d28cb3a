// What the inference core counts, in one place: every request, batch and executor event is recorded once, here,
// and both views are rendered from it -- Prometheus text under Triton's names (GET /metrics) and KServe's
// statistics extension (HTTP /v2/models/{m}/stats and gRPC ModelStatistics). Front ends only render.
//
// Triton's series (counters unless said otherwise; labels model and version):
//   nv_inference_request_success            requests answered with a transcript
//   nv_inference_request_failure{reason}    REJECTED (queue full, deadline, shutting down), CANCELED, BACKEND (the
//                                           engine failed), OTHER (the request itself was bad: audio, fields)
//   nv_inference_count, nv_inference_exec_count   requests run / batches run (mean batch = count / exec_count)
//   nv_inference_request_duration_us        cumulative arrival -> response, successful requests
//   nv_inference_queue_duration_us          cumulative submit -> batch start (time queued), successful requests
//   nv_inference_compute_input_duration_us  cumulative audio decoding and checking, successful requests
//   nv_inference_compute_infer_duration_us  cumulative compute of the batch each successful request ran in (as
//                                           Triton counts it: a batch of n adds its time n times)
//   nv_inference_compute_output_duration_us cumulative rendering of the answers, successful requests
//   nv_inference_pending_request_count      gauge: requests queued, not yet in a batch
// steno's:
//   steno_batch_size, steno_padding_waste   histograms, one observation per batch run
//   steno_stage_duration_us{stage}          cumulative per batch: features | encoder | decoder | detokenize
//   steno_audio_seconds_total               seconds of audio transcribed
//   steno_replayed_requests_total           requests run again after their executor was lost
//   steno_poisoned_requests_total           requests failed alone for taking down executors twice
//   steno_batch_splits_total                batches split in halves after running out of memory
//   steno_batch_cap{executor}               gauge: the largest batch each executor asks for (batch_cap.h)
// steno's per device (labels model, version, device -- "cuda:1", or "cuda:0#1" for a device listed twice -- and
// gpu_uuid, Triton's label of a GPU: "" on the CPU), one set for each entry of --device (device_groups.h):
//   steno_device_inference_count            counter: requests run to completion on the device
//   steno_device_exec_count                 counter: batches run to completion on the device
//   steno_device_executors_up               gauge: its executors up now (0: the device is out)
//   steno_device_executor_losses_total      counter: its executors lost (crashed, hung, or their device faulted)
// Unknown model names never become labels (clients choose them: unbounded cardinality).
#pragma once

#include <array>
#include <cstdint>
#include <map>
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
template <typename T>
class Family;
}  // namespace prometheus

namespace steno::serve {

struct DeviceGroup;  // device_groups.h

// One model's statistics. Thread-safe.
class ModelStatistics {
 public:
  // A request answered with `response` (any outcome), `total_ms` after it arrived.
  // `ran_as_pieces`: a long request whose pieces were counted as its inferences (piece_ran) as they finished.
  void request_finished(const TranscriptionResponse& response, double total_ms, bool ran_as_pieces = false);
  // A piece of a long request ran (serve/piecewise.h): one inference, not a request.
  void piece_ran();
  // Rendering a successful answer took `ms` (its compute_output), for a request of a batch of `batch_size`.
  void output_rendered(int batch_size, double ms);
  // A batch that ran to completion.
  void batch_executed(int size, double padding_waste, const StageDurations& durations);
  void set_pending(size_t queued);

  // The executor pool's events.
  void requests_replayed(int n);
  void request_poisoned();
  void batch_split();
  void set_batch_cap(int executor, int cap);
  // The model's device groups, in the order of the executors' device_group(); called once, before they start.
  void set_devices(const std::vector<DeviceGroup>& groups);
  // Events of an executor of group `group` (one outside the groups set is ignored).
  void device_batch_executed(int group, int size);
  void device_executors_up(int group, int delta);
  void device_executor_lost(int group);

  ModelStatsSnapshot snapshot() const;

 private:
  friend class ServeStatistics;
  ModelStatistics() = default;

  struct Series;  // the Prometheus series (statistics.cc)
  std::unique_ptr<Series> series_;
  std::string name_, version_;

  // The KServe table. Batches by size: each batch adds one execution; its requests add their input and output.
  struct BatchBucket {
    uint64_t executions = 0;
    uint64_t infer_ns = 0, input_ns = 0, output_ns = 0;
  };
  mutable std::mutex mu_;
  uint64_t last_inference_ms_ = 0;
  uint64_t inference_count_ = 0;
  uint64_t execution_count_ = 0;
  StatDuration success_, fail_, queue_, compute_input_, compute_infer_, compute_output_;
  std::map<int, BatchBucket> batches_;
};

class ServeStatistics {
 public:
  // Registers the families in `registry` (a new one when null), so that other parts (the worker fleet, MPS) can
  // add theirs to the same registry and /metrics shows them all.
  explicit ServeStatistics(std::shared_ptr<prometheus::Registry> registry = nullptr);
  ~ServeStatistics();
  ServeStatistics(const ServeStatistics&) = delete;
  ServeStatistics& operator=(const ServeStatistics&) = delete;

  // The statistics of one served model (every series present from the start, at 0). The reference stays valid
  // for the ServeStatistics' lifetime.
  ModelStatistics& add_model(const std::string& name, const std::string& version);

  // The whole registry in Prometheus' text exposition format (the body of GET /metrics).
  std::string render() const;
  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  std::mutex mu_;
  std::vector<std::unique_ptr<ModelStatistics>> models_;
};

}  // namespace steno::serve
