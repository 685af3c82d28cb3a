// The diarizer's lanes: a Sortformer model (steno_diar) served like a transcription model, each lane with its own
// context over the one shared, read-only model. A request's answer is its speaker segments after the model's
// post-processing and the probabilities they came from (for speakers of words).
#include <spdlog/spdlog.h>

#include "serve/lanes.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "steno/diar/diarize.h"
#include "steno/diar/streaming.h"

namespace steno::serve {
namespace {

class DiarizerRunner final : public BatchRunner {
 public:
  DiarizerRunner(std::shared_ptr<const diar::SortformerModel> model, ops::Context ctx, LongForm long_form)
      : ctx_(std::move(ctx)), model_(std::move(model)), long_form_(long_form) {}

  // Long clips are diarized streaming, one at a time (bounded memory, linear cost; the 30.4 s operating point of
  // Streaming Sortformer), the rest offline as one batch.
  BatchOutput run(const std::vector<std::span<const float>>& clips, asr::StageTimings* timings) override {
    const auto start = std::chrono::steady_clock::now();
    const int rate = model_->sample_rate();
    std::vector<size_t> short_ones;
    std::vector<std::span<const float>> batch;
    for (size_t i = 0; i < clips.size(); ++i)
      if (!long_form_.applies(clips[i].size(), rate)) {
        short_ones.push_back(i);
        batch.push_back(clips[i]);
      }
    std::vector<diar::Diarization> found(clips.size());
    if (!batch.empty()) {
      std::vector<diar::Diarization> offline = diar::diarize(*model_, ctx_, batch, model_->config().postprocessing);
      for (size_t j = 0; j < short_ones.size(); ++j) found[short_ones[j]] = std::move(offline[j]);
    }
    for (size_t i = 0; i < clips.size(); ++i) {
      if (!long_form_.applies(clips[i].size(), rate)) continue;
      const diar::SortformerModulesConfig params = diar::streaming_preset(model_->config().sortformer_modules, "30.4s");
      diar::StreamingDiarization s = diar::diarize_streaming(*model_, ctx_, clips[i], params);
      found[i] = diar::diarization_from_probs(std::move(s.probs), s.frames,
                                              static_cast<double>(clips[i].size()) / rate, *model_,
                                              model_->config().postprocessing);
    }
    if (timings) {
      *timings = {};
      timings->encoder_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    std::vector<DiarizationResult> out;
    out.reserve(found.size());
    for (diar::Diarization& d : found) {
      DiarizationResult r;
      r.num_speakers = d.num_speakers;
      r.frame_seconds = model_->frame_seconds();
      r.frames = d.frames;
      r.probs = std::move(d.probs);
      for (const diar::SpeakerSegment& s : d.segments) r.segments.push_back({s.speaker, s.start, s.end});
      out.push_back(std::move(r));
    }
    return out;
  }

  void release_cached_memory() override {
    if (auto* pool = dynamic_cast<steno::cuda::DeviceAllocator*>(&ctx_.allocator())) pool->trim();
  }

 private:
  ops::Context ctx_;
  std::shared_ptr<const diar::SortformerModel> model_;
  LongForm long_form_;
};

}  // namespace

RunnerFactory green_diarizer_runners(std::shared_ptr<const diar::SortformerModel> model, int sms_per_lane,
                                     LongForm long_form, GreenLanes lanes) {
  STENO_CHECK(model != nullptr, "green_diarizer_runners needs a model");
  const Device device = model->device();
  return green_runners(device, sms_per_lane, std::move(lanes),
                       [model = std::move(model), long_form](ops::Context ctx) -> std::unique_ptr<BatchRunner> {
                         return std::make_unique<DiarizerRunner>(model, std::move(ctx), long_form);
                       });
}

RunnerFactory diarizer_runners(std::shared_ptr<const diar::SortformerModel> model, int threads,
                               ops::GemmBackend gemm, LongForm long_form) {
  STENO_CHECK(model != nullptr, "diarizer_runners needs a model");
  return [model = std::move(model), threads, gemm, long_form](int) -> std::unique_ptr<BatchRunner> {
    const Device device = model->device();
    return std::make_unique<DiarizerRunner>(
        model, device.is_cpu() ? ops::Context::cpu(threads, gemm) : ops::Context::cuda(device.index), long_form);
  };
}

}  // namespace steno::serve
