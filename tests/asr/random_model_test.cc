#include "steno/asr/random_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "steno/asr/weight_store.h"
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

}  // namespace
}  // namespace steno::asr
