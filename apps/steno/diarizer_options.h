// What `steno diarize` and `steno transcribe --diarize` share: the diarizer options (--diarizer, streaming,
// post-processing overrides), loading the model, and running it over decoded files, offline in batches or
// streamed one recording at a time.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compute_options.h"
#include "steno/diar/diarize.h"
#include "steno/diar/streaming.h"

namespace steno::cli {

struct DiarizerOptions {
  std::string diarizer;  // default: $STENO_DIARIZER or the bundled diarizer
  // Streaming: a preset ("model", "1.04s", "30.4s") and FIELD=VALUE overrides. A model trained for streaming
  // (config.json streaming_mode) streams with its own parameters unless --offline, as NeMo's diarize() does.
  std::string streaming;
  std::vector<std::string> streaming_params;
  bool offline = false;
  // Post-processing overrides of the model's config.json (NeMo's PostProcessingParams).
  std::optional<double> onset, offset, pad_onset, pad_offset, min_duration_on, min_duration_off;

  // Registers --diarizer, the streaming group and the post-processing group on `cmd`.
  void add_to(CLI::App* cmd);
};

class Diarizer {
 public:
  // Loads the model on the compute's device and checks every option (bad values throw naming the option).
  Diarizer(const DiarizerOptions& options, const Compute& compute);

  const diar::SortformerModel& model() const { return *model_; }
  bool streaming() const { return streaming_; }
  const diar::PostProcessingParams& postprocessing() const { return post_; }
  double load_ms() const { return load_ms_; }
  int64_t chunks() const { return chunks_; }  // streaming chunks run so far

  // Diarizes clips (the model's sample rate): offline as one batch, or each streamed with progress on stderr
  // under its label.
  std::vector<diar::Diarization> run(ops::Context& ctx, const std::vector<std::span<const float>>& clips,
                                     const std::vector<std::string>& labels);

  // {"diarizer", "postprocessing", "streaming": {...} or absent}.
  nlohmann::ordered_json settings_json() const;

 private:
  DiarizerOptions options_;
  std::shared_ptr<const diar::SortformerModel> model_;
  bool streaming_ = false;
  std::string preset_;
  diar::SortformerModulesConfig stream_params_;
  diar::PostProcessingParams post_;
  double load_ms_ = 0;
  int64_t chunks_ = 0;
};

}  // namespace steno::cli
