#include "steno/asr/weight_names.h"

#include <gtest/gtest.h>

#include <set>

#include "test_util.h"

namespace steno::asr {
namespace {

using testing::nemo_tiny;

// The keys and shapes of tests/data/nemo-tiny/model.nemo's model_weights.ckpt in state-dict order, the two
// *.num_batches_tracked counters left out (generated with torch.load).
const std::vector<std::pair<std::string, Shape>> kNemoTinyCheckpoint = {
    {"preprocessor.featurizer.window", {400}},
    {"preprocessor.featurizer.fb", {1, 128, 257}},
    {"encoder.pre_encode.out.weight", {96, 1024}},
    {"encoder.pre_encode.out.bias", {96}},
    {"encoder.pre_encode.conv.0.weight", {64, 1, 3, 3}},
    {"encoder.pre_encode.conv.0.bias", {64}},
    {"encoder.pre_encode.conv.2.weight", {64, 1, 3, 3}},
    {"encoder.pre_encode.conv.2.bias", {64}},
    {"encoder.pre_encode.conv.3.weight", {64, 64, 1, 1}},
    {"encoder.pre_encode.conv.3.bias", {64}},
    {"encoder.pre_encode.conv.5.weight", {64, 1, 3, 3}},
    {"encoder.pre_encode.conv.5.bias", {64}},
    {"encoder.pre_encode.conv.6.weight", {64, 64, 1, 1}},
    {"encoder.pre_encode.conv.6.bias", {64}},
    {"encoder.layers.0.norm_feed_forward1.weight", {96}},
    {"encoder.layers.0.norm_feed_forward1.bias", {96}},
    {"encoder.layers.0.feed_forward1.linear1.weight", {384, 96}},
    {"encoder.layers.0.feed_forward1.linear2.weight", {96, 384}},
    {"encoder.layers.0.norm_conv.weight", {96}},
    {"encoder.layers.0.norm_conv.bias", {96}},
    {"encoder.layers.0.conv.pointwise_conv1.weight", {192, 96, 1}},
    {"encoder.layers.0.conv.depthwise_conv.weight", {96, 1, 9}},
    {"encoder.layers.0.conv.batch_norm.weight", {96}},
    {"encoder.layers.0.conv.batch_norm.bias", {96}},
    {"encoder.layers.0.conv.batch_norm.running_mean", {96}},
    {"encoder.layers.0.conv.batch_norm.running_var", {96}},
    {"encoder.layers.0.conv.pointwise_conv2.weight", {96, 96, 1}},
    {"encoder.layers.0.norm_self_att.weight", {96}},
    {"encoder.layers.0.norm_self_att.bias", {96}},
    {"encoder.layers.0.self_attn.pos_bias_u", {4, 24}},
    {"encoder.layers.0.self_attn.pos_bias_v", {4, 24}},
    {"encoder.layers.0.self_attn.linear_q.weight", {96, 96}},
    {"encoder.layers.0.self_attn.linear_k.weight", {96, 96}},
    {"encoder.layers.0.self_attn.linear_v.weight", {96, 96}},
    {"encoder.layers.0.self_attn.linear_out.weight", {96, 96}},
    {"encoder.layers.0.self_attn.linear_pos.weight", {96, 96}},
    {"encoder.layers.0.norm_feed_forward2.weight", {96}},
    {"encoder.layers.0.norm_feed_forward2.bias", {96}},
    {"encoder.layers.0.feed_forward2.linear1.weight", {384, 96}},
    {"encoder.layers.0.feed_forward2.linear2.weight", {96, 384}},
    {"encoder.layers.0.norm_out.weight", {96}},
    {"encoder.layers.0.norm_out.bias", {96}},
    {"encoder.layers.1.norm_feed_forward1.weight", {96}},
    {"encoder.layers.1.norm_feed_forward1.bias", {96}},
    {"encoder.layers.1.feed_forward1.linear1.weight", {384, 96}},
    {"encoder.layers.1.feed_forward1.linear2.weight", {96, 384}},
    {"encoder.layers.1.norm_conv.weight", {96}},
    {"encoder.layers.1.norm_conv.bias", {96}},
    {"encoder.layers.1.conv.pointwise_conv1.weight", {192, 96, 1}},
    {"encoder.layers.1.conv.depthwise_conv.weight", {96, 1, 9}},
    {"encoder.layers.1.conv.batch_norm.weight", {96}},
    {"encoder.layers.1.conv.batch_norm.bias", {96}},
    {"encoder.layers.1.conv.batch_norm.running_mean", {96}},
    {"encoder.layers.1.conv.batch_norm.running_var", {96}},
    {"encoder.layers.1.conv.pointwise_conv2.weight", {96, 96, 1}},
    {"encoder.layers.1.norm_self_att.weight", {96}},
    {"encoder.layers.1.norm_self_att.bias", {96}},
    {"encoder.layers.1.self_attn.pos_bias_u", {4, 24}},
    {"encoder.layers.1.self_attn.pos_bias_v", {4, 24}},
    {"encoder.layers.1.self_attn.linear_q.weight", {96, 96}},
    {"encoder.layers.1.self_attn.linear_k.weight", {96, 96}},
    {"encoder.layers.1.self_attn.linear_v.weight", {96, 96}},
    {"encoder.layers.1.self_attn.linear_out.weight", {96, 96}},
    {"encoder.layers.1.self_attn.linear_pos.weight", {96, 96}},
    {"encoder.layers.1.norm_feed_forward2.weight", {96}},
    {"encoder.layers.1.norm_feed_forward2.bias", {96}},
    {"encoder.layers.1.feed_forward2.linear1.weight", {384, 96}},
    {"encoder.layers.1.feed_forward2.linear2.weight", {96, 384}},
    {"encoder.layers.1.norm_out.weight", {96}},
    {"encoder.layers.1.norm_out.bias", {96}},
    {"decoder.prediction.embed.weight", {129, 64}},
    {"decoder.prediction.dec_rnn.lstm.weight_ih_l0", {256, 64}},
    {"decoder.prediction.dec_rnn.lstm.weight_hh_l0", {256, 64}},
    {"decoder.prediction.dec_rnn.lstm.bias_ih_l0", {256}},
    {"decoder.prediction.dec_rnn.lstm.bias_hh_l0", {256}},
    {"decoder.prediction.dec_rnn.lstm.weight_ih_l1", {256, 64}},
    {"decoder.prediction.dec_rnn.lstm.weight_hh_l1", {256, 64}},
    {"decoder.prediction.dec_rnn.lstm.bias_ih_l1", {256}},
    {"decoder.prediction.dec_rnn.lstm.bias_hh_l1", {256}},
    {"joint.pred.weight", {64, 64}},
    {"joint.pred.bias", {64}},
    {"joint.enc.weight", {64, 96}},
    {"joint.enc.bias", {64}},
    {"joint.joint_net.2.weight", {134, 64}},
    {"joint.joint_net.2.bias", {134}},
};

TEST(ExpectedWeights, NemoTinyMatchesTheRealCheckpoint) {
  const std::vector<WeightSpec> specs = expected_weights(nemo_tiny());
  ASSERT_EQ(kNemoTinyCheckpoint.size(), 85u);
  ASSERT_EQ(specs.size(), kNemoTinyCheckpoint.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(specs[i].name, kNemoTinyCheckpoint[i].first) << "at " << i;
    EXPECT_EQ(specs[i].shape, kNemoTinyCheckpoint[i].second) << specs[i].name;
  }
  // Only the front-end buffers are optional; only the joint output layer has an alias.
  for (const WeightSpec& s : specs) {
    EXPECT_EQ(s.optional, s.name.rfind("preprocessor.", 0) == 0) << s.name;
    if (s.name.rfind("joint.joint_net.2.", 0) == 0) {
      ASSERT_EQ(s.aliases.size(), 1u);
      EXPECT_EQ(s.aliases[0], "joint.joint_net.1." + s.name.substr(18));
    } else {
      EXPECT_TRUE(s.aliases.empty()) << s.name;
    }
  }
  // README: 649,318 parameters.
  EXPECT_EQ(parameter_count(nemo_tiny()), 649318);
}

TEST(ExpectedWeights, KindsAndFanIn) {
  std::map<std::string, WeightSpec> by_name;
  for (const WeightSpec& s : expected_weights(nemo_tiny())) by_name[s.name] = s;
  auto kind = [&](const std::string& n) { return by_name.at(n).kind; };
  auto fan_in = [&](const std::string& n) { return by_name.at(n).fan_in; };
  EXPECT_EQ(kind("encoder.layers.0.norm_out.weight"), WeightKind::kNormWeight);
  EXPECT_EQ(kind("encoder.layers.0.norm_out.bias"), WeightKind::kNormBias);
  EXPECT_EQ(kind("encoder.layers.1.conv.batch_norm.weight"), WeightKind::kNormWeight);
  EXPECT_EQ(kind("encoder.layers.1.conv.batch_norm.running_mean"), WeightKind::kRunningMean);
  EXPECT_EQ(kind("encoder.layers.1.conv.batch_norm.running_var"), WeightKind::kRunningVar);
  EXPECT_EQ(kind("decoder.prediction.embed.weight"), WeightKind::kEmbedding);
  EXPECT_EQ(kind("encoder.layers.0.self_attn.pos_bias_u"), WeightKind::kPosBias);
  EXPECT_EQ(kind("preprocessor.featurizer.fb"), WeightKind::kFilterbank);
  EXPECT_EQ(kind("preprocessor.featurizer.window"), WeightKind::kWindow);
  EXPECT_EQ(kind("joint.enc.bias"), WeightKind::kBias);
  EXPECT_EQ(fan_in("encoder.pre_encode.conv.0.weight"), 9);
  EXPECT_EQ(fan_in("encoder.pre_encode.conv.2.weight"), 9);  // depthwise: 1 input channel per group
  EXPECT_EQ(fan_in("encoder.pre_encode.conv.3.weight"), 64);
  EXPECT_EQ(fan_in("encoder.pre_encode.out.weight"), 1024);
  EXPECT_EQ(fan_in("encoder.layers.0.feed_forward1.linear2.weight"), 384);
  EXPECT_EQ(fan_in("encoder.layers.0.conv.depthwise_conv.weight"), 9);
  EXPECT_EQ(fan_in("decoder.prediction.dec_rnn.lstm.bias_hh_l1"), 64);
  EXPECT_EQ(fan_in("joint.joint_net.2.bias"), 64);
}

TEST(ExpectedWeights, UseBiasAddsTheConformerBiases) {
  ModelConfig c = nemo_tiny();
  c.encoder.use_bias = true;
  std::map<std::string, Shape> with;
  for (const WeightSpec& s : expected_weights(c)) with[s.name] = s.shape;
  EXPECT_EQ(with.size(), 85u + 2 * 11);  // per layer: ff1 x2, ff2 x2, q k v out, pw1 dw pw2
  const std::string l = "encoder.layers.1.";
  EXPECT_EQ(with.at(l + "feed_forward1.linear1.bias"), Shape({384}));
  EXPECT_EQ(with.at(l + "feed_forward2.linear2.bias"), Shape({96}));
  EXPECT_EQ(with.at(l + "self_attn.linear_out.bias"), Shape({96}));
  EXPECT_EQ(with.at(l + "conv.pointwise_conv1.bias"), Shape({192}));
  EXPECT_EQ(with.at(l + "conv.depthwise_conv.bias"), Shape({96}));
  EXPECT_EQ(with.at(l + "conv.pointwise_conv2.bias"), Shape({96}));
  EXPECT_EQ(with.count(l + "self_attn.linear_pos.bias"), 0u);  // never
}

TEST(ExpectedWeights, SubsamplingStagesAndFeatures) {
  ModelConfig c = nemo_tiny();
  c.encoder.subsampling_factor = 4;
  std::set<std::string> names;
  std::map<std::string, Shape> shapes;
  for (const WeightSpec& s : expected_weights(c)) {
    names.insert(s.name);
    shapes[s.name] = s.shape;
  }
  EXPECT_TRUE(names.count("encoder.pre_encode.conv.3.weight"));
  EXPECT_FALSE(names.count("encoder.pre_encode.conv.5.weight"));
  EXPECT_EQ(shapes["encoder.pre_encode.out.weight"], Shape({96, 64 * 32}));  // 128 -> 64 -> 32
  // 80 mels, factor 8: 80 -> 40 -> 20 -> 10; odd sizes round up: 81 -> 41 -> 21 -> 11.
  c.encoder.subsampling_factor = 8;
  c.preprocessor.features = c.encoder.feat_in = 80;
  EXPECT_EQ(c.encoder.subsampled_features(), 10);
  c.preprocessor.features = c.encoder.feat_in = 81;
  EXPECT_EQ(c.encoder.subsampled_features(), 11);
  c.encoder.subsampling_factor = 16;
  EXPECT_EQ(c.encoder.subsampled_features(), 6);
  names.clear();
  for (const WeightSpec& s : expected_weights(c)) names.insert(s.name);
  EXPECT_TRUE(names.count("encoder.pre_encode.conv.9.weight"));
  EXPECT_FALSE(names.count("encoder.pre_encode.conv.10.weight"));
}

TEST(ExpectedWeights, OneLstmLayer) {
  ModelConfig c = nemo_tiny();
  c.decoder.pred_rnn_layers = 1;
  int lstm = 0;
  for (const WeightSpec& s : expected_weights(c)) lstm += s.name.find(".lstm.") != std::string::npos;
  EXPECT_EQ(lstm, 4);
  EXPECT_EQ(encoder_layer_prefix(3), "encoder.layers.3.");
}

}  // namespace
}  // namespace steno::asr
