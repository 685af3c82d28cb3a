#include "steno/asr/transcriber.h"

#include <chrono>
#include <optional>

#include "steno/core/allocator.h"
#include "steno/ops/copy.h"
#if STENO_HAVE_CUDA
#include "cuda/cuda_features.h"
#include "cuda/cuda_tdt_decoder.h"
#include "cuda/encoder_graphs.h"
#endif

namespace steno::asr {
namespace {

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

#if STENO_HAVE_CUDA
struct Transcriber::CudaState {
  CudaTdtDecoder::Workspace workspace;
  EncoderGraphs encoder_graphs;  // small batches' encoder from CUDA graphs
};
#else
struct Transcriber::CudaState {};
#endif

Transcriber::Transcriber(std::shared_ptr<const AsrModel> model, ops::Context& ctx)
    : model_(std::move(model)), ctx_(ctx) {
  STENO_CHECK(ctx_.device() == model_->device(), "transcriber: the model runs on {} but the context on {}",
              model_->device().str(), ctx_.device().str());
  if (!ctx_.device().is_cpu()) {
    host_ctx_.emplace(ops::Context::cpu());
    cuda_ = std::make_shared<CudaState>();
  }
}

Transcriber::~Transcriber() = default;
Transcriber::Transcriber(Transcriber&&) noexcept = default;

StageTimings& StageTimings::operator+=(const StageTimings& o) {
  features_ms += o.features_ms;
  encoder_ms += o.encoder_ms;
  decoder_ms += o.decoder_ms;
  detokenize_ms += o.detokenize_ms;
  decoder_steps += o.decoder_steps;
  return *this;
}

void Transcriber::set_beam(std::optional<BeamOptions> options) {
  if (options) validate(*options, model_->decoder().blank_id());
  beam_ = std::move(options);
}

void Transcriber::set_long_form(double from_seconds, int window) {
  long_from_seconds_ = from_seconds;
  if (window <= 0) {
    long_encoder_.reset();
    return;
  }
  long_encoder_.emplace(model_->encoder().with_attention_window({window, window}));
}

// Beam search runs on the host over the CPU decoder's weights: a GPU encoder's output comes down to it in f32.
Tensor Transcriber::on_host_f32(const Tensor& t) {
  if (t.device().is_cpu() && t.dtype() == DType::kF32) return t;
  const Tensor f32 = t.dtype() == DType::kF32 ? t : ops::to_context(ctx_, t, DType::kF32);
  Tensor out = Tensor::empty(f32.shape());
  ops::copy(ctx_, f32, out);
  ctx_.synchronize();
  return out;
}

Features Transcriber::features(const std::vector<std::span<const float>>& clips) {
#if STENO_HAVE_CUDA
  if (const CudaFeatureExtractor* gpu = model_->cuda_features()) return gpu->compute(ctx_, clips);
#endif
  return model_->features().compute(host_ctx_ ? *host_ctx_ : ctx_, clips);
}

std::vector<Transcript> Transcriber::transcribe(const std::vector<std::span<const float>>& clips,
                                                StageTimings* timings) {
  const AsrModel& m = *model_;
  std::vector<Transcript> results(clips.size());
  for (size_t i = 0; i < clips.size(); ++i)
    results[i].audio_seconds = static_cast<double>(clips[i].size()) / m.sample_rate();

  // Only clips that yield at least two feature frames (normalisation needs a spread) go through the model.
  std::vector<size_t> runnable;
  std::vector<std::span<const float>> batch;
  for (size_t i = 0; i < clips.size(); ++i) {
    if (m.features().valid_frames(static_cast<int64_t>(clips[i].size())) >= 2) {
      runnable.push_back(i);
      batch.push_back(clips[i]);
    }
  }
  StageTimings local;
  if (!batch.empty()) {
    ops::Context& host = host_ctx_ ? *host_ctx_ : ctx_;
    auto start = std::chrono::steady_clock::now();
    Features feats = features(batch);
    if (!ctx_.device().is_cpu()) {
      feats.values = ops::to_context(ctx_, feats.values, m.dtype());  // the encoder's dtype, on the device
      ctx_.synchronize();  // GPU time belongs to the stage that queued it
    }
    local.features_ms = elapsed_ms(start);

    start = std::chrono::steady_clock::now();
    const Tensor& features = feats.values;
    double longest_s = 0;
    for (const auto& c : batch) longest_s = std::max(longest_s, static_cast<double>(c.size()) / m.sample_rate());
    const bool long_form = is_long_form(longest_s);
    const ConformerEncoder& encoder = long_form ? *long_encoder_ : m.encoder();
    std::optional<EncoderOutput> from_graph;
#if STENO_HAVE_CUDA
    if (cuda_ && !long_form) from_graph = cuda_->encoder_graphs.run(ctx_, encoder, features, feats.lengths);
#endif
    EncoderOutput enc;
    if (from_graph) {
      enc = std::move(*from_graph);
      feats.values = Tensor();
    } else {
      // forward() in its two halves, so that the features (115 MB an hour) are freed before the layers run.
      std::vector<int64_t> frames = feats.lengths;
      const Tensor embeddings = encoder.pre_encode(ctx_, features, frames);
      feats.values = Tensor();
      // Long audio: blocks the front end and the chunked subsampling freed are of sizes the layers never ask for;
      // give them back rather than keep them cached beside the layers' activations.
      if (long_form)
        if (auto* cache = dynamic_cast<CpuCachingAllocator*>(&ctx_.allocator())) cache->release_cached();
      enc = encoder.encode(ctx_, embeddings, frames);
    }
    ctx_.synchronize();  // GPU time belongs to the stage that queued it
    local.encoder_ms = elapsed_ms(start);

    start = std::chrono::steady_clock::now();
    DecodeStats stats;
    std::vector<Hypothesis> hyps;
    if (beam_) {
      hyps = beam_decode(host, m.decoder().parameters(host), on_host_f32(enc.encoded), enc.lengths, *beam_, &stats);
    } else {
#if STENO_HAVE_CUDA
      if (const CudaTdtDecoder* gpu = m.cuda_decoder())
        hyps = gpu->decode(ctx_, cuda_->workspace, enc.encoded, enc.lengths, &stats);
      else
#endif
        hyps = m.decoder().decode(host, enc.encoded, enc.lengths, false, &stats);
    }
    local.decoder_ms = elapsed_ms(start);
    local.decoder_steps = stats.steps;

    // Transcripts are independent (~0.5 ms each for 45 s of speech): on the host pool's threads, one clip each.
    start = std::chrono::steady_clock::now();
    host.pool().parallel_for(0, static_cast<int64_t>(runnable.size()), 1, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        Transcript t = build_transcript(hyps[j], m.tokenizer(), m.frame_seconds());
        t.audio_seconds = results[runnable[j]].audio_seconds;
        results[runnable[j]] = std::move(t);
      }
    });
    local.detokenize_ms = elapsed_ms(start);
  }
  if (timings) *timings = local;
  return results;
}

}  // namespace steno::asr
