// conv2d and depthwise_conv1d on CUDA against the CPU kernels, on seeded random inputs rounded to the tested
// dtype first (so both sides see the same values). conv2d covers the encoder's three shapes (1 -> C 3x3 stride 2,
// depthwise 3x3 stride 2, pointwise 1x1), planes longer than a block's span, a channel multiplier, general
// grouped convs and odd spatial sizes;
// depthwise_conv1d covers the Conformer's K 9 pad [4, 4], causal and asymmetric padding, and inputs shorter
// than the kernel. subsampling_stem's fused kernel is checked against the unfused CUDA ops bit for bit and
// against the CPU.
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
#include "steno/ops/activation.h"
#include "steno/ops/context.h"
#include "steno/ops/conv.h"
#include "steno/ops/copy.h"
#include "steno/ops/elementwise.h"

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
    // Output planes of 38 x 32: more than one block's span of a plane.
    {"depthwise_3x3_s2_long_planes", {2, 8, 75, 64}, {8, 1, 3, 3}, 2, 2, 1, 1, 8, true},
    {"depthwise_5x5_any_size", {1, 6, 14, 9}, {6, 1, 5, 5}, 1, 2, 2, 1, 6, true},
    {"pointwise_256", {2, 256, 6, 9}, {256, 256, 1, 1}, 1, 1, 0, 0, 1, true},
    {"pointwise_odd_tiles", {3, 40, 7, 9}, {72, 40, 1, 1}, 1, 1, 0, 0, 1, false},
    // Rows of 16-byte multiples: the bias is filled 16 bytes a store.
    {"pointwise_aligned_rows", {2, 16, 8, 17}, {24, 16, 1, 1}, 1, 1, 0, 0, 1, true},
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

// ---- subsampling_stem ----

struct StemCase {
  const char* name;
  int64_t batch, h, w, channels;
  std::vector<int64_t> frames;  // of x; empty: no masking
  bool bias;
};

const StemCase kStemCases[] = {
    // 128 mels, masked (Sortformer's and Parakeet v3's), frames cut inside the kernel's 8-frame tiles, 40 channels
    // (a partial 32-channel group), 32 outputs a row (whole runs: 16-byte stores).
    {"mel128_masked", 3, 75, 128, 40, {75, 30, 1}, true},
    // 80 mels, unmasked, odd sizes everywhere, no biases.
    {"mel80_odd", 2, 37, 81, 33, {}, false},
    // No frames at all: conv.0's one kept frame comes from its bias alone, as in NeMo's masking.
    {"zero_frames", 2, 9, 16, 8, {0, 9}, true},
    // Wider than the kernel's tiles take (192 features): the unfused ops run instead.
    {"wide_unfused", 1, 11, 200, 8, {11}, true},
};

int64_t half(int64_t n) { return (n + 2 - 3) / 2 + 1; }  // 3x3, stride 2, padding 1 (the encoder's rule)

StemFrames stem_frames(const StemCase& c) {
  StemFrames f;
  f.in = c.frames;
  for (int64_t n : f.in) f.mid.push_back(half(n));
  for (int64_t n : f.mid) f.out.push_back(half(n));
  return f;
}

class SubsamplingStemCuda : public ::testing::TestWithParam<std::tuple<StemCase, DType>> {};

TEST_P(SubsamplingStemCuda, EqualsTheUnfusedOpsAndMatchesCpu) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto& [c, dt] = GetParam();
  const bool masked = !c.frames.empty();
  const StemFrames frames = stem_frames(c);
  const Tensor x = rounded(uniform({c.batch, 1, c.h, c.w}, 31), dt);
  const Tensor w0 = rounded(uniform({c.channels, 1, 3, 3}, 32), dt), wd = rounded(uniform({c.channels, 1, 3, 3}, 33), dt);
  const Tensor b0 = c.bias ? rounded(uniform({c.channels}, 34), dt) : Tensor();
  const Tensor bd = c.bias ? rounded(uniform({c.channels}, 35), dt) : Tensor();
  const Shape mid_shape = {c.batch, c.channels, half(c.h), half(c.w)};
  const Shape ys = {c.batch, c.channels, half(half(c.h)), half(half(c.w))};

  Context gpu = Context::cuda(0);
  const Tensor gx = upload(gpu, x, dt), gw0 = upload(gpu, w0, dt), gwd = upload(gpu, wd, dt);
  const Tensor gb0 = upload(gpu, b0, dt), gbd = upload(gpu, bd, dt);
  Tensor fused = nan_device(gpu, ys, dt);
  subsampling_stem(gpu, gx, gw0, gb0, gwd, gbd, masked ? &frames : nullptr, fused);
  const std::vector<float> got = download(gpu, fused);

  // The unfused ops on the GPU, each rounding to dt: the same sums in the same order, so the same bits.
  Tensor in = masked ? clone(gpu, gx) : gx;
  if (masked) zero_padded_frames(gpu, in, 2, frames.in);
  Tensor mid = nan_device(gpu, mid_shape, dt);
  conv2d(gpu, in, gw0, gb0, mid, 2, 2, 1, 1, 1);
  if (masked) zero_padded_frames(gpu, mid, 2, frames.mid);
  relu(gpu, mid, mid);
  Tensor unfused = nan_device(gpu, ys, dt);
  conv2d(gpu, mid, gwd, gbd, unfused, 2, 2, 1, 1, static_cast<int>(c.channels));
  if (masked) zero_padded_frames(gpu, unfused, 2, frames.out);
  const std::vector<float> want_gpu = download(gpu, unfused);
  ASSERT_EQ(got.size(), want_gpu.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want_gpu[i]) << "element " << i;

  // The CPU sequence in f32, with the first conv's output rounded to dt as the GPU stores it.
  Context cpu = Context::cpu(1);
  Tensor cin = masked ? clone(cpu, x) : x;
  if (masked) zero_padded_frames(cpu, cin, 2, frames.in);
  Tensor cmid = Tensor::empty(mid_shape);
  conv2d(cpu, cin, w0, b0, cmid, 2, 2, 1, 1, 1);
  cmid = rounded(cmid, dt);
  if (masked) zero_padded_frames(cpu, cmid, 2, frames.mid);
  relu(cpu, cmid, cmid);
  Tensor want = Tensor::empty(ys);
  conv2d(cpu, cmid, wd, bd, want, 2, 2, 1, 1, static_cast<int>(c.channels));
  if (masked) zero_padded_frames(cpu, want, 2, frames.out);
  EXPECT_TRUE(close(got, want.to_vector(), tolerance(dt)));
  // And the op itself on the CPU (the same sequence, unrounded) in f32.
  if (dt == DType::kF32) {
    Tensor op_cpu = Tensor::empty(ys);
    subsampling_stem(cpu, x, w0, b0, wd, bd, masked ? &frames : nullptr, op_cpu);
    EXPECT_TRUE(close(got, op_cpu.to_vector(), tolerance(dt)));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SubsamplingStemCuda,
                         ::testing::Combine(::testing::ValuesIn(kStemCases),
                                            ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  dtype_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace steno::ops
