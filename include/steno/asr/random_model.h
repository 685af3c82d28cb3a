// Model-directory tools behind `steno model random` and `steno model info`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "steno/core/device.h"

#include "steno/asr/model_config.h"
#include "steno/asr/weight_names.h"
#include "steno/core/dtype.h"

namespace steno::asr {

// What `--like` points at: a config file (e.g. configs/parakeet-tdt-0.6b-v2.json) or a model directory.
struct ModelTemplate {
  ModelConfig config;
  // The tokenizer file config.tokenizer.model names, relative to the config's directory, if it exists there.
  std::optional<std::filesystem::path> tokenizer;
};
// kNotFound if `config_or_model_dir` does not exist; otherwise as ModelConfig::load / load_file.
ModelTemplate load_model_like(const std::filesystem::path& config_or_model_dir);

// Writes a model directory with the shapes of `config` and random weights: config.json, model.safetensors in
// `dtype` (f32, f16 or bf16) and, if `tokenizer_src` is given, a copy of it under config.tokenizer.model;
// otherwise a placeholder tokenizer (write_placeholder_tokenizer), so that the directory loads like any model.
// Initialisation follows PyTorch's defaults (linear/conv/LSTM uniform in ±1/sqrt(fan_in); LayerNorm and
// BatchNorm weight 1, bias 0; running mean 0, variance 1; embedding N(0, 1) with a zero blank row). The front-end
// buffers (preprocessor.featurizer.fb / window) are left out: the engine computes them. The same config, seed and
// dtype give the same weights (each tensor's stream is seeded from the seed and its name). Creates `out_dir` if needed; existing files are replaced.
void write_random_model(const ModelConfig& config, const std::filesystem::path& out_dir, uint64_t seed = 0,
                        DType dtype = DType::kF32,
                        const std::optional<std::filesystem::path>& tokenizer_src = std::nullopt);

// Writes `file` (a model.safetensors) with every non-optional tensor of `specs`, initialised as
// write_random_model describes (`blank_row`: the embedding row kept zero, -1 for none). Any model type's writer.
void write_random_weights(const std::vector<WeightSpec>& specs, const std::filesystem::path& file, uint64_t seed,
                          DType dtype, int64_t blank_row = -1);

// Writes a SentencePiece model with `vocab_size` pieces (<unk>, then made-up pieces "▁a", "a", "▁b", ...) that
// decodes ids to text and nothing more: the tokenizer of a random model whose template has none, whose
// transcripts are meaningless anyway.
void write_placeholder_tokenizer(const std::filesystem::path& path, int vocab_size);

// Joint calibration of a random model, behind `steno model random --token-rate R --calibrate-on FILE...`.
//
// With random weights the encoder's output is almost the same at every frame (at the 0.6B shapes the joint's
// projection of it varies from frame to frame by about 2 % of its size), so the joint decides alike at every
// step: greedy TDT decoding emits a token at every step with one fixed duration, or blanks out everything,
// whatever the audio, and a blank bias alone only switches between the two. A benchmark's decoder should do the
// work a trained model does on speech, so calibration changes the joint (joint.enc, joint.pred,
// joint.joint_net.*), much as tools/make_golden.py does for the golden models; the encoder and prediction
// network, and so the compute, are untouched:
//  1. joint.enc and joint.pred are centred and scaled so that their outputs, over the calibration audio's
//     encoder frames and over prediction-network outputs after random label sequences, have mean 0 and
//     standard deviation 1: the joint's input then varies with the frame and with the label history;
//  2. the output rows are scaled so that token logits (blank included) have standard deviation 4 and duration
//     logits 2 over (frame, history) pairs, and the duration biases are fitted, first on those pairs, then on
//     the durations greedy decoding takes with few blanks, to `duration0_fraction` for the first duration (0)
//     and geometric shares 1 : 0.6 : 0.36 ... for the others (so that tokens alone would come at about 0.58 per
//     frame, leaving room for blank steps);
//  3. the blank logit's bias is bisected until greedy decoding of the calibration audio (padded batches of up
//     to 16 clips of similar length, CPU engine, f32, the weights as stored) emits `tokens_per_frame` tokens per
//     encoder frame over all of it.
// Every step works on the weights rounded to the file's dtype, so the rate is the stored model's. The rate is an
// average: single clips scatter around it, and clips much longer or shorter than the calibration ones drift (a
// random encoder's output varies less within a long clip), so calibrate on the lengths to be run.
struct JointCalibration {
  double tokens_per_frame = 0.4;   // the target; real Parakeet-TDT emits about 0.4 on speech
  double duration0_fraction = 0.1;
  std::vector<std::vector<float>> audio;  // 16 kHz mono clips (speech)
  uint64_t seed = 0;                      // the random label sequences
  int threads = 0;                        // CPU threads (0 = default)
  // Where the encoder pass and the trial decodes run (in f32): the CPU, or a CUDA device, which takes seconds
  // where a 0.6b model on the CPU takes minutes. Both give the same calibration up to f32 rounding.
  Device device = Device::cpu();
  // The encoder's precision on a CUDA device (the trial decodes stay in f32): f32, or the precision a benchmark
  // will run the model in. A random model's emissions hang on near-ties, so an encoder in another precision
  // (bf16, FP8 linear layers) emits at another rate; calibrated in the benchmark's own precision, each arm of a
  // comparison decodes at the target rate and does the same decoding work.
  DType encoder_dtype = DType::kF32;
  bool encoder_fp8_linears = false;
};

struct JointCalibrationResult {
  float blank_bias = 0;          // the blank logit's output bias as stored
  double tokens_per_frame = 0;   // measured on the calibration audio with the stored weights
  double steps_per_frame = 0;    // joint evaluations per encoder frame
  int64_t tokens = 0, frames = 0;
  std::vector<int64_t> duration_histogram;  // durations taken by the emitted tokens, per durations[] entry
  std::string summary() const;   // one line
};

// Calibrates the joint of the model in `model_dir` (any FastConformer-TDT directory; meant for random ones) and
// rewrites its model.safetensors with the new joint tensors, in place and atomically; the other tensors are
// copied byte for byte. kInvalidArgument for an empty clip list or a target outside (0, 1].
JointCalibrationResult calibrate_joint(const std::filesystem::path& model_dir, const JointCalibration& calibration);

// A human-readable description of a model directory: name, architecture, front end, parameter count, the
// weights' dtype and size on disk and whether they match config.json (read from the safetensors header only, no
// weights are loaded), and whether the tokenizer is present. Throws for a missing directory or a bad config.json;
// a missing or mismatched model.safetensors is described, not thrown.
std::string describe_model(const std::filesystem::path& model_dir);

// Parts of a description any model type shares: model.safetensors (size, dtypes, where the mel filters come from,
// and whether it matches `specs`), and the directory's size on disk. Lines end with '\n'.
std::string describe_weights(const std::filesystem::path& model_dir, const std::vector<WeightSpec>& specs);
std::string describe_disk_size(const std::filesystem::path& model_dir);
std::string with_commas(int64_t v);  // 282056 -> "282,056"

}  // namespace steno::asr
