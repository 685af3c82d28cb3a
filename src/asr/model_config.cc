#include "steno/asr/model_config.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "config_json.h"
#include "steno/core/error.h"

namespace steno::asr {

using namespace config_json;  // NOLINT: the field reader is this file's vocabulary

const char* frontend_version_name(FrontendVersion v) { return v == FrontendVersion::kNeMo24 ? "2.4" : "2.5"; }

const char* attention_model_name(AttentionModel m) {
  return m == AttentionModel::kRelPos ? "rel_pos" : "rel_pos_local_attn";
}

int PreprocessorConfig::win_length() const { return static_cast<int>(window_size * sample_rate); }
int PreprocessorConfig::hop_length() const { return static_cast<int>(window_stride * sample_rate); }

int EncoderConfig::num_subsampling_stages() const {
  int n = 0;
  for (int f = subsampling_factor; f > 1; f >>= 1) ++n;
  return n;
}

int EncoderConfig::subsampled_features() const {
  int f = feat_in;
  // NeMo calc_length with kernel 3, stride 2, padding 1: floor((f + 2 - 3) / 2) + 1 = ceil(f / 2).
  for (int i = 0; i < num_subsampling_stages(); ++i) f = (f + 2 - 3) / 2 + 1;
  return f;
}

// ---- parsing ---------------------------------------------------------------------------------------------------

namespace {
const nlohmann::json& json_or_null(const nlohmann::json* v) {
  static const nlohmann::json null;
  return v == nullptr ? null : *v;
}
}  // namespace

PreprocessorConfig PreprocessorConfig::from_json(const nlohmann::json& j) {
  PreprocessorConfig p;
  Section pre(&j, "preprocessor.");
  p.sample_rate = pre.integer("sample_rate", 16000);
  p.features = pre.integer("features");
  p.window_size = pre.number("window_size", 0.02);
  p.window_stride = pre.number("window_stride", 0.01);
  p.n_fft = pre.integer("n_fft", 0);
  if (p.n_fft == 0 && p.win_length() > 0)
    p.n_fft = 1 << static_cast<int>(std::ceil(std::log2(static_cast<double>(p.win_length()))));
  p.window = pre.string("window", "hann");
  p.preemph = pre.number("preemph", 0.97);
  if (pre.explicit_null("preemph")) p.preemph = 0.0;  // NeMo's None: no pre-emphasis
  p.normalize = pre.string("normalize", "per_feature");
  if (pre.explicit_null("normalize")) p.normalize = "none";  // NeMo's None: no normalisation
  p.log_zero_guard_value = pre.number("log_zero_guard_value", 5.960464477539063e-08);
  p.mag_power = pre.number("mag_power", 2.0);
  p.lowfreq = pre.number("lowfreq", 0.0);
  p.highfreq = pre.number("highfreq", 0.0);
  if (p.highfreq == 0.0) p.highfreq = p.sample_rate / 2.0;  // NeMo: highfreq or sample_rate / 2
  {
    const std::string fv = pre.string("frontend_version", "2.5");
    if (fv == "2.4") p.frontend_version = FrontendVersion::kNeMo24;
    else if (fv == "2.5") p.frontend_version = FrontendVersion::kNeMo25;
    else bad("preprocessor.frontend_version must be \"2.4\" or \"2.5\", got \"{}\"", fv);
  }
  pre.warn_unknown();
  return p;
}

EncoderConfig EncoderConfig::from_json(const nlohmann::json& j) {
  EncoderConfig e;
  Section enc(&j, "encoder.");
  e.feat_in = enc.integer("feat_in");
  e.d_model = enc.integer("d_model");
  e.n_layers = enc.integer("n_layers");
  e.n_heads = enc.integer("n_heads", 4);
  e.ff_expansion_factor = enc.integer("ff_expansion_factor", 4);
  e.conv_kernel_size = enc.integer("conv_kernel_size", 31);
  e.subsampling = enc.string("subsampling", "dw_striding");
  e.subsampling_factor = enc.integer("subsampling_factor", 4);
  e.subsampling_conv_channels = enc.integer("subsampling_conv_channels", -1);
  if (e.subsampling_conv_channels == -1) e.subsampling_conv_channels = e.d_model;
  e.use_bias = enc.boolean("use_bias", true);
  e.xscaling = enc.boolean("xscaling");  // invisible in the weights: the converter must copy it, no default
  {
    const std::string att = enc.string("self_attention_model", "rel_pos");
    if (att == "rel_pos") e.self_attention_model = AttentionModel::kRelPos;
    else if (att == "rel_pos_local_attn") e.self_attention_model = AttentionModel::kRelPosLocalAttn;
    else check_one_of("encoder.self_attention_model", att, {"rel_pos", "rel_pos_local_attn"}, {"abs_pos"});
  }
  {
    const std::vector<int> ctx = enc.int_array("att_context_size", std::vector<int>{-1, -1});
    if (ctx.size() != 2) bad("encoder.att_context_size must have 2 entries [left, right], got {}", ctx.size());
    e.att_context_size = {ctx[0], ctx[1]};
  }
  e.pos_emb_max_len = enc.integer("pos_emb_max_len", 5000);
  e.conv_norm_type = enc.string("conv_norm_type", "batch_norm");
  enc.warn_unknown();
  return e;
}

ModelConfig ModelConfig::from_json(const nlohmann::json& j) {
  ModelConfig c;
  Section top(&j, "");
  check_format_header(top, kFormatVersion);
  const std::string model_type = top.string("model_type", "fastconformer_tdt");
  if (model_type == "sortformer")
    bad("model_type is \"sortformer\": a speaker diarization model, not a transcription model (steno diarize "
        "runs it)");
  check_one_of("model_type", model_type, {"fastconformer_tdt"},
               {"fastconformer_ctc", "fastconformer_rnnt", "fastconformer_tdt_ctc"});
  c.name = top.string("name", "");

  c.preprocessor = PreprocessorConfig::from_json(json_or_null(top.find("preprocessor")));

  c.encoder = EncoderConfig::from_json(json_or_null(top.find("encoder")));

  Section dec(top.find("decoder"), "decoder.");
  c.decoder.vocab_size = dec.integer("vocab_size");
  c.decoder.pred_hidden = dec.integer("pred_hidden");
  c.decoder.pred_rnn_layers = dec.integer("pred_rnn_layers");
  dec.warn_unknown();

  Section dco(top.find("decoding"), "decoding.");
  c.decoding.durations = dco.int_array("durations");
  c.decoding.max_symbols = dco.integer("max_symbols", 10);
  c.decoding.strategy = dco.string("strategy", "greedy");
  c.decoding.beam_size = dco.integer("beam_size", kDefaultBeamSize);
  c.decoding.lm = dco.string("lm", "");
  c.decoding.lm_alpha = dco.number("lm_alpha", kDefaultLmAlpha);
  c.decoding.lm_beta = dco.number("lm_beta", kDefaultLmBeta);
  c.decoding.lexicon = dco.string("lexicon", "");
  c.decoding.unknown_word_penalty = dco.number("unknown_word_penalty", kDefaultUnknownWordPenalty);
  dco.warn_unknown();

  Section jnt(top.find("joint"), "joint.");
  c.joint.joint_hidden = jnt.integer("joint_hidden");
  c.joint.activation = jnt.string("activation", "relu");
  c.joint.num_classes = jnt.integer("num_classes");
  c.joint.num_extra_outputs = jnt.integer("num_extra_outputs", static_cast<int>(c.decoding.durations.size()));
  jnt.warn_unknown();

  Section tok(top.find("tokenizer"), "tokenizer.");
  c.tokenizer.type = tok.string("type", "sentencepiece");
  c.tokenizer.model = tok.string("model", "tokenizer.model");
  tok.warn_unknown();

  if (const nlohmann::json* v = top.find("labels")) {
    if (!v->is_array()) bad("labels must be an array of strings, got {}", shown(*v));
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) bad("labels[{}] must be a string, got {}", i, shown((*v)[i]));
      c.labels.push_back((*v)[i].get<std::string>());
    }
  }
  top.warn_unknown();

  c.validate();
  return c;
}

