#include "steno/serve/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

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

}  // namespace

const char* failure_reason(Outcome o) {
  switch (o) {
    case Outcome::kQueueFull:
    case Outcome::kDeadlineExceeded:  // Triton counts scheduler timeouts as REJECTED
    case Outcome::kShuttingDown: return "REJECTED";
    case Outcome::kCancelled: return "CANCELED";
    case Outcome::kError: return "BACKEND";
    default: return "OTHER";
  }
}

void ModelMetrics::request_completed(const TranscriptionResponse& r, double request_us, double audio_s) {
  if (r.outcome != Outcome::kOk) {
    failure_[reason_index(r.outcome)]->Increment();
    return;
  }
  success_->Increment();
  request_us_->Increment(request_us);
  queue_us_->Increment(r.durations.queue_ms * 1000);
  compute_infer_us_->Increment(r.durations.compute_ms * 1000);
  audio_seconds_->Increment(audio_s);
}

void ModelMetrics::batch_executed(int size, double padding_waste, const StageDurations& d) {
  count_->Increment(size);
  exec_count_->Increment();
  batch_size_->Observe(size);
  padding_waste_->Observe(padding_waste);
  const std::array<double, 4> stage_ms = {d.features_ms, d.encoder_ms, d.decoder_ms, d.detokenize_ms};
  for (size_t i = 0; i < stage_ms.size(); ++i) stage_us_[i]->Increment(stage_ms[i] * 1000);
}

void ModelMetrics::set_pending(size_t queued) { pending_->Set(static_cast<double>(queued)); }

struct ServeMetrics::Families {
  explicit Families(prometheus::Registry& r)
      : success(prometheus::BuildCounter()
                    .Name("nv_inference_request_success")
                    .Help("Number of successful inference requests, all batch sizes")
                    .Register(r)),
        failure(prometheus::BuildCounter()
                    .Name("nv_inference_request_failure")
                    .Help("Number of failed inference requests, all batch sizes")
                    .Register(r)),
        count(prometheus::BuildCounter()
                  .Name("nv_inference_count")
                  .Help("Number of inferences performed (does not include cached requests)")
                  .Register(r)),
        exec_count(prometheus::BuildCounter()
                       .Name("nv_inference_exec_count")
                       .Help("Number of model executions performed (does not include cached requests)")
                       .Register(r)),
        request_us(prometheus::BuildCounter()
                       .Name("nv_inference_request_duration_us")
                       .Help("Cumulative inference request duration in microseconds")
                       .Register(r)),
        queue_us(prometheus::BuildCounter()
                     .Name("nv_inference_queue_duration_us")
                     .Help("Cumulative inference queuing duration in microseconds")
                     .Register(r)),
        compute_infer_us(prometheus::BuildCounter()
                             .Name("nv_inference_compute_infer_duration_us")
                             .Help("Cumulative compute inference duration in microseconds")
                             .Register(r)),
        pending(prometheus::BuildGauge()
                    .Name("nv_inference_pending_request_count")
                    .Help("Instantaneous number of pending requests awaiting execution per-model")
                    .Register(r)),
        batch_size(prometheus::BuildHistogram()
                       .Name("steno_batch_size")
                       .Help("Requests per executed batch")
                       .Register(r)),
        padding_waste(prometheus::BuildHistogram()
                          .Name("steno_padding_waste")
                          .Help("Share of an executed batch's samples that are padding")
                          .Register(r)),
        stage_us(prometheus::BuildCounter()
                     .Name("steno_stage_duration_us")
                     .Help("Cumulative per-batch duration of each pipeline stage in microseconds")
                     .Register(r)),
        audio_seconds(prometheus::BuildCounter()
                          .Name("steno_audio_seconds_total")
                          .Help("Seconds of audio transcribed")
                          .Register(r)) {}

  prometheus::Family<prometheus::Counter>& success;
  prometheus::Family<prometheus::Counter>& failure;
  prometheus::Family<prometheus::Counter>& count;
  prometheus::Family<prometheus::Counter>& exec_count;
  prometheus::Family<prometheus::Counter>& request_us;
  prometheus::Family<prometheus::Counter>& queue_us;
  prometheus::Family<prometheus::Counter>& compute_infer_us;
  prometheus::Family<prometheus::Gauge>& pending;
  prometheus::Family<prometheus::Histogram>& batch_size;
  prometheus::Family<prometheus::Histogram>& padding_waste;
  prometheus::Family<prometheus::Counter>& stage_us;
  prometheus::Family<prometheus::Counter>& audio_seconds;
};

ServeMetrics::ServeMetrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(registry ? std::move(registry) : std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<Families>(*registry_)) {}

ServeMetrics::~ServeMetrics() = default;

ModelMetrics& ServeMetrics::add_model(const std::string& name, const std::string& version) {
  const prometheus::Labels labels = {{"model", name}, {"version", version}};
  const auto with = [&](const char* key, const char* value) {
    prometheus::Labels l = labels;
    l[key] = value;
    return l;
  };
  Families& f = *families_;
  std::unique_ptr<ModelMetrics> m(new ModelMetrics());
  m->success_ = &f.success.Add(labels);
  for (size_t i = 0; i < kReasons.size(); ++i) m->failure_[i] = &f.failure.Add(with("reason", kReasons[i]));
  m->count_ = &f.count.Add(labels);
  m->exec_count_ = &f.exec_count.Add(labels);
  m->request_us_ = &f.request_us.Add(labels);
  m->queue_us_ = &f.queue_us.Add(labels);
  m->compute_infer_us_ = &f.compute_infer_us.Add(labels);
  m->pending_ = &f.pending.Add(labels);
  m->batch_size_ = &f.batch_size.Add(labels, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128});
  m->padding_waste_ = &f.padding_waste.Add(
      labels, prometheus::Histogram::BucketBoundaries{0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75});
  for (size_t i = 0; i < kStages.size(); ++i) m->stage_us_[i] = &f.stage_us.Add(with("stage", kStages[i]));
  m->audio_seconds_ = &f.audio_seconds.Add(labels);
  std::lock_guard lock(mu_);
  models_.push_back(std::move(m));
  return *models_.back();
}

std::string ServeMetrics::render() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace steno::serve
