#include "serve/statistics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <chrono>

#include "steno/core/error.h"

#include "serve/device_groups.h"
#include "serve/host_memory_metrics.h"

namespace steno::serve {
namespace {

constexpr std::array<const char*, 4> kReasons = {"REJECTED", "CANCELED", "BACKEND", "OTHER"};
constexpr std::array<const char*, 4> kStages = {"features", "encoder", "decoder", "detokenize"};

size_t reason_index(Outcome o) {
  const std::string_view reason = failure_reason(o);
  for (size_t i = 0; i < kReasons.size(); ++i)
    if (reason == kReasons[i]) return i;
  return kReasons.size() - 1;
}

uint64_t to_ns(double ms) { return ms > 0 ? static_cast<uint64_t>(ms * 1e6) : 0; }

void add(StatDuration& d, uint64_t ns) {
  ++d.count;
  d.ns += ns;
}

uint64_t epoch_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

struct ServeStatistics::Families {
  template <typename Builder>
  static auto& family(Builder builder, const char* name, const char* help, prometheus::Registry& r) {
    return builder.Name(name).Help(help).Register(r);
  }

  explicit Families(prometheus::Registry& r)
      : success(family(prometheus::BuildCounter(), "nv_inference_request_success",
                       "Number of successful inference requests, all batch sizes", r)),
        failure(family(prometheus::BuildCounter(), "nv_inference_request_failure",
                       "Number of failed inference requests, all batch sizes", r)),
        count(family(prometheus::BuildCounter(), "nv_inference_count",
                     "Number of inferences performed (does not include cached requests)", r)),
        exec_count(family(prometheus::BuildCounter(), "nv_inference_exec_count",
                          "Number of model executions performed (does not include cached requests)", r)),
        request_us(family(prometheus::BuildCounter(), "nv_inference_request_duration_us",
                          "Cumulative inference request duration in microseconds", r)),
        queue_us(family(prometheus::BuildCounter(), "nv_inference_queue_duration_us",
                        "Cumulative inference queuing duration in microseconds", r)),
        compute_input_us(family(prometheus::BuildCounter(), "nv_inference_compute_input_duration_us",
                                "Cumulative compute input duration in microseconds", r)),
        compute_infer_us(family(prometheus::BuildCounter(), "nv_inference_compute_infer_duration_us",
                                "Cumulative compute inference duration in microseconds", r)),
        compute_output_us(family(prometheus::BuildCounter(), "nv_inference_compute_output_duration_us",
                                 "Cumulative inference compute output duration in microseconds", r)),
        pending(family(prometheus::BuildGauge(), "nv_inference_pending_request_count",
                       "Instantaneous number of pending requests awaiting execution per-model", r)),
        batch_size(family(prometheus::BuildHistogram(), "steno_batch_size", "Requests per executed batch", r)),
        padding_waste(family(prometheus::BuildHistogram(), "steno_padding_waste",
                             "Share of an executed batch's samples that are padding", r)),
        stage_us(family(prometheus::BuildCounter(), "steno_stage_duration_us",
                        "Cumulative per-batch duration of each pipeline stage in microseconds", r)),
        audio_seconds(family(prometheus::BuildCounter(), "steno_audio_seconds_total", "Seconds of audio transcribed",
                             r)),
        replayed(family(prometheus::BuildCounter(), "steno_replayed_requests_total",
                        "Requests run again after the executor running them was lost", r)),
        poisoned(family(prometheus::BuildCounter(), "steno_poisoned_requests_total",
                        "Requests failed alone after crashing or hanging executors twice", r)),
        splits(family(prometheus::BuildCounter(), "steno_batch_splits_total",
                      "Batches split in halves and retried after running out of memory", r)),
        batch_cap(family(prometheus::BuildGauge(), "steno_batch_cap",
                         "The largest batch each executor currently asks for", r)),
        device_count(family(prometheus::BuildCounter(), "steno_device_inference_count",
                            "Number of inferences run to completion on each device", r)),
        device_exec_count(family(prometheus::BuildCounter(), "steno_device_exec_count",
                                 "Number of batches run to completion on each device", r)),
        device_up(family(prometheus::BuildGauge(), "steno_device_executors_up",
                         "Executors up on each device (0: the device is out)", r)),
        device_losses(family(prometheus::BuildCounter(), "steno_device_executor_losses_total",
                             "Executors lost on each device: crashed, hung, or their device faulted", r)) {}

