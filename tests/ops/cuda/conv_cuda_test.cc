// conv2d and depthwise_conv1d on CUDA against the CPU kernels, on seeded random inputs rounded to the tested
// dtype first (so both sides see the same values). conv2d covers the encoder's three shapes (1 -> C 3x3 stride 2,
// depthwise 3x3 stride 2, pointwise 1x1), a channel multiplier, general grouped convs and odd spatial sizes;
// depthwise_conv1d covers the Conformer's K 9 pad [4, 4], causal and asymmetric padding, and inputs shorter
// than the kernel.
//
// Tolerances: |gpu - cpu| <= atol + rtol·|cpu|. Both sides accumulate exact products in f32, so the f32 check
// only absorbs summation order (sums of up to 256 unit terms); f16/bf16 results are the f32 sum rounded to the
// dtype, a relative error of at most 2^-11 (f16) or 2^-8 (bf16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "steno/core/cuda.h"
#include "steno/core/tensor.h"
#include "steno/ops/context.h"
#include "steno/ops/conv.h"
#include "steno/ops/copy.h"

namespace steno::ops {
namespace {

Tensor uniform(const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = dist(gen);
  return Tensor::from_vector(v, shape);
}

// The values `dt` holds (round to nearest even), as f32: the CPU reference's inputs.
Tensor rounded(const Tensor& t, DType dt) { return t.to(dt).to(DType::kF32); }

Tensor upload(Context& ctx, const Tensor& t, DType dt) { return t.defined() ? to_context(ctx, t, dt) : Tensor(); }

Tensor nan_device(Context& ctx, const Shape& shape, DType dt) {
  return to_context(ctx, Tensor::from_vector(std::vector<float>(static_cast<size_t>(shape_numel(shape)), NAN), shape),
                    dt);
}

std::vector<float> download(Context& ctx, const Tensor& dev) {
  Tensor host = Tensor::empty(dev.shape(), dev.dtype());
  copy(ctx, dev, host);
  ctx.synchronize();
  return host.to(DType::kF32).to_vector();
}

struct Tol {
  float atol, rtol;
};
Tol tolerance(DType dt) {
  if (dt == DType::kF32) return {1e-4f, 1e-5f};
  if (dt == DType::kF16) return {1e-3f, 1e-3f};
  return {1e-2f, 8e-3f};
}

::testing::AssertionResult close(const std::vector<float>& actual, const std::vector<float>& expected, Tol tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " != " << expected.size();
  int bad = 0;
  std::string msg;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!(std::fabs(actual[i] - expected[i]) <= tol.atol + tol.rtol * std::fabs(expected[i]))) {  // NaN fails
      if (++bad <= 8)
        msg += "\n  [" + std::to_string(i) + "] " + std::to_string(actual[i]) + " vs " + std::to_string(expected[i]);
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << actual.size() << " values differ:" << msg;
}

// ---- conv2d ----

struct Conv2dCase {
  const char* name;
  Shape x, w;  // [B, Cin, H, W], [Cout, Cin/groups, KH, KW]
  int stride_h, stride_w, pad_h, pad_w, groups;
  bool bias;
};

const Conv2dCase kConv2dCases[] = {
    // The dw_striding subsampling: conv.0 (1 -> C), conv.2 (depthwise), conv.3 (pointwise), odd sizes.
    {"first_1toC_3x3_s2", {2, 1, 37, 29}, {16, 1, 3, 3}, 2, 2, 1, 1, 1, true},
    // One input channel: 16 output channels per thread, here with a partial last group and 25 taps (the most it
    // keeps in registers); 49 taps go to the direct kernel.
    {"one_input_20ch_5x5", {2, 1, 13, 11}, {20, 1, 5, 5}, 1, 1, 2, 2, 1, true},
    {"one_input_7x7_direct", {1, 1, 12, 12}, {4, 1, 7, 7}, 1, 1, 3, 3, 1, false},
    {"depthwise_3x3_s2", {2, 24, 19, 15}, {24, 1, 3, 3}, 2, 2, 1, 1, 24, true},
    {"pointwise_256", {2, 256, 6, 9}, {256, 256, 1, 1}, 1, 1, 0, 0, 1, true},
    {"pointwise_odd_tiles", {3, 40, 7, 9}, {72, 40, 1, 1}, 1, 1, 0, 0, 1, false},
    // Direct kernel with 2 outputs per input channel, padding wider than the kernel needs.
    {"channel_multiplier", {1, 4, 10, 11}, {8, 1, 3, 3}, 1, 1, 2, 2, 4, true},
    // Implicit GEMM with groups and K not a multiple of the 16-deep tile.
    {"grouped_3", {2, 12, 11, 13}, {9, 4, 3, 2}, 2, 1, 1, 0, 3, true},
    {"dense_3x3_s1", {1, 5, 8, 7}, {70, 5, 3, 3}, 1, 1, 1, 1, 1, false},
};

Shape conv2d_out(const Conv2dCase& c) {
  return {c.x[0], c.w[0], (c.x[2] + 2 * c.pad_h - c.w[2]) / c.stride_h + 1,
          (c.x[3] + 2 * c.pad_w - c.w[3]) / c.stride_w + 1};
}

class Conv2dCuda : public ::testing::TestWithParam<std::tuple<Conv2dCase, DType>> {};

TEST_P(Conv2dCuda, MatchesCpu) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto& [c, dt] = GetParam();
  const Tensor x = rounded(uniform(c.x, 11), dt), w = rounded(uniform(c.w, 12), dt);
  const Tensor bias = c.bias ? rounded(uniform({c.w[0]}, 13), dt) : Tensor();
  const Shape ys = conv2d_out(c);

