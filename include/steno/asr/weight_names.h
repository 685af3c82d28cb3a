// The weights a FastConformer-TDT model of a given config.json has: every NeMo state-dict name with its shape
// (docs/engine.md, "Weight names"), in NeMo's state-dict order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "steno/asr/model_config.h"
#include "steno/core/tensor.h"

namespace steno::asr {

// What a tensor is; decides how `steno model random` fills it.
enum class WeightKind {
  kWeight,       // linear / conv / LSTM weight: uniform in ±1/sqrt(fan_in) (PyTorch's default)
  kBias,         // linear / conv / LSTM bias: the same
  kNormWeight,   // LayerNorm / BatchNorm gamma: 1
  kNormBias,     // LayerNorm / BatchNorm beta: 0
  kRunningMean,  // BatchNorm running mean: 0
  kRunningVar,   // BatchNorm running variance: 1
  kEmbedding,    // prediction-net embedding: N(0, 1), blank row zero
  kPosBias,      // self_attn.pos_bias_u / pos_bias_v
  kFilterbank,   // preprocessor.featurizer.fb (optional)
  kWindow,       // preprocessor.featurizer.window (optional)
};

struct WeightSpec {
  std::string name;  // canonical NeMo name
  Shape shape;
  WeightKind kind = WeightKind::kWeight;
  int64_t fan_in = 0;                // for kWeight / kBias / kPosBias: the bound is 1/sqrt(fan_in)
  bool optional = false;             // may be absent from model.safetensors (the front end computes it)
  std::vector<std::string> aliases;  // other names NeMo may use for the same tensor
};

// The front end's optional buffers (preprocessor.featurizer.{window,fb}) and every encoder.* tensor of a
// FastConformer encoder, in NeMo's order: the part every model type built on this encoder shares.
std::vector<WeightSpec> encoder_weights(const PreprocessorConfig& preprocessor, const EncoderConfig& encoder);

// Building blocks for spec lists: one tensor; a linear or conv (`name`.weight of `shape`, and `name`.bias [shape[0]]
// when `bias`); a LayerNorm/BatchNorm's weight and bias [n].
void add_weight(std::vector<WeightSpec>& specs, std::string name, Shape shape, WeightKind kind, int64_t fan_in = 0);
void add_affine(std::vector<WeightSpec>& specs, const std::string& name, Shape shape, int64_t fan_in, bool bias);
void add_norm(std::vector<WeightSpec>& specs, const std::string& name, int64_t n);

// Every tensor of the model, NeMo's *.num_batches_tracked excluded. Optional: preprocessor.featurizer.{window,fb}.
// Aliases: joint.joint_net.2.* is joint.joint_net.1.* in models trained with joint dropout 0.
std::vector<WeightSpec> expected_weights(const ModelConfig& config);

// Number of learned parameters (BatchNorm running statistics and the front-end buffers excluded), as PyTorch's
// sum(p.numel() for p in model.parameters()).
int64_t parameter_count(const ModelConfig& config);
int64_t parameter_count(const std::vector<WeightSpec>& specs);

// Names of one encoder layer's tensors start with this: "encoder.layers.{i}.".
std::string encoder_layer_prefix(int layer);

}  // namespace steno::asr
