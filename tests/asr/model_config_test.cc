#include "steno/asr/model_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "steno/asr/weight_names.h"
#include "test_util.h"

namespace steno::asr {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::kNemoTinyConfig;
using testing::nemo_tiny;
using ::testing::HasSubstr;
using json = nlohmann::json;

TEST(ModelConfig, ParsesTheDocumentedExample) {
  const ModelConfig c = nemo_tiny();
  EXPECT_EQ(c.name, "nemo-tiny");
  EXPECT_EQ(c.preprocessor.features, 128);
  EXPECT_EQ(c.preprocessor.win_length(), 400);
  EXPECT_EQ(c.preprocessor.hop_length(), 160);
  EXPECT_EQ(c.preprocessor.n_bins(), 257);
  EXPECT_EQ(c.preprocessor.frontend_version, FrontendVersion::kNeMo25);
  EXPECT_DOUBLE_EQ(c.preprocessor.log_zero_guard_value, std::ldexp(1.0, -24));
  EXPECT_EQ(c.encoder.d_head(), 24);
  EXPECT_EQ(c.encoder.d_ff(), 384);
  EXPECT_EQ(c.encoder.num_subsampling_stages(), 3);
  EXPECT_EQ(c.encoder.subsampled_features(), 16);
  EXPECT_FALSE(c.encoder.use_bias);
  EXPECT_FALSE(c.encoder.xscaling);
  EXPECT_EQ(c.encoder.self_attention_model, AttentionModel::kRelPos);
  EXPECT_EQ(c.encoder.att_context_size, (std::array<int, 2>{-1, -1}));
  EXPECT_EQ(c.blank_id(), 128);
  EXPECT_EQ(c.joint.num_outputs(), 134);
  EXPECT_EQ(c.decoding.durations, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(c.tokenizer.model, "tokenizer.model");
  EXPECT_TRUE(c.labels.empty());
  EXPECT_THAT(c.summary(), HasSubstr("FastConformer-TDT: 128 mels"));
}

TEST(ModelConfig, RoundTripsThroughJson) {
  ModelConfig c = nemo_tiny();
  c.labels.clear();
  for (int i = 0; i < 128; ++i) c.labels.push_back(i == 1 ? "\u2581t" : "tok" + std::to_string(i));
  c.encoder.self_attention_model = AttentionModel::kRelPosLocalAttn;
  c.encoder.att_context_size = {128, 128};
  c.preprocessor.frontend_version = FrontendVersion::kNeMo24;
  c.encoder.use_bias = true;
  const nlohmann::ordered_json j = c.to_json();
  EXPECT_EQ(j.begin().key(), "format");
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["preprocessor"]["frontend_version"], "2.4");
  EXPECT_EQ(j["encoder"]["self_attention_model"], "rel_pos_local_attn");
  const ModelConfig back = ModelConfig::parse(j.dump());
  EXPECT_EQ(back, c);
  // The documented example survives to_json unchanged, field for field.
  EXPECT_EQ(json::parse(nemo_tiny().to_json().dump()), json::parse(kNemoTinyConfig));
}

class ModelConfigFiles : public testing::TempDirTest {};

TEST_F(ModelConfigFiles, SaveAndLoad) {
  const ModelConfig c = nemo_tiny();
  c.save(dir_ / "config.json");
  EXPECT_EQ(ModelConfig::load(dir_), c);
  EXPECT_EQ(ModelConfig::load_file(dir_ / "config.json"), c);
}

TEST_F(ModelConfigFiles, LoadErrors) {
  expect_error([&] { ModelConfig::load(dir_ / "absent"); }, ErrorCode::kNotFound, {"absent", "does not exist"});
  expect_error([&] { ModelConfig::load(dir_); }, ErrorCode::kNotFound, {"no config.json"});
  std::ofstream(dir_ / "config.json") << "{\"encoder\": ";
  expect_error([&] { ModelConfig::load(dir_); }, ErrorCode::kDataLoss, {"config.json", "not valid JSON"});
  expect_error([&] { ModelConfig::load(dir_ / "config.json"); }, ErrorCode::kInvalidArgument, {"not a model directory"});
  expect_error([&] { ModelConfig::load_file(dir_); }, ErrorCode::kInvalidArgument, {"is a directory"});
  // Validation messages from a file name the file.
  json j = json::parse(kNemoTinyConfig);
  j["encoder"]["n_heads"] = 5;
  std::ofstream(dir_ / "config.json", std::ios::trunc) << j.dump();
  expect_error([&] { ModelConfig::load(dir_); }, ErrorCode::kInvalidArgument,
               {(dir_ / "config.json").string() + ": encoder.n_heads must divide encoder.d_model (96 % 5 != 0)"});
}

TEST(ModelConfig, DefaultsFollowNeMo) {
  const ModelConfig c = ModelConfig::parse(R"({
    "preprocessor": {"features": 80, "preemph": null, "normalize": null},
    "encoder": {"feat_in": 80, "d_model": 256, "n_layers": 3, "xscaling": true},
    "decoder": {"vocab_size": 32, "pred_hidden": 64, "pred_rnn_layers": 1},
    "joint": {"joint_hidden": 64, "num_classes": 32},
    "decoding": {"durations": [0, 1, 2]}
  })");
  const PreprocessorConfig& p = c.preprocessor;
  EXPECT_EQ(p.sample_rate, 16000);
  EXPECT_EQ(p.win_length(), 320);  // window_size 0.02
  EXPECT_EQ(p.hop_length(), 160);
  EXPECT_EQ(p.n_fft, 512);         // 2^ceil(log2(320))
  EXPECT_EQ(p.window, "hann");
  EXPECT_EQ(p.preemph, 0.0);        // null: off
  EXPECT_EQ(p.normalize, "none");   // null: none
  EXPECT_EQ(p.mag_power, 2.0);
  EXPECT_EQ(p.lowfreq, 0.0);
  EXPECT_EQ(p.highfreq, 8000.0);
  EXPECT_EQ(p.frontend_version, FrontendVersion::kNeMo25);
  const EncoderConfig& e = c.encoder;
  EXPECT_EQ(e.n_heads, 4);
  EXPECT_EQ(e.ff_expansion_factor, 4);
  EXPECT_EQ(e.conv_kernel_size, 31);
  EXPECT_EQ(e.subsampling, "dw_striding");
  EXPECT_EQ(e.subsampling_factor, 4);
  EXPECT_EQ(e.subsampling_conv_channels, 256);  // -1 = d_model
  EXPECT_TRUE(e.use_bias);
  EXPECT_EQ(e.att_context_size, (std::array<int, 2>{-1, -1}));
  EXPECT_EQ(e.pos_emb_max_len, 5000);
  EXPECT_EQ(e.conv_norm_type, "batch_norm");
  EXPECT_EQ(c.joint.activation, "relu");
  EXPECT_EQ(c.joint.num_extra_outputs, 3);  // the number of durations
  EXPECT_EQ(c.decoding.max_symbols, 10);
  EXPECT_EQ(c.tokenizer.type, "sentencepiece");
  EXPECT_EQ(c.tokenizer.model, "tokenizer.model");
  EXPECT_EQ(c.name, "");
  // Resolved values are written out, so the round trip is exact.
  EXPECT_EQ(ModelConfig::parse(c.to_json().dump()), c);
}

