#include "steno/vad/silero_vad.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "steno/core/error.h"
#include "steno/core/safetensors.h"
#include "steno/ops/activation.h"
#include "steno/ops/conv.h"
#include "steno/ops/gemm.h"
#include "steno/ops/lstm.h"

namespace steno::vad {
namespace {

constexpr int kFft = 256, kHop = 128, kBins = kFft / 2 + 1, kFrames = 4, kHidden = 128;
constexpr int kInput = SileroVad::kChunk + SileroVad::kContext;  // 576
constexpr int kPadded = kInput + 64;                               // after the reflect padding: 640

// Output channels, input channels and stride of the four encoder convolutions (kernel 3, padding 1).
constexpr int kConv[4][3] = {{128, kBins, 1}, {64, 128, 2}, {64, 64, 2}, {128, 64, 1}};

Tensor take(const SafeTensorsFile& f, const std::string& name, const Shape& shape) {
  if (!f.has(name)) fail(ErrorCode::kDataLoss, "{}: no tensor '{}' (convert with tools/vad/convert_silero_vad.py)",
                         f.path().string(), name);
  const SafeTensorInfo& info = f.info(name);
  if (info.dtype != DType::kF32 || info.shape != shape)
    fail(ErrorCode::kDataLoss, "{}: '{}' must be F32 {}, got {}", f.path().string(), name, shape_str(shape),
         shape_str(info.shape));
  return f.get(name);
}

}  // namespace

SileroVad SileroVad::load(const std::filesystem::path& dir) {
  const auto config_path = dir / "config.json";
  std::ifstream in(config_path);
  if (!in) fail(ErrorCode::kNotFound, "no VAD model at {} (config.json missing)", dir.string());
  const nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object() || config.value("model_type", "") != "silero_vad" ||
      config.value("sample_rate", 0) != kSampleRate)
    fail(ErrorCode::kDataLoss, "{} is not a 16 kHz Silero VAD config (model_type \"silero_vad\")",
         config_path.string());
  const SafeTensorsFile f = SafeTensorsFile::open(dir / "model.safetensors");
  SileroVad v;
  v.basis_ = take(f, "stft.basis", {2 * kBins, kFft});
  for (int i = 0; i < 4; ++i) {
    const std::string p = "encoder." + std::to_string(i) + ".";
    v.conv_w_[i] = take(f, p + "weight", {kConv[i][0], kConv[i][1], 1, 3});
    v.conv_b_[i] = take(f, p + "bias", {kConv[i][0]});
  }
  v.w_ih_ = take(f, "decoder.lstm.weight_ih", {4 * kHidden, kHidden});
  v.w_hh_ = take(f, "decoder.lstm.weight_hh", {4 * kHidden, kHidden});
  v.b_ih_ = take(f, "decoder.lstm.bias_ih", {4 * kHidden});
  v.b_hh_ = take(f, "decoder.lstm.bias_hh", {4 * kHidden});
  v.out_w_ = take(f, "decoder.out.weight", {1, kHidden});
  v.out_b_ = take(f, "decoder.out.bias", {1});
  return v;
}

std::vector<float> SileroVad::speech_probabilities(ops::Context& ctx, std::span<const float> pcm) const {
  STENO_CHECK(ctx.device().is_cpu(), "the VAD runs on the CPU");
  const int64_t chunks = (static_cast<int64_t>(pcm.size()) + kChunk - 1) / kChunk;
  std::vector<float> out(static_cast<size_t>(chunks));
  speech_probabilities(ctx, pcm, 0, chunks, out.data());
  return out;
}

void SileroVad::speech_probabilities(ops::Context& ctx, std::span<const float> pcm, int64_t first, int64_t count,
                                     float* out) const {
  STENO_CHECK(ctx.device().is_cpu(), "the VAD runs on the CPU");
  Tensor h = Tensor::zeros({1, kHidden}), c = Tensor::zeros({1, kHidden});
  for (int64_t done = 0; done < count; done += kBlockChunks)
    run_block(ctx, pcm, first + done, std::min(kBlockChunks, count - done), h, c, out + done);
}

void SileroVad::run_block(ops::Context& ctx, std::span<const float> pcm, int64_t first, int64_t count, Tensor& h,
                          Tensor& c, float* out) const {
  const int64_t n = static_cast<int64_t>(pcm.size());
  // STFT frames: chunk k's input is the signal [k*512 - 64, k*512 + 512) (zeros outside the audio), then
  // reflected at its right end ("reflect": index 576 + j mirrors 574 - j).
  Tensor frames = Tensor::empty({count * kFrames, kFft});
  float* fp = frames.data<float>();
  std::vector<float> x(kPadded);
  for (int64_t k = 0; k < count; ++k) {
    const int64_t start = (first + k) * kChunk - kContext;
    for (int i = 0; i < kInput; ++i) {
      const int64_t s = start + i;
      x[i] = s >= 0 && s < n ? pcm[static_cast<size_t>(s)] : 0.0f;
    }
    for (int j = 0; j < kPadded - kInput; ++j) x[kInput + j] = x[kInput - 2 - j];
    for (int f = 0; f < kFrames; ++f)
      std::copy_n(x.data() + f * kHop, kFft, fp + (k * kFrames + f) * kFft);
  }
  Tensor spec = Tensor::empty({count * kFrames, 2 * kBins});
  ops::linear(ctx, frames, basis_, Tensor(), spec);
  // Magnitudes, channels first for the convolutions: [count, 129, 1, 4].
  Tensor y = Tensor::empty({count, kBins, 1, kFrames});
  const float* sp = spec.data<float>();
  float* yp = y.data<float>();
  for (int64_t k = 0; k < count; ++k)
    for (int f = 0; f < kFrames; ++f) {
      const float* row = sp + (k * kFrames + f) * 2 * kBins;
      for (int b = 0; b < kBins; ++b)
        yp[(k * kBins + b) * kFrames + f] = std::sqrt(row[b] * row[b] + row[kBins + b] * row[kBins + b]);
    }
  for (int i = 0; i < 4; ++i) {
    const int stride = kConv[i][2];
    const int64_t width = (y.dim(3) + 2 - 3) / stride + 1;
    Tensor next = Tensor::empty({count, kConv[i][0], 1, width});
    ops::conv2d(ctx, y, conv_w_[i], conv_b_[i], next, 1, stride, 0, 1, 1);
    ops::relu(ctx, next, next);
    y = next;
  }
  // y is [count, 128, 1, 1]: the LSTM's input sequence, one step per chunk, batch 1.
  Tensor seq = y.reshape({count, 1, kHidden});
  Tensor hidden = Tensor::empty({count, 1, kHidden});
  ops::lstm_layer(ctx, seq, w_ih_, w_hh_, b_ih_, b_hh_, h, c, hidden);
  ops::relu(ctx, hidden, hidden);
  Tensor logits = Tensor::empty({count, 1});
  ops::linear(ctx, hidden.reshape({count, kHidden}), out_w_, out_b_, logits);
  ops::sigmoid(ctx, logits, logits);
  std::copy_n(logits.data<float>(), count, out);
}

}  // namespace steno::vad
