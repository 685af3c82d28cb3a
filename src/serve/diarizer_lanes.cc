// The diarizer's lanes: a Sortformer model (steno_diar) served like a transcription model, each lane with its own
// context over the one shared, read-only model. A request's answer is its speaker segments after the model's
// post-processing and the probabilities they came from (for speakers of words).
#include <spdlog/spdlog.h>

#include "serve/lanes.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "steno/diar/diarize.h"

namespace steno::serve {
namespace {

class DiarizerRunner final : public BatchRunner {
 public:
  DiarizerRunner(std::shared_ptr<const diar::SortformerModel> model, ops::Context ctx)
      : ctx_(std::move(ctx)), model_(std::move(model)) {}

  BatchOutput run(const std::vector<std::span<const float>>& clips, asr::StageTimings* timings) override {
    const auto start = std::chrono::steady_clock::now();
    std::vector<diar::Diarization> found = diar::diarize(*model_, ctx_, clips, model_->config().postprocessing);
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
};

}  // namespace

RunnerFactory diarizer_runners(std::shared_ptr<const diar::SortformerModel> model, int threads,
                               ops::GemmBackend gemm) {
  STENO_CHECK(model != nullptr, "diarizer_runners needs a model");
  return [model = std::move(model), threads, gemm](int) -> std::unique_ptr<BatchRunner> {
    const Device device = model->device();
    return std::make_unique<DiarizerRunner>(
        model, device.is_cpu() ? ops::Context::cpu(threads, gemm) : ops::Context::cuda(device.index));
  };
}

}  // namespace steno::serve
