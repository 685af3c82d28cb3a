#include "steno/diar/sortformer_config.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "asr/config_json.h"
#include "steno/core/error.h"

namespace steno::diar {

using namespace asr::config_json;  // NOLINT: the field reader is this file's vocabulary

namespace {

const nlohmann::json& json_or_null(const nlohmann::json* v) {
  static const nlohmann::json null;
  return v == nullptr ? null : *v;
}

void check_number(const std::string& name, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) bad("{} must be in [{}, {}], got {}", name, lo, hi, v);
}

}  // namespace

// ---- post-processing ---------------------------------------------------------------------------------------------

PostProcessingParams PostProcessingParams::from_json(const nlohmann::json& j, const std::string& prefix) {
  PostProcessingParams p;
  Section s(&j, prefix);
  p.onset = s.number("onset", p.onset);
  p.offset = s.number("offset", p.offset);
  p.pad_onset = s.number("pad_onset", p.pad_onset);
  p.pad_offset = s.number("pad_offset", p.pad_offset);
  p.min_duration_on = s.number("min_duration_on", p.min_duration_on);
  p.min_duration_off = s.number("min_duration_off", p.min_duration_off);
  s.warn_unknown();
  p.validate(prefix);
  return p;
}

nlohmann::ordered_json PostProcessingParams::to_json() const {
  return nlohmann::ordered_json{{"onset", onset},
                                {"offset", offset},
                                {"pad_onset", pad_onset},
                                {"pad_offset", pad_offset},
                                {"min_duration_on", min_duration_on},
                                {"min_duration_off", min_duration_off}};
}

void PostProcessingParams::validate(const std::string& prefix) const {
  // Thresholds outside [0, 1] are legal in NeMo (an offset of 1.0 ends a segment at every frame); times are
  // seconds and must not be negative or absurd.
  check_number(prefix + "onset", onset, 0.0, 1.0);
  check_number(prefix + "offset", offset, 0.0, 1.0);
  check_number(prefix + "pad_onset", pad_onset, 0.0, 60.0);
  check_number(prefix + "pad_offset", pad_offset, 0.0, 60.0);
  check_number(prefix + "min_duration_on", min_duration_on, 0.0, 3600.0);
  check_number(prefix + "min_duration_off", min_duration_off, 0.0, 3600.0);
}

// ---- parsing -----------------------------------------------------------------------------------------------------

SortformerConfig SortformerConfig::from_json(const nlohmann::json& j) {
  SortformerConfig c;
  Section top(&j, "");
  check_format_header(top, kFormatVersion);
  const std::string model_type = top.string("model_type");
  if (model_type != "sortformer")
    bad("model_type must be \"sortformer\" for a diarization model, got \"{}\"", model_type);
  c.name = top.string("name", "");
  c.preprocessor = asr::PreprocessorConfig::from_json(json_or_null(top.find("preprocessor")));
  c.encoder = asr::EncoderConfig::from_json(json_or_null(top.find("encoder")));

  Section tf(top.find("transformer_encoder"), "transformer_encoder.");
  TransformerConfig& t = c.transformer_encoder;
  t.num_layers = tf.integer("num_layers");
  t.hidden_size = tf.integer("hidden_size");
  t.inner_size = tf.integer("inner_size");
  t.num_attention_heads = tf.integer("num_attention_heads", 1);
  t.hidden_act = tf.string("hidden_act", "relu");
  t.pre_ln = tf.boolean("pre_ln", false);
  tf.warn_unknown();

  Section sm(top.find("sortformer_modules"), "sortformer_modules.");
  SortformerModulesConfig& m = c.sortformer_modules;
  m.num_spks = sm.integer("num_spks", m.num_spks);
  m.fc_d_model = sm.integer("fc_d_model");
  m.tf_d_model = sm.integer("tf_d_model");
  m.spkcache_len = sm.integer("spkcache_len", m.spkcache_len);
  m.fifo_len = sm.integer("fifo_len", m.fifo_len);
  m.chunk_len = sm.integer("chunk_len", m.chunk_len);
  m.spkcache_update_period = sm.integer("spkcache_update_period", m.spkcache_update_period);
  m.chunk_left_context = sm.integer("chunk_left_context", m.chunk_left_context);
  m.chunk_right_context = sm.integer("chunk_right_context", m.chunk_right_context);
  m.spkcache_sil_frames_per_spk = sm.integer("spkcache_sil_frames_per_spk", m.spkcache_sil_frames_per_spk);
  m.pred_score_threshold = sm.number("pred_score_threshold", m.pred_score_threshold);
  m.scores_boost_latest = sm.number("scores_boost_latest", m.scores_boost_latest);
  m.sil_threshold = sm.number("sil_threshold", m.sil_threshold);
  m.strong_boost_rate = sm.number("strong_boost_rate", m.strong_boost_rate);
  m.weak_boost_rate = sm.number("weak_boost_rate", m.weak_boost_rate);
  m.min_pos_scores_rate = sm.number("min_pos_scores_rate", m.min_pos_scores_rate);
  sm.warn_unknown();

  c.streaming_mode = top.boolean("streaming_mode", false);
  c.postprocessing = PostProcessingParams::from_json(json_or_null(top.find("postprocessing")));
  top.warn_unknown();
  c.validate();
  return c;
}

