// The encoder of small batches from CUDA graphs (src/asr/cuda/encoder_graphs.h) on the bundled model: each run
// equals the eager encoder over the same features padded to the bucket, bit for bit (the same kernels on the same
// data), whether it ran eagerly (a bucket's first batch), captured or replayed with other clip lengths; buckets are
// bounded; what the options leave out is left to the caller.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>

#include "device_values.h"
#include "encoder_graphs.h"
#include "steno/asr/model.h"
#include "steno/core/cuda.h"
#include "steno/ops/copy.h"

namespace steno::asr {
namespace {

using testing::download;

const std::string kModel = std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en";

// Random features [lengths.size(), frames, feat_in] on the host, zero past each length.
Tensor random_features(const std::vector<int64_t>& lengths, int64_t frames, int64_t feat_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  Tensor t = Tensor::empty({static_cast<int64_t>(lengths.size()), frames, feat_in});
  float* p = t.data<float>();
  for (size_t b = 0; b < lengths.size(); ++b)
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t c = 0; c < feat_in; ++c) *p++ = f < lengths[b] ? normal(rng) : 0.0f;
  return t;
}

// The bundled model on cuda:0 in the test's dtype, and a context there.
class EncoderGraphsTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    ModelOverrides o;
    o.device = Device::cuda(0);
    o.dtype = GetParam();
    model_ = AsrModel::load(kModel, o);
    ctx_.emplace(ops::Context::cuda(0));
  }
  const ConformerEncoder& encoder() const { return model_->encoder(); }
  int64_t feat_in() const { return encoder().config().feat_in; }

  std::shared_ptr<const AsrModel> model_;
  std::optional<ops::Context> ctx_;
};

TEST_P(EncoderGraphsTest, EveryRunEqualsTheEagerEncoderOnTheBucketsShape) {
  const ConformerEncoder& encoder = this->encoder();
  const int64_t feat_in = this->feat_in();
  ops::Context& ctx = *ctx_;
  EncoderGraphOptions options;
  options.frame_step = 128;
  EncoderGraphs graphs(options);
  // One bucket (2 clips, 384 frames): run eagerly, then captured, then replayed twice with other lengths.
  const std::vector<std::vector<int64_t>> batches = {{300, 250}, {370, 200}, {310, 384}, {384, 384}};
  uint32_t seed = 1;
  for (const auto& lengths : batches) {
    SCOPED_TRACE(::testing::Message() << lengths[0] << ", " << lengths[1]);
    const int64_t frames = std::max(lengths[0], lengths[1]);
    const Tensor host = random_features(lengths, frames, feat_in, seed++);
    const Tensor features = ops::to_context(ctx, host, encoder.dtype());
    const std::optional<EncoderOutput> got = graphs.run(ctx, encoder, features, lengths);
    ASSERT_TRUE(got.has_value());
    // The eager encoder over the same features padded to 384 frames.
    Tensor padded_host = Tensor::empty({2, 384, feat_in});
    std::memset(padded_host.raw(), 0, padded_host.numel() * sizeof(float));
    for (int64_t b = 0; b < 2; ++b)
      std::memcpy(padded_host.data<float>() + b * 384 * feat_in, host.data<float>() + b * frames * feat_in,
                  frames * feat_in * sizeof(float));
    const EncoderOutput want = encoder.forward(ctx, ops::to_context(ctx, padded_host, encoder.dtype()), lengths);
    EXPECT_EQ(got->lengths, want.lengths);
    ASSERT_EQ(got->encoded.shape(), want.encoded.shape());
    EXPECT_TRUE(download(ctx, got->encoded) == download(ctx, want.encoded));
  }
  EXPECT_EQ(graphs.captures(), 1);
  EXPECT_EQ(graphs.replays(), 3);
  EXPECT_EQ(graphs.num_graphs(), 1u);
}

TEST_P(EncoderGraphsTest, BucketsAreBoundedAndWhatTheOptionsLeaveOutIsLeftToTheCaller) {
  const ConformerEncoder& encoder = this->encoder();
  const int64_t feat_in = this->feat_in();
  ops::Context& ctx = *ctx_;
  EncoderGraphOptions options;
  options.max_buckets = 2;
  options.max_batch = 2;
  options.max_frames = 1000;
  EncoderGraphs graphs(options);
  auto run = [&](int64_t batch, int64_t frames) {
    const std::vector<int64_t> lengths(static_cast<size_t>(batch), frames);
    const Tensor f = ops::to_context(ctx, random_features(lengths, frames, feat_in, 5), encoder.dtype());
    return graphs.run(ctx, encoder, f, lengths);
  };
  // Three buckets, each run twice (eager, then captured): at most two are kept.
  for (int64_t frames : {100, 200, 300})
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(run(1, frames).has_value());
  EXPECT_EQ(graphs.captures(), 3);
  EXPECT_LE(graphs.num_graphs(), 2u);
  EXPECT_FALSE(run(3, 100).has_value());   // past max_batch
  EXPECT_FALSE(run(1, 1001).has_value());  // past max_frames
  EncoderGraphOptions off = options;
  off.enabled = false;
  EncoderGraphs disabled(off);
  const std::vector<int64_t> one = {100};
  EXPECT_FALSE(disabled.run(ctx, encoder, ops::to_context(ctx, random_features(one, 100, feat_in, 5), encoder.dtype()),
                            one).has_value());
}

// An encoder without the subsampling's masks (a NeMo 2.4 front end) never runs from a bucket: the bucket's padding
// would reach its last frames and change the answer of the batch it pads (the 2.4 golden model's texts did).
TEST(EncoderGraphsUnmasked, A24EncoderIsLeftToTheCaller) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  ModelOverrides o;
  o.device = Device::cuda(0);
  o.dtype = DType::kF32;
  auto model = AsrModel::load(std::string(STENO_TEST_DATA) + "/golden/mel128_local_attn", o);
  const ConformerEncoder& encoder = model->encoder();
  ASSERT_FALSE(encoder.masks_padding());
  ops::Context ctx = ops::Context::cuda(0);
  EncoderGraphs graphs{EncoderGraphOptions{}};
  const std::vector<int64_t> lengths = {100};
  const Tensor f = ops::to_context(ctx, random_features(lengths, 100, encoder.config().feat_in, 5), DType::kF32);
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(graphs.run(ctx, encoder, f, lengths).has_value());
  EXPECT_EQ(graphs.captures(), 0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, EncoderGraphsTest, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace steno::asr
