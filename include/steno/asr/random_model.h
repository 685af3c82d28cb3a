// Model-directory tools behind `steno model random` and `steno model info`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "steno/asr/model_config.h"
#include "steno/core/dtype.h"

namespace steno::asr {

// What `--like` points at: a config file (e.g. configs/parakeet-tdt-0.6b-v2.json) or a model directory.
struct ModelTemplate {
  ModelConfig config;
  // The tokenizer file config.tokenizer.model names, relative to the config's directory, if it exists there.
  std::optional<std::filesystem::path> tokenizer;
};
// kNotFound if `config_or_model_dir` does not exist; otherwise as ModelConfig::load / load_file.
ModelTemplate load_model_like(const std::filesystem::path& config_or_model_dir);

// Writes a model directory with the shapes of `config` and random weights: config.json, model.safetensors in
// `dtype` (f32, f16 or bf16) and, if `tokenizer_src` is given, a copy of it under config.tokenizer.model.
// Initialisation follows PyTorch's defaults (linear/conv/LSTM uniform in ±1/sqrt(fan_in); LayerNorm and
// BatchNorm weight 1, bias 0; running mean 0, variance 1; embedding N(0, 1) with a zero blank row). The front-end
// buffers (preprocessor.featurizer.fb / window) are left out: the engine computes them. The same config, seed and
// dtype give the same weights (each tensor's stream is seeded from the seed and its name). Creates `out_dir` if needed; existing files are replaced.
void write_random_model(const ModelConfig& config, const std::filesystem::path& out_dir, uint64_t seed = 0,
                        DType dtype = DType::kF32,
                        const std::optional<std::filesystem::path>& tokenizer_src = std::nullopt);

// A human-readable description of a model directory: name, architecture, front end, parameter count, the
// weights' dtype and size on disk and whether they match config.json (read from the safetensors header only, no
// weights are loaded), and whether the tokenizer is present. Throws for a missing directory or a bad config.json;
// a missing or mismatched model.safetensors is described, not thrown.
std::string describe_model(const std::filesystem::path& model_dir);

}  // namespace steno::asr
