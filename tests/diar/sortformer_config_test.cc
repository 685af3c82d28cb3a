// config.json of a Sortformer model: NeMo's sections read and validated, errors that name the field, round trip.
#include "steno/diar/sortformer_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "steno/asr/model_config.h"
#include "steno/core/error.h"

namespace steno::diar {
namespace {

nlohmann::json tiny() {
  return nlohmann::json::parse(R"({
    "model_type": "sortformer", "name": "t",
    "preprocessor": {"features": 80, "window_size": 0.025, "n_fft": 512},
    "encoder": {"feat_in": 80, "d_model": 64, "n_layers": 2, "subsampling_factor": 8, "xscaling": true},
    "transformer_encoder": {"num_layers": 2, "hidden_size": 32, "inner_size": 128, "num_attention_heads": 4},
    "sortformer_modules": {"num_spks": 4, "fc_d_model": 64, "tf_d_model": 32}
  })");
}

void expect_error(const nlohmann::json& j, ErrorCode code, const std::string& needle) {
  try {
    SortformerConfig::from_json(j);
    FAIL() << "accepted; expected an error containing " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(SortformerConfig, DefaultsAreNeMos) {
  const SortformerConfig c = SortformerConfig::from_json(tiny());
  EXPECT_EQ(c.num_speakers(), 4);
  EXPECT_DOUBLE_EQ(c.frame_seconds(), 0.08);
  EXPECT_TRUE(c.sortformer_modules.has_encoder_proj());
  EXPECT_EQ(c.sortformer_modules.spkcache_len, 188);
  EXPECT_EQ(c.sortformer_modules.chunk_left_context, 1);
  EXPECT_DOUBLE_EQ(c.sortformer_modules.pred_score_threshold, 0.25);
  EXPECT_EQ(c.postprocessing, PostProcessingParams{});
  EXPECT_FALSE(c.streaming_mode);
  EXPECT_EQ(c.transformer_encoder.head_size(), 8);
}

TEST(SortformerConfig, RoundTripsThroughJson) {
  nlohmann::json j = tiny();
  j["streaming_mode"] = true;
  j["postprocessing"] = {{"onset", 0.641}, {"min_duration_off", 0.296}};
  j["sortformer_modules"]["fifo_len"] = 188;
  const SortformerConfig c = SortformerConfig::from_json(j);
  EXPECT_EQ(SortformerConfig::parse(c.to_json().dump()), c);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "steno_sortformer_config_test";
  std::filesystem::create_directories(dir);
  c.save(dir / "config.json");
  EXPECT_EQ(SortformerConfig::load(dir), c);
  EXPECT_EQ(asr::model_type_of(dir), "sortformer");
  // The ASR loader names what it was given.
  try {
    asr::ModelConfig::load(dir);
    FAIL() << "an ASR config accepted a Sortformer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("speaker diarization model"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(SortformerConfig, ErrorsNameTheField) {
  nlohmann::json j = tiny();
  j["model_type"] = "fastconformer_tdt";
  expect_error(j, ErrorCode::kInvalidArgument, "model_type");
  j = tiny();
  j["sortformer_modules"]["tf_d_model"] = 48;
  expect_error(j, ErrorCode::kInvalidArgument, "sortformer_modules.tf_d_model (48) must equal");
  j = tiny();
  j["sortformer_modules"]["fc_d_model"] = 32;
  expect_error(j, ErrorCode::kInvalidArgument, "sortformer_modules.fc_d_model");
  j = tiny();
  j["transformer_encoder"]["pre_ln"] = true;
  expect_error(j, ErrorCode::kUnimplemented, "pre_ln");
  j = tiny();
  j["transformer_encoder"]["num_attention_heads"] = 5;
  expect_error(j, ErrorCode::kInvalidArgument, "num_attention_heads");
  j = tiny();
  j["transformer_encoder"].erase("inner_size");
  expect_error(j, ErrorCode::kInvalidArgument, "transformer_encoder.inner_size is missing");
  j = tiny();
  j["sortformer_modules"]["spkcache_len"] = 15;  // below (1 + 3 silence frames) x 4 speakers
  expect_error(j, ErrorCode::kInvalidArgument, "sortformer_modules.spkcache_len must be in [16");
  j = tiny();
  j["sortformer_modules"]["chunk_len"] = 0;
  expect_error(j, ErrorCode::kInvalidArgument, "sortformer_modules.chunk_len");
  j = tiny();
  j["postprocessing"] = {{"onset", 1.5}};
  expect_error(j, ErrorCode::kInvalidArgument, "postprocessing.onset");
  j = tiny();
  j["postprocessing"] = {{"pad_onset", -0.1}};
  expect_error(j, ErrorCode::kInvalidArgument, "postprocessing.pad_onset");
  j = tiny();
  j["encoder"]["feat_in"] = 128;
  expect_error(j, ErrorCode::kInvalidArgument, "encoder.feat_in (128) must equal preprocessor.features (80)");
  expect_error(nlohmann::json::parse("[1]"), ErrorCode::kInvalidArgument, "top level");
  EXPECT_THROW(SortformerConfig::parse("{not json"), Error);
}

}  // namespace
}  // namespace steno::diar
