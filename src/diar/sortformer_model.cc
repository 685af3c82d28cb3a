#include "steno/diar/sortformer_model.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "steno/asr/weight_store.h"
#if STENO_HAVE_CUDA
#include "asr/cuda/cuda_features.h"
#endif
#include "steno/core/cuda.h"
#include "steno/diar/sortformer_weights.h"
#include "steno/ops/activation.h"
#include "steno/ops/copy.h"
#include "steno/ops/gemm.h"

namespace steno::diar {

namespace fs = std::filesystem;

namespace {

constexpr float kPeakEps = 1e-3f;  // NeMo's SortformerEncLabelModel.eps

// NeMo's process_signal: x * (1 / (max(x) + eps)) in f32, with the signed maximum. An empty clip keeps scale 1.
float peak_scale(std::span<const float> clip) {
  if (clip.empty()) return 1.0f;
  const float peak = *std::max_element(clip.begin(), clip.end());
  return 1.0f / (peak + kPeakEps);
}

}  // namespace

// encoder_proj and the speaker head: the model's own small layers.
struct SortformerModel::Head {
  Tensor proj_w, proj_b;  // undefined when the encoder's width is the Transformer's
  Tensor h2h_w, h2h_b, spk_w, spk_b;

  template <typename F> void for_each_weight(F&& f) {
    for (Tensor* t : {&proj_w, &proj_b, &h2h_w, &h2h_b, &spk_w, &spk_b}) f(*t);
  }
};

SortformerModel::SortformerModel() = default;
SortformerModel::~SortformerModel() = default;

std::shared_ptr<const SortformerModel> SortformerModel::load(const std::string& dir,
                                                             const SortformerOverrides& overrides) {
  if (!fs::is_directory(dir)) fail(ErrorCode::kNotFound, "model directory not found: {}", dir);
  std::shared_ptr<SortformerModel> m(new SortformerModel());
  m->dir_ = fs::weakly_canonical(dir).string();
  m->config_ = SortformerConfig::load(dir);
  const SortformerConfig& cfg = m->config_;
  const asr::WeightStore weights =
      asr::WeightStore::open(fs::path(dir) / "model.safetensors", expected_weights(cfg), &cfg.encoder);

  const Tensor fb = weights.has("preprocessor.featurizer.fb") ? weights.get("preprocessor.featurizer.fb") : Tensor();
  const Tensor window =
      weights.has("preprocessor.featurizer.window") ? weights.get("preprocessor.featurizer.window") : Tensor();
  m->features_ = std::make_unique<asr::FeatureExtractor>(cfg.preprocessor, fb, window);
  const ops::AttentionWindow attention{cfg.encoder.att_context_size[0], cfg.encoder.att_context_size[1]};
  const bool masked = cfg.preprocessor.frontend_version == asr::FrontendVersion::kNeMo25;
  m->encoder_ = std::make_unique<asr::ConformerEncoder>(cfg.encoder, masked, attention, weights);
  m->transformer_ = std::make_unique<TransformerEncoder>(cfg.transformer_encoder, weights);
  m->head_ = std::make_unique<Head>();
  Head& head = *m->head_;
  const std::string sm = "sortformer_modules.";
  if (cfg.sortformer_modules.has_encoder_proj()) {
    head.proj_w = weights.get(sm + "encoder_proj.weight");
    head.proj_b = weights.get(sm + "encoder_proj.bias");
  }
  head.h2h_w = weights.get(sm + "first_hidden_to_hidden.weight");
  head.h2h_b = weights.get(sm + "first_hidden_to_hidden.bias");
  head.spk_w = weights.get(sm + "single_hidden_to_spks.weight");
  head.spk_b = weights.get(sm + "single_hidden_to_spks.bias");

  if (!overrides.device.is_cpu()) {
    ops::Context upload = ops::Context::cuda(overrides.device.index);
    m->encoder_ = std::make_unique<asr::ConformerEncoder>(m->encoder_->to_device(upload, overrides.dtype));
    m->transformer_ = std::make_unique<TransformerEncoder>(m->transformer_->to_device(upload, overrides.dtype));
#if STENO_HAVE_CUDA
    m->cuda_features_ = std::make_shared<asr::CudaFeatureExtractor>(*m->features_, upload);
#endif
    Allocator& alloc = steno::cuda::weight_allocator(overrides.device.index);
    head.for_each_weight([&](Tensor& t) {
      if (t.defined()) t = ops::place(upload, t, overrides.dtype, alloc);
    });
  } else {
    STENO_CHECK(overrides.dtype == DType::kF32, "the CPU engine computes in f32, not {}", dtype_name(overrides.dtype));
  }
  spdlog::info("loaded diarizer {}: {} (on {}, {})", m->dir_, cfg.summary(), overrides.device.str(),
               dtype_name(overrides.dtype));
  return m;
}

int64_t SortformerModel::output_frames(int64_t samples) const {
  return encoder_->output_length(features_->valid_frames(samples));
}

Tensor SortformerModel::speaker_logits(ops::Context& ctx, const Tensor& x) const {
  const Head& head = *head_;
  Tensor a = ctx.scratch(x.shape(), x.dtype());
  ops::relu(ctx, x, a);
  Tensor b = ctx.scratch(x.shape(), x.dtype());
  ops::linear(ctx, a, head.h2h_w, head.h2h_b, b);
  ops::relu(ctx, b, b);
  Tensor logits = ctx.scratch({x.dim(0), x.dim(1), num_speakers()}, x.dtype());
  ops::linear(ctx, b, head.spk_w, head.spk_b, logits);
  return logits;
}

asr::Features SortformerModel::compute_features(ops::Context& ctx, const std::vector<std::span<const float>>& clips,
                                                bool peak_normalise, std::vector<float>* scales) const {
  // Peak normalisation per clip (NeMo: per batch): on CUDA inside the front end, on the CPU into scaled copies.
#if STENO_HAVE_CUDA
  if (cuda_features_) {
    Tensor gains;
    asr::Features features =
        cuda_features_->compute(ctx, clips, peak_normalise ? std::optional<float>(kPeakEps) : std::nullopt, &gains);
    if (peak_normalise && scales) {
      Tensor host = Tensor::empty(gains.shape());
      ops::copy(ctx, gains, host);
      ctx.synchronize();
      *scales = host.to_vector();
    }
    return features;
  }
#endif
  if (!peak_normalise) return features_->compute(ctx, clips);
  std::vector<std::vector<float>> scaled(clips.size());
  std::vector<std::span<const float>> inputs(clips.size());
  if (scales) scales->clear();
  for (size_t i = 0; i < clips.size(); ++i) {
    const float s = peak_scale(clips[i]);
    if (scales) scales->push_back(s);
    scaled[i].resize(clips[i].size());
    std::transform(clips[i].begin(), clips[i].end(), scaled[i].begin(), [s](float v) { return s * v; });
    inputs[i] = scaled[i];
  }
  return features_->compute(ctx, inputs);
}

Tensor SortformerModel::speaker_probabilities(ops::Context& ctx, const Tensor& encoded,
                                              const std::vector<int64_t>& lengths, SortformerOutput* kept) const {
  Tensor x = encoded;
  if (head_->proj_w.defined()) {
    x = ctx.scratch({encoded.dim(0), encoded.dim(1), config_.sortformer_modules.tf_d_model}, dtype());
    ops::linear(ctx, encoded, head_->proj_w, head_->proj_b, x);
  }
  const Tensor y = transformer_->forward(ctx, x, lengths);
  const Tensor logits = speaker_logits(ctx, y);
  Tensor probs = ctx.scratch(logits.shape(), logits.dtype());
  ops::sigmoid(ctx, logits, probs);
  if (kept) {
    kept->projected = x;
    kept->transformer = y;
    kept->logits = logits;
  }
  return probs;
}

SortformerOutput SortformerModel::forward(ops::Context& ctx, const std::vector<std::span<const float>>& clips,
                                          const ForwardOptions& options) const {
  const bool keep_intermediates = options.keep_intermediates;
  STENO_CHECK(!clips.empty(), "diarizer: no clips");
  SortformerOutput out;
  // Streaming-mode models take their input as it is (NeMo's process_signal).
  const bool normalise = !config_.streaming_mode && !options.skip_peak_normalisation;
  asr::Features features =
      compute_features(ctx, clips, normalise, keep_intermediates ? &out.peak_scales : nullptr);
  if (!normalise && keep_intermediates) out.peak_scales.assign(clips.size(), 1.0f);
  const Tensor feats =
      features.values.dtype() == dtype() ? features.values : ops::to_context(ctx, features.values, dtype());
  asr::EncoderOutput enc = encoder_->forward(ctx, feats, features.lengths, keep_intermediates);
  const Tensor probs = speaker_probabilities(ctx, enc.encoded, enc.lengths, keep_intermediates ? &out : nullptr);
  out.probs = ops::to_context(ctx, probs, DType::kF32);
  if (!ctx.device().is_cpu()) {
    Tensor host = Tensor::empty(out.probs.shape());
    ops::copy(ctx, out.probs, host);
    ctx.synchronize();
    out.probs = host;
  }
  // Frames past a clip's length are batch padding: zero them so that no reader mistakes them for speech.
  const int64_t t = out.probs.dim(1), spk = out.probs.dim(2);
  float* p = out.probs.data<float>();
  for (size_t b = 0; b < clips.size(); ++b)
    std::fill(p + (b * t + enc.lengths[b]) * spk, p + (b + 1) * t * spk, 0.0f);
  out.lengths = enc.lengths;
  if (keep_intermediates) {
    out.features = std::move(features);
    out.encoder = std::move(enc);
  }
  return out;
}

}  // namespace steno::diar