  prometheus::Family<prometheus::Counter>& success;
  prometheus::Family<prometheus::Counter>& failure;
  prometheus::Family<prometheus::Counter>& count;
  prometheus::Family<prometheus::Counter>& exec_count;
  prometheus::Family<prometheus::Counter>& request_us;
  prometheus::Family<prometheus::Counter>& queue_us;
  prometheus::Family<prometheus::Counter>& compute_input_us;
  prometheus::Family<prometheus::Counter>& compute_infer_us;
  prometheus::Family<prometheus::Counter>& compute_output_us;
  prometheus::Family<prometheus::Gauge>& pending;
  prometheus::Family<prometheus::Histogram>& batch_size;
  prometheus::Family<prometheus::Histogram>& padding_waste;
  prometheus::Family<prometheus::Counter>& stage_us;
  prometheus::Family<prometheus::Counter>& audio_seconds;
  prometheus::Family<prometheus::Counter>& replayed;
  prometheus::Family<prometheus::Counter>& poisoned;
  prometheus::Family<prometheus::Counter>& splits;
  prometheus::Family<prometheus::Gauge>& batch_cap;
  prometheus::Family<prometheus::Counter>& device_count;
  prometheus::Family<prometheus::Counter>& device_exec_count;
  prometheus::Family<prometheus::Gauge>& device_up;
  prometheus::Family<prometheus::Counter>& device_losses;
};

// One model's series in the families above.
struct ModelStatistics::Series {
  prometheus::Counter* success = nullptr;
  std::array<prometheus::Counter*, 4> failure{};  // by kReasons
  prometheus::Counter* count = nullptr;
  prometheus::Counter* exec_count = nullptr;
  prometheus::Counter* request_us = nullptr;
  prometheus::Counter* queue_us = nullptr;
  prometheus::Counter* compute_input_us = nullptr;
  prometheus::Counter* compute_infer_us = nullptr;
  prometheus::Counter* compute_output_us = nullptr;
  prometheus::Gauge* pending = nullptr;
  prometheus::Histogram* batch_size = nullptr;
  prometheus::Histogram* padding_waste = nullptr;
  std::array<prometheus::Counter*, 4> stage_us{};  // by kStages
  prometheus::Counter* audio_seconds = nullptr;
  prometheus::Counter* replayed = nullptr;
  prometheus::Counter* poisoned = nullptr;
  prometheus::Counter* splits = nullptr;
  prometheus::Family<prometheus::Gauge>* batch_cap = nullptr;  // one series per executor, added as they report
  struct Device {
    prometheus::Counter* count;
    prometheus::Counter* exec_count;
    prometheus::Gauge* up;
    prometheus::Counter* losses;
  };
  std::vector<Device> devices;  // by device group; set once, before any executor reports
  prometheus::Family<prometheus::Counter>* device_count = nullptr;
  prometheus::Family<prometheus::Counter>* device_exec_count = nullptr;
  prometheus::Family<prometheus::Gauge>* device_up = nullptr;
  prometheus::Family<prometheus::Counter>* device_losses = nullptr;
};

void ModelStatistics::piece_ran() {
  std::lock_guard lock(mu_);
  last_inference_ms_ = epoch_ms();
  ++inference_count_;
}

void ModelStatistics::request_finished(const TranscriptionResponse& r, double total_ms, bool ran_as_pieces) {
  Series& s = *series_;
  if (!r.ok()) {
    s.failure[reason_index(r.outcome)]->Increment();
  } else {
    s.success->Increment();
    s.request_us->Increment(total_ms * 1000);
    s.queue_us->Increment(r.durations.queue_ms * 1000);
    s.compute_input_us->Increment(r.input_ms * 1000);
    s.compute_infer_us->Increment(r.durations.compute_ms * 1000);
    s.audio_seconds->Increment(r.audio_seconds);
  }
  std::lock_guard lock(mu_);
  if (!r.ok()) {
    add(fail_, to_ns(total_ms));
    return;
  }
  if (!ran_as_pieces) {
    last_inference_ms_ = epoch_ms();
    ++inference_count_;
  }
  add(success_, to_ns(total_ms));
  add(queue_, to_ns(r.durations.queue_ms));
  add(compute_input_, to_ns(r.input_ms));
  add(compute_infer_, to_ns(r.durations.compute_ms));
  batches_[std::max(1, r.batch_size)].input_ns += to_ns(r.input_ms);
}

void ModelStatistics::output_rendered(int batch_size, double ms) {
  series_->compute_output_us->Increment(ms * 1000);
  std::lock_guard lock(mu_);
  add(compute_output_, to_ns(ms));
  batches_[std::max(1, batch_size)].output_ns += to_ns(ms);
}

void ModelStatistics::batch_executed(int size, double padding_waste, const StageDurations& d) {
  Series& s = *series_;
  s.count->Increment(size);
  s.exec_count->Increment();
  s.batch_size->Observe(size);
  s.padding_waste->Observe(padding_waste);
  const std::array<double, 4> stage_ms = {d.features_ms, d.encoder_ms, d.decoder_ms, d.detokenize_ms};
  for (size_t i = 0; i < stage_ms.size(); ++i) s.stage_us[i]->Increment(stage_ms[i] * 1000);
  std::lock_guard lock(mu_);
  ++execution_count_;
  BatchBucket& b = batches_[std::max(1, size)];
  ++b.executions;
  b.infer_ns += to_ns(d.compute_ms);
}

void ModelStatistics::set_pending(size_t queued) { series_->pending->Set(static_cast<double>(queued)); }
void ModelStatistics::requests_replayed(int n) { series_->replayed->Increment(n); }
void ModelStatistics::request_poisoned() { series_->poisoned->Increment(); }
void ModelStatistics::batch_split() { series_->splits->Increment(); }

void ModelStatistics::set_batch_cap(int executor, int cap) {
  // Add() returns the existing series for the same labels: executors report without registering first.
  series_->batch_cap->Add({{"model", name_}, {"version", version_}, {"executor", std::to_string(executor)}})
      .Set(cap);
}

void ModelStatistics::set_devices(const std::vector<DeviceGroup>& groups) {
  Series& s = *series_;
  STENO_CHECK(s.devices.empty(), "model {}: its devices are set once", name_);
  for (const DeviceGroup& g : groups) {
    const prometheus::Labels labels = {
        {"model", name_}, {"version", version_}, {"device", g.name}, {"gpu_uuid", g.gpu_uuid}};
    s.devices.push_back({&s.device_count->Add(labels), &s.device_exec_count->Add(labels), &s.device_up->Add(labels),
                         &s.device_losses->Add(labels)});
  }
}

void ModelStatistics::device_batch_executed(int group, int size) {
  if (group < 0 || group >= static_cast<int>(series_->devices.size())) return;
  series_->devices[static_cast<size_t>(group)].count->Increment(size);
  series_->devices[static_cast<size_t>(group)].exec_count->Increment();
}

void ModelStatistics::device_executors_up(int group, int delta) {
  if (group < 0 || group >= static_cast<int>(series_->devices.size())) return;
  series_->devices[static_cast<size_t>(group)].up->Increment(delta);
}

void ModelStatistics::device_executor_lost(int group) {
  if (group < 0 || group >= static_cast<int>(series_->devices.size())) return;
  series_->devices[static_cast<size_t>(group)].losses->Increment();
}

ModelStatsSnapshot ModelStatistics::snapshot() const {
  ModelStatsSnapshot out;
  out.name = name_;
  out.version = version_;
  std::lock_guard lock(mu_);
  out.last_inference_ms = last_inference_ms_;
  out.inference_count = inference_count_;
  out.execution_count = execution_count_;
  out.success = success_;
  out.fail = fail_;
  out.queue = queue_;
  out.compute_input = compute_input_;
  out.compute_infer = compute_infer_;
  out.compute_output = compute_output_;
  for (const auto& [size, b] : batches_) {
    if (b.executions == 0) continue;  // requests' input of a batch not yet counted as run (a race of a moment)
    out.batches.push_back(
        {size, {b.executions, b.input_ns}, {b.executions, b.infer_ns}, {b.executions, b.output_ns}});
  }
  return out;
}

ServeStatistics::ServeStatistics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(registry ? std::move(registry) : std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<Families>(*registry_)) {}

ServeStatistics::~ServeStatistics() = default;

ModelStatistics& ServeStatistics::add_model(const std::string& name, const std::string& version) {
  const prometheus::Labels labels = {{"model", name}, {"version", version}};
  const auto with = [&](const char* key, const char* value) {
    prometheus::Labels l = labels;
    l[key] = value;
    return l;
  };
  Families& f = *families_;
  std::unique_ptr<ModelStatistics> m(new ModelStatistics());
  m->name_ = name;
  m->version_ = version;
  m->series_ = std::make_unique<ModelStatistics::Series>();
  ModelStatistics::Series& s = *m->series_;
  s.success = &f.success.Add(labels);
  for (size_t i = 0; i < kReasons.size(); ++i) s.failure[i] = &f.failure.Add(with("reason", kReasons[i]));
  s.count = &f.count.Add(labels);
  s.exec_count = &f.exec_count.Add(labels);
  s.request_us = &f.request_us.Add(labels);
  s.queue_us = &f.queue_us.Add(labels);
  s.compute_input_us = &f.compute_input_us.Add(labels);
  s.compute_infer_us = &f.compute_infer_us.Add(labels);
  s.compute_output_us = &f.compute_output_us.Add(labels);
  s.pending = &f.pending.Add(labels);
  s.batch_size = &f.batch_size.Add(labels, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128});
  s.padding_waste = &f.padding_waste.Add(
      labels, prometheus::Histogram::BucketBoundaries{0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75});
  for (size_t i = 0; i < kStages.size(); ++i) s.stage_us[i] = &f.stage_us.Add(with("stage", kStages[i]));
  s.audio_seconds = &f.audio_seconds.Add(labels);
  s.replayed = &f.replayed.Add(labels);
  s.poisoned = &f.poisoned.Add(labels);
  s.splits = &f.splits.Add(labels);
  s.batch_cap = &f.batch_cap;
  s.device_count = &f.device_count;
  s.device_exec_count = &f.device_exec_count;
  s.device_up = &f.device_up;
  s.device_losses = &f.device_losses;
  std::lock_guard lock(mu_);
  models_.push_back(std::move(m));
  return *models_.back();
}

std::string ServeStatistics::render() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (auto& f : host_memory_families()) families.push_back(std::move(f));
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace steno::serve