TEST(ModelConfig, UnknownFieldsAreIgnored) {
  json j = json::parse(kNemoTinyConfig);
  j["encoder"]["dropout"] = 0.1;
  j["comment"] = "from NeMo";
  EXPECT_EQ(ModelConfig::from_json(j), nemo_tiny());
}

struct BadCase {
  std::string pointer;  // JSON pointer into the nemo-tiny config
  json value;           // new value; discarded (null) means "remove the field"
  ErrorCode code;
  std::string message;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.pointer << " = " << c.value.dump(); }

class ModelConfigValidation : public ::testing::TestWithParam<BadCase> {};

TEST_P(ModelConfigValidation, NamesTheField) {
  const BadCase& bad = GetParam();
  json j = json::parse(kNemoTinyConfig);
  if (bad.pointer.empty()) {
    j = bad.value;
  } else if (bad.value.is_discarded()) {
    const json::json_pointer ptr(bad.pointer);
    j[ptr.parent_pointer()].erase(ptr.back());
  } else {
    j[json::json_pointer(bad.pointer)] = bad.value;
  }
  expect_error([&] { ModelConfig::from_json(j); }, bad.code, {"config.json: " + bad.message});
}

const json kRemove = json(json::value_t::discarded);
constexpr ErrorCode kInvalid = ErrorCode::kInvalidArgument;
constexpr ErrorCode kUnimpl = ErrorCode::kUnimplemented;

