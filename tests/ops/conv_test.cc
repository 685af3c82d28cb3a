#include "steno/ops/conv.h"

#include <gtest/gtest.h>

#include <span>

#include "ops_test_util.h"
#include "steno/ops/norm.h"

namespace steno::ops {
namespace {

using testing::all_close;
using testing::nan_tensor;
using testing::pat_tensor;
using testing::random_tensor;

// Expected values: tests/ops/reference_values.py (torch.nn.functional.conv2d / conv1d on pat() inputs; the
// snippet for each is on the line before it in that script).
// kConvGeneral: [2, 3, 3, 3]
const std::vector<float> kConvGeneral = {
    -0.19140625f, 0.51171875f, -3.5390625f, 1.6953125f, -1.8125f, 0.5078125f, 2.48046875f, 1.921875f, -2.14453125f,
    0.26953125f, -4.046875f, -2.55859375f, -3.953125f, -2.84765625f, 6.33984375f, -1.4609375f, -0.83203125f, 0.0f,
    -0.390625f, 1.32421875f, 4.5078125f, 1.2890625f, 2.68359375f, -4.8046875f, -1.3984375f, -3.42578125f, -1.5390625f,
    -1.0234375f, 1.34765625f, 0.01953125f, -1.1484375f, 0.69140625f, -1.47265625f, 2.45703125f, 1.0078125f,
    -0.015625f, 2.43359375f, 0.5625f, -3.5546875f, 0.5f, -3.4921875f, -0.390625f, -2.4921875f, -1.81640625f,
    -1.14453125f, -0.8359375f, -0.54296875f, 1.83984375f, 0.8671875f, 1.7734375f, -0.26953125f, -0.5546875f,
    -1.59765625f, -3.07421875f};
// kConvStridePad: [1, 2, 3, 3]
const std::vector<float> kConvStridePad = {
    -0.46875f, -0.6875f, -0.546875f, -1.0625f, 0.0703125f, 2.125f, -0.53515625f, -0.7734375f, -0.6484375f, 0.0390625f,
    0.6015625f, 1.625f, -0.50390625f, -1.84765625f, -2.21875f, 0.07421875f, 0.66796875f, 1.625f};
// kConvDepthwise: [1, 3, 3, 3]
const std::vector<float> kConvDepthwise = {
    1.1796875f, 1.3828125f, 0.8046875f, 2.02734375f, 1.04296875f, 0.08984375f, 0.890625f, -0.109375f, 0.265625f,
    -0.9140625f, -0.11328125f, 1.57421875f, 1.140625f, 2.4375f, 1.6796875f, 2.0625f, 0.5703125f, 0.16796875f,
    -0.9375f, -0.5859375f, 0.1640625f, 1.4375f, 2.1640625f, 1.28125f, 1.78125f, 0.9921875f, 0.7734375f};
// kConvDepthwisePad: [1, 2, 6, 6]
const std::vector<float> kConvDepthwisePad = {
    0.859375f, 1.859375f, 2.421875f, -0.21875f, -2.21875f, -0.875f, -0.265625f, -0.046875f, 0.828125f, -0.21875f,
    -0.625f, -0.0625f, 0.484375f, 1.359375f, 2.296875f, -0.609375f, -2.234375f, -0.75f, -0.546875f, -0.359375f,
    0.578125f, -0.40625f, -0.75f, -0.15625f, -0.359375f, -0.453125f, -0.078125f, -0.34375f, 0.03125f, 0.15625f,
    -0.171875f, -0.109375f, -0.046875f, 0.015625f, 0.078125f, 0.0f, 0.10546875f, 0.1171875f, 0.1484375f, -0.30078125f,
    -0.109375f, 0.0625f, -0.31640625f, -0.6171875f, -0.8046875f, -0.19140625f, 1.0625f, 0.546875f, -0.12890625f,
    -0.5703125f, -1.2265625f, 0.19921875f, 1.78515625f, 0.98828125f, 0.30078125f, 0.6328125f, -0.0234375f,
    -0.6796875f, -0.53515625f, 0.3203125f, -0.15234375f, -0.5078125f, -1.1953125f, -1.8828125f, -0.48828125f,
    1.0234375f, 0.66015625f, 1.3203125f, 0.8515625f, 0.3828125f, -0.0859375f, -0.19921875f};
// kConvPointwise: [1, 3, 2, 3]
const std::vector<float> kConvPointwise = {
    -2.79296875f, -1.55078125f, 0.97265625f, 0.61328125f, 0.25390625f, -0.10546875f, -0.15625f, -1.1171875f,
    -0.796875f, -0.796875f, -0.796875f, -0.796875f, -2.484375f, 0.91796875f, -0.96484375f, -0.60546875f, -0.24609375f,
    0.11328125f};
// kConvGrouped: [1, 6, 4, 4]
const std::vector<float> kConvGrouped = {
    0.37890625f, -1.19921875f, -1.2890625f, -1.859375f, -0.86328125f, -0.6796875f, -0.1796875f, -0.68359375f,
    -2.140625f, -1.5625f, -0.26171875f, 0.96484375f, -1.2890625f, -1.66015625f, -1.1171875f, -0.91796875f,
    -0.84765625f, -1.44921875f, -0.2109375f, -0.78125f, -1.84375f, -3.83203125f, -5.34375f, -2.2109375f, -4.0546875f,
    -1.0703125f, 3.18359375f, -0.53515625f, 2.859375f, 2.7890625f, -0.9453125f, -2.3125f, 3.69140625f, 0.86328125f,
    -1.21484375f, 0.13671875f, -1.86328125f, -0.2578125f, 3.42578125f, 1.38671875f, 4.12109375f, 2.14453125f,
    3.42578125f, -0.9140625f, -0.0390625f, -0.609375f, -1.4140625f, -0.0234375f, -0.25f, 1.1171875f, 4.8515625f,
    4.921875f, 1.52734375f, 5.24609375f, 0.9921875f, -1.9921875f, -0.1484375f, -3.28125f, -1.76953125f, 0.21875f,
    1.28125f, 1.8515625f, 0.61328125f, 1.21484375f, 0.64453125f, 0.4453125f, -0.09765625f, 0.2734375f, 2.52734375f,
    1.30078125f, 0.0f, -0.578125f, 0.87890625f, 1.3828125f, 0.8828125f, 0.69921875f, -0.296875f, 0.2734375f,
    0.36328125f, 1.94140625f, 1.05859375f, 1.0546875f, 0.23828125f, -0.2109375f, -0.63671875f, -2.64453125f,
    -1.6328125f, -0.4453125f, -0.81640625f, 3.484375f, 0.33203125f, 2.4609375f, 0.6875f, 3.33984375f, 0.11328125f,
    -1.9765625f};
// kDwConv1d: [2, 6, 3]
const std::vector<float> kDwConv1d = {
    1.15625f, 0.0703125f, 0.53515625f, 0.71875f, -0.1953125f, 2.8984375f, 0.7578125f, 0.25f, -0.734375f, 1.4375f,
    1.65625f, -1.484375f, 0.8359375f, 0.8203125f, 0.16796875f, 0.9140625f, 0.6796875f, 2.63671875f, 1.15625f, 1.375f,
    -0.5390625f, 1.2734375f, 0.234375f, 0.48046875f, 0.671875f, 0.0390625f, 2.7734375f, 0.7109375f, 0.484375f,
    -0.859375f, 1.390625f, 1.890625f, 0.79296875f, 0.90625f, 1.65625f, 2.67578125f};
// kDwConv1dLongKernel: [1, 5, 2]
const std::vector<float> kDwConv1dLongKernel = {
    3.1640625f, 0.05078125f, 0.2578125f, -1.24609375f, -1.3671875f, -1.26171875f, -1.7109375f, 0.00390625f,
    -0.7734375f, -0.01171875f};
// kDwConv1dCausal: [1, 4, 3]
const std::vector<float> kDwConv1dCausal = {
    0.421875f, 0.0f, -0.046875f, 0.421875f, 0.078125f, 0.484375f, -0.1875f, 0.046875f, -0.515625f, -0.515625f,
    -0.515625f, -0.671875f};

// Direct definition of conv2d (any groups) in double precision.
std::vector<float> naive_conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, int sh, int sw, int ph, int pw,
                                int groups) {
  const int64_t B = x.dim(0), Cin = x.dim(1), H = x.dim(2), W = x.dim(3);
  const int64_t Cout = w.dim(0), Cg = w.dim(1), KH = w.dim(2), KW = w.dim(3);
  const int64_t Ho = (H + 2 * ph - KH) / sh + 1, Wo = (W + 2 * pw - KW) / sw + 1, Og = Cout / groups;
  const auto xv = x.to_vector(), wv = w.to_vector();
  const auto bv = bias.defined() ? bias.to_vector() : std::vector<float>(Cout, 0.0f);
  std::vector<float> y(B * Cout * Ho * Wo);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t co = 0; co < Cout; ++co)
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          double s = bv[co];
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * sh - ph + kh, iw = ow * sw - pw + kw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t cin = (co / Og) * Cg + ci;
                s += double(xv[((b * Cin + cin) * H + ih) * W + iw]) * wv[((co * Cg + ci) * KH + kh) * KW + kw];
              }
          y[((b * Cout + co) * Ho + oh) * Wo + ow] = static_cast<float>(s);
        }
  return y;
}

