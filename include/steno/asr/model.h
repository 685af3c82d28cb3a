// A loaded FastConformer-TDT model: its configuration and the immutable parts built from its weights. One
// AsrModel is shared read-only by every executor in a process; per-request state lives in the Transcriber's
// calls, never here.
#pragma once

#include <memory>
#include <string>

#include "steno/asr/encoder.h"
#include "steno/asr/features.h"
#include "steno/asr/model_config.h"
#include "steno/asr/tdt_decoder.h"
#include "steno/asr/tokenizer.h"

namespace steno::asr {

class CudaTdtDecoder;        // src/asr/cuda/cuda_tdt_decoder.h (CUDA builds)
class CudaFeatureExtractor;  // src/asr/cuda/cuda_features.h (CUDA builds)

struct ModelOverrides {
  // Replaces the config's attention with banded local attention of this half-width (NeMo's
  // rel_pos_local_attn [w, w]); 0 keeps the model's own. Same weights; cost linear in the audio length.
  int local_attention = 0;
  // Where the encoder (and, on CUDA, the decoder) runs, and its compute dtype (f32 on the CPU; f32, f16 or bf16 on
  // CUDA). The weights are placed there once, shared by every context on that device.
  Device device = Device::cpu();
  DType dtype = DType::kF32;
  // The encoder's linear layers in FP8 beside `dtype` activations (f16 or bf16; ConformerEncoder::to_device):
  // `--dtype fp8`. Needs a CUDA device of compute capability 8.9 or later.
  bool fp8_linears = false;
};

class AsrModel {
 public:
  // Loads `dir` (config.json, model.safetensors, tokenizer.model). Errors name the file or tensor at fault.
  static std::shared_ptr<const AsrModel> load(const std::string& dir, const ModelOverrides& overrides = {});
  // The configuration load() reads, alone (what a command needs before the weights, e.g. the sample rate); the
  // same errors for a missing directory or config.
  static ModelConfig read_config(const std::string& dir);

  const ModelConfig& config() const { return config_; }
  const std::string& directory() const { return dir_; }
  const FeatureExtractor& features() const { return *features_; }
  const ConformerEncoder& encoder() const { return *encoder_; }
  const TdtDecoder& decoder() const { return *decoder_; }
  // The decoder on the model's CUDA device (null on the CPU); decoder() stays the CPU reference.
  const CudaTdtDecoder* cuda_decoder() const { return cuda_decoder_.get(); }
  // The front end on the model's CUDA device (null on the CPU); features() stays the CPU reference.
  const CudaFeatureExtractor* cuda_features() const { return cuda_features_.get(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  Device device() const { return encoder_->device(); }
  DType dtype() const { return encoder_->dtype(); }
  // Seconds per encoder frame: subsampling factor x window stride (0.08 s for Parakeet).
  double frame_seconds() const;
  int sample_rate() const { return features_->config().sample_rate; }

 private:
  AsrModel();
  std::string dir_;
  ModelConfig config_;
  std::unique_ptr<FeatureExtractor> features_;
  std::unique_ptr<ConformerEncoder> encoder_;
  std::unique_ptr<TdtDecoder> decoder_;
  std::shared_ptr<const CudaTdtDecoder> cuda_decoder_;  // shared_ptr: CudaTdtDecoder is incomplete here
  std::shared_ptr<const CudaFeatureExtractor> cuda_features_;  // reads *features_, which outlives it
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace steno::asr
