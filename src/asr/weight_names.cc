#include "steno/asr/weight_names.h"

#include <fmt/format.h>

namespace steno::asr {

std::string encoder_layer_prefix(int layer) { return fmt::format("encoder.layers.{}.", layer); }

void add_weight(std::vector<WeightSpec>& w, std::string name, Shape shape, WeightKind kind, int64_t fan_in) {
  w.push_back({std::move(name), std::move(shape), kind, fan_in, false, {}});
}

void add_affine(std::vector<WeightSpec>& w, const std::string& name, Shape shape, int64_t fan_in, bool bias) {
  const int64_t out = shape[0];
  add_weight(w, name + ".weight", std::move(shape), WeightKind::kWeight, fan_in);
  if (bias) add_weight(w, name + ".bias", {out}, WeightKind::kBias, fan_in);
}

void add_norm(std::vector<WeightSpec>& w, const std::string& name, int64_t n) {
  add_weight(w, name + ".weight", {n}, WeightKind::kNormWeight, 0);
  add_weight(w, name + ".bias", {n}, WeightKind::kNormBias, 0);
}

std::vector<WeightSpec> encoder_weights(const PreprocessorConfig& pre, const EncoderConfig& e) {
  const int64_t d = e.d_model, ff = e.d_ff(), k = e.conv_kernel_size, c = e.subsampling_conv_channels;
  const int64_t heads = e.n_heads, dk = e.d_head();
  std::vector<WeightSpec> w;
  auto add = [&](std::string name, Shape shape, WeightKind kind, int64_t fan_in = 0) {
    add_weight(w, std::move(name), std::move(shape), kind, fan_in);
  };
  auto affine = [&](const std::string& name, Shape shape, int64_t fan_in, bool bias) {
    add_affine(w, name, std::move(shape), fan_in, bias);
  };
  auto norm = [&](const std::string& name, int64_t n) { add_norm(w, name, n); };

  // Front-end buffers: the engine computes them when absent.
  w.push_back({"preprocessor.featurizer.window", {pre.win_length()}, WeightKind::kWindow, 0, true, {}});
  w.push_back({"preprocessor.featurizer.fb", {1, pre.features, pre.n_bins()}, WeightKind::kFilterbank, 0, true, {}});

  // dw_striding subsampling: conv.0 (1 -> C, 3x3, stride 2), then per further stage a depthwise 3x3 stride-2 conv
  // and a pointwise 1x1 conv (indices 2,3; 5,6; ...; the ReLUs take 1, 4, 7, ...). Always with biases.
  affine("encoder.pre_encode.out", {d, c * e.subsampled_features()}, c * e.subsampled_features(), true);
  affine("encoder.pre_encode.conv.0", {c, 1, 3, 3}, 9, true);
  for (int s = 1; s < e.num_subsampling_stages(); ++s) {
    const int dw = 3 * s - 1, pw = 3 * s;
    affine(fmt::format("encoder.pre_encode.conv.{}", dw), {c, 1, 3, 3}, 9, true);
    affine(fmt::format("encoder.pre_encode.conv.{}", pw), {c, c, 1, 1}, c, true);
  }

  const bool b = e.use_bias;
  for (int i = 0; i < e.n_layers; ++i) {
    const std::string l = encoder_layer_prefix(i);
    norm(l + "norm_feed_forward1", d);
    affine(l + "feed_forward1.linear1", {ff, d}, d, b);
    affine(l + "feed_forward1.linear2", {d, ff}, ff, b);
    norm(l + "norm_conv", d);
    affine(l + "conv.pointwise_conv1", {2 * d, d, 1}, d, b);
    affine(l + "conv.depthwise_conv", {d, 1, k}, k, b);
    norm(l + "conv.batch_norm", d);
    add(l + "conv.batch_norm.running_mean", {d}, WeightKind::kRunningMean);
    add(l + "conv.batch_norm.running_var", {d}, WeightKind::kRunningVar);
    affine(l + "conv.pointwise_conv2", {d, d, 1}, d, b);
    norm(l + "norm_self_att", d);
    add(l + "self_attn.pos_bias_u", {heads, dk}, WeightKind::kPosBias, dk);
    add(l + "self_attn.pos_bias_v", {heads, dk}, WeightKind::kPosBias, dk);
    for (const char* m : {"linear_q", "linear_k", "linear_v", "linear_out"})
      affine(l + "self_attn." + m, {d, d}, d, b);
    affine(l + "self_attn.linear_pos", {d, d}, d, false);  // never a bias
    norm(l + "norm_feed_forward2", d);
    affine(l + "feed_forward2.linear1", {ff, d}, d, b);
    affine(l + "feed_forward2.linear2", {d, ff}, ff, b);
    norm(l + "norm_out", d);
  }
  return w;
}

std::vector<WeightSpec> expected_weights(const ModelConfig& config) {
  const int64_t vocab = config.decoder.vocab_size, p = config.decoder.pred_hidden;
  const int64_t j = config.joint.joint_hidden;
  std::vector<WeightSpec> w = encoder_weights(config.preprocessor, config.encoder);
  auto add = [&](std::string name, Shape shape, WeightKind kind, int64_t fan_in = 0) {
    add_weight(w, std::move(name), std::move(shape), kind, fan_in);
  };
  auto affine = [&](const std::string& name, Shape shape, int64_t fan_in, bool bias) {
    add_affine(w, name, std::move(shape), fan_in, bias);
  };

  // Prediction network: embedding with the blank (= vocab) as padding row, then LSTM layers (PyTorch initialises
  // all LSTM tensors with bound 1/sqrt(hidden)).
  add("decoder.prediction.embed.weight", {vocab + 1, p}, WeightKind::kEmbedding);
  for (int n = 0; n < config.decoder.pred_rnn_layers; ++n) {
    const std::string r = "decoder.prediction.dec_rnn.lstm.";
    add(fmt::format("{}weight_ih_l{}", r, n), {4 * p, p}, WeightKind::kWeight, p);
    add(fmt::format("{}weight_hh_l{}", r, n), {4 * p, p}, WeightKind::kWeight, p);
    add(fmt::format("{}bias_ih_l{}", r, n), {4 * p}, WeightKind::kBias, p);
    add(fmt::format("{}bias_hh_l{}", r, n), {4 * p}, WeightKind::kBias, p);
  }

  affine("joint.pred", {j, p}, p, true);
  const int64_t d = config.encoder.d_model;
  affine("joint.enc", {j, d}, d, true);
  affine("joint.joint_net.2", {config.joint.num_outputs(), j}, j, true);
  w[w.size() - 2].aliases = {"joint.joint_net.1.weight"};
  w[w.size() - 1].aliases = {"joint.joint_net.1.bias"};
  return w;
}

int64_t parameter_count(const ModelConfig& config) { return parameter_count(expected_weights(config)); }

int64_t parameter_count(const std::vector<WeightSpec>& specs) {
  int64_t n = 0;
  for (const WeightSpec& s : specs) {
    switch (s.kind) {
      case WeightKind::kRunningMean: case WeightKind::kRunningVar: case WeightKind::kFilterbank:
      case WeightKind::kWindow:
        break;
      default:
        n += shape_numel(s.shape);
    }
  }
  return n;
}

}  // namespace steno::asr