class ConvTest : public ::testing::TestWithParam<int> {  // parameter: threads
 protected:
  Context ctx_ = Context::cpu(GetParam());
};

TEST_P(ConvTest, MatchesTorch) {
  Tensor y = nan_tensor({2, 3, 3, 3});
  conv2d(ctx_, pat_tensor({2, 2, 5, 6}, 4), pat_tensor({3, 2, 3, 3}, 5), pat_tensor({3}, 6), y, 2, 2, 1, 1, 1);
  EXPECT_TRUE(all_close(y, kConvGeneral));

  y = nan_tensor({1, 2, 3, 3});
  conv2d(ctx_, pat_tensor({1, 2, 4, 5}, 7), pat_tensor({2, 2, 2, 3}, 8), Tensor(), y, 1, 2, 0, 1, 1);
  EXPECT_TRUE(all_close(y, kConvStridePad));

  y = nan_tensor({1, 3, 3, 3});
  conv2d(ctx_, pat_tensor({1, 3, 5, 6}, 9), pat_tensor({3, 1, 3, 3}, 10), pat_tensor({3}, 11), y, 2, 2, 1, 1, 3);
  EXPECT_TRUE(all_close(y, kConvDepthwise));

  y = nan_tensor({1, 2, 6, 6});
  conv2d(ctx_, pat_tensor({1, 2, 4, 5}, 12), pat_tensor({2, 1, 3, 2}, 13), Tensor(), y, 1, 1, 2, 1, 2);
  EXPECT_TRUE(all_close(y, kConvDepthwisePad));

  y = nan_tensor({1, 3, 2, 3});
  conv2d(ctx_, pat_tensor({1, 4, 2, 3}, 14), pat_tensor({3, 4, 1, 1}, 15), pat_tensor({3}, 16), y, 1, 1, 0, 0, 1);
  EXPECT_TRUE(all_close(y, kConvPointwise));

  y = nan_tensor({1, 6, 4, 4});
  conv2d(ctx_, pat_tensor({1, 4, 4, 4}, 17), pat_tensor({6, 2, 3, 3}, 18), pat_tensor({6}, 19), y, 1, 1, 1, 1, 2);
  EXPECT_TRUE(all_close(y, kConvGrouped));
}