SortformerConfig SortformerConfig::parse(std::string_view json_text) { return from_json(parse_text(json_text)); }

SortformerConfig SortformerConfig::load_file(const std::filesystem::path& config_json) {
  return ::steno::asr::config_json::load_file(config_json, [](const std::string& text) { return parse(text); });
}

SortformerConfig SortformerConfig::load(const std::filesystem::path& model_dir) { return load_file(config_file_of(model_dir)); }

// ---- validation --------------------------------------------------------------------------------------------------

void SortformerConfig::validate() const {
  preprocessor.validate();
  encoder.validate();
  if (encoder.feat_in != preprocessor.features)
    bad("encoder.feat_in ({}) must equal preprocessor.features ({})", encoder.feat_in, preprocessor.features);

  const TransformerConfig& t = transformer_encoder;
  check_range("transformer_encoder.num_layers", t.num_layers, 0, 1024);
  check_range("transformer_encoder.hidden_size", t.hidden_size, 1, 65536);
  check_range("transformer_encoder.inner_size", t.inner_size, 1, 1 << 20);
  check_range("transformer_encoder.num_attention_heads", t.num_attention_heads, 1, t.hidden_size);
  if (t.hidden_size % t.num_attention_heads != 0)
    bad("transformer_encoder.num_attention_heads must divide hidden_size ({} % {} != 0)", t.hidden_size,
        t.num_attention_heads);
  check_one_of("transformer_encoder.hidden_act", t.hidden_act, {"relu"}, {"gelu", "swish"});
  if (t.pre_ln) unsupported("transformer_encoder.pre_ln true is not implemented by steno (Sortformer is post-LN)");

  const SortformerModulesConfig& m = sortformer_modules;
  check_range("sortformer_modules.num_spks", m.num_spks, 1, 64);
  if (m.fc_d_model != encoder.d_model)
    bad("sortformer_modules.fc_d_model ({}) must equal encoder.d_model ({})", m.fc_d_model, encoder.d_model);
  if (m.tf_d_model != t.hidden_size)
    bad("sortformer_modules.tf_d_model ({}) must equal transformer_encoder.hidden_size ({})", m.tf_d_model,
        t.hidden_size);
  // NeMo's _check_streaming_parameters.
  check_range("sortformer_modules.spkcache_sil_frames_per_spk", m.spkcache_sil_frames_per_spk, 0, 1 << 16);
  const int min_cache = (1 + m.spkcache_sil_frames_per_spk) * m.num_spks;
  check_range("sortformer_modules.spkcache_len", m.spkcache_len, min_cache, 1 << 20);
  check_range("sortformer_modules.fifo_len", m.fifo_len, 0, 1 << 20);
  check_range("sortformer_modules.chunk_len", m.chunk_len, 1, 1 << 20);
  check_range("sortformer_modules.spkcache_update_period", m.spkcache_update_period, 1, 1 << 20);
  check_range("sortformer_modules.chunk_left_context", m.chunk_left_context, 0, 1 << 16);
  check_range("sortformer_modules.chunk_right_context", m.chunk_right_context, 0, 1 << 16);
  check_number("sortformer_modules.pred_score_threshold", m.pred_score_threshold, 0.0, 1.0);
  check_number("sortformer_modules.scores_boost_latest", m.scores_boost_latest, 0.0, 100.0);
  check_number("sortformer_modules.sil_threshold", m.sil_threshold, 0.0, 100.0);
  check_number("sortformer_modules.strong_boost_rate", m.strong_boost_rate, 0.0, 100.0);
  check_number("sortformer_modules.weak_boost_rate", m.weak_boost_rate, 0.0, 100.0);
  check_number("sortformer_modules.min_pos_scores_rate", m.min_pos_scores_rate, 0.0, 100.0);
  postprocessing.validate();
}

