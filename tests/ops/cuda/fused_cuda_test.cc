// The fused ops on CUDA against the same ops on the CPU (which are the plain ops in sequence), for f32, f16 and
// bf16: shapes the fused kernels take (the models' widths, tiles cut by the lengths and the edges) and shapes that
// fall back to the plain kernels (rows no vector divides, kernels longer than the fused kernel's limit).
#include "cuda_test_util.h"
#include "steno/ops/activation.h"
#include "steno/ops/conv.h"
#include "steno/ops/elementwise.h"
#include "steno/ops/fused.h"
#include "steno/ops/norm.h"

namespace steno::ops {
namespace {

using namespace cuda_testing;

class FusedCuda : public ::testing::TestWithParam<DType> {};

// The residual's sum is rounded to the dtype before the norm on the GPU; the CPU reference rounds it the same way.
TEST_P(FusedCuda, AddLayerNorm) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  const Shape shapes[] = {{2, 13, 1024}, {3, 176}, {4, 7, 640}, {2, 512}, {2, 1025}, {5, 7}, {0, 64}};
  uint32_t seed = 1;
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape_str(shape));
    const int64_t d = shape.back();
    const Tensor x = random_host(shape, seed++, dt, 0.0f, 2.0f), h = random_host(shape, seed++, dt);
    const Tensor gamma = random_host({d}, seed++, dt, 0.5f, 1.5f), beta = random_host({d}, seed++, dt, -0.5f, 0.5f);
    Tensor sum = x.clone();
    add(cpu, sum, h, 0.5f, sum);
    if (dt != DType::kF32) sum = sum.to(dt).to(DType::kF32);
    Tensor want = host_filled(shape, NAN);
    layer_norm(cpu, sum, gamma, beta, 1e-5f, want);

    const Tensor g_dev = upload(gpu, gamma, dt), b_dev = upload(gpu, beta, dt), h_dev = upload(gpu, h, dt);
    Tensor x_dev = upload(gpu, x, dt), y = nan_device(gpu, shape, dt);
    add_layer_norm(gpu, x_dev, h_dev, 0.5f, g_dev, b_dev, 1e-5f, y);
    EXPECT_TRUE(close_to(download(gpu, x_dev), sum, tolerance(dt, 1e-6f)));
    Tensor plain_sum = upload(gpu, x, dt);
    add(gpu, plain_sum, h_dev, 0.5f, plain_sum);
    EXPECT_TRUE(same_values(download(gpu, x_dev), download(gpu, plain_sum)));  // ops::add's arithmetic exactly
    EXPECT_TRUE(close_to(download(gpu, y), want, tolerance(dt, 2e-5f)));

    Tensor inplace = upload(gpu, x, dt);
    add_layer_norm(gpu, inplace, h_dev, 0.5f, g_dev, b_dev, 1e-5f, inplace);
    EXPECT_TRUE(close_to(download(gpu, inplace), want, tolerance(dt, 2e-5f)));
  }
}

TEST_P(FusedCuda, GatedDepthwiseSilu) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  // T = 70 and C = 100 cut the 64 x 64 tiles; the second item ends inside a tile, the third is empty.
  const int64_t B = 3, T = 70, C = 100;
  const std::vector<int64_t> lengths = {70, 33, 0};
  const Tensor x = random_host({B, T, 2 * C}, 40, dt, -2.0f, 2.0f);
  uint32_t seed = 41;
  for (const auto& [taps, pad] : {std::pair{9, 4}, {31, 15}, {3, 0}, {40, 20}}) {
    SCOPED_TRACE(taps);
    const Tensor w = random_host({C, taps}, seed++, dt, -0.3f, 0.3f), bias = random_host({C}, seed++, dt);
    Tensor want = host_filled({B, T, C}, NAN);
    gated_depthwise_silu(cpu, x, w, bias, pad, lengths, want);
    Tensor y = nan_device(gpu, {B, T, C}, dt);
    gated_depthwise_silu(gpu, upload(gpu, x, dt), upload(gpu, w, dt), upload(gpu, bias, dt), pad, lengths, y);
    // The 16-bit bound is wider: the GLU's output is rounded before a sum of up to 40 taps.
    EXPECT_TRUE(close_to(download(gpu, y), want, tolerance(dt, 1e-5f, 2.0f)));
    // The plain ops on the GPU give the same values exactly: the fused kernel rounds where they do.
    Tensor gated = nan_device(gpu, {B, T, C}, dt), plain = nan_device(gpu, {B, T, C}, dt);
    glu(gpu, upload(gpu, x, dt), gated);
    zero_padded_frames(gpu, gated, 1, lengths);
    depthwise_conv1d(gpu, gated, upload(gpu, w, dt), upload(gpu, bias, dt), plain, pad, taps - 1 - pad);
    silu(gpu, plain, plain);
    EXPECT_TRUE(same_values(download(gpu, y), download(gpu, plain)));
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FusedCuda, kAllDtypes, dtype_param_name);

}  // namespace
}  // namespace steno::ops
