// A loaded Sortformer diarizer (NeMo's SortformerEncLabelModel): configuration and the immutable parts built from
// its weights, shared read-only by every caller; per-request state lives in the calls.
//
// Offline inference, as NeMo's forward() with streaming_mode off: each clip is peak-normalised on its own
// (x / (max(x) + 1e-3), the signed maximum; NeMo takes the maximum of the whole padded batch, so there a clip's
// result depends on what it is batched with), then the log-mel front end, the FastConformer encoder,
// encoder_proj, the Transformer encoder and the speaker head give one sigmoid per speaker every 80 ms.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "steno/asr/encoder.h"
#include "steno/asr/features.h"
#include "steno/core/tensor.h"
#include "steno/diar/sortformer_config.h"
#include "steno/diar/transformer_encoder.h"
#include "steno/ops/context.h"

namespace steno::asr {
class CudaFeatureExtractor;  // src/asr/cuda/cuda_features.h (CUDA builds)
}

namespace steno::diar {

struct SortformerOverrides {
  // Where the network runs and its compute dtype (f32 on the CPU; f32, f16 or bf16 on CUDA).
  Device device = Device::cpu();
  DType dtype = DType::kF32;
};

// What one offline pass produces. Tensors are on the model's device in its dtype except `probs`.
struct SortformerOutput {
  Tensor probs;                  // [B, T, speakers] f32 on the CPU: speaker probabilities; zero past each length
  std::vector<int64_t> lengths;  // valid frames per clip
  // Filled when asked for (tests, debugging):
  std::vector<float> peak_scales;  // the factor each clip was multiplied by (1 when not normalised)
  asr::Features features;          // [B, frames, mels]
  asr::EncoderOutput encoder;      // encoded [B, T, d_model] (+ pre_encode, layer outputs)
  Tensor projected;                // [B, T, tf_d_model], after encoder_proj (= encoded without one)
  Tensor transformer;              // [B, T, tf_d_model]
  Tensor logits;                   // [B, T, speakers], before the sigmoid
};

struct ForwardOptions {
  bool keep_intermediates = false;  // fill SortformerOutput's intermediate tensors
  // The caller has normalised the audio already: no per-clip peak normalisation (tests reproducing NeMo's
  // batch-wide factor use this).
  bool skip_peak_normalisation = false;
};

class SortformerModel {
 public:
  // Loads `dir` (config.json with model_type "sortformer", model.safetensors). Errors name the file or tensor.
  static std::shared_ptr<const SortformerModel> load(const std::string& dir, const SortformerOverrides& overrides = {});
  ~SortformerModel();

  const SortformerConfig& config() const { return config_; }
  const std::string& directory() const { return dir_; }
  const asr::FeatureExtractor& features() const { return *features_; }
  const asr::ConformerEncoder& encoder() const { return *encoder_; }
  const TransformerEncoder& transformer() const { return *transformer_; }
  Device device() const { return encoder_->device(); }
  DType dtype() const { return encoder_->dtype(); }
  int sample_rate() const { return config_.preprocessor.sample_rate; }
  int num_speakers() const { return config_.num_speakers(); }
  double frame_seconds() const { return config_.frame_seconds(); }
  // Output frames for a clip of `samples` samples.
  int64_t output_frames(int64_t samples) const;

  // Clips at sample_rate() in [-1, 1], any lengths, batched together with no effect on each other's results.
  SortformerOutput forward(ops::Context& ctx, const std::vector<std::span<const float>>& clips,
                           const ForwardOptions& options = {}) const;

  // The parts of forward(), for the streaming path (streaming.h):
  // The log-mel features of clips on the model's device (f32), peak-normalised per clip when asked (the factors
  // into `scales` when not null).
  asr::Features compute_features(ops::Context& ctx, const std::vector<std::span<const float>>& clips,
                                 bool peak_normalise, std::vector<float>* scales = nullptr) const;
  // Encoder outputs [B, T, d_model] (lengths valid frames each) -> speaker probabilities [B, T, speakers] on the
  // model's device in its dtype: encoder_proj, the Transformer, the speaker head, the sigmoid. `kept` (optional)
  // receives projected, transformer and logits.
  Tensor speaker_probabilities(ops::Context& ctx, const Tensor& encoded, const std::vector<int64_t>& lengths,
                               SortformerOutput* kept = nullptr) const;
  // The speaker head on Transformer outputs x [B, T, tf_d_model]: relu, first_hidden_to_hidden, relu,
  // single_hidden_to_spks -> logits [B, T, speakers] (on x's device, in its dtype).
  Tensor speaker_logits(ops::Context& ctx, const Tensor& x) const;

 private:
  SortformerModel();
  struct Head;
  std::string dir_;
  SortformerConfig config_;
  std::unique_ptr<asr::FeatureExtractor> features_;
  std::shared_ptr<const asr::CudaFeatureExtractor> cuda_features_;  // on CUDA models; reads *features_
  std::unique_ptr<asr::ConformerEncoder> encoder_;
  std::unique_ptr<TransformerEncoder> transformer_;
  std::unique_ptr<Head> head_;
};

}  // namespace steno::diar