ModelConfig ModelConfig::parse(std::string_view json_text) { return from_json(parse_text(json_text)); }

ModelConfig ModelConfig::load_file(const std::filesystem::path& config_json) {
  return ::steno::asr::config_json::load_file(config_json, [](const std::string& text) { return parse(text); });
}

ModelConfig ModelConfig::load(const std::filesystem::path& model_dir) { return load_file(config_file_of(model_dir)); }

// ---- validation ------------------------------------------------------------------------------------------------

void PreprocessorConfig::validate() const {
  const PreprocessorConfig& p = *this;
  check_range("preprocessor.sample_rate", p.sample_rate, 1000, 384000);
  check_range("preprocessor.features", p.features, 1, 4096);
  if (!(p.window_size > 0 && p.window_size <= 1.0))
    bad("preprocessor.window_size must be in (0, 1] seconds, got {}", p.window_size);
  if (!(p.window_stride > 0 && p.window_stride <= 1.0))
    bad("preprocessor.window_stride must be in (0, 1] seconds, got {}", p.window_stride);
  if (p.win_length() < 1)
    bad("preprocessor.window_size is shorter than one sample ({} * {} < 1)", p.window_size, p.sample_rate);
  if (p.hop_length() < 1)
    bad("preprocessor.window_stride is shorter than one sample ({} * {} < 1)", p.window_stride, p.sample_rate);
  if (p.n_fft < p.win_length() || p.n_fft > 65536)
    bad("preprocessor.n_fft must be in [win_length, 65536] = [{}, 65536], got {}", p.win_length(), p.n_fft);
  check_one_of("preprocessor.window", p.window, {"hann", "hamming", "blackman", "bartlett", "none"});
  if (!(p.preemph >= 0 && p.preemph < 1)) bad("preprocessor.preemph must be in [0, 1), got {}", p.preemph);
  check_one_of("preprocessor.normalize", p.normalize, {"per_feature", "all_features", "none"});
  if (!(p.log_zero_guard_value > 0 && p.log_zero_guard_value <= 1))
    bad("preprocessor.log_zero_guard_value must be in (0, 1], got {}", p.log_zero_guard_value);
  if (!(p.mag_power > 0 && p.mag_power <= 8)) bad("preprocessor.mag_power must be in (0, 8], got {}", p.mag_power);
  if (!(p.highfreq > 0 && p.highfreq <= p.sample_rate / 2.0))
    bad("preprocessor.highfreq must be in (0, sample_rate / 2 = {}], got {}", p.sample_rate / 2.0, p.highfreq);
  if (!(p.lowfreq >= 0 && p.lowfreq < p.highfreq))
    bad("preprocessor.lowfreq must be in [0, highfreq = {}), got {}", p.highfreq, p.lowfreq);
  if (p.frontend_version != FrontendVersion::kNeMo24 && p.frontend_version != FrontendVersion::kNeMo25)
    bad("preprocessor.frontend_version is invalid");
}