// The dw_striding subsampling at a small size, long enough rows for the vector loops and their tails.
TEST_P(ConvTest, SubsamplingChainMatchesDirectDefinition) {
  const Tensor x = random_tensor({2, 1, 37, 45}, 1);
  const Tensor w0 = random_tensor({8, 1, 3, 3}, 2), b0 = random_tensor({8}, 3);
  Tensor y0 = nan_tensor({2, 8, 19, 23});
  conv2d(ctx_, x, w0, b0, y0, 2, 2, 1, 1, 1);
  EXPECT_TRUE(all_close(y0, naive_conv2d(x, w0, b0, 2, 2, 1, 1, 1), 1e-5f, 1e-5f));

  const Tensor w1 = random_tensor({8, 1, 3, 3}, 4), b1 = random_tensor({8}, 5);
  Tensor y1 = nan_tensor({2, 8, 10, 12});
  conv2d(ctx_, y0, w1, b1, y1, 2, 2, 1, 1, 8);  // depthwise
  EXPECT_TRUE(all_close(y1, naive_conv2d(y0, w1, b1, 2, 2, 1, 1, 8), 1e-5f, 1e-5f));

  const Tensor w2 = random_tensor({8, 8, 1, 1}, 6), b2 = random_tensor({8}, 7);
  Tensor y2 = nan_tensor({2, 8, 10, 12});
  conv2d(ctx_, y1, w2, b2, y2, 1, 1, 0, 0, 1);  // pointwise
  EXPECT_TRUE(all_close(y2, naive_conv2d(y1, w2, b2, 1, 1, 0, 0, 1), 1e-5f, 1e-5f));

  // Depthwise with stride 3 and asymmetric padding takes the generic strided loop.
  Tensor y3 = nan_tensor({2, 8, 7, 9});
  conv2d(ctx_, y0, w1, Tensor(), y3, 3, 3, 2, 3, 8);
  EXPECT_TRUE(all_close(y3, naive_conv2d(y0, w1, Tensor(), 3, 3, 2, 3, 8), 1e-5f, 1e-5f));
}