// ---- output ------------------------------------------------------------------------------------------------------

nlohmann::ordered_json SortformerConfig::to_json() const {
  using oj = nlohmann::ordered_json;
  oj j = oj::object();
  j["format"] = "steno-model";
  j["format_version"] = kFormatVersion;
  j["model_type"] = "sortformer";
  j["name"] = name;
  j["preprocessor"] = preprocessor.to_json();
  j["encoder"] = encoder.to_json();
  const TransformerConfig& t = transformer_encoder;
  j["transformer_encoder"] = oj{{"num_layers", t.num_layers},
                                {"hidden_size", t.hidden_size},
                                {"inner_size", t.inner_size},
                                {"num_attention_heads", t.num_attention_heads},
                                {"hidden_act", t.hidden_act},
                                {"pre_ln", t.pre_ln}};
  const SortformerModulesConfig& m = sortformer_modules;
  j["sortformer_modules"] = oj{{"num_spks", m.num_spks},
                               {"fc_d_model", m.fc_d_model},
                               {"tf_d_model", m.tf_d_model},
                               {"spkcache_len", m.spkcache_len},
                               {"fifo_len", m.fifo_len},
                               {"chunk_len", m.chunk_len},
                               {"spkcache_update_period", m.spkcache_update_period},
                               {"chunk_left_context", m.chunk_left_context},
                               {"chunk_right_context", m.chunk_right_context},
                               {"spkcache_sil_frames_per_spk", m.spkcache_sil_frames_per_spk},
                               {"pred_score_threshold", m.pred_score_threshold},
                               {"scores_boost_latest", m.scores_boost_latest},
                               {"sil_threshold", m.sil_threshold},
                               {"strong_boost_rate", m.strong_boost_rate},
                               {"weak_boost_rate", m.weak_boost_rate},
                               {"min_pos_scores_rate", m.min_pos_scores_rate}};
  j["streaming_mode"] = streaming_mode;
  j["postprocessing"] = postprocessing.to_json();
  return j;
}

void SortformerConfig::save(const std::filesystem::path& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(ErrorCode::kUnavailable, "{}: cannot create", path.string());
  out << to_json().dump(2) << "\n";
  out.close();
  if (!out) fail(ErrorCode::kUnavailable, "{}: write failed", path.string());
}

std::string SortformerConfig::summary() const {
  const asr::EncoderConfig& e = encoder;
  const TransformerConfig& t = transformer_encoder;
  return fmt::format(
      "Sortformer{}: {} mels -> {}x {} ({} ch) -> {} x Conformer (d {}, {} heads, ff {}, conv {}{}{}) -> {}{} x "
      "Transformer (d {}, {} heads, ff {}, post-LN) -> {} speakers every {:.2f} s",
      streaming_mode ? " (streaming)" : "", preprocessor.features, e.subsampling_factor, e.subsampling,
      e.subsampling_conv_channels, e.n_layers, e.d_model, e.n_heads, e.d_ff(), e.conv_kernel_size,
      e.use_bias ? ", bias" : "", e.xscaling ? ", xscaling" : "",
      sortformer_modules.has_encoder_proj() ? fmt::format("proj {} -> ", t.hidden_size) : std::string(),
      t.num_layers, t.hidden_size, t.num_attention_heads, t.inner_size, num_speakers(), frame_seconds());
}

}  // namespace steno::diar