void EncoderConfig::validate() const {
  const EncoderConfig& e = *this;
  check_range("encoder.feat_in", e.feat_in, 1, 4096);
  check_range("encoder.d_model", e.d_model, 1, 65536);
  check_range("encoder.n_layers", e.n_layers, 1, 1024);
  check_range("encoder.n_heads", e.n_heads, 1, e.d_model);
  if (e.d_model % e.n_heads != 0)
    bad("encoder.n_heads must divide encoder.d_model ({} % {} != 0)", e.d_model, e.n_heads);
  check_range("encoder.ff_expansion_factor", e.ff_expansion_factor, 1, 64);
  check_range("encoder.conv_kernel_size", e.conv_kernel_size, 1, 1023);
  if (e.conv_kernel_size % 2 == 0) bad("encoder.conv_kernel_size must be odd, got {}", e.conv_kernel_size);
  check_one_of("encoder.subsampling", e.subsampling, {"dw_striding"},
               {"striding", "vggnet", "stacking", "stacking_norm", "striding_conv1d", "dw_striding_conv1d"});
  if (!is_power_of_two(e.subsampling_factor) || e.subsampling_factor < 2 || e.subsampling_factor > 64)
    bad("encoder.subsampling_factor must be a power of two in [2, 64], got {}", e.subsampling_factor);
  check_range("encoder.subsampling_conv_channels", e.subsampling_conv_channels, 1, 65536);
  if (e.self_attention_model == AttentionModel::kRelPos) {
    for (int i = 0; i < 2; ++i)
      if (e.att_context_size[i] < -1 || e.att_context_size[i] > (1 << 20))
        bad("encoder.att_context_size[{}] must be -1 (unlimited) or in [0, {}], got {}", i, 1 << 20,
            e.att_context_size[i]);
  } else if (e.self_attention_model == AttentionModel::kRelPosLocalAttn) {
    const int l = e.att_context_size[0], r = e.att_context_size[1];
    if (l < 1 || r < 1 || l > (1 << 20) || r > (1 << 20))
      bad("encoder.att_context_size must be [w, w] with w >= 1 for rel_pos_local_attn, got [{}, {}]", l, r);
    if (l != r)
      unsupported("encoder.att_context_size [{}, {}]: rel_pos_local_attn needs a symmetric window [w, w]", l, r);
  } else {
    bad("encoder.self_attention_model is invalid");
  }
  check_range("encoder.pos_emb_max_len", e.pos_emb_max_len, 1, 1 << 24);
  check_one_of("encoder.conv_norm_type", e.conv_norm_type, {"batch_norm"}, {"layer_norm", "group_norm"});
}

