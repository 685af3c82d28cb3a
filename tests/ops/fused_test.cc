// The fused ops against their definitions written out directly (double precision), on the CPU.
#include "steno/ops/fused.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ops_test_util.h"
#include "steno/core/error.h"

namespace steno::ops {
namespace {

using testing::all_close;
using testing::nan_tensor;
using testing::random_tensor;

// y = layer_norm(x + alpha * h) row by row, in double.
std::vector<float> add_norm_definition(const std::vector<float>& x, const std::vector<float>& h, float alpha,
                                       const std::vector<float>& gamma, const std::vector<float>& beta, int64_t d,
                                       std::vector<float>* sum) {
  const int64_t rows = static_cast<int64_t>(x.size()) / d;
  std::vector<float> y(x.size());
  sum->resize(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) {
      (*sum)[r * d + i] = x[r * d + i] + alpha * h[r * d + i];
      mean += (*sum)[r * d + i];
    }
    mean /= d;
    for (int64_t i = 0; i < d; ++i) var += ((*sum)[r * d + i] - mean) * ((*sum)[r * d + i] - mean);
    var /= d;
    for (int64_t i = 0; i < d; ++i)
      y[r * d + i] = static_cast<float>(((*sum)[r * d + i] - mean) / std::sqrt(var + 1e-5) * gamma[i] + beta[i]);
  }
  return y;
}

TEST(AddLayerNorm, UpdatesTheResidualAndNormalisesIt) {
  Context ctx = Context::cpu(2);
  for (const int64_t d : {int64_t{7}, int64_t{64}, int64_t{1024}}) {
    SCOPED_TRACE(d);
    Tensor x = random_tensor({3, 5, d}, 1, -2.0f, 3.0f);
    const Tensor h = random_tensor({3, 5, d}, 2), gamma = random_tensor({d}, 3, 0.5f, 1.5f);
    const Tensor beta = random_tensor({d}, 4);
    std::vector<float> sum;
    const auto want = add_norm_definition(x.to_vector(), h.to_vector(), 0.5f, gamma.to_vector(), beta.to_vector(),
                                          d, &sum);
    Tensor y = nan_tensor({3, 5, d});
    add_layer_norm(ctx, x, h, 0.5f, gamma, beta, 1e-5f, y);
    EXPECT_TRUE(all_close(x, sum, 1e-6f, 1e-6f));
    EXPECT_TRUE(all_close(y, want, 2e-5f, 2e-5f));
  }
}

TEST(AddLayerNorm, InPlaceKeepsOnlyTheNorm) {
  Context ctx = Context::cpu(1);
  Tensor x = random_tensor({4, 96}, 5);
  const Tensor h = random_tensor({4, 96}, 6), gamma = random_tensor({96}, 7), beta = random_tensor({96}, 8);
  std::vector<float> sum;
  const auto want = add_norm_definition(x.to_vector(), h.to_vector(), 1.0f, gamma.to_vector(), beta.to_vector(), 96,
                                        &sum);
  add_layer_norm(ctx, x, h, 1.0f, gamma, beta, 1e-5f, x);
  EXPECT_TRUE(all_close(x, want, 2e-5f, 2e-5f));
}

TEST(AddLayerNorm, RefusesMismatchedShapesAndAliasedResidual) {
  Context ctx = Context::cpu(1);
  Tensor x = random_tensor({2, 8}, 9), y = nan_tensor({2, 8});
  const Tensor gamma = random_tensor({8}, 10), beta = random_tensor({8}, 11);
  EXPECT_THROW(add_layer_norm(ctx, x, random_tensor({2, 9}, 12), 1.0f, gamma, beta, 1e-5f, y), Error);
  EXPECT_THROW(add_layer_norm(ctx, x, random_tensor({2, 8}, 12), 1.0f, random_tensor({9}, 13), beta, 1e-5f, y),
               Error);
  EXPECT_THROW(add_layer_norm(ctx, x, x, 1.0f, gamma, beta, 1e-5f, y), Error);
  EXPECT_THROW(add_layer_norm(ctx, x, y, 1.0f, gamma, beta, 1e-5f, y), Error);
}

// silu(depthwise_conv1d(mask(glu(x)))), in double.
std::vector<float> gated_definition(const Tensor& x, const Tensor& w, const Tensor& bias, int pad_left,
                                    const std::vector<int64_t>& lengths) {
  const int64_t B = x.dim(0), T = x.dim(1), C = x.dim(2) / 2, K = w.dim(1);
  const auto xv = x.to_vector(), wv = w.to_vector();
  const auto bv = bias.defined() ? bias.to_vector() : std::vector<float>(C, 0.0f);
  auto gated = [&](int64_t b, int64_t t, int64_t c) {
    if (t < 0 || t >= lengths[b]) return 0.0;
    const double a = xv[(b * T + t) * 2 * C + c], g = xv[(b * T + t) * 2 * C + C + c];
    return a / (1.0 + std::exp(-g));
  };
  std::vector<float> y(B * T * C);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) {
        double s = bv[c];
        for (int64_t k = 0; k < K; ++k) s += wv[c * K + k] * gated(b, t + k - pad_left, c);
        y[(b * T + t) * C + c] = static_cast<float>(s / (1.0 + std::exp(-s)));
      }
  return y;
}

