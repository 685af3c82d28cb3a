#include "nemo/import_config.h"

#include <cmath>

#include "nemo/python_values.h"
#include "steno/core/error.h"

namespace steno::nemo {
namespace {

using Json = nlohmann::ordered_json;
using Kind = YamlValue::Kind;
const std::string kFile = "model_config.yaml";

std::string field(const std::string& section, const std::string& key) { return kFile + ": " + section + "." + key; }

YamlValue empty_map() {
  YamlValue v;
  v.kind = Kind::kMap;
  return v;
}

// A section as the converter reads it: y.get(name, {}), `or {}` when `or_empty` (None and {} alike).
YamlValue section(const YamlValue& y, const std::string& name, bool or_empty) {
  const YamlValue v = py_get(y, kFile, name, empty_map());
  return or_empty ? py_or(v, empty_map()) : v;
}

// Values are copies throughout (a fallback is often a temporary): a config is small.
struct Section {
  YamlValue map;
  std::string name;
  YamlValue get(const std::string& key, const YamlValue& fallback) const {
    return py_get(map, kFile + ": " + name, key, fallback);
  }
  YamlValue at(const std::string& key) const { return py_at(map, kFile + ": " + name, key); }
  int64_t int_of(const std::string& key, const YamlValue& fallback) const {
    return py_int(get(key, fallback), field(name, key));
  }
  int64_t int_at(const std::string& key) const { return py_int(at(key), field(name, key)); }
  double float_of(const std::string& key, const YamlValue& fallback) const {
    return py_float(get(key, fallback), field(name, key));
  }
};

[[noreturn]] void unsupported(const std::string& what) {
  fail(ErrorCode::kUnimplemented, "{}: unsupported {}", kFile, what);
}

// nemo_version >= 2.5 -> "2.5", else "2.4"; no version -> "2.5" (docs/engine.md, "Front end").
std::string frontend_from_version(const YamlValue& ver) {
  if (!py_truthy(ver)) return "2.5";
  const std::string text = py_str(ver);
  int parts[2] = {0, 0};
  size_t begin = 0;
  for (int k = 0; k < 2 && begin <= text.size(); ++k) {
    const size_t dot = text.find('.', begin);
    const std::string part = text.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    std::string digits;
    for (char c : part)
      if (c >= '0' && c <= '9') digits += c;
    parts[k] = digits.empty() ? 0 : (digits.size() > 9 ? 999999999 : std::stoi(digits));
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return (parts[0] > 2 || (parts[0] == 2 && parts[1] >= 5)) ? "2.5" : "2.4";
}

// The fields every config.json starts with, in the converter's order.
Json config_head(const char* model_type, const std::string& name) {
  Json cfg;
  cfg["format"] = "steno-model";
  cfg["format_version"] = 1;
  cfg["model_type"] = model_type;
  cfg["name"] = name;
  return cfg;
}

Json preprocessor_config(const Section& p, int64_t sr, const std::string& frontend_version) {
  // Front-end settings the engine does not implement are refused rather than silently ignored.
  const YamlValue yes = [] { YamlValue v; v.kind = Kind::kBool; v.b = true; return v; }();
  const YamlValue no = [] { YamlValue v; v.kind = Kind::kBool; return v; }();
  const std::pair<const char*, YamlValue> required[] = {
      {"log", yes}, {"frame_splicing", py_int_value(1)}, {"exact_pad", no},
      {"log_zero_guard_type", py_str_value("add")}};
  for (const auto& [key, ok] : required) {
    const YamlValue* v = p.map.find(key);
    if (v && !py_equal(*v, ok))
      unsupported(fmt::format("preprocessor.{}={} (steno needs {})", key, py_str(*v), py_str(ok)));
  }
  // NeMo normalises per_feature / all_features and passes anything else through: Sortformer v2's "NA" (like None)
  // means no normalisation.
  const YamlValue norm = p.get("normalize", py_str_value("per_feature"));
  std::string normalize;
  if (norm.kind == Kind::kNull || (norm.kind == Kind::kStr && (norm.s == "NA" || norm.s == "none" || norm.s == "None")))
    normalize = "none";
  else if (norm.kind == Kind::kStr && (norm.s == "per_feature" || norm.s == "all_features"))
    normalize = norm.s;
  else
    unsupported(fmt::format("preprocessor.normalize={}", py_str(norm)));
  const YamlValue guard = p.get("log_zero_guard_value", py_float_value(std::ldexp(1.0, -24)));
  if (guard.kind == Kind::kStr) unsupported(fmt::format("preprocessor.log_zero_guard_value='{}'", guard.s));

  int64_t n_fft = 0;
  if (py_truthy(p.get("n_fft", py_none()))) {
    n_fft = p.int_of("n_fft", py_none());
  } else {
    // 2 ** (int(window_size * sr) - 1).bit_length(): the next power of two of the window's length
    const YamlValue ws = p.get("window_size", py_float_value(0.02));
    if (ws.kind != Kind::kInt && ws.kind != Kind::kFloat && ws.kind != Kind::kBool)
      fail(ErrorCode::kInvalidArgument, "{} must be a number, not the {} '{}'", field("preprocessor", "window_size"),
           ws.kind_name(), py_str(ws));
    const double win = ws.kind == Kind::kFloat ? std::trunc(ws.f * static_cast<double>(sr))
                                               : static_cast<double>(py_int(ws, "") * sr);
    if (!(std::fabs(win) < 1e15))
      fail(ErrorCode::kInvalidArgument, "{} is absurd", field("preprocessor", "window_size"));
    uint64_t m = static_cast<uint64_t>(std::llabs(static_cast<int64_t>(win) - 1));
    int bits = 0;
    while (m) ++bits, m >>= 1;
    n_fft = int64_t{1} << bits;
  }
  Json j;
  j["sample_rate"] = sr;
  j["features"] = p.int_of("features", py_int_value(64));
  j["n_fft"] = n_fft;
  j["window_size"] = p.float_of("window_size", py_float_value(0.02));
  j["window_stride"] = p.float_of("window_stride", py_float_value(0.01));
  j["window"] = py_to_json(p.get("window", py_str_value("hann")));
  j["preemph"] = p.float_of("preemph", py_float_value(0.97));
  j["normalize"] = normalize;
  j["log_zero_guard_value"] = py_float(guard, field("preprocessor", "log_zero_guard_value"));
  j["mag_power"] = p.float_of("mag_power", py_float_value(2.0));
  j["lowfreq"] =
      py_float(py_or(p.get("lowfreq", py_float_value(0.0)), py_float_value(0.0)), field("preprocessor", "lowfreq"));
  j["highfreq"] = py_float(py_or(p.get("highfreq", py_none()), py_float_value(static_cast<double>(sr) / 2)),
                           field("preprocessor", "highfreq"));
  j["frontend_version"] = frontend_version;
  return j;
}

Json encoder_config(const Section& e, const Section& p) {
  static const YamlValue kFull = py_list_value({py_int_value(-1), py_int_value(-1)});
  YamlValue att = py_or(e.get("att_context_size", kFull), kFull);
  if (att.kind != Kind::kList)
    fail(ErrorCode::kInvalidArgument, "{} must be a list", field("encoder", "att_context_size"));
  // Multi-lookahead models list several contexts: NeMo's default is the first.
  if (att.items[0].kind == Kind::kList) att = YamlValue(att.items[0]);
  Json att_json = Json::array();
  for (const YamlValue& a : att.items) att_json.push_back(py_int(a, field("encoder", "att_context_size")));
  const int64_t d_model = e.int_at("d_model");
  const int64_t sub_ch = e.int_of("subsampling_conv_channels", py_int_value(-1));
  Json j;
  j["feat_in"] = py_int(e.get("feat_in", p.get("features", py_int_value(64))), field("encoder", "feat_in"));
  j["d_model"] = d_model;
  j["n_layers"] = e.int_at("n_layers");
  j["n_heads"] = e.int_of("n_heads", py_int_value(4));
  j["ff_expansion_factor"] = e.int_of("ff_expansion_factor", py_int_value(4));
  j["conv_kernel_size"] = e.int_of("conv_kernel_size", py_int_value(31));
  j["subsampling"] = py_to_json(e.get("subsampling", py_str_value("striding")));
  j["subsampling_factor"] = e.int_of("subsampling_factor", py_int_value(4));
  j["subsampling_conv_channels"] = sub_ch == -1 ? d_model : sub_ch;
  j["use_bias"] = py_truthy(e.get("use_bias", py_int_value(1)));
  j["xscaling"] = py_truthy(e.get("xscaling", py_int_value(1)));
  j["self_attention_model"] = py_to_json(e.get("self_attention_model", py_str_value("rel_pos")));
  j["att_context_size"] = att_json;
  j["pos_emb_max_len"] = e.int_of("pos_emb_max_len", py_int_value(5000));
  j["conv_norm_type"] = py_to_json(e.get("conv_norm_type", py_str_value("batch_norm")));
  return j;
}

bool names(const YamlValue& v, const std::string& what) { return py_str(v).find(what) != std::string::npos; }

Json asr_config(const YamlValue& y, const std::string& name, const std::string& fv) {
  const Section p{section(y, "preprocessor", false), "preprocessor"}, e{section(y, "encoder", false), "encoder"};
  const Section dec{section(y, "decoder", false), "decoder"}, j{section(y, "joint", false), "joint"};
  const Section dcfg{section(y, "decoding", true), "decoding"};
  const YamlValue defaults = section(y, "model_defaults", true);
  const YamlValue durations =
      py_or(dcfg.get("durations", py_none()), py_get(defaults, kFile + ": model_defaults", "tdt_durations", py_none()));
  const YamlValue model_type = dcfg.get("model_type", py_none());
  const YamlValue loss_name = py_get(section(y, "loss", true), kFile + ": loss", "loss_name", py_none());
  const int64_t n_extra = py_int(py_or(j.get("num_extra_outputs", py_int_value(0)), py_int_value(0)),
                                 field("joint", "num_extra_outputs"));
  const bool tdt_type = model_type.kind == Kind::kNull || py_equal(model_type, py_str_value("tdt")) ||
                        py_equal(loss_name, py_str_value("tdt"));
  if (!py_truthy(durations) || durations.kind != Kind::kList ||
      n_extra != static_cast<int64_t>(durations.items.size()) || !tdt_type)
    fail(ErrorCode::kUnimplemented,
         "{}: not a TDT model (decoding.model_type={}, loss={}, durations={}, joint.num_extra_outputs={}, model "
         "{}): steno runs FastConformer-TDT transducers and Sortformer diarizers, not CTC or RNNT heads",
         kFile, py_str(model_type), py_str(loss_name), py_to_json(durations).dump(), n_extra,
         py_str(py_get(y, kFile, "target", py_str_value("?"))));
  const YamlValue dec_target = dec.get("_target_", py_str_value("RNNTDecoder"));
  const YamlValue enc_target = e.get("_target_", py_str_value("ConformerEncoder"));
  if (!names(dec_target, "RNNTDecoder") || !names(enc_target, "ConformerEncoder"))
    unsupported(fmt::format("modules: encoder {}, decoder {}", py_str(enc_target), py_str(dec_target)));
  const int64_t sr = py_int(p.get("sample_rate", py_get(y, kFile, "sample_rate", py_int_value(16000))),
                            field("preprocessor", "sample_rate"));
  const YamlValue labels = py_or(py_get(y, kFile, "labels", py_none()), j.get("vocabulary", py_none()));
  const Section prednet{dec.at("prednet"), "decoder.prednet"}, jointnet{j.at("jointnet"), "joint.jointnet"};

  Json cfg = config_head("fastconformer_tdt", name);
  cfg["preprocessor"] = preprocessor_config(p, sr, fv);
  cfg["encoder"] = encoder_config(e, p);
  cfg["decoder"] = Json{{"vocab_size", dec.int_at("vocab_size")},
                        {"pred_hidden", prednet.int_at("pred_hidden")},
                        {"pred_rnn_layers", prednet.int_of("pred_rnn_layers", py_int_value(1))}};
  cfg["joint"] = Json{{"joint_hidden", jointnet.int_at("joint_hidden")},
                      {"activation", py_to_json(jointnet.get("activation", py_str_value("relu")))},
                      {"num_classes", j.int_at("num_classes")},
                      {"num_extra_outputs", n_extra}};
  Json durs = Json::array();
  for (const YamlValue& d : durations.items) durs.push_back(py_int(d, field("decoding", "durations")));
  const Section greedy{py_or(dcfg.get("greedy", py_none()), empty_map()), "decoding.greedy"};
  cfg["decoding"] = Json{
      {"durations", durs},
      {"max_symbols", py_int(py_or(greedy.get("max_symbols", py_none()), py_int_value(10)),
                             field("decoding", "greedy.max_symbols"))}};
  cfg["tokenizer"] = Json{{"type", "sentencepiece"}, {"model", "tokenizer.model"}};
  if (py_truthy(labels)) {
    if (labels.kind != Kind::kList) fail(ErrorCode::kInvalidArgument, "{}: labels must be a list", kFile);
    cfg["labels"] = py_to_json(labels);
  }
  return cfg;
}

// OmegaConf references such as ${model_defaults.fc_d_model}, the plain ones, resolved against the whole document
// (the converter does this for Sortformer configs only). Bounded: chains of references nest at most kMaxHops deep
// and the copies they make count against the node budget.
constexpr int kMaxHops = 32;
YamlValue resolve(const YamlValue& node, const YamlValue& root, int hops, size_t& budget) {
  if (budget-- == 0) fail(ErrorCode::kInvalidArgument, "{}: too many values once its ${{...}} references are "
                          "resolved", kFile);
  if (node.kind == Kind::kList || node.kind == Kind::kMap) {
    YamlValue out = node;
    for (YamlValue& item : out.items) item = resolve(item, root, hops, budget);
    return out;
  }
  const std::string& s = node.s;
  if (node.kind != Kind::kStr || !s.starts_with("${") || !s.ends_with("}") || s.find("${", 2) != std::string::npos)
    return node;
  if (hops >= kMaxHops) fail(ErrorCode::kInvalidArgument, "{}: {} refers on through more than {} references (a "
                             "cycle?)", kFile, s, kMaxHops);
  const YamlValue* target = &root;
  const std::string path = s.substr(2, s.size() - 3);
  for (size_t begin = 0;;) {
    const size_t dot = path.find('.', begin);
    const size_t len = dot == std::string::npos ? std::string::npos : dot - begin;
    const YamlValue* next = target->find(path.substr(begin, len));
    if (!next) fail(ErrorCode::kInvalidArgument, "{}: cannot resolve {}", kFile, s);
    target = next;
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return resolve(*target, root, hops + 1, budget);
}

// NeMo's SortformerModules streaming arguments that inference reads, with its class defaults.
struct Streaming {
  const char* key;
  bool is_int;
  double fallback;
};
constexpr Streaming kStreaming[] = {
    {"spkcache_len", true, 188}, {"fifo_len", true, 0}, {"chunk_len", true, 188},
    {"spkcache_update_period", true, 188}, {"chunk_left_context", true, 1}, {"chunk_right_context", true, 1},
    {"spkcache_sil_frames_per_spk", true, 3}, {"pred_score_threshold", false, 0.25},
    {"scores_boost_latest", false, 0.05}, {"sil_threshold", false, 0.2}, {"strong_boost_rate", false, 0.75},
    {"weak_boost_rate", false, 1.5}, {"min_pos_scores_rate", false, 0.5}};
constexpr const char* kPostKeys[] = {"onset", "offset", "pad_onset", "pad_offset", "min_duration_on",
                                     "min_duration_off"};

// A NeMo post-processing yaml: its `parameters:` mapping, or the mapping itself.
Json postprocessing_config(const YamlValue* doc) {
  Json post{{"onset", 0.5}, {"offset", 0.5}, {"pad_onset", 0.0}, {"pad_offset", 0.0}, {"min_duration_on", 0.0},
            {"min_duration_off", 0.0}};
  if (!doc) return post;
  const YamlValue* params = doc->is_map() ? doc->find("parameters") : nullptr;
  if (doc->is_map() && !params) params = doc;
  if (!params || !params->is_map())
    fail(ErrorCode::kInvalidArgument, "post-processing yaml: no `parameters:` mapping");
  for (size_t k = 0; k < params->keys.size(); ++k)
    if (!params->string_key[k] || std::find(std::begin(kPostKeys), std::end(kPostKeys), params->keys[k]) ==
                                      std::end(kPostKeys))
      fail(ErrorCode::kInvalidArgument, "post-processing yaml: unknown parameter '{}'", params->keys[k]);
  for (const char* key : kPostKeys)
    if (const YamlValue* v = params->find(key)) post[key] = py_float(*v, std::string("post-processing yaml: ") + key);
  return post;
}

Json sortformer_config(const YamlValue& original, const std::string& name, const std::string& fv,
                       const YamlValue* postprocessing) {
  size_t budget = YamlLimits{}.max_nodes;  // the copies references make, bounded as the document itself is
  const YamlValue y = resolve(original, original, 0, budget);
  const Section p{section(y, "preprocessor", true), "preprocessor"}, e{section(y, "encoder", true), "encoder"};
  const Section t{section(y, "transformer_encoder", true), "transformer_encoder"};
  const Section m{section(y, "sortformer_modules", true), "sortformer_modules"};
  const YamlValue enc_target = e.get("_target_", py_str_value("ConformerEncoder"));
  if (!names(enc_target, "ConformerEncoder"))
    unsupported(fmt::format("encoder {} (steno runs the FastConformer encoder)", py_str(enc_target)));
  if (py_truthy(t.get("mask_future", py_none()))) unsupported("transformer_encoder.mask_future=true");
  const int64_t sr = py_int(p.get("sample_rate", py_get(y, kFile, "sample_rate", py_int_value(16000))),
                            field("preprocessor", "sample_rate"));
  Json enc = encoder_config(e, p);
  const Section defaults{section(y, "model_defaults", true), "model_defaults"};
  Json modules;
  modules["num_spks"] = m.int_of("num_spks", py_get(y, kFile, "max_num_of_spks", py_int_value(4)));
  modules["fc_d_model"] =
      m.int_of("fc_d_model", defaults.get("fc_d_model", py_int_value(enc["d_model"].get<int64_t>())));
  modules["tf_d_model"] =
      m.int_of("tf_d_model", defaults.get("tf_d_model", t.get("hidden_size", py_int_value(192))));
  for (const Streaming& s : kStreaming) {
    if (s.is_int) modules[s.key] = m.int_of(s.key, py_int_value(static_cast<int64_t>(s.fallback)));
    else modules[s.key] = m.float_of(s.key, py_float_value(s.fallback));
  }
  const int64_t enc_sub = enc["subsampling_factor"].get<int64_t>();
  const int64_t sub = m.int_of("subsampling_factor", py_int_value(enc_sub));
  if (sub != enc_sub)
    fail(ErrorCode::kInvalidArgument, "{}: sortformer_modules.subsampling_factor {} != encoder.subsampling_factor {}",
         kFile, sub, enc_sub);
  Json cfg = config_head("sortformer", name);
  cfg["preprocessor"] = preprocessor_config(p, sr, fv);
  cfg["encoder"] = std::move(enc);
  cfg["transformer_encoder"] = Json{
      {"num_layers", t.int_at("num_layers")},
      {"hidden_size", t.int_at("hidden_size")},
      {"inner_size", t.int_at("inner_size")},
      {"num_attention_heads", t.int_of("num_attention_heads", py_int_value(1))},
      {"hidden_act", py_to_json(t.get("hidden_act", py_str_value("relu")))},
      {"pre_ln", py_truthy(t.get("pre_ln", py_none()))}};
  cfg["sortformer_modules"] = std::move(modules);
  cfg["streaming_mode"] = py_truthy(py_get(y, kFile, "streaming_mode", py_none()));
  cfg["postprocessing"] = postprocessing_config(postprocessing);
  return cfg;
}

}  // namespace

TranslatedConfig translate_config(const YamlValue& y, const std::string& name,
                                  const std::optional<std::string>& frontend_version,
                                  const YamlValue* postprocessing) {
  if (!y.is_map()) fail(ErrorCode::kInvalidArgument, "{} is not a mapping (it is a {})", kFile, y.kind_name());
  const std::string fv = frontend_version ? *frontend_version
                                          : frontend_from_version(py_get(y, kFile, "nemo_version", py_none()));
  TranslatedConfig out;
  out.sortformer = y.find("sortformer_modules") || names(py_get(y, kFile, "target", py_str_value("")), "Sortformer");
  if (out.sortformer) {
    out.config = sortformer_config(y, name, fv, postprocessing);
  } else {
    if (postprocessing)
      fail(ErrorCode::kInvalidArgument, "--postprocessing applies to Sortformer diarization models only");
    out.config = asr_config(y, name, fv);
  }
  return out;
}

}  // namespace steno::nemo