void ModelConfig::validate() const {
  preprocessor.validate();
  encoder.validate();
  if (encoder.feat_in != preprocessor.features)
    bad("encoder.feat_in ({}) must equal preprocessor.features ({})", encoder.feat_in, preprocessor.features);

  check_range("decoder.vocab_size", decoder.vocab_size, 1, 1 << 20);
  check_range("decoder.pred_hidden", decoder.pred_hidden, 1, 65536);
  check_range("decoder.pred_rnn_layers", decoder.pred_rnn_layers, 1, 64);

  const std::vector<int>& d = decoding.durations;
  if (d.empty() || d.size() > 64) bad("decoding.durations must have 1 to 64 entries, got {}", d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] < 0 || d[i] > 1000) bad("decoding.durations[{}] must be in [0, 1000], got {}", i, d[i]);
    if (i > 0 && d[i] <= d[i - 1])
      bad("decoding.durations must be strictly increasing ({} follows {})", d[i], d[i - 1]);
  }
  check_range("decoding.max_symbols", decoding.max_symbols, 1, 1000);
  check_one_of("decoding.strategy", decoding.strategy, {"greedy", "beam"});
  check_range("decoding.beam_size", decoding.beam_size, 1, 256);
  if (!decoding.lm.empty() && decoding.strategy != "beam")
    bad("decoding.lm needs decoding.strategy \"beam\" (it is \"{}\")", decoding.strategy);
  if (!decoding.lexicon.empty() && decoding.strategy != "beam")
    bad("decoding.lexicon needs decoding.strategy \"beam\" (it is \"{}\")", decoding.strategy);
  // Files of the model directory: a config.json from elsewhere must not make steno open other files.
  for (const auto& [key, file] : {std::pair{"lm", &decoding.lm}, std::pair{"lexicon", &decoding.lexicon}}) {
    const std::filesystem::path path(*file);
    if (path.is_absolute() ||
        std::any_of(path.begin(), path.end(), [](const std::filesystem::path& p) { return p == ".."; }))
      bad("decoding.{} must be a file of the model directory (a relative path without '..'), got '{}'", key, *file);
  }
  if (!std::isfinite(decoding.lm_alpha) || !std::isfinite(decoding.lm_beta))
    bad("decoding.lm_alpha and decoding.lm_beta must be finite");
  if (!std::isfinite(decoding.unknown_word_penalty) || decoding.unknown_word_penalty < 0)
    bad("decoding.unknown_word_penalty must be finite and >= 0, got {}", decoding.unknown_word_penalty);

  check_range("joint.joint_hidden", joint.joint_hidden, 1, 65536);
  check_one_of("joint.activation", joint.activation, {"relu", "tanh", "sigmoid"});
  if (joint.num_classes != decoder.vocab_size)
    bad("joint.num_classes ({}) must equal decoder.vocab_size ({})", joint.num_classes, decoder.vocab_size);
  if (joint.num_extra_outputs != static_cast<int>(d.size()))
    bad("joint.num_extra_outputs ({}) must equal the number of decoding.durations ({})", joint.num_extra_outputs,
        d.size());

  check_one_of("tokenizer.type", tokenizer.type, {"sentencepiece"}, {"wpe", "vocab.txt"});
  if (tokenizer.model.empty()) bad("tokenizer.model must name the tokenizer file");
  if (!labels.empty() && static_cast<int>(labels.size()) != decoder.vocab_size)
    bad("labels has {} entries but decoder.vocab_size is {}", labels.size(), decoder.vocab_size);
}

