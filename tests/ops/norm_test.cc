#include "steno/ops/norm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ops_test_util.h"

namespace steno::ops {
namespace {

using testing::all_close;
using testing::nan_tensor;
using testing::pat_tensor;

// Expected values: tests/ops/reference_values.py,
//   F.layer_norm(pat(21,27).reshape(3,7) + 3, (7,), pat(7,28), pat(7,29), 1e-5)
//   F.batch_norm(pat(24,30).reshape(-1,4), pat(4,31), pat(4,32).abs()+0.5, pat(4,33), pat(4,34), False, 0, 1e-5)
// kLayerNorm: [3, 7]
const std::vector<float> kLayerNorm = {
    0.69878763f, 0.707410157f, 0.859427452f, -0.866129756f, -1.16222095f, -1.31491745f, -0.300611019f, 0.783767998f,
    0.464661419f, 0.321462482f, 0.354171157f, 0.562787533f, 0.947311521f, 1.53994048f, 0.843748093f, 0.312503755f,
    0.0312543809f, 0.0f, 0.218740612f, 0.687476218f, -2.43746614f};
// kBatchNorm: [2, 3, 4]
const std::vector<float> kBatchNorm = {
    -1.68173563f, 0.635491312f, 2.07220912f, 1.22656083f, 0.00970898569f, -0.336770713f, 1.56703091f, 1.03906167f,
    -1.07281554f, -1.3090328f, 1.06185281f, 1.33202899f, 0.618629038f, 0.210126668f, 1.85119367f, 1.14452994f,
    -0.4638955f, -0.762135386f, 1.34601545f, 0.957030892f, -1.5464201f, -1.73439741f, 2.13535643f, 1.24999821f};

TEST(LayerNorm, MatchesTorch) {
  Context ctx = Context::cpu(2);
  std::vector<float> xv = testing::pat(21, 27);
  for (float& v : xv) v += 3.0f;
  const Tensor x = Tensor::from_vector(xv, {3, 7});
  Tensor y = nan_tensor({3, 7});
  layer_norm(ctx, x, pat_tensor({7}, 28), pat_tensor({7}, 29), 1e-5f, y);
  EXPECT_TRUE(all_close(y, kLayerNorm, 2e-6f, 1e-5f));
  // In place.
  Tensor z = x.clone();
  layer_norm(ctx, z, pat_tensor({7}, 28), pat_tensor({7}, 29), 1e-5f, z);
  EXPECT_TRUE(all_close(z, kLayerNorm, 2e-6f, 1e-5f));
}

TEST(LayerNorm, HandComputedAndLargeOffset) {
  Context ctx = Context::cpu(1);
  // Row [1, 2, 3, 4] + 1e4: mean 2.5 + 1e4, biased variance 1.25 -> (x - mean) / sqrt(1.25); the large offset
  // checks the two-pass statistics (a one-pass E[x²] - E[x]² would lose every digit here).
  const Tensor x = Tensor::from_vector({10001, 10002, 10003, 10004}, {1, 4});
  const Tensor gamma = Tensor::from_vector({1, 1, 2, 2}, {4}), beta = Tensor::from_vector({0, 0, 0, 1}, {4});
  Tensor y = nan_tensor({1, 4});
  layer_norm(ctx, x, gamma, beta, 0.0f, y);
  const float s = 1.0f / std::sqrt(1.25f);
  EXPECT_TRUE(all_close(y, {-1.5f * s, -0.5f * s, 2 * 0.5f * s, 2 * 1.5f * s + 1}, 1e-5f, 1e-5f));
}

TEST(LayerNorm, ManyRowsInParallel) {
  Context ctx = Context::cpu(2);
  const int64_t rows = 300, d = 1024;
  const Tensor x = testing::random_tensor({rows, d}, 1, -3.0f, 5.0f);
  const Tensor gamma = testing::random_tensor({d}, 2), beta = testing::random_tensor({d}, 3);
  Tensor y = nan_tensor({rows, d});
  layer_norm(ctx, x, gamma, beta, 1e-5f, y);
  const auto xv = x.to_vector(), gv = gamma.to_vector(), bv = beta.to_vector();
  std::vector<float> want(rows * d);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += xv[r * d + i];
    mean /= d;
    for (int64_t i = 0; i < d; ++i) var += (xv[r * d + i] - mean) * (xv[r * d + i] - mean);
    var /= d;
    for (int64_t i = 0; i < d; ++i)
      want[r * d + i] = static_cast<float>((xv[r * d + i] - mean) / std::sqrt(var + 1e-5) * gv[i] + bv[i]);
  }
  EXPECT_TRUE(all_close(y, want, 1e-5f, 1e-5f));
}

TEST(BatchNorm, MatchesTorch) {
  Context ctx = Context::cpu(2);
  std::vector<float> var = testing::pat(4, 32);
  for (float& v : var) v = std::fabs(v) + 0.5f;
  Tensor y = nan_tensor({2, 3, 4});
  batch_norm(ctx, pat_tensor({2, 3, 4}, 30), pat_tensor({4}, 31), Tensor::from_vector(var, {4}), pat_tensor({4}, 33),
             pat_tensor({4}, 34), 1e-5f, y);
  EXPECT_TRUE(all_close(y, kBatchNorm, 2e-6f, 1e-5f));
}

TEST(FoldBatchNorm, HandComputed) {
  // s = gamma / sqrt(var + eps) = [2/2, 3/1]; w rows scaled by s; bias = (0 - mean) * s + beta.
  Tensor w = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor bias;  // undefined: created as zeros
  fold_batch_norm(w, bias, Tensor::from_vector({1, -1}, {2}), Tensor::from_vector({3, 0}, {2}),
                  Tensor::from_vector({2, 3}, {2}), Tensor::from_vector({0.5f, -1}, {2}), 1.0f);
  EXPECT_EQ(w.to_vector(), (std::vector<float>{1, 2, 3, 12, 15, 18}));
  ASSERT_TRUE(bias.defined());
  EXPECT_EQ(bias.shape(), Shape({2}));
  EXPECT_EQ(bias.to_vector(), (std::vector<float>{-0.5f, 2}));
  // With an existing bias: (b - mean) * s + beta.
  Tensor w2 = Tensor::from_vector({1, 1}, {2, 1, 1});
  Tensor b2 = Tensor::from_vector({3, 4}, {2});
  fold_batch_norm(w2, b2, Tensor::from_vector({1, -1}, {2}), Tensor::from_vector({3, 0}, {2}),
                  Tensor::from_vector({2, 3}, {2}), Tensor::from_vector({0.5f, -1}, {2}), 1.0f);
  EXPECT_EQ(w2.to_vector(), (std::vector<float>{1, 3}));
  EXPECT_EQ(b2.to_vector(), (std::vector<float>{2.5f, 14}));
}

TEST(Norm, Errors) {
  Context ctx = Context::cpu(1);
  const Tensor x = pat_tensor({3, 7}, 1);
  Tensor y = Tensor::zeros({3, 7});
  EXPECT_THROW(layer_norm(ctx, x, pat_tensor({6}, 2), pat_tensor({7}, 3), 1e-5f, y), Error);
  EXPECT_THROW(layer_norm(ctx, x, pat_tensor({7}, 2), Tensor(), 1e-5f, y), Error);
  Tensor y2 = Tensor::zeros({7, 3});
  EXPECT_THROW(layer_norm(ctx, x, pat_tensor({7}, 2), pat_tensor({7}, 3), 1e-5f, y2), Error);
  const Tensor c7 = pat_tensor({7}, 2), c6 = pat_tensor({6}, 3);
  EXPECT_THROW(batch_norm(ctx, x, c7, c7, c6, c7, 1e-5f, y), Error);
  Tensor w = pat_tensor({2, 3}, 1), bias = pat_tensor({3}, 2);
  const Tensor c2 = pat_tensor({2}, 3);
  EXPECT_THROW(fold_batch_norm(w, bias, c2, c2, c2, c2, 1e-5f), Error);  // bias [3] for C = 2
  Tensor none;
  EXPECT_THROW(fold_batch_norm(w, none, c2, c2, c6, c2, 1e-5f), Error);
  // Weights on a device without a backend in this build.
  std::vector<float> mem(6);
  Tensor wc = Tensor::wrap(mem.data(), {2, 3}, DType::kF32, Device::cuda());
  try {
    fold_batch_norm(wc, none, c2, c2, c2, c2, 1e-5f);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
  }
}

}  // namespace
}  // namespace steno::ops
