#include "steno/ops/elementwise.h"

#include <gtest/gtest.h>

#include "ops_test_util.h"

namespace steno::ops {
namespace {

TEST(Elementwise, AddWithAlpha) {
  Context ctx = Context::cpu(2);
  Tensor a = Tensor::from_vector({1, 2, 3, 4}, {2, 2});
  const Tensor b = Tensor::from_vector({10, 20, 30, 40}, {2, 2});
  Tensor y = testing::nan_tensor({2, 2});
  add(ctx, a, b, 0.5f, y);
  EXPECT_EQ(y.to_vector(), (std::vector<float>{6, 12, 18, 24}));
  add(ctx, a, b, 1.0f, a);  // y aliases a
  EXPECT_EQ(a.to_vector(), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_THROW(add(ctx, a, b.reshape({4}), 1.0f, y), Error);
}

TEST(Elementwise, AddLargeSplitsAcrossThreads) {
  Context ctx = Context::cpu(2);
  const int64_t n = 300007;  // above the parallel grain
  const Tensor a = testing::random_tensor({n}, 1), b = testing::random_tensor({n}, 2);
  Tensor y = testing::nan_tensor({n});
  add(ctx, a, b, -0.5f, y);
  const auto av = a.to_vector(), bv = b.to_vector(), yv = y.to_vector();
  for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(yv[i], av[i] - 0.5f * bv[i]) << i;
}

TEST(Elementwise, Scale) {
  Context ctx = Context::cpu(1);
  Tensor x = Tensor::from_vector({1, -2, 3}, {3});
  scale(ctx, x, 32.0f);
  EXPECT_EQ(x.to_vector(), (std::vector<float>{32, -64, 96}));
}

TEST(Elementwise, ZeroPaddedFramesChannelLast) {
  Context ctx = Context::cpu(2);
  // x [B=2, T=3, C=2], lengths {3, 1}.
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 3, 2});
  zero_padded_frames(ctx, x, 1, {3, 1});
  EXPECT_EQ(x.to_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0}));
}

TEST(Elementwise, ZeroPaddedFramesTimeInside) {
  Context ctx = Context::cpu(2);
  // x [B=2, C=2, T=3, F=1] with time_axis 2 (also given as -2), lengths {2, 0}.
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 2, 3, 1});
  zero_padded_frames(ctx, x, -2, {2, 0});
  EXPECT_EQ(x.to_vector(), (std::vector<float>{1, 2, 0, 4, 5, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(Elementwise, ZeroPaddedFramesErrors) {
  Context ctx = Context::cpu(1);
  Tensor x = Tensor::zeros({2, 3, 2});
  EXPECT_THROW(zero_padded_frames(ctx, x, 1, {3}), Error);      // one length for a batch of 2
  EXPECT_THROW(zero_padded_frames(ctx, x, 1, {3, 4}), Error);   // length > T
  EXPECT_THROW(zero_padded_frames(ctx, x, 1, {3, -1}), Error);  // negative
  EXPECT_THROW(zero_padded_frames(ctx, x, 0, {3, 3}), Error);   // the batch axis
  EXPECT_THROW(zero_padded_frames(ctx, x, 3, {3, 3}), Error);   // out of range
}

}  // namespace
}  // namespace steno::ops
