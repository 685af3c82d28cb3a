// Silero VAD (snakers4/silero-vad, MIT; v6.2, 16 kHz) run by steno's own ops: the probability that each 32 ms of
// 16 kHz audio is speech. The weights come from Silero's ONNX model through tools/vad/convert_silero_vad.py; a
// parity test holds the probabilities to onnxruntime's (tests/data/vad/silero_golden.json). docs/vad.md.
//
// The graph, per chunk of 512 samples after the previous chunk's last 64 (zeros before the first):
//   576 samples, reflect-padded by 64 on the right -> STFT as a matrix product with the model's basis (256-sample
//   windows, hop 128: 4 frames of 129 magnitudes) -> 4 conv1d + ReLU (129->128, 128->64 stride 2, 64->64 stride 2,
//   64->128: 1 frame) -> LSTM cell (128, state carried from chunk to chunk) -> ReLU -> linear 128->1 -> sigmoid.
// Everything before the LSTM depends on the audio alone, so chunks are computed in blocks, as batches.
#pragma once

#include <filesystem>
#include <span>
#include <vector>

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::vad {

class SileroVad {
 public:
  static constexpr int kSampleRate = 16000;
  static constexpr int kChunk = 512;   // samples per probability (32 ms)
  static constexpr int kContext = 64;  // samples of the previous chunk each chunk sees

  // Reads `dir`/model.safetensors (and checks `dir`/config.json's model_type). kNotFound without it, kDataLoss
  // for missing or misshapen tensors.
  static SileroVad load(const std::filesystem::path& dir);

  // One probability per started chunk of `pcm` (16 kHz mono; the last chunk zero-padded), in order. Runs on
  // `ctx`'s CPU. Memory stays bounded for any length (blocks of kBlockChunks chunks).
  std::vector<float> speech_probabilities(ops::Context& ctx, std::span<const float> pcm) const;
  // Chunks [first, first + count) of `pcm` only, the LSTM starting afresh at `first` (as at the audio's start):
  // for a recording run in segments side by side (SpeechDetector), each primed with the seconds before it.
  void speech_probabilities(ops::Context& ctx, std::span<const float> pcm, int64_t first, int64_t count,
                            float* out) const;

 private:
  static constexpr int64_t kBlockChunks = 1024;  // 33 s of audio per block: about 10 MB of activations
  // Runs chunks [first, first + count) of the padded signal through the feed-forward part and the LSTM.
  void run_block(ops::Context& ctx, std::span<const float> pcm, int64_t first, int64_t count, Tensor& h, Tensor& c,
                 float* out) const;

  Tensor basis_;                // [258, 256]
  Tensor conv_w_[4], conv_b_[4];  // [Cout, Cin, 1, 3], [Cout]
  Tensor w_ih_, w_hh_, b_ih_, b_hh_;  // [512, 128], [512, 128], [512], [512]
  Tensor out_w_, out_b_;        // [1, 128], [1]
};

}  // namespace steno::vad