// subsampling_stem against the naive convolutions, with the frame masks applied by hand: x rows at or past
// frames.in zero, conv.0's rows at or past frames.mid zero before the ReLU, y's rows at or past frames.out zero.
TEST_P(ConvTest, SubsamplingStemMatchesMaskedNaiveChain) {
  const Tensor x = random_tensor({2, 1, 37, 45}, 11);
  const Tensor w0 = random_tensor({8, 1, 3, 3}, 12), b0 = random_tensor({8}, 13);
  const Tensor wd = random_tensor({8, 1, 3, 3}, 14), bd = random_tensor({8}, 15);
  const StemFrames frames{{37, 20}, {19, 10}, {10, 5}};
  const auto zero_rows = [](Tensor t, const std::vector<int64_t>& keep) {  // [B, C, H, W], rows past keep[b]
    float* p = t.data<float>();
    const int64_t c = t.dim(1), h = t.dim(2), w = t.dim(3);
    for (int64_t b = 0; b < t.dim(0); ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t r = keep[b]; r < h; ++r)
          for (int64_t i = 0; i < w; ++i) p[((b * c + ch) * h + r) * w + i] = 0.0f;
    return t;
  };
  for (const bool masked : {false, true}) {
    SCOPED_TRACE(masked ? "masked" : "unmasked");
    const Tensor in = masked ? zero_rows(Tensor::from_vector(x.to_vector(), x.shape()), frames.in) : x;
    Tensor mid = Tensor::from_vector(naive_conv2d(in, w0, b0, 2, 2, 1, 1, 1), {2, 8, 19, 23});
    if (masked) mid = zero_rows(mid, frames.mid);
    for (float& v : std::span(mid.data<float>(), static_cast<size_t>(mid.numel()))) v = v > 0.0f ? v : 0.0f;
    Tensor want = Tensor::from_vector(naive_conv2d(mid, wd, bd, 2, 2, 1, 1, 8), {2, 8, 10, 12});
    if (masked) want = zero_rows(want, frames.out);
    Tensor y = nan_tensor({2, 8, 10, 12});
    subsampling_stem(ctx_, x, w0, b0, wd, bd, masked ? &frames : nullptr, y);
    EXPECT_TRUE(all_close(y, want.to_vector(), 1e-5f, 1e-5f));
  }
  Tensor wrong = nan_tensor({2, 8, 19, 23});  // conv.0's shape, not the stem's
  EXPECT_THROW(subsampling_stem(ctx_, x, w0, b0, wd, bd, nullptr, wrong), Error);
  const StemFrames short_frames{{37}, {19}, {10}};
  Tensor y = nan_tensor({2, 8, 10, 12});
  EXPECT_THROW(subsampling_stem(ctx_, x, w0, b0, wd, bd, &short_frames, y), Error);
  EXPECT_THROW(subsampling_stem(ctx_, x, w0, b0, random_tensor({8, 1, 5, 5}, 16), bd, nullptr, y), Error);
}

TEST_P(ConvTest, DepthwiseConv1dMatchesTorch) {
  Tensor y = nan_tensor({2, 6, 3});
  depthwise_conv1d(ctx_, pat_tensor({2, 6, 3}, 20), pat_tensor({3, 3}, 21), pat_tensor({3}, 22), y, 1, 1);
  EXPECT_TRUE(all_close(y, kDwConv1d));
  y = nan_tensor({1, 5, 2});  // K = 9 > T = 5 with the Conformer's [4, 4] padding
  depthwise_conv1d(ctx_, pat_tensor({1, 5, 2}, 23), pat_tensor({2, 9}, 24), Tensor(), y, 4, 4);
  EXPECT_TRUE(all_close(y, kDwConv1dLongKernel));
  y = nan_tensor({1, 4, 3});  // causal padding [2, 0]
  depthwise_conv1d(ctx_, pat_tensor({1, 4, 3}, 25), pat_tensor({3, 3}, 26), Tensor(), y, 2, 0);
  EXPECT_TRUE(all_close(y, kDwConv1dCausal));
}

