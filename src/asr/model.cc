#include "steno/asr/model.h"

#include <filesystem>

#include "steno/asr/weight_store.h"
#if STENO_HAVE_CUDA
#include "cuda/cuda_features.h"
#include "cuda/cuda_tdt_decoder.h"
#endif
#include "steno/core/logging.h"

namespace steno::asr {

namespace fs = std::filesystem;

AsrModel::AsrModel() = default;

ModelConfig AsrModel::read_config(const std::string& dir) {
  if (!fs::is_directory(dir)) fail(ErrorCode::kNotFound, "model directory not found: {}", dir);
  return ModelConfig::load(dir);
}

std::shared_ptr<const AsrModel> AsrModel::load(const std::string& dir, const ModelOverrides& overrides) {
  std::shared_ptr<AsrModel> m(new AsrModel());
  m->config_ = read_config(dir);
  m->dir_ = fs::weakly_canonical(dir).string();
  const ModelConfig& cfg = m->config_;
  const WeightStore weights = WeightStore::open(fs::path(dir) / "model.safetensors", cfg);

  const Tensor fb = weights.has("preprocessor.featurizer.fb") ? weights.get("preprocessor.featurizer.fb") : Tensor();
  const Tensor window =
      weights.has("preprocessor.featurizer.window") ? weights.get("preprocessor.featurizer.window") : Tensor();
  m->features_ = std::make_unique<FeatureExtractor>(cfg.preprocessor, fb, window);

  ops::AttentionWindow attention{cfg.encoder.att_context_size[0], cfg.encoder.att_context_size[1]};
  if (overrides.local_attention > 0) attention = {overrides.local_attention, overrides.local_attention};
  const bool masked = cfg.preprocessor.frontend_version == FrontendVersion::kNeMo25;
  m->encoder_ = std::make_unique<ConformerEncoder>(cfg.encoder, masked, attention, weights);
  m->decoder_ = std::make_unique<TdtDecoder>(cfg, weights);
  if (!overrides.device.is_cpu()) {
    ops::Context upload = ops::Context::cuda(overrides.device.index);
    m->encoder_ = std::make_unique<ConformerEncoder>(m->encoder_->to_device(upload, overrides.dtype, overrides.fp8_linears));
#if STENO_HAVE_CUDA
    m->cuda_decoder_ = std::make_shared<CudaTdtDecoder>(*m->decoder_, upload, overrides.dtype);
    m->cuda_features_ = std::make_shared<CudaFeatureExtractor>(*m->features_, upload);
#endif
  } else {
    STENO_CHECK(overrides.dtype == DType::kF32 && !overrides.fp8_linears, "the CPU engine computes in f32, not {}",
                overrides.fp8_linears ? "fp8" : dtype_name(overrides.dtype));
  }
  m->tokenizer_ = std::make_unique<Tokenizer>((fs::path(dir) / cfg.tokenizer.model).string());
  STENO_CHECK(m->tokenizer_->vocab_size() == cfg.decoder.vocab_size,
              "{}: tokenizer has {} pieces but decoder.vocab_size is {}", dir, m->tokenizer_->vocab_size(),
              cfg.decoder.vocab_size);
  spdlog::info("loaded model {}: {} (encoder on {}, {}{})", m->dir_, cfg.summary(), overrides.device.str(),
               dtype_name(overrides.dtype), overrides.fp8_linears ? " with fp8 linear layers" : "");
  return m;
}

double AsrModel::frame_seconds() const {
  return config_.encoder.subsampling_factor * config_.preprocessor.window_stride;
}

}  // namespace steno::asr
