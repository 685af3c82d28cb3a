// config.json of a Sortformer diarizer (docs/model-format.md, "Sortformer"): NeMo's SortformerEncLabelModel as
// model_config.yaml describes it — the ASR models' front end and FastConformer encoder, NeMo's post-LN Transformer
// encoder, the speaker head, the streaming parameters and the post-processing steno applies to its output.
// Section and field names are NeMo's (preprocessor, encoder, transformer_encoder, sortformer_modules,
// streaming_mode; postprocessing holds NeMo's PostProcessingParams).
//
// Errors as asr::ModelConfig's: kNotFound (no directory / config.json), kDataLoss (not JSON), kInvalidArgument (a
// missing or bad value, named), kUnimplemented (a NeMo option steno does not implement, e.g. pre_ln true).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "steno/asr/model_config.h"

namespace steno::diar {

// NeMo's TransformerEncoder as Sortformer uses it (no embedding: it takes the projected encoder states). All
// sizes required.
struct TransformerConfig {
  int num_layers = 0;
  int hidden_size = 0;
  int inner_size = 0;
  int num_attention_heads = 1;
  std::string hidden_act = "relu";  // the only activation steno implements
  bool pre_ln = false;              // post-LN, the only order steno implements (Sortformer's)
  int head_size() const { return hidden_size / num_attention_heads; }
  bool operator==(const TransformerConfig&) const = default;
};

// NeMo's SortformerModules: speaker count, the projection between encoder and Transformer, and the streaming
// state's sizes, in encoder frames (docs/diarization.md, "Streaming"). Defaults are NeMo's class defaults.
struct SortformerModulesConfig {
  int num_spks = 4;
  int fc_d_model = 0;  // encoder width (required; = encoder.d_model)
  int tf_d_model = 0;  // Transformer width (required; = transformer_encoder.hidden_size). No encoder_proj if equal.
  int spkcache_len = 188;
  int fifo_len = 0;
  int chunk_len = 188;
  int spkcache_update_period = 188;
  int chunk_left_context = 1;
  int chunk_right_context = 1;
  int spkcache_sil_frames_per_spk = 3;
  double pred_score_threshold = 0.25;
  double scores_boost_latest = 0.05;
  double sil_threshold = 0.2;
  double strong_boost_rate = 0.75;
  double weak_boost_rate = 1.5;
  double min_pos_scores_rate = 0.5;
  bool has_encoder_proj() const { return fc_d_model != tf_d_model; }
  bool operator==(const SortformerModulesConfig&) const = default;
};

// NeMo's PostProcessingParams (vad_utils.py): hysteresis thresholds on a speaker's probability, padding added to
// each segment, then speech shorter than min_duration_on dropped and gaps shorter than min_duration_off filled
// (seconds). The defaults are NeMo's; a model's config.json may carry tuned values.
struct PostProcessingParams {
  double onset = 0.5;
  double offset = 0.5;
  double pad_onset = 0.0;
  double pad_offset = 0.0;
  double min_duration_on = 0.0;
  double min_duration_off = 0.0;
  // The "postprocessing" object (null = NeMo's defaults), validated; errors name "<prefix>field".
  static PostProcessingParams from_json(const nlohmann::json& j, const std::string& prefix = "postprocessing.");
  nlohmann::ordered_json to_json() const;
  void validate(const std::string& prefix = "postprocessing.") const;
  bool operator==(const PostProcessingParams&) const = default;
};

struct SortformerConfig {
  static constexpr int kFormatVersion = 1;

  std::string name;
  asr::PreprocessorConfig preprocessor;
  asr::EncoderConfig encoder;
  TransformerConfig transformer_encoder;
  SortformerModulesConfig sortformer_modules;
  // NeMo's streaming_mode: the model was trained for (and by default runs) chunked streaming inference, whose
  // input is not peak-normalised. Offline inference of such a model still works.
  bool streaming_mode = false;
  PostProcessingParams postprocessing;

  int num_speakers() const { return sortformer_modules.num_spks; }
  // Seconds per output frame: subsampling factor x window stride (0.08 s).
  double frame_seconds() const { return encoder.subsampling_factor * preprocessor.window_stride; }

  static SortformerConfig load(const std::filesystem::path& model_dir);
  static SortformerConfig load_file(const std::filesystem::path& config_json);
  static SortformerConfig parse(std::string_view json_text);
  static SortformerConfig from_json(const nlohmann::json& j);
  nlohmann::ordered_json to_json() const;
  void save(const std::filesystem::path& path) const;
  void validate() const;
  // One line: "Sortformer: 80 mels -> 8x dw_striding -> 2 x Conformer (d 64, ...) -> proj 32 -> 2 x Transformer ...".
  std::string summary() const;

  bool operator==(const SortformerConfig&) const = default;
};

}  // namespace steno::diar
