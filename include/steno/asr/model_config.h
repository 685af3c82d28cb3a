// The model directory's config.json (docs/model-format.md): architecture, front end, decoding and tokenizer of a
// FastConformer-TDT model. Field names follow NeMo's model_config.yaml.
//
// Loading validates every field and every cross-field constraint; a bad value is a steno::Error whose message
// names the field, e.g. "config.json: encoder.n_heads must divide encoder.d_model (96 % 5 != 0)". Codes:
// kNotFound (no directory / no config.json), kDataLoss (not JSON), kInvalidArgument (a missing or bad value),
// kUnimplemented (a NeMo option steno does not implement, e.g. subsampling "striding").
#pragma once

#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace steno::asr {

// NeMo's front-end behaviour (docs/engine.md, "Front end"): "2.5" = NeMo >= 2.5 (valid length L//hop, zero centre
// padding, masked subsampling), "2.4" = NeMo <= 2.4 (L//hop + 1, reflect padding, unmasked subsampling).
enum class FrontendVersion { kNeMo24, kNeMo25 };
const char* frontend_version_name(FrontendVersion v);  // "2.4", "2.5"

enum class AttentionModel { kRelPos, kRelPosLocalAttn };
const char* attention_model_name(AttentionModel m);  // "rel_pos", "rel_pos_local_attn"

// AudioToMelSpectrogramPreprocessor. Absent fields take NeMo's class defaults; n_fft and highfreq are stored
// resolved (NeMo: n_fft = 2^ceil(log2(win_length)), highfreq = sample_rate / 2).
struct PreprocessorConfig {
  int sample_rate = 16000;
  int features = 0;  // n_mels (required)
  int n_fft = 0;
  double window_size = 0.02;   // seconds
  double window_stride = 0.01; // seconds
  std::string window = "hann"; // hann | hamming | blackman | bartlett | none
  double preemph = 0.97;       // 0 = off (NeMo's null)
  std::string normalize = "per_feature";  // per_feature | all_features | none
  double log_zero_guard_value = 5.960464477539063e-08;  // 2^-24, added before the log
  double mag_power = 2.0;
  double lowfreq = 0.0;
  double highfreq = 0.0;
  FrontendVersion frontend_version = FrontendVersion::kNeMo25;

  int win_length() const;  // int(window_size * sample_rate), as NeMo
  int hop_length() const;  // int(window_stride * sample_rate)
  int n_bins() const { return n_fft / 2 + 1; }

  // The "preprocessor" object of config.json (JSON null = absent: every field's default, but `features` is
  // required), validated; errors as ModelConfig::from_json's. Every model type with this front end reads it so.
  static PreprocessorConfig from_json(const nlohmann::json& j);
  nlohmann::ordered_json to_json() const;  // every field, resolved defaults included
  void validate() const;
  bool operator==(const PreprocessorConfig&) const = default;
};

// ConformerEncoder (FastConformer). Required: feat_in, d_model, n_layers and xscaling (it changes the numbers but
// not the weights, so a default could go unnoticed). The rest default to ConformerEncoder's class defaults, except
// subsampling (NeMo's default "striding" is not implemented). subsampling_conv_channels -1 means d_model and is
// stored resolved.
struct EncoderConfig {
  int feat_in = 0;
  int d_model = 0;
  int n_layers = 0;
  int n_heads = 4;
  int ff_expansion_factor = 4;
  int conv_kernel_size = 31;
  std::string subsampling = "dw_striding";  // the only one steno implements
  int subsampling_factor = 4;               // a power of two: log2 of it stride-2 conv stages
  int subsampling_conv_channels = 0;
  bool use_bias = true;  // biases on the Conformer linears/convs (never on linear_pos; the subsampling always has them)
  bool xscaling = true;  // x *= sqrt(d_model) before the first layer
  AttentionModel self_attention_model = AttentionModel::kRelPos;
  std::array<int, 2> att_context_size = {-1, -1};  // [left, right]; -1 = unlimited
  int pos_emb_max_len = 5000;
  std::string conv_norm_type = "batch_norm";  // the only one steno implements

  int d_head() const { return d_model / n_heads; }
  int d_ff() const { return d_model * ff_expansion_factor; }
  int num_subsampling_stages() const;  // log2(subsampling_factor)
  int subsampled_features() const;     // feat_in after the stride-2 convs: ceil(f/2) per stage

  // The "encoder" object of config.json, as PreprocessorConfig::from_json. feat_in is checked against the front
  // end by the model's config, not here.
  static EncoderConfig from_json(const nlohmann::json& j);
  nlohmann::ordered_json to_json() const;
  void validate() const;
  bool operator==(const EncoderConfig&) const = default;
};

