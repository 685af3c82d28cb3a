// Model-directory tools for Sortformer diarizers, behind `steno model random` and `steno model info`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "steno/core/dtype.h"
#include "steno/diar/sortformer_config.h"

namespace steno::diar {

// A config file (e.g. configs/sortformer-4spk-v2.json) or a model directory's config.json.
SortformerConfig load_sortformer_like(const std::filesystem::path& config_or_model_dir);

// Writes config.json and model.safetensors with random weights in `dtype` (asr::write_random_weights: PyTorch's
// default initialisation; the same config, seed and dtype give the same weights). For benchmarks of shapes whose
// trained weights are not at hand: the output is not a diarization.
void write_random_sortformer(const SortformerConfig& config, const std::filesystem::path& out_dir, uint64_t seed = 0,
                             DType dtype = DType::kF32);

// Name, architecture, front end, parameter count, weights (header only) and whether they match config.json,
// streaming parameters, post-processing, size on disk. Throws for a missing directory or a bad config.json.
std::string describe_sortformer(const std::filesystem::path& model_dir);

}  // namespace steno::diar
