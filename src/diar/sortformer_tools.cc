#include "steno/diar/sortformer_tools.h"

#include <fmt/format.h>

#include "steno/asr/random_model.h"
#include "steno/core/error.h"
#include "steno/diar/sortformer_weights.h"

namespace steno::diar {

namespace fs = std::filesystem;

SortformerConfig load_sortformer_like(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(ErrorCode::kNotFound, "{} does not exist", path.string());
  return fs::is_directory(path, ec) ? SortformerConfig::load(path) : SortformerConfig::load_file(path);
}

void write_random_sortformer(const SortformerConfig& config, const fs::path& out_dir, uint64_t seed, DType dtype) {
  config.validate();
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) fail(ErrorCode::kUnavailable, "cannot create {}: {}", out_dir.string(), ec.message());
  asr::write_random_weights(expected_weights(config), out_dir / "model.safetensors", seed, dtype);
  config.save(out_dir / "config.json");  // last: a directory with a config.json is complete
}

std::string describe_sortformer(const fs::path& model_dir) {
  const SortformerConfig c = SortformerConfig::load(model_dir);
  const asr::PreprocessorConfig& p = c.preprocessor;
  const SortformerModulesConfig& m = c.sortformer_modules;
  const PostProcessingParams& pp = c.postprocessing;
  std::string out;
  out += fmt::format("model:        {} (speaker diarization)\n", c.name.empty() ? model_dir.filename().string() : c.name);
  out += fmt::format("directory:    {}\n", model_dir.string());
  out += fmt::format("architecture: {}\n", c.summary());
  out += fmt::format("front end:    {} Hz, {} mels, n_fft {}, {} window {} / hop {} samples, normalize {}, NeMo {} "
                     "front end\n",
                     p.sample_rate, p.features, p.n_fft, p.window, p.win_length(), p.hop_length(), p.normalize,
                     asr::frontend_version_name(p.frontend_version));
  out += fmt::format("parameters:   {}\n", asr::with_commas(parameter_count(c)));
  out += asr::describe_weights(model_dir, expected_weights(c));
  out += fmt::format("streaming:    {}; chunk {} + context {}/{} frames, speaker cache {}, FIFO {}, update every {}\n",
                     c.streaming_mode ? "trained for streaming" : "offline model", m.chunk_len, m.chunk_left_context,
                     m.chunk_right_context, m.spkcache_len, m.fifo_len, m.spkcache_update_period);
  out += fmt::format("post-process: onset {}, offset {}, pad {} / {} s, min on {} s, min off {} s\n", pp.onset,
                     pp.offset, pp.pad_onset, pp.pad_offset, pp.min_duration_on, pp.min_duration_off);
  out += asr::describe_disk_size(model_dir);
  return out;
}

}  // namespace steno::diar
