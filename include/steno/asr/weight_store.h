// A model's weights: model.safetensors checked against config.json and handed out as fp32 CPU tensors.
//
// Every problem is found at open: a missing, extra, mis-shaped or non-float tensor is an error naming the tensor
// with its expected and actual shape, all problems (up to 10) in one message. f32 tensors are zero-copy views of
// the memory-mapped file; f16/bf16 tensors are converted to f32 when the store is opened.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "steno/asr/model_config.h"
#include "steno/asr/weight_names.h"
#include "steno/core/safetensors.h"
#include "steno/core/tensor.h"

namespace steno::asr {

struct WeightProblem {
  enum class Kind { kMissing, kShape, kExtra, kDtype, kDuplicate };
  Kind kind;
  std::string tensor;   // the tensor's name
  std::string message;  // "encoder.layers.0.norm_out.weight: missing (expected [96])"
};

// Compares a file's tensors with expected_weights(config). Empty = the file fits the config. NeMo's
// *.num_batches_tracked counters are ignored if present.
std::vector<WeightProblem> check_weights(const ModelConfig& config, const SafeTensorsFile& file);
// The same against any list of expected tensors (another model type's).
std::vector<WeightProblem> check_weights(const std::vector<WeightSpec>& specs, const SafeTensorsFile& file);

class WeightStore {
 public:
  WeightStore() = default;

  // Opens `path` (a model directory, meaning <path>/model.safetensors, or a .safetensors file) and checks it
  // against `config`. Errors: kNotFound if the file is missing, or if the only problems are missing tensors;
  // kInvalidArgument for mis-shaped, extra or non-float tensors; the file's own kDataLoss if it is corrupt.
  static WeightStore open(const std::filesystem::path& path, const ModelConfig& config);
  // The same for any model type: `specs` lists its tensors; `encoder`, when the model has a FastConformer encoder,
  // lets a use_bias mismatch be explained in the error.
  static WeightStore open(const std::filesystem::path& path, std::vector<WeightSpec> specs,
                          const EncoderConfig* encoder = nullptr);

  // Canonical (expected_weights) names; an alias (joint.joint_net.1.*) is accepted too. has() is false only for
  // an optional tensor the file lacks.
  bool has(const std::string& name) const;
  // The tensor as fp32 on the CPU, shaped as expected_weights says. Read-only (f32 ones are views of the
  // read-only mapping: clone() before modifying). kNotFound for an absent or unknown name.
  Tensor get(const std::string& name) const;

  const std::vector<WeightSpec>& specs() const { return specs_; }
  // The dtype the model's weights are stored in (the widest one if they mix dtypes; the optional front-end
  // buffers, often kept in f32, do not count).
  DType storage_dtype() const { return storage_dtype_; }
  int64_t num_tensors() const { return static_cast<int64_t>(tensors_.size()); }
  // Bytes of all the fp32 tensors (views and converted copies).
  size_t nbytes() const { return nbytes_; }

 private:
  std::vector<WeightSpec> specs_;
  std::map<std::string, Tensor> tensors_;       // canonical name -> fp32 tensor
  std::map<std::string, std::string> aliases_;  // alias -> canonical name
  DType storage_dtype_ = DType::kF32;
  size_t nbytes_ = 0;
};

}  // namespace steno::asr