  Context cpu = Context::cpu(1);
  Tensor want = Tensor::empty(ys);
  conv2d(cpu, x, w, bias, want, c.stride_h, c.stride_w, c.pad_h, c.pad_w, c.groups);

  Context gpu = Context::cuda(0);
  Tensor y = nan_device(gpu, ys, dt);
  conv2d(gpu, upload(gpu, x, dt), upload(gpu, w, dt), upload(gpu, bias, dt), y, c.stride_h, c.stride_w, c.pad_h,
         c.pad_w, c.groups);
  EXPECT_TRUE(close(download(gpu, y), want.to_vector(), tolerance(dt)));
}

INSTANTIATE_TEST_SUITE_P(Cases, Conv2dCuda,
                         ::testing::Combine(::testing::ValuesIn(kConv2dCases),
                                            ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  dtype_name(std::get<1>(info.param));
                         });

// ---- depthwise_conv1d ----

struct Dw1dCase {
  const char* name;
  int64_t batch, steps, channels, k;
  int pad_left, pad_right;
  bool bias;
};

const Dw1dCase kDw1dCases[] = {
    {"k9_pad4_4", 2, 37, 24, 9, 4, 4, true},
    {"k9_causal_8_0", 2, 30, 20, 9, 8, 0, true},
    {"k9_asymmetric_2_5", 3, 25, 17, 9, 2, 5, false},
    {"shorter_than_kernel", 2, 3, 8, 9, 4, 4, true},
    {"k1_no_pad", 1, 11, 33, 1, 0, 0, true},
};

class DepthwiseConv1dCuda : public ::testing::TestWithParam<std::tuple<Dw1dCase, DType>> {};

TEST_P(DepthwiseConv1dCuda, MatchesCpu) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto& [c, dt] = GetParam();
  const Tensor x = rounded(uniform({c.batch, c.steps, c.channels}, 21), dt);
  const Tensor w = rounded(uniform({c.channels, c.k}, 22), dt);
  const Tensor bias = c.bias ? rounded(uniform({c.channels}, 23), dt) : Tensor();
  const Shape ys = {c.batch, c.steps + c.pad_left + c.pad_right - c.k + 1, c.channels};

  Context cpu = Context::cpu(1);
  Tensor want = Tensor::empty(ys);
  depthwise_conv1d(cpu, x, w, bias, want, c.pad_left, c.pad_right);

  Context gpu = Context::cuda(0);
  Tensor y = nan_device(gpu, ys, dt);
  depthwise_conv1d(gpu, upload(gpu, x, dt), upload(gpu, w, dt), upload(gpu, bias, dt), y, c.pad_left, c.pad_right);
  EXPECT_TRUE(close(download(gpu, y), want.to_vector(), tolerance(dt)));
}

INSTANTIATE_TEST_SUITE_P(Cases, DepthwiseConv1dCuda,
                         ::testing::Combine(::testing::ValuesIn(kDw1dCases),
                                            ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  dtype_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace steno::ops