TEST(GatedDepthwiseSilu, EqualsItsDefinitionWithPaddingMasked) {
  Context ctx = Context::cpu(2);
  const std::vector<int64_t> lengths = {13, 6, 0};
  const Tensor x = random_tensor({3, 13, 2 * 37}, 20, -2.0f, 2.0f);
  for (const auto& [taps, pad] : {std::pair{9, 4}, {3, 2}, {1, 0}}) {
    SCOPED_TRACE(taps);
    const Tensor w = random_tensor({37, taps}, 21), bias = random_tensor({37}, 22);
    Tensor y = nan_tensor({3, 13, 37});
    gated_depthwise_silu(ctx, x, w, bias, pad, lengths, y);
    EXPECT_TRUE(all_close(y, gated_definition(x, w, bias, pad, lengths), 1e-5f, 1e-5f));
  }
  Tensor y = nan_tensor({3, 13, 37});  // no bias
  const Tensor w = random_tensor({37, 9}, 23);
  gated_depthwise_silu(ctx, x, w, Tensor(), 4, lengths, y);
  EXPECT_TRUE(all_close(y, gated_definition(x, w, Tensor(), 4, lengths), 1e-5f, 1e-5f));
}

TEST(GatedDepthwiseSilu, RefusesBadShapesPaddingAndLengths) {
  Context ctx = Context::cpu(1);
  const Tensor x = random_tensor({2, 5, 8}, 30), w = random_tensor({4, 3}, 31);
  Tensor y = nan_tensor({2, 5, 4});
  EXPECT_THROW(gated_depthwise_silu(ctx, random_tensor({2, 5, 7}, 32), w, Tensor(), 1, {5, 5}, y), Error);
  EXPECT_THROW(gated_depthwise_silu(ctx, x, random_tensor({5, 3}, 33), Tensor(), 1, {5, 5}, y), Error);
  EXPECT_THROW(gated_depthwise_silu(ctx, x, w, Tensor(), 3, {5, 5}, y), Error);
  EXPECT_THROW(gated_depthwise_silu(ctx, x, w, Tensor(), 1, {6, 5}, y), Error);
  EXPECT_THROW(gated_depthwise_silu(ctx, x, w, Tensor(), 1, {5}, y), Error);
  Tensor wrong = nan_tensor({2, 5, 8});
  EXPECT_THROW(gated_depthwise_silu(ctx, x, w, Tensor(), 1, {5, 5}, wrong), Error);
}

}  // namespace
}  // namespace steno::ops