TEST_P(ConvTest, DepthwiseConv1dWideChannels) {
  // C = 37 exercises the vector tail; compared with the direct definition.
  const int64_t B = 2, T = 11, C = 37, K = 9;
  const Tensor x = random_tensor({B, T, C}, 8), w = random_tensor({C, K}, 9), b = random_tensor({C}, 10);
  Tensor y = nan_tensor({B, T, C});
  depthwise_conv1d(ctx_, x, w, b, y, 4, 4);
  const auto xv = x.to_vector(), wv = w.to_vector(), bv = b.to_vector();
  std::vector<float> want(B * T * C);
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) {
        double s = bv[c];
        for (int64_t k = 0; k < K; ++k) {
          const int64_t ti = t + k - 4;
          if (ti >= 0 && ti < T) s += double(wv[c * K + k]) * xv[(bb * T + ti) * C + c];
        }
        want[(bb * T + t) * C + c] = static_cast<float>(s);
      }
  EXPECT_TRUE(all_close(y, want, 1e-5f, 1e-5f));
}

INSTANTIATE_TEST_SUITE_P(Threads, ConvTest, ::testing::Values(1, 2));

TEST(Conv, FoldedBatchNormEqualsConvThenBatchNorm) {
  Context ctx = Context::cpu(1);
  const int64_t B = 1, T = 7, C = 5, K = 3;
  const Tensor x = random_tensor({B, T, C}, 11);
  Tensor w = random_tensor({C, K}, 12), bias = random_tensor({C}, 13);
  const Tensor mean = random_tensor({C}, 14), var = random_tensor({C}, 15, 0.1f, 2.0f);
  const Tensor gamma = random_tensor({C}, 16), beta = random_tensor({C}, 17);
  Tensor conv = nan_tensor({B, T, C}), want = nan_tensor({B, T, C});
  depthwise_conv1d(ctx, x, w, bias, conv, 1, 1);
  batch_norm(ctx, conv, mean, var, gamma, beta, 1e-5f, want);
  fold_batch_norm(w, bias, mean, var, gamma, beta, 1e-5f);
  Tensor got = nan_tensor({B, T, C});
  depthwise_conv1d(ctx, x, w, bias, got, 1, 1);
  EXPECT_TRUE(all_close(got, want.to_vector(), 1e-5f, 1e-5f));
}

TEST(Conv, ShapeErrors) {
  Context ctx = Context::cpu(1);
  const Tensor x = pat_tensor({1, 2, 5, 6}, 1);
  Tensor y = Tensor::zeros({1, 3, 3, 3});
  EXPECT_NO_THROW(conv2d(ctx, x, pat_tensor({3, 2, 3, 3}, 2), Tensor(), y, 2, 2, 1, 1, 1));
  EXPECT_THROW(conv2d(ctx, x, pat_tensor({3, 1, 3, 3}, 2), Tensor(), y, 2, 2, 1, 1, 1), Error);  // Cin/groups
  EXPECT_THROW(conv2d(ctx, x, pat_tensor({3, 2, 3, 3}, 2), Tensor(), y, 1, 1, 1, 1, 1), Error);  // y for stride 1
  EXPECT_THROW(conv2d(ctx, x, pat_tensor({3, 2, 3, 3}, 2), pat_tensor({2}, 3), y, 2, 2, 1, 1, 1), Error);  // bias
  EXPECT_THROW(conv2d(ctx, x, pat_tensor({3, 2, 3, 3}, 2), Tensor(), y, 0, 2, 1, 1, 1), Error);  // stride 0
  EXPECT_THROW(conv2d(ctx, x, pat_tensor({3, 2, 3, 3}, 2), Tensor(), y, 2, 2, 1, 1, 2), Error);  // 2 ∤ 3
  EXPECT_THROW(conv2d(ctx, x.reshape({2, 5, 6}), pat_tensor({3, 2, 3, 3}, 2), Tensor(), y, 2, 2, 1, 1, 1), Error);
  Tensor big = Tensor::zeros({1, 1, 1, 1});
  EXPECT_THROW(conv2d(ctx, x, pat_tensor({1, 2, 9, 9}, 2), Tensor(), big, 1, 1, 1, 1, 1), Error);  // kernel > input
  Tensor y1 = Tensor::zeros({1, 6, 3});
  EXPECT_THROW(depthwise_conv1d(ctx, pat_tensor({1, 6, 3}, 1), pat_tensor({2, 3}, 2), Tensor(), y1, 1, 1), Error);
  EXPECT_THROW(depthwise_conv1d(ctx, pat_tensor({1, 6, 3}, 1), pat_tensor({3, 3}, 2), Tensor(), y1, 1, 0), Error);
  EXPECT_THROW(depthwise_conv1d(ctx, pat_tensor({1, 6, 3}, 1), pat_tensor({3, 3}, 2), Tensor(), y1, -1, 3), Error);
}

}  // namespace
}  // namespace steno::ops
