// A checkpoint's tensors written as the model directory's model.safetensors, byte for byte as tools/convert_nemo.py
// writes it (tools/steno_ref/safetensors_io.py): *.num_batches_tracked dropped; float tensors made f32 and then,
// except preprocessor.* (the front end needs their exact values), f16 or bf16 as asked, rounded to nearest even as
// numpy and the converter round (NaN included); tensors in name order, each padded with zeros to 8 bytes; the
// header as Python's json.dumps writes it, padded with spaces to a multiple of 8.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "steno/asr/weight_names.h"
#include "steno/core/dtype.h"
#include "steno/nemo/checkpoint.h"

namespace steno::nemo {

// Checks the tensors against the model's expected weights as the converter's reference model does: every tensor
// (num_batches_tracked aside) known by its name or an alias, of its shape and a float type; every non-optional
// one present. Throws steno::Error(kInvalidArgument) listing what does not match (up to 10).
void check_weights(const std::vector<CheckpointTensor>& tensors, const std::vector<asr::WeightSpec>& expected);

// Writes `path`; `dtype` is kF32, kF16 or kBF16. The bytes are read from the tensors' storages (views into the
// mapped .nemo), a slice at a time, so memory stays small whatever the checkpoint's size.
void write_converted_safetensors(const std::filesystem::path& path, const std::vector<CheckpointTensor>& tensors,
                                 DType dtype);

// f32 -> f16 as numpy's astype(float16), f32 -> bf16 as the converter's f32_to_bf16_bits: round to nearest even
// (steno's own f32_to_f16 / f32_to_bf16), NaN as they spell it.
uint16_t numpy_f32_to_f16(float f);
uint16_t converter_f32_to_bf16(float f);

}  // namespace steno::nemo
