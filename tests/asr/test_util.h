// Shared helpers for the model I/O tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "steno/asr/model_config.h"
#include "steno/core/error.h"

namespace steno::asr::testing {

// The nemo-tiny config (docs/model-format.md's example; tests/data/nemo-tiny/model.nemo's model_config.yaml).
inline constexpr const char* kNemoTinyConfig = R"({
  "format": "steno-model",
  "format_version": 1,
  "model_type": "fastconformer_tdt",
  "name": "nemo-tiny",
  "preprocessor": {
    "sample_rate": 16000, "features": 128, "n_fft": 512, "window_size": 0.025, "window_stride": 0.01,
    "window": "hann", "preemph": 0.97, "normalize": "per_feature", "log_zero_guard_value": 5.960464477539063e-08,
    "mag_power": 2.0, "lowfreq": 0.0, "highfreq": 8000.0, "frontend_version": "2.5"
  },
  "encoder": {
    "feat_in": 128, "d_model": 96, "n_layers": 2, "n_heads": 4, "ff_expansion_factor": 4, "conv_kernel_size": 9,
    "subsampling": "dw_striding", "subsampling_factor": 8, "subsampling_conv_channels": 64, "use_bias": false,
    "xscaling": false, "self_attention_model": "rel_pos", "att_context_size": [-1, -1], "pos_emb_max_len": 5000,
    "conv_norm_type": "batch_norm"
  },
  "decoder": { "vocab_size": 128, "pred_hidden": 64, "pred_rnn_layers": 2 },
  "joint": { "joint_hidden": 64, "activation": "relu", "num_classes": 128, "num_extra_outputs": 5 },
  "decoding": { "durations": [0, 1, 2, 3, 4], "max_symbols": 10, "strategy": "greedy" },
  "tokenizer": { "type": "sentencepiece", "model": "tokenizer.model" }
})";

inline ModelConfig nemo_tiny() { return ModelConfig::parse(kNemoTinyConfig); }

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("steno_model_io_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

// Runs `f`, which must throw steno::Error with `code` and a message containing every one of `texts`.
template <typename F>
void expect_error(F&& f, ErrorCode code, std::initializer_list<std::string> texts) {
  try {
    f();
    ADD_FAILURE() << "no error thrown; expected one containing '" << *texts.begin() << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << "code " << error_code_name(e.code()) << ": " << e.what();
    for (const std::string& t : texts) {
      EXPECT_NE(std::string(e.what()).find(t), std::string::npos) << "message lacks '" << t << "': " << e.what();
    }
  }
}

}  // namespace steno::asr::testing