INSTANTIATE_TEST_SUITE_P(
    AllFields, ModelConfigValidation,
    ::testing::Values(
        BadCase{"", json::array(), kInvalid, "the top level must be an object"},
        BadCase{"/format", "other", kInvalid, "format must be \"steno-model\""},
        BadCase{"/format_version", 2, kUnimpl, "format_version 2 is newer"},
        BadCase{"/format_version", 0, kInvalid, "format_version must be >= 1"},
        BadCase{"/model_type", "fastconformer_ctc", kUnimpl, "model_type \"fastconformer_ctc\" is not implemented"},
        BadCase{"/model_type", "whisper", kInvalid, "model_type must be one of fastconformer_tdt"},
        BadCase{"/name", 3, kInvalid, "name must be a string"},
        // preprocessor
        BadCase{"/preprocessor", json::array(), kInvalid, "preprocessor must be an object"},
        BadCase{"/preprocessor/features", kRemove, kInvalid, "preprocessor.features is missing"},
        BadCase{"/preprocessor/features", 0, kInvalid, "preprocessor.features must be in [1, 4096], got 0"},
        BadCase{"/preprocessor/sample_rate", 0, kInvalid, "preprocessor.sample_rate must be in"},
        BadCase{"/preprocessor/sample_rate", "16k", kInvalid, "preprocessor.sample_rate must be an integer"},
        BadCase{"/preprocessor/window_size", 0, kInvalid, "preprocessor.window_size must be in (0, 1]"},
        BadCase{"/preprocessor/window_size", 0.00001, kInvalid, "preprocessor.window_size is shorter than one sample"},
        BadCase{"/preprocessor/window_stride", -0.01, kInvalid, "preprocessor.window_stride must be in (0, 1]"},
        BadCase{"/preprocessor/window_stride", "10ms", kInvalid, "preprocessor.window_stride must be a number"},
        BadCase{"/preprocessor/n_fft", 256, kInvalid, "preprocessor.n_fft must be in [win_length, 65536] = [400"},
        BadCase{"/preprocessor/window", "kaiser", kInvalid, "preprocessor.window must be one of hann"},
        BadCase{"/preprocessor/preemph", 1.5, kInvalid, "preprocessor.preemph must be in [0, 1)"},
        BadCase{"/preprocessor/normalize", "per_utterance", kInvalid, "preprocessor.normalize must be one of"},
        BadCase{"/preprocessor/log_zero_guard_value", 0, kInvalid, "preprocessor.log_zero_guard_value must be in"},
        BadCase{"/preprocessor/mag_power", 0, kInvalid, "preprocessor.mag_power must be in (0, 8]"},
        BadCase{"/preprocessor/highfreq", 9000, kInvalid, "preprocessor.highfreq must be in (0, sample_rate / 2"},
        BadCase{"/preprocessor/lowfreq", 8000, kInvalid, "preprocessor.lowfreq must be in [0, highfreq"},
        BadCase{"/preprocessor/frontend_version", "2.6", kInvalid,
                "preprocessor.frontend_version must be \"2.4\" or \"2.5\", got \"2.6\""},
        BadCase{"/preprocessor/frontend_version", 2.5, kInvalid, "preprocessor.frontend_version must be a string"},
        // encoder
        BadCase{"/encoder", "big", kInvalid, "encoder must be an object"},
        BadCase{"/encoder/feat_in", 80, kInvalid, "encoder.feat_in (80) must equal preprocessor.features (128)"},
        BadCase{"/encoder/d_model", kRemove, kInvalid, "encoder.d_model is missing"},
        BadCase{"/encoder/d_model", "96", kInvalid, "encoder.d_model must be an integer, got \"96\""},
        BadCase{"/encoder/d_model", 96.5, kInvalid, "encoder.d_model must be an integer, got 96.5"},
        BadCase{"/encoder/d_model", 0, kInvalid, "encoder.d_model must be in [1, 65536], got 0"},
        BadCase{"/encoder/d_model", 10000000000LL, kInvalid, "encoder.d_model is out of range"},
        BadCase{"/encoder/n_layers", 0, kInvalid, "encoder.n_layers must be in [1, 1024], got 0"},
        BadCase{"/encoder/n_heads", 5, kInvalid, "encoder.n_heads must divide encoder.d_model (96 % 5 != 0)"},
        BadCase{"/encoder/n_heads", 0, kInvalid, "encoder.n_heads must be in [1, 96], got 0"},
        BadCase{"/encoder/ff_expansion_factor", 0, kInvalid, "encoder.ff_expansion_factor must be in"},
        BadCase{"/encoder/conv_kernel_size", 8, kInvalid, "encoder.conv_kernel_size must be odd, got 8"},
        BadCase{"/encoder/subsampling", "striding", kUnimpl, "encoder.subsampling \"striding\" is not implemented"},
        BadCase{"/encoder/subsampling", "pooling", kInvalid, "encoder.subsampling must be one of dw_striding"},
        BadCase{"/encoder/subsampling_factor", 6, kInvalid, "encoder.subsampling_factor must be a power of two"},
        BadCase{"/encoder/subsampling_factor", 1, kInvalid, "encoder.subsampling_factor must be a power of two"},
        BadCase{"/encoder/subsampling_conv_channels", 0, kInvalid, "encoder.subsampling_conv_channels must be in"},
        BadCase{"/encoder/use_bias", 1, kInvalid, "encoder.use_bias must be true or false, got 1"},
        BadCase{"/encoder/xscaling", kRemove, kInvalid, "encoder.xscaling is missing"},
        BadCase{"/encoder/xscaling", "false", kInvalid, "encoder.xscaling must be true or false"},
        BadCase{"/encoder/self_attention_model", "abs_pos", kUnimpl,
                "encoder.self_attention_model \"abs_pos\" is not implemented"},
        BadCase{"/encoder/self_attention_model", "rel_pos_local_attn", kInvalid,
                "encoder.att_context_size must be [w, w] with w >= 1 for rel_pos_local_attn, got [-1, -1]"},
        BadCase{"/encoder/att_context_size", json::array({1, 2, 3}), kInvalid,
                "encoder.att_context_size must have 2 entries"},
        BadCase{"/encoder/att_context_size", json::array({-2, -1}), kInvalid, "encoder.att_context_size[0] must be"},
        BadCase{"/encoder/att_context_size", json::array({-1, "x"}), kInvalid,
                "encoder.att_context_size[1] must be an integer"},
        BadCase{"/encoder/att_context_size", -1, kInvalid, "encoder.att_context_size must be an array"},
        BadCase{"/encoder/pos_emb_max_len", 0, kInvalid, "encoder.pos_emb_max_len must be in"},
        BadCase{"/encoder/conv_norm_type", "layer_norm", kUnimpl,
                "encoder.conv_norm_type \"layer_norm\" is not implemented"},
        // decoder and joint
        BadCase{"/decoder/vocab_size", 100, kInvalid, "joint.num_classes (128) must equal decoder.vocab_size (100)"},
        BadCase{"/decoder/vocab_size", 0, kInvalid, "decoder.vocab_size must be in"},
        BadCase{"/decoder/pred_hidden", kRemove, kInvalid, "decoder.pred_hidden is missing"},
        BadCase{"/decoder/pred_rnn_layers", 0, kInvalid, "decoder.pred_rnn_layers must be in [1, 64], got 0"},
        BadCase{"/joint/joint_hidden", -1, kInvalid, "joint.joint_hidden must be in [1, 65536], got -1"},
        BadCase{"/joint/activation", "gelu", kInvalid, "joint.activation must be one of relu, tanh, sigmoid"},
        BadCase{"/joint/num_classes", kRemove, kInvalid, "joint.num_classes is missing"},
        BadCase{"/joint/num_extra_outputs", 4, kInvalid,
                "joint.num_extra_outputs (4) must equal the number of decoding.durations (5)"},
        // decoding, tokenizer, labels
        BadCase{"/decoding/durations", kRemove, kInvalid, "decoding.durations is missing"},
        BadCase{"/decoding/durations", json::array(), kInvalid, "decoding.durations must have 1 to 64 entries"},
        BadCase{"/decoding/durations", json::array({0, 2, 1, 3, 4}), kInvalid,
                "decoding.durations must be strictly increasing (1 follows 2)"},
        BadCase{"/decoding/durations", json::array({-1, 1, 2, 3, 4}), kInvalid, "decoding.durations[0] must be in"},
        BadCase{"/decoding/durations", "0-4", kInvalid, "decoding.durations must be an array of integers"},
        BadCase{"/decoding/max_symbols", 0, kInvalid, "decoding.max_symbols must be in [1, 1000], got 0"},
        BadCase{"/decoding/strategy", "maes", kInvalid, "decoding.strategy must be one of greedy, beam"},
        BadCase{"/decoding/beam_size", 0, kInvalid, "decoding.beam_size must be in [1, 256], got 0"},
        BadCase{"/decoding/lm", "lm.arpa", kInvalid, "decoding.lm needs decoding.strategy \"beam\""},
        BadCase{"/decoding/lm_alpha", "high", kInvalid, "decoding.lm_alpha must be a number"},
        BadCase{"/tokenizer/type", "wpe", kUnimpl, "tokenizer.type \"wpe\" is not implemented"},
        BadCase{"/tokenizer/model", "", kInvalid, "tokenizer.model must name the tokenizer file"},
        BadCase{"/labels", json::array({"a", "b"}), kInvalid, "labels has 2 entries but decoder.vocab_size is 128"},
        BadCase{"/labels", json::array({1}), kInvalid, "labels[0] must be a string"},
        BadCase{"/labels", "abc", kInvalid, "labels must be an array of strings"}));