// ---- output ----------------------------------------------------------------------------------------------------

nlohmann::ordered_json PreprocessorConfig::to_json() const {
  using oj = nlohmann::ordered_json;
  const PreprocessorConfig& p = *this;
  return oj{{"sample_rate", p.sample_rate},
            {"features", p.features},
            {"n_fft", p.n_fft},
            {"window_size", p.window_size},
            {"window_stride", p.window_stride},
            {"window", p.window},
            {"preemph", p.preemph},
            {"normalize", p.normalize},
            {"log_zero_guard_value", p.log_zero_guard_value},
            {"mag_power", p.mag_power},
            {"lowfreq", p.lowfreq},
            {"highfreq", p.highfreq},
            {"frontend_version", frontend_version_name(p.frontend_version)}};
}

nlohmann::ordered_json EncoderConfig::to_json() const {
  using oj = nlohmann::ordered_json;
  const EncoderConfig& e = *this;
  return oj{{"feat_in", e.feat_in},
            {"d_model", e.d_model},
            {"n_layers", e.n_layers},
            {"n_heads", e.n_heads},
            {"ff_expansion_factor", e.ff_expansion_factor},
            {"conv_kernel_size", e.conv_kernel_size},
            {"subsampling", e.subsampling},
            {"subsampling_factor", e.subsampling_factor},
            {"subsampling_conv_channels", e.subsampling_conv_channels},
            {"use_bias", e.use_bias},
            {"xscaling", e.xscaling},
            {"self_attention_model", attention_model_name(e.self_attention_model)},
            {"att_context_size", oj::array({e.att_context_size[0], e.att_context_size[1]})},
            {"pos_emb_max_len", e.pos_emb_max_len},
            {"conv_norm_type", e.conv_norm_type}};
}

