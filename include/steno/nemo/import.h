// `steno model import`: a NeMo checkpoint (.nemo) turned into a steno model directory (docs/model-format.md) by
// steno itself, with no Python: config.json, model.safetensors and, for ASR models, tokenizer.model, byte for byte
// what tools/convert_nemo.py writes. FastConformer-TDT transducers and Sortformer diarizers (told apart by
// model_config.yaml); anything the engine cannot run (CTC or RNNT heads, another encoder, a front-end option it
// lacks) is refused with an error naming it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace steno::nemo {

struct ImportOptions {
  std::optional<std::string> frontend_version;  // "2.4" or "2.5"; default: from model_config.yaml's nemo_version
  std::string dtype = "f32";                    // weight storage: f32, f16 or bf16 (preprocessor.* stay f32)
  std::optional<std::filesystem::path> postprocessing;  // Sortformer: a NeMo post-processing yaml
  std::string name;                             // config.json's name; "" = the .nemo file's name without extension
};

struct ImportResult {
  std::string model_type;        // "fastconformer_tdt" or "sortformer"
  std::string frontend_version;  // "2.4" or "2.5"
  std::string summary;           // the engine's one-line description of the model
};

// Reads `nemo` in place (mapped, never unpacked) and writes the model directory `out`: into a temporary directory
// beside it, renamed to `out` once complete, so a failure leaves no `out` behind and a reader never sees half a
// model. `out` must not exist, or be an empty directory. Throws steno::Error: kNotFound (no such file),
// kInvalidArgument (a malformed or hostile archive, YAML or checkpoint, a checkpoint that does not match its config,
// a bad option, `out` not empty), kUnimplemented (a model or option steno cannot run), kUnavailable (cannot write).
ImportResult import_nemo(const std::filesystem::path& nemo, const std::filesystem::path& out,
                         const ImportOptions& options = {});

}  // namespace steno::nemo