TEST(ModelConfig, LocalAttentionNeedsASymmetricWindow) {
  json j = json::parse(kNemoTinyConfig);
  j["encoder"]["self_attention_model"] = "rel_pos_local_attn";
  j["encoder"]["att_context_size"] = {128, 128};
  EXPECT_EQ(ModelConfig::from_json(j).encoder.self_attention_model, AttentionModel::kRelPosLocalAttn);
  j["encoder"]["att_context_size"] = {128, 64};
  expect_error([&] { ModelConfig::from_json(j); }, ErrorCode::kUnimplemented, {"symmetric window"});
}

// A model may name its default decoding: beam search with an LM of its own directory, and nothing outside it.
TEST(ModelConfig, DefaultDecoding) {
  json j = json::parse(kNemoTinyConfig);
  EXPECT_EQ(ModelConfig::from_json(j).decoding.strategy, "greedy");
  j["decoding"].update({{"strategy", "beam"}, {"beam_size", 6}, {"lm", "lm/tokens.arpa.gz"}, {"lm_alpha", 0.5}});
  const ModelConfig c = ModelConfig::from_json(j);
  EXPECT_EQ(c.decoding.strategy, "beam");
  EXPECT_EQ(c.decoding.beam_size, 6);
  EXPECT_EQ(c.decoding.lm, "lm/tokens.arpa.gz");
  EXPECT_EQ(c.decoding.lm_alpha, 0.5);
  EXPECT_EQ(c.decoding.lm_beta, 0.6);  // absent: the bundled LM's weight
  EXPECT_EQ(ModelConfig::parse(c.to_json().dump()), c);
  for (const char* outside : {"/etc/lm.arpa", "../lm.arpa", "lm/../../lm.arpa"}) {
    j["decoding"]["lm"] = outside;
    expect_error([&] { ModelConfig::from_json(j); }, ErrorCode::kInvalidArgument,
                 {"decoding.lm must be a file of the model directory", outside});
  }
}