nlohmann::ordered_json ModelConfig::to_json() const {
  using oj = nlohmann::ordered_json;
  oj j = oj::object();
  j["format"] = "steno-model";
  j["format_version"] = kFormatVersion;
  j["model_type"] = "fastconformer_tdt";
  j["name"] = name;
  j["preprocessor"] = preprocessor.to_json();
  j["encoder"] = encoder.to_json();
  j["decoder"] = oj{{"vocab_size", decoder.vocab_size},
                    {"pred_hidden", decoder.pred_hidden},
                    {"pred_rnn_layers", decoder.pred_rnn_layers}};
  j["joint"] = oj{{"joint_hidden", joint.joint_hidden},
                  {"activation", joint.activation},
                  {"num_classes", joint.num_classes},
                  {"num_extra_outputs", joint.num_extra_outputs}};
  j["decoding"] = oj{{"durations", decoding.durations},
                     {"max_symbols", decoding.max_symbols},
                     {"strategy", decoding.strategy}};
  if (decoding.strategy == "beam") {  // the beam settings mean nothing to a greedy default
    j["decoding"]["beam_size"] = decoding.beam_size;
    if (!decoding.lm.empty())
      j["decoding"].update(oj{{"lm", decoding.lm}, {"lm_alpha", decoding.lm_alpha}, {"lm_beta", decoding.lm_beta}});
    if (!decoding.lexicon.empty())
      j["decoding"].update(oj{{"lexicon", decoding.lexicon}, {"unknown_word_penalty", decoding.unknown_word_penalty}});
  }
  j["tokenizer"] = oj{{"type", tokenizer.type}, {"model", tokenizer.model}};
  if (!labels.empty()) j["labels"] = labels;
  return j;
}

void ModelConfig::save(const std::filesystem::path& path) const {
  std::string text;
  try {
    text = to_json().dump(2) + "\n";
  } catch (const nlohmann::json::exception& ex) {
    fail(ErrorCode::kInvalidArgument, "{}: cannot encode the config (strings must be UTF-8): {}", path.string(),
         ex.what());
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(ErrorCode::kUnavailable, "{}: cannot create", path.string());
  out << text;
  out.close();
  if (!out) fail(ErrorCode::kUnavailable, "{}: write failed", path.string());
}

std::string ModelConfig::summary() const {
  const EncoderConfig& e = encoder;
  std::string ctx = "full context";
  if (e.self_attention_model == AttentionModel::kRelPosLocalAttn)
    ctx = fmt::format("local window {}", e.att_context_size[0]);
  else if (e.att_context_size[0] >= 0 || e.att_context_size[1] >= 0)
    ctx = fmt::format("context [{}, {}]", e.att_context_size[0], e.att_context_size[1]);
  return fmt::format(
      "FastConformer-TDT: {} mels -> {}x {} ({} ch) -> {} x Conformer (d {}, {} heads, ff {}, conv {}, {}, {}{}{}) "
      "-> LSTM {} x {} -> joint {} {} -> {} tokens + blank + {} durations [{}]",
      preprocessor.features, e.subsampling_factor, e.subsampling, e.subsampling_conv_channels, e.n_layers, e.d_model,
      e.n_heads, e.d_ff(), e.conv_kernel_size, attention_model_name(e.self_attention_model), ctx,
      e.use_bias ? ", bias" : "", e.xscaling ? ", xscaling" : "", decoder.pred_rnn_layers, decoder.pred_hidden,
      joint.joint_hidden, joint.activation, decoder.vocab_size, decoding.durations.size(),
      fmt::join(decoding.durations, ", "));
}

std::string model_type_of(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(ErrorCode::kNotFound, "{} does not exist", path.string());
  const bool dir = std::filesystem::is_directory(path, ec);
  const std::filesystem::path cfg = dir ? path / "config.json" : path;
  std::ifstream in(cfg, std::ios::binary);
  if (!in) fail(ErrorCode::kNotFound, "{}: no config.json (not a steno model directory?)", path.string());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& ex) {
    fail(ErrorCode::kDataLoss, "{}: not valid JSON: {}", cfg.string(), ex.what());
  }
  if (!j.is_object()) fail(ErrorCode::kInvalidArgument, "{}: the top level must be an object", cfg.string());
  const auto it = j.find("model_type");
  if (it == j.end() || it->is_null()) return "fastconformer_tdt";
  if (!it->is_string()) fail(ErrorCode::kInvalidArgument, "{}: model_type must be a string", cfg.string());
  return it->get<std::string>();
}

}  // namespace steno::asr