// RNNTDecoder prediction network (all fields required): embedding [vocab_size + 1, pred_hidden] (blank = vocab_size is the padding
// row), then pred_rnn_layers LSTM layers of pred_hidden.
struct DecoderConfig {
  int vocab_size = 0;
  int pred_hidden = 0;
  int pred_rnn_layers = 0;
  bool operator==(const DecoderConfig&) const = default;
};

// RNNTJoint: enc [joint_hidden, d_model], pred [joint_hidden, pred_hidden], activation, then a linear to
// num_classes + 1 + num_extra_outputs logits (tokens, blank, TDT durations).
// Required: joint_hidden, num_classes.
struct JointConfig {
  int joint_hidden = 0;
  std::string activation = "relu";  // relu | tanh | sigmoid
  int num_classes = 0;              // = decoder.vocab_size
  int num_extra_outputs = 0;        // = number of TDT durations (default: that number)
  int num_outputs() const { return num_classes + 1 + num_extra_outputs; }
  bool operator==(const JointConfig&) const = default;
};

// Beam search's defaults, for a model's default decoding and a user's request alike: the hypotheses kept, and the
// LM weights chosen on the bundled model's validation set (tools/lm/README.md).
inline constexpr int kDefaultBeamSize = 8;
inline constexpr double kDefaultLmAlpha = 0.4, kDefaultLmBeta = 0.6;
// What a word outside a lexicon costs a hypothesis, chosen likewise (tools/lm/README.md).
inline constexpr double kDefaultUnknownWordPenalty = 2.0;

struct DecodingConfig {
  std::vector<int> durations;  // TDT durations, strictly increasing, >= 0 (required)
  int max_symbols = 10;        // symbols emitted per frame before the decoder is forced forward
  // The decoding of a request that asks for none (asr::DecodingRequest::resolve): "greedy" (NeMo's) or "beam", with
  // the beam size and the token LM (a file of the model directory, "" for none) and weights it was measured with.
  // The bundled model names its LM and lexicon here: on its validation sets beam search with them makes 16 % fewer
  // errors than greedy decoding.
  std::string strategy = "greedy";
  int beam_size = kDefaultBeamSize;
  std::string lm;
  double lm_alpha = kDefaultLmAlpha, lm_beta = kDefaultLmBeta;
  // A word list (a file of the model directory, "" for none: asr/lexicon.h) and what each word outside it costs a
  // beam-search hypothesis, in the units of the scores' natural-log probabilities.
  std::string lexicon;
  double unknown_word_penalty = kDefaultUnknownWordPenalty;
  bool operator==(const DecodingConfig&) const = default;
};

struct TokenizerConfig {
  std::string type = "sentencepiece";
  std::string model = "tokenizer.model";  // path relative to the model directory
  bool operator==(const TokenizerConfig&) const = default;
};

struct ModelConfig {
  static constexpr int kFormatVersion = 1;

  std::string name;  // free text; "" if absent
  PreprocessorConfig preprocessor;
  EncoderConfig encoder;
  DecoderConfig decoder;
  JointConfig joint;
  DecodingConfig decoding;
  TokenizerConfig tokenizer;
  std::vector<std::string> labels;  // optional: token strings in id order (empty = absent)

  int blank_id() const { return decoder.vocab_size; }

  // <model_dir>/config.json. kNotFound if the directory or the file does not exist.
  static ModelConfig load(const std::filesystem::path& model_dir);
  // A config file by path (a preset such as configs/parakeet-tdt-0.6b-v2.json).
  static ModelConfig load_file(const std::filesystem::path& config_json);
  // Parses JSON text (kDataLoss if it is not JSON), then from_json().
  static ModelConfig parse(std::string_view json_text);
  // Reads and validates; unknown fields are ignored with a warning in the log.
  static ModelConfig from_json(const nlohmann::json& j);
  // Every field, resolved defaults included, in the order of docs/model-format.md.
  nlohmann::ordered_json to_json() const;
  // Writes to_json() to `path` (2-space indent, trailing newline).
  void save(const std::filesystem::path& path) const;

  // Throws (as from_json) if any field or cross-field constraint is violated; for configs built in code.
  void validate() const;
  // One line: "FastConformer-TDT: 128 mels -> 8x dw_striding (64 ch) -> 2 x Conformer d96 ...".
  std::string summary() const;

  bool operator==(const ModelConfig&) const = default;
};

// The model_type of a model directory's config.json, or of a config file: "fastconformer_tdt" (also when absent,
// as in every ASR model before there were others) or "sortformer" (diar/sortformer_config.h), or whatever else the
// file says; the caller refuses what it cannot load. Errors as ModelConfig::load (kNotFound, kDataLoss).
std::string model_type_of(const std::filesystem::path& model_dir_or_config);

}  // namespace steno::asr