// The lexicon and its penalty: a file of the model directory too, only with beam search, the penalty >= 0.
TEST(ModelConfig, DefaultDecodingsLexicon) {
  json j = json::parse(kNemoTinyConfig);
  j["decoding"].update({{"strategy", "beam"}, {"lexicon", "words.txt.gz"}, {"unknown_word_penalty", 2.5}});
  const ModelConfig c = ModelConfig::from_json(j);
  EXPECT_EQ(c.decoding.lexicon, "words.txt.gz");
  EXPECT_EQ(c.decoding.unknown_word_penalty, 2.5);
  EXPECT_EQ(ModelConfig::parse(c.to_json().dump()), c);
  json bad = j;
  bad["decoding"]["lexicon"] = "../words.txt";
  expect_error([&] { ModelConfig::from_json(bad); }, ErrorCode::kInvalidArgument,
               {"decoding.lexicon must be a file of the model directory", "../words.txt"});
  bad = j;
  bad["decoding"]["unknown_word_penalty"] = -1;
  expect_error([&] { ModelConfig::from_json(bad); }, ErrorCode::kInvalidArgument,
               {"decoding.unknown_word_penalty must be finite and >= 0"});
  bad = j;
  bad["decoding"].erase("unknown_word_penalty");
  EXPECT_EQ(ModelConfig::from_json(bad).decoding.unknown_word_penalty, kDefaultUnknownWordPenalty);
  bad = j;
  bad["decoding"]["strategy"] = "greedy";
  expect_error([&] { ModelConfig::from_json(bad); }, ErrorCode::kInvalidArgument,
               {"decoding.lexicon needs decoding.strategy \"beam\""});
}

