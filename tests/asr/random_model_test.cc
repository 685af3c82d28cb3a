#include "steno/asr/random_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>

#include "steno/asr/encoder.h"
#include "steno/asr/features.h"
#include "steno/asr/model.h"
#include "steno/asr/tdt_decoder.h"
#include "steno/asr/tokenizer.h"
#include "steno/asr/weight_store.h"
#include "steno/audio/decode.h"
#include "steno/core/safetensors.h"
#include "test_util.h"

namespace steno::asr {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::nemo_tiny;
using ::testing::HasSubstr;

class RandomModelTest : public testing::TempDirTest {};

TEST_F(RandomModelTest, WritesACompleteModelDirectory) {
  const ModelConfig c = nemo_tiny();
  std::ofstream(dir_ / "spm.model") << "not really a sentencepiece model";
  write_random_model(c, dir_ / "m", 11, DType::kBF16, dir_ / "spm.model");
  EXPECT_TRUE(fs::exists(dir_ / "m/config.json"));
  EXPECT_TRUE(fs::exists(dir_ / "m/model.safetensors"));
  EXPECT_EQ(fs::file_size(dir_ / "m/tokenizer.model"), fs::file_size(dir_ / "spm.model"));
  EXPECT_EQ(ModelConfig::load(dir_ / "m"), c);
  const SafeTensorsFile f = SafeTensorsFile::open(dir_ / "m/model.safetensors");
  EXPECT_EQ(f.metadata().at("seed"), "11");
  EXPECT_EQ(f.names().size(), 83u);
  for (const std::string& n : f.names()) EXPECT_EQ(f.info(n).dtype, DType::kBF16) << n;
  EXPECT_NO_THROW(WeightStore::open(dir_ / "m", c));
  // Rewriting in place (same tokenizer source and destination) works.
  EXPECT_NO_THROW(write_random_model(c, dir_ / "m", 12, DType::kF32, dir_ / "m/tokenizer.model"));
  EXPECT_EQ(SafeTensorsFile::open(dir_ / "m/model.safetensors").metadata().at("seed"), "12");
}

TEST_F(RandomModelTest, RejectsBadArguments) {
  ModelConfig c = nemo_tiny();
  expect_error([&] { write_random_model(c, dir_ / "m", 0, DType::kI32); }, ErrorCode::kInvalidArgument,
               {"f32, f16 or bf16"});
  expect_error([&] { write_random_model(c, dir_ / "m", 0, DType::kF32, dir_ / "absent.model"); },
               ErrorCode::kNotFound, {"absent.model"});
  c.encoder.n_heads = 5;
  expect_error([&] { write_random_model(c, dir_ / "m", 0); }, ErrorCode::kInvalidArgument, {"encoder.n_heads"});
  EXPECT_FALSE(fs::exists(dir_ / "m/config.json"));
}

TEST_F(RandomModelTest, LikeAcceptsAConfigFileOrAModelDirectory) {
  const fs::path preset = fs::path(STENO_SOURCE_DIR) / "configs/parakeet-tdt-0.6b-v2.json";
  const ModelTemplate from_file = load_model_like(preset);
  EXPECT_EQ(from_file.config.encoder.d_model, 1024);
  EXPECT_FALSE(from_file.tokenizer.has_value());

  std::ofstream(dir_ / "spm.model") << "x";
  write_random_model(nemo_tiny(), dir_ / "m", 0, DType::kF16, dir_ / "spm.model");
  const ModelTemplate from_dir = load_model_like(dir_ / "m");
  EXPECT_EQ(from_dir.config, nemo_tiny());
  ASSERT_TRUE(from_dir.tokenizer.has_value());
  EXPECT_EQ(*from_dir.tokenizer, dir_ / "m/tokenizer.model");
  // A config file beside its tokenizer finds it too.
  EXPECT_TRUE(load_model_like(dir_ / "m/config.json").tokenizer.has_value());

  expect_error([&] { load_model_like(dir_ / "nothing"); }, ErrorCode::kNotFound, {"nothing", "does not exist"});
  expect_error([&] { load_model_like(dir_); }, ErrorCode::kNotFound, {"no config.json"});
}

TEST_F(RandomModelTest, DescribeModel) {
  std::ofstream(dir_ / "spm.model") << "x";
  write_random_model(nemo_tiny(), dir_ / "m", 0, DType::kF32, dir_ / "spm.model");
  const std::string text = describe_model(dir_ / "m");
  EXPECT_THAT(text, HasSubstr("model:        nemo-tiny"));
  EXPECT_THAT(text, HasSubstr("FastConformer-TDT: 128 mels"));
  EXPECT_THAT(text, HasSubstr("parameters:   649,318"));
  EXPECT_THAT(text, HasSubstr("f32 (83 tensors)"));
  EXPECT_THAT(text, HasSubstr("mel filters:  computed by steno"));
  EXPECT_THAT(text, HasSubstr("weights match config.json"));
  EXPECT_THAT(text, HasSubstr("tokenizer:    tokenizer.model (sentencepiece, 1 B)"));
  EXPECT_THAT(text, HasSubstr("NeMo 2.5 front end"));
  EXPECT_THAT(text, HasSubstr("size on disk: "));

  // Problems are described, not thrown.
  ModelConfig other = nemo_tiny();
  other.encoder.n_layers = 3;
  other.save(dir_ / "m/config.json");
  fs::remove(dir_ / "m/tokenizer.model");
  const std::string bad = describe_model(dir_ / "m");
  EXPECT_THAT(bad, HasSubstr("28 problems against config.json"));
  EXPECT_THAT(bad, HasSubstr("encoder.layers.2.norm_feed_forward1.weight: missing"));
  EXPECT_THAT(bad, HasSubstr("... and 18 more"));
  EXPECT_THAT(bad, HasSubstr("tokenizer:    tokenizer.model MISSING"));
  fs::remove(dir_ / "m/model.safetensors");
  EXPECT_THAT(describe_model(dir_ / "m"), HasSubstr("model.safetensors MISSING"));
  std::ofstream(dir_ / "m/model.safetensors") << "garbage!garbage!";
  EXPECT_THAT(describe_model(dir_ / "m"), HasSubstr("UNREADABLE"));

  expect_error([&] { describe_model(dir_ / "nothing"); }, ErrorCode::kNotFound, {"nothing"});
}

TEST_F(RandomModelTest, PlaceholderTokenizerLoadsWithTheVocabularySize) {
  write_placeholder_tokenizer(dir_ / "t.model", 1024);
  const Tokenizer tok((dir_ / "t.model").string());
  ASSERT_EQ(tok.vocab_size(), 1024);
  EXPECT_EQ(tok.piece(0), "<unk>");
  std::set<std::string> pieces;
  for (int id = 0; id < 1024; ++id) pieces.insert(tok.piece(id));
  EXPECT_EQ(pieces.size(), 1024u);
  EXPECT_EQ(tok.decode({1, 2, 3, 5}), "aa b c");  // ▁a a ▁b ▁c
}

TEST_F(RandomModelTest, WithoutATokenizerTheDirectoryGetsAPlaceholderAndLoads) {
  write_random_model(nemo_tiny(), dir_ / "m", 3, DType::kF16);
  ASSERT_TRUE(fs::exists(dir_ / "m/tokenizer.model"));
  const auto model = AsrModel::load((dir_ / "m").string());
  EXPECT_EQ(model->tokenizer().vocab_size(), nemo_tiny().decoder.vocab_size);
}

// Greedy decoding of `clips` (one padded batch) by the model in `dir`, on the CPU: tokens per encoder frame.
double tokens_per_frame(const fs::path& dir, const std::vector<std::vector<float>>& clips) {
  const ModelConfig config = ModelConfig::load(dir);
  const WeightStore w = WeightStore::open(dir, config);
  ops::Context ctx = ops::Context::cpu(1);
  const FeatureExtractor features(config.preprocessor, Tensor(), Tensor());
  const ConformerEncoder encoder(config.encoder, true, {-1, -1}, w);
  const TdtDecoder decoder(config, w);
  const std::vector<std::span<const float>> batch(clips.begin(), clips.end());
  const Features f = features.compute(ctx, batch);
  const EncoderOutput e = encoder.forward(ctx, f.values, f.lengths);
  int64_t tokens = 0, frames = 0;
  for (const Hypothesis& h : decoder.decode(ctx, e.encoded, e.lengths)) tokens += static_cast<int64_t>(h.tokens.size());
  for (int64_t len : e.lengths) frames += len;
  return static_cast<double>(tokens) / static_cast<double>(frames);
}

std::vector<std::vector<float>> speech_clips(int n) {
  std::vector<std::vector<float>> clips;
  for (int i = 0; i < n; ++i) {
    const fs::path p = fs::path(STENO_TEST_DATA) / "testset/espeak/audio" / fmt::format("test-{:07d}.flac", i);
    clips.push_back(audio::load_audio_file(p.string()).samples);
  }
  return clips;
}

// The random model's joint is calibrated so that greedy decoding of speech emits the target rate (random weights
// alone emit a token at every step or none); only the joint's tensors change.
TEST_F(RandomModelTest, JointCalibrationReachesTheTokenRate) {
  const auto clips = speech_clips(12);
  write_random_model(nemo_tiny(), dir_ / "m", 5, DType::kBF16);
  const double before = tokens_per_frame(dir_ / "m", clips);
  const SafeTensorsFile original = SafeTensorsFile::open(dir_ / "m/model.safetensors");
  const std::vector<uint8_t> conv_before = [&] {
    const Tensor t = original.get("encoder.layers.1.conv.pointwise_conv1.weight");
    const auto* p = static_cast<const uint8_t*>(t.raw());
    return std::vector<uint8_t>(p, p + t.nbytes());
  }();

  JointCalibration cal;
  cal.tokens_per_frame = 0.4;
  cal.audio = clips;
  cal.threads = 1;
  const JointCalibrationResult r = calibrate_joint(dir_ / "m", cal);
  const double after = tokens_per_frame(dir_ / "m", clips);
  std::printf("[ measured ] tokens per frame: %.3f before calibration, %.3f after (target 0.4); %s\n", before,
              after, r.summary().c_str());
  EXPECT_NEAR(after, 0.4, 0.03);
  EXPECT_NEAR(r.tokens_per_frame, after, 1e-9);  // the same batch, the same stored weights
  EXPECT_GT(r.steps_per_frame, r.tokens_per_frame);  // some blank steps
  ASSERT_EQ(r.duration_histogram.size(), 5u);
  int used = 0;
  for (int64_t h : r.duration_histogram) used += h > 0;
  EXPECT_GE(used, 4) << "tokens should take most durations";

  const SafeTensorsFile f = SafeTensorsFile::open(dir_ / "m/model.safetensors");
  EXPECT_EQ(f.names().size(), original.names().size());
  EXPECT_THAT(f.metadata().at("joint_calibration"), HasSubstr("per encoder frame"));
  EXPECT_EQ(f.metadata().at("seed"), "5");
  for (const std::string& n : f.names()) EXPECT_EQ(f.info(n).dtype, DType::kBF16) << n;
  const Tensor conv_after = f.get("encoder.layers.1.conv.pointwise_conv1.weight");
  ASSERT_EQ(conv_after.nbytes(), conv_before.size());
  EXPECT_EQ(std::memcmp(conv_after.raw(), conv_before.data(), conv_before.size()), 0);
  EXPECT_NO_THROW(WeightStore::open(dir_ / "m", nemo_tiny()));

  // A lower target gives fewer tokens.
  cal.tokens_per_frame = 0.2;
  const JointCalibrationResult low = calibrate_joint(dir_ / "m", cal);
  EXPECT_NEAR(low.tokens_per_frame, 0.2, 0.03);
  EXPECT_GT(low.blank_bias, r.blank_bias);
}

TEST_F(RandomModelTest, JointCalibrationRejectsBadArguments) {
  write_random_model(nemo_tiny(), dir_ / "m", 0);
  JointCalibration cal;
  expect_error([&] { calibrate_joint(dir_ / "m", cal); }, ErrorCode::kInvalidArgument, {"needs audio"});
  cal.audio = {std::vector<float>(16000, 0.0f)};
  cal.tokens_per_frame = 0;
  expect_error([&] { calibrate_joint(dir_ / "m", cal); }, ErrorCode::kInvalidArgument, {"(0, 1]"});
  cal.tokens_per_frame = 0.4;
  cal.audio = {std::vector<float>(100, 0.0f)};
  expect_error([&] { calibrate_joint(dir_ / "m", cal); }, ErrorCode::kInvalidArgument, {"too short"});
}

}  // namespace
}  // namespace steno::asr