TEST(ModelConfig, NotJson) {
  expect_error([] { ModelConfig::parse("{\"encoder\": "); }, ErrorCode::kDataLoss, {"config.json: not valid JSON"});
  expect_error([] { ModelConfig::parse(""); }, ErrorCode::kDataLoss, {"not valid JSON"});
}

TEST(ModelConfig, ValidateChecksConfigsBuiltInCode) {
  ModelConfig c = nemo_tiny();
  EXPECT_NO_THROW(c.validate());
  c.encoder.n_heads = 5;
  expect_error([&] { c.validate(); }, ErrorCode::kInvalidArgument, {"encoder.n_heads must divide"});
}

TEST(ModelConfig, ParakeetPreset) {
  const ModelConfig c = ModelConfig::load_file(fs::path(STENO_SOURCE_DIR) / "configs/parakeet-tdt-0.6b-v2.json");
  EXPECT_EQ(c.name, "parakeet-tdt-0.6b-v2");
  EXPECT_EQ(c.preprocessor.features, 128);
  EXPECT_EQ(c.preprocessor.frontend_version, FrontendVersion::kNeMo24);
  EXPECT_EQ(c.encoder.d_model, 1024);
  EXPECT_EQ(c.encoder.n_layers, 24);
  EXPECT_EQ(c.encoder.n_heads, 8);
  EXPECT_EQ(c.encoder.d_ff(), 4096);
  EXPECT_EQ(c.encoder.conv_kernel_size, 9);
  EXPECT_EQ(c.encoder.subsampling_conv_channels, 256);
  EXPECT_FALSE(c.encoder.use_bias);
  EXPECT_FALSE(c.encoder.xscaling);
  EXPECT_EQ(c.decoder.pred_hidden, 640);
  EXPECT_EQ(c.decoder.pred_rnn_layers, 2);
  EXPECT_EQ(c.joint.joint_hidden, 640);
  EXPECT_EQ(c.joint.num_outputs(), 1030);
  EXPECT_EQ(c.decoding.max_symbols, 10);
  // The NeMo weight shapes (docs/engine.md, "Weight names") and the ~0.62B parameter count.
  std::map<std::string, Shape> shapes;
  for (const WeightSpec& s : expected_weights(c)) shapes[s.name] = s.shape;
  EXPECT_EQ(shapes["encoder.pre_encode.out.weight"], Shape({1024, 4096}));
  EXPECT_EQ(shapes["encoder.pre_encode.conv.0.weight"], Shape({256, 1, 3, 3}));
  EXPECT_EQ(shapes["encoder.pre_encode.conv.6.weight"], Shape({256, 256, 1, 1}));
  EXPECT_EQ(shapes["encoder.layers.23.self_attn.pos_bias_u"], Shape({8, 128}));
  EXPECT_EQ(shapes["encoder.layers.23.conv.pointwise_conv1.weight"], Shape({2048, 1024, 1}));
  EXPECT_EQ(shapes["decoder.prediction.embed.weight"], Shape({1025, 640}));
  EXPECT_EQ(shapes["decoder.prediction.dec_rnn.lstm.weight_ih_l1"], Shape({2560, 640}));
  EXPECT_EQ(shapes["joint.enc.weight"], Shape({640, 1024}));
  EXPECT_EQ(shapes["joint.joint_net.2.weight"], Shape({1030, 640}));
  EXPECT_EQ(shapes["preprocessor.featurizer.fb"], Shape({1, 128, 257}));
  EXPECT_EQ(shapes["preprocessor.featurizer.window"], Shape({400}));
  const int64_t params = parameter_count(c);
  EXPECT_GT(params, 600'000'000);
  EXPECT_LT(params, 640'000'000);
}

TEST(ModelConfig, NemoTinyPresetMatchesTheDocExample) {
  EXPECT_EQ(ModelConfig::load_file(fs::path(STENO_SOURCE_DIR) / "configs/nemo-tiny.json"), nemo_tiny());
}

}  // namespace
}  // namespace steno::asr
